"""Margin-based mining: the margin of Eq. 4 against a float64 loop, the modes, known-answer mining, the CLI."""

from __future__ import annotations

import re

import faiss
import numpy as np
import pytest
import torch
from conftest import MINILM
from sentence_transformers import SentenceTransformer

from hf_xlsr.data import load_bible, resolve_reference, unique_pairs
from hf_xlsr.evaluation import MiningEvaluator, hide_pairs, mine, precision_recall_f1
from hf_xlsr.evaluation.mining import best_threshold, knn
from hf_xlsr.evaluation.mining import index as index_module
from hf_xlsr.evaluation.mining import margin as margin_module
from hf_xlsr.evaluation.mining import scan as scan_module
from hf_xlsr.evaluation.mining import search as search_module
from hf_xlsr.evaluation.mining import vectors as vectors_module
from hf_xlsr.utils import current_umask
from hf_xlsr_cli import main


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def reference_forward(x: np.ndarray, y: np.ndarray, k: int, margin: str) -> dict[int, tuple[int, float]]:
    """For every source sentence: its best target by the margin of Eq. 4, among its k nearest, in float64 loops."""
    x, y = unit(x.astype(np.float64)), unit(y.astype(np.float64))

    def neighbourhood(v, others):
        sims = sorted((float(np.dot(v, o)) for o in others), reverse=True)[:k]
        return sum(sims) / (2 * k)

    x_term = [neighbourhood(v, y) for v in x]
    y_term = [neighbourhood(v, x) for v in y]
    best = {}
    for i, v in enumerate(x):
        candidates = sorted(range(len(y)), key=lambda j: -float(np.dot(v, y[j])))[:k]
        scored = []
        for j in candidates:
            cosine, around = float(np.dot(v, y[j])), x_term[i] + y_term[j]
            scored.append((cosine / around if margin == "ratio" else cosine - around, j))
        score, j = max(scored)
        best[i] = (j, score)
    return best


@pytest.mark.parametrize("margin", ["ratio", "distance"])
def test_margin_scores_match_a_float64_loop(margin):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 8)), rng.normal(size=(40, 8))
    y[:30] = x + 0.3 * rng.normal(size=(30, 8))  # some true pairs so that scores spread
    reference = reference_forward(x, y, k=3, margin=margin)
    pairs = mine(x, y, k=3, margin=margin, mode="forward")
    for s, t, score in zip(pairs.source, pairs.target, pairs.scores, strict=True):
        assert reference[s][0] == t
        assert score == pytest.approx(reference[s][1], rel=1e-5)
    # greedy one-to-one: every source and target at most once, best scores first
    assert len(set(pairs.source)) == len(pairs) == len(set(pairs.target))
    assert np.all(np.diff(pairs.scores) <= 0)


def test_modes_relate_as_defined():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(50, 16)), rng.normal(size=(60, 16))
    y[:40] = x[:40] + 0.5 * rng.normal(size=(40, 16))

    def as_set(pairs):
        return set(zip(pairs.source.tolist(), pairs.target.tolist(), strict=True))

    forward, backward = as_set(mine(x, y, mode="forward")), as_set(mine(x, y, mode="backward"))
    intersect = as_set(mine(x, y, mode="intersect"))
    assert intersect <= forward and intersect <= backward
    assert len(mine(x, y, mode="max")) >= len(intersect)
    with pytest.raises(ValueError, match="mode must be one of"):
        mine(x, y, mode="both")


def test_blocks_and_ivf_agree_with_exact_search(monkeypatch):
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(20, 16))
    corpus = centres[rng.integers(0, 20, size=4000)] + 0.2 * rng.normal(size=(4000, 16))
    queries = corpus[:300] + 0.01 * rng.normal(size=(300, 16))
    exact_sims, exact_ids = knn(queries, corpus, 4, index="flat")
    small_sims, small_ids = knn(queries, corpus, 4, index="flat", block_size=37)
    assert np.array_equal(exact_ids, small_ids) and np.allclose(exact_sims, small_sims)
    monkeypatch.setattr(index_module, "IVF_THRESHOLD", 1000)  # "auto" now picks IVF for 4,000 vectors
    # min(sqrt(4,000), 4,000 / 39) = 63 lists of full vectors (16 dimensions: no PCA map), 63 // 4 = 15 of them
    # scanned (knn re-scores each query's 4 x 4 best candidates exactly)
    ivf = faiss.downcast_index(search_module.build_index(corpus, "auto"))
    assert (type(ivf).__name__, ivf.nlist, ivf.nprobe) == ("IndexIVFFlat", 63, 15)
    _, ivf_ids = knn(queries, corpus, 4, index="auto")
    assert np.mean(ivf_ids[:, 0] == exact_ids[:, 0]) > 0.95
    assert np.mean(ivf_ids == exact_ids) > 0.95  # all 4 nearest, in order: 99.4%
    # k_factor sets the candidates re-scored: with one bit per dimension, 96% with 8 x 4, 42% with 1 x 4
    agree = {
        factor: np.mean(knn(queries, corpus, 4, f"IVF63,RaBitQ|nprobe=16,k_factor={factor}")[1] == exact_ids)
        for factor in (1, 8)
    }
    assert agree[8] > 0.9 and agree[1] < 0.6, agree


