# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Losses for ``sentence_transformers.SentenceTransformerTrainer``: hf_xlsr's momentum queue where
sentence-transformers users train, one loss per module as in ``sentence_transformers.losses``."""

from .CachedMomentumQueueLoss import CachedMomentumQueueLoss
from .MomentumQueueCallback import MomentumQueueCallback
from .MomentumQueueLoss import MomentumQueueLoss

__all__ = ["CachedMomentumQueueLoss", "MomentumQueueCallback", "MomentumQueueLoss"]
