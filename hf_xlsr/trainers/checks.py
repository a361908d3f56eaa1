# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The checks a run's arguments pass before any data or model loads: input paths beside the configuration file,
numbers in range, models and tokenizers that exist here, languages the offline corpora have. Each failure is one
`ConfigFileError` line naming the file (or the command line) and the field."""

from __future__ import annotations

from pathlib import Path


class ConfigFileError(ValueError):
    """A run configuration file is malformed; the message names the file and the key."""


# fields that name something the run reads (a value may be a mapping: one per language or per language pair)
INPUT_FIELDS = ("train_data", "eval_data", "model_name_or_path", "encoder", "encoders", "tokenizer", "tokenizers")
DATA_SUFFIXES = (".tsv", ".jsonl", ".json", ".txt", ".csv", ".model")


def inputs_beside_the_file(values: dict, path: Path) -> dict:
    """``values`` with each relative path of `INPUT_FIELDS` read from the configuration file's folder, as a run
    configuration is written beside its data; outputs (``output_dir``, ``export_dir``) stay relative to the current
    folder. A value that names a data file (`DATA_SUFFIXES`) missing there is an error naming the field and the file;
    other values that are not paths there (``bible``, a Hub id, ``package:...``) pass unchanged."""

    def resolved(name: str, value):
        if isinstance(value, dict):
            return {key: resolved(f"{name}.{key}", item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolved(f"{name}[{index}]", item) for index, item in enumerate(value)]
        if not isinstance(value, str) or ":" in value or Path(value).expanduser().is_absolute():
            return value
        beside = path.parent / value
        if beside.exists():
            return str(beside)
        if Path(value).suffix.lower() in DATA_SUFFIXES:
            raise ConfigFileError(
                f"{path}: {name}: no such file {beside} (a relative path is read from the configuration file's folder)"
            )
        return value

    return {name: resolved(name, value) if name in INPUT_FIELDS else value for name, value in values.items()}


# numeric fields and the least value each takes (None: unset, where the field allows it)
LEAST_VALUES = {
    "per_device_train_batch_size": 1, "per_device_eval_batch_size": 1, "gradient_accumulation_steps": 1,
    "eval_batch_size_for_encoding": 1, "max_length": 1, "eval_max_length": 1, "max_train_pairs": 1,
    "max_eval_pairs": 0, "save_total_limit": 1, "warmup_steps": 0, "learning_rate": 0, "weight_decay": 0,
    "num_train_epochs": 0, "logging_steps": 0, "save_steps": 0, "eval_steps": 0, "dataloader_num_workers": 0,
    "monolingual_probability": 0,
}  # fmt: skip


def check_bounds(arguments, on_command_line: set[str], config_path) -> None:
    """Every numeric field of ``LEAST_VALUES`` at or above its least value, before any data or model loads; else one
    line naming where the value came from (the command line or the file) and the field."""
    for group in arguments:
        for name, least in LEAST_VALUES.items():
            value = getattr(group, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < least:
                where = "the command line" if name in on_command_line else config_path or "the command line"
                raise ConfigFileError(f"{where}: {name}: {value}, at least {least}")


def check_reference(reference: str | None, name: str, where) -> None:
    """A model or tokenizer the run names exists here: a folder, an installed package's, or a Hub id (one this
    machine's cache holds, when offline); else one line naming the field."""
    if not reference:
        return
    from ..evaluation.loading import ModelLoadError, check_model_path
    from ..references import resolve_reference

    try:
        path = resolve_reference(reference)
        if name.startswith("tokenizer") and Path(path).is_dir():
            return
        check_model_path(path)
    except (ModelLoadError, FileNotFoundError, ModuleNotFoundError) as error:
        raise ConfigFileError(f"{where}: {name}: {error}") from None


def check_languages_have_data(data_args, where) -> None:
    """Every language of the run is one the offline corpus it trains on has (``bible``, ``hsk``); files and Hub
    datasets are checked when they are read, naming the file."""
    from ..data.corpora import corpus_languages

    if isinstance(data_args.train_data, list):
        return  # a list of sources: each gives the pairs it has, and a pair that none has is named when they load
    sources = data_args.train_data.values() if isinstance(data_args.train_data, dict) else [data_args.train_data]
    named = data_args.bible_translations if isinstance(data_args.bible_translations, dict) else {}
    for source in sources:
        have = corpus_languages(source)
        missing = [
            code
            for code in data_args.languages
            if have is not None and code not in have and not (source == "bible" and named.get(code))
        ]
        if missing and source == "bible":
            raise ConfigFileError(
                f"{where}: languages: the Bible has no language {missing[0]!r}; it has "
                f"{', '.join(have)} (or name a translation for it under bible_translations)"
            )
        if missing:
            raise ConfigFileError(f"{where}: languages: the HSK corpus has en and zh, not {missing[0]!r}")
