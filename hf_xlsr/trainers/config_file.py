# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Run arguments: dataclasses for ``HfArgumentParser``, read from a YAML/JSON file plus ``--key value`` overrides.

A config file is flat: model, data and ``TrainingArguments`` fields side by side, the model configuration's
fields (architecture and method) under ``model_config``. One rule sets each training hyperparameter: a
``TrainingArguments`` field given explicitly (command line over file) wins; otherwise the paper's value (its model
type's entry, `hf_xlsr.model_types`), else ``TrainingArguments``' default. So a config that names only the data
trains with the paper's recipe."""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import os
import re
import types
import typing
from pathlib import Path

import torch
import yaml
from huggingface_hub.errors import StrictDataclassError
from transformers import HfArgumentParser, PreTrainedConfig

from ..modeling.adapters import lora_config
from ..registry import MODEL_TYPES, get_model_type, paper_recipe
from ..utils import UnwritableError, check_writable
from .arguments import ARGUMENT_CLASSES, DataArguments, ModelArguments, run_fields
from .checks import (
    ConfigFileError,
    check_bounds,
    check_languages_have_data,
    check_reference,
    inputs_beside_the_file,
)
from .legacy import legacy_command_line, translate_legacy_references
from .trainer import XlsrTrainingArguments, settings_not_taken

logger = logging.getLogger(__name__)


class RunArgumentParser(HfArgumentParser):
    """``HfArgumentParser`` whose errors are exceptions (one line, named by `parse_run_arguments`), not a
    usage text and an exit."""

    def error(self, message: str):
        raise ConfigFileError(message)


def closest(name: str, known) -> str:
    """`` (did you mean --name?)`` for the known field closest to a misspelt one, or ""."""
    match = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean --{match[0]}?)" if match else ""


