# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Bitext mining: which index searches (`index`), nearest neighbours with faiss (`search`; its inverted lists scanned
by `scan`, its vectors normalised and centred by `vectors`) or on a GPU (`device`), margin scores and one-to-one
pairs (`margin`), the search as a resumable job in shards split over processes (`job`), two files of any size
(`files`), and BUCC-style evaluation (`evaluator`)."""

from .evaluator import MiningEvaluator, MiningSplit, hide_pairs
from .files import embed_file, mine_files
from .index import IVF_THRESHOLD, check_index, index_spec
from .job import mine_in_shards
from .margin import (
    MARGINS,
    MODES,
    RATIO_THRESHOLD,
    MinedPairs,
    apply_margin,
    best_threshold,
    greedy_one_to_one,
    mine,
    mining_predictions,
    pair_neighbours,
    precision_recall_f1,
)
from .scan import scan_lists
from .search import build_index, exact_knn, knn, train_index
from .vectors import side_centre

__all__ = [
    "IVF_THRESHOLD", "MARGINS", "MODES", "RATIO_THRESHOLD", "MinedPairs", "MiningEvaluator", "MiningSplit",
    "apply_margin", "best_threshold", "build_index", "check_index", "embed_file", "exact_knn", "greedy_one_to_one",
    "hide_pairs", "index_spec", "knn", "mine", "mine_files", "mine_in_shards", "mining_predictions",
    "pair_neighbours", "precision_recall_f1", "scan_lists", "side_centre", "train_index",
]  # fmt: skip
