# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""How a run builds each model type: its model and tokenizers from the run's arguments, its data collator, and
(CMLM) its training rows. `hf_xlsr.model_types` ties them to their types."""

from __future__ import annotations

from pathlib import Path

import datasets
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from ..data.bitext import load_bitext
from ..data.corpora import load_bible_adjacent
from ..data.multilingual import pair_name, pair_of, shared_meanings
from ..data.tokenizer_training import tokenizer_from_sentencepiece, train_unigram_tokenizer
from ..modeling import (
    CmlmConfig,
    CmlmModel,
    DualMomentumConfig,
    DualMomentumModel,
    HictlConfig,
    HictlForPreTraining,
    LightweightDualTransformer,
    LightweightDualTransformerConfig,
)
from .arguments import DataArguments, ModelArguments
from .checks import ConfigFileError
from .collators import BitextCollator, CmlmCollator, HictlCollator, PairMaskingCollator


def run_tokenizers(model_args: ModelArguments, languages: list[str], shared: bool) -> dict:
    """``{language: tokenizer}``: each language's (``tokenizer_of``), loaded once per distinct reference; with a
    shared encoder, the first language's for all."""
    names = {language: model_args.tokenizer_of(languages[0] if shared else language) for language in languages}
    if None in names.values():
        raise ConfigFileError("set encoder (or tokenizer) to the model whose tokenizer the run uses")
    loaded = {name: AutoTokenizer.from_pretrained(name) for name in dict.fromkeys(names.values())}
    return {language: loaded[name] for language, name in names.items()}


def model_fields(model_args: ModelArguments, data_args: DataArguments) -> dict:
    """The model configuration's fields of a run: its ``model_config``, and the run's languages (the one place they
    enter a model configuration)."""
    return {"languages": list(data_args.languages), **model_args.model_config}


