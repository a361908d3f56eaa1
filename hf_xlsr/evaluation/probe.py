# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Linear probe on frozen sentence embeddings (SentEval / MLDoc style), with zero-shot cross-lingual transfer.

A logistic-regression classifier is trained on the embeddings of one language and tested on the embeddings of
other languages, unchanged: how well a classifier transfers measures how language-agnostic the space is. Features
are standardised first (mean and scale of the training language's embeddings): sentence embeddings often share
one dominant direction (every pair at cosine 0.97), and on raw unit vectors a regularised classifier then sees
no usable differences and predicts the majority class.
Offline, `LinearProbeEvaluator.from_bible` builds an MLDoc-like task: the genre of a verse's book (law,
history, poetry, prophets, gospels, letters), trained on the training books, tested on the held-out books.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .encoders import Encoder, Evaluator


class LinearProbeEvaluator(Evaluator):
    """Accuracy of a logistic-regression probe trained in ``train_language``, on each language of ``test_sets``."""

    def __init__(
        self,
        train_texts: Sequence[str],
        train_labels: Sequence[str | int],
        train_language: str,
        test_sets: Mapping[str, tuple[Sequence[str], Sequence[str | int]]],
        name: str = "probe",
        regularization: float = 1.0,
        max_iter: int = 2000,
    ):
        if len(train_texts) != len(train_labels):
            raise ValueError(f"{len(train_texts)} training texts but {len(train_labels)} labels")
        self.train_texts, self.train_labels, self.train_language = (
            list(train_texts),
            list(train_labels),
            train_language,
        )
        self.test_sets = {language: (list(t), list(y)) for language, (t, y) in test_sets.items()}
        self.name, self.regularization, self.max_iter = name, regularization, max_iter
        zero_shot = [language for language in self.test_sets if language != train_language]
        self.primary_metric_name = f"{train_language}2{(zero_shot or [train_language])[0]}_accuracy"

    @classmethod
    def from_bible(
        cls,
        train_language: str = "en",
        test_languages: Sequence[str] = ("en", "fr"),
        max_train: int = 3000,
        max_test: int = 1000,
        seed: int = 0,
        **kwargs,
    ) -> LinearProbeEvaluator:
        """Book genre of Bible verses: train on ``train_language`` verses of the training books, test on the
        held-out books in each of ``test_languages`` (the same verses in every language)."""
        from ..data.corpora import load_bible

        languages = list(dict.fromkeys([train_language, *test_languages]))
        train = load_bible(languages, split="train").shuffle(seed=seed)
        test = load_bible(languages, split="heldout").shuffle(seed=seed)
        train = train.select(range(min(max_train, len(train))))
        test = test.select(range(min(max_test, len(test))))
        test_sets = {language: (test[language], test["group"]) for language in test_languages}
        return cls(train[train_language], train["group"], train_language, test_sets, **kwargs)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        classifier = make_pipeline(StandardScaler(), LogisticRegression(C=self.regularization, max_iter=self.max_iter))
        classifier.fit(encoder(self.train_texts, self.train_language), self.train_labels)
        results = {}
        for language, (texts, labels) in self.test_sets.items():
            predictions = classifier.predict(encoder(texts, language))
            results[f"{self.train_language}2{language}_accuracy"] = float(np.mean(predictions == np.asarray(labels)))
        return self.prefixed(results)