SCANS = [  # int8: a CPU with VNNI or AMX (this one); bfloat16: AVX-512 BF16 without them; float32: neither
    ("int8", "IVF30,Flat|nprobe=5", None),
    ("bfloat16", "IVF30,Flat|nprobe=5", None),
    ("float32", "IVF30,Flat|nprobe=5", None),
    ("float32", "PCA12,IVF30,Flat|nprobe=5", None),
    ("int8", "PCA12,IVF30,Flat|nprobe=5", None),
    ("int8", "IVF30,Flat|nprobe=5", 96),
    ("bfloat16", "IVF30,Flat|nprobe=5", 96),
]


@pytest.mark.parametrize(("products", "spec", "scan_queries"), SCANS)
def test_scanned_lists_find_what_a_float64_search_of_the_same_lists_finds(monkeypatch, products, spec, scan_queries):
    """scan_lists against the search written out in float64: each query's 5 nearest of 30 lists (each corpus vector
    in the list of its nearest centroid), the 16 best centred scores among their vectors, re-scored by the cosine.
    Behind a PCA map (``PCA12``), lists and scores are of the centred vectors as faiss's map takes them to 12
    dimensions (``A v + b``), the cosines of the 24-dimensional vectors as they came. Clusters of very different sizes
    make lists of very different sizes; at most 5,000 scores per matrix product split the queries of a list into many
    products. With ``scan_queries``, knn scans the 800 queries 96 at a time (re-scored 32 at a time): nine scans, the
    last of 32, and the neighbours of one scan of all."""
    rng = np.random.default_rng(5)
    topics = rng.normal(size=(12, 24))
    weights = np.arange(1, 13) ** 2 / np.sum(np.arange(1, 13) ** 2)
    corpus = topics[rng.choice(12, size=3000, p=weights)] + 0.4 * rng.normal(size=(3000, 24)) + 0.5
    queries = topics[rng.choice(12, size=800, p=weights)] + 0.4 * rng.normal(size=(800, 24)) - 0.5
    dtype = getattr(torch, products)
    monkeypatch.setattr(scan_module, "_products_dtype", lambda: dtype)
    if products == "float32":  # a CPU without native bfloat16 products scores the centroids in float32 too
        monkeypatch.setattr(scan_module, "_float_products_dtype", lambda: torch.float32)
    monkeypatch.setattr(scan_module, "SCAN_SCORES", 5000)
    centres = vectors_module.side_centre(queries), vectors_module.side_centre(corpus)
    trained = search_module.train_index(spec, [queries, corpus], 24, centres=centres)
    sims, ids = knn(queries, corpus, 4, spec, trained=trained, centres=centres)
    if scan_queries:
        scanned, scan = [], search_module.scan_lists
        monkeypatch.setattr(
            search_module, "scan_lists", lambda queries, *rest: scanned.append(len(queries)) or scan(queries, *rest)
        )
        monkeypatch.setattr(search_module, "SCAN_QUERIES", scan_queries)
        in_blocks = knn(queries, corpus, 4, spec, block_size=32, trained=trained, centres=centres)
        assert scanned == [96] * 8 + [32]
        assert np.array_equal(in_blocks[1], ids) and np.array_equal(in_blocks[0], sims)
    transform, ivf = scan_module.inverted_lists(trained)
    assert ivf.nlist == 30 and (transform is None) == spec.startswith("IVF")

    def mapped(vectors: np.ndarray) -> np.ndarray:
        if transform is None:
            return vectors
        matrix = faiss.vector_to_array(transform.A).reshape(12, 24).astype(np.float64)
        return vectors @ matrix.T + faiss.vector_to_array(transform.b)

    centroids = ivf.quantizer.reconstruct_n(0, 30).astype(np.float64)
    centred_queries = mapped(unit(unit(queries) - centres[0]))
    centred_corpus = mapped(unit(unit(corpus) - centres[1]))
    home = np.argmax(centred_corpus @ centroids.T, axis=1)
    probed = np.argsort(-(centred_queries @ centroids.T), axis=1)[:, :5]
    cosines, centred = unit(queries) @ unit(corpus).T, centred_queries @ centred_corpus.T
    reference = []
    for query in range(len(queries)):
        members = np.flatnonzero(np.isin(home, probed[query]))
        candidates = members[np.argsort(-centred[query, members])[:16]]
        reference.append(candidates[np.argsort(-cosines[query, candidates])[:4]])
    reference = np.array(reference)
    if products == "float32":
        assert np.mean(reference == ids) > 0.99
    else:  # int8 and bfloat16 products swap near-ties at the 16th candidate, as often for better as for worse: 84%
        # (int8) and 83% (bfloat16) of 24-dimensional neighbours in the reference's places, 73% (int8) of 12-d ones
        exact = np.argsort(-cosines, axis=1)[:, :4]
        assert np.mean(reference == ids) > 0.7
        assert abs(np.mean(ids == exact) - np.mean(reference == exact)) < 0.01
    assert np.allclose(np.take_along_axis(cosines, ids, axis=1), sims, atol=1e-5)


