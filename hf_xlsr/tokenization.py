# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Saving and loading the tokenizers of a model, keyed by language code.

A model whose languages share one tokenizer keeps it at the top of its folder (``AutoTokenizer.from_pretrained
(path)`` works); a model with one tokenizer per language keeps each in ``tokenizer_<language>/``
(``AutoTokenizer.from_pretrained(path, subfolder="tokenizer_fr")``). Folders written by hf_xlsr 0.2.0 name the two
tokenizers ``tokenizer_x/`` and ``tokenizer_y/``: they load as the first and second language's, with a warning.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerBase

LEGACY_FOLDERS = ("tokenizer_x", "tokenizer_y")  # hf_xlsr 0.2.0: the first and the second language's


class LanguageTokenizers(dict):
    """``{language: tokenizer}`` that saves like one tokenizer (`save_tokenizers`): ``Trainer`` saves a collator's
    ``tokenizer`` with every checkpoint, and this one then writes each language's."""

    def save_pretrained(self, path: str | os.PathLike, **kwargs) -> None:
        save_tokenizers(dict(self), path)


def one_or_per_language(
    tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase],
) -> PreTrainedTokenizerBase | LanguageTokenizers:
    """The one tokenizer, when every language of a mapping has the same; else the mapping as `LanguageTokenizers`."""
    if not isinstance(tokenizers, Mapping):
        return tokenizers
    distinct = {id(tokenizer): tokenizer for tokenizer in tokenizers.values()}
    return next(iter(distinct.values())) if len(distinct) == 1 else LanguageTokenizers(tokenizers)


def tokenizers_by_language(
    tokenizer: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase], languages: Sequence[str]
) -> dict[str, PreTrainedTokenizerBase]:
    """``{language: tokenizer}`` for every language: one tokenizer for all, or a mapping that names each."""
    if not isinstance(tokenizer, Mapping):
        return LanguageTokenizers(dict.fromkeys(languages, tokenizer))
    missing = [language for language in languages if language not in tokenizer]
    if missing:
        raise KeyError(f"no tokenizer for language {missing[0]!r}: the tokenizers are {', '.join(tokenizer)}")
    return LanguageTokenizers({language: tokenizer[language] for language in languages})


def tokenizer_for(
    tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase], language: str | None
) -> PreTrainedTokenizerBase:
    """The tokenizer of ``language``: the one tokenizer, the mapping's entry, or, for a language the mapping does not
    name (a zero-shot language), the tokenizer every named language shares."""
    if not isinstance(tokenizers, Mapping):
        return tokenizers
    if language in tokenizers:
        return tokenizers[language]
    shared = {id(tokenizer): tokenizer for tokenizer in tokenizers.values()}
    if len(shared) == 1:
        return next(iter(shared.values()))
    raise KeyError(f"no tokenizer for language {language!r}: the tokenizers are {', '.join(tokenizers)}")


def save_tokenizers(
    tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase], path: str | os.PathLike
) -> None:
    """Save one tokenizer, or ``{language: tokenizer}``, under ``path``: at the top when every language has the same
    one, else each in ``tokenizer_<language>/``."""
    path = Path(path)
    if not isinstance(tokenizers, Mapping):
        tokenizers.save_pretrained(path)
        return
    if not tokenizers:
        return
    distinct = {id(tokenizer) for tokenizer in tokenizers.values()}
    if len(distinct) == 1:
        next(iter(tokenizers.values())).save_pretrained(path)
        return
    for language, tokenizer in tokenizers.items():
        tokenizer.save_pretrained(path / f"tokenizer_{language}")


def saved_languages(path: str | os.PathLike) -> list[str] | None:
    """The ``languages`` of the model configuration saved in the folder ``path``, if it has one."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text(encoding="utf-8")).get("languages")


def load_tokenizers(
    path: str | os.PathLike, languages: Sequence[str] | None = None, **kwargs
) -> dict[str, PreTrainedTokenizerBase]:
    """The tokenizers saved by `save_tokenizers`, ``{language: tokenizer}`` for the ``languages`` of the model
    saved there (or those given); a Hub id works too. ``kwargs`` go to ``AutoTokenizer.from_pretrained``."""
    local = Path(path)
    if languages is None and local.is_dir():
        languages = saved_languages(local)
    if languages is None:
        from transformers import AutoConfig

        languages = getattr(AutoConfig.from_pretrained(str(path), **kwargs), "languages", None)
    if not languages:
        raise ValueError(f"{path}: no languages in its config.json: pass languages=[...] to load_tokenizers")

    def load(subfolder: str | None) -> PreTrainedTokenizerBase:
        return AutoTokenizer.from_pretrained(str(path), **({"subfolder": subfolder} if subfolder else {}), **kwargs)

    if local.is_dir():
        if all((local / f"tokenizer_{language}").is_dir() for language in languages):
            return LanguageTokenizers({language: load(f"tokenizer_{language}") for language in languages})
        if all((local / folder).is_dir() for folder in LEGACY_FOLDERS) and len(languages) == 2:
            first, second = languages
            warnings.warn(
                f"{path}: tokenizer_x/ and tokenizer_y/ are hf_xlsr 0.2.0's folders; they load as "
                f"{first}'s and {second}'s. Save the model again to write tokenizer_{first}/ and "
                f"tokenizer_{second}/",
                FutureWarning,
                stacklevel=2,
            )
            return LanguageTokenizers(
                {language: load(folder) for language, folder in zip(languages, LEGACY_FOLDERS, strict=True)}
            )
        return LanguageTokenizers(dict.fromkeys(languages, load(None)))
    try:  # a Hub repository: per-language subfolders first, then a shared tokenizer at the top
        return LanguageTokenizers({language: load(f"tokenizer_{language}") for language in languages})
    except OSError:
        return LanguageTokenizers(dict.fromkeys(languages, load(None)))
