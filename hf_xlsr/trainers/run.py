# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""One training run from parsed arguments: the code behind ``hf-xlsr train`` and ``examples/train.py``.

Each model type has a recipe: its configuration class, how to build the model and tokenizers from the run's
arguments, and how to collate its batches. Under ``accelerate launch`` every process runs this same code.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import datasets
import torch
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase, set_seed

from ..data.bitext import BitextFormatError, load_bitext
from ..data.corpora import load_bible_adjacent
from ..data.multilingual import (
    describe_sources,
    load_multiway,
    load_pair_datasets,
    pair_name,
    pair_of,
    shared_meanings,
    source_list,
    stack_pairs,
)
from ..data.tokenizer_training import tokenizer_from_sentencepiece, train_unigram_tokenizer
from ..evaluation.pcr import fit_language_components
from ..evaluation.retrieval import RetrievalEvaluator
from ..export import export_sentence_transformers
from ..hub import RUN_INFO
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
from ..references import resolve_reference
from ..tokenization import load_tokenizers
from ..utils import atomic_directory, file_digest
from .arguments import DataArguments, ModelArguments
from .checks import ConfigFileError
from .collators import BitextCollator, CmlmCollator, HictlCollator, PairMaskingCollator
from .config_file import checkpoint_to_resume
from .run_folder import check_same_run, rows_digest, run_settings, start_run
from .trainer import XlsrTrainer, XlsrTrainingArguments

logger = logging.getLogger(__name__)

OFFLINE_CORPORA = ("bible", "hsk")


@dataclass(frozen=True)
class ModelRecipe:
    model_class: type[PreTrainedModel]  # what a checkpoint (model_name_or_path) loads as
    # a new model: (model arguments, data arguments, training arguments, training pairs) -> (model, tokenizers)
    build: Callable[..., tuple[PreTrainedModel, dict]]
    collator: Callable[[PreTrainedModel, dict, DataArguments], Callable]
    train_data: Callable[..., datasets.DatasetDict] | None = None  # each pair's data; default: load_pairs
    trainer_class: type = XlsrTrainer


def resolve_model_references(model_args: ModelArguments) -> None:
    """Turn ``package:...`` references of offline models into folders (see ``resolve_reference``)."""
    for name in ("model_name_or_path", "encoder", "tokenizer"):
        if getattr(model_args, name) is not None:
            setattr(model_args, name, resolve_reference(getattr(model_args, name)))
    for name in ("encoders", "tokenizers"):
        if getattr(model_args, name):
            setattr(
                model_args, name, {code: resolve_reference(ref) for code, ref in getattr(model_args, name).items()}
            )


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
            {language: model_args.encoder_of(language) for language in fields["languages"]}, **fields
        )
    elif model_args.encoder:
        model = DualMomentumModel.from_encoders(model_args.encoder, **fields)
    elif "encoder_x" in fields:
        model = DualMomentumModel(DualMomentumConfig(**fields))
    else:
        raise ConfigFileError(
            "dual_momentum needs encoder (a pretrained encoder), encoders (one per language), model_name_or_path, "
            "or model_config.encoder_x (an encoder configuration)"
        )
    return model, run_tokenizers(model_args, model.config.languages, model.config.shared_encoder)


def bitext_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> BitextCollator:
    return BitextCollator(tokenizers, max_length=data_args.max_length,
                          nli_language=getattr(model.config, "nli_language", None))  # fmt: skip


