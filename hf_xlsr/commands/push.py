# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``hf-xlsr push --model DIR --repo-id me/name``: a trained model's export, model card and mteb metadata
to one Hub repository."""

from __future__ import annotations

import argparse

from ..hub import push_trained_model


def run(args: argparse.Namespace, rest: list[str]) -> int:
    urls = push_trained_model(
        args.model, args.repo_id, include_checkpoint=args.include_checkpoint, private=args.private or None
    )
    print("\n".join(urls))
    return 0
