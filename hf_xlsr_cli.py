# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr``: the command line of hf_xlsr. Each command is a thin wrapper over the library.

hf-xlsr train CONFIG.yaml [--key value ...]      (also: accelerate launch examples/train.py CONFIG.yaml)
hf-xlsr evaluate --model DIR [--languages en fr de ... --data bible --split heldout]
hf-xlsr encode --model DIR --input sentences.txt --output vectors.npy [--language fr]
hf-xlsr mine --model DIR --source en.txt --target fr.txt --output pairs.tsv
hf-xlsr export --model DIR --output DIR
hf-xlsr push --model DIR --repo-id me/name

This module holds the options, ``--help`` and the dispatch; each command's work is a module of ``hf_xlsr.commands``.
It lies outside the ``hf_xlsr`` package: importing anything in the package imports torch and transformers and
registers the models with the Auto classes, which takes seconds; ``hf-xlsr --help`` needs none of it, and a command
imports its module (and the library) only when it runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

logger = logging.getLogger("hf_xlsr")


# hf_xlsr.evaluation.backends.BACKENDS (a test keeps them equal), named here so that --help imports no torch
BACKENDS = ("torch", "bf16", "onnx", "onnx-int8", "openvino", "openvino-int8")
BACKEND_HELP = (
    "where the model encodes: torch (float32), bf16, onnx, onnx-int8 (pip install 'hf_xlsr[onnx]'), openvino or "
    "openvino-int8 (pip install 'hf_xlsr[openvino]')"
)


MAX_LENGTH_HELP = "tokens per sentence of an hf_xlsr model (a sentence-transformers folder keeps its own)"
BATCH_SIZE_HELP = "sentences encoded at once (default: %(default)s)"


# hf_xlsr.evaluation.suite.TASKS (a test keeps them equal), with what each encodes, for --help
EVALUATION_TASKS = {
    "retrieval": "1,000 held-out sentences per language",
    "retrieval_pcr": "the same sentences, encoded once for both",
    "sts": "2,450 English sentences (Lee)",
    "mining": "4,000 sentences per language pair",
    "probe": "3,000 training sentences and 1,000 per language",
    "bias": "1,000 sentences per language",
    "plot": "15 sentences per language",
    "mteb": "the local MTEB tasks, about 4,000 sentences per language",
    "tatoeba": "the Tatoeba test sets of --tatoeba-dir, up to 2,000 sentences per language",
}
DEFAULT_EVALUATION_TASKS = ("retrieval", "retrieval_pcr", "sts")  # a quick look


def _package_folder() -> Path:
    """hf_xlsr's folder, found without importing the package (which imports torch and transformers)."""
    import importlib.util

    spec = importlib.util.find_spec("hf_xlsr")
    return Path(next(iter(spec.submodule_search_locations))) if spec else Path(__file__).with_name("hf_xlsr")


# what `hf_xlsr.commands.train.train_help()` gives, as the package ships it, printed by `train --help` at once
TRAIN_HELP_FILE = _package_folder() / "train_help.txt"


def positive_int(text: str) -> int:
    """An integer of at least 1, for argparse: a batch size, a length, a count."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1")
    return value


def byte_size(text: str) -> int:
    """``8GB``, ``512MB``, ``2.5GiB`` or a number of bytes, for argparse."""
    import re

    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)(i?B)?\s*", text, re.IGNORECASE)
    if not match or match.group(1).count(".") > 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 8GB, 512MB)")
    base = 1024 if (match.group(3) or "").lower() == "ib" else 1000
    return int(float(match.group(1)) * base ** ("KMGT".find(match.group(2).upper()) + 1 if match.group(2) else 0))


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line (``hf-xlsr mine: error: ...``) with a pointer to ``--help``,
    as every other error of the command line is, not its usage text."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help)\n")


class RenamedOption(argparse.Action):
    """An option's earlier spelling: it still sets the option, with a one-line notice naming the new one."""

    def __init__(self, option_strings, dest, new: str, **options):
        super().__init__(option_strings, dest, **options)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        warnings.warn(
            f"{option_string} is now {self.new}; the old spelling goes in a later release", FutureWarning, stacklevel=2
        )
        setattr(namespace, self.dest, values)