def build_lightweight(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """Over a given tokenizer (a tokenizer folder, Hub id or SentencePiece ``.model`` file) or a Unigram vocabulary
    trained on the training pairs (``model_config.vocab_size`` pieces)."""
    fields = model_fields(model_args, data_args)
    vocab_size = fields.pop("vocab_size", LightweightDualTransformerConfig.vocab_size)
    tokenizer = shared_tokenizer(model_args, data_args, training_args, train_dataset, vocab_size)
    return LightweightDualTransformer.from_tokenizer(tokenizer, **fields), dict.fromkeys(
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


def pair_masking_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> PairMaskingCollator:
    config = model.config
    return PairMaskingCollator(
        shared_tokenizer_of(tokenizers), max_length=data_args.max_length, task=config.generative_task,
        mlm_probability=config.mlm_probability,
    )  # fmt: skip


def build_cmlm(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a pretrained masked LM (``encoder``) or ``model_config.encoder`` (a configuration)."""
    fields = model_fields(model_args, data_args)
    if model_args.encoder:
        model = CmlmModel.from_encoder(model_args.encoder, **fields)
    elif "encoder" in fields:
        model = CmlmModel(CmlmConfig(**fields))
    else:
        raise ConfigFileError("cmlm needs encoder (a pretrained encoder), model_name_or_path, or "
                              "model_config.encoder (an encoder configuration)")  # fmt: skip
    return model, run_tokenizers(model_args, model.config.languages, shared=True)


def cmlm_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> CmlmCollator:
    config = model.config
    return CmlmCollator(
        shared_tokenizer_of(tokenizers), max_length=data_args.max_length,
        mlm_probability=config.mlm_probability, mask_replace_prob=config.mask_replace_prob,
        random_replace_prob=config.random_replace_prob, swap_probability=config.swap_probability,
    )  # fmt: skip


def build_hictl(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a pretrained masked LM (``encoder``, e.g. XLM-R) or ``model_config.encoder`` (a configuration, whose
    vocabulary then comes from `shared_tokenizer`)."""
    fields = model_fields(model_args, data_args)
    if model_args.encoder:
        tokenizer = shared_tokenizer_of(run_tokenizers(model_args, fields["languages"], shared=True))
        model = HictlForPreTraining.from_encoder(model_args.encoder, **fields)
    elif "encoder" in fields:
        encoder = dict(fields.pop("encoder"))
        tokenizer = shared_tokenizer(
            model_args, data_args, training_args, train_dataset, encoder.pop("vocab_size", 50000)
        )
        special = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
        model = HictlForPreTraining(HictlConfig(encoder={**encoder, **special}, **fields))
    else:
        raise ConfigFileError("hictl needs encoder (a pretrained masked LM), model_name_or_path, or "
                              "model_config.encoder (an encoder configuration)")  # fmt: skip
    return model.use_tokenizer(tokenizer), dict.fromkeys(fields["languages"], tokenizer)


def hictl_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> HictlCollator:
    config = model.config
    return HictlCollator(
        shared_tokenizer_of(tokenizers), max_length=data_args.max_length, mlm_probability=config.mlm_probability,
        perturbation=config.perturbation, perturbation_window=config.perturbation_window,
        monolingual_probability=data_args.monolingual_probability,
    )  # fmt: skip


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
        raise ConfigFileError("cmlm trains on 'bible' or on one file of first / second / language columns per pair")
    parts = {name: load_bitext(path, ["first", "second", *pair_of(name, data_args.languages)], split=split)
             for name, path in source.items()}  # fmt: skip
    return shared_meanings(parts, {name: "user" if "example_id" in part.column_names else None
                                   for name, part in parts.items()})  # fmt: skip


MODEL_RECIPES: dict[str, ModelRecipe] = {
    "dual_momentum": ModelRecipe(DualMomentumModel, build_dual_momentum, bitext_collator),
    "lightweight": ModelRecipe(LightweightDualTransformer, build_lightweight, pair_masking_collator),
    "cmlm": ModelRecipe(CmlmModel, build_cmlm, cmlm_collator, train_data=load_cmlm_data),
    "hictl": ModelRecipe(HictlForPreTraining, build_hictl, hictl_collator),
}


def load_pairs(
    source: str | os.PathLike | Mapping | datasets.DatasetDict, split: str, data_args: DataArguments
) -> datasets.DatasetDict:
    """Each language pair's sentences (``load_pair_datasets``): an offline corpus name, a multi-way file, a Hub
    dataset, or a mapping from pair to source."""
    try:
        return load_pair_datasets(source, data_args.pairs, split, data_args.bible_translations)
    except ValueError as error:  # a bad source (not a bad line, which names its file) is a bad configuration
        if isinstance(error, BitextFormatError):
            raise
        raise ConfigFileError(str(error)) from None


def cut_pairs(parts: datasets.DatasetDict, limit: int | None, seed: int) -> datasets.DatasetDict:
    """Each pair cut to ``limit`` rows (``max_train_pairs``), drawn with ``seed``."""
    if limit is None:
        return parts
    return datasets.DatasetDict(
        {name: part.shuffle(seed=seed).select(range(limit)) if len(part) > limit else part
         for name, part in parts.items()}
    )  # fmt: skip


def heldout_evaluators(data_args: DataArguments) -> tuple[list, str | None]:
    """Held-out retrieval between every two languages: the Bible's held-out books in every language at once (the
    same verses: each language encoded once), HSK's held-out topics, a multi-way file's rows, or, for sources of
    one pair each, one evaluator per pair. Returns the evaluators and the source's name."""
    source = data_args.eval_data or (data_args.train_data if data_args.train_data in OFFLINE_CORPORA else None)
    if source is None or data_args.max_eval_pairs == 0:
        return [], None
    options = {"max_pairs": data_args.max_eval_pairs, "seed": data_args.eval_seed, "trained_pairs": data_args.pairs}
    if isinstance(source, dict):
        parts = load_pairs(source, data_args.eval_split, data_args)
        evaluators = [
            RetrievalEvaluator.from_dataset(
                part, pair_of(name, data_args.languages), name=f"retrieval_{name.replace('-', '_')}", **options
            )
            for name, part in parts.items()
        ]
        return evaluators, "per-pair files"
    rows = load_multiway(source, data_args.languages, data_args.eval_split, data_args.bible_translations)
    return [RetrievalEvaluator.from_dataset(rows, data_args.languages, **options)], str(source)


def run_training(
    model_args: ModelArguments, data_args: DataArguments, training_args: XlsrTrainingArguments
) -> tuple[XlsrTrainer, dict[str, float]]:
    """Build, train, save (and export) one model; return the trainer and the final evaluation metrics."""
    set_seed(training_args.seed)
    recipe = MODEL_RECIPES[model_args.model_type]
    references = {"encoder": model_args.encoder, "encoders": model_args.encoders}  # as the run names them
    resolve_model_references(model_args)
    parts = (recipe.train_data or load_pairs)(data_args.train_data, data_args.train_split, data_args)
    parts = cut_pairs(parts, data_args.max_train_pairs, training_args.seed)
    train_dataset = stack_pairs(parts)
    resume = checkpoint_to_resume(training_args.resume_from_checkpoint)
    settings = {**run_settings(model_args, data_args, training_args, rows_digest(train_dataset)), **references}
    if resume is not None:  # only this run's checkpoints
        check_same_run(training_args.output_dir, settings)
    if training_args.process_index == 0:
        start_run(training_args.output_dir, settings, resume is not None, training_args.overwrite_output_dir)
    evaluators, eval_source = heldout_evaluators(data_args)  # bad evaluation data fails before the model loads
    if getattr(training_args, "eval_max_length", 0) is None:  # one length for the run, its evaluations and export
        training_args.eval_max_length = data_args.max_length
    if not evaluators and training_args.eval_strategy != "no":
        raise ConfigFileError("eval_strategy is set but there is no eval_data to evaluate on")
    if model_args.model_name_or_path:  # a checkpoint continued: its configuration, the run's model_config on top
        model = recipe.model_class.from_pretrained(model_args.model_name_or_path, **model_args.model_config)
        tokenizers = load_tokenizers(model_args.model_name_or_path)
    else:
        model, tokenizers = recipe.build(model_args, data_args, training_args, train_dataset)
    if model.encoders_per_language and data_args.pairs != [tuple(model.config.languages[:2])]:
        raise ConfigFileError(
            f"one encoder per language trains the one pair {pair_name(model.config.languages[:2])}, not "
            f"{', '.join(pair_name(pair) for pair in data_args.pairs)}: set shared_encoder: true in model_config"
        )
    sizes = ", ".join(f"{name} {len(part)}" for name, part in parts.items())
    logger.info("training on %d pairs (%s), %s", len(train_dataset), sizes,
                f"evaluating on {eval_source}" if eval_source else "no held-out evaluation")  # fmt: skip

    trainer = recipe.trainer_class(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        data_collator=recipe.collator(model, tokenizers, data_args),
        tokenizers=tokenizers,
        evaluators=evaluators,
    )
    trainer.train(resume_from_checkpoint=resume)
    if trainer.preemption.stopped_by:  # a checkpoint, not a finished model: nothing else is written
        if trainer.is_world_process_zero():
            logger.warning("stopped by %s at step %d: saved %s; --resume_from_checkpoint true continues the run",
                           trainer.preemption.stopped_by, trainer.state.global_step,
                           Path(training_args.output_dir) / f"checkpoint-{trainer.state.global_step}")  # fmt: skip
        return trainer, {}
    if getattr(model.config, "pcr_components", 0):  # CMLM's PCR: fit each language's components after training
        fit_language_components(trainer.accelerator.unwrap_model(trainer.model), tokenizers,
                                sentences_by_language(train_dataset, training_args.seed))  # fmt: skip
    trainer.save_model()
    if evaluators:
        logger.info("final evaluation: held-out retrieval on %s (max_eval_pairs: 0 skips it)",
                    "; ".join(evaluator.sample for evaluator in evaluators))  # fmt: skip
    metrics = trainer.evaluate() if evaluators else {}
    if trainer.is_world_process_zero():
        run_info = run_record(model_args, data_args, training_args, trainer, parts, eval_source, metrics)
        run_info.update(references)
        path = Path(training_args.output_dir) / RUN_INFO
        path.write_text(json.dumps(run_info, indent=2))
        model = trainer.accelerator.unwrap_model(trainer.model)
        if getattr(model.config, "lora", None):  # the adapters alone, in PEFT's format, next to the checkpoint
            with atomic_directory(Path(training_args.output_dir) / "adapters") as staging:
                model.save_adapters(staging)
        if data_args.export_dir:
            export_sentence_transformers(model, tokenizers, data_args.export_dir, data_args.max_length, run_info)
        if training_args.push_export_to_hub:
            retrieval = {k.removeprefix("eval_"): v for k, v in metrics.items() if "retrieval" in k}
            trainer.push_export_to_hub(results={"retrieval": retrieval} if retrieval else {}, run_info=run_info)
    return trainer, metrics


def sentences_by_language(dataset: datasets.Dataset, seed: int, per_language: int = 10_000) -> dict[str, list[str]]:
    """Up to ``per_language`` training sentences of each language (from both sides of the pairs)."""
    sentences: dict[str, list[str]] = {}
    for side in ("source", "target"):
        for text, language in zip(dataset[side], dataset[f"{side}_language"], strict=True):
            if text:
                sentences.setdefault(language, []).append(text)
    generator = torch.Generator().manual_seed(seed)
    return {language: [texts[i] for i in torch.randperm(len(texts), generator=generator)[:per_language].tolist()]
            for language, texts in sentences.items()}  # fmt: skip


def run_record(model_args, data_args, training_args, trainer, parts, eval_source, metrics) -> dict:
    """What a model card needs to know about the run: its data (pairs, sizes, sources and their licences), the
    hyperparameters in effect, the training log, the final evaluation and who measured it, the framework versions."""
    hyperparameters = (
        "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay", "max_grad_norm",
        "per_device_train_batch_size", "gradient_accumulation_steps", "seed", "language_sampling_alpha",
        "language_batches",
    )  # fmt: skip
    training = {name: getattr(training_args, name) for name in hyperparameters}
    if training_args.max_steps > 0:  # a run of steps: its epochs are not a setting
        training["max_steps"] = training_args.max_steps
    else:
        training["num_train_epochs"] = training_args.num_train_epochs
    training["total_batch_size"] = (
        training_args.per_device_train_batch_size
        * training_args.gradient_accumulation_steps
        * training_args.world_size
    )
    training["optimizer_steps"] = trainer.state.global_step
    training["max_length"] = data_args.max_length
    lora = getattr(trainer.accelerator.unwrap_model(trainer.model).config, "lora", None)
    if lora:
        training["lora"] = ", ".join(f"{k}={v}" for k, v in lora.items()) + " (merged into the exported weights)"
    log = [{key: entry[key] for key in ("step", "loss", "learning_rate") if key in entry}
           for entry in trainer.state.log_history if "loss" in entry]  # fmt: skip
    return {
        "model_type": model_args.model_type,
        "train_data": data_args.train_data,
        "train_split": data_args.train_split,
        "train_files": training_files(data_args.train_data),
        "languages": data_args.languages,
        "language_pairs": [pair_name(pair) for pair in data_args.pairs],
        "train_pairs": {name: len(part) for name, part in parts.items()},
        "train_sources": describe_sources(data_args.train_data, data_args.pairs, data_args.bible_translations),
        "max_length": data_args.max_length,
        "training": training,
        "training_log": log,
        "evaluation_data": f"{eval_source} ({data_args.eval_split}), {trainer.evaluators[0].sample}"
        if eval_source
        else None,
        "evaluated_by": "the final evaluation of hf-xlsr train (RetrievalEvaluator)" if eval_source else None,
        "final_evaluation": metrics,
        "framework_versions": framework_versions(),
    }


def training_files(source) -> dict[str, str]:
    """``{path: SHA-256}`` of each local file a run trains on (``train_data``, or each language pair's): what
    ``hf-xlsr evaluate`` reads to tell that it is asked to score the training data."""
    return {str(path): file_digest(path) for path in source_list(source) if isinstance(path, str)
            and Path(path).is_file()}  # fmt: skip


def framework_versions() -> dict[str, str]:
    """hf_xlsr's version (its own, so that a source checkout on ``PYTHONPATH``, which has no installed metadata,
    reports it too) and the installed versions of the frameworks it runs on."""
    from importlib.metadata import version

    from .. import __version__

    packages = ("torch", "transformers", "sentence-transformers", "accelerate", "datasets", "tokenizers")
    versions = {"python": platform.python_version(), "hf_xlsr": __version__}
    versions.update({name: version(name) for name in packages})
    return versions
