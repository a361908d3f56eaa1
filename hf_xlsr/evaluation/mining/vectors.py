# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The vectors a mining search compares: L2-normalised in float32, and for an approximate index each side centred on
its own mean (`side_centre`), so that the two languages share inverted lists."""

from __future__ import annotations

import faiss
import numpy as np


def unit_float32(vectors: np.ndarray) -> np.ndarray:
    """A float32 copy of ``vectors`` (C order), each row L2-normalised (a zero row stays zero)."""
    vectors = np.array(vectors, dtype=np.float32, copy=True, order="C")
    faiss.normalize_L2(vectors)
    return vectors


def side_centre(vectors: np.ndarray, block_size: int = 16384) -> np.ndarray:
    """The mean of one side's L2-normalised vectors (its language's direction, for a side of one language), read in
    blocks and summed in float64."""
    total = np.zeros(vectors.shape[1], dtype=np.float64)
    for start in range(0, len(vectors), block_size):
        total += unit_float32(vectors[start : start + block_size]).sum(axis=0, dtype=np.float64)
    return (total / max(len(vectors), 1)).astype(np.float32)


def centred(unit: np.ndarray, centre: np.ndarray | None) -> np.ndarray:
    """L2-normalised ``unit`` minus ``centre``, normalised again, in place (unchanged when ``centre`` is None)."""
    if centre is not None:
        unit -= centre
        faiss.normalize_L2(unit)
    return unit


def inverse_norms(vectors: np.ndarray, block_size: int) -> np.ndarray:
    """1 / |v| for each row (0 for a zero row, whose cosine with anything is 0), read in blocks."""
    norms = [
        np.linalg.norm(vectors[start : start + block_size], axis=1) for start in range(0, len(vectors), block_size)
    ]
    return 1 / np.maximum(np.concatenate(norms), np.finfo(np.float32).tiny)
