# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr mine --model M --source FILE --target FILE --output pairs.tsv``: parallel sentences mined
from two files by a margin score, each stage resumable, shared by the processes of ``accelerate launch``."""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

import torch
from accelerate import PartialState

from ..data.bitext import SentenceFile
from ..evaluation import loading
from ..evaluation.encoders import as_encoder, model_languages
from ..evaluation.mining import RATIO_THRESHOLD, check_index, index_spec, mine_files
from .common import UsageError, warn_untrained, writable

logger = logging.getLogger("hf_xlsr")


def run(args: argparse.Namespace, rest: list[str]) -> int:
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
    model, tokenizers = loading.load_for_evaluation(args.model, args.backend)
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


def mining_languages(model, source: str | None, target: str | None) -> tuple[str | None, str | None]:
    """``--source-language`` / ``--target-language`` checked against the languages the model tells apart (an
    export's routes, an hf_xlsr model's per-language encoders or heads); where it tells none apart, any language will
    do."""

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
