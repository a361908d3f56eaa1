# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr``: the command line of hf_xlsr. Each command is a thin wrapper over the library.

hf-xlsr train CONFIG.yaml [--key value ...]      (also: accelerate launch examples/train.py CONFIG.yaml)
hf-xlsr evaluate --model DIR [--languages en fr de ... --data bible --split heldout]
hf-xlsr encode --model DIR --input sentences.txt --output vectors.npy [--language fr]
hf-xlsr mine --model DIR --source en.txt --target fr.txt --output pairs.tsv
hf-xlsr export --model DIR --output DIR
hf-xlsr push --model DIR --repo-id me/name

A module of its own, outside the ``hf_xlsr`` package: importing the package imports torch and transformers and
registers the models with the Auto classes, which takes seconds; ``hf-xlsr --help`` needs none of it, and each
command imports the library only when it runs.
"""

from __future__ import annotations

import argparse
import json
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


def _train(args: argparse.Namespace, rest: list[str]) -> int:
    if args.help:  # the fields' help as the package ships it (`TRAIN_HELP_FILE`): no torch to import
        print(TRAIN_HELP_FILE.read_text(encoding="utf-8") if TRAIN_HELP_FILE.is_file() else train_help(), end="")
        return 0
    if args.config is None:
        print("usage: hf-xlsr train CONFIG.yaml [--field value ...]", file=sys.stderr)
        raise UsageError("give a run configuration, a YAML or JSON file (hf-xlsr train --help lists its fields)")
    from hf_xlsr.trainers import parse_run_arguments, run_training

    model_args, data_args, training_args = parse_run_arguments(args.config, rest)
    trainer, metrics = run_training(model_args, data_args, training_args)
    if metrics and trainer.is_world_process_zero():  # under several processes, once
        print(json.dumps(metrics, indent=2))
    trainer.accelerator.wait_for_everyone()  # processes leave their group together, not in the interpreter's teardown
    trainer.accelerator.end_training()
    return 0


# the TrainingArguments fields a run sets most, listed in `train --help` beside the run's own
COMMON_TRAINING_FIELDS = (
    "output_dir", "max_steps", "num_train_epochs", "per_device_train_batch_size", "gradient_accumulation_steps",
    "learning_rate", "warmup_steps", "bf16", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
    "save_total_limit", "logging_steps", "seed", "resume_from_checkpoint", "report_to",
)  # fmt: skip


def _package_folder() -> Path:
    """hf_xlsr's folder, found without importing the package (which imports torch and transformers)."""
    import importlib.util

    spec = importlib.util.find_spec("hf_xlsr")
    return Path(next(iter(spec.submodule_search_locations))) if spec else Path(__file__).with_name("hf_xlsr")


# `train_help()` as the package ships it, so that `hf-xlsr train --help` prints at once; a test keeps it equal to
# what `train_help()` gives (`write_train_help()` writes it again)
TRAIN_HELP_FILE = _package_folder() / "train_help.txt"


def write_train_help() -> None:
    TRAIN_HELP_FILE.write_text(train_help(), encoding="utf-8")


def train_help() -> str:
    """``hf-xlsr train --help``: the model and data fields, hf_xlsr's training fields and the most used of
    ``TrainingArguments``; one line for the rest of them, laid out 100 columns wide whatever the terminal."""
    import dataclasses

    from transformers import HfArgumentParser, TrainingArguments

    from hf_xlsr.registry import paper_recipe, trained_types
    from hf_xlsr.trainers import XlsrTrainingArguments
    from hf_xlsr.trainers.arguments import DataArguments, ModelArguments
    from hf_xlsr.trainers.trainer import WARMUP_SHARE

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


def _sentence_encoder(args: argparse.Namespace):
    """``--model`` as an encoder of ``--language``'s sentences; a one-line error when the model encodes each of its
    languages its own way and ``--language`` names none of them."""
    from hf_xlsr.evaluation.encoders import as_encoder, model_languages
    from hf_xlsr.evaluation.loading import load_for_evaluation

    model, tokenizers = load_for_evaluation(args.model, args.backend)
    languages = model_languages(model)
    if languages and args.language not in languages:
        given = "no --language" if args.language is None else f"--language {args.language}"
        raise UsageError(
            f"{given}: the model encodes each of {', '.join(languages)} its own way; give one of them with --language"
        )
    warn_untrained(model, args.model, [args.language])
    return as_encoder(model, tokenizers, batch_size=args.batch_size, max_length=args.max_length, backend=args.backend)


