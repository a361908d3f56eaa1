# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""One run per ``output_dir``: a new run is refused in a folder that holds another run's model or checkpoints (before
anything loads), unless ``overwrite_output_dir`` replaces that run's checkpoints; a resumed run takes only the
checkpoints of its own run, told by the settings and data fingerprint a run writes into its folder when it starts
(`RUN_SETTINGS`)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from ..hub import RUN_INFO
from ..modeling.configuration_dual_momentum import FORMER_COLLATOR_FIELDS, FORMER_SCHEDULE_FIELDS
from ..registry import current_name
from .checkpoints import CHECKPOINT, CheckpointError

logger = logging.getLogger(__name__)

RUN_SETTINGS = "hf_xlsr_run_settings.json"
MODEL_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", RUN_INFO)
# the training arguments that make two runs different runs (max_steps may grow between a stop and its resume)
RUN_DEFINING_ARGUMENTS = (
    "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
    "warmup_steps", "weight_decay", "max_grad_norm", "seed", "language_sampling_alpha", "language_batches",
    "momentum_schedule", "second_stage_step", "encoder_frozen_steps", "mini_batch_size",
)  # fmt: skip
# the data collator's settings (None: the collator's default)
COLLATOR_SETTINGS = ("mlm_probability", "mask_replace_prob", "random_replace_prob", "swap_probability",
                     "monolingual_probability", "perturbation", "perturbation_window")  # fmt: skip


def run_contents(output_dir: str | os.PathLike) -> list[str]:
    """The names in ``output_dir`` that a run wrote: its checkpoints, its model's weights, its run record."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if (entry.is_dir() and CHECKPOINT.match(entry.name)) or entry.name in MODEL_FILES
    )


def check_new_run(output_dir: str | os.PathLike, resume: bool, overwrite: bool) -> None:
    """A new run (not ``resume``) in an ``output_dir`` that holds another run's model or checkpoints is refused,
    in one line naming what it holds and the two options, unless ``overwrite``."""
    found = run_contents(output_dir)
    if found and not resume and not overwrite:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ValueError(
            f"output_dir {output_dir} holds another run ({shown}): --resume_from_checkpoint true "
            "continues it, --overwrite_output_dir true replaces it"
        )


def rows_digest(dataset) -> str:
    """The SHA-256 of a dataset's rows in order, column by column: the same rows give the same digest in any process
    and any session (a ``datasets`` fingerprint of rows built in memory is random)."""
    import hashlib

    digest = hashlib.sha256(repr(dataset.column_names).encode())
    for batch in dataset.iter(batch_size=10_000):
        for name in dataset.column_names:
            digest.update(repr(batch[name]).encode())
    return digest.hexdigest()


def run_settings(model_args, data_args, training_args, fingerprint: str) -> dict:
    """What makes a run this run: its model, data and training settings, and its training rows' fingerprint."""
    return {
        "model_type": model_args.model_type,
        "model_config": dict(model_args.model_config),
        "encoder": model_args.encoder,
        "encoders": model_args.encoders,
        "model_name_or_path": model_args.model_name_or_path,
        "languages": list(data_args.languages),
        "language_pairs": [list(pair) for pair in data_args.pairs],
        "max_length": data_args.max_length,
        "training": {name: getattr(training_args, name, None) for name in RUN_DEFINING_ARGUMENTS},
        "collator": {name: getattr(data_args, name, None) for name in COLLATOR_SETTINGS},
        "lora": model_args.lora,
        "data_fingerprint": fingerprint,
    }


def _flat(settings: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in settings.items():
        if isinstance(value, dict) and key != "encoders":
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def moved_setting(key: str) -> str:
    """Where a setting that a run started by an earlier version wrote into ``model_config`` is now: the collator's
    settings under ``collator``, the schedule's under ``training`` (``head_warmup_steps`` as
    ``encoder_frozen_steps``), LoRA's under ``lora``."""
    prefix, _, name = key.partition(".")
    if prefix != "model_config":
        return key
    if name in FORMER_COLLATOR_FIELDS:
        return f"collator.{name}"
    if name in FORMER_SCHEDULE_FIELDS:
        return f"training.{FORMER_SCHEDULE_FIELDS[name]}"
    return name if name == "lora" or name.startswith("lora.") else key


def check_same_run(output_dir: str | os.PathLike, settings: dict) -> None:
    """Resuming in ``output_dir``: its checkpoints must be this run's, the settings it started with
    (`RUN_SETTINGS`) equal to ``settings``; else one `CheckpointError` line naming the first that differs."""
    path = Path(output_dir) / RUN_SETTINGS
    if not path.is_file():
        return  # a folder of an earlier version, or a run stopped before its first step: nothing to tell it by
    saved, ours = _flat(json.loads(path.read_text())), _flat(json.loads(json.dumps(settings)))
    if "model_type" in saved:  # a run started by an earlier version names its type as that version did
        saved["model_type"] = current_name(saved["model_type"])
    saved = {moved_setting(key): value for key, value in saved.items()}
    differing = [key for key in dict.fromkeys([*saved, *ours]) if saved.get(key) != ours.get(key)]
    if differing:
        key = differing[0]
        what = "training rows" if key == "data_fingerprint" else f"{key} {saved.get(key)!r}, not {ours.get(key)!r}"
        raise CheckpointError(
            f"{path}: the checkpoints of {output_dir} belong to another run ({what}"
            f"{f' and {len(differing) - 1} more' if len(differing) > 1 else ''}); resume with "
            "that run's settings, or start a new run with --overwrite_output_dir true"
        )


def start_run(output_dir: str | os.PathLike, settings: dict, resume: bool, overwrite: bool) -> None:
    """The main process, before training: a run started with ``overwrite`` removes the checkpoints of the run it
    replaces (what resume would take), then this run's settings are written (`RUN_SETTINGS`)."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if overwrite and not resume:
        for name in run_contents(folder):
            if (folder / name).is_dir():
                logger.warning("overwrite_output_dir: removing %s of the run this one replaces", folder / name)
                shutil.rmtree(folder / name)
    (folder / RUN_SETTINGS).write_text(json.dumps(settings, indent=2))
