# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Software localisation catalogues as parallel text: the same message in many languages, aligned by its key.

A catalogue folder is one of

* an i18n JSON folder, MediaWiki's form: ``en.json``, ``fr.json``, ... each ``{key: message}`` (``@metadata`` left
  out); the key is the meaning;
* a gettext folder: ``fr.po``, ``de.po``, ... or ``<locale>/LC_MESSAGES/<domain>.mo`` (as ``/usr/share/locale`` holds
  them); ``msgid`` is the English text and the meaning (``msgctxt`` kept apart).

`read_catalogues` gives one row per meaning with a column per language, as a multi-way file does, so that a
catalogue folder is a ``train_data`` (or one language pair's source) like any other. Messages are cleaned
(`clean_message`: markup, placeholders, accelerator marks, plural and gender switches) and a pair is dropped when
the English is a single word, when the translation equals the English (left untranslated), or when either side is a
line of a test set (``exclude``: Tatoeba's files, say). Language codes are the catalogue's own, lower case with ``-``
(``pt-br``, ``zh-hans``, ``sr-latin``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import datasets
import polib

from .bitext import BitextFormatError

PIVOT = "en"
SWITCH = re.compile(r"\{\{\s*(?:PLURAL|GENDER):[^|{}]*\|([^|{}]*)[^{}]*\}\}", re.IGNORECASE)  # its first form
PLACEHOLDER = re.compile(r"\$\d+|%(?:\([\w.-]+\))?[-+ #0]*\d*(?:\.\d+)?[sdifuxXcrgeEl%]|\{\w*\}|%\d+\$?[sd]?")
TAG = re.compile(r"<[^<>]+>|&[a-z]+;")  # HTML: a word boundary
EXTERNAL = re.compile(r"\[https?://\S+\s+([^\]]*)\]")  # [https://... text]: the text
WIKI = re.compile(r"\[\[[^|\]]*\||\]\]|\[\[|'''|''")  # a link's target, bold and italic marks: nothing
ACCELERATOR = re.compile(r"(?<![\w&])[_&](?=\w)")
EMPTY_QUOTES = re.compile(r"[\"“”«»„]\s*[\"“”«»„]")  # what a removed placeholder leaves between quotes


def locale_code(name: str) -> str:
    """A catalogue's locale as a language code: ``pt_BR`` -> ``pt-br``, ``sr@latin`` -> ``sr-latin``."""
    return name.replace("_", "-").replace("@", "-").lower()


def clean_message(text: str) -> str:
    """A message as a sentence: plural and gender switches at their first form, markup, wiki links, placeholders
    (``$1``, ``%s``, ``%(name)s``, ``{0}``) and accelerator marks (``_File``, ``&File``) removed, whitespace
    collapsed; empty where a template is left (``{{...}}``)."""
    text = SWITCH.sub(r"\1", text)
    if "{{" in text or "}}" in text:
        return ""
    text = EMPTY_QUOTES.sub(
        " ", ACCELERATOR.sub("", WIKI.sub("", EXTERNAL.sub(r"\1", TAG.sub(" ", PLACEHOLDER.sub(" ", text)))))
    )
    return " ".join(text.split()).strip(" :")


def read_json_catalogue(path: Path) -> dict[str, str]:
    try:
        messages = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise BitextFormatError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(messages, dict):
        raise BitextFormatError(f"{path}: expected an object of message keys, found {type(messages).__name__}")
    return {key: value for key, value in messages.items() if not key.startswith("@") and isinstance(value, str)}


def read_po(path: Path) -> dict[str, str]:
    """``{msgid: msgstr}`` of a ``.po`` file, read by ``polib`` (a ``msgctxt`` joined to its msgid with ``\\x04``, as
    ``.mo`` files hold it; the first plural form; fuzzy, obsolete and empty translations left out). A line polib
    cannot read is one line naming the file, the line and its text."""
    try:
        catalogue = polib.pofile(str(path), encoding="utf-8")
    except (OSError, ValueError) as error:
        number = re.search(r"\(line (\d+)\)", str(error))
        if not number:
            raise BitextFormatError(f"{path}: not a .po file ({error})") from None
        line = path.read_text(encoding="utf-8").splitlines()[int(number.group(1)) - 1].strip()
        raise BitextFormatError(f"{path}:{number.group(1)}: not a line of a .po file: {line[:60]!r}") from None
    return entries(catalogue)


def read_mo(path: Path) -> dict[str, str]:
    """``{msgid: msgstr}`` of a compiled ``.mo`` file (GNU gettext's format, either byte order; first plural forms),
    read by ``polib``."""
    try:
        return entries(polib.mofile(str(path)))
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise BitextFormatError(f"{path}: not a .mo file ({error})") from None


def entries(catalogue: polib._BaseFile) -> dict[str, str]:
    """A polib catalogue's translated messages, each keyed by its msgid (``msgctxt\\x04msgid`` with a context)."""
    found = {}
    for entry in catalogue:
        translation = entry.msgstr or entry.msgstr_plural.get(0, "") or entry.msgstr_plural.get("0", "")
        if entry.msgid and translation and "fuzzy" not in entry.flags and not entry.obsolete:
            found[entry.msgid if entry.msgctxt is None else f"{entry.msgctxt}\x04{entry.msgid}"] = translation
    return found


NOT_LANGUAGES = ("qqq",)  # MediaWiki's message documentation, written in English


def catalogue_files(folder: Path) -> dict[str, list[Path]]:
    """``{language: [files]}`` of a catalogue folder, English included where the form has it (JSON)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.json")) + sorted(folder.glob("*.po")):
        found.setdefault(locale_code(path.stem), []).append(path)
    for path in sorted(folder.glob("*/LC_MESSAGES/*.mo")):
        found.setdefault(locale_code(path.parent.parent.name), []).append(path)
    for code in NOT_LANGUAGES:
        found.pop(code, None)
    if not found:
        raise BitextFormatError(
            f"{folder}: no catalogue here (<language>.json, <language>.po or <locale>/LC_MESSAGES/*.mo files)"
        )
    return found


def catalogue_languages(folder: str | os.PathLike) -> list[str]:
    """The language codes a catalogue folder has, English included (its ``en.json``, or the msgids)."""
    return sorted({*catalogue_files(Path(folder)), PIVOT})


def read_messages(paths: Iterable[Path]) -> dict[str, str]:
    """One language's messages over its files, keyed by file name and message key (two domains may share keys)."""
    messages = {}
    for path in paths:
        read = {".json": read_json_catalogue, ".po": read_po, ".mo": read_mo}[path.suffix](path)
        domain = path.stem if path.suffix == ".mo" else ""
        messages.update({(domain, key): text for key, text in read.items()})
    return messages


def held_out_lines(folder: str | os.PathLike) -> set[str]:
    """Every line of every file of a folder of test sets (Tatoeba's ``tatoeba.XXX-eng.*``), stripped."""
    return {
        line.strip()
        for path in Path(folder).iterdir()
        if path.is_file()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }


def read_catalogues(
    folder: str | os.PathLike, languages: Sequence[str], exclude: str | os.PathLike | None = None
) -> datasets.Dataset:
    """One row per message with a column per language (empty where a language lacks it, or its pair is dropped:
    see the module docstring) and ``example_id`` (the message). English comes from ``en.json`` in a JSON folder,
    from the ``msgid`` in a gettext folder."""
    folder = Path(folder)
    files = catalogue_files(folder)
    gettext = not any(path.suffix == ".json" for paths in files.values() for path in paths)  # msgid: the English
    if gettext:
        files.pop(PIVOT, None)  # a gettext catalogue "in English" (typographic quotes): its msgids are the English
    missing = [code for code in languages if code != PIVOT and code not in files]
    if missing:
        raise BitextFormatError(f"{folder}: no catalogue for {missing[0]} (it has {', '.join(sorted(files))})")
    english = {} if gettext else read_messages(files[PIVOT])
    excluded = held_out_lines(exclude) if exclude else set()
    columns: dict[str, dict] = {}
    for code in (c for c in languages if c != PIVOT):
        for key, text in read_messages(files[code]).items():
            source = clean_message(key[1].split("\x04")[-1] if gettext else english.get(key, ""))
            target = clean_message(text)
            if len(source.split()) < 2 or not target or target == source or source in excluded or target in excluded:
                continue
            row = columns.setdefault(key, {PIVOT: source})
            row[code] = target
    rows, seen = [], set()
    for row in columns.values():  # a pair seen under another key (another file, another domain) is kept once
        kept = {code: text for code, text in row.items() if code == PIVOT or (code, row[PIVOT], text) not in seen}
        seen.update((code, row[PIVOT], text) for code, text in kept.items())
        if len(kept) > 1:
            rows.append(kept)
    table = {code: [row.get(code, "") for row in rows] for code in languages}
    return datasets.Dataset.from_dict({**table, "example_id": list(range(len(rows)))})
