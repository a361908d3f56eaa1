# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""MTEB for hf_xlsr models: local tasks built from files or ``datasets`` objects, and a model adapter.

``mteb`` ships no task data, and standard tasks load theirs from the Hub, so offline evaluation needs tasks
that carry their own data: `bitext_task`, `sts_task` and `classification_task` build them
(``mteb`` task objects, run by ``mteb.evaluate`` like any other). `run_mteb` runs them, together with
standard MTEB tasks given by name when the Hub is reachable.

The adapter (`XlsrMtebEncoder`) gives ``mteb`` any model ``as_encoder`` takes (an hf_xlsr model with its
tokenizers, a ``SentenceTransformer`` or an hf_xlsr export). It routes each batch to the encoder of its
language: the language column of a bitext task, the split of a cross-lingual classification task, or the
task's language. Its revision is a hash of the weights, so mteb's result cache never hands a retrained
checkpoint the score of an older one. `load_mteb_model` loads an export with the ``ModelMeta`` it carries
(languages, size, license, training datasets, base model), so results are labelled and mteb knows on which tasks
the model is not zero-shot::

    import mteb
    from hf_xlsr.evaluation.mteb import load_mteb_model

    model = load_mteb_model("runs/dual_momentum_bible_en_fr/export")
    results = mteb.evaluate(model, mteb.get_tasks(tasks=["Tatoeba"], languages=["fra"]))
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import datasets
import mteb
import numpy as np
import torch
from mteb.abstasks.classification import AbsTaskClassification
from mteb.abstasks.sts import AbsTaskSTS
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.abstasks.text.bitext_mining import AbsTaskBitextMining
from mteb.models import ModelMeta
from mteb.models.abs_encoder import AbsEncoder
from mteb.models.model_meta import ScoringFunction
from sentence_transformers import SentenceTransformer

from ..languages import MTEB_LANGUAGES, mteb_language
from .encoders import as_encoder, language_routes

logger = logging.getLogger(__name__)

_SPLIT_LANGUAGES: dict[str, dict[str, str]] = {}  # task name -> split -> language, for cross-lingual tasks


def _fingerprint(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode() if not isinstance(part, bytes) else part)
    return digest.hexdigest()[:16]


def _dataset_fingerprint(dataset: datasets.Dataset) -> str:
    return _fingerprint(dataset._fingerprint, len(dataset), tuple(dataset.column_names))


def _metadata(name: str, description: str, task_type: str, eval_langs, main_score: str, splits, revision: str):
    return TaskMetadata(
        name=name,
        description=description,
        dataset={"path": f"local/{name}", "revision": revision},
        type=task_type,
        category="t2t",
        modalities=["text"],
        eval_splits=list(splits),
        eval_langs=eval_langs,
        main_score=main_score,
        date=None,
        domains=None,
        task_subtypes=None,
        license=None,
        annotations_creators=None,
        dialect=None,
        sample_creation=None,
        bibtex_citation="",
    )


class _LocalData:
    """Mixin: the task's data is given when the task class is made (`_task`), never downloaded."""

    _local_data: datasets.DatasetDict

    def load_data(self, num_proc: int | None = None, **kwargs) -> None:
        self.dataset = self._local_data
        self.data_loaded = True


class LocalBitextMining(_LocalData, AbsTaskBitextMining):
    """Bitext retrieval between the language columns of one dataset (row i of each column are translations)."""

    parallel_subsets = True


class LocalSTS(_LocalData, AbsTaskSTS):
    """Semantic similarity: ``sentence1``, ``sentence2``, ``score`` in ``[min_score, max_score]``."""


class LocalClassification(_LocalData, AbsTaskClassification):
    """Classification by a linear probe trained on ``train`` and tested on ``test`` (``text``, ``label``)."""


