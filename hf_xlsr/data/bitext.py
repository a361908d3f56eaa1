# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Parallel corpora into ``datasets.Dataset``: TSV and JSONL files, ``Dataset`` objects, Hub dataset ids.

Files are validated line by line; a bad line raises `BitextFormatError` naming the file and the line.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import datasets

logger = logging.getLogger(__name__)

TSV_SUFFIXES = (".tsv", ".tab", ".txt")
JSONL_SUFFIXES = (".jsonl", ".json")


class BitextFormatError(ValueError):
    """A parallel-corpus file or dataset does not have the expected shape; the message names where."""

    @classmethod
    def unknown_type(cls, path: Path) -> BitextFormatError:
        """A data file of a type hf_xlsr does not read: the types it reads, and for a gettext file (``.po``,
        ``.mo``) that its folder is read as a catalogue."""
        if path.suffix.lower() in (".po", ".mo"):
            return cls(
                f"{path}: a single gettext file; give its folder ({path.parent}), which is read as a software "
                "catalogue (<language>.po files or <locale>/LC_MESSAGES/*.mo)"
            )
        readable = ", ".join(TSV_SUFFIXES + JSONL_SUFFIXES)
        return cls(f"{path}: unknown file type {path.suffix!r} (use {readable}, or a catalogue folder)")


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes, str]]:
    """Yield ``(line_number, raw bytes, text)``, decoding each line as strict UTF-8 (an error names file and line)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise BitextFormatError(
                    f"{path}:{number}: invalid UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1})"
                ) from None
            yield number, raw, text


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` of every line that holds more than white space, the line ending removed. Blank
    lines are skipped, as pandas' and ``datasets``' readers skip them, and counted in the log."""
    blank = 0
    for number, _, text in _raw_lines(path):
        if text.strip():
            yield number, text.rstrip("\r\n")
        else:
            blank += 1
    if blank:
        logger.info("%s: skipped %d blank line%s", path, blank, "" if blank == 1 else "s")


class SentenceFile:
    """The lines of a UTF-8 text file, one sentence each, indexed by byte offset: the texts are read back in batches
    or one by one, never held in memory all at once. Blank lines are passed over (mining input; `line_numbers` maps
    each sentence to its line), or with ``keep_blank`` kept as empty sentences, so that sentence i is line i
    (``encode``, ``embed``); `blank_lines` counts them either way.

    Building the index reads the file once, checking every line's UTF-8 (a bad line raises
    `BitextFormatError` naming the file and line).
    """

    def __init__(self, path: str | os.PathLike, keep_blank: bool = False):
        self.path, self.keep_blank = Path(path), keep_blank
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such file")
        offsets, numbers, position, blank = [], [], 0, 0
        for number, raw, text in _raw_lines(self.path):
            blank += not text.strip()
            if text.strip() or keep_blank:
                offsets.append(position)
                numbers.append(number)
            position += len(raw)
        if len(offsets) == (blank if keep_blank else 0):
            raise BitextFormatError(f"{self.path}: no sentences")
        self.offsets, self.line_numbers, self.blank_lines = offsets, numbers, blank

    def __len__(self) -> int:
        return len(self.offsets)

    def batches(self, size: int, begin: int = 0, end: int | None = None) -> Iterator[list[str]]:
        """Sentences ``begin`` to ``end`` (all by default) in file order, ``size`` at a time; reading starts at the
        byte offset of sentence ``begin``."""
        end = len(self) if end is None else min(end, len(self))
        batch, left = [], end - begin
        with open(self.path, "rb") as handle:
            handle.seek(self.offsets[begin] if begin < len(self) else 0)
            for raw in handle:
                if left <= 0:
                    break
                text = raw.decode("utf-8").strip()
                if text or self.keep_blank:
                    batch.append(text)
                    left -= 1
                if len(batch) == size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def reader(self):
        """A function ``sentence(i) -> str`` reading the i-th sentence from the file (open it with ``with``)."""
        return _SentenceReader(self)


class _SentenceReader:
    def __init__(self, sentences: SentenceFile):
        self.sentences = sentences

    def __enter__(self):
        self.handle = open(self.sentences.path, "rb")
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()

    def __call__(self, i: int) -> str:
        self.handle.seek(self.sentences.offsets[i])
        return self.handle.readline().decode("utf-8").strip()


def read_tsv(path: str | os.PathLike, columns: Sequence[str], allow_empty: bool = False) -> datasets.Dataset:
    """Read a headerless file of tab-separated columns, one sentence pair (or tuple) per line; with
    ``allow_empty`` (multi-way files) a cell may be empty, as long as the line has a sentence."""
    path = Path(path)
    rows: dict[str, list[str]] = {name: [] for name in columns}
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != len(columns):
            raise BitextFormatError(
                f"{path}:{number}: expected {len(columns)} tab-separated columns ({', '.join(columns)}), "
                f"found {len(fields)}"
            )
        for name, field in zip(columns, fields, strict=True):
            if not field.strip() and not allow_empty:
                raise BitextFormatError(f"{path}:{number}: column '{name}' is empty")
            rows[name].append(field.strip())
    if not rows[columns[0]]:
        raise BitextFormatError(f"{path}: no sentence pairs")
    return datasets.Dataset.from_dict(rows)


