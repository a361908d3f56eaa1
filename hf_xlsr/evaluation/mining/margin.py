# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Margin-based bitext mining (Artetxe and Schwenk, 2019): the score of a candidate pair is a margin between its cosine
and the mean cosine of each side's k nearest neighbours in the other language (MoCo-BERT paper, Eq. 4)::

    sim(x, y) = margin(cos(x, y), sum_{z in NN_k(x)} cos(x, z) / 2k + sum_{z in NN_k(y)} cos(y, z) / 2k)

with ``margin(a, b) = a / b`` (ratio) or ``a - b`` (distance). Candidates come from the k nearest neighbours in one or
both directions (``forward``, ``backward``, ``max``: the union, ``intersect``: mutual best), are sorted by score and
paired greedily one-to-one; pairs above a threshold are kept (BUCC: chosen on a development split, F1 on a test one).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from .index import IVF_THRESHOLD, index_spec
from .search import knn, train_index
from .vectors import side_centre

logger = logging.getLogger(__name__)

MARGINS = ("ratio", "distance")
MODES = ("forward", "backward", "max", "intersect")
# The customary cut of the ratio margin for mining without gold pairs (LASER's, CCMatrix's): pairs below it are
# mostly not translations. ``hf-xlsr mine`` keeps pairs at or above it unless told otherwise.
RATIO_THRESHOLD = 1.06


def apply_margin(cosine: np.ndarray, neighbourhood: np.ndarray, margin: str) -> np.ndarray:
    """``margin(cos(x, y), (mean_k cos(x, .) + mean_k cos(y, .)) / 2)``; ``neighbourhood`` is the second term."""
    if margin == "ratio":
        return cosine / neighbourhood
    if margin == "distance":
        return cosine - neighbourhood
    raise ValueError(f"margin must be one of {MARGINS}, got {margin!r}")


@dataclass
class MinedPairs:
    """Mined pairs, best first: ``source[i]`` is paired with ``target[i]`` at ``scores[i]``."""

    source: np.ndarray
    target: np.ndarray
    scores: np.ndarray

    def above(self, threshold: float) -> MinedPairs:
        keep = self.scores >= threshold
        return MinedPairs(self.source[keep], self.target[keep], self.scores[keep])

    def __len__(self) -> int:
        return len(self.scores)


def greedy_one_to_one(source: np.ndarray, target: np.ndarray, scores: np.ndarray) -> MinedPairs:
    """Accept candidates best-first (ties in the order given), skipping any whose source or target sentence is
    already paired; returns the accepted pairs, best first.

    Computed in rounds of array operations rather than a loop over candidates: a round accepts every candidate that
    ranks first among the remaining candidates of both its source and its target (the best-first loop would accept
    it: nothing ranked above it touches its sentences), and drops the candidates that share a sentence with one it
    accepted (the loop would skip them). Most candidates are settled in the first few rounds; once a round settles
    fewer than one in a hundred of those left (long chains of conflicts), the best-first loop finishes them.
    """
    n = len(scores)
    order = np.argsort(-scores, kind="stable")
    source, target = np.asarray(source)[order], np.asarray(target)[order]  # rank order from here on
    accepted = np.zeros(n, dtype=bool)
    used_source = np.zeros(int(source.max(initial=-1)) + 1, dtype=bool)
    used_target = np.zeros(int(target.max(initial=-1)) + 1, dtype=bool)
    left = np.arange(n)
    while len(left):
        # the first (best) remaining candidate of each source and of each target
        first_of_source = np.zeros(len(left), dtype=bool)
        first_of_source[np.unique(source[left], return_index=True)[1]] = True
        first_of_target = np.zeros(len(left), dtype=bool)
        first_of_target[np.unique(target[left], return_index=True)[1]] = True
        winners = left[first_of_source & first_of_target]
        accepted[winners] = True
        used_source[source[winners]], used_target[target[winners]] = True, True
        taken = used_source[source[left]] | used_target[target[left]]
        settled = int(taken.sum())
        left = left[~taken]
        if settled * 100 < len(left) + settled:
            break
    for i in left.tolist():  # what the rounds left: best first, as the definition says
        s, t = source[i], target[i]
        if not used_source[s] and not used_target[t]:
            used_source[s], used_target[t], accepted[i] = True, True, True
    return MinedPairs(source[accepted], target[accepted], np.asarray(scores)[order[accepted]])


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def mine(
    source_embeddings: np.ndarray,
    target_embeddings: np.ndarray,
    k: int = 4,
    margin: str = "ratio",
    mode: str = "max",
    index: str = "auto",
    block_size: int = 16384,
    centre: bool = True,
    memory: int | None = None,
) -> MinedPairs:
    """Score candidate pairs with the margin of Eq. 4 and pair them one-to-one (no threshold applied).

    ``memory`` (bytes): what the index may hold; ``auto`` then picks compressed lists where full ones exceed it
    (`index_spec`).

    ``centre``: an approximate index searches each side centred on its own mean, its candidates re-scored by the
    original cosine (`knn`); False searches the vectors as they came. Exact search (``flat``) is the same either way.
    """
    check_mode(mode)
    n = max(len(source_embeddings), len(target_embeddings))
    spec = index_spec(n, index, source_embeddings.shape[1], memory)
    sides = (source_embeddings, target_embeddings)
    approximate = spec != "Flat"
    if approximate and n < IVF_THRESHOLD:
        logger.warning(
            "index %s on %d sentences per side: below %d, exact search (index 'flat', what 'auto' picks) "
            "is as quick and finds every true nearest neighbour, which the margins need",
            spec,
            n,
            IVF_THRESHOLD,
        )
    centres = tuple(side_centre(side, block_size) for side in sides) if centre and approximate else None
    trained = train_index(spec, sides, source_embeddings.shape[1], centres=centres) if approximate else None
    x2y_sim, x2y_ind = knn(source_embeddings, target_embeddings, k, spec, block_size, trained, centres)
    backward_centres = centres[::-1] if centres else None
    y2x_sim, y2x_ind = knn(target_embeddings, source_embeddings, k, spec, block_size, trained, backward_centres)
    return pair_neighbours(x2y_sim, x2y_ind, y2x_sim, y2x_ind, margin, mode)


