# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Tatoeba-style parallel-sentence retrieval: for each sentence, is its translation the nearest neighbour?

Nearest neighbours are found with faiss by inner product of L2-normalised vectors (cosine similarity), in both
directions, as in the MoCo-BERT paper's Table 1.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import datasets
import faiss
import numpy as np

from ..data.bitext import unique_pairs
from .encoders import Encoder, Evaluator
from .pcr import principal_components, remove_components

logger = logging.getLogger(__name__)

# The held-out sample is a fixed rule of the data and its size, never the training seed: the same 1,000 pairs score
# a model in training, in `hf-xlsr evaluate` and in its model card (`--seed` / `eval_seed` draw another).
HELDOUT_SEED = 0


def nearest_neighbours(queries: np.ndarray, corpus: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine k-NN: ``(similarities, indices)``, each ``(len(queries), k)``."""
    queries = np.ascontiguousarray(queries, dtype=np.float32).copy()
    corpus = np.ascontiguousarray(corpus, dtype=np.float32).copy()
    faiss.normalize_L2(queries)
    faiss.normalize_L2(corpus)
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return index.search(queries, k)


def retrieval_accuracy(source_embeddings: np.ndarray, target_embeddings: np.ndarray) -> tuple[float, float]:
    """Accuracy of source -> target and of target -> source retrieval; row i of ``source_embeddings`` translates
    row i of ``target_embeddings``."""
    if len(source_embeddings) != len(target_embeddings):
        raise ValueError(
            f"need as many source as target vectors, got {len(source_embeddings)} and {len(target_embeddings)}"
        )
    gold = np.arange(len(source_embeddings))
    _, x_to_y = nearest_neighbours(source_embeddings, target_embeddings)
    _, y_to_x = nearest_neighbours(target_embeddings, source_embeddings)
    return float(np.mean(x_to_y[:, 0] == gold)), float(np.mean(y_to_x[:, 0] == gold))


class RetrievalEvaluator(Evaluator):
    """Retrieval accuracy between the languages of a multi-way set (the same meanings in every language), usable
    standalone and by ``XlsrTrainer``: each language is encoded once, and every ordered pair of languages is scored
    from those vectors, ``{name}_{a}2{b}_accuracy``, with their mean ``{name}_accuracy``. Two languages are the
    Tatoeba-style case; with more, ``{name}_trained_accuracy`` averages the pairs a model was trained on
    (``trained_pairs``; English-centric by default: the first language with each other) and
    ``{name}_zero_shot_accuracy`` the others (de-fr, es-it, ... never trained directly).

    ``evaluator(model)`` takes anything `as_encoder` takes (an hf_xlsr model
    needs ``tokenizers=``). Rows whose sentence repeats an earlier one in any language are dropped unless
    ``deduplicate=False``: a repeated sentence has no single right answer. With ``pcr=n``, the top ``n`` principal
    components of each language's embeddings are removed before scoring (CMLM paper, Section 5.2; fitted on the
    evaluated sentences, as the paper does on Tatoeba).
    """

    def __init__(
        self,
        sentences: Mapping[str, Sequence[str]],
        name: str = "retrieval",
        deduplicate: bool = True,
        pcr: int = 0,
        trained_pairs: Sequence[Sequence[str]] | None = None,
    ):
        languages = list(sentences)
        if len(languages) < 2:
            raise ValueError(f"retrieval needs sentences in at least two languages, got {languages}")
        lengths = {len(texts) for texts in sentences.values()}
        if len(lengths) != 1:
            raise ValueError(f"every language needs as many sentences (the same meanings), got {sorted(lengths)}")
        table = {language: list(texts) for language, texts in sentences.items()}
        if deduplicate:
            table = unique_pairs(datasets.Dataset.from_dict(table), languages).to_dict()
        if len(table[languages[0]]) < 2:
            raise ValueError("retrieval needs at least two sentences per language")
        self.sentences, self.languages, self.name, self.pcr = table, languages, name, pcr
        pivot = languages[0]
        pairs = trained_pairs if trained_pairs is not None else [(pivot, other) for other in languages[1:]]
        self.trained = {tuple(pair) for pair in pairs} | {tuple(pair)[::-1] for pair in pairs}
        self.sample = f"{len(table[pivot])} sentences in each of {len(languages)} languages"

    @classmethod
    def from_dataset(
        cls,
        dataset: datasets.Dataset,
        columns: Sequence[str],
        max_pairs: int | None = None,
        seed: int = HELDOUT_SEED,
        **kwargs,
    ) -> RetrievalEvaluator:
        """Evaluate on ``columns`` (one per language) of ``dataset``: at most ``max_pairs`` unique rows drawn with
        ``seed``."""
        columns = list(columns)
        dataset = unique_pairs(dataset, columns)
        drawn = max_pairs is not None and len(dataset) > max_pairs
        if drawn:
            dataset = dataset.shuffle(seed=seed).select(range(max_pairs))
        evaluator = cls({column: dataset[column] for column in columns}, deduplicate=False, **kwargs)
        evaluator.sample = f"{len(dataset)} unique {'pairs' if len(columns) == 2 else 'rows'}" + (
            f", drawn with seed {seed}" if drawn else ""
        )
        return evaluator

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        vectors = {}
        for language in self.languages:
            vectors[language] = encoder(self.sentences[language], language)
            if self.pcr:
                vectors[language] = remove_components(
                    vectors[language], principal_components(vectors[language], self.pcr)
                )
        metrics, trained, zero_shot = {}, [], []
        for i, a in enumerate(self.languages):
            for b in self.languages[i + 1 :]:
                forward, backward = retrieval_accuracy(vectors[a], vectors[b])
                metrics[f"{a}2{b}_accuracy"], metrics[f"{b}2{a}_accuracy"] = forward, backward
                (trained if (a, b) in self.trained else zero_shot).extend([forward, backward])
        metrics["accuracy"] = float(np.mean(trained + zero_shot))
        if len(self.languages) > 2:
            metrics["trained_accuracy"] = float(np.mean(trained)) if trained else float("nan")
            metrics["zero_shot_accuracy"] = float(np.mean(zero_shot)) if zero_shot else float("nan")
        return self.prefixed(metrics)


def accuracy_matrix(metrics: Mapping[str, float], languages: Sequence[str], name: str = "retrieval") -> np.ndarray:
    """``M[i, j]``: accuracy of retrieving language j's sentence for a language i query (NaN on the diagonal)."""
    matrix = np.full((len(languages), len(languages)), np.nan)
    for i, a in enumerate(languages):
        for j, b in enumerate(languages):
            matrix[i, j] = metrics.get(f"{name}_{a}2{b}_accuracy", np.nan)
    return matrix
