# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Data: parallel corpora from files, datasets and the Hub; the offline corpora; the MLDoc-like Bible task."""

from ..references import package_file, resolve_reference
from .bitext import BitextFormatError, SentenceFile, load_bitext, read_jsonl, read_tsv, unique_pairs
from .corpora import (
    BIBLE_TRANSLATIONS,
    BOOK_GROUPS,
    DEFAULT_BIBLE_TRANSLATIONS,
    HELDOUT_BOOKS,
    HSK_HELDOUT_TOPICS,
    load_bible,
    load_bible_adjacent,
    load_hsk,
)

__all__ = [
    "BIBLE_TRANSLATIONS",
    "BOOK_GROUPS",
    "BitextFormatError",
    "DEFAULT_BIBLE_TRANSLATIONS",
    "HELDOUT_BOOKS",
    "HSK_HELDOUT_TOPICS",
    "SentenceFile",
    "load_bible",
    "load_bible_adjacent",
    "load_bitext",
    "load_hsk",
    "read_jsonl",
    "read_tsv",
    "package_file",
    "resolve_reference",
    "unique_pairs",
]
