# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Semantic textual similarity: Spearman correlation between cosine similarity and gold scores.

A dataset may hold several subsets (STS12 has five, for instance). Following Gao et al. (2021), as the MoCo-BERT
paper's Tables 3 and 8 do, two aggregations are reported: ``all`` is the correlation over the concatenation of
every subset, ``wmean`` the mean of the per-subset correlations weighted by subset size.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
from scipy.stats import spearmanr

from ..data.bitext import BitextFormatError, check_columns, read_tsv
from .encoders import Encoder, Evaluator


class STSEvaluator(Evaluator):
    """Spearman's rho between ``cos(u, v)`` and gold scores, overall (``all``) and as a weighted mean (``wmean``).

    ``language1`` / ``language2`` name the languages of the two columns, which matters for per-language encoders.
    """

    primary_metric_name = "spearman_all"

    def __init__(
        self,
        sentences1: Sequence[str],
        sentences2: Sequence[str],
        scores: Sequence[float],
        subsets: Sequence[str] | None = None,
        language1: str | None = None,
        language2: str | None = None,
        name: str = "sts",
    ):
        if not len(sentences1) == len(sentences2) == len(scores):
            raise ValueError(
                f"sentences1, sentences2 and scores differ in length: "
                f"{len(sentences1)}, {len(sentences2)}, {len(scores)}"
            )
        self.sentences1, self.sentences2 = list(sentences1), list(sentences2)
        self.scores = np.asarray(scores, dtype=np.float64)
        self.subsets = list(subsets) if subsets is not None else ["all"] * len(self.scores)
        self.language1, self.language2 = language1, language2 or language1
        self.name = name

    @classmethod
    def from_dataset(
        cls,
        dataset: datasets.Dataset,
        columns: Sequence[str] = ("sentence1", "sentence2", "score"),
        subset_column: str | None = None,
        **kwargs,
    ) -> STSEvaluator:
        names = [*columns, subset_column] if subset_column else list(columns)
        dataset = check_columns(dataset, names, "STS dataset")
        subsets = dataset[subset_column] if subset_column else None
        return cls(dataset[columns[0]], dataset[columns[1]], dataset[columns[2]], subsets, **kwargs)

    @classmethod
    def from_tsv(cls, path: str | os.PathLike, **kwargs) -> STSEvaluator:
        """A headerless file of ``sentence1 <tab> sentence2 <tab> score [<tab> subset]`` lines."""
        path = Path(path)
        with open(path, "rb") as handle:
            first = handle.readline().decode("utf-8", errors="replace").rstrip("\r\n")
        columns = ["sentence1", "sentence2", "score"] + (["subset"] if first.count("\t") == 3 else [])
        dataset = read_tsv(path, columns)
        for number, value in enumerate(dataset["score"], start=1):
            try:
                float(value)
            except ValueError:
                raise BitextFormatError(f"{path}:{number}: score {value!r} is not a number") from None
        dataset = dataset.map(lambda row: {"score": float(row["score"])})
        return cls.from_dataset(dataset, subset_column="subset" if "subset" in columns else None, **kwargs)

    @classmethod
    def from_hub(cls, dataset_id: str, split: str = "test", **kwargs) -> STSEvaluator:
        """A Hub STS dataset with ``sentence1`` / ``sentence2`` / ``score`` columns (e.g. mteb/stsbenchmark-sts)."""
        return cls.from_dataset(datasets.load_dataset(dataset_id, split=split), **kwargs)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        if self.language1 == self.language2:  # encode each distinct text once (STS data repeats sentences)
            texts = list(dict.fromkeys(self.sentences1 + self.sentences2))
            vectors = dict(zip(texts, encoder(texts, self.language1), strict=True))
            u = np.stack([vectors[text] for text in self.sentences1])
            v = np.stack([vectors[text] for text in self.sentences2])
        else:
            u = encoder(self.sentences1, self.language1)
            v = encoder(self.sentences2, self.language2)
        cosine = np.sum(u * v, axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        results = {"spearman_all": float(spearmanr(cosine, self.scores).statistic)}
        subsets = np.asarray(self.subsets)
        per_subset = {}
        for subset in dict.fromkeys(self.subsets):
            rows = subsets == subset
            per_subset[subset] = (float(spearmanr(cosine[rows], self.scores[rows]).statistic), int(rows.sum()))
        total = sum(n for _, n in per_subset.values())
        results["spearman_wmean"] = sum(rho * n for rho, n in per_subset.values()) / total
        if len(per_subset) > 1:
            results.update({f"{subset}_spearman": rho for subset, (rho, _) in per_subset.items()})
        return self.prefixed(results)


def load_lee_similarity() -> datasets.Dataset:
    """The Lee et al. (2005) news corpus of gensim's test data: 50 documents, 1,225 pairs rated for similarity.

    Columns ``sentence1``, ``sentence2`` (the two documents) and ``score`` (mean human rating, 0..1). It is the
    only human-scored similarity data that ships offline (install ``hf_xlsr[corpora]``).
    """
    from ..references import package_file

    lee = package_file("gensim", "test/test_data/lee.cor")
    documents = lee.read_text(encoding="latin-1").splitlines()  # the file is Latin-1 (its pound signs are 0xa3)
    matrix = np.loadtxt(package_file("gensim", "test/test_data/similarities0-1.txt"))
    if len(documents) != len(matrix):
        raise ValueError(f"lee.cor has {len(documents)} documents but the similarity matrix {len(matrix)} rows")
    rows, columns = np.triu_indices(len(documents), k=1)
    return datasets.Dataset.from_dict(
        {
            "sentence1": [documents[i] for i in rows],
            "sentence2": [documents[j] for j in columns],
            "score": matrix[rows, columns].tolist(),
        }
    )
