# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The list scanner: inverted lists of full vectors (``IVF<lists>,Flat``, alone or behind a linear map such as
``PCA128``) searched by `scan_lists`, the queries that probe a list scored against all of its vectors in one matrix
product, in int8 or bfloat16 where this CPU multiplies them natively (`_products_dtype`). The corpus is laid out once
for many calls (`list_layout`)."""

from __future__ import annotations

from typing import NamedTuple

import faiss
import numpy as np
import torch

from .vectors import centred, unit_float32

SCAN_SCORES = 2**22  # scores one matrix product of `scan_lists` computes at most
MAP_ROWS = 2048  # vectors mapped by a linear map at once (`_mapped`)
INT8_SAMPLE = 2**16  # vectors of a corpus that its int8 scale is read from (`_int8_scale`)


def _cpu_has(*features: str) -> bool:
    """Whether this CPU has any of ``features``, as torch names them (``torch.cpu._is_<feature>_supported``)."""
    return any(getattr(torch.cpu, f"_is_{feature}_supported", lambda: False)() for feature in features)


def _float_products_dtype() -> torch.dtype:
    """bfloat16 where this CPU multiplies it natively (AVX-512 BF16 or AMX: about 3.7x float32's speed on an AMD
    EPYC core), float32 elsewhere (bfloat16 without it is emulated, slower than float32)."""
    return torch.bfloat16 if _cpu_has("avx512_bf16", "amx_tile") else torch.float32


def _products_dtype() -> torch.dtype:
    """What `scan_lists` scores the lists in: int8 where this CPU has integer dot-product instructions (VNNI or AMX:
    ``torch._int_mm``'s int32 sums, exact, at about twice bfloat16's rate on an AMD EPYC core), else
    `_float_products_dtype`."""
    return torch.int8 if _cpu_has("vnni", "amx_tile") else _float_products_dtype()


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b.T``; of int8 rows, their int32 sums (``torch._int_mm``: torch's ``@`` has no int8 kernel)."""
    return torch._int_mm(a, b.T) if a.dtype == torch.int8 else a @ b.T


def _int8_scale(corpus, centre, transform, block_size: int = 16384) -> np.ndarray:
    """Per-dimension multipliers that take ``corpus``'s vectors, as `scan_lists` scores them (unit, centred, mapped),
    to at most 127 in magnitude, read from `INT8_SAMPLE` of them spread evenly over it (SQ8's ranges, trained on a
    sample: a value beyond its dimension's is saturated), ``block_size`` at a time."""
    rows = np.unique(np.linspace(0, len(corpus) - 1, min(len(corpus), INT8_SAMPLE)).astype(np.int64))
    largest = np.zeros(transform.d_out if transform else corpus.shape[1], dtype=np.float32)
    for start in range(0, len(rows), block_size):
        sample = _as_scanned(corpus[rows[start : start + block_size]], centre, transform)
        np.maximum(largest, np.abs(sample).max(axis=0), out=largest)
    return 127 / np.maximum(largest, np.finfo(np.float32).tiny)


def _int8_rows(block: np.ndarray, scale: np.ndarray, corpus: bool) -> np.ndarray:
    """``block`` rounded to int8 for integer products. A corpus side is multiplied by its `_int8_scale`, one scale
    for all its vectors, so that a query's scores of any two of them compare; a query side is divided by it, which
    undoes it in the products, and then each row is scaled to 127 on its own: a positive factor per query, which
    leaves the order of its scores as it was."""
    if corpus:
        scaled = block * scale
    else:
        scaled = block / scale
        scaled *= 127 / np.maximum(np.abs(scaled).max(axis=1, keepdims=True), np.finfo(np.float32).tiny)
    return np.clip(np.rint(scaled), -127, 127).astype(np.int8)


def _rows(table: torch.Tensor, rows: np.ndarray, out: torch.Tensor | None = None) -> torch.Tensor:
    """``table[rows]``, gathered by numpy (several times faster than torch's indexing of bfloat16 rows), into ``out``
    (contiguous, of ``table``'s dtype) when given."""
    kind = torch.int16 if table.dtype == torch.bfloat16 else table.dtype
    gathered = np.take(table.view(kind).numpy(), rows, axis=0, out=None if out is None else out.view(kind).numpy())
    return out if out is not None else torch.from_numpy(gathered).view(table.dtype)


