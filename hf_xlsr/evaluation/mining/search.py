# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Nearest neighbours for mining with faiss: exact inner-product search below `IVF_THRESHOLD` sentences, inverted lists
above, or any faiss ``index_factory`` string (`index_spec`). One index, trained on a sample of both sides, serves both
directions; vectors are added and queries searched in blocks (no ``n x n`` matrix). Inverted lists of full vectors
(``IVF<lists>,Flat``) are scanned by `scan_lists`: the queries that probe a list scored against it in one matrix
product. An approximate index sees each side centred on its own mean (`side_centre`): an encoder that keeps languages
apart puts a language's sentences in lists of their own, where a query misses its translation's; centred, the two
languages share lists. The candidates are then re-scored by the cosine of the vectors as they came.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import faiss
import numpy as np
import torch
from faiss.contrib.exhaustive_search import knn_ground_truth

from .device import DeviceCorpus, device_corpus, device_knn, search_device
from .index import index_spec, spec_parts
from .scan import ListLayout, inverted_lists, list_layout, scan_lists
from .vectors import centred, inverse_norms, unit_float32

Prepared = ListLayout | DeviceCorpus | faiss.Index  # what `prepare` makes of a corpus for `knn`

logger = logging.getLogger(__name__)

IVF_TRAIN_POINTS = 64  # k-means sample per inverted list (faiss asks for 39 at least)
SCAN_QUERIES = 2**14  # queries per `scan_lists` call of `knn`: its probes, kept candidates, sort keys (~3 KB each)


