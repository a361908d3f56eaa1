# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Evaluation: retrieval (Tatoeba-style), margin-based mining (BUCC-style), STS, linear probe, language-bias
analysis, MTEB tasks, and the encoder interface every evaluator shares.

``hf_xlsr.evaluation.mteb`` (MTEB tasks) needs the ``eval`` extra and is imported on its own.
"""

from pathlib import Path

from .analysis import language_bias, plot_language_bias, plot_parallel_sentences
from .encoders import Encoder, Evaluator, ModelEncoder, as_encoder
from .mining import MiningEvaluator, MiningSplit, hide_pairs, mine, mining_predictions, precision_recall_f1
from .pcr import principal_components, removal_matrix, remove_components
from .probe import LinearProbeEvaluator
from .retrieval import RetrievalEvaluator, nearest_neighbours, retrieval_accuracy
from .sts import STSEvaluator, load_lee_similarity
from .tatoeba import TatoebaEvaluator, load_tatoeba

METRICS = Path(__file__).resolve().parent.parent / "metrics"


def metric_path(name: str) -> str:
    """Folder of an ``evaluate`` metric module shipped with hf_xlsr (``retrieval_accuracy``, ``bitext_mining``),
    for ``evaluate.load(metric_path(name))``, which works offline."""
    path = METRICS / name
    if not (path / f"{name}.py").is_file():
        raise ValueError(f"no metric {name!r}; available: {sorted(p.name for p in METRICS.iterdir() if p.is_dir())}")
    return str(path)


__all__ = [
    "Encoder",
    "Evaluator",
    "LinearProbeEvaluator",
    "MiningEvaluator",
    "MiningSplit",
    "ModelEncoder",
    "RetrievalEvaluator",
    "STSEvaluator",
    "TatoebaEvaluator",
    "as_encoder",
    "hide_pairs",
    "language_bias",
    "load_tatoeba",
    "load_lee_similarity",
    "metric_path",
    "mine",
    "mining_predictions",
    "nearest_neighbours",
    "plot_language_bias",
    "plot_parallel_sentences",
    "precision_recall_f1",
    "principal_components",
    "removal_matrix",
    "remove_components",
    "retrieval_accuracy",
]
