# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The run's argument dataclasses for ``HfArgumentParser``: the model (`ModelArguments`) and the data
(`DataArguments`), beside `XlsrTrainingArguments`; ``model_config`` holds the model configuration's fields
(architecture and method). `hf_xlsr.trainers.config_file` reads a run into them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..evaluation.retrieval import HELDOUT_SEED
from .checks import ConfigFileError
from .collators import CmlmCollator
from .trainer import XlsrTrainingArguments


@dataclass
class ModelArguments:
    model_type: str = field(
        default="xlsr_dual_momentum",
        metadata={"help": "which model type to train (hf_xlsr.MODEL_TYPES; the paper values below name each)"},
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "an hf_xlsr checkpoint (path or Hub id) to continue training"}
    )
    encoder: str | None = field(
        default=None,
        metadata={
            "help": "pretrained encoder (path or Hub id) every language starts from: the one encoder of a "
            "shared model, or each language's copy in a model with one encoder per language"
        },
    )
    encoders: dict | str | None = field(
        default=None,
        metadata={
            "help": "one pretrained encoder per language, {en: ..., fr: ...} (a mapping in YAML, a JSON object "
            "on the command line), for a model with one encoder per language"
        },
    )
    tokenizer: str | None = field(
        default=None,
        metadata={
            "help": "tokenizer of every language (default: the encoder's); lightweight also takes a "
            "SentencePiece .model file"
        },
    )
    tokenizers: dict | str | None = field(
        default=None, metadata={"help": "one tokenizer per language, {en: ..., fr: ...} (default: each encoder's)"}
    )
    model_config: dict | str | None = field(
        default=None,
        metadata={"help": "fields of the model configuration, as a mapping (YAML) or a JSON string"},
    )
    lora: dict | str | None = field(
        default=None,
        metadata={
            "help": "LoRA adapters on the encoders, only they train: peft.LoraConfig fields, {r: 8, lora_alpha: 16} "
            "(a mapping in YAML, a JSON object on the command line); saved in peft's format under adapters/"
        },
    )

    def references(self) -> dict[str, str]:
        """Every model and tokenizer the run names, by field (``encoders.fr`` for a language's)."""
        named = {"model_name_or_path": self.model_name_or_path, "encoder": self.encoder, "tokenizer": self.tokenizer}
        for name in ("encoders", "tokenizers"):
            named.update({f"{name}.{language}": value for language, value in (getattr(self, name) or {}).items()})
        return {name: value for name, value in named.items() if value}

    def encoder_of(self, language: str) -> str | None:
        """The pretrained encoder ``language`` starts from: its entry in ``encoders``, else ``encoder``."""
        return (self.encoders or {}).get(language) or self.encoder

    def tokenizer_of(self, language: str) -> str | None:
        """The tokenizer of ``language``: its entry in ``tokenizers``, else ``tokenizer``, else its encoder's."""
        return (self.tokenizers or {}).get(language) or self.tokenizer or self.encoder_of(language)


