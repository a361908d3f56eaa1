# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""One interface for every model an evaluator can score: ``encoder(sentences, language) -> float32 array``.

`as_encoder` turns an hf_xlsr model (with its tokenizers), a ``SentenceTransformer`` (an hf_xlsr export of a
dual encoder routes by language: ``encode(texts, task=language)``), a mapping from language code to
``SentenceTransformer``, or a callable into such an encoder. Returned vectors are L2-normalised rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from sentence_transformers.sentence_transformer.modules import Router
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from ..tokenization import tokenizer_for
from .backends import CALIBRATION, Runner, SentenceGraph, check_backend, compile_graph

Encoder = Callable[[Sequence[str], str], np.ndarray]


class ModelEncoder:
    """Encode with an hf_xlsr model (and its tokenizers) or a ``SentenceTransformer`` on a
    `backends` backend: sentences sorted by length so that each batch pads little, no
    autograd. With ``backend="torch"`` an hf_xlsr model runs in float32 (bfloat16 autocast on a GPU that has it),
    where its vectors equal ``SentenceTransformer.encode``'s of its export."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase] | None = None,
        batch_size: int = 64,
        max_length: int = 128,
        show_progress: bool = False,
        backend: str = "torch",
    ):
        check_backend(backend)
        self.model, self.tokenizers, self.batch_size, self.max_length = model, tokenizers, batch_size, max_length
        self.show_progress, self.backend = show_progress, backend
        self.languages = model_languages(model)  # those with a graph of their own; the others share one
        self._runners: dict[str, Runner] = {}

    def _tokenize(self, sentences: list[str], language: str) -> tuple[np.ndarray, np.ndarray]:
        model = self.model
        if isinstance(model, SentenceTransformer):
            features = model.preprocess(sentences, **({"task": language} if self.languages else {}))
        else:
            max_length = min(self.max_length, model.max_tokens(language) or self.max_length)  # what positions take
            tokenizer = tokenizer_for(self.tokenizers, language)
            features = tokenizer(sentences, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        return features["input_ids"].long().numpy(), features["attention_mask"].long().numpy()

    def _runner(self, language: str, example: tuple[np.ndarray, np.ndarray], sentences: Sequence[str]) -> Runner:
        if self.languages and language not in self.languages:
            raise KeyError(f"the model encodes {', '.join(self.languages)} each its own way, not {language!r}")
        route = language if self.languages else "*"
        if route not in self._runners:
            graph = SentenceGraph(self.model, language, routed=bool(self.languages))
            calibration = self._calibration(sentences, language) if self.backend == "openvino-int8" else None
            self._runners[route] = compile_graph(graph, self.backend, example, calibration)
        return self._runners[route]

    def _calibration(self, sentences: Sequence[str], language: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Up to `CALIBRATION` of ``sentences`` (the first call's), spread evenly over them in order of length,
        tokenised in batches: what calibrates ``openvino-int8``."""
        order = np.argsort([len(s) for s in sentences], kind="stable")
        chosen = [
            sentences[i] for i in order[np.linspace(0, len(order) - 1, min(CALIBRATION, len(order))).astype(int)]
        ]
        return [
            self._tokenize(chosen[i : i + self.batch_size], language) for i in range(0, len(chosen), self.batch_size)
        ]

    @torch.inference_mode()
    def __call__(self, sentences: Sequence[str], language: str) -> np.ndarray:
        model = self.model
        was_training = model.training
        model.eval()
        order = np.argsort([-len(s) for s in sentences], kind="stable")
        vectors = None
        starts = range(0, len(sentences), self.batch_size)
        for start in tqdm(
            starts, desc=f"encoding {language or ''}".rstrip(), disable=not self.show_progress, unit="batch"
        ):
            rows = order[start : start + self.batch_size]
            inputs = self._tokenize([sentences[i] for i in rows], language)
            batch = self._runner(language, inputs, sentences)(*inputs)
            if vectors is None:
                vectors = np.empty((len(sentences), batch.shape[1]), dtype=np.float32)
            vectors[rows] = batch
        model.train(was_training)
        return vectors if vectors is not None else np.empty((0, self._dimension()), dtype=np.float32)

    def _dimension(self) -> int:
        model = self.model
        if isinstance(model, SentenceTransformer):
            return model.get_sentence_embedding_dimension()
        return model.sentence_embedding_dimension


