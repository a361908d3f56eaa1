"""Tatoeba-style parallel-sentence retrieval: for each sentence, is its translation the nearest neighbour?

Nearest neighbours are found with faiss by inner product of L2-normalised vectors (cosine similarity), in both
directions, as in the MoCo-BERT paper's Table 1.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import datasets
import faiss
import numpy as np

from ..data.bitext import unique_pairs
from .encoders import Encoder, Evaluator
from .pcr import principal_components, remove_components

logger = logging.getLogger(__name__)


def nearest_neighbours(queries: np.ndarray, corpus: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine k-NN: ``(similarities, indices)``, each ``(len(queries), k)``."""
    queries = np.ascontiguousarray(queries, dtype=np.float32).copy()
    corpus = np.ascontiguousarray(corpus, dtype=np.float32).copy()
    faiss.normalize_L2(queries)
    faiss.normalize_L2(corpus)
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return index.search(queries, k)


def retrieval_accuracy(embeddings_x: np.ndarray, embeddings_y: np.ndarray) -> tuple[float, float]:
    """Accuracy of x -> y and of y -> x retrieval; row i of ``embeddings_x`` translates row i of ``embeddings_y``."""
    if len(embeddings_x) != len(embeddings_y):
        raise ValueError(f"need as many x as y vectors, got {len(embeddings_x)} and {len(embeddings_y)}")
    gold = np.arange(len(embeddings_x))
    _, x_to_y = nearest_neighbours(embeddings_x, embeddings_y)
    _, y_to_x = nearest_neighbours(embeddings_y, embeddings_x)
    return float(np.mean(x_to_y[:, 0] == gold)), float(np.mean(y_to_x[:, 0] == gold))


class RetrievalEvaluator(Evaluator):
    """Retrieval accuracy in both directions on fixed sentence pairs; usable standalone and by ``XlsrTrainer``.

    ``evaluator(model)`` takes anything :func:`~hf_xlsr.evaluation.encoders.as_encoder` takes (an hf_xlsr model
    needs ``tokenizers=``) and returns ``{name}_{x}2{y}_accuracy``, ``{name}_{y}2{x}_accuracy`` and their mean
    ``{name}_accuracy``. Pairs whose sentence repeats an earlier one are dropped unless ``deduplicate=False``:
    a repeated verse has no single right answer. With ``pcr=n``, the top ``n`` principal components of each
    language's embeddings are removed before scoring (CMLM paper, Section 5.2; fitted on the evaluated sentences,
    as the paper does on Tatoeba).
    """

    def __init__(
        self,
        sentences_x: Sequence[str],
        sentences_y: Sequence[str],
        language_x: str = "x",
        language_y: str = "y",
        name: str = "retrieval",
        deduplicate: bool = True,
        pcr: int = 0,
    ):
        if len(sentences_x) != len(sentences_y):
            raise ValueError(f"need as many x as y sentences, got {len(sentences_x)} and {len(sentences_y)}")
        if deduplicate:
            pairs = datasets.Dataset.from_dict({"x": list(sentences_x), "y": list(sentences_y)})
            pairs = unique_pairs(pairs, ["x", "y"])
            sentences_x, sentences_y = pairs["x"], pairs["y"]
        if len(sentences_x) < 2:
            raise ValueError("retrieval needs at least two sentence pairs")
        self.sentences_x, self.sentences_y = list(sentences_x), list(sentences_y)
        self.language_x, self.language_y, self.name, self.pcr = language_x, language_y, name, pcr

    @classmethod
    def from_dataset(
        cls,
        dataset: datasets.Dataset,
        columns: Sequence[str],
        max_pairs: int | None = None,
        seed: int = 0,
        **kwargs,
    ) -> RetrievalEvaluator:
        """Evaluate on ``columns`` (x, y) of ``dataset``: at most ``max_pairs`` unique pairs drawn with ``seed``."""
        x, y = columns
        dataset = unique_pairs(dataset, [x, y])
        if max_pairs is not None and len(dataset) > max_pairs:
            dataset = dataset.shuffle(seed=seed).select(range(max_pairs))
        kwargs.setdefault("language_x", x)
        kwargs.setdefault("language_y", y)
        return cls(dataset[x], dataset[y], deduplicate=False, **kwargs)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        embeddings_x = encoder(self.sentences_x, self.language_x)
        embeddings_y = encoder(self.sentences_y, self.language_y)
        if self.pcr:
            embeddings_x = remove_components(embeddings_x, principal_components(embeddings_x, self.pcr))
            embeddings_y = remove_components(embeddings_y, principal_components(embeddings_y, self.pcr))
        x_to_y, y_to_x = retrieval_accuracy(embeddings_x, embeddings_y)
        return self.prefixed(
            {
                f"{self.language_x}2{self.language_y}_accuracy": x_to_y,
                f"{self.language_y}2{self.language_x}_accuracy": y_to_x,
                "accuracy": (x_to_y + y_to_x) / 2,
            }
        )