def test_auto_probes_a_share_of_its_lists():
    index_spec = index_module.index_spec
    assert index_spec(49_999) == "Flat"
    assert index_spec(50_000) == "IVF223,Flat|nprobe=55"  # sqrt(n) lists, a quarter of them probed
    assert index_spec(409_226) == "IVF639,Flat|nprobe=64"  # at most 64
    assert index_spec(4_000_000) == "IVF2000,Flat|nprobe=64"
    # vectors of more than 128 dimensions are scanned mapped to 128 by PCA, 8 x k re-scored
    assert index_spec(60_000, "auto", 129) == "PCA128,IVF244,Flat|nprobe=61,k_factor=8"
    assert index_spec(60_000, "auto", 128) == "IVF244,Flat|nprobe=61"
    assert index_spec(3_000, "ivf", 384) == "IVF54,Flat|nprobe=13"  # lists asked of a few vectors: no PCA of them
    assert index_spec(2_000_000, "auto", 512) == "PCA128,IVF1414,Flat|nprobe=64,k_factor=8"
    assert index_spec(2_000_000, "auto", 128) == "IVF1414,Flat|nprobe=64"


def test_auto_keeps_the_index_within_the_memory_it_is_given():
    """The list scanner holds both sides in bfloat16 (4 n d bytes, d the PCA-mapped 128); beyond ``memory`` the
    lists hold 8-bit codes (n d bytes, d the vectors' own), beyond that product codes of d / 8 bytes."""
    n, d = 100_000, 384  # 316 lists, 64 probed; PCA-mapped lists 51.2 MB, 8-bit codes 38.4 MB
    reduced = "PCA128,IVF316,Flat|nprobe=64,k_factor=8"
    assert index_module.index_spec(n, "auto", d) == reduced
    assert index_module.index_spec(n, "auto", d, memory=52_000_000) == reduced
    assert index_module.index_spec(n, "auto", d, memory=50_000_000) == "IVF316,SQ8|nprobe=64"
    assert index_module.index_spec(n, "auto", d, memory=20_000_000) == "IVF316,PQ48|nprobe=64"
    assert index_module.index_spec(n, "auto", 128, memory=52_000_000) == "IVF316,Flat|nprobe=64"  # 4 n 128 bytes
    assert index_module.index_spec(10_000, "auto", d, memory=1) == "Flat"  # exact search keeps nothing but blocks
    # a million of 512-d: the PCA-mapped lists hold 4 n 128 bytes (512 MB); 8-bit codes would hold 512 MB too
    assert index_module.index_spec(10**6, "auto", 512, memory=600_000_000).startswith("PCA128,IVF1000,Flat|")
    assert index_module.index_spec(10**6, "auto", 512, memory=500_000_000) == "IVF1000,PQ64|nprobe=64"