def build_dual_momentum(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    fields = model_fields(model_args, data_args)
    if model_args.encoders:
        model = DualMomentumModel.from_encoders(
            {language: model_args.encoder_of(language) for language in fields["languages"]},
            lora=model_args.lora,
            **fields,
        )
    elif model_args.encoder:
        model = DualMomentumModel.from_encoders(model_args.encoder, lora=model_args.lora, **fields)
    elif "encoder_x" in fields:
        model = DualMomentumModel(DualMomentumConfig(**fields), lora=model_args.lora)
    else:
        raise ConfigFileError(
            "xlsr_dual_momentum needs encoder (a pretrained encoder), encoders (one per language), "
            "model_name_or_path, or model_config.encoder_x (an encoder configuration)"
        )
    return model, run_tokenizers(model_args, model.config.languages, model.config.shared_encoder)


def bitext_collator(model: PreTrainedModel, tokenizers: dict, max_length: int, **settings) -> BitextCollator:
    nli_language = getattr(model.config, "nli_language", None)
    return BitextCollator(tokenizers, max_length=max_length, nli_language=nli_language, **settings)


def build_lightweight(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """Over a given tokenizer (a tokenizer folder, Hub id or SentencePiece ``.model`` file) or a Unigram vocabulary
    trained on the training pairs (``model_config.vocab_size`` pieces)."""
    fields = model_fields(model_args, data_args)
    vocab_size = fields.pop("vocab_size", LightweightDualTransformerConfig.vocab_size)
    tokenizer = shared_tokenizer(model_args, data_args, training_args, train_dataset, vocab_size)
    return LightweightDualTransformer.from_tokenizer(tokenizer, lora=model_args.lora, **fields), dict.fromkeys(
        fields["languages"], tokenizer
    )


def shared_tokenizer(model_args, data_args, training_args, train_dataset, vocab_size: int):
    """``tokenizer`` (a folder, a Hub id or a SentencePiece ``.model`` file), else a Unigram vocabulary of
    ``vocab_size`` pieces trained on every language of the training pairs (by the main process, then shared)."""
    if model_args.tokenizer and model_args.tokenizer.endswith(".model"):
        return tokenizer_from_sentencepiece(model_args.tokenizer)
    if model_args.tokenizer:
        return AutoTokenizer.from_pretrained(model_args.tokenizer)
    saved = Path(training_args.output_dir) / "trained_tokenizer"
    with training_args.main_process_first(desc="training the tokenizer"):
        if not (saved / "tokenizer.json").is_file():
            # each sentence once: the pivot side of many language pairs would otherwise count many times
            texts = [text for column in ("source", "target") for text in train_dataset[column] if text]
            train_unigram_tokenizer(dict.fromkeys(texts), vocab_size).save_pretrained(saved)
        return AutoTokenizer.from_pretrained(saved)


def shared_tokenizer_of(tokenizers: dict) -> PreTrainedTokenizerBase:
    """The one tokenizer of a model whose languages share their encoder."""
    return next(iter(tokenizers.values()))


def pair_masking_collator(
    model: PreTrainedModel, tokenizers: dict, max_length: int, **settings
) -> PairMaskingCollator:
    return PairMaskingCollator(
        shared_tokenizer_of(tokenizers), max_length=max_length, task=model.config.generative_task, **settings
    )


def build_cmlm(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a pretrained masked LM (``encoder``) or ``model_config.encoder`` (a configuration)."""
    fields = model_fields(model_args, data_args)
    if model_args.encoder:
        model = CmlmModel.from_encoder(model_args.encoder, lora=model_args.lora, **fields)
    elif "encoder" in fields:
        model = CmlmModel(CmlmConfig(**fields), lora=model_args.lora)
    else:
        raise ConfigFileError(
            "xlsr_cmlm needs encoder (a pretrained encoder), model_name_or_path, or "
            "model_config.encoder (an encoder configuration)"
        )
    return model, run_tokenizers(model_args, model.config.languages, shared=True)


def cmlm_collator(model: PreTrainedModel, tokenizers: dict, max_length: int, **settings) -> CmlmCollator:
    return CmlmCollator(shared_tokenizer_of(tokenizers), max_length=max_length, **settings)


def build_hictl(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a pretrained masked LM (``encoder``, e.g. XLM-R) or ``model_config.encoder`` (a configuration, whose
    vocabulary then comes from `shared_tokenizer`)."""
    fields = model_fields(model_args, data_args)
    if model_args.encoder:
        tokenizer = shared_tokenizer_of(run_tokenizers(model_args, fields["languages"], shared=True))
        model = HictlForPreTraining.from_encoder(model_args.encoder, lora=model_args.lora, **fields)
    elif "encoder" in fields:
        encoder = dict(fields.pop("encoder"))
        tokenizer = shared_tokenizer(
            model_args, data_args, training_args, train_dataset, encoder.pop("vocab_size", 50000)
        )
        special = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
        model = HictlForPreTraining(HictlConfig(encoder={**encoder, **special}, **fields), lora=model_args.lora)
    else:
        raise ConfigFileError(
            "xlsr_hictl needs encoder (a pretrained masked LM), model_name_or_path, or "
            "model_config.encoder (an encoder configuration)"
        )
    return model.use_tokenizer(tokenizer), dict.fromkeys(fields["languages"], tokenizer)


def hictl_collator(model: PreTrainedModel, tokenizers: dict, max_length: int, **settings) -> HictlCollator:
    return HictlCollator(shared_tokenizer_of(tokenizers), max_length=max_length, **settings)


def load_cmlm_data(source, split: str, data_args: DataArguments) -> datasets.DatasetDict:
    """Each pair's adjacent-sentence pairs (``first``, ``second``) with their translations: consecutive Bible verses
    (the adjacent pair alternating between the pair's two languages), or per pair a ``.tsv`` / ``.jsonl`` file with
    those columns and the pair's two language columns."""
    pairs = data_args.pairs
    if source == "bible":
        parts = {}
        for pair in pairs:
            rows = load_bible_adjacent(list(pair), data_args.bible_translations, split=split)
            parts[pair_name(pair)] = rows.remove_columns("language")
        return datasets.DatasetDict(parts)
    if isinstance(source, str) and len(pairs) == 1:
        source = {pair_name(pairs[0]): source}
    if not isinstance(source, dict):
        raise ConfigFileError(
            "xlsr_cmlm trains on 'bible' or on one file of first / second / language columns per pair"
        )
    parts = {
        name: load_bitext(path, ["first", "second", *pair_of(name, data_args.languages)], split=split)
        for name, path in source.items()
    }
    return shared_meanings(
        parts, {name: "user" if "example_id" in part.column_names else None for name, part in parts.items()}
    )
