# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The registry of model types: one entry per type ties its name (``config.model_type``, what ``config.json``,
``hf-xlsr train --model_type`` and `XlsrTrainingArguments.from_paper` say), its configuration and model classes
(registered with the Auto classes), how a run builds and collates it, its paper's training recipe and its model
card. ``hf_xlsr.model_types`` declares the package's types; adding a method is one `register_model_type`
call. A name an earlier version used still resolves, with a warning naming today's.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from transformers import AutoConfig, AutoModel


@dataclass(frozen=True)
class ModelType:
    """One model type. ``build``, ``collator`` and ``train_data`` are what ``hf-xlsr train`` needs (a type without
    ``build`` only loads), each a callable or a ``"module:function"`` reference imported on first use (`part`);
    ``paper_recipe`` holds the paper's ``TrainingArguments`` values, ``train_batch_size``
    being its total batch over all devices; ``card`` names the model card template (``hf_xlsr/model_cards``) and is
    the card's tag; ``exported_head`` is the module the sentence-transformers export puts after pooling."""

    name: str
    config_class: type
    model_class: type
    auto_class: type = AutoModel
    # a new model: (model arguments, data arguments, training arguments, training pairs) -> (model, tokenizers)
    build: Callable | str | None = None
    # (model, tokenizers, max_length, **the run's collator_settings) -> the run's data collator
    collator: Callable | str | None = None
    collator_settings: tuple[str, ...] = ()  # the run's fields (DataArguments) its collator takes
    train_data: Callable | str | None = None  # (source, split, data arguments) -> each pair's rows (load_pairs)
    paper_recipe: Mapping[str, float | int | str] = field(default_factory=dict)
    card: str | None = None
    exported_head: str | None = None
    old_names: tuple[str, ...] = ()

    def part(self, name: str) -> Callable | None:
        """``build``, ``collator`` or ``train_data`` as a callable (a ``"module:function"`` reference imported)."""
        value = getattr(self, name)
        if isinstance(value, str):
            module, _, function = value.partition(":")
            value = getattr(importlib.import_module(module), function)
        return value


_TYPES: dict[str, ModelType] = {}
_OLD_NAMES: dict[str, str] = {}
MODEL_TYPES: Mapping[str, ModelType] = MappingProxyType(_TYPES)  # read-only view, by name


def register_model_type(entry: ModelType) -> ModelType:
    """Add ``entry`` to the registry and its classes to ``AutoConfig`` and ``entry.auto_class``."""
    if entry.config_class.model_type != entry.name:
        raise ValueError(
            f"model type {entry.name!r}: its configuration's model_type is {entry.config_class.model_type!r}"
        )
    for name in (entry.name, *entry.old_names):
        owner = _OLD_NAMES.get(name, name if name in _TYPES else None)
        if owner not in (None, entry.name):
            raise ValueError(f"model type {entry.name!r}: the name {name!r} is {owner!r}'s")
    _TYPES[entry.name] = entry
    _OLD_NAMES.update(dict.fromkeys(entry.old_names, entry.name))
    AutoConfig.register(entry.name, entry.config_class, exist_ok=True)
    entry.auto_class.register(entry.config_class, entry.model_class, exist_ok=True)
    return entry


def trained_types() -> list[str]:
    """The names of the types ``hf-xlsr train`` builds."""
    return [name for name, entry in _TYPES.items() if entry.build is not None]


def get_model_type(name: str, where: str | None = None) -> ModelType:
    """The entry of ``name``; an earlier version's name gives today's with a ``FutureWarning``; an unknown name is
    one ``ValueError`` line naming ``where`` and the known names."""
    if name in _OLD_NAMES:
        warnings.warn(
            f"{where or 'hf_xlsr'}: model_type {name!r} is hf_xlsr 0.2.0's name; write {_OLD_NAMES[name]!r}",
            FutureWarning,
            stacklevel=2,
        )
        name = _OLD_NAMES[name]
    if name not in _TYPES:
        raise ValueError(f"{where or 'hf_xlsr'}: unknown model_type {name!r} (one of {', '.join(trained_types())})")
    return _TYPES[name]


def current_name(name: str) -> str:
    """Today's name of a model type, quietly (for reading what an earlier version wrote)."""
    return _OLD_NAMES.get(name, name)


def paper_recipe(model_type: str, given=frozenset(), world_size: int = 1) -> dict[str, float | int | str]:
    """The paper's ``TrainingArguments`` values for a model type, less the fields in ``given``; the paper's total
    batch becomes ``per_device_train_batch_size``, its share of ``world_size`` processes. ``{}`` for a type
    without a recipe."""
    recipe = dict(get_model_type(model_type).paper_recipe)
    total = recipe.pop("train_batch_size", None)
    values = {name: value for name, value in recipe.items() if name not in given}
    if total is not None and "per_device_train_batch_size" not in given:
        values["per_device_train_batch_size"] = max(1, total // world_size)
    return values


__all__ = ["MODEL_TYPES", "ModelType", "current_name", "get_model_type", "paper_recipe", "register_model_type",
           "trained_types"]  # fmt: skip