def _task(base: type, metadata: TaskMetadata, data: datasets.DatasetDict, **attributes):
    # mteb reads a task's metadata from its class (unload_data drops instance copies), so each task is a class.
    return type(metadata.name, (base,), {"metadata": metadata, "_local_data": data, **attributes})()


def bitext_task(
    dataset: datasets.Dataset | str | os.PathLike, languages: Sequence[str], name: str = "HfXlsrBitext"
) -> LocalBitextMining:
    """Bitext retrieval in both directions between the ``languages`` columns of a ``Dataset`` or a
    ``.tsv`` / ``.jsonl`` file of pairs (main score: MTEB's F1)."""
    from ..data.bitext import load_bitext

    x, y = languages
    dataset = load_bitext(dataset, languages)
    metadata = _metadata(
        name,
        f"hf_xlsr local bitext retrieval {x}-{y}",
        "BitextMining",
        {f"{x}-{y}": [mteb_language(x), mteb_language(y)], f"{y}-{x}": [mteb_language(y), mteb_language(x)]},
        "f1",
        ["test"],
        _dataset_fingerprint(dataset),
    )
    return _task(LocalBitextMining, metadata, datasets.DatasetDict({"test": dataset.select_columns([x, y])}))


def sts_task(
    dataset: datasets.Dataset,
    language: str = "en",
    name: str = "HfXlsrSTS",
    min_score: float = 0.0,
    max_score: float = 5.0,
) -> LocalSTS:
    """Semantic similarity on ``sentence1`` / ``sentence2`` / ``score`` (main score: cosine Spearman)."""
    metadata = _metadata(
        name,
        "hf_xlsr local semantic textual similarity",
        "STS",
        [mteb_language(language)],
        "cosine_spearman",
        ["test"],
        _dataset_fingerprint(dataset),
    )
    data = datasets.DatasetDict({"test": dataset.select_columns(["sentence1", "sentence2", "score"])})
    return _task(LocalSTS, metadata, data, min_score=min_score, max_score=max_score)


def classification_task(
    train: datasets.Dataset,
    test: datasets.Dataset,
    train_language: str,
    test_language: str,
    name: str = "HfXlsrClassification",
) -> LocalClassification:
    """A probe trained on ``train`` (``text``, ``label``, in ``train_language``) and tested on ``test``; with two
    languages it measures zero-shot cross-lingual transfer (main score: accuracy)."""
    metadata = _metadata(
        name,
        f"hf_xlsr local classification, trained in {train_language}, tested in {test_language}",
        "Classification",
        [mteb_language(test_language)],
        "accuracy",
        ["test"],
        _fingerprint(_dataset_fingerprint(train), _dataset_fingerprint(test)),
    )
    _SPLIT_LANGUAGES[name] = {"train": train_language, "test": test_language}
    data = datasets.DatasetDict(
        {"train": train.select_columns(["text", "label"]), "test": test.select_columns(["text", "label"])}
    )
    return _task(LocalClassification, metadata, data)


def model_fingerprint(model: object) -> str | None:
    """A hash of every weight of ``model`` (or of each model of a per-language mapping); None for a plain callable."""
    if isinstance(model, Mapping):
        return _fingerprint(*(model_fingerprint(m) for m in model.values()))
    if not hasattr(model, "state_dict"):
        return None
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


