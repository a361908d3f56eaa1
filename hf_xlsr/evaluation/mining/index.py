# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Which faiss index a mining search uses (`index_spec`): exact search, inverted lists of PCA-mapped vectors,
compressed codes where memory is short, every vector on a GPU, or any ``index_factory`` string; and the check that
faiss can build the one asked for (`check_index`)."""

from __future__ import annotations

import math

import faiss

from .device import DEVICE_K_FACTOR, search_device

# Exact search below IVF_THRESHOLD sentences a side; from there sqrt(n) inverted lists, of which a query scans one in
# IVF_PROBE_SHARE (at most IVF_MAX_PROBES, so that the search's time grows as n^1.5 rather than n^2). From there
# vectors of more than REDUCED_DIMENSIONS dimensions are scanned mapped to REDUCED_DIMENSIONS by PCA
# (``PCA<d>,IVF<n>,Flat``: a quarter of the products of 512-d vectors) and `knn` re-scores REDUCED_K_FACTOR candidates
# per neighbour by their cosine. Chosen by `benchmarks/bench_mining_scale.py --rule` on USE-m3 sides its report does
# not use (75,000, 150,000 and 300,000 real sentences a side, 700,000 with distractors of another seed): gold pairs
# within k 0.5 to 1.0 points below exact search's, where full lists probed a twelfth left 1.3 to 2.6 points at 75,000
# and 300,000.
IVF_THRESHOLD = 50_000
IVF_LISTS_PER_ROOT = 1  # inverted lists per square root of the corpus size
IVF_PROBE_SHARE = 4  # a query scans one in this many lists
IVF_MAX_PROBES = 64
IVF_REFINE = 4  # candidates per neighbour asked of an approximate index of full vectors, re-scored by their cosine
REDUCED_DIMENSIONS = 128
REDUCED_K_FACTOR = 8


def index_spec(n: int, index: str = "auto", dim: int = 0, memory: int | None = None) -> str:
    """The faiss index for a corpus of ``n`` vectors, as an ``index_factory`` string with its search parameters after
    ``|``: ``flat`` (exact search), ``ivf`` (`IVF_LISTS_PER_ROOT` sqrt(n) inverted lists, one in
    `IVF_PROBE_SHARE` of them (at most `IVF_MAX_PROBES`) scanned by `scan_lists`; `knn` re-scores the best `IVF_REFINE`
    candidates per neighbour exactly, as it does for any approximate index), ``auto`` (flat below `IVF_THRESHOLD`
    vectors, IVF from there; from there on a GPU that holds the corpus, every vector scored by matrix products and
    the best `DEVICE_K_FACTOR` x ``k`` re-scored: ``Flat|k_factor=4``, `device.device_knn`), or any factory string of
    one's own (``"HNSW32|efSearch=128"``, ``"OPQ64,IVF4096,PQ64|nprobe=32"``, as faiss and stopes name indexes).
    ``k_factor=F`` among the parameters sets how many candidates per neighbour `knn` re-scores (faiss's name for it;
    `IVF_REFINE` when not given). From `IVF_THRESHOLD` vectors of more than `REDUCED_DIMENSIONS` dimensions (``dim``),
    ``ivf`` scans them mapped by PCA to `REDUCED_DIMENSIONS`, and re-scores `REDUCED_K_FACTOR` candidates per
    neighbour.

    With ``memory`` (bytes) and ``dim``, ``auto`` and ``ivf`` keep the index within it: the list scanner holds both
    sides in at most 4 ``n`` ``dim`` bytes (bfloat16; int8 where the CPU multiplies int8 natively holds half; ``dim``
    the mapped one); where that exceeds ``memory`` the lists hold
    8-bit codes (``SQ8``, ``n`` ``dim`` bytes), and where those do too, product codes of ``dim / 8`` bytes (``PQ``, as
    stopes mines). faiss searches the codes; `knn` re-scores the candidates from the vectors themselves
    (memory-mapped)."""
    if index == "auto" and n >= IVF_THRESHOLD and search_device(n, dim):  # every vector, on the GPU
        return f"Flat|k_factor={DEVICE_K_FACTOR}"
    if index == "auto":
        index = "flat" if n < IVF_THRESHOLD else "ivf"
    if index == "flat":
        return "Flat"
    if index == "ivf":
        lists = max(1, min(int(IVF_LISTS_PER_ROOT * math.sqrt(n)), n // 39))  # faiss wants >= 39 points per list
        probes = f"nprobe={max(1, min(lists // IVF_PROBE_SHARE, IVF_MAX_PROBES))}"
        reduced = n >= IVF_THRESHOLD and dim > REDUCED_DIMENSIONS  # a PCA of a few vectors lacks the rank
        if memory is not None and dim and 4 * n * (REDUCED_DIMENSIONS if reduced else dim) > memory:
            return f"IVF{lists},{'SQ8' if n * dim <= memory else f'PQ{max(1, dim // 8)}'}|{probes}"
        if reduced:
            return f"PCA{REDUCED_DIMENSIONS},IVF{lists},Flat|{probes},k_factor={REDUCED_K_FACTOR}"
        return f"IVF{lists},Flat|{probes}"
    if not index or index[0].islower():
        raise ValueError(f"index must be 'auto', 'flat', 'ivf' or a faiss index_factory string, got {index!r}")
    return index


def spec_parts(spec: str) -> tuple[str, str, int]:
    """``spec``'s factory string, its faiss search parameters, and its ``k_factor`` (`IVF_REFINE` when absent)."""
    factory, _, parameters = spec.partition("|")
    kept, k_factor = [], IVF_REFINE
    for parameter in filter(None, parameters.split(",")):
        name, _, value = parameter.partition("=")
        if name.strip() != "k_factor":
            kept.append(parameter)
        elif not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"index {spec!r}: k_factor must be a whole number of at least 1, got {value!r}")
        else:
            k_factor = int(value)
    return factory, ",".join(kept), k_factor


def check_index(spec: str, dim: int) -> None:
    """Refuse, before any sentence is embedded, an index that faiss cannot build for ``dim``-dimensional vectors."""
    factory, parameters, _ = spec_parts(spec)
    try:
        built = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        if parameters:
            faiss.ParameterSpace().set_index_parameters(built, parameters)
    except RuntimeError as error:
        reason = str(error).strip().splitlines()[-1]
        raise ValueError(f"index {spec!r}: faiss cannot build it for {dim}-dimensional vectors ({reason})") from None