@dataclass
class DataArguments:
    # a mapping in a YAML file, or a JSON object on the command line, names a source per language pair
    train_data: str = field(
        default="bible",
        metadata={
            "help": "'bible', 'hsk', a multi-way .tsv/.jsonl file (a column per language), a folder of software "
            "catalogues, a Hub dataset id, a mapping from language pair ('en-fr') to its own source "
            '(JSON), or a list of sources joined pair by pair (JSON: ["bible", "strings.jsonl"])'
        },
    )
    languages: list[str] = field(
        default_factory=lambda: ["en", "fr"],
        metadata={"help": "language codes, two or more; the first is the pivot of English-centric pairs"},
    )
    language_pairs: list[str] | None = field(
        default=None,
        metadata={"help": "the pairs to train, 'en-fr' or [en, fr] (default: the first language with each other)"},
    )
    bible_translations: dict | str | None = field(
        default=None, metadata={"help": "language -> Bible translation code (see hf_xlsr.data.BIBLE_TRANSLATIONS)"}
    )
    train_split: str = field(default="train", metadata={"help": "split of the training data"})
    eval_data: str | None = field(
        default=None, metadata={"help": "evaluation data, same forms as train_data (default: train_data)"}
    )
    eval_split: str = field(default="heldout", metadata={"help": "split of the evaluation data"})
    max_train_pairs: int | None = field(
        default=None, metadata={"help": "use at most this many training pairs of each language pair"}
    )
    max_eval_pairs: int | None = field(
        default=1000, metadata={"help": "evaluate on this many unique sentences of each language (0: no evaluation)"}
    )
    eval_seed: int = field(
        default=HELDOUT_SEED,
        metadata={"help": "seed that draws the held-out sample (the same sample whatever the training seed)"},
    )
    max_length: int = field(default=128, metadata={"help": "truncation length of each sentence, in tokens"})
    # the data collator's settings: None leaves the collator's default, its paper's value
    mlm_probability: float | None = field(
        default=None,
        metadata={
            "help": "share of the tokens masked for the LM task (default: the paper's: xlsr_lightweight 0.15, "
            "xlsr_cmlm 0.3125, xlsr_hictl 0.15)"
        },
    )
    mask_replace_prob: float | None = field(
        default=None, metadata={"help": "xlsr_cmlm: share of the masked tokens that become [MASK] (default: 0.8)"}
    )
    random_replace_prob: float | None = field(
        default=None,
        metadata={"help": "xlsr_cmlm: share of the masked tokens replaced by a random token (default: 0.1)"},
    )
    swap_probability: float | None = field(
        default=None, metadata={"help": "xlsr_cmlm: how often two adjacent sentences swap order (default: 0.5)"}
    )
    monolingual_probability: float | None = field(
        default=None,
        metadata={"help": "xlsr_hictl: share of pairs turned monolingual, a sentence and its reordering (default: 0)"},
    )
    perturbation: str | None = field(
        default=None,
        metadata={
            "help": "xlsr_hictl: how a monolingual sentence is reordered: shuffle, local_shuffle (within windows) "
            "or reverse (default: local_shuffle)"
        },
    )
    perturbation_window: int | None = field(
        default=None, metadata={"help": "xlsr_hictl: words per window of local_shuffle (default: 3)"}
    )
    export_dir: str | None = field(
        default=None, metadata={"help": "export the trained encoders to sentence-transformers folders here"}
    )

    def __post_init__(self):
        check_collator_settings(self)

    def collator_settings(self, names) -> dict:
        """The collator settings among ``names`` that the run sets (the others keep the collator's default)."""
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The language pairs to train (``resolve_language_pairs``)."""
        from ..data.multilingual import resolve_language_pairs

        return resolve_language_pairs(self.languages, self.language_pairs)


PERTURBATIONS = ("shuffle", "local_shuffle", "reverse")


def check_collator_settings(data_args: DataArguments) -> None:
    """One `ConfigFileError` line for a collator setting out of its range, before anything loads."""
    shares = {"mlm_probability": (0.0, 1.0, False), "mask_replace_prob": (0.0, 1.0, True),
              "random_replace_prob": (0.0, 1.0, True), "swap_probability": (0.0, 1.0, True),
              "monolingual_probability": (0.0, 1.0, True)}  # fmt: skip
    for name, (low, high, closed) in shares.items():
        value = getattr(data_args, name)
        if value is not None and not (low <= value <= high if closed else low < value < high):
            span = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
            raise ConfigFileError(f"{name} must lie in {span}, got {value}")
    replaced = {
        name: CmlmCollator.__dataclass_fields__[name].default for name in ("mask_replace_prob", "random_replace_prob")
    }
    replaced.update(data_args.collator_settings(replaced))
    if sum(replaced.values()) > 1.0:
        raise ConfigFileError(f"mask_replace_prob + random_replace_prob must not exceed 1, got {replaced}")
    if data_args.perturbation is not None and data_args.perturbation not in PERTURBATIONS:
        raise ConfigFileError(
            f"perturbation must be one of {', '.join(PERTURBATIONS)}, got {data_args.perturbation!r}"
        )
    if data_args.perturbation_window is not None and data_args.perturbation_window < 1:
        raise ConfigFileError(f"perturbation_window must be at least 1, got {data_args.perturbation_window}")


ARGUMENT_CLASSES = (ModelArguments, DataArguments, XlsrTrainingArguments)


def run_fields() -> set[str]:
    return {f.name for cls in ARGUMENT_CLASSES for f in dataclasses.fields(cls)}
