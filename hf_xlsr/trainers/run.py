"""One training run from parsed arguments: the code behind ``hf-xlsr train`` and ``examples/train.py``.

Each model type has a recipe: its configuration class, how to build the model and tokenizers from the run's
arguments, and how to collate its batches. Under ``accelerate launch`` every process runs this same code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import datasets
from transformers import AutoTokenizer, PreTrainedModel, set_seed

from ..data.bitext import load_bitext
from ..data.corpora import load_bible, load_bible_adjacent, load_hsk, resolve_reference
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
from ..tokenization import load_tokenizers
from ..utils import atomic_directory
from .arguments import ConfigFileError, DataArguments, ModelArguments
from .collators import BitextCollator, CmlmCollator, HictlCollator, PairMaskingCollator
from .trainer import XlsrTrainer, XlsrTrainingArguments

logger = logging.getLogger(__name__)

OFFLINE_CORPORA = ("bible", "hsk")


@dataclass(frozen=True)
class ModelRecipe:
    config_class: type
    # (model arguments, data arguments, training arguments, training pairs) -> (model, tokenizers by side)
    build: Callable[..., tuple[PreTrainedModel, dict]]
    collator: Callable[[PreTrainedModel, dict, DataArguments], Callable]
    train_data: Callable[[str, str, DataArguments], datasets.Dataset] | None = None  # default: load_pairs
    trainer_class: type = XlsrTrainer


def resolve_model_references(model_args: ModelArguments) -> None:
    """Turn ``package:...`` references of offline models into folders (see ``resolve_reference``)."""
    for name in ("model_name_or_path", "encoder_x", "encoder_y", "tokenizer_x", "tokenizer_y"):
        value = getattr(model_args, name)
        if value is not None:
            setattr(model_args, name, resolve_reference(value))


def _tokenizer_pair(model_args: ModelArguments, shared: bool) -> dict:
    name_x = model_args.tokenizer_x or model_args.encoder_x
    name_y = model_args.tokenizer_y or model_args.encoder_y or name_x
    if name_x is None:
        raise ConfigFileError("set tokenizer_x (or encoder_x) to the tokenizer of the x language")
    tokenizer_x = AutoTokenizer.from_pretrained(name_x)
    tokenizer_y = tokenizer_x if shared or name_y == name_x else AutoTokenizer.from_pretrained(name_y)
    return {"x": tokenizer_x, "y": tokenizer_y}


def build_dual_momentum(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    fields = {"language_x": data_args.languages[0], "language_y": data_args.languages[1], **model_args.model_config}
    if model_args.model_name_or_path:
        model = DualMomentumModel.from_pretrained(model_args.model_name_or_path, **model_args.model_config)
        return model, load_tokenizers(model_args.model_name_or_path)
    if model_args.encoder_x:
        model = DualMomentumModel.from_encoders(model_args.encoder_x, model_args.encoder_y, **fields)
    elif "encoder_x" in fields:
        model = DualMomentumModel(DualMomentumConfig(**fields))
    else:
        raise ConfigFileError(
            "dual_momentum needs encoder_x (a pretrained encoder), model_name_or_path, or "
            "model_config.encoder_x (an encoder configuration)"
        )
    return model, _tokenizer_pair(model_args, model.config.shared_encoder)


def bitext_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> BitextCollator:
    return BitextCollator(
        tokenizer_x=tokenizers["x"],
        tokenizer_y=tokenizers["y"],
        x_column=data_args.languages[0],
        y_column=data_args.languages[1],
        max_length=data_args.max_length,
        nli_side=getattr(model.config, "nli_language", "x"),
    )


def build_lightweight(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a checkpoint, or a new model over a given tokenizer (a tokenizer folder, Hub id or SentencePiece
    ``.model`` file) or a Unigram vocabulary trained on the training pairs (``model_config.vocab_size`` pieces)."""
    fields = {"language_x": data_args.languages[0], "language_y": data_args.languages[1], **model_args.model_config}
    if model_args.model_name_or_path:
        model = LightweightDualTransformer.from_pretrained(model_args.model_name_or_path, **fields)
        return model, load_tokenizers(model_args.model_name_or_path)
    vocab_size = fields.pop("vocab_size", LightweightDualTransformerConfig.vocab_size)
    tokenizer = shared_tokenizer(model_args, data_args, training_args, train_dataset, vocab_size)
    return LightweightDualTransformer.from_tokenizer(tokenizer, **fields), {"x": tokenizer, "y": tokenizer}