class Evaluator(SentenceEvaluator):
    """Base of the evaluators: ``evaluator(model, tokenizers=..., backend=...) -> {metric: value}``, and a
    sentence-transformers evaluator, so ``SentenceTransformerTrainer(evaluator=...)`` runs it during training (its
    ``primary_metric`` picks the best checkpoint) and a trained model's card lists its figures.

    ``model`` is anything `as_encoder` takes; subclasses implement `evaluate` on the encoder, prefix
    their metric names with ``self.name`` and set ``primary_metric`` (the unprefixed metric that sums them up).
    """

    name: str = ""
    primary_metric_name: str = "accuracy"

    def __call__(
        self,
        model: object,
        output_path: str | None = None,
        epoch: int = -1,
        steps: int = -1,
        *,
        tokenizers=None,
        batch_size: int = 64,
        max_length: int = 128,
        backend: str = "torch",
    ) -> dict[str, float]:
        if output_path is not None and not isinstance(output_path, (str, os.PathLike)):
            raise TypeError(f"output_path must be a folder, not a {type(output_path).__name__}: pass tokenizers=...")
        metrics = self.evaluate(as_encoder(model, tokenizers, batch_size, max_length, backend=backend))
        if isinstance(model, SentenceTransformer):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    @property
    def primary_metric(self) -> str:
        return f"{self.name}_{self.primary_metric_name}" if self.name else self.primary_metric_name

    @primary_metric.setter
    def primary_metric(self, value: str | None) -> None:
        """sentence-transformers sets it when it prefixes names; the evaluators prefix their own."""

    @property
    def greater_is_better(self) -> bool:
        return True

    @greater_is_better.setter
    def greater_is_better(self, value: bool) -> None:
        """Every hf_xlsr metric is better higher."""

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        raise NotImplementedError

    def prefixed(self, metrics: dict[str, float]) -> dict[str, float]:
        prefix = f"{self.name}_" if self.name else ""
        return {f"{prefix}{key}": value for key, value in metrics.items()}


def language_routes(model: SentenceTransformer) -> list[str]:
    """The routes of a ``SentenceTransformer`` whose first module is a ``Router`` (an hf_xlsr dual-encoder export
    routes by language code); [] for a plain one."""
    first = model[0] if len(model) else None
    return list(first.sub_modules) if isinstance(first, Router) else []


def model_languages(model: object) -> list[str]:
    """The languages ``model`` encodes each in its own way: the routes of an export, the languages of an hf_xlsr
    model with one encoder per language or per-language heads; [] when every language shares one encoder."""
    if isinstance(model, SentenceTransformer):
        return language_routes(model)
    from ..export import routes

    return list(routes(model)) if hasattr(model, "get_sentence_embeddings") else []