def _encode(args: argparse.Namespace, rest: list[str]) -> int:
    import tempfile

    from hf_xlsr.data.bitext import SentenceFile
    from hf_xlsr.evaluation.mining import embed_file
    from hf_xlsr.utils import with_umask

    output = Path(args.output)
    if output.suffix != ".npy":
        raise UsageError(f"--output {output}: the vectors go to a .npy file")
    writable(("--output", output))
    sentences = SentenceFile(args.input, keep_blank=True)  # row i is line i
    encode = _sentence_encoder(args)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.resolve().parent) as scratch:  # nothing half-written at --output
        vectors = embed_file(encode, sentences, args.language, Path(scratch) / output.name)
        shape = vectors.shape
        del vectors
        with_umask(Path(scratch) / output.name)
        os.replace(Path(scratch) / output.name, output)
    print(
        f"{shape[0]} lines of {args.input} -> {output} ({shape[0]} x {shape[1]} float32, L2-normalised; row i "
        f"is line i + 1{lines_said(sentences, encode, args.language)})"
    )
    return 0


def lines_said(sentences, encode, language: str | None) -> str:
    """What the summary line says of the input's lines besides their count: the blank ones (encoded as the empty
    string) and the ones cut to the encoder's length."""
    from hf_xlsr.evaluation.encoders import truncated_count

    said = f"; {sentences.blank_lines} blank lines encoded as the empty string" if sentences.blank_lines else ""
    cut, limit = truncated_count(encode, sentences.batches(1024), language)
    return said + (f"; {cut} lines cut to {limit} tokens" if cut else "")


def _embed(args: argparse.Namespace, rest: list[str]) -> int:
    import torch
    from accelerate import PartialState

    from hf_xlsr.data.bitext import SentenceFile
    from hf_xlsr.evaluation.mining.shards import VECTORS, corpus_manifest, embed_shards, join_shards, open_folder

    writable(("--output", args.output))
    sentences = SentenceFile(args.input, keep_blank=True)  # row i is line i
    manifest = corpus_manifest(sentences, args.language, str(args.model), args.shard_size)
    try:
        open_folder(args.output, manifest)  # a folder of another job is refused before the model loads
    except ValueError as error:
        raise UsageError(f"--output {error}") from None
    state = PartialState(cpu=not torch.cuda.is_available())  # under accelerate launch: this process's share
    encode = _sentence_encoder(args)
    embedded = embed_shards(
        encode,
        sentences,
        args.language,
        args.output,
        manifest,
        state.process_index,
        state.num_processes,
        progress=state.is_local_main_process,
    )
    state.wait_for_everyone()
    if state.is_main_process:
        vectors = join_shards(args.output)
        print(
            f"{len(vectors)} lines of {args.input} -> {Path(args.output) / VECTORS} ({manifest['shards']} "
            f"shards, {len(embedded)} embedded by this process, the others found done or by the other "
            f"{state.num_processes - 1} processes; row i is line i + 1"
            f"{lines_said(sentences, encode, args.language)})"
        )
    state.wait_for_everyone()
    state.destroy_process_group()  # before the interpreter's teardown, which must not meet gloo's threads alive
    return 0


def _export(args: argparse.Namespace, rest: list[str]) -> int:
    from hf_xlsr.evaluation.loading import load_trained_model
    from hf_xlsr.export import ExportTargetError, check_export_target, export_sentence_transformers, routes
    from hf_xlsr.hub import RUN_INFO, read_json

    writable(("--output", args.output))
    try:  # before the model loads: an export writes only its own folder
        check_export_target(args.output, [args.model], args.overwrite, "--output", "--overwrite")
    except ExportTargetError as error:
        raise UsageError(str(error)) from None
    model, tokenizers = load_trained_model(args.model)
    run_info = read_json(Path(args.model) / RUN_INFO)
    folder = export_sentence_transformers(
        model, tokenizers, args.output, args.max_length, run_info, overwrite=args.overwrite, protect=[args.model]
    )
    language_routes = routes(model)
    if language_routes:
        print(f"{folder}: one encoder per language; encode with task=<language>, one of {', '.join(language_routes)}")
    else:
        print(f"{folder}")
    return 0