def read_config_file(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such config file")
    text = path.read_text(encoding="utf-8")
    try:
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as error:
        raise ConfigFileError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
    except yaml.YAMLError as error:  # the file and line of the problem, in one line
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigFileError(f"{where}: not valid YAML: {reason}") from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigFileError(f"{path}: expected a mapping of argument names to values, found {type(values).__name__}")
    values = translate_legacy_references(values, path)
    known = run_fields()
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigFileError(f"{path}: unknown argument {unknown[0]!r}{closest(unknown[0], known)}")
    return inputs_beside_the_file(values, path)


def _field_types(annotation) -> tuple:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def coerce_config_values(config_class: type[PreTrainedConfig], values: dict, where: str) -> dict:
    """Check ``values`` against the fields of ``config_class`` and convert YAML's ints/strings to floats.

    YAML reads ``1e-4`` as a string and ``1`` as an int; strict configs want floats where the field says so.
    """
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    training = {f.name for f in dataclasses.fields(XlsrTrainingArguments)}
    coerced = {}
    for name, value in values.items():
        if name not in fields and name in run_fields():
            kind = "a training argument" if name in training else "a run field"
            raise ConfigFileError(
                f"{where}: {name} is {kind}, not a field of {config_class.__name__}: set it beside model_config"
            )
        if name not in fields:
            match = difflib.get_close_matches(name, list(fields), n=1)
            raise ConfigFileError(
                f"{where}: {config_class.__name__} has no field {name!r}"
                + (f" (did you mean {match[0]}?)" if match else "")
            )
        allowed = _field_types(fields[name].type)
        if float in allowed and isinstance(value, (int, str)) and not isinstance(value, bool):
            try:
                value = float(value)
            except ValueError:
                raise ConfigFileError(f"{where}: field {name!r} expects a number, got {value!r}") from None
        elif int in allowed and isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise ConfigFileError(f"{where}: field {name!r} expects an integer, got {value!r}") from None
        coerced[name] = value
    return coerced


def _given_on_command_line(overrides: list[str]) -> set[str]:
    return {arg[2:].split("=", 1)[0].replace("-", "_") for arg in overrides if arg.startswith("--")}


def _without_model_config(overrides: list[str]) -> list[str]:
    """The command line less ``--model_config JSON`` (read separately, before the other arguments)."""
    kept, skip = [], False
    for arg in overrides:
        if skip:
            skip = False
        elif arg == "--model_config":
            skip = True
        elif not arg.startswith("--model_config="):
            kept.append(arg)
    return kept


def _model_config(config_class, values: dict, overrides: list[str], where) -> dict:
    """The run's ``model_config``: ``--model_config JSON`` on the command line, else the file's, checked."""
    raw = values.get("model_config")
    for i, arg in enumerate(overrides):
        if arg == "--model_config" and i + 1 < len(overrides):
            raw = overrides[i + 1]
        elif arg.startswith("--model_config="):
            raw = arg.split("=", 1)[1]
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ConfigFileError(f"{where}: model_config is not a JSON object: {error}") from None
    if raw is not None and not isinstance(raw, dict):
        raise ConfigFileError(f"{where}: model_config must be a mapping of configuration fields")
    return coerce_config_values(config_class, raw or {}, f"{where}: model_config")


def check_settings_taken(entry, data_args: DataArguments, training_args, on_command_line: set, config_path) -> None:
    """A collator, schedule or GradCache setting the run's model type does not take is one `ConfigFileError` line
    naming it and where it was given, before anything loads."""

    def source(name: str) -> str:
        return "the command line" if name in on_command_line or not config_path else config_path

    settings = {name for other in MODEL_TYPES.values() for name in other.collator_settings}
    for name in sorted(settings - set(entry.collator_settings)):
        if getattr(data_args, name) is not None:
            takes = ", ".join(entry.collator_settings) or "none of them"
            raise ConfigFileError(
                f"{source(name)}: {name} is no setting of {entry.name}'s data collator (it takes {takes})"
            )
    refused = settings_not_taken(entry.model_class, training_args, entry.name)
    if refused:
        raise ConfigFileError(f"{source(refused[0].split(':')[0])}: {refused[0]}")


def parse_run_arguments(
    config_path: str | os.PathLike | None, overrides: list[str] | None = None
) -> tuple[ModelArguments, DataArguments, XlsrTrainingArguments]:
    """Parse a run: the config file's values, then command-line ``--key value`` overrides, then paper defaults."""
    values = read_config_file(config_path) if config_path is not None else {}
    overrides = legacy_command_line(list(overrides or []), values)
    model_type, where = values.get("model_type", ModelArguments.model_type), config_path
    for i, arg in enumerate(overrides):
        if arg.startswith("--model_type"):
            model_type = arg.split("=", 1)[1] if "=" in arg else overrides[i + 1]
            where = "the command line"
    try:
        entry = get_model_type(model_type, where)
    except ValueError as error:
        raise ConfigFileError(str(error)) from None
    config_class = entry.config_class
    given = set(values) | _given_on_command_line(overrides)
    model_config = _model_config(config_class, values, overrides, config_path)
    values["model_config"] = model_config
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    paper = paper_recipe(entry.name, given, world_size)
    values.update(paper)
    if "use_cpu" not in given and world_size > 1 and not torch.cuda.is_available():
        # Several processes and no GPU: without use_cpu, Trainer would run them as independent single processes.
        values["use_cpu"] = True
    command_line = _without_model_config(overrides)
    known = run_fields()
    for name in _given_on_command_line(command_line):
        if name not in known:
            raise ConfigFileError(f"the command line: unknown argument --{name}{closest(name, known)}")
    parser = RunArgumentParser(ARGUMENT_CLASSES)
    parser.set_defaults(**values)
    try:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses(args=command_line)
    except ConfigFileError as error:  # argparse's message names a flag: say where its value came from
        flag = re.search(r"argument --([A-Za-z0-9_]+)", str(error))
        name = flag.group(1) if flag else str(error).split(" ", 1)[0]  # a range check's message opens with its field
        from_file = name in known and name not in _given_on_command_line(command_line)
        source = config_path if from_file and config_path else "the command line"
        reason = str(error).split(": ", 1)[-1] if flag else str(error)
        raise ConfigFileError(f"{source}: {name}: {reason}" if flag else f"{source}: {reason}") from None
    model_args.model_type, model_args.model_config = entry.name, model_config
    check_settings_taken(entry, data_args, training_args, _given_on_command_line(command_line), config_path)
    if isinstance(data_args.bible_translations, str):
        data_args.bible_translations = json.loads(data_args.bible_translations)
    for name in ("train_data", "eval_data"):
        value = getattr(data_args, name)
        if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
            setattr(data_args, name, json.loads(value))
    where = config_path or "the command line"
    if isinstance(data_args.eval_data, list):  # held-out rows are one set of meanings, read from one source
        raise ConfigFileError(
            f"{where}: eval_data: one source (bible, hsk, a multi-way file, a catalogue folder) or "
            "a mapping from language pair to source, not a list"
        )
    try:
        data_args.pairs  # noqa: B018 (checks languages and language_pairs)
    except ValueError as error:
        raise ConfigFileError(f"{where}: {error}") from None
    if not model_args.model_name_or_path:  # the model the run will build, checked before anything loads
        try:
            config_class(languages=list(data_args.languages), **model_config)
        except (StrictDataclassError, ValueError) as error:
            reason = str(error).strip().splitlines()[-1].strip().split(": ", 1)[-1]
            raise ConfigFileError(f"{where}: model_config: {reason}") from None
    training_args.paper_values = frozenset(paper)
    check_bounds((model_args, data_args, training_args), _given_on_command_line(command_line), config_path)
    check_languages_have_data(data_args, where)
    for name in ("encoders", "tokenizers"):
        value = getattr(model_args, name)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = None
            if not isinstance(value, dict):
                raise ConfigFileError(
                    f'{where}: {name}: expected a mapping from language code to a model, e.g. {{"en": ..., "fr": ...}}'
                )
            setattr(model_args, name, value)
        extra = sorted(set(value or {}) - set(data_args.languages))
        if extra:
            raise ConfigFileError(
                f"{where}: {name}: {extra[0]!r} is not one of the run's languages ({', '.join(data_args.languages)})"
            )
    lora_from = (
        "the command line" if "lora" in _given_on_command_line(command_line) or not config_path else config_path
    )
    if isinstance(model_args.lora, str):
        try:
            model_args.lora = json.loads(model_args.lora)
        except json.JSONDecodeError:
            raise ConfigFileError(
                f'{lora_from}: lora: expected a mapping of peft.LoraConfig fields, e.g. {{"r": 8, "lora_alpha": 16}}'
            ) from None
    if model_args.lora is not None:
        try:
            lora_config(model_args.lora)
        except (ImportError, ValueError) as error:
            raise ConfigFileError(f"{lora_from}: {error}") from None
    for name, reference in model_args.references().items():
        check_reference(reference, name, where)
    for name, value in (("output_dir", training_args.output_dir), ("export_dir", data_args.export_dir)):
        if value and Path(value).is_file():  # before any data or model is loaded
            raise ConfigFileError(f"{config_path or 'the command line'}: {name} {value} is a file, not a folder")
        if value:
            try:
                check_writable(value, name)
            except UnwritableError as error:
                raise ConfigFileError(f"{where}: {error}") from None
    check_outputs(model_args, data_args, training_args, where)
    listed = {name: value for name, value in paper.items() if name != "warmup_steps"}  # the trainer logs the warm-up
    if listed:  # once the run is known to be valid: an error is never preceded by it
        logger.info(
            "values the run does not set, from the paper's recipe: %s",
            ", ".join(f"{name}={value}" for name, value in sorted(listed.items())),
        )
    return model_args, data_args, training_args


def checkpoint_to_resume(resume_from_checkpoint) -> str | bool | None:
    """What ``resume_from_checkpoint`` asks ``Trainer.train`` for: True (true / latest: the newest whole checkpoint),
    a checkpoint's path, or None (no resume)."""
    if isinstance(resume_from_checkpoint, str):
        if resume_from_checkpoint.lower() in ("true", "latest"):
            return True
        return None if resume_from_checkpoint.lower() in ("", "false", "none", "no") else resume_from_checkpoint
    return resume_from_checkpoint or None


def check_outputs(model_args, data_args, training_args, where: str) -> None:
    """Before any data or model loads: one run per ``output_dir`` (`check_new_run`), and an ``export_dir`` that the
    export may write (`check_export_target`: not the run's folder nor one that holds it, nothing but an earlier
    export, replaced only when the run resumes or overwrites)."""
    from ..export import ExportTargetError, check_export_target
    from .run_folder import check_new_run

    resume = checkpoint_to_resume(training_args.resume_from_checkpoint) is not None
    overwrite = training_args.overwrite_output_dir
    try:
        check_new_run(training_args.output_dir, resume, overwrite)
        if data_args.export_dir:
            check_export_target(
                data_args.export_dir,
                [training_args.output_dir, model_args.model_name_or_path],
                resume or overwrite,
                "export_dir",
                "--overwrite_output_dir true",
            )
    except (ValueError, ExportTargetError) as error:
        raise ConfigFileError(f"{where}: {error}") from None
