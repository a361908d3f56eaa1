"""Mining's search on a GPU (`hf_xlsr.evaluation.mining.device`): every vector scored by bfloat16 matrix products in
chunks, the best candidates re-scored in float32, and ``auto`` choosing it where a CUDA device holds the corpus. The
search runs here on the CPU device (the same torch code); ``tests/test_cuda.py`` runs it on a GPU."""

from __future__ import annotations

import numpy as np
import torch

from hf_xlsr.evaluation.mining import device as device_module
from hf_xlsr.evaluation.mining import index as index_module
from hf_xlsr.evaluation.mining import margin as margin_module
from hf_xlsr.evaluation.mining import mine, mine_in_shards
from hf_xlsr.evaluation.mining import search as search_module


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Vectors around 20 topics of very different sizes: many near-ties among a query's neighbours."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(20, dim))
    weights = np.arange(1, 21) ** 2 / np.sum(np.arange(1, 21) ** 2)
    return (topics[rng.choice(20, size=n, p=weights)] + 0.5 * rng.normal(size=(n, dim))).astype(np.float32)


def test_every_vector_scored_in_chunks_finds_what_a_float64_search_finds():
    """3,000 corpus vectors in chunks of 700 (the last of 200), 800 queries in blocks of 96: each query's 4 nearest
    against the cosines written out in float64; the similarities are the float64 cosines of the neighbours found, best
    first; one chunk of the whole corpus gives the same neighbours."""
    corpus, queries = clustered(3000, 24, 0), clustered(800, 24, 1)
    cpu = torch.device("cpu")
    sims, ids = device_module.device_knn(queries, corpus, 4, cpu, block_size=96, chunk=700)
    cosines = unit(queries.astype(np.float64)) @ unit(corpus.astype(np.float64)).T
    exact = np.argsort(-cosines, axis=1, kind="stable")[:, :4]
    assert ids.shape == (800, 4) and ids.dtype == np.int64
    assert np.mean(ids == exact) > 0.99  # bfloat16 candidates, 16 per query, re-scored in float32
    assert np.allclose(np.take_along_axis(cosines, ids, axis=1), sims, atol=1e-5)
    assert (np.diff(sims, axis=1) <= 0).all()
    whole = device_module.device_knn(queries, corpus, 4, cpu, block_size=800, chunk=3000)
    assert np.array_equal(whole[1], ids)
    # k_factor sets the candidates re-scored: one per neighbour keeps bfloat16's order, which swaps near-ties
    rough = device_module.device_knn(queries, corpus, 4, cpu, k_factor=1, block_size=96, chunk=700)[1]
    assert np.mean(rough == exact) < np.mean(ids == exact)


def test_auto_searches_every_vector_where_a_device_holds_the_corpus(monkeypatch):
    """Without CUDA there is no search device; given one (here the CPU, by the same code), ``auto`` from
    `IVF_THRESHOLD` searches every vector there, and mining pairs what exact search pairs."""
    if not torch.cuda.is_available():
        assert device_module.search_device(10, 10) is None
    cpu = torch.device("cpu")
    monkeypatch.setattr(index_module, "search_device", lambda n, dim: cpu)
    monkeypatch.setattr(search_module, "search_device", lambda n, dim: cpu)
    assert index_module.index_spec(60_000, "auto", 384) == "Flat|k_factor=4"
    assert index_module.index_spec(49_999, "auto", 384) == "Flat"  # below it, faiss's exact search as everywhere
    assert index_module.index_spec(60_000, "ivf", 384).startswith("PCA128,IVF244,Flat|")  # an index asked for is kept
    searched = []
    knn = device_module.device_knn
    monkeypatch.setattr(
        search_module, "device_knn", lambda *args, **kw: searched.append(len(args[0])) or knn(*args, **kw)
    )
    monkeypatch.setattr(index_module, "IVF_THRESHOLD", 1000)
    monkeypatch.setattr(margin_module, "IVF_THRESHOLD", 1000)
    x, y = clustered(4000, 24, 2), clustered(4000, 24, 2) + 0.05 * np.random.default_rng(3).normal(size=(4000, 24))
    found = mine(x, y.astype(np.float32), k=4)
    assert searched == [4000, 4000]  # both directions on the device
    exact = mine(x, y.astype(np.float32), k=4, index="flat")
    pairs = dict(zip(zip(exact.source.tolist(), exact.target.tolist(), strict=True), exact.scores, strict=True))
    same = [
        (pair, score)
        for pair, score in zip(
            zip(found.source.tolist(), found.target.tolist(), strict=True), found.scores, strict=True
        )
        if pair in pairs
    ]
    assert len(same) > 0.99 * len(pairs) and all(abs(score - pairs[pair]) < 1e-5 for pair, score in same)


def test_a_job_in_shards_on_the_device_moves_each_corpus_there_once_and_pairs_what_one_search_pairs(
    monkeypatch, tmp_path
):
    """`mine_in_shards` with ``auto`` on a device: each direction's corpus is copied to the device once for its 4
    shards of queries (`search.prepare`), and the job pairs what one `mine` on the device pairs."""
    cpu = torch.device("cpu")
    for module in (index_module, search_module):
        monkeypatch.setattr(module, "search_device", lambda n, dim: cpu)
    monkeypatch.setattr(index_module, "IVF_THRESHOLD", 1000)
    monkeypatch.setattr(margin_module, "IVF_THRESHOLD", 1000)
    copies, copy = [], device_module.device_corpus
    monkeypatch.setattr(
        search_module, "device_corpus", lambda corpus, *rest: copies.append(len(corpus)) or copy(corpus, *rest)
    )
    x, y = clustered(2800, 16, 6), clustered(2800, 16, 7)
    sharded = mine_in_shards(x, y, tmp_path / "job", shard_size=700)
    assert copies == [2800, 2800]
    whole = mine(x, y)
    assert np.array_equal(sharded.source, whole.source) and np.array_equal(sharded.target, whole.target)
    assert np.array_equal(sharded.scores, whole.scores)


def test_a_corpus_smaller_than_the_candidates_asked_for():
    """5 corpus vectors in chunks of 2: fewer in each chunk, and in all, than 4 neighbours' 16 candidates."""
    corpus, queries = clustered(5, 8, 4), clustered(3, 8, 5)
    sims, ids = device_module.device_knn(queries, corpus, 4, torch.device("cpu"), chunk=2)
    cosines = unit(queries.astype(np.float64)) @ unit(corpus.astype(np.float64)).T
    assert np.array_equal(ids, np.argsort(-cosines, axis=1, kind="stable")[:, :4])
