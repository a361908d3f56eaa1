# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr embed --model M --input FILE --output DIR``: a corpus embedded in shards, resumable, shared by
the processes of ``accelerate launch``; ``vectors.npy`` once every shard is done."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from accelerate import PartialState

from ..data.bitext import SentenceFile
from ..evaluation.mining.shards import VECTORS, corpus_manifest, embed_shards, join_shards, open_folder
from .common import UsageError, lines_said, sentence_encoder, writable


def run(args: argparse.Namespace, rest: list[str]) -> int:
    writable(("--output", args.output))
    sentences = SentenceFile(args.input, keep_blank=True)  # row i is line i
    manifest = corpus_manifest(sentences, args.language, str(args.model), args.shard_size)
    try:
        open_folder(args.output, manifest)  # a folder of another job is refused before the model loads
    except ValueError as error:
        raise UsageError(f"--output {error}") from None
    state = PartialState(cpu=not torch.cuda.is_available())  # under accelerate launch: this process's share
    encode = sentence_encoder(args)
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