@pytest.mark.slow  # two searches of 50,000 vectors both ways
def test_eight_bit_lists_find_the_pairs_full_lists_find(monkeypatch):
    """With candidates re-scored from the vectors themselves, 8-bit codes cost no recall beyond the inverted lists'
    own: 50,000 noisy translations, mined with full lists and with the codes ``memory`` makes ``auto`` pick."""
    trained, train = [], margin_module.train_index

    def recording(spec, *args, **kwargs):
        trained.append(spec)
        return train(spec, *args, **kwargs)

    monkeypatch.setattr(margin_module, "train_index", recording)
    rng = np.random.default_rng(0)
    n, d = 50_000, 64
    x = rng.standard_normal((n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = x + 0.9 * rng.standard_normal((n, d)).astype(np.float32) / np.sqrt(d)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    order = rng.permutation(n)
    y = y[order]
    gold = np.empty(n, dtype=np.int64)
    gold[order] = np.arange(n)  # x[i] translates to y[gold[i]]

    def found(pairs) -> float:
        return float(np.sum(gold[pairs.source] == pairs.target)) / n

    full, coded = mine(x, y, index="auto"), mine(x, y, index="auto", memory=4 * n * d - 1)
    assert trained == ["IVF223,Flat|nprobe=55", "IVF223,SQ8|nprobe=55"]
    assert found(full) > 0.9 and abs(found(coded) - found(full)) < 0.005, (found(full), found(coded))


def test_the_int8_scale_read_in_blocks_is_the_scale_of_the_whole_sample():
    """The corpus's per-dimension int8 multipliers, read a few rows at a time (so that no more than a block of the
    sample is held), equal 127 over each dimension's largest magnitude over every row, computed in float64."""
    rng = np.random.default_rng(5)
    corpus = (rng.normal(size=(1000, 24)) * rng.uniform(0.1, 3.0, size=24)).astype(np.float32)
    centre = unit(corpus).mean(axis=0).astype(np.float32)
    pca = faiss.PCAMatrix(24, 8)
    pca.train(corpus)
    rows = unit(corpus).astype(np.float64) - centre
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    matrix = faiss.vector_to_array(pca.A).reshape(8, 24).astype(np.float64)
    mapped = rows @ matrix.T + faiss.vector_to_array(pca.b)
    expected = 127 / np.abs(mapped).max(axis=0)
    for block_size in (7, 1000):
        assert np.allclose(scan_module._int8_scale(corpus, centre, pca, block_size), expected, rtol=1e-5)
    assert np.allclose(
        scan_module._int8_scale(corpus, None, None, 7), 127 / np.abs(unit(corpus)).max(axis=0), rtol=1e-5
    )


def test_a_linear_map_applied_a_few_rows_at_a_time_maps_every_row_as_float64_does(monkeypatch):
    """faiss's PCA map of 1,000 vectors, 7 rows at a time (a last chunk of 6): each row is ``A v + b`` in float64,
    rounded to float32 once."""
    rng = np.random.default_rng(6)
    vectors = rng.normal(size=(1000, 24)).astype(np.float32)
    pca = faiss.PCAMatrix(24, 8)
    pca.train(vectors)
    matrix = faiss.vector_to_array(pca.A).reshape(8, 24).astype(np.float64)
    expected = (vectors.astype(np.float64) @ matrix.T + faiss.vector_to_array(pca.b)).astype(np.float32)
    monkeypatch.setattr(scan_module, "MAP_ROWS", 7)
    mapped = scan_module._mapped(vectors, pca)
    assert mapped.dtype == np.float32 and np.array_equal(mapped, expected)


def test_a_query_whose_scanned_lists_hold_too_few_vectors_is_searched_exactly():
    # 50 sentences repeated 60 times: k-means puts 64 lists on 50 points, so many lists are empty, and a query that
    # scans one list often finds fewer than k vectors there (faiss answers index -1, similarity -3.4e38)
    rng = np.random.default_rng(4)
    centres = rng.normal(size=(50, 16))
    corpus = np.repeat(centres, 60, axis=0)
    queries = centres[rng.integers(0, 50, size=500)] + 0.05 * rng.normal(size=(500, 16))
    spec = "IVF64,Flat|nprobe=1"
    raw_ids = search_module.build_index(corpus, spec).search(vectors_module.unit_float32(queries), 8)[1]
    assert (raw_ids < 0).any(axis=1).sum() > 20  # the case arises: these queries need the fallback
    sims, ids = knn(queries, corpus, 8, index=spec)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    cosines = unit(queries) @ unit(corpus).T  # float64 reference
    assert (ids >= 0).all()
    assert np.allclose(np.take_along_axis(cosines, ids, axis=1), sims, atol=1e-5)  # each index is its similarity
    assert np.allclose(np.sort(sims, axis=1), np.sort(cosines, axis=1)[:, -8:], atol=1e-5)  # the true 8 nearest
    pairs = mine(queries, corpus, k=8, index=spec)
    assert np.isfinite(pairs.scores).all() and (pairs.target >= 0).all()


def languages_apart(n: int = 4000, dim: int = 32, offset: float = 0.8, seed: int = 0):
    """Two languages that an encoder keeps apart: a meaning on the unit sphere (40 topics) plus one direction per
    language of norm ``offset``; ``y[i]`` translates ``x[i]``."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(40, dim))
    meaning = unit(topics[rng.integers(0, 40, size=n)] + 0.7 * rng.normal(size=(n, dim)))
    language = offset * unit(rng.normal(size=(2, dim)))
    return tuple(meaning + language[i] + 0.05 * rng.normal(size=meaning.shape) for i in range(2))


def test_an_approximate_index_searches_each_language_centred_on_its_own_mean(monkeypatch):
    x, y = languages_apart()
    spec = "IVF64,Flat|nprobe=4"  # 4 of 64 lists scanned
    searched_exactly, exact_knn = [], search_module.exact_knn

    def counted(queries, *args):
        searched_exactly.append(len(queries))
        return exact_knn(queries, *args)

    monkeypatch.setattr(search_module, "exact_knn", counted)
    exact = dict(zip(*(lambda p: (p.source.tolist(), p.target.tolist()))(mine(x, y, index="flat")), strict=True))
    assert np.mean([s == t for s, t in exact.items()]) > 0.95  # exact search finds the translations

    def agreement(pairs):
        found = dict(zip(pairs.source.tolist(), pairs.target.tolist(), strict=True))
        return np.mean([found.get(s) == t for s, t in exact.items()])

    # as they came, a query's 4 nearest lists hold its own language: for most queries none of them holds the 16
    # sentences of the other one that a floor needs (scan_lists), and they are searched again exactly
    mine(x, y, index=spec, centre=False)
    assert sum(searched_exactly) > len(x)
    searched_exactly.clear()
    centred = mine(x, y, index=spec)  # each side centred on its own mean: the index itself finds them
    assert searched_exactly == [] and agreement(centred) > 0.97
    # knn against the algorithm written out: the same trained lists holding y centred on its mean, searched with x
    # centred on its own, the best 16 candidates re-scored by the cosine of the vectors as they came (float64); the
    # lists scanned by scan_lists, and 8-bit codes that faiss searches itself
    centres = vectors_module.side_centre(x), vectors_module.side_centre(y)
    cosines = unit(x) @ unit(y).T
    exact = np.argsort(-cosines, axis=1)[:, :4]
    for searched in (spec, "IVF64,SQ8|nprobe=4"):
        trained = search_module.train_index(searched, [x, y], x.shape[1], centres=centres)
        sims, ids = knn(x, y, 4, searched, trained=trained, centres=centres)
        reference = faiss.clone_index(trained)
        reference.add(unit(unit(y) - centres[1]).astype(np.float32))
        candidates = reference.search(unit(unit(x) - centres[0]).astype(np.float32), 16)[1]
        best = np.argsort(-np.take_along_axis(cosines, candidates, axis=1), axis=1)[:, :4]
        reference = np.take_along_axis(candidates, best, axis=1)
        if searched == spec:  # bfloat16 products (where the CPU has them) swap near-ties at the 16th, 97% the same
            assert np.mean(reference == ids) > 0.95 and np.mean(ids == exact) > np.mean(reference == exact) - 0.01
        else:  # faiss's own search of the same codes: the same candidates
            assert np.mean(reference == ids) > 0.99, np.mean(reference == ids)
        assert np.allclose(np.take_along_axis(cosines, ids, axis=1), sims, atol=1e-5)
        assert (np.diff(sims, axis=1) <= 0).all()
    centre = unit(x).mean(axis=0)
    assert np.allclose(vectors_module.side_centre(x, block_size=333), centre, atol=1e-6)


def test_one_trained_index_serves_both_directions_and_factory_strings_are_indexes(monkeypatch):
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(30, 16))
    x = centres[rng.integers(0, 30, size=3000)] + 0.2 * rng.normal(size=(3000, 16))
    y = x + 0.05 * rng.normal(size=x.shape)  # y[i] translates x[i]
    trained, original = [], search_module.train_index

    def counted(spec, *args, **kwargs):
        trained.append(spec)
        return original(spec, *args, **kwargs)

    monkeypatch.setattr(margin_module, "train_index", counted)  # where mine looks it up
    exact = mine(x, y, index="flat")
    cases = [
        ("ivf", "IVF54,Flat|nprobe=13"),  # min(sqrt(3,000), 3,000 / 39) lists, a quarter of them probed
        ("IVF32,RaBitQ|nprobe=8", "IVF32,RaBitQ|nprobe=8"),
        ("HNSW16|efSearch=64", "HNSW16|efSearch=64"),
        ("IVF32,SQ8|nprobe=8", "IVF32,SQ8|nprobe=8"),
    ]
    for index, spec in cases:
        trained.clear()
        pairs = mine(x, y, index=index)
        assert trained == [spec]  # one index, trained on both sides, copied for the second direction
        found = dict(zip(pairs.source.tolist(), pairs.target.tolist(), strict=True))
        reference = dict(zip(exact.source.tolist(), exact.target.tolist(), strict=True))
        assert np.mean([found.get(s) == t for s, t in reference.items()]) > 0.9, index
    with pytest.raises(ValueError, match="index 'IVF10,PQ5': faiss cannot build it for 16-dimensional vectors"):
        index_module.check_index("IVF10,PQ5", 16)
    with pytest.raises(ValueError, match="index must be 'auto', 'flat', 'ivf' or a faiss index_factory string"):
        index_module.index_spec(10, "hnsw")
    with pytest.raises(ValueError, match=re.escape("index 'IVF10,Flat|nprobe=2,k_factor=0': k_factor must be")):
        index_module.check_index("IVF10,Flat|nprobe=2,k_factor=0", 16)
    index_module.check_index("IVF10,Flat|nprobe=2,k_factor=3", 16)  # k_factor is knn's, not passed to faiss


def best_first(source, target, scores):
    """The definition of one-to-one pairing, as a loop: candidates best first (ties in the order given), each kept
    unless its source or target sentence is already paired."""
    used_source, used_target, kept = set(), set(), []
    for i in sorted(range(len(scores)), key=lambda i: -scores[i]):
        if source[i] not in used_source and target[i] not in used_target:
            used_source.add(source[i])
            used_target.add(target[i])
            kept.append((int(source[i]), int(target[i]), float(scores[i])))
    return kept


def test_one_to_one_pairing_is_the_best_first_loop_without_its_loop():
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(200):  # many conflicts and ties: scores rounded to one to three decimals
        n, m = int(rng.integers(1, 2000)), int(rng.integers(1, 150))
        cases.append((rng.integers(0, m, n), rng.integers(0, m, n), np.round(rng.random(n), int(rng.integers(1, 4)))))
    n = 3000  # a chain of conflicts, each candidate better than the next: settled one per round, then by the loop
    cases.append((np.arange(n) // 2, (np.arange(n) + 1) // 2, -np.arange(n, dtype=float)))
    for source, target, scores in cases:
        pairs = margin_module.greedy_one_to_one(source, target, scores)
        found = list(zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True))
        assert found == best_first(source.tolist(), target.tolist(), scores.tolist())


def test_best_threshold_maximises_f1():
    pairs = mine(np.eye(6), np.eye(6) + 0.01, mode="forward")
    gold = {(0, 0), (1, 1), (2, 2), (5, 4)}
    threshold, f1 = best_threshold(pairs, gold)
    brute = max(precision_recall_f1(pairs.above(t), gold)["f1"] for t in pairs.scores)
    assert f1 == pytest.approx(brute)
    assert precision_recall_f1(pairs.above(threshold), gold)["f1"] == pytest.approx(f1)


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformer(resolve_reference(MINILM), device="cpu")


def test_hidden_parallel_verses_are_found(minilm):
    """Known answer: 100 held-out verses (two English translations) hidden among 400 unpaired verses per side."""
    verses = unique_pairs(load_bible(["en", "kjv"], {"kjv": "k"}, split="heldout"), ["en", "kjv"])
    split = hide_pairs(verses["en"], verses["kjv"], n_gold=100, n_unpaired=400, seed=3)
    assert len(split.source) == len(split.target) == 500 and len(split.gold) == 100
    english = list(verses["en"])
    for s, t in split.gold:
        assert verses["kjv"][english.index(split.source[s])] == split.target[t]
    pairs = mine(minilm.encode(split.source), minilm.encode(split.target), k=4, margin="ratio", mode="max")
    threshold, f1 = best_threshold(pairs, set(split.gold))
    assert f1 > 0.9, f1


def test_mining_evaluator_chooses_threshold_on_dev_and_scores_test(minilm):
    evaluator = MiningEvaluator.from_bible(["en", "kjv"], n_gold=60, n_unpaired=240, translations={"kjv": "k"})
    dev_sources, test_sources = set(evaluator.dev.source), set(evaluator.test.source)
    assert not dev_sources & test_sources  # Old Testament books for dev, New Testament for test
    metrics = evaluator(minilm)
    assert set(metrics) == {"mining_precision", "mining_recall", "mining_f1", "mining_threshold", "mining_dev_f1"}
    assert metrics["mining_f1"] > 0.85 and metrics["mining_threshold"] > 1.0


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_mine_command_keeps_the_customary_ratio_cut_by_default(tmp_path, capsys):
    """100 verse pairs (two English translations) hidden among 150 unpaired verses per side: the default cut keeps
    fewer pairs than --all-pairs, at a higher precision; the embeddings go to memory-mapped files."""
    verses = unique_pairs(load_bible(["en", "kjv"], {"kjv": "k"}, split="heldout"), ["en", "kjv"])
    split = hide_pairs(verses["en"], verses["kjv"], n_gold=100, n_unpaired=150, seed=5)
    source, target = write_lines(tmp_path / "src.txt", split.source), write_lines(tmp_path / "tgt.txt", split.target)
    model = resolve_reference(MINILM)
    common = ["mine", "--model", model, "--source", str(source), "--target", str(target)]
    assert main([*common, "--output", str(tmp_path / "default.tsv"), "--embeddings", str(tmp_path / "vectors")]) == 0
    assert "keeping pairs whose ratio margin is at least 1.06" in capsys.readouterr().out
    assert np.load(tmp_path / "vectors" / "source.npy", mmap_mode="r").shape == (250, 384)
    assert main([*common, "--output", str(tmp_path / "all.tsv"), "--all-pairs"]) == 0
    gold = set(split.gold)

    def precision(path):
        rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
        return sum((int(r[1]) - 1, int(r[2]) - 1) in gold for r in rows) / len(rows), len(rows)

    (cut, kept), (everything, mined) = precision(tmp_path / "default.tsv"), precision(tmp_path / "all.tsv")
    assert kept < mined and cut > everything + 0.2, (cut, kept, everything, mined)
    with pytest.raises(SystemExit):
        main([*common, "--output", str(tmp_path / "d.tsv"), "--margin", "distance"])
    assert "the distance margin has no customary cut: give --threshold" in capsys.readouterr().err


@pytest.mark.parametrize("index", ["auto", "ivf", "IVF4,Flat|nprobe=2", "IVF4,RaBitQ|nprobe=2,k_factor=8"])
def test_mine_command_writes_scored_pairs(tmp_path, minilm, index):
    verses = load_bible(["en", "kjv"], {"kjv": "k"}, split="heldout").select(range(40))
    (tmp_path / "a.txt").write_text("\n".join(verses["en"][:30]) + "\n\n", encoding="utf-8")  # a blank line too
    (tmp_path / "b.txt").write_text("\n".join(reversed(verses["kjv"][10:40])), encoding="utf-8")
    model_dir = resolve_reference(MINILM)
    assert (
        main(
            [
                "mine",
                "--model",
                model_dir,
                "--source",
                str(tmp_path / "a.txt"),
                "--target",
                str(tmp_path / "b.txt"),
                "--output",
                str(tmp_path / "pairs.tsv"),
                "--threshold",
                "1.0",
                "--index",
                index,
            ]
        )
        == 0
    )
    rows = [line.split("\t") for line in (tmp_path / "pairs.tsv").read_text(encoding="utf-8").splitlines()]
    scores = [float(r[0]) for r in rows]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 1.0
    # source line i holds verse i - 1; target line j holds verse 40 - j: lines 11..30 pair with target 41 - i
    correct = sum(11 <= int(r[1]) <= 30 and int(r[2]) == 41 - int(r[1]) for r in rows)
    assert correct >= 18, rows
    assert all(r[3] == verses["en"][int(r[1]) - 1] for r in rows)


@pytest.fixture(scope="module")
def routed_export(tmp_path_factory, tokenizer):
    """A tiny en-fr dual encoder exported as a Router with one route per language."""
    from conftest import tiny_dual_momentum

    from hf_xlsr.export import export_sentence_transformers

    folder = tmp_path_factory.mktemp("routed") / "export"
    return str(export_sentence_transformers(tiny_dual_momentum(), tokenizer, folder))


def test_mine_infers_the_two_routes_names_a_wrong_language_and_warns_about_one_file(
    tmp_path, routed_export, capsys, caplog
):
    verses = load_bible(["en", "fr"], split="heldout").select(range(12))
    source = write_lines(tmp_path / "en.txt", verses["en"])
    target = write_lines(tmp_path / "fr.txt", verses["fr"])
    common = ["mine", "--model", routed_export, "--source", str(source), "--all-pairs"]
    # the routes en, fr inferred
    assert main([*common, "--target", str(target), "--output", str(tmp_path / "pairs.tsv")]) == 0
    assert oct((tmp_path / "pairs.tsv").stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                *common,
                "--target",
                str(target),
                "--output",
                str(tmp_path / "de.tsv"),
                "--source-language",
                "en",
                "--target-language",
                "de",
            ]
        )
    assert exit_info.value.code == 2 and not (tmp_path / "de.tsv").exists()
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after the model's loading bar
    assert error == "hf-xlsr mine: error: --target-language de: the model encodes en, fr, not de"
    with pytest.raises(SystemExit):
        main([*common, "--target", str(target), "--output", str(tmp_path / "x.tsv"), "--source-language", "en"])
    assert "give --target-language, one of en, fr" in capsys.readouterr().err
    with caplog.at_level("WARNING"):
        assert main([*common, "--target", str(source), "--output", str(tmp_path / "same.tsv")]) == 0
    assert "--source and --target are the same file" in caplog.text


def test_evaluate_names_a_language_the_export_does_not_route(tmp_path, routed_export, capsys):
    with pytest.raises(SystemExit):
        main(
            [
                "evaluate",
                "--model",
                routed_export,
                "--languages",
                "en",
                "de",
                "--tasks",
                "retrieval",
                "--output",
                str(tmp_path / "r.json"),
            ]
        )
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == f"hf-xlsr evaluate: error: {routed_export}: encodes en, fr each its own way, not de"


def test_mine_refuses_an_index_faiss_cannot_build_before_embedding(tmp_path, routed_export, capsys):
    verses = load_bible(["en", "fr"], split="heldout").select(range(5))
    source, target = write_lines(tmp_path / "en.txt", verses["en"]), write_lines(tmp_path / "fr.txt", verses["fr"])
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "mine",
                "--model",
                routed_export,
                "--source",
                str(source),
                "--target",
                str(target),
                "--output",
                str(tmp_path / "pairs.tsv"),
                "--index",
                "IVF10,PQ5",
                "--embeddings",
                str(tmp_path / "vectors"),
            ]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(
        "hf-xlsr mine: error: --index: index 'IVF10,PQ5': faiss cannot build it for 32-dimensional"
    )
    assert not (tmp_path / "vectors").exists() and not (tmp_path / "pairs.tsv").exists()


def test_encode_without_a_language_on_a_routed_model_names_the_routes_not_none(tmp_path, routed_export, capsys):
    sentences = tmp_path / "s.txt"
    sentences.write_text("le chat dort .\n")
    with pytest.raises(SystemExit):
        main(["encode", "--model", routed_export, "--input", str(sentences), "--output", str(tmp_path / "v.npy")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(
        "no --language: the model encodes each of en, fr its own way; give one of them with --language"
    )
    assert "None" not in error and not (tmp_path / "v.npy").exists()


def test_the_earlier_spellings_of_mine_and_export_options_still_work_with_a_notice(tmp_path, routed_export, capsys):
    """``--src``, ``--tgt``, ``--out``, ``--src-lang``, ``--tgt-lang`` and export's ``--max-seq-length`` are the
    earlier names of ``--source``, ``--target``, ``--output``, ``--source-language``, ``--target-language`` and
    ``--max-length``: they work, each with a one-line notice naming the new spelling."""
    verses = load_bible(["en", "fr"], split="heldout").select(range(6))
    source, target = write_lines(tmp_path / "en.txt", verses["en"]), write_lines(tmp_path / "fr.txt", verses["fr"])
    with pytest.warns(FutureWarning) as caught:
        assert (
            main(
                [
                    "mine",
                    "--model",
                    routed_export,
                    "--src",
                    str(source),
                    "--tgt",
                    str(target),
                    "--out",
                    str(tmp_path / "pairs.tsv"),
                    "--src-lang",
                    "en",
                    "--tgt-lang",
                    "fr",
                    "--all-pairs",
                ]
            )
            == 0
        )
    notices = sorted(str(w.message).split(" is now ")[0] for w in caught if issubclass(w.category, FutureWarning))
    assert notices == ["--out", "--src", "--src-lang", "--tgt", "--tgt-lang"]
    assert (tmp_path / "pairs.tsv").read_text().count("\n") > 0
    with pytest.raises(SystemExit) as exit_info:
        main(["mine", "--model", routed_export, "--source", str(source), "--output", str(tmp_path / "p.tsv")])
    assert exit_info.value.code == 2 and "the following arguments are required: --target" in capsys.readouterr().err


def test_an_approximate_index_on_a_corpus_small_enough_for_exact_search_warns(caplog):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((400, 16)).astype(np.float32), rng.standard_normal((400, 16)).astype(np.float32)
    with caplog.at_level("WARNING", logger="hf_xlsr.evaluation.mining"):
        mine(x, y, index="ivf")
    assert "on 400 sentences per side: below 50000, exact search" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="hf_xlsr.evaluation.mining"):
        mine(x, y, index="auto")
    assert "exact search" not in caplog.text


def test_mine_memory_takes_a_size_and_reaches_the_search(tmp_path, monkeypatch, capsys):
    """``--memory 8GB`` reaches ``mine`` as bytes (8 x 1000^3; GiB counts in 1024s); a size that is none is refused."""
    from hf_xlsr_cli import byte_size

    assert [byte_size(t) for t in ("8GB", "512MB", "2.5GiB", "1000", "3KB")] == [
        8_000_000_000,
        512_000_000,
        int(2.5 * 1024**3),
        1000,
        3000,
    ]
    seen = []
    import hf_xlsr.evaluation.mining.job as job_module

    real = job_module.index_spec

    def recording(n, index="auto", dim=0, memory=None):
        seen.append(memory)
        return real(n, index, dim, memory)

    monkeypatch.setattr(job_module, "index_spec", recording)
    (tmp_path / "en.txt").write_text("In the beginning.\nJesus wept.\n")
    (tmp_path / "fr.txt").write_text("Au commencement.\nJésus pleura.\n")
    argv = ["mine", "--model", resolve_reference(MINILM), "--source", str(tmp_path / "en.txt"), "--target",
            str(tmp_path / "fr.txt"), "--output", str(tmp_path / "pairs.tsv"), "--all-pairs"]  # fmt: skip
    assert main([*argv, "--memory", "2GiB"]) == 0 and seen == [2 * 1024**3]
    with pytest.raises(SystemExit):
        main([*argv, "--memory", "lots"])
    assert "argument --memory: 'lots' is not a size" in capsys.readouterr().err


def test_exact_search_in_blocks_is_the_float64_cosine_ranking_and_marks_missing_neighbours():
    """`exact_knn` over a corpus read in blocks of 7: each query's 5 nearest by the cosine written out in float64,
    the indices counted across blocks; a corpus of 3 leaves the last 2 of 5 as -1."""
    from hf_xlsr.evaluation.mining import exact_knn

    rng = np.random.default_rng(3)
    queries, corpus = rng.normal(size=(6, 16)), rng.normal(size=(40, 16))
    cosines = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    ).T
    similarities, indices = exact_knn(queries.astype(np.float32), corpus.astype(np.float32), 5, block_size=7)
    assert np.array_equal(indices, np.argsort(-cosines, axis=1)[:, :5])
    assert np.allclose(similarities, np.sort(cosines, axis=1)[:, ::-1][:, :5], atol=1e-5)
    _, few = exact_knn(queries.astype(np.float32), corpus[:3].astype(np.float32), 5, block_size=2)
    assert (few[:, 3:] == -1).all() and sorted(few[0, :3]) == [0, 1, 2]
