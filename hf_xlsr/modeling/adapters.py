# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""LoRA (Hu et al., 2022) on the encoders of every hf_xlsr model, and the frozen parameters that go with it.

A model built with ``lora`` (the fields of a ``peft.LoraConfig``: ``r``, ``lora_alpha``, ``target_modules``, ...)
adds one adapter, ``"default"``, to each module named in its ``_lora_modules`` with transformers' PEFT integration
(``PreTrainedModel.add_adapter``): only the adapters train. The adapter settings live where peft keeps them, in each
adapter's ``adapter_config.json``: ``save_pretrained`` writes the adapters under ``adapters/`` beside the model
(`save_adapters`), and ``from_pretrained`` rebuilds them from there. The model's own configuration holds none.
A momentum copy of an adapted encoder (`hf_xlsr.modeling.ema.momentum_copy`) shares the frozen base weights with it
and owns a copy of the adapter weights only, so the EMA updates, and the memory of the momentum encoder holds, just
the adapters.

Loading a checkpoint makes every tensor a fresh trainable parameter; `FrozenParametersMixin` puts back what
was frozen and what was shared, and keeps shared weights out of the saved file.
"""

from __future__ import annotations

import copy
import json
import os
import re
import warnings
from collections import defaultdict
from pathlib import Path

import torch
from torch import nn

ADAPTER_FOLDER = "adapters"  # where save_pretrained puts the adapters, in PEFT's format, beside the model


def lora_config(fields: dict):
    """``peft.LoraConfig(**fields)``, with an error that names ``lora`` when a field is wrong."""
    try:
        from peft import LoraConfig
    except ImportError as error:
        raise ImportError("lora needs peft: pip install 'hf_xlsr[peft]'") from error
    if not isinstance(fields, dict):
        raise ValueError(f"lora is not a valid peft.LoraConfig: a mapping of its fields was expected, got {fields!r}")
    if fields.get("modules_to_save"):
        raise ValueError("lora: modules_to_save is not supported; heads outside the encoder train anyway")
    try:
        return LoraConfig(**fields)
    except (TypeError, ValueError) as error:
        raise ValueError(f"lora is not a valid peft.LoraConfig: {error}") from error


def saved_lora(pretrained_model_name_or_path, **hub_kwargs) -> dict | None:
    """The LoRA settings of a saved model: its first adapter's ``adapter_config.json`` (`ADAPTER_FOLDER`, or
    ``adapters/<language>`` for a model with one encoder per language), else the ``lora`` field that configurations
    of earlier versions held, else None."""
    from peft import LoraConfig
    from transformers.utils import cached_file

    def read(name: str) -> dict | None:
        path = cached_file(
            pretrained_model_name_or_path, name, _raise_exceptions_for_missing_entries=False, **hub_kwargs
        )
        return json.loads(Path(path).read_text(encoding="utf-8")) if path else None

    config = read("config.json") or {}
    for folder in [ADAPTER_FOLDER] + [f"{ADAPTER_FOLDER}/{code}" for code in config.get("languages") or []][:1]:
        saved = read(f"{folder}/adapter_config.json")
        if saved is not None:
            fields = {field: value for field, value in saved.items() if field in LoraConfig.__dataclass_fields__}
            defaults = LoraConfig().to_dict()
            ignored = {"base_model_name_or_path", "revision", "peft_type", "task_type", "inference_mode"}
            return {k: v for k, v in fields.items() if k not in ignored and v != defaults.get(k)}
    return config.get("lora")


def add_lora(module: nn.Module, fields: dict) -> None:
    """Add the adapter ``"default"`` to ``module`` (a ``PreTrainedModel``) and freeze everything else in it."""
    module.add_adapter(lora_config(fields))
    for parameter in module.parameters():
        if parameter.requires_grad:  # the adapter, initialised by peft (B = 0): post_init must not draw it again
            parameter._is_hf_initialized = True


def merged_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` with every adapter merged into its base weights and the adapter layers removed: the
    architecture of the original model, loadable without peft. ``module`` itself is left as it is."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    merged = copy.deepcopy(module)
    for name, layer in list(merged.named_modules()):
        if isinstance(layer, BaseTunerLayer):
            layer.merge()
            parent, _, attribute = name.rpartition(".")
            setattr(merged.get_submodule(parent), attribute, layer.get_base_layer())
    for owner in merged.modules():
        if getattr(owner, "_hf_peft_config_loaded", False):
            owner._hf_peft_config_loaded = False
            del owner.peft_config
    return merged.requires_grad_(True)


class FrozenParametersMixin:
    """What a model must restore after ``from_pretrained``: which parameters are frozen, and which momentum
    parameters are the very tensors of a query encoder (frozen base weights under LoRA).

    A model calls `_record_parameter_state` at the end of ``__init__``. Parameters of modules whose name starts
    with ``momentum`` that share a tensor with another module are left out of saved files and tied again on load.
    A model built with ``lora`` keeps those settings in ``lora`` (None: no adapters); ``save_pretrained`` writes the
    adapters beside the model and ``from_pretrained`` adds them again; `save_adapters` / `load_adapters` move the
    adapters alone.
    """

    _lora_modules: tuple[str, ...] = ()  # attribute names of the modules that get an adapter under lora

    def _add_lora(self, lora: dict | None) -> None:
        """Adapters with the ``peft.LoraConfig`` fields ``lora`` on each module of ``_lora_modules`` (None: none)."""
        if lora is not None:
            lora_config(lora)  # a one-line error before any module changes
        self.lora = dict(lora) if lora is not None else None
        if lora is not None:
            for name in self._adapted_module_names():
                add_lora(getattr(self, name), lora)

    def _adapted_module_names(self) -> list[str]:
        return [name for name in self._lora_modules if getattr(self, name, None) is not None]

    def _record_parameter_state(self) -> None:
        names = defaultdict(list)
        for name, parameter in self.named_parameters(remove_duplicate=False):
            names[id(parameter)].append(name)
        self._frozen_parameters = {
            name for name, parameter in self.named_parameters(remove_duplicate=False) if not parameter.requires_grad
        }
        self._shared_momentum_parameters = {}
        for group in names.values():
            owners = [name for name in group if not name.startswith("momentum")]
            for name in group:
                if owners and name.startswith("momentum"):
                    self._shared_momentum_parameters[name] = owners[0]
        shared = set(self._shared_momentum_parameters)
        self._keys_to_ignore_on_save = set(self._keys_to_ignore_on_save or ()) | shared
        self._keys_to_ignore_on_load_missing = set(self._keys_to_ignore_on_load_missing or ()) | {
            f"^{re.escape(name)}$" for name in shared
        }

    def _restore_parameter_state(self) -> None:
        for name, owner in self._shared_momentum_parameters.items():
            module, _, attribute = name.rpartition(".")
            setattr(self.get_submodule(module), attribute, self.get_parameter(owner))
        for name, parameter in self.named_parameters(remove_duplicate=False):
            parameter.requires_grad_(name not in self._frozen_parameters)

    def save_pretrained(self, save_directory, *args, **kwargs):
        """``PreTrainedModel.save_pretrained``, and the adapters, with their settings, in PEFT's format under
        ``adapters/`` (`save_adapters`)."""
        super().save_pretrained(save_directory, *args, **kwargs)
        if self.lora is not None and kwargs.get("is_main_process", True):
            self.save_adapters(Path(save_directory) / ADAPTER_FOLDER)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, output_loading_info: bool = False, **kwargs):
        """``PreTrainedModel.from_pretrained``; a model saved with adapters gets them again, with the settings in
        their ``adapter_config.json`` (``lora=`` overrides them)."""
        if "lora" not in kwargs:
            hub = {
                name: kwargs[name] for name in ("revision", "cache_dir", "token", "local_files_only") if name in kwargs
            }
            kwargs["lora"] = saved_lora(pretrained_model_name_or_path, **hub)
        model, info = super().from_pretrained(pretrained_model_name_or_path, *args, output_loading_info=True, **kwargs)
        # LoRA layers rename the weights they wrap (query.weight -> query.base_layer.weight): a checkpoint saved with
        # adapters and a model built without them (or the reverse) would leave those weights at random values.
        if any("lora_" in key or ".base_layer." in key for key in info["missing_keys"]):
            raise ValueError(
                f"{pretrained_model_name_or_path} was saved without LoRA adapters, but lora is set: add "
                "adapters to pretrained encoders instead (from_encoders / from_encoder / from_tokenizer with lora=...)"
            )
        if any("lora_" in key for key in info["unexpected_keys"]):
            raise ValueError(
                f"{pretrained_model_name_or_path} holds LoRA adapters; load it with its own settings "
                f"({model.lora!r} was asked for), or merge them by exporting it"
            )
        model._restore_parameter_state()
        return (model, info) if output_loading_info else model

    def adapter_folders(self, directory: str | os.PathLike) -> dict[str, Path]:
        """Where each adapted module's adapter lives under ``directory``: ``directory`` itself for a model with one
        encoder, ``directory/<language>`` for a model with one encoder per language."""
        names = self._adapted_module_names()
        if len(names) == 1:
            return {names[0]: Path(directory)}
        return {name: Path(directory) / language for name, language in zip(names, self.config.languages, strict=False)}

    def save_adapters(self, directory: str | os.PathLike) -> dict[str, Path]:
        """Save each adapted module's adapter in PEFT's format (``adapter_config.json`` and
        ``adapter_model.safetensors``) in its folder (`adapter_folders`) and return ``{module name: folder}``.

        Each folder loads with ``AutoModel.from_pretrained(folder)`` (base weights from the adapter's
        ``base_model_name_or_path``), ``PeftModel.from_pretrained(base, folder)`` or `load_adapters`.
        """
        if self.lora is None:
            raise ValueError("this model has no adapters to save: it was built without lora")
        folders = self.adapter_folders(directory)
        for name, folder in folders.items():
            getattr(self, name).save_pretrained(folder)
        return folders

    @torch.no_grad()
    def load_adapters(self, directory: str | os.PathLike) -> None:
        """Load adapters saved by `save_adapters` (or by hf_xlsr 0.2.0, in folders named after the modules, with a
        warning); the momentum copies restart as copies of them."""
        from peft.utils import load_peft_weights, set_peft_model_state_dict

        if self.lora is None:
            raise ValueError("this model has no adapters to load into: it was built without lora")
        for name, folder in self.adapter_folders(directory).items():
            legacy = Path(directory) / name
            if not (folder / "adapter_config.json").is_file() and (legacy / "adapter_config.json").is_file():
                warnings.warn(
                    f"{legacy}: hf_xlsr 0.2.0's adapter folder; save the adapters again to write {folder}",
                    FutureWarning,
                    stacklevel=2,
                )
                folder = legacy
            if not (folder / "adapter_config.json").is_file():
                raise FileNotFoundError(f"no adapter for {folder.name!r}: {folder}/adapter_config.json does not exist")
            result = set_peft_model_state_dict(getattr(self, name), load_peft_weights(str(folder)))
            if result.unexpected_keys:
                raise ValueError(f"the adapter in {folder} does not fit this model: {result.unexpected_keys[:3]}")
        if getattr(self, "momentum_coefficient", None) is not None:
            self.synchronize_momentum_encoder()


__all__ = ["ADAPTER_FOLDER", "FrozenParametersMixin", "add_lora", "lora_config", "merged_copy", "saved_lora"]