class CachedEncoder:
    """An `Encoder` that encodes each sentence of each language once, whatever asks for it: the tasks of one
    evaluation run share their sentences (retrieval with and without PCR, held-out verses in mining and the
    probe)."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.vectors: dict[tuple[str, str], np.ndarray] = {}

    def __call__(self, sentences: Sequence[str], language: str) -> np.ndarray:
        if not sentences:
            return self.encoder([], language)  # an empty (0, dimension) array, as the encoder gives it
        new = list(dict.fromkeys(s for s in sentences if (language, s) not in self.vectors))
        if new:
            self.vectors.update(zip(((language, s) for s in new), self.encoder(new, language), strict=True))
        return np.stack([self.vectors[(language, s)] for s in sentences])


@contextmanager
def without_progress(encoder: Encoder) -> Iterator[None]:
    """Within the block, ``encoder`` (what `as_encoder` makes, or a `CachedEncoder` around it) draws no progress bar
    of its own: for a task that shows one bar for all its work."""
    parts, stack = [], [encoder]
    while stack:
        part = stack.pop()
        if part is None:
            continue
        stack += [getattr(part, "encoder", None), *getattr(part, "encoders", {}).values()]
        if hasattr(part, "show_progress"):
            parts.append((part, part.show_progress))
            part.show_progress = False
    try:
        yield
    finally:
        for part, shown in parts:
            part.show_progress = shown


def as_encoder(
    model: object,
    tokenizers: Mapping[str, PreTrainedTokenizerBase] | None = None,
    batch_size: int = 64,
    max_length: int = 128,
    show_progress: bool = False,
    backend: str = "torch",
) -> Encoder:
    """Wrap ``model`` as an `Encoder` (see the module docstring for what ``model`` may be) that runs on
    ``backend`` (`backends`; a ``SentenceTransformer`` on ``"torch"`` encodes with its own
    ``encode``)."""
    check_backend(backend)
    if isinstance(model, SentenceTransformer) and backend == "torch":
        routed = language_routes(model)

        def encode(sentences: Sequence[str], language: str) -> np.ndarray:
            if routed and language not in routed:
                raise KeyError(f"the model routes languages {routed}, not {language!r}")
            return model.encode(
                list(sentences),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=encode.show_progress,
                **({"task": language} if routed else {}),
            ).astype(np.float32)

        encode.show_progress, encode.model = show_progress, model
        return encode
    if isinstance(model, Mapping):
        encoders = {
            language: as_encoder(m, tokenizers, batch_size, max_length, show_progress, backend)
            for language, m in model.items()
        }

        def by_language(sentences: Sequence[str], language: str) -> np.ndarray:
            if language not in encoders:
                raise KeyError(f"no model for language {language!r} (have {sorted(encoders)})")
            return encoders[language](sentences, language)

        by_language.encoders = encoders
        return by_language
    if isinstance(model, SentenceTransformer):
        return ModelEncoder(model, None, batch_size, max_length, show_progress, backend)
    if hasattr(model, "get_sentence_embeddings"):
        if tokenizers is None:
            raise ValueError(
                "an hf_xlsr model needs its tokenizers to encode text: pass tokenizers=tokenizer, or "
                "{language: tokenizer} for one per language (hf_xlsr.load_tokenizers(path))"
            )
        return ModelEncoder(model, tokenizers, batch_size, max_length, show_progress, backend)
    if callable(model):
        return model
    raise TypeError(f"cannot encode text with a {type(model).__name__}")


def truncated_count(encode: Encoder, batches: Iterable[list[str]], language: str | None) -> tuple[int, int]:
    """``(lines, limit)``: how many of the sentences in ``batches`` ``encode`` (from `as_encoder`) cuts to its
    ``limit`` of tokens, special tokens included; ``(0, 0)`` where the encoder's tokenizer is not known."""
    if hasattr(encode, "encoders"):  # one encoder per language
        encode = encode.encoders.get(language)
    model = getattr(encode, "model", None)
    try:
        if isinstance(model, SentenceTransformer):
            tokenizer, limit = model.tokenizer, model.max_seq_length
        elif isinstance(encode, ModelEncoder):
            tokenizer = tokenizer_for(encode.tokenizers, language)
            limit = min(encode.max_length, model.max_tokens(language) or encode.max_length)
        else:
            return 0, 0
    except (AttributeError, KeyError, TypeError):  # a routed export has no one tokenizer
        return 0, 0
    if tokenizer is None or not limit:
        return 0, 0
    lengths = (len(ids) for batch in batches for ids in tokenizer(batch, truncation=False, verbose=False)["input_ids"])
    cut = sum(length > limit for length in lengths)
    return cut, limit
