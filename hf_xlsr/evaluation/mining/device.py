# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Nearest neighbours on a GPU by matrix products. A GPU scores a block of queries against a whole corpus at once:
there, searching every vector is quicker than any index's search on the CPU up to tens of millions of sentences a
side, and it misses nothing an index misses. So ``auto`` (`search.index_spec`) searches every vector on a CUDA device
whose free memory holds the corpus (`search_device`): the corpus in bfloat16 for the products and in float32 for the
re-scoring, each block of queries against it in chunks, a running best ``k_factor`` x ``k`` candidates per query kept
and re-scored by their float32 cosine (`device_knn`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

DEVICE_K_FACTOR = 4  # candidates per neighbour kept from the bfloat16 products and re-scored in float32
DEVICE_QUERIES = 4096  # queries scored at once
DEVICE_CHUNK = 2**20  # corpus vectors one product scores a block of queries against


def search_device(n: int, dim: int) -> torch.device | None:
    """The CUDA device `auto` searches on: the current one, when there is one and nine tenths of its free memory hold
    ``n`` ``dim``-dimensional vectors in bfloat16 and float32 (6 ``n dim`` bytes) and the scores of one product with
    their ranking (4 bytes each); else None."""
    if not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info()
    needed = 6 * n * dim + 4 * DEVICE_QUERIES * min(n, DEVICE_CHUNK)
    return torch.device("cuda", torch.cuda.current_device()) if needed <= 0.9 * free else None


def _unit(vectors: np.ndarray, device: torch.device) -> torch.Tensor:
    """``vectors`` in float32 on ``device``, L2-normalised (a zero row stays zero)."""
    tensor = torch.from_numpy(np.asarray(vectors, dtype=np.float32)).to(device)
    return torch.nn.functional.normalize(tensor, dim=1)


class DeviceCorpus(NamedTuple):
    """A corpus on the device: its L2-normalised vectors in float32 (``stored``) and in bfloat16 (``low``)."""

    stored: torch.Tensor
    low: torch.Tensor


def device_corpus(corpus: np.ndarray, device: torch.device, chunk: int = DEVICE_CHUNK) -> DeviceCorpus:
    """`DeviceCorpus` of ``corpus`` (any array, memory-mapped too), copied to ``device`` ``chunk`` rows at a time."""
    stored = torch.empty((len(corpus), corpus.shape[1]), dtype=torch.float32, device=device)
    low = torch.empty(stored.shape, dtype=torch.bfloat16, device=device)
    for start in range(0, len(corpus), chunk):
        stored[start : start + chunk] = _unit(corpus[start : start + chunk], device)
        low[start : start + chunk] = stored[start : start + chunk]
    return DeviceCorpus(stored, low)


def device_knn(
    queries: np.ndarray,
    corpus: np.ndarray,
    k: int,
    device: torch.device,
    k_factor: int = DEVICE_K_FACTOR,
    block_size: int = DEVICE_QUERIES,
    chunk: int = DEVICE_CHUNK,
    prepared: DeviceCorpus | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities and indices of each query's ``k`` nearest corpus vectors, ``(n_queries, k)`` numpy arrays
    each, searched on ``device``. Every query is scored against every corpus vector by bfloat16 products (float32
    accumulation), ``chunk`` vectors at a time; the best ``k_factor`` x ``k`` over all chunks are re-scored by their
    float32 cosine, and the best ``k`` of those kept (ties in the order of the corpus). ``prepared``: the corpus's
    `device_corpus`, made once for many calls (else here)."""
    k = min(k, len(corpus))
    asked = min(k_factor * k, len(corpus))
    stored, low = prepared or device_corpus(corpus, device, chunk)
    similarities = np.empty((len(queries), k), dtype=np.float32)
    indices = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), block_size):
        block = _unit(queries[start : start + block_size], device)
        scores = where = None
        for first in range(0, len(corpus), chunk):
            found, place = (block.to(torch.bfloat16) @ low[first : first + chunk].T).topk(
                min(asked, len(low[first : first + chunk])), dim=1
            )
            place += first
            if scores is not None:  # the best `asked` of those kept so far and this chunk's
                found, place = torch.cat([scores, found], dim=1), torch.cat([where, place], dim=1)
                found, best = found.topk(min(asked, found.shape[1]), dim=1)
                place = place.gather(1, best)
            scores, where = found, place
        where, _ = where.sort(dim=1)  # corpus order, for ties below
        cosines = torch.einsum("qd,qcd->qc", block, stored[where])
        cosines, best = cosines.sort(dim=1, descending=True, stable=True)
        similarities[start : start + len(block)] = cosines[:, :k].cpu().numpy()
        indices[start : start + len(block)] = where.gather(1, best[:, :k]).cpu().numpy()
    return similarities, indices
