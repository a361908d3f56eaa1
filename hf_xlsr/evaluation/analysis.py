# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""How language-agnostic is the space? Language bias of retrieval, and a 2-D picture of parallel sentences.

``language_bias`` is the CMLM paper's Figure 2: pool the same sentences in several languages, retrieve each
sentence's nearest neighbours from the pool (itself excluded) and count which languages they come from. A space
with a strong self-language bias retrieves mostly the query's own language; a language-agnostic one spreads
evenly. Principal-component removal per language (``pcr``) reduces the bias.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .encoders import as_encoder
from .mining import knn
from .pcr import principal_components, remove_components

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def embed_languages(
    model: object,
    sentences: Mapping[str, Sequence[str]],
    tokenizers: Mapping[str, PreTrainedTokenizerBase] | None = None,
    pcr: int = 0,
) -> dict[str, np.ndarray]:
    """Embeddings of each language's sentences, with its top ``pcr`` principal components removed."""
    encoder = as_encoder(model, tokenizers)
    embeddings = {language: encoder(list(texts), language) for language, texts in sentences.items()}
    if pcr:
        embeddings = {lang: remove_components(e, principal_components(e, pcr)) for lang, e in embeddings.items()}
    return embeddings


def language_bias(
    model: object,
    sentences: Mapping[str, Sequence[str]],
    k: int = 10,
    tokenizers: Mapping[str, PreTrainedTokenizerBase] | None = None,
    pcr: int = 0,
) -> dict[str, dict[str, float]]:
    """``bias[query_language][retrieved_language]``: share of the ``k`` nearest neighbours in each language."""
    embeddings = embed_languages(model, sentences, tokenizers, pcr)
    languages = list(embeddings)
    pool = np.concatenate([embeddings[lang] for lang in languages])
    owner = np.concatenate([np.full(len(embeddings[lang]), i) for i, lang in enumerate(languages)])
    _, neighbours = knn(pool, pool, k + 1, index="flat")
    bias = {}
    for i, language in enumerate(languages):
        rows = np.flatnonzero(owner == i)
        found = [n for row in rows for n in [m for m in neighbours[row] if m != row][:k]]
        counts = np.bincount(owner[np.asarray(found)], minlength=len(languages))
        bias[language] = {lang: float(c) / len(found) for lang, c in zip(languages, counts, strict=True)}
    return bias


def plot_language_bias(bias: Mapping[str, Mapping[str, float]], path: str | os.PathLike, title: str = "") -> None:
    """Stacked bars, one per query language, of the languages its neighbours come from (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queries = list(bias)
    retrieved = list(next(iter(bias.values())))
    figure, axis = plt.subplots(figsize=(1.4 * len(queries) + 2, 3.5))
    bottom = np.zeros(len(queries))
    for language in retrieved:
        heights = np.array([bias[q][language] for q in queries])
        axis.bar(queries, heights, bottom=bottom, label=language)
        bottom += heights
    axis.set_xlabel("query language")
    axis.set_ylabel("share of retrieved neighbours")
    axis.set_ylim(0, 1)
    axis.legend(title="retrieved", bbox_to_anchor=(1.02, 1), loc="upper left")
    axis.set_title(title)
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)


def plot_retrieval_matrix(
    metrics: Mapping[str, float], languages: Sequence[str], path: str | os.PathLike, name: str = "retrieval"
) -> None:
    """Heat map of held-out retrieval accuracy between every two languages: row = query language, column = the
    language searched (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .retrieval import accuracy_matrix

    matrix = 100 * accuracy_matrix(metrics, languages, name)
    size = 0.45 * len(languages) + 2.5
    figure, axis = plt.subplots(figsize=(size + 1, size))
    image = axis.imshow(matrix, cmap="viridis", vmin=np.nanmin(matrix), vmax=100)
    axis.set_xticks(range(len(languages)), languages)
    axis.set_yticks(range(len(languages)), languages)
    axis.set_xlabel("searched language")
    axis.set_ylabel("query language")
    if len(languages) <= 24:
        for i in range(len(languages)):
            for j in range(len(languages)):
                if i != j:
                    axis.text(j, i, f"{matrix[i, j]:.0f}", ha="center", va="center", fontsize=7, color="white")
    figure.colorbar(image, ax=axis, label="top-1 accuracy (%)")
    axis.set_title("held-out retrieval")
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)


def plot_parallel_sentences(
    model: object,
    sentences: Mapping[str, Sequence[str]],
    path: str | os.PathLike,
    tokenizers: Mapping[str, PreTrainedTokenizerBase] | None = None,
    method: str = "pca",
    title: str = "",
) -> np.ndarray:
    """2-D projection (PCA or t-SNE) of parallel sentences, a colour per language and a line joining each
    sentence's translations (the MoCo-BERT paper's Figure 3). Returns the 2-D points, languages stacked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    if len({len(texts) for texts in sentences.values()}) != 1:
        raise ValueError("parallel sentences need the same number of sentences in every language")
    embeddings = embed_languages(model, sentences, tokenizers)
    languages = list(embeddings)
    stacked = np.concatenate([embeddings[lang] for lang in languages])
    if method == "pca":
        points = PCA(n_components=2, random_state=0).fit_transform(stacked)
    elif method == "tsne":
        points = TSNE(n_components=2, perplexity=min(30, len(stacked) - 1), random_state=0).fit_transform(stacked)
    else:
        raise ValueError(f"method must be 'pca' or 'tsne', got {method!r}")
    n = len(next(iter(embeddings.values())))
    figure, axis = plt.subplots(figsize=(6, 5))
    for i in range(n):
        axis.plot(points[i::n, 0], points[i::n, 1], color="lightgray", linewidth=0.8, zorder=1)
    for j, language in enumerate(languages):
        axis.scatter(points[j * n : (j + 1) * n, 0], points[j * n : (j + 1) * n, 1], label=language, s=18, zorder=2)
    axis.legend()
    axis.set_title(title or f"{method.upper()} of {n} parallel sentences")
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)
    return points


def save_figure(figure, path: str | os.PathLike) -> None:
    """Write a figure, making its folder first (and only then: a run that fails early leaves no empty folder)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