def inverted_lists(index) -> tuple:
    """The linear map (a faiss ``VectorTransform``, None without one) and the ``IndexIVFFlat`` of ``index`` when it is
    inverted lists of full vectors (``IVF<n>,Flat``), alone or behind one map (``PCA<d>,IVF<n>,Flat``), what
    `scan_lists` scans; ``(None, None)`` for any other index."""
    index = faiss.downcast_index(index)
    transform = None
    if isinstance(index, faiss.IndexPreTransform) and index.chain.size() == 1:
        transform, index = faiss.downcast_VectorTransform(index.chain.at(0)), faiss.downcast_index(index.index)
    return (transform, index) if isinstance(index, faiss.IndexIVFFlat) else (None, None)


def _mapped(vectors: np.ndarray, transform) -> np.ndarray:
    """faiss's linear map (``A v + b``) of ``vectors`` in float64, `MAP_ROWS` rows at a time: a vector's bits whatever
    block it comes in (a float32 product's rounding depends on the block's shape), float64 copies of a few MB."""
    matrix = faiss.vector_to_array(transform.A).reshape(transform.d_out, transform.d_in).T.astype(np.float64)
    bias = faiss.vector_to_array(transform.b)
    mapped = np.empty((len(vectors), transform.d_out), dtype=np.float32)
    for start in range(0, len(vectors), MAP_ROWS):
        mapped[start : start + MAP_ROWS] = vectors[start : start + MAP_ROWS] @ matrix + bias
    return mapped


def _as_scanned(vectors: np.ndarray, centre, transform) -> np.ndarray:
    """``vectors`` as `scan_lists` scores them: L2-normalised, centred on ``centre`` (`centred`), mapped by
    ``transform`` when given (`_mapped`)."""
    unit = centred(unit_float32(vectors), centre)
    return _mapped(unit, transform) if transform else unit


def _unit_matrix(
    vectors: np.ndarray,
    centre,
    dtype: torch.dtype,
    centroids: torch.Tensor,
    lists: int,
    block_size: int,
    transform=None,
    scale: np.ndarray | None = None,
    corpus: bool = True,
):
    """``vectors`` L2-normalised and centred on ``centre`` (`centred`), mapped by ``transform`` when given, in
    ``dtype`` (int8: by `_int8_rows` with the corpus's ``scale``, as a corpus or a query side), and each one's
    ``lists`` nearest centroids (scored in the centroids' dtype), read in blocks."""
    unit = torch.empty((len(vectors), transform.d_out if transform else vectors.shape[1]), dtype=dtype)
    nearest = np.empty((len(vectors), lists), dtype=np.int32)
    for start in range(0, len(vectors), block_size):
        block = _as_scanned(vectors[start : start + block_size], centre, transform)
        stop = start + len(block)
        nearest[start:stop] = (torch.from_numpy(block).to(centroids.dtype) @ centroids.T).topk(lists, dim=1).indices
        unit[start:stop] = torch.from_numpy(_int8_rows(block, scale, corpus) if dtype == torch.int8 else block)
    return unit, nearest