def _evaluate(args: argparse.Namespace, rest: list[str]) -> int:
    from hf_xlsr.evaluation.loading import ModelLoadError, load_for_evaluation
    from hf_xlsr.evaluation.suite import TASKS, SuiteOptions, format_language_table, format_table, run_suite

    tasks = [task.strip() for task in args.tasks.split(",") if task.strip()]
    unknown = [task for task in tasks if task not in TASKS and not task.startswith("mteb:")]
    if unknown:
        raise UsageError(f"unknown task {unknown[0]!r} (one of {', '.join(TASKS)}, mteb:<TaskName>)")
    named = args.languages  # None: Tatoeba's every test set, en fr for the other tasks
    args.languages = named or ["en", "fr"]
    if len(args.languages) < 2 and (tasks != ["tatoeba"] or not named):
        raise UsageError(f"--languages {args.languages[0]}: name two or more languages, the first the pivot")
    if tasks != ["tatoeba"]:
        check_evaluation_languages(args.data, args.languages)
    if args.output is None:  # beside the model, as transformers' eval_results.json, where the model is the user's
        installed = args.model_reference.startswith("package:") or "site-packages" in Path(args.model).parts
        if not installed and not Path(args.model).is_dir():
            from hf_xlsr.evaluation.loading import check_model_path

            check_model_path(args.model)  # a path that is no model says so first
        if installed or not Path(args.model).is_dir():
            raise UsageError(
                f"--model {args.model_reference} is not a folder of yours to write results into: give "
                "--output FILE.json"
            )
        args.output = str(Path(args.model) / "eval_results.json")
    args.output_dir = args.output_dir or str(Path(args.output).parent)
    writable(("--output", args.output), ("--output-dir", args.output_dir))
    tatoeba_languages = None
    if "tatoeba" in tasks:
        if args.tatoeba_dir is None:
            raise UsageError("--tasks tatoeba reads LASER's Tatoeba test sets: give their folder, --tatoeba-dir DIR")
        from hf_xlsr.evaluation.tatoeba import load_tatoeba, tatoeba_codes

        try:
            sets = load_tatoeba(args.tatoeba_dir)
            tatoeba_languages = tatoeba_codes(sets, named, args.tatoeba_dir) if named else None
        except (OSError, ValueError) as error:
            raise UsageError(f"--tatoeba-dir: {error}") from None
        if tatoeba_languages == []:
            raise UsageError("--languages: name a language besides English, whose Tatoeba test set to score")

    options = SuiteOptions(
        languages=args.languages,
        data=args.data,
        split=args.split,
        max_pairs=args.max_pairs,
        sts_file=args.sts_file,
        sts_dataset=args.sts_dataset,
        output_dir=args.output_dir,
        batch_size=args.batch_size,
        mteb_cache=args.mteb_cache,
        backend=args.backend,
        tatoeba_dir=args.tatoeba_dir,
        max_length=args.max_length,
        tatoeba_languages=tatoeba_languages,
        **({"seed": args.seed} if args.seed is not None else {}),
    )
    from hf_xlsr.evaluation.encoders import model_languages
    from hf_xlsr.export import MTEB_META

    if any(task != "tatoeba" and not task.startswith("mteb") for task in tasks):
        warn_training_data(args.model, args.data, args.split)
    model, tokenizers = load_for_evaluation(args.model, args.backend)
    encoded = model_languages(model)
    options.routes = encoded
    unknown = [language for language in args.languages if encoded and language not in encoded]
    if unknown:
        raise ModelLoadError(f"{args.model}: encodes {', '.join(encoded)} each its own way, not {unknown[0]}")
    if any(task.startswith("mteb") for task in tasks) and (Path(args.model) / MTEB_META).is_file():
        from hf_xlsr.evaluation.mteb import export_model_meta

        options.model_meta = export_model_meta(args.model)  # an export: label mteb's results with its metadata
    trained = trained_languages(model, args.model)
    untrained = [language for language in args.languages if trained and language not in trained]
    if untrained:
        print(f"{args.model} was trained on {', '.join(trained)}; {', '.join(untrained)}: zero-shot")
    results = run_suite(model, tokenizers, tasks, options, output=args.output)
    print(format_table(results))
    for task in ("retrieval", "retrieval_pcr"):
        if task in results and len(args.languages) > 2:
            table = format_language_table(results[task], args.languages, task, zero_shot=untrained)
            print(f"\n{task}, held-out, {results[task]['sample']}\n{table}")
            print(f"heat map: {Path(args.output_dir) / f'{task}.png'}")
    print("time per task: " + ", ".join(f"{task} {seconds:.1f} s" for task, seconds in options.seconds.items()))
    print(f"results written to {args.output}")
    return 0