def renamed(parser: argparse.ArgumentParser, new: str, old: str, required: bool = False, **options) -> None:
    """``new`` with ``old`` as a hidden earlier spelling (`RenamedOption`); a required option is checked after
    parsing, so that either spelling gives it."""
    action = parser.add_argument(new, **options)
    parser.add_argument(
        old,
        dest=action.dest,
        action=RenamedOption,
        new=new,
        help=argparse.SUPPRESS,
        **{k: v for k, v in options.items() if k == "type"},
    )
    if required:
        parser.set_defaults(required_options=[*(parser.get_default("required_options") or []), (new, action.dest)])


def sentence_command(commands, name: str, description: str, output: str) -> argparse.ArgumentParser:
    """A command that embeds a file of sentences (``encode``, ``embed``): the model, the input, ``output`` described,
    the language and how the model runs."""
    command = commands.add_parser(name, help=description)
    command.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    command.add_argument(
        "--input",
        required=True,
        help="sentences, one per line; row i of the output is line i (a blank line encodes the empty string)",
    )
    command.add_argument("--output", required=True, help=output)
    command.add_argument(
        "--language", help="language of the sentences (picks the route of a model that encodes languages apart)"
    )
    command.add_argument("--batch-size", type=positive_int, default=64, help=BATCH_SIZE_HELP)
    command.add_argument("--max-length", type=positive_int, default=128, help=MAX_LENGTH_HELP)
    command.add_argument("--backend", default="torch", choices=BACKENDS, help=BACKEND_HELP)
    return command


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="hf-xlsr",
        description="Cross-lingual sentence representations: train, "
        "evaluate, encode, mine, export and push hf_xlsr models.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser(
        "train",
        add_help=False,
        help="train a model from a YAML/JSON run configuration; --field value overrides it; "
        "train --help lists the fields",
    )
    train.add_argument("config", nargs="?", help="run configuration file (model, data and TrainingArguments fields)")
    train.add_argument("-h", "--help", action="store_true", help="list the run configuration's fields")
    train.set_defaults(handler="train", allow_extra=True)

    encode = sentence_command(
        commands,
        "encode",
        "embed a file of sentences (one per line) into a .npy file",
        "a .npy file of float32 vectors, one row per sentence",
    )
    encode.set_defaults(handler="encode")

    embed = sentence_command(
        commands,
        "embed",
        "embed a corpus in shards, resumable, spread over processes",
        "folder: shards while running, then vectors.npy (float32)",
    )
    embed.add_argument(
        "--shard-size", type=positive_int, default=100_000, help="sentences per shard (default 100,000)"
    )
    embed.set_defaults(handler="embed")

    export = commands.add_parser("export", help="export a trained model to sentence-transformers folders")
    export.add_argument("--model", required=True, help="trained hf_xlsr model folder")
    renamed(
        export,
        "--output",
        "--out",
        help="output folder: new, empty, or an earlier export (with --overwrite)",
        required=True,
    )
    export.add_argument("--overwrite", action="store_true", help="replace an earlier export of hf_xlsr in --output")
    renamed(
        export,
        "--max-length",
        "--max-seq-length",
        type=positive_int,
        default=128,
        help="tokens per sentence of the exported model (its max_seq_length)",
    )
    export.set_defaults(handler="export")

    evaluate = commands.add_parser("evaluate", help="run evaluation tasks; write one JSON and print a table")
    evaluate.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    evaluate.add_argument(
        "--tasks",
        default=",".join(DEFAULT_EVALUATION_TASKS),
        help="comma-separated, with what each encodes: "
        + "; ".join(f"{task} ({cost})" for task, cost in EVALUATION_TASKS.items())
        + "; mteb:<TaskName> (a standard MTEB task, from the Hub). Default: %(default)s, "
        "a quick look; each task's time is printed at the end",
    )
    evaluate.add_argument(
        "--languages",
        nargs="+",
        help="two or more language codes, the first the pivot (retrieval scores every pair; default: en fr); with "
        "--tasks tatoeba, the test sets scored (default: every set of --tatoeba-dir)",
    )
    evaluate.add_argument("--data", default="bible", help="'bible', 'hsk', a .tsv/.jsonl file or a Hub dataset")
    evaluate.add_argument(
        "--split",
        default="heldout",
        help="split of --data: bible and hsk have train and heldout (a file is read whole)",
    )
    evaluate.add_argument(
        "--max-pairs",
        type=positive_int,
        default=1000,
        help="sentences per language drawn from --data for retrieval (default: %(default)s)",
    )
    evaluate.add_argument(
        "--tatoeba-dir",
        help="folder of LASER's Tatoeba test sets (tatoeba.XXX-eng.XXX files) for "
        "--tasks tatoeba; MTEB's own task is mteb:Tatoeba where the Hub is reachable",
    )
    evaluate.add_argument("--sts-file", help="STS pairs: sentence1<TAB>sentence2<TAB>score[<TAB>subset]")
    evaluate.add_argument("--sts-dataset", help="Hub STS dataset with sentence1/sentence2/score columns")
    evaluate.add_argument(
        "--output",
        help="JSON file of all results (default: eval_results.json in the model's folder, as transformers writes it)",
    )
    evaluate.add_argument("--output-dir", help="folder for plots (default: the folder of --output)")
    evaluate.add_argument("--mteb-cache", help="MTEB result cache folder (results are keyed by weight hash)")
    evaluate.add_argument("--batch-size", type=positive_int, default=64, help=BATCH_SIZE_HELP)
    evaluate.add_argument("--max-length", type=positive_int, default=128, help=MAX_LENGTH_HELP)
    evaluate.add_argument(
        "--seed",
        type=int,
        help="seed that draws the held-out samples (default: one fixed seed, so that the same "
        "data and size give the same sample, whatever seed trained the model); recorded "
        "with the results",
    )
    evaluate.add_argument("--backend", default="torch", choices=BACKENDS, help=BACKEND_HELP)
    evaluate.set_defaults(handler="evaluate")

    mine = commands.add_parser("mine", help="mine parallel sentences from two files (margin-based)")
    mine.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    renamed(mine, "--source", "--src", required=True, help="source sentences, one per line")
    renamed(mine, "--target", "--tgt", required=True, help="target sentences, one per line")
    renamed(
        mine, "--output", "--out", required=True, help="output TSV: score, source line, target line, source, target"
    )
    renamed(
        mine,
        "--source-language",
        "--src-lang",
        help="language of --source (picks the encoder of a dual model; inferred when the model has exactly two)",
    )
    renamed(mine, "--target-language", "--tgt-lang", help="language of --target")
    mine.add_argument("--k", type=positive_int, default=4, help="neighbours in the margin (Eq. 4)")
    mine.add_argument(
        "--margin",
        choices=("ratio", "distance"),
        default="ratio",
        help="the margin score (Artetxe and Schwenk 2019): the cosine over (ratio) or less "
        "(distance) the mean cosine of both sentences' k nearest neighbours (default: "
        "%(default)s)",
    )
    mine.add_argument(
        "--mode",
        choices=("forward", "backward", "max", "intersect"),
        default="max",
        help="candidates: each source's best target (forward), each target's best source (backward), "
        "both, kept one to one by score (max), or the pairs both directions agree on (intersect); "
        "default: %(default)s",
    )
    mine.add_argument(
        "--index",
        default="auto",
        help="auto (exact search for a small corpus, IVF for a large one), flat, ivf, or a faiss "
        "index_factory string, search parameters after | (e.g. 'HNSW32|efSearch=128')",
    )
    mine.add_argument(
        "--threshold", type=float, help="keep pairs scoring at least this (default: 1.06 for the ratio margin)"
    )
    mine.add_argument("--all-pairs", action="store_true", help="keep every mined pair, whatever its score")
    mine.add_argument(
        "--embeddings",
        help="folder for the job's stages, each resumed from there: the embeddings "
        "(memory-mapped .npy) and the search (default: a temporary one)",
    )
    mine.add_argument(
        "--shard-size",
        type=positive_int,
        default=100_000,
        help="sentences per shard of the embeddings, and queries per shard of the search (default "
        "100,000): what a stopped job does again, and what processes share",
    )
    mine.add_argument(
        "--memory",
        type=byte_size,
        metavar="SIZE",
        help="what the index may hold (e.g. 8GB): 'auto' picks compressed lists beyond it",
    )
    mine.add_argument("--batch-size", type=positive_int, default=64, help=BATCH_SIZE_HELP)
    mine.add_argument("--max-length", type=positive_int, default=128, help=MAX_LENGTH_HELP)
    mine.add_argument("--backend", default="torch", choices=BACKENDS, help=BACKEND_HELP)
    mine.set_defaults(handler="mine")

    push = commands.add_parser("push", help="push a trained model's export and model card to the Hub")
    push.add_argument("--model", required=True, help="trained hf_xlsr model folder")
    push.add_argument(
        "--repo-id",
        required=True,
        help="one repository that receives the sentence-transformers export (routed by language for "
        "a model with one encoder per language), its model card and mteb metadata",
    )
    push.add_argument("--include-checkpoint", action="store_true", help="also push the full training checkpoint")
    push.add_argument("--private", action="store_true", help="create the Hub repository private")
    push.set_defaults(handler="push")
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hf_xlsr")
    except PackageNotFoundError:
        return "unknown (not installed)"