def pair_neighbours(
    x2y_sim: np.ndarray,
    x2y_ind: np.ndarray,
    y2x_sim: np.ndarray,
    y2x_ind: np.ndarray,
    margin: str = "ratio",
    mode: str = "max",
) -> MinedPairs:
    """Margin scores (Eq. 4) of each side's ``k`` nearest neighbours in the other, ``(n, k)`` cosines and indices
    each way, and the candidates of ``mode`` paired one-to-one."""
    x_mean, y_mean = x2y_sim.mean(axis=1), y2x_sim.mean(axis=1)
    forward = apply_margin(x2y_sim, (x_mean[:, None] + y_mean[x2y_ind]) / 2, margin)  # (n_x, k)
    backward = apply_margin(y2x_sim, (y_mean[:, None] + x_mean[y2x_ind]) / 2, margin)  # (n_y, k)
    xs, ys = np.arange(len(forward)), np.arange(len(backward))
    fwd_best, bwd_best = forward.argmax(axis=1), backward.argmax(axis=1)
    fwd = (xs, x2y_ind[xs, fwd_best], forward[xs, fwd_best])
    bwd = (y2x_ind[ys, bwd_best], ys, backward[ys, bwd_best])
    if mode == "forward":
        candidates = fwd
    elif mode == "backward":
        candidates = bwd
    elif mode == "max":
        candidates = tuple(np.concatenate([a, b]) for a, b in zip(fwd, bwd, strict=True))
    else:  # intersect: x's best target is y and y's best source is x
        mutual = bwd[0][fwd[1]] == xs
        candidates = (xs[mutual], fwd[1][mutual], fwd[2][mutual])
    return greedy_one_to_one(*candidates)


def mining_predictions(pairs: MinedPairs, n_sources: int) -> np.ndarray:
    """The target index mined for each source sentence, -1 where none (the ``bitext_mining`` metric's input)."""
    predictions = np.full(n_sources, -1, dtype=np.int64)
    predictions[pairs.source] = pairs.target
    return predictions


def precision_recall_f1(pairs: MinedPairs, gold: set[tuple[int, int]]) -> dict[str, float]:
    found = sum((int(s), int(t)) in gold for s, t in zip(pairs.source, pairs.target, strict=True))
    precision = found / len(pairs) if len(pairs) else 0.0
    recall = found / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def best_threshold(pairs: MinedPairs, gold: set[tuple[int, int]]) -> tuple[float, float]:
    """The score threshold that maximises F1 against ``gold``, and that F1 (BUCC's threshold search)."""
    if not len(pairs) or not gold:
        return math.inf, 0.0
    order = np.argsort(-pairs.scores, kind="stable")
    hits = np.array([(int(pairs.source[i]), int(pairs.target[i])) in gold for i in order], dtype=np.float64)
    true_positives = np.cumsum(hits)
    kept = np.arange(1, len(hits) + 1)
    f1 = 2 * true_positives / (kept + len(gold))  # = 2PR / (P + R) with P = TP / kept, R = TP / |gold|
    ordered = pairs.scores[order]
    cut_point = np.append(ordered[1:] < ordered[:-1], True)  # a threshold keeps every pair of a tie
    f1[~cut_point] = -1.0
    best = int(np.argmax(f1))
    return float(pairs.scores[order[best]]), float(f1[best])