def shared_tokenizer(model_args, data_args, training_args, train_dataset, vocab_size: int):
    """``tokenizer_x`` (a folder, a Hub id or a SentencePiece ``.model`` file), else a Unigram vocabulary of
    ``vocab_size`` pieces trained on both languages of the training pairs (by the main process, then shared)."""
    if model_args.tokenizer_x and model_args.tokenizer_x.endswith(".model"):
        return tokenizer_from_sentencepiece(model_args.tokenizer_x)
    if model_args.tokenizer_x:
        return AutoTokenizer.from_pretrained(model_args.tokenizer_x)
    saved = Path(training_args.output_dir) / "trained_tokenizer"
    with training_args.main_process_first(desc="training the tokenizer"):
        if not (saved / "tokenizer.json").is_file():
            texts = [text for column in data_args.languages for text in train_dataset[column]]
            train_unigram_tokenizer(texts, vocab_size).save_pretrained(saved)
        return AutoTokenizer.from_pretrained(saved)


def pair_masking_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> PairMaskingCollator:
    config = model.config
    return PairMaskingCollator(
        tokenizers["x"], data_args.languages[0], data_args.languages[1], data_args.max_length,
        task=config.generative_task, mlm_probability=config.mlm_probability,
    )  # fmt: skip


def build_cmlm(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a checkpoint, a pretrained masked LM (``encoder_x``), or ``model_config.encoder`` (a configuration)."""
    fields = {"language_x": data_args.languages[0], "language_y": data_args.languages[1], **model_args.model_config}
    if model_args.model_name_or_path:
        return CmlmModel.from_pretrained(model_args.model_name_or_path, **fields), load_tokenizers(
            model_args.model_name_or_path
        )
    if model_args.encoder_x:
        model = CmlmModel.from_encoder(model_args.encoder_x, **fields)
    elif "encoder" in fields:
        model = CmlmModel(CmlmConfig(**fields))
    else:
        raise ConfigFileError("cmlm needs encoder_x (a pretrained encoder), model_name_or_path, or "
                              "model_config.encoder (an encoder configuration)")  # fmt: skip
    return model, _tokenizer_pair(model_args, shared=True)


def cmlm_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> CmlmCollator:
    config = model.config
    return CmlmCollator(
        tokenizers["x"], data_args.languages[0], data_args.languages[1], max_length=data_args.max_length,
        mlm_probability=config.mlm_probability, mask_replace_prob=config.mask_replace_prob,
        random_replace_prob=config.random_replace_prob, swap_probability=config.swap_probability,
    )  # fmt: skip


def build_hictl(model_args: ModelArguments, data_args: DataArguments, training_args, train_dataset):
    """From a checkpoint, a pretrained masked LM (``encoder_x``, e.g. XLM-R), or ``model_config.encoder`` (a
    configuration, whose vocabulary then comes from :func:`shared_tokenizer`)."""
    fields = {"language_x": data_args.languages[0], "language_y": data_args.languages[1], **model_args.model_config}
    if model_args.model_name_or_path:
        model = HictlForPreTraining.from_pretrained(model_args.model_name_or_path, **fields)
        return model, load_tokenizers(model_args.model_name_or_path)
    if model_args.encoder_x:
        tokenizer = _tokenizer_pair(model_args, shared=True)["x"]
        model = HictlForPreTraining.from_encoder(model_args.encoder_x, **fields)
    elif "encoder" in fields:
        encoder = dict(fields.pop("encoder"))
        tokenizer = shared_tokenizer(
            model_args, data_args, training_args, train_dataset, encoder.pop("vocab_size", 50000)
        )
        special = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
        model = HictlForPreTraining(HictlConfig(encoder={**encoder, **special}, **fields))
    else:
        raise ConfigFileError("hictl needs encoder_x (a pretrained masked LM), model_name_or_path, or "
                              "model_config.encoder (an encoder configuration)")  # fmt: skip
    return model.use_tokenizer(tokenizer), {"x": tokenizer, "y": tokenizer}


def hictl_collator(model: PreTrainedModel, tokenizers: dict, data_args: DataArguments) -> HictlCollator:
    config = model.config
    return HictlCollator(
        tokenizers["x"], data_args.languages[0], data_args.languages[1], data_args.max_length,
        mlm_probability=config.mlm_probability, perturbation=config.perturbation,
        perturbation_window=config.perturbation_window, monolingual_probability=data_args.monolingual_probability,
    )  # fmt: skip


def load_cmlm_data(source: str, split: str, data_args: DataArguments) -> datasets.Dataset:
    """Adjacent-sentence pairs (``first``, ``second``) with their translations: consecutive Bible verses, or a
    ``.tsv`` / ``.jsonl`` file with those columns and the two language columns."""
    if source == "bible":
        return load_bible_adjacent(data_args.languages, data_args.bible_translations, split=split)
    return load_bitext(source, ["first", "second", *data_args.languages], split=split)


MODEL_RECIPES: dict[str, ModelRecipe] = {
    "dual_momentum": ModelRecipe(DualMomentumConfig, build_dual_momentum, bitext_collator),
    "lightweight": ModelRecipe(LightweightDualTransformerConfig, build_lightweight, pair_masking_collator),
    "cmlm": ModelRecipe(CmlmConfig, build_cmlm, cmlm_collator, train_data=load_cmlm_data),
    "hictl": ModelRecipe(HictlConfig, build_hictl, hictl_collator),
}


def load_pairs(source: str, split: str, data_args: DataArguments) -> datasets.Dataset:
    """Sentence pairs from an offline corpus name, a file or a Hub dataset, with ``data_args.languages`` columns."""
    languages = data_args.languages
    if source == "bible":
        return load_bible(languages, data_args.bible_translations, split=split)
    if source == "hsk":
        if set(languages) != {"en", "zh"}:
            raise ConfigFileError(f"the HSK corpus has languages en and zh, not {languages}")
        return load_hsk(split)
    return load_bitext(source, languages, split=split)


def run_training(
    model_args: ModelArguments, data_args: DataArguments, training_args: XlsrTrainingArguments
) -> tuple[XlsrTrainer, dict[str, float]]:
    """Build, train, save (and export) one model; return the trainer and the final evaluation metrics."""
    set_seed(training_args.seed)
    recipe = MODEL_RECIPES[model_args.model_type]
    resolve_model_references(model_args)
    train_dataset = (recipe.train_data or load_pairs)(data_args.train_data, data_args.train_split, data_args)
    if data_args.max_train_pairs is not None and len(train_dataset) > data_args.max_train_pairs:
        train_dataset = train_dataset.shuffle(seed=training_args.seed).select(range(data_args.max_train_pairs))
    model, tokenizers = recipe.build(model_args, data_args, training_args, train_dataset)
    evaluators = []
    eval_source = data_args.eval_data or (data_args.train_data if data_args.train_data in OFFLINE_CORPORA else None)
    if eval_source is not None:
        eval_pairs = load_pairs(eval_source, data_args.eval_split, data_args)
        evaluators.append(
            RetrievalEvaluator.from_dataset(
                eval_pairs, data_args.languages, max_pairs=data_args.max_eval_pairs, seed=training_args.seed
            )
        )
    elif training_args.eval_strategy != "no":
        raise ConfigFileError("eval_strategy is set but there is no eval_data to evaluate on")
    logger.info("training on %d pairs, evaluating on %s", len(train_dataset), eval_source)

    trainer = recipe.trainer_class(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        data_collator=recipe.collator(model, tokenizers, data_args),
        tokenizers=tokenizers,
        evaluators=evaluators,
    )
    resume = training_args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() in ("true", "latest"):
        resume = True
    trainer.train(resume_from_checkpoint=resume)
    if getattr(model.config, "pcr_components", 0):  # CMLM's PCR: fit each language's components after training
        sample = train_dataset.shuffle(seed=training_args.seed).select(range(min(10000, len(train_dataset))))
        x, y = data_args.languages
        fit_language_components(trainer.accelerator.unwrap_model(trainer.model), tokenizers, sample[x], sample[y])
    trainer.save_model()
    metrics = trainer.evaluate() if evaluators else {}
    if trainer.is_world_process_zero():
        run_info = run_record(model_args, data_args, training_args, trainer, len(train_dataset), eval_source, metrics)
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


def run_record(model_args, data_args, training_args, trainer, n_train: int, eval_source, metrics) -> dict:
    """What a model card needs to know about the run: data, effective hyperparameters, final evaluation."""
    hyperparameters = (
        "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay", "max_grad_norm",
        "per_device_train_batch_size", "gradient_accumulation_steps", "max_steps", "num_train_epochs", "seed",
    )  # fmt: skip
    training = {name: getattr(training_args, name) for name in hyperparameters}
    training["total_batch_size"] = (
        training_args.per_device_train_batch_size
        * training_args.gradient_accumulation_steps
        * training_args.world_size
    )
    training["optimizer_steps"] = trainer.state.global_step
    training["train_pairs"] = n_train
    training["train_data"] = f"{data_args.train_data} ({data_args.train_split}), {'-'.join(data_args.languages)}"
    lora = getattr(trainer.accelerator.unwrap_model(trainer.model).config, "lora", None)
    if lora:
        training["lora"] = ", ".join(f"{k}={v}" for k, v in lora.items()) + " (merged into the exported weights)"
    return {
        "model_type": model_args.model_type,
        "train_data": data_args.train_data,
        "encoder_x": model_args.encoder_x,
        "encoder_y": model_args.encoder_y,
        "languages": data_args.languages,
        "training": training,
        "evaluation_data": f"{eval_source} ({data_args.eval_split}), {data_args.max_eval_pairs} pairs"
        if eval_source
        else None,
        "final_evaluation": metrics,
    }
