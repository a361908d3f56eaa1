# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Principal-component removal (PCR), Yang et al. (EMNLP 2021), Section 5.2.

For a language l, ``c_l`` is the first right singular vector of the matrix ``M_l`` whose rows are embeddings of
sentences in l (not centred). A vector of that language becomes ``v - (v . c_l) c_l``, i.e. ``(I - c_l c_l^T) v``,
and is then L2-normalised again; removing the top ``n`` components uses ``I - C C^T``. The paper finds that the
first component mostly encodes the language, so removing it reduces the self-language bias of retrieval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def principal_components(embeddings: np.ndarray, n_components: int = 1) -> np.ndarray:
    """The top ``n_components`` right singular vectors of ``embeddings`` (rows), shape ``(n_components, dim)``."""
    if n_components < 1 or n_components > min(embeddings.shape):
        raise ValueError(f"n_components must lie in [1, {min(embeddings.shape)}], got {n_components}")
    _, _, vt = np.linalg.svd(np.asarray(embeddings, dtype=np.float64), full_matrices=False)
    return vt[:n_components]


def removal_matrix(components: np.ndarray) -> np.ndarray:
    """``I - C^T C``: the linear map that removes the span of ``components`` (orthonormal rows)."""
    return np.eye(components.shape[1]) - components.T @ components


def fit_language_components(model, tokenizers, sentences: dict[str, Sequence[str]]) -> None:
    """Fit each language's top ``model.config.pcr_components`` principal components on its sentences
    (``{language: sentences}``) and store them in the model (``set_principal_components``), which then removes
    them at inference and in exports."""
    import torch

    from .encoders import as_encoder

    n = model.config.pcr_components
    model.pcr.zero_()  # the raw vectors
    encoder = as_encoder(model, tokenizers)
    components = {
        language: principal_components(encoder(list(texts), language), n) for language, texts in sentences.items()
    }
    model.set_principal_components(
        {language: torch.as_tensor(c, dtype=model.pcr.dtype) for language, c in components.items()}
    )


def remove_components(embeddings: np.ndarray, components: np.ndarray) -> np.ndarray:
    """Project ``components`` out of every row and L2-normalise, as float32."""
    projected = np.asarray(embeddings, dtype=np.float64) @ removal_matrix(components)
    projected /= np.maximum(np.linalg.norm(projected, axis=1, keepdims=True), 1e-12)
    return projected.astype(np.float32)