def quiet_console() -> None:
    """What a command prints at the default log level is hf_xlsr's own progress (training, encoding, scoring,
    mining) and real warnings: other libraries' progress bars for sub-second steps (transformers' "Loading
    weights" and "Writing model shards", datasets' "Filter") are off unless the user set the variables that govern
    them, and DeepSpeed's notice that it found no GPU (printed whenever accelerate imports it) is dropped."""
    # each variable is read when its library is imported; where one already is (main() called from Python), its
    # own switch turns the bars off now. A variable the user set is their choice.
    if "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ:  # huggingface_hub's and transformers' bars
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        if "transformers" in sys.modules:
            sys.modules["transformers"].utils.logging.disable_progress_bar()
    if "HF_DATASETS_DISABLE_PROGRESS_BARS" not in os.environ:
        os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
        if "datasets" in sys.modules:
            sys.modules["datasets"].disable_progress_bars()
    logging.getLogger("DeepSpeed").addFilter(lambda record: "Setting accelerator to CPU" not in record.getMessage())
    warnings.formatwarning = one_line_warning


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line prints it: its category and message on one line, without the source line."""
    return f"{category.__name__}: {message}\n"


COMPUTING_COMMANDS = ("train", "evaluate", "encode", "embed", "mine")


def main(argv: Sequence[str] | None = None) -> int:
    quiet_console()
    # hf_xlsr's own progress at INFO; other libraries (faiss's loader, datasets, ...) only when they warn
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    logger.setLevel(logging.INFO if os.environ.get("RANK", "0") == "0" else logging.WARNING)  # once, not per process
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "allow_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    missing = [flag for flag, dest in getattr(args, "required_options", None) or () if getattr(args, dest) is None]
    if missing:
        parser.error(f"hf-xlsr {args.command}: the following arguments are required: {', '.join(missing)}")
    if getattr(args, "help", False) and TRAIN_HELP_FILE.is_file():  # train --help: no torch nor transformers
        print(TRAIN_HELP_FILE.read_text(encoding="utf-8"), end="")
        return 0
    import importlib

    from hf_xlsr.commands.common import UsageError, choose_threads, resolve_model
    from hf_xlsr.data.bitext import BitextFormatError
    from hf_xlsr.evaluation.loading import ModelLoadError
    from hf_xlsr.hub import PushError
    from hf_xlsr.trainers.checkpoints import CheckpointError
    from hf_xlsr.trainers.checks import ConfigFileError

    try:
        if getattr(args, "backend", None):  # a runtime not installed: one line naming the install, before any work
            from hf_xlsr.evaluation.backends import check_backend

            try:
                check_backend(args.backend)
            except ValueError as error:
                raise UsageError(f"--backend {args.backend}: {error}") from None
        if getattr(args, "model", None):  # package:<name>/<path>, as a run configuration names a model
            args.model_reference, args.model = args.model, resolve_model(args.model)
        if args.command in COMPUTING_COMMANDS and not getattr(args, "help", False):
            choose_threads()
        return importlib.import_module(f"hf_xlsr.commands.{args.handler}").run(args, rest)
    except (
        ConfigFileError,
        BitextFormatError,
        CheckpointError,
        FileNotFoundError,
        ModelLoadError,
        UsageError,
        PushError,
    ) as error:
        parser.exit(2, f"hf-xlsr {args.command}: error: {error}\n")
    except KeyboardInterrupt:  # Ctrl-C outside training, or a second one during it: no checkpoint, no traceback
        parser.exit(130, f"hf-xlsr {args.command}: stopped by Ctrl-C\n")


if __name__ == "__main__":
    sys.exit(main())