class XlsrMtebEncoder(AbsEncoder):
    """Any model ``as_encoder`` takes, as an MTEB encoder; ``languages`` are the model's language codes.

    ``model_meta`` (an ``mteb.ModelMeta``, e.g. an export's) labels the results; without it a minimal one is made,
    named ``hf_xlsr/<name>`` with the weights' hash as its revision. Scores come from mteb's own similarity, the
    cosine its meta names.
    """

    def __init__(
        self,
        model: object,
        tokenizers=None,
        name: str | None = None,
        languages: Sequence[str] = (),
        default_language: str | None = None,
        batch_size: int = 32,
        model_meta: ModelMeta | None = None,
    ):
        self.model = model
        self.encoder = as_encoder(model, tokenizers, batch_size)
        routed = language_routes(model) if isinstance(model, SentenceTransformer) else []
        self.languages = list(languages) or routed or (list(model) if isinstance(model, Mapping) else [])
        self.default_language = default_language or (self.languages[0] if self.languages else None)
        self.mteb_model_meta = model_meta or ModelMeta.create_empty(
            {
                "name": f"hf_xlsr/{name or type(model).__name__}",
                "revision": model_fingerprint(model),
                "similarity_fn_name": ScoringFunction.COSINE,
                "framework": ["PyTorch"],
            }
        )

    def language_for(self, task_metadata: TaskMetadata, hf_split: str, hf_subset: str) -> str:
        if hf_subset in self.languages:
            return hf_subset
        split_languages = _SPLIT_LANGUAGES.get(task_metadata.name, {})
        if hf_split in split_languages:
            return split_languages[hf_split]
        codes = {iso.split("-")[0]: short for short, iso in MTEB_LANGUAGES.items()}
        task_languages = [codes.get(lang) for lang in task_metadata.languages]
        known = [lang for lang in task_languages if lang in self.languages]
        return known[0] if len(set(known)) == 1 else self.default_language

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
        texts = [text for batch in inputs for text in batch["text"]]
        return self.encoder(texts, self.language_for(task_metadata, hf_split, hf_subset))


def export_model_meta(path: str | os.PathLike) -> ModelMeta:
    """The ``mteb.ModelMeta`` an hf_xlsr export carries (``mteb_model_meta.json``)."""
    from ..export import MTEB_META

    file = Path(path) / MTEB_META
    if not file.is_file():
        raise FileNotFoundError(f"{file}: not an hf_xlsr export (no mteb metadata)")
    fields = json.loads(file.read_text())
    if fields.get("training_datasets") is not None:
        fields["training_datasets"] = set(fields["training_datasets"])
    return ModelMeta(loader=None, **fields)


def load_mteb_model(path: str | os.PathLike, batch_size: int = 32) -> XlsrMtebEncoder:
    """An hf_xlsr export as an MTEB model carrying its ``ModelMeta``, for ``mteb.evaluate``."""
    model = SentenceTransformer(str(path))
    return XlsrMtebEncoder(model, batch_size=batch_size, model_meta=export_model_meta(path))


def run_mteb(
    model: object,
    tasks: Sequence[mteb.AbsTask | str],
    tokenizers=None,
    languages: Sequence[str] = (),
    cache_dir: str | os.PathLike | None = None,
    name: str | None = None,
    batch_size: int = 32,
    model_meta: ModelMeta | None = None,
) -> dict[str, float]:
    """Run local and standard MTEB tasks with ``mteb.evaluate``; return ``{task name: main score}`` (mean over
    subsets and splits). ``model_meta`` labels the results (an export's: `export_model_meta`).

    Results are cached under ``cache_dir`` (MTEB's own layout) keyed by the model's weight hash.
    """
    if not languages:
        languages = list(getattr(getattr(model, "config", None), "languages", None) or [])
    encoder = XlsrMtebEncoder(model, tokenizers, name, languages, batch_size=batch_size, model_meta=model_meta)
    if cache_dir is not None and encoder.mteb_model_meta.revision is None:
        raise ValueError("results can only be cached for a model with weights (the cache is keyed by their hash)")
    resolved = [mteb.get_task(task) if isinstance(task, str) else task for task in tasks]
    cache = mteb.ResultCache(Path(cache_dir)) if cache_dir is not None else None
    results = mteb.evaluate(
        encoder, resolved, cache=cache, encode_kwargs={"batch_size": batch_size}, show_progress_bar=False
    )
    scores = {}
    for task_result in results.task_results:
        values = [entry["main_score"] for split in task_result.scores.values() for entry in split]
        scores[task_result.task_name] = float(np.mean(values))
    return scores
