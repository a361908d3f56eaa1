# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr train CONFIG.yaml [--field value ...]``: a run from its configuration (`parse_run_arguments`,
`run_training`), and the text of ``hf-xlsr train --help``, which the package ships as ``train_help.txt`` so that the
command line prints it without importing torch."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from transformers import HfArgumentParser, TrainingArguments

from ..registry import paper_recipe, trained_types
from ..trainers import XlsrTrainingArguments, parse_run_arguments, run_training
from ..trainers.arguments import DataArguments, ModelArguments
from ..trainers.trainer import WARMUP_SHARE
from .common import UsageError

# the TrainingArguments fields a run sets most, listed in `train --help` beside the run's own
COMMON_TRAINING_FIELDS = (
    "output_dir", "max_steps", "num_train_epochs", "per_device_train_batch_size", "gradient_accumulation_steps",
    "learning_rate", "warmup_steps", "bf16", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
    "save_total_limit", "logging_steps", "seed", "resume_from_checkpoint", "report_to",
)  # fmt: skip

# `train_help()` as the package ships it; a test keeps it equal to what `train_help()` gives (`write_train_help()`
# writes it again)
TRAIN_HELP_FILE = Path(__file__).parents[1] / "train_help.txt"


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if args.help:  # hf-xlsr answers train --help itself from TRAIN_HELP_FILE; here only where it is missing
        print(train_help(), end="")
        return 0
    if args.config is None:
        print("usage: hf-xlsr train CONFIG.yaml [--field value ...]", file=sys.stderr)
        raise UsageError("give a run configuration, a YAML or JSON file (hf-xlsr train --help lists its fields)")

    model_args, data_args, training_args = parse_run_arguments(args.config, rest)
    trainer, metrics = run_training(model_args, data_args, training_args)
    if metrics and trainer.is_world_process_zero():  # under several processes, once
        print(json.dumps(metrics, indent=2))
    trainer.accelerator.wait_for_everyone()  # processes leave their group together, not in the interpreter's teardown
    trainer.accelerator.end_training()
    return 0


def write_train_help() -> None:
    TRAIN_HELP_FILE.write_text(train_help(), encoding="utf-8")


def train_help() -> str:
    """``hf-xlsr train --help``: the model and data fields, hf_xlsr's training fields and the most used of
    ``TrainingArguments``; one line for the rest of them, laid out 100 columns wide whatever the terminal."""

    def fixed_width(prog: str) -> argparse.HelpFormatter:
        return argparse.ArgumentDefaultsHelpFormatter(prog, width=100)

    parser = HfArgumentParser(
        (ModelArguments, DataArguments),
        prog="hf-xlsr train CONFIG.yaml",
        description=TRAIN_HELP,
        epilog=TRAIN_EPILOG,
        formatter_class=fixed_width,
    )
    inherited = {f.name for f in dataclasses.fields(TrainingArguments)}
    shown = [
        f
        for f in dataclasses.fields(XlsrTrainingArguments)
        if f.init and (f.name not in inherited or f.name in COMMON_TRAINING_FIELDS)
    ]
    paper: dict[str, list[str]] = {}  # the value a run that does not set a field trains with, by model_type
    for model_type in trained_types():
        for name, value in paper_recipe(model_type).items():
            paper.setdefault(name, []).append(f"{model_type} {value}")
    group = parser.add_argument_group("training (hf_xlsr's fields and the most used of TrainingArguments)")
    for item in shown:
        default = item.default if item.default is not dataclasses.MISSING else None
        if item.name in paper:  # what the run uses, not TrainingArguments' own default
            default = "the paper's: " + ", ".join(paper[item.name])
            if item.name == "warmup_steps":
                default += f"; at most {WARMUP_SHARE:.0%} of the run's steps"
        group.add_argument(
            f"--{item.name}",
            metavar=item.name.upper(),
            default=default,
            help=OWN_HELP.get(item.name, item.metadata.get("help", "")),
        )
    return parser.format_help()


# hf_xlsr's meaning of a TrainingArguments field whose own help says something else
OWN_HELP = {
    "resume_from_checkpoint": "true (or latest): go on from the newest whole checkpoint of output_dir; or a "
    "checkpoint folder. Only a checkpoint of this run (the same settings and training rows) before max_steps",
}

TRAIN_EPILOG = (
    "Every other field of transformers.TrainingArguments is accepted too, in the file or as --field value: "
    "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
)

TRAIN_HELP = (
    "Train a model from a run configuration: a YAML or JSON file of the fields below (model, data and "
    "TrainingArguments fields side by side, the model configuration's fields under model_config); --field value on "
    "the command line overrides the file. A training value not given takes the paper's. --resume_from_checkpoint "
    "true (or a checkpoint folder) continues a run exactly, queues and momentum "
    "encoders included."
)
