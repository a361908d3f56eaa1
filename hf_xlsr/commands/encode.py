# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr encode --model M --input FILE --output FILE.npy``: every line of a file as one L2-normalised
float32 vector, row i for line i, written whole or not at all."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from ..data.bitext import SentenceFile
from ..evaluation.mining import embed_file
from ..utils import with_umask
from .common import UsageError, lines_said, sentence_encoder, writable


def run(args: argparse.Namespace, rest: list[str]) -> int:
    output = Path(args.output)
    if output.suffix != ".npy":
        raise UsageError(f"--output {output}: the vectors go to a .npy file")
    writable(("--output", output))
    sentences = SentenceFile(args.input, keep_blank=True)  # row i is line i
    encode = sentence_encoder(args)
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