def read_jsonl(path: str | os.PathLike, columns: Sequence[str], allow_missing: bool = False) -> datasets.Dataset:
    """Read one JSON object per line; each must hold a non-empty string under every name in ``columns`` (with
    ``allow_missing``, for multi-way files, a name may be absent, empty or null: an empty cell).

    Other fields of the objects are kept when every line has them (NLI columns, labels, ids).
    """
    path = Path(path)
    records = []
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BitextFormatError(f"{path}:{number}: invalid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise BitextFormatError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}")
        for name in columns:
            if allow_missing and record.get(name) in (None, ""):
                record[name] = ""
            elif name not in record:
                raise BitextFormatError(f"{path}:{number}: missing field '{name}'")
            elif not isinstance(record[name], str) or not record[name].strip():
                raise BitextFormatError(f"{path}:{number}: field '{name}' must be a non-empty string")
        records.append(record)
    if not records:
        raise BitextFormatError(f"{path}: no sentence pairs")
    shared = set(records[0]).intersection(*records[1:])
    keep = list(columns) + sorted(shared - set(columns))
    return datasets.Dataset.from_dict({name: [record[name] for record in records] for name in keep})


def check_columns(dataset: datasets.Dataset, columns: Sequence[str], where: str) -> datasets.Dataset:
    """Flatten nested columns (``translation.en``) when asked for, and fail clearly on a missing column."""
    if any("." in name for name in columns) and any(name not in dataset.column_names for name in columns):
        dataset = dataset.flatten()
    missing = [name for name in columns if name not in dataset.column_names]
    if missing:
        raise BitextFormatError(f"{where}: no column {missing[0]!r} (columns: {', '.join(dataset.column_names)})")
    return dataset


def load_bitext(
    source: str | os.PathLike | datasets.Dataset,
    columns: Sequence[str],
    split: str = "train",
    **load_dataset_kwargs,
) -> datasets.Dataset:
    """Load a parallel corpus whose sentences sit in ``columns`` (one column per language).

    ``source`` is a ``datasets.Dataset``, a ``.tsv``/``.txt`` file (headerless, tab-separated, one column per
    name in ``columns``), a ``.jsonl`` file, or the id of a Hub dataset (loaded with ``datasets.load_dataset``,
    nested columns addressed as ``translation.en``).
    """
    columns = list(columns)
    if isinstance(source, datasets.Dataset):
        return check_columns(source, columns, "dataset")
    path = Path(source)
    if path.exists():
        if path.is_dir():
            raise BitextFormatError(f"{path}: is a directory, expected a .tsv or .jsonl file")
        if path.suffix.lower() in TSV_SUFFIXES:
            return read_tsv(path, columns)
        if path.suffix.lower() in JSONL_SUFFIXES:
            return read_jsonl(path, columns)
        raise BitextFormatError.unknown_type(path)
    if path.suffix.lower() in TSV_SUFFIXES + JSONL_SUFFIXES:
        raise FileNotFoundError(f"{path}: no such file")
    logger.info("loading Hub dataset %s (split %s)", source, split)
    dataset = datasets.load_dataset(str(source), split=split, **load_dataset_kwargs)
    return check_columns(dataset, columns, f"dataset {source}")


_REPORTED_DROPS: set[tuple[str, tuple[str, ...]]] = set()  # (fingerprint, columns) whose drop is already logged


def unique_pairs(dataset: datasets.Dataset, columns: Sequence[str]) -> datasets.Dataset:
    """Keep the first occurrence of every sentence in each column, so that retrieval has one right answer; how many
    pairs were dropped is logged once per rows and columns (a second reader of the same rows, another task of one
    evaluation, logs it at ``logging.DEBUG``)."""
    seen: list[set[str]] = [set() for _ in columns]
    keep = []
    for index, texts in enumerate(zip(*(dataset[name] for name in columns), strict=True)):
        if all(text not in seen_texts for text, seen_texts in zip(texts, seen, strict=True)):
            keep.append(index)
        for text, seen_texts in zip(texts, seen, strict=True):
            seen_texts.add(text)
    if len(keep) < len(dataset):
        seen_before = (dataset._fingerprint, tuple(columns)) in _REPORTED_DROPS
        _REPORTED_DROPS.add((dataset._fingerprint, tuple(columns)))
        logger.log(
            logging.DEBUG if seen_before else logging.INFO,
            "dropped %d pairs whose sentence repeats an earlier one",
            len(dataset) - len(keep),
        )
    return dataset.select(keep)
