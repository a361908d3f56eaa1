# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""BUCC-style evaluation of mining: known pairs hidden among unpaired sentences (`hide_pairs`), the threshold chosen
on a development split and F1 measured on a test split (`MiningEvaluator`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..encoders import Encoder, Evaluator
from .margin import MARGINS, MinedPairs, best_threshold, mine, precision_recall_f1


@dataclass
class MiningSplit:
    """Source and target sentences and the gold pairs ``(source index, target index)`` among them."""

    source: Sequence[str]
    target: Sequence[str]
    gold: Sequence[tuple[int, int]]


def hide_pairs(
    source: Sequence[str], target: Sequence[str], n_gold: int, n_unpaired: int, seed: int = 0
) -> MiningSplit:
    """A mining problem with a known answer: ``n_gold`` parallel pairs hidden among ``n_unpaired`` sentences on
    each side whose translation is absent from the other side. ``source[i]`` translates ``target[i]``."""
    if len(source) != len(target) or len(source) < n_gold + 2 * n_unpaired:
        raise ValueError(f"need {n_gold + 2 * n_unpaired} parallel pairs, got {len(source)}")
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(source))
    gold, source_only, target_only = np.split(rows[: n_gold + 2 * n_unpaired], [n_gold, n_gold + n_unpaired])
    source_rows = rng.permutation(np.concatenate([gold, source_only]))
    target_rows = rng.permutation(np.concatenate([gold, target_only]))
    source_position = {int(row): i for i, row in enumerate(source_rows)}
    target_position = {int(row): i for i, row in enumerate(target_rows)}
    return MiningSplit(
        [source[i] for i in source_rows],
        [target[i] for i in target_rows],
        sorted((source_position[int(row)], target_position[int(row)]) for row in gold),
    )


class MiningEvaluator(Evaluator):
    """BUCC-style mining: choose the threshold on ``dev``, report precision / recall / F1 on ``test``."""

    primary_metric_name = "f1"

    def __init__(
        self,
        dev: MiningSplit,
        test: MiningSplit,
        source_language: str | None = None,
        target_language: str | None = None,
        k: int = 4,
        margin: str = "ratio",
        mode: str = "max",
        index: str = "auto",
        name: str = "mining",
    ):
        if margin not in MARGINS:
            raise ValueError(f"margin must be one of {MARGINS}, got {margin!r}")
        self.dev, self.test = dev, test
        self.source_language, self.target_language = source_language, target_language
        self.k, self.margin, self.mode, self.index, self.name = k, margin, mode, index, name

    @classmethod
    def from_bible(
        cls,
        languages: Sequence[str] = ("en", "fr"),
        n_gold: int = 200,
        n_unpaired: int = 800,
        seed: int = 0,
        translations: dict[str, str] | None = None,
        **kwargs,
    ) -> MiningEvaluator:
        """Held-out Bible verses hidden among unpaired ones: dev from the held-out books of the Old Testament,
        test from those of the New, so the threshold is never chosen on the test gold."""
        from ...data.bitext import unique_pairs
        from ...data.corpora import load_bible

        x, y = languages
        # the held-out pairs retrieval reads too, which logs what it dropped
        verses = unique_pairs(load_bible([x, y], translations, split="heldout"), [x, y])
        splits = []
        for testament in (lambda book: book < 40, lambda book: book >= 40):
            part = verses.filter(lambda row, keep=testament: keep(row["book"]))
            splits.append(hide_pairs(part[x], part[y], n_gold, n_unpaired, seed))
        return cls(*splits, source_language=x, target_language=y, **kwargs)

    def _mine(self, encoder: Encoder, split: MiningSplit) -> MinedPairs:
        x = encoder(list(split.source), self.source_language)
        y = encoder(list(split.target), self.target_language)
        return mine(x, y, self.k, self.margin, self.mode, self.index)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        threshold, dev_f1 = best_threshold(self._mine(encoder, self.dev), set(map(tuple, self.dev.gold)))
        test = precision_recall_f1(self._mine(encoder, self.test).above(threshold), set(map(tuple, self.test.gold)))
        return self.prefixed({**test, "threshold": threshold, "dev_f1": dev_f1})
