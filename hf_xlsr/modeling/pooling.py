# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Sentence pooling shared by every hf_xlsr model.

The three modes match ``sentence_transformers``' ``Pooling`` module exactly, so an exported model computes the
same vector as the training model.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

PoolingMode = Literal["mean", "max", "cls"]
POOLING_MODES: tuple[str, ...] = ("mean", "max", "cls")


def pool(hidden_states: torch.Tensor, attention_mask: torch.Tensor, mode: PoolingMode = "mean") -> torch.Tensor:
    """Pool token states ``(batch, seq, dim)`` into sentence vectors ``(batch, dim)``.

    ``mean`` averages the attended tokens, ``max`` takes the element-wise maximum over them, ``cls`` takes the first
    attended token (the ``[CLS]``/``<s>`` state with right padding).
    """
    if mode == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
        summed = (hidden_states * mask).sum(dim=1)
        return summed / mask.sum(dim=1).clamp(min=1e-9)
    if mode == "max":
        mask = attention_mask.unsqueeze(-1)
        return hidden_states.masked_fill(mask == 0, float("-inf")).max(dim=1).values
    if mode == "cls":
        first = attention_mask.to(torch.int).argmax(dim=1)
        return hidden_states[torch.arange(hidden_states.shape[0], device=hidden_states.device), first]
    raise ValueError(f"pooling mode must be one of {POOLING_MODES}, got {mode!r}")


def l2_normalize(vectors: torch.Tensor) -> torch.Tensor:
    """Scale each row to unit L2 norm, so that a dot product is a cosine similarity."""
    return F.normalize(vectors, p=2, dim=-1)