def warn_training_data(model: str, data: str, split: str) -> None:
    """A warning when ``--data`` (and ``--split``) is what the model was trained on, by the training run's record: a
    file of the same bytes (wherever it lies now), or the offline corpus's training split."""
    from hf_xlsr.hub import RUN_INFO, read_json
    from hf_xlsr.utils import file_digest

    run = read_json(Path(model) / RUN_INFO) if Path(model).is_dir() else {}
    if not run:
        return
    trained_on = Path(data).is_file() and file_digest(data) in (run.get("train_files") or {}).values()
    if trained_on or (data == run.get("train_data") and split == run.get("train_split", "train")):
        what = f"--data {data}" if trained_on else f"--data {data} --split {split}"
        logger.warning(
            "%s is the data %s was trained on (%s): these scores are on training pairs, not held out",
            what,
            model,
            RUN_INFO,
        )


def warn_untrained(model, path: str, languages: Sequence[str | None]) -> None:
    """A warning for each of ``languages`` that the model was not trained on, naming those it was: one encoder for
    every language encodes any language, but only the trained ones are in its space by training."""
    trained = trained_languages(model, path)
    for language in languages:
        if language and trained and language not in trained:
            logger.warning(
                "%s was trained on %s, not %s: its vectors of %s are zero-shot",
                path,
                ", ".join(trained),
                language,
                language,
            )


def trained_languages(model, path: str) -> list[str]:
    """The languages a model was trained on: an hf_xlsr model's configuration, an export's mteb metadata; [] when
    the model does not say (a plain sentence-transformers folder)."""
    languages = getattr(getattr(model, "config", None), "languages", None)
    if languages:
        return list(languages)
    meta = Path(path) / "mteb_model_meta.json"
    if meta.is_file():
        from hf_xlsr.languages import MTEB_LANGUAGES

        codes = {name: code for code, name in MTEB_LANGUAGES.items()}
        return [codes[name] for name in json.loads(meta.read_text()).get("languages") or [] if name in codes]
    return []


def _mine(args: argparse.Namespace, rest: list[str]) -> int:
    import tempfile

    import torch
    from accelerate import PartialState

    from hf_xlsr.data.bitext import SentenceFile
    from hf_xlsr.evaluation.encoders import as_encoder
    from hf_xlsr.evaluation.loading import load_for_evaluation
    from hf_xlsr.evaluation.mining import RATIO_THRESHOLD, check_index, index_spec, mine_files

    threshold = None if args.all_pairs else args.threshold
    if threshold is None and not args.all_pairs:
        if args.margin != "ratio":
            raise UsageError("the distance margin has no customary cut: give --threshold, or --all-pairs")
        threshold = RATIO_THRESHOLD
        print(
            f"keeping pairs whose ratio margin is at least {threshold} (the customary cut; --threshold to change "
            "it, --all-pairs to keep every mined pair)"
        )
    if Path(args.source).resolve() == Path(args.target).resolve():
        logger.warning("--source and --target are the same file: every sentence will be mined as its own translation")
    writable(("--output", args.output), *((("--embeddings", args.embeddings),) if args.embeddings else ()))
    state = PartialState(cpu=not torch.cuda.is_available())  # under accelerate launch: this process's share
    if state.num_processes > 1 and not args.embeddings:
        raise UsageError(f"{state.num_processes} processes share their shards in one folder: give --embeddings DIR")
    source, target = SentenceFile(args.source), SentenceFile(args.target)
    model, tokenizers = load_for_evaluation(args.model, args.backend)
    source_language, target_language = mining_languages(model, args.source_language, args.target_language)
    warn_untrained(model, args.model, [source_language, target_language])
    encode = as_encoder(
        model, tokenizers, batch_size=args.batch_size, max_length=args.max_length, backend=args.backend
    )
    try:
        check_index(index_spec(0, args.index), encode(["a"], source_language).shape[1])
    except ValueError as error:
        raise UsageError(f"--index: {error}") from None
    work = Path(args.embeddings) if args.embeddings else None
    Path(args.output).resolve().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(args.output).resolve().parent) as scratch:
        written = mine_files(
            encode,
            source,
            target,
            args.output,
            source_language,
            target_language,
            threshold,
            work or scratch,
            k=args.k,
            margin=args.margin,
            mode=args.mode,
            index=args.index,
            model=str(args.model),
            memory=args.memory,
            progress=state.is_local_main_process,
            process_index=state.process_index,
            num_processes=state.num_processes,
            wait=state.wait_for_everyone,
            shard_size=args.shard_size,
        )
    if state.is_main_process:
        print(f"{written} pairs written to {args.output} (score, source line, target line, source, target)")
    state.wait_for_everyone()
    state.destroy_process_group()  # before the interpreter's teardown, which must not meet gloo's threads alive
    return 0