def _product_shape(length: int) -> tuple[int, int]:
    """The (query rows, list vectors) of `scan_lists`'s products against a list of ``length`` vectors: the list
    padded to 8 sizes per doubling from 64 (at most 1/8 more), at most 1,024 rows and `SCAN_SCORES` scores (a list's
    last block of queries is padded to a quarter of that height, half or three quarters). oneDNN keeps a compiled
    kernel (near a megabyte) for every shape of low-precision product it meets: so few shapes keep memory flat."""
    step = max(64, 1 << max(0, int(length).bit_length() - 4))
    width = -(-length // step) * step
    return min(1024, 1 << max(0, (SCAN_SCORES // width).bit_length() - 1)), width


def _stable_sort(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` sorted and the order that sorts them, equal values in the order they came (``np.argsort(values,
    kind="stable")``, by torch's sort: several times quicker on integers of 32 and 64 bits)."""
    ordered, order = torch.sort(torch.from_numpy(values), stable=True)
    return ordered.numpy(), order.numpy()


def _grouped(lists: np.ndarray, n_lists: int) -> tuple[np.ndarray, list[int]]:
    """The positions of ``lists`` sorted by list, and where each list's run starts (``n_lists + 1`` bounds)."""
    return _stable_sort(lists)[1], [0, *np.cumsum(np.bincount(lists, minlength=n_lists)).tolist()]


class ListLayout(NamedTuple):
    """A corpus laid out for `scan_lists`: its vectors normalised (centred) in the products' dtype, list by list
    (``stored[bounds[l]:bounds[l + 1]]`` are list ``l``'s, the vectors of corpus rows ``members[bounds[l]:bounds[l +
    1]]``), then zero rows, so that a list's product reads its vectors and its padding (`_product_shape`) as one
    slice; and in int8 the `_int8_scale` they were rounded with (None in a float dtype)."""

    stored: torch.Tensor
    members: np.ndarray
    bounds: np.ndarray
    scale: np.ndarray | None = None


def list_layout(corpus, index, centre=None, block_size: int = 16384) -> ListLayout:
    """`ListLayout` of ``corpus`` in the inverted lists of ``index`` (its centroids; `inverted_lists`), ``centre``
    taken off first."""
    transform, ivf = inverted_lists(index)
    centroids = torch.from_numpy(ivf.quantizer.reconstruct_n(0, ivf.nlist)).to(_float_products_dtype())
    dtype = _products_dtype()
    scale = _int8_scale(corpus, centre, transform, block_size) if dtype == torch.int8 else None
    unit, home = _unit_matrix(corpus, centre, dtype, centroids, 1, block_size, transform, scale)
    members, bounds = _grouped(home[:, 0], ivf.nlist)
    padding = max(_product_shape(length)[1] - length for length in np.diff(bounds).tolist() if length)
    stored = torch.zeros((len(unit) + padding, unit.shape[1]), dtype=dtype)
    _rows(unit, members, out=stored[: len(unit)])
    return ListLayout(stored, members, bounds, scale)


def scan_lists(
    queries: np.ndarray,
    corpus: np.ndarray,
    index: faiss.Index,
    asked: int,
    centres: tuple[np.ndarray, np.ndarray] | None = None,
    block_size: int = 16384,
    layout: ListLayout | None = None,
) -> np.ndarray:
    """Each query's ``asked`` best candidates among the vectors of the ``nprobe`` inverted lists of ``index`` (a
    trained ``IndexIVFFlat``, or one behind a linear map such as ``PCA128``: `inverted_lists`; its map, centroids
    and ``nprobe`` are used, not its contents) nearest to it, as corpus indices ``(n_queries, asked)``; with
    ``centres`` (`knn`), each side centred on its own mean. Behind a map, both sides are scored as it maps them.

    faiss scans a list once for every query that probes it; here the queries that probe a list are scored against
    all of its vectors in one matrix product (`_products_dtype`). First each query's nearest list of at least
    ``asked`` vectors: its best ``asked`` scores there, the last of them the query's floor. Then every other list
    against the queries that probe it: a score above the floor is kept. The best ``asked`` kept scores of each query
    are its candidates (kept scores are compacted to each query's best ``asked`` whenever they outgrow ``asked`` per
    query, each floor raised to the last of them); the scores rank candidates only, and `knn` re-scores them
    exactly. A query with no floor above 0 (none of its lists holds ``asked`` vectors, or their best all score 0 or
    below: rare but for clustered or tiny corpora) gets -1 throughout, for `knn` to search it exactly. Comparisons
    with a positive floor are made on the scores' bits (of int8 rows, on their int32 sums: exact, the same whatever
    the block). ``layout``: the corpus's `list_layout`, made once for many calls (else here)."""
    query_centre, corpus_centre = centres or (None, None)
    transform, ivf = inverted_lists(index)
    n_lists, probes = ivf.nlist, min(ivf.nprobe, ivf.nlist)
    centroids = torch.from_numpy(ivf.quantizer.reconstruct_n(0, n_lists)).to(_float_products_dtype())
    stored, members, bounds, scale = layout or list_layout(corpus, index, corpus_centre, block_size)
    dtype = stored.dtype
    # positive floats order as these integers do; int8 products are int32 already
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    found, probed = _unit_matrix(
        queries, query_centre, dtype, centroids, probes, block_size, transform, scale, corpus=False
    )
    most = max(1, int(np.diff(bounds).max()))  # the longest list

    def products(list_id: int, rows: np.ndarray):  # the scores of ``rows`` against one list, a block at a time
        listed = members[bounds[list_id] : bounds[list_id + 1]]
        if not len(listed) or not len(rows):
            return
        height, width = _product_shape(len(listed))
        vectors = stored[bounds[list_id] : bounds[list_id] + width]  # and the next list's or zeros, cut off below
        quarter = max(1, height // 4)
        for start in range(0, len(rows), height):
            block = rows[start : start + height]
            padded = np.resize(block, -(-len(block) // quarter) * quarter)  # a quarter of a product at most wasted
            yield block, _product(_rows(found, padded), vectors)[: len(block), : len(listed)]

    floor = np.zeros(len(queries), dtype=np.int16 if bits == torch.int16 else np.int32)  # the bits of +0.0
    # the kept (query, corpus row, score bits), in buffers allocated once: compacted to each query's best `asked`
    # whenever `asked` per query more have come since, they hold at most twice that and one product's worth
    capacity = 2 * asked * len(queries) + max(np.prod(_product_shape(most)), most)
    kept_query, kept_row, kept_score = (np.empty(capacity, kind) for kind in (np.int32, np.int32, floor.dtype))
    size, since = 0, 0

    def keep(query: np.ndarray, corpus_row: np.ndarray, score: np.ndarray) -> None:
        nonlocal size, since
        end = size + len(query)
        kept_query[size:end], kept_row[size:end], kept_score[size:end] = query, corpus_row, score
        size, since = end, since + len(query)
        if since > asked * len(queries):
            size, since = compact(), 0

    def ranked() -> tuple[np.ndarray, np.ndarray]:  # the kept of queries with a floor, query by query, best first
        query = kept_query[:size]
        key = query.astype(np.int64)  # the query, then the score's bits reversed (positive scores order as bits)
        key <<= 8 * floor.itemsize - 1
        key += (1 << (8 * floor.itemsize - 1)) - 1
        key -= kept_score[:size]
        key[floor[query] <= 0] = -1  # a query with no floor above 0: sorted first, then dropped
        key, order = _stable_sort(key)  # ties: the first kept, however often the kept were compacted
        order = order[np.searchsorted(key, 0) :]
        query = query[order]
        starts = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(np.bincount(query, minlength=len(queries)), out=starts[1:])
        return order, np.arange(len(order)) - starts[query]

    def compact() -> int:  # each query's best `asked` to the front, its floor raised to the last of them
        order, rank = ranked()
        last = order[rank == asked - 1]
        floor[kept_query[last]] = kept_score[last]
        best = order[rank < asked]
        kept_query[: len(best)], kept_row[: len(best)], kept_score[: len(best)] = (
            kept_query[best], kept_row[best], kept_score[best])  # fmt: skip
        return len(best)

    large = np.diff(bounds)[probed] >= asked  # the probed lists that can set a floor
    first = np.where(large.any(axis=1), large.argmax(axis=1), -1)  # each query's nearest of them
    del large
    with_floor = np.flatnonzero(first >= 0)
    by_first, first_bounds = _grouped(probed[with_floor, first[with_floor]], n_lists)
    for list_id in range(n_lists):
        for rows, scores in products(list_id, with_floor[by_first[first_bounds[list_id] : first_bounds[list_id + 1]]]):
            best, column = scores.topk(asked, dim=1)
            floor[rows] = best[:, -1].view(bits).numpy()
            keep(
                np.repeat(rows, asked),
                members[bounds[list_id] + column.numpy().ravel()],
                best.view(bits).numpy().ravel(),
            )
    probed[with_floor, first[with_floor]] = n_lists  # every other (query, list) pair, list by list: the floor's list
    probed[first < 0] = n_lists  # and a query with no floor set apart (as n_lists)
    pairs, pair_bounds = _grouped(probed.ravel(), n_lists + 1)
    for list_id in range(n_lists):
        for rows, scores in products(list_id, pairs[pair_bounds[list_id] : pair_bounds[list_id + 1]] // probes):
            scored = scores.view(bits)
            hit = np.flatnonzero(scored.amax(dim=1).numpy() > floor[rows])  # the rows with a score above the floor
            if len(hit):
                scored = scored.numpy()[hit]
                row, column = np.divmod(np.flatnonzero(scored > floor[rows[hit]][:, None]), scored.shape[1])
                keep(rows[hit[row]], members[bounds[list_id] + column], scored[row, column])
    order, rank = ranked()
    candidates = np.full((len(queries), asked), -1, dtype=np.int64)
    best = rank < asked
    candidates[kept_query[order[best]], rank[best]] = kept_row[order[best]]
    return candidates
