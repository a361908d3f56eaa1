# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Configuration of `DualMomentumModel` (Wang, Zhao and Liu, EMNLP 2021, "MoCo-BERT")."""

import copy
import warnings
from typing import Literal

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

# Encoder-config attribute names that hold dropout probabilities, across BERT, RoBERTa/XLM-R, DistilBERT, ...
DROPOUT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout")


# Training settings a configuration saved by hf_xlsr 0.2.0 holds: they belong to the training arguments now
# (``hf_xlsr.model_types``); such a configuration loads without them, with a warning that names them.
FORMER_TRAINING_FIELDS = ("learning_rate", "train_batch_size", "warmup_steps", "warmup_epochs", "max_steps",
                          "num_train_epochs", "lr_scheduler_type", "max_grad_norm", "weight_decay",
                          "max_length")  # fmt: skip


# Settings a configuration saved by an earlier version holds, by where each lives now: the data collator's (its own
# default is its paper's value; ``hf-xlsr train --mlm_probability ...`` sets them for a run) and the training
# arguments' (`XlsrTrainingArguments`; the name each has there)
FORMER_COLLATOR_FIELDS = ("mlm_probability", "mask_replace_prob", "random_replace_prob", "swap_probability",
                          "perturbation", "perturbation_window")  # fmt: skip
FORMER_SCHEDULE_FIELDS = {"second_stage_step": "second_stage_step", "head_warmup_steps": "encoder_frozen_steps",
                          "encoder_frozen_steps": "encoder_frozen_steps",
                          "mini_batch_size": "mini_batch_size"}  # fmt: skip


def take_saved_fields(config: PreTrainedConfig, kwargs: dict) -> None:
    """Read what older saved configurations name otherwise: set ``config.languages``, the language codes of a
    model (the first is the pivot of English-centric pairs), from the field, else from the ``language_x`` /
    ``language_y`` fields of configurations saved before it (popped from ``kwargs``), else the placeholders
    ``["x", "y"]``; and drop the fields that moved out of the configuration (`drop_moved_fields`)."""
    drop_moved_fields(config, kwargs, stacklevel=4)
    legacy = [kwargs.pop("language_x", None), kwargs.pop("language_y", None)]
    if config.languages is None:
        config.languages = [legacy[0] or "x", legacy[1] or "y"]
    config.languages = [str(code) for code in config.languages]


def drop_moved_fields(config: PreTrainedConfig, kwargs: dict, stacklevel: int = 3) -> None:
    """Drop `FORMER_TRAINING_FIELDS`, `FORMER_COLLATOR_FIELDS`, `FORMER_SCHEDULE_FIELDS` and ``lora`` (adapter
    settings, in peft's files now) from ``kwargs`` (what ``__post_init__`` got beyond the configuration's fields),
    with a warning: one for the training settings, one per collator or schedule setting, one for ``lora``."""
    dropped = [name for name in FORMER_TRAINING_FIELDS if kwargs.pop(name, None) is not None]
    if dropped:
        warnings.warn(
            f"{type(config).__name__}: {', '.join(dropped)} ignored: training settings belong to the "
            "training arguments (XlsrTrainingArguments.from_paper gives the paper's)",
            FutureWarning,
            stacklevel=stacklevel,
        )
    for name in FORMER_COLLATOR_FIELDS:
        if name in kwargs:
            warnings.warn(
                f"{type(config).__name__}: {name} {kwargs.pop(name)!r} ignored: it is a setting of the data "
                f"collator now (hf-xlsr train --{name})",
                FutureWarning,
                stacklevel=stacklevel,
            )
    for name, argument in FORMER_SCHEDULE_FIELDS.items():
        if name in kwargs:
            warnings.warn(
                f"{type(config).__name__}: {name} {kwargs.pop(name)!r} ignored: it is a training argument now "
                f"(XlsrTrainingArguments.{argument}, hf-xlsr train --{argument})",
                FutureWarning,
                stacklevel=stacklevel,
            )
    if kwargs.pop("lora", None) is not None:  # saved as null by every model of earlier versions without adapters
        warnings.warn(
            f"{type(config).__name__}: lora is no configuration field now: adapter settings live in each adapter's "
            "adapter_config.json (adapters/ beside the model, where save_pretrained writes them); from_pretrained "
            "still builds this model's adapters from the field",
            FutureWarning,
            stacklevel=stacklevel,
        )


def validate_languages(config: PreTrainedConfig) -> None:
    if not config.languages:
        raise ValueError("languages must name at least one language")
    repeated = sorted({code for code in config.languages if config.languages.count(code) > 1})
    if repeated:
        raise ValueError(f"languages names {repeated[0]!r} twice: {config.languages}")


def validate_queue(config: PreTrainedConfig) -> None:
    """The queue fields shared by the models with hf_xlsr's queue extension."""
    if config.queue_size < 0:
        raise ValueError(f"queue_size must not be negative, got {config.queue_size}")
    if not 0.0 <= config.queue_momentum <= 1.0:
        raise ValueError(f"queue_momentum must lie in [0, 1], got {config.queue_momentum}")
    if not config.queue_temperature > 0:
        raise ValueError(f"queue_temperature must be positive, got {config.queue_temperature}")