def positive_int(text: str) -> int:
    """An integer of at least 1, for argparse: a batch size, a length, a count."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1")
    return value


def resolve_model(name: str) -> str:
    """``--model``'s ``package:<name>/<path>`` as its folder inside the installed package; other names as given."""
    from hf_xlsr.references import resolve_reference

    try:
        return resolve_reference(name)
    except (ImportError, FileNotFoundError) as error:
        raise UsageError(f"--model {name}: {error}") from None


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


class UsageError(ValueError):
    """Command-line options that are wrong or do not go together."""


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


def writable(*outputs: tuple[str, str | os.PathLike]) -> None:
    """Each ``(flag, path)`` can be written, checked before any model loads or any work starts."""
    from hf_xlsr.utils import UnwritableError, check_writable

    for flag, path in outputs:
        try:
            check_writable(path, flag)
        except UnwritableError as error:
            raise UsageError(str(error)) from None


def check_evaluation_languages(data: str, languages: Sequence[str]) -> None:
    """``--languages`` that the offline evaluation data has (files name their own missing columns when read)."""
    from hf_xlsr.data.corpora import corpus_languages

    have = corpus_languages(data)
    missing = [code for code in languages if have is not None and code not in have]
    if missing:
        raise UsageError(
            f"--languages {missing[0]}: --data {data} has no language {missing[0]!r}; it has {', '.join(have)}"
        )


def mining_languages(model, source: str | None, target: str | None) -> tuple[str | None, str | None]:
    """``--source-language`` / ``--target-language`` checked against the languages the model tells apart (an
    export's routes, an hf_xlsr model's per-language encoders or heads); where it tells none apart, any language will
    do."""
    from hf_xlsr.evaluation.encoders import model_languages

    languages = model_languages(model)
    if not languages:
        return source, target
    if source is None and target is None and len(languages) == 2:
        logger.info("mining %s sentences (--source) against %s ones (--target)", *languages)
        return languages[0], languages[1]
    for flag, language in (("--source-language", source), ("--target-language", target)):
        if language is None:
            raise UsageError(
                f"the model encodes each language its own way: give {flag}, one of {', '.join(languages)}"
            )
        if language not in languages:
            raise UsageError(f"{flag} {language}: the model encodes {', '.join(languages)}, not {language}")
    return source, target


def _push(args: argparse.Namespace, rest: list[str]) -> int:
    from hf_xlsr.hub import push_trained_model

    urls = push_trained_model(
        args.model, args.repo_id, include_checkpoint=args.include_checkpoint, private=args.private or None
    )
    print("\n".join(urls))
    return 0


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
    train.set_defaults(handler=_train, allow_extra=True)

    encode = sentence_command(
        commands,
        "encode",
        "embed a file of sentences (one per line) into a .npy file",
        "a .npy file of float32 vectors, one row per sentence",
    )
    encode.set_defaults(handler=_encode)

    embed = sentence_command(
        commands,
        "embed",
        "embed a corpus in shards, resumable, spread over processes",
        "folder: shards while running, then vectors.npy (float32)",
    )
    embed.add_argument(
        "--shard-size", type=positive_int, default=100_000, help="sentences per shard (default 100,000)"
    )
    embed.set_defaults(handler=_embed)

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
    export.set_defaults(handler=_export)

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
    evaluate.set_defaults(handler=_evaluate)

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
    mine.set_defaults(handler=_mine)

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
    push.set_defaults(handler=_push)
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


def choose_threads() -> None:
    """On the CPU, torch's threads as `hf_xlsr.utils.free_cpu_threads` chooses them, said in the first line."""
    import torch

    from hf_xlsr.utils import free_cpu_threads

    if torch.cuda.is_available():
        return
    torch.set_num_threads(free_cpu_threads())
    count = torch.get_num_threads()
    logger.info(
        "%d torch thread%s on %d cores (OMP_NUM_THREADS sets the number)",
        count,
        "s" if count > 1 else "",
        os.cpu_count() or 1,
    )


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
    if getattr(args, "help", False):  # train --help: before hf_xlsr, torch and transformers are imported
        return args.handler(args, rest)
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
        return args.handler(args, rest)
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
