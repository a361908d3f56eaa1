# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr evaluate --model M [--tasks ...]``: the evaluation suite, one JSON of results and a printed
table; the scores are flagged where the data is the model's training data or a language is zero-shot."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from ..data.corpora import corpus_languages
from ..evaluation import loading
from ..evaluation.encoders import model_languages
from ..evaluation.suite import TASKS, SuiteOptions, format_language_table, format_table, run_suite
from ..export import MTEB_META
from ..hub import RUN_INFO, read_json
from ..utils import file_digest
from .common import UsageError, trained_languages, writable

logger = logging.getLogger("hf_xlsr")


def run(args: argparse.Namespace, rest: list[str]) -> int:
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
            loading.check_model_path(args.model)  # a path that is no model says so first
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
        from ..evaluation.tatoeba import load_tatoeba, tatoeba_codes

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

    if any(task != "tatoeba" and not task.startswith("mteb") for task in tasks):
        warn_training_data(args.model, args.data, args.split)
    model, tokenizers = loading.load_for_evaluation(args.model, args.backend)
    encoded = model_languages(model)
    options.routes = encoded
    unknown = [language for language in args.languages if encoded and language not in encoded]
    if unknown:
        raise loading.ModelLoadError(f"{args.model}: encodes {', '.join(encoded)} each its own way, not {unknown[0]}")
    if any(task.startswith("mteb") for task in tasks) and (Path(args.model) / MTEB_META).is_file():
        from ..evaluation.mteb import export_model_meta

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


def check_evaluation_languages(data: str, languages: Sequence[str]) -> None:
    """``--languages`` that the offline evaluation data has (files name their own missing columns when read)."""

    have = corpus_languages(data)
    missing = [code for code in languages if have is not None and code not in have]
    if missing:
        raise UsageError(
            f"--languages {missing[0]}: --data {data} has no language {missing[0]!r}; it has {', '.join(have)}"
        )
