# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""One training run from parsed arguments: the code behind ``hf-xlsr train`` and ``examples/train.py``.

The run's model type (`hf_xlsr.registry`) says how to build the model and its tokenizers, how to read its data and
how to collate its batches. Under ``accelerate launch`` every process runs this same code.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from collections.abc import Mapping
from pathlib import Path

import datasets
import torch
from transformers import set_seed

from ..data.bitext import BitextFormatError
from ..data.multilingual import (
    describe_sources,
    load_multiway,
    load_pair_datasets,
    pair_name,
    pair_of,
    source_list,
    stack_pairs,
)
from ..evaluation.pcr import fit_language_components
from ..evaluation.retrieval import RetrievalEvaluator
from ..export import export_sentence_transformers
from ..hub import RUN_INFO
from ..modeling.common import TrainingDeclarations
from ..references import resolve_reference
from ..registry import get_model_type
from ..tokenization import load_tokenizers
from ..utils import file_digest
from .arguments import DataArguments, ModelArguments
from .checks import ConfigFileError
from .config_file import checkpoint_to_resume
from .run_folder import check_same_run, rows_digest, run_settings, start_run
from .trainer import XlsrTrainer, XlsrTrainingArguments, schedule_steps

logger = logging.getLogger(__name__)

OFFLINE_CORPORA = ("bible", "hsk")


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
        {
            name: part.shuffle(seed=seed).select(range(limit)) if len(part) > limit else part
            for name, part in parts.items()
        }
    )


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
    entry = get_model_type(model_args.model_type)
    references = {"encoder": model_args.encoder, "encoders": model_args.encoders}  # as the run names them
    resolve_model_references(model_args)
    parts = (entry.part("train_data") or load_pairs)(data_args.train_data, data_args.train_split, data_args)
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
        given = (
            {"lora": model_args.lora} if model_args.lora is not None else {}
        )  # else: the adapters it was saved with
        model = entry.model_class.from_pretrained(model_args.model_name_or_path, **model_args.model_config, **given)
        tokenizers = load_tokenizers(model_args.model_name_or_path)
    else:
        model, tokenizers = entry.part("build")(model_args, data_args, training_args, train_dataset)
    if model.encoders_per_language and data_args.pairs != [tuple(model.config.languages[:2])]:
        raise ConfigFileError(
            f"one encoder per language trains the one pair {pair_name(model.config.languages[:2])}, not "
            f"{', '.join(pair_name(pair) for pair in data_args.pairs)}: set shared_encoder: true in model_config"
        )
    sizes = ", ".join(f"{name} {len(part)}" for name, part in parts.items())
    logger.info(
        "training on %d pairs (%s), %s",
        len(train_dataset),
        sizes,
        f"evaluating on {eval_source}" if eval_source else "no held-out evaluation",
    )

    trainer = XlsrTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        data_collator=entry.part("collator")(
            model, tokenizers, data_args.max_length, **data_args.collator_settings(entry.collator_settings)
        ),
        tokenizers=tokenizers,
        evaluators=evaluators,
    )
    trainer.train(resume_from_checkpoint=resume)
    if trainer.preemption.stopped_by:  # a checkpoint, not a finished model: nothing else is written
        if trainer.is_world_process_zero():
            logger.warning(
                "stopped by %s at step %d: saved %s; --resume_from_checkpoint true continues the run",
                trainer.preemption.stopped_by,
                trainer.state.global_step,
                Path(training_args.output_dir) / f"checkpoint-{trainer.state.global_step}",
            )
        return trainer, {}
    if getattr(model.config, "pcr_components", 0):  # CMLM's PCR: fit each language's components after training
        fit_language_components(
            trainer.accelerator.unwrap_model(trainer.model),
            tokenizers,
            sentences_by_language(train_dataset, training_args.seed),
        )
    trainer.save_model()
    if evaluators:
        logger.info(
            "final evaluation: held-out retrieval on %s (max_eval_pairs: 0 skips it)",
            "; ".join(evaluator.sample for evaluator in evaluators),
        )
    metrics = trainer.evaluate() if evaluators else {}
    if trainer.is_world_process_zero():
        run_info = run_record(model_args, data_args, training_args, trainer, parts, eval_source, metrics)
        run_info.update(references)
        path = Path(training_args.output_dir) / RUN_INFO
        path.write_text(json.dumps(run_info, indent=2))
        model = trainer.accelerator.unwrap_model(trainer.model)  # save_model wrote its adapters under adapters/
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
    return {
        language: [texts[i] for i in torch.randperm(len(texts), generator=generator)[:per_language].tolist()]
        for language, texts in sentences.items()
    }


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
    collator = trainer.data_collator  # what it masked and swapped with, the run's settings or its defaults
    used = {name: getattr(collator, name) for name in get_model_type(model_args.model_type).collator_settings}
    if used:
        training["collator"] = ", ".join(f"{name}={value}" for name, value in used.items())
    model = trainer.accelerator.unwrap_model(trainer.model)
    if isinstance(model, TrainingDeclarations):  # the schedule it trained by, and GradCache's passes
        training.update({name: steps for name, steps in schedule_steps(model, training_args).items() if steps})
        if model.mini_batch_size is not None:
            training["mini_batch_size"] = model.mini_batch_size
    lora = getattr(model, "lora", None)
    if lora:
        training["lora"] = ", ".join(f"{k}={v}" for k, v in lora.items()) + " (merged into the exported weights)"
    log = [
        {key: entry[key] for key in ("step", "loss", "learning_rate") if key in entry}
        for entry in trainer.state.log_history
        if "loss" in entry
    ]
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
    return {
        str(path): file_digest(path) for path in source_list(source) if isinstance(path, str) and Path(path).is_file()
    }


def framework_versions() -> dict[str, str]:
    """hf_xlsr's version (its own, so that a source checkout on ``PYTHONPATH``, which has no installed metadata,
    reports it too) and the installed versions of the frameworks it runs on."""
    from importlib.metadata import version

    from .. import __version__

    packages = ("torch", "transformers", "sentence-transformers", "accelerate", "datasets", "tokenizers")
    versions = {"python": platform.python_version(), "hf_xlsr": __version__}
    versions.update({name: version(name) for name in packages})
    return versions
