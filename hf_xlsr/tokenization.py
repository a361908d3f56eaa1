"""Saving and loading the per-language tokenizers of a model.

A model whose two languages share one tokenizer keeps it at the top of its folder (``AutoTokenizer.from_pretrained
(path)`` works); a model with one tokenizer per language keeps them in ``tokenizer_x/`` and ``tokenizer_y/``
(``AutoTokenizer.from_pretrained(path, subfolder="tokenizer_y")``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerBase

SIDES = ("x", "y")


def save_tokenizers(tokenizers: Mapping[str, PreTrainedTokenizerBase], path: str | os.PathLike) -> None:
    """Save ``{"x": ..., "y": ...}`` under ``path``: once at the top when both are the same object."""
    if not tokenizers:
        return
    path = Path(path)
    if tokenizers.get("x") is tokenizers.get("y") or len(tokenizers) == 1:
        next(iter(tokenizers.values())).save_pretrained(path)
        return
    for side, tokenizer in tokenizers.items():
        tokenizer.save_pretrained(path / f"tokenizer_{side}")


def load_tokenizers(path: str | os.PathLike, **kwargs) -> dict[str, PreTrainedTokenizerBase]:
    """The tokenizers saved by :func:`save_tokenizers`, keyed by side ('x', 'y'); a Hub id works too."""
    local = Path(path)
    if local.is_dir() and not (local / "tokenizer_x").is_dir():
        tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
        return dict.fromkeys(SIDES, tokenizer)
    if local.is_dir():
        return {
            side: AutoTokenizer.from_pretrained(str(path), subfolder=f"tokenizer_{side}", **kwargs) for side in SIDES
        }
    try:  # a Hub repository: per-language subfolders first, then a shared tokenizer at the top
        return {
            side: AutoTokenizer.from_pretrained(str(path), subfolder=f"tokenizer_{side}", **kwargs) for side in SIDES
        }
    except OSError:
        return dict.fromkeys(SIDES, AutoTokenizer.from_pretrained(str(path), **kwargs))
