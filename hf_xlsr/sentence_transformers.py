# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Deprecated: the losses for ``SentenceTransformerTrainer`` moved to `hf_xlsr.losses`; this alias leaves in the
release after 0.2."""

import warnings

from .losses import CachedMomentumQueueLoss, MomentumQueueCallback, MomentumQueueLoss

warnings.warn(
    "hf_xlsr.sentence_transformers is now hf_xlsr.losses (from hf_xlsr.losses import MomentumQueueLoss); the old "
    "path goes in the next release",
    FutureWarning,
    stacklevel=2,
)

__all__ = ["CachedMomentumQueueLoss", "MomentumQueueCallback", "MomentumQueueLoss"]