def train_index(
    spec: str, sides: Sequence[np.ndarray], dim: int, seed: int = 0, centres: Sequence[np.ndarray | None] | None = None
) -> faiss.Index:
    """An empty faiss inner-product index of ``spec`` (`index_spec`), trained where it needs training on a
    sample drawn from every one of ``sides`` (the languages share one space, so one training serves both
    directions of a search): `IVF_TRAIN_POINTS` points per inverted list, at least 65,536 for quantisers; each
    side's sample centred on its entry of ``centres`` (`side_centre`) when given."""
    factory, parameters, _ = spec_parts(spec)
    built = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    if not built.is_trained:
        lists = re.search(r"IVF(\d+)", factory)
        wanted = max(IVF_TRAIN_POINTS * int(lists.group(1)) if lists else 0, 65_536)
        rng = np.random.default_rng(seed)
        rows = [np.sort(rng.choice(len(side), min(len(side), wanted // len(sides)), replace=False)) for side in sides]
        sample = np.empty((sum(map(len, rows)), dim), dtype=np.float32)  # one copy, normalised in place
        start = 0
        for side, chosen, centre in zip(sides, rows, centres or [None] * len(sides), strict=True):
            part = sample[start : start + len(chosen)]
            part[:] = side[chosen]
            faiss.normalize_L2(part)
            centred(part, centre)
            start += len(chosen)
        built.train(sample)
    if parameters:
        faiss.ParameterSpace().set_index_parameters(built, parameters)
    return built


def build_index(
    corpus: np.ndarray,
    index: str = "auto",
    block_size: int = 16384,
    trained: faiss.Index | None = None,
    centre: np.ndarray | None = None,
) -> faiss.Index:
    """A faiss inner-product index over L2-normalised ``corpus`` (`index_spec`), centred on ``centre`` when given: a
    copy of ``trained`` (an empty trained index) if given, else one trained on ``corpus``; vectors added in blocks."""
    n, dim = corpus.shape
    spec = index_spec(n, index)
    if trained is not None:
        built = faiss.clone_index(trained)
    elif spec == "Flat":
        built = faiss.IndexFlatIP(dim)
    else:
        built = train_index(spec, [corpus], dim, centres=[centre])
    for start in range(0, n, block_size):
        built.add(centred(unit_float32(corpus[start : start + block_size]), centre))
    return built


def _device_of(spec: str, corpus: np.ndarray) -> torch.device | None:
    """The device of ``auto``'s search of every vector on a GPU (``Flat|k_factor=…``), None for any other search."""
    return search_device(*corpus.shape) if spec != "Flat" and spec_parts(spec)[0] == "Flat" else None


def prepare(
    corpus: np.ndarray,
    index: str,
    block_size: int = 16384,
    trained: faiss.Index | None = None,
    centre: np.ndarray | None = None,
) -> Prepared:
    """What `knn` reads of ``corpus``, made once for many blocks of queries: for full inverted lists (`inverted_lists`)
    its `list_layout`, for a search on a GPU (`_device_of`) its `device_corpus`, else the index holding it."""
    if device := _device_of(index, corpus):
        return device_corpus(corpus, device)
    if trained is not None and inverted_lists(trained)[1] is not None:
        return list_layout(corpus, trained, centre, block_size)
    return build_index(corpus, index, block_size, trained, centre)


def knn(
    queries: np.ndarray,
    corpus: np.ndarray,
    k: int,
    index: str = "auto",
    block_size: int = 16384,
    trained: faiss.Index | None = None,
    centres: tuple[np.ndarray, np.ndarray] | None = None,
    prepared: Prepared | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities and indices of each query's ``k`` nearest corpus vectors, ``(n_queries, k)`` each.

    An approximate index (any but ``flat``) is asked for its ``k_factor`` (`index_spec`) x ``k`` candidates, which
    are re-scored by their exact cosine, and the best ``k`` of them kept. With ``centres`` (the queries' side's and
    the corpus's, `side_centre`), that index holds the corpus centred on its own mean and is searched with the queries
    centred on theirs; the cosines are of the vectors as they came.
    A query whose scanned inverted lists hold fewer than ``k`` vectors (faiss answers index -1 for what it did not
    find: a clustered or duplicated corpus can leave many lists near a query empty) is searched again exactly.
    ``prepared``: the corpus's `prepare` for ``trained``, made once for many calls (else here). Inverted lists are
    scanned for `SCAN_QUERIES` queries at a time, whose candidates are re-scored before the next are scanned."""
    k = min(k, len(corpus))
    query_centre, corpus_centre = centres or (None, None)
    approximate = (spec := index_spec(len(corpus), index, corpus.shape[1])) != "Flat"
    k_factor = spec_parts(spec)[2]
    asked = min(k_factor * k, len(corpus)) if approximate else k
    device = prepared.stored.device if isinstance(prepared, DeviceCorpus) else None
    if device or (prepared is None and (device := _device_of(spec, corpus))):
        return device_knn(queries, corpus, k, device, k_factor, prepared=prepared)
    if approximate and trained is None:
        trained = train_index(spec, [corpus], corpus.shape[1], centres=[corpus_centre])
    if prepared is None:
        prepared = prepare(corpus, index, block_size, trained, corpus_centre)
    scanned = isinstance(prepared, ListLayout)  # inverted lists of full vectors: scanned by scan_lists
    if approximate:  # exact cosines of candidates: inner products with the corpus as it is, times 1 / |v|
        stored = np.asarray(corpus, dtype=np.float32, order="C")  # the corpus itself when it is float32 already
        inverse_norm = inverse_norms(stored, block_size)
    similarities = np.empty((len(queries), k), dtype=np.float32)
    indices = np.empty((len(queries), k), dtype=np.int64)
    scan_size = block_size * max(1, SCAN_QUERIES // block_size)  # whole blocks of queries: scanned, then re-scored
    for start in range(0, len(queries), block_size):
        block = unit_float32(queries[start : start + block_size])
        if scanned:
            if start % scan_size == 0:
                candidates = scan_lists(
                    queries[start : start + scan_size], corpus, trained, asked, centres, block_size, prepared
                )
            offset = start % scan_size
            where = np.ascontiguousarray(candidates[offset : offset + len(block)])
            found = np.empty(where.shape, dtype=np.float32)
        else:
            found, where = prepared.search(centred(block.copy(), query_centre) if centres else block, asked)
        if approximate:
            faiss.fvec_inner_products_by_idx(
                faiss.swig_ptr(found),
                faiss.swig_ptr(block),
                faiss.swig_ptr(stored),
                faiss.swig_ptr(where),
                block.shape[1],
                len(block),
                asked,
            )
            found *= inverse_norm[np.maximum(where, 0)]
            found[where < 0] = -np.inf
            best = np.argsort(-found, axis=1, kind="stable")[:, :k]
            found, where = np.take_along_axis(found, best, 1), np.take_along_axis(where, best, 1)
        similarities[start : start + len(block)], indices[start : start + len(block)] = found, where
    short = np.flatnonzero((indices < 0).any(axis=1))
    if len(short):
        logger.info(
            "%d of %d queries found fewer than %d neighbours in the index: searched exactly",
            len(short),
            len(queries),
            k,
        )
        similarities[short], indices[short] = exact_knn(queries[short], corpus, k, block_size)
    return similarities, indices


def exact_knn(queries: np.ndarray, corpus: np.ndarray, k: int, block_size: int = 16384):
    """``knn`` by exact search (faiss's ``knn_ground_truth``), the corpus read in blocks (no normalised copy of the
    whole of it); fewer than ``k`` sentences in the corpus leave ``-1`` indices."""
    blocks = (unit_float32(corpus[start : start + block_size]) for start in range(0, len(corpus), block_size))
    return knn_ground_truth(unit_float32(queries), blocks, k, metric_type=faiss.METRIC_INNER_PRODUCT, ngpu=0)