@strict
class DualMomentumConfig(PreTrainedConfig):
    r"""Dual momentum contrast: one query encoder per language, each with an EMA momentum encoder and a memory queue.

    Defaults are the paper's (Section 3.1 and Table 9). ``encoder_x`` / ``encoder_y`` are configurations of any
    ``AutoModel`` encoder, for the two ``languages``; with ``shared_encoder=True`` one encoder (and one momentum
    encoder) serves any number of languages.

    Example:

    ```python
    >>> from hf_xlsr import DualMomentumConfig, DualMomentumModel
    >>> config = DualMomentumConfig(encoder_x={"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2,
    ...                                        "num_attention_heads": 2, "intermediate_size": 256}, queue_size=1024)
    >>> model = DualMomentumModel(config)
    ```

    Attributes:
        encoder_x (`PreTrainedConfig` or `dict`, *optional*, defaults to `None`):
            configuration of the x-language query encoder (any AutoModel).
        encoder_y (`PreTrainedConfig` or `dict`, *optional*, defaults to `None`):
            y-language encoder; a copy of encoder_x's when left out.
        shared_encoder (`bool`, *optional*, defaults to `False`):
            one query encoder and one momentum encoder for every language.
        languages (`list[str]`, *optional*, defaults to `None`):
            language codes (exports, model cards); the first is the pivot. One encoder per language takes exactly two:
            encoder_x is the first's, encoder_y the second's.
        pooling (`Literal["mean", "max", "cls"]`, *optional*, defaults to `"mean"`):
            sentence vector: pooling of the last layer, then L2 (Table 6).
        queue_size (`int`, *optional*, defaults to `409600`):
            K, keys per memory queue ("409k", Table 9).
        temperature (`float`, *optional*, defaults to `0.04`):
            tau in Eq. 2 (Table 4).
        momentum (`float`, *optional*, defaults to `0.999`):
            m in Eq. 1.
        queue_dtype (`Literal["auto", "float32", "float16", "bfloat16"]`, *optional*, defaults to `"auto"`):
            storage of queued keys; "auto": bfloat16 on a GPU (half the memory, tensor-core scoring), float32 on the
            CPU.
        nli_head (`bool`, *optional*, defaults to `False`):
            add the NLI classifier and train it from premise/hypothesis/label columns.
        nli_hidden_size (`int`, *optional*, defaults to `256`):
            hidden units of the two-layer MLP.
        nli_num_labels (`int`, *optional*, defaults to `3`):
            entailment / neutral / contradiction.
        nli_dropout (`float`, *optional*, defaults to `0.1`):
            dropout on the MLP's hidden units.
        nli_weight (`float`, *optional*, defaults to `0.1`):
            alpha in Eq. 5.
        nli_language (`str`, *optional*, defaults to `None`):
            the language whose encoder embeds premise and hypothesis (default: the first).
        dropout (`float`, *optional*, defaults to `0.1`):
            written into the encoders' dropout fields; None keeps the encoders' own.
    """

    model_type = "xlsr_dual_momentum"
    sub_configs_defaults = {
        "encoder_x": SubConfigSpec(AutoConfig, model_type="bert"),
        "encoder_y": SubConfigSpec(AutoConfig, model_type="bert", optional=True),
    }

    # Encoders (Section 2: "language-specific BERT models")
    encoder_x: PreTrainedConfig | dict | None = None
    encoder_y: PreTrainedConfig | dict | None = None
    shared_encoder: bool = False
    languages: list[str] | None = None
    pooling: Literal["mean", "max", "cls"] = "mean"

    # Dual momentum contrast (Section 2, Table 9)
    queue_size: int = 409600
    temperature: float = 0.04
    momentum: float = 0.999
    queue_dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"

    # Multi-task NLI head (Appendix B)
    nli_head: bool = False
    nli_hidden_size: int = 256
    nli_num_labels: int = 3
    nli_dropout: float = 0.1
    nli_weight: float = 0.1
    nli_language: str | None = None

    # Encoders' dropout (Table 9)
    dropout: float | None = 0.1

    def __post_init__(self, **kwargs):
        take_saved_fields(self, kwargs)
        if self.nli_language in ("x", "y") and self.nli_language not in self.languages:  # hf_xlsr 0.2.0's sides
            code = self.languages["xy".index(self.nli_language) % len(self.languages)]
            warnings.warn(
                f"nli_language: {self.nli_language!r} names a side of hf_xlsr 0.2.0; it is the language "
                f"{code!r}: write nli_language: {code}",
                FutureWarning,
                stacklevel=2,
            )
            self.nli_language = code
        super().__post_init__(**kwargs)
        if self.shared_encoder:
            self.encoder_y = None
        elif self.encoder_y is None:
            self.encoder_y = copy.deepcopy(self.encoder_x)
        if self.dropout is not None:
            for encoder in self.encoders():
                for name in DROPOUT_FIELDS:
                    if hasattr(encoder, name):
                        setattr(encoder, name, self.dropout)

    def encoders(self) -> list[PreTrainedConfig]:
        """The query encoders' configurations: ``[encoder_x]`` when shared, else ``[encoder_x, encoder_y]``."""
        return [self.encoder_x] if self.shared_encoder else [self.encoder_x, self.encoder_y]

    def validate_dual_momentum(self):
        validate_languages(self)
        if not self.shared_encoder and len(self.languages) != 2:
            raise ValueError(
                f"one query encoder per language takes exactly two languages, got {len(self.languages)} "
                f"({', '.join(self.languages)}): set shared_encoder=True to train one encoder for all of them"
            )
        if self.nli_language is not None and self.nli_language not in self.languages:
            raise ValueError(f"nli_language {self.nli_language!r} is not one of the languages {self.languages}")
        if self.queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, got {self.queue_size}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"momentum must lie in [0, 1], got {self.momentum}")
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        hidden = {getattr(encoder, "hidden_size", None) for encoder in self.encoders()}
        if len(hidden) > 1:
            raise ValueError(f"encoder_x and encoder_y must have the same hidden_size to share queues, got {hidden}")


__all__ = ["DualMomentumConfig", "drop_moved_fields", "take_saved_fields", "validate_languages", "validate_queue"]
