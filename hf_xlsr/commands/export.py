# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr export --model DIR --output DIR``: a trained model as sentence-transformers folders, into a
folder that is new, empty, or an earlier export (``--overwrite``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..evaluation import loading
from ..export import ExportTargetError, check_export_target, export_sentence_transformers, routes
from ..hub import RUN_INFO, read_json
from .common import UsageError, writable


def run(args: argparse.Namespace, rest: list[str]) -> int:
    writable(("--output", args.output))
    try:  # before the model loads: an export writes only its own folder
        check_export_target(args.output, [args.model], args.overwrite, "--output", "--overwrite")
    except ExportTargetError as error:
        raise UsageError(str(error)) from None
    model, tokenizers = loading.load_trained_model(args.model)
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
