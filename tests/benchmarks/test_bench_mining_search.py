"""``benchmarks/bench_mining_search.py --stages``: where ``mine``'s time goes, by faiss stage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_mining_search

    return bench_mining_search


def test_the_stages_of_a_search_are_faiss_training_adding_and_searching(bench):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3000, 32), dtype=np.float32), rng.standard_normal((3000, 32), dtype=np.float32)
    exact = bench.profiled_stages(x, y, index="flat")
    codes = bench.profiled_stages(x, y, index="IVF54,RaBitQ|nprobe=16")  # faiss adds and searches
    scanned = bench.profiled_stages(x, y, index="ivf")  # faiss trains the lists, scan_lists searches them
    for stages in (exact, codes, scanned):
        assert set(stages) == {"train", "add", "search", "rest", "total"}
        assert stages["search"] > 0 and stages["rest"] >= 0
        assert sum(stages[name] for name in ("train", "add", "search", "rest")) == pytest.approx(stages["total"])
    assert exact["train"] == 0 and exact["add"] > 0  # exact search trains nothing: no other stage's time is training
    assert codes["train"] > 0 and codes["add"] > 0  # the inverted lists' k-means, once for both directions
    assert scanned["train"] > 0 and scanned["add"] == 0  # nothing is added to a faiss index: scan_lists reads them
    assert scanned["search"] > 0.5 * (scanned["total"] - scanned["train"])
    table = bench.stages_table(
        {
            "setup": {"model": "m", "backend": "numpy", "threads": 1, "machine": "here"},
            "runs": [{"size": 3000, "index": "IVF109,RaBitQ|nprobe=32", "stages": codes}],
        }
    )
    assert "| 3,000 | `IVF109,RaBitQ\\|nprobe=32` |" in table


def test_a_match_is_found_only_in_the_lists_its_query_scans(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import mining_corpus

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    gold = {(i, i) for i in range(100)}
    same, opposite = rng.standard_normal((2, 2000, 16)).astype(np.float32)
    same[:100], opposite[:100] = x[:100], -x[:100]  # gold targets: the source itself, or its antipode
    near = mining_corpus.probe_coverage(x, same, gold, sample=300)
    far = mining_corpus.probe_coverage(x, opposite, gold, sample=300)
    assert near["lists"] == far["lists"] == 44 and near["probes"] == [16, 32, 64, 128, 256]  # min(sqrt n, n / 39)
    assert near["gold"] == [1.0] * 5  # a vector's own list is the one nearest to it
    assert far["gold"][0] == 0.0  # the antipode's list is among the farthest: 16 of 44 lists never reach it
    assert far["gold"][2:] == [1.0] * 3  # 64 probes and more scan all 44 lists
    assert 0 < far["nearest"][0] < 1 and far["nearest"][2:] == [1.0] * 3


def test_the_one_language_table_sets_each_arm_against_the_peer_and_exact_search(bench):
    def run(arm, seconds, memory, recall, index):
        return {"arm": arm, "size": 57189, "target_size": 44153, "gold_pairs": 5000, "seconds": seconds,
                "peak_added_mb": memory, "recall": recall, "best_f1": recall / 2, "index": index}  # fmt: skip

    data = {
        "setup": {"model": "m", "backend": "numpy", "threads": 1, "machine": "here", "date": "d"},
        "runs": [run("peer", 40.0, 400, 0.70, "n / 1000 lists, 3 probes"), run("hf_xlsr", 10.0, 100, 0.88, "IVF|p"),
                 run("uncentred", 8.0, 100, 0.75, "IVF|p"), run("exact", 80.0, 200, 0.89, "Flat")],
    }  # fmt: skip
    table = bench.one_language_table(data)
    assert "57,189 English and 44,153 French sentences, 5,000 gold pairs" in table
    assert "| hf_xlsr `auto` (each side centred) | `IVF\\|p` | 10.0 | 0.25 | 100 | 0.25 | 88.0 | 1.0 | 44.0 |" in table
    assert (
        "| hf_xlsr `auto`, the sides as they came | `IVF\\|p` | 8.0 | 0.20 | 100 | 0.25 | 75.0 | 14.0 | 37.5 |"
        in table
    )


def test_an_end_to_end_size_is_searched_again_and_its_rows_name_the_index(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_mining_e2e

    rng = np.random.default_rng(1)
    x = rng.standard_normal((600, 16)).astype(np.float32)
    y = rng.standard_normal((600, 16)).astype(np.float32)
    y[:100] = x[:100] + 0.05 * rng.standard_normal((100, 16)).astype(np.float32)  # 100 translations
    np.save(tmp_path / "hf_xlsr_source.npy", x)
    np.save(tmp_path / "hf_xlsr_target.npy", y)
    gold = {(i, i) for i in range(100)}
    exact = bench_mining_e2e.search_again(tmp_path, "flat", gold)
    every_list = bench_mining_e2e.search_again(tmp_path, "IVF8,Flat|nprobe=8", gold)  # all 8 lists: exact search
    assert exact["index"] == "Flat" and exact["recall"] == 1.0
    assert every_list["index"] == "IVF8,Flat|nprobe=8" and every_list["recall"] == 1.0
    peer = {"arm": "peer 600", "size": 600, "seconds": 10.0, "encode_seconds": 8.0, "search_seconds": 2.0,
            "peak_added_mb": 100.0, "recall": 0.5, "best_f1": 0.5, "f1_at_1.06": 0.5}  # fmt: skip
    again = {"arm": "search IVF8 600", "size": 600, **every_list, "search_seconds": 0.5}
    table = bench_mining_e2e.e2e_table({"setup": {"model": "m", "backend": "bf16", "threads": 1, "machine": "here"},
                                        "runs": [peer, again]})  # fmt: skip
    assert (
        "| 600 | hf_xlsr's embeddings searched again: `IVF8,Flat\\|nprobe=8` | — | — | — | 0.5 | 0.25 | — | 100.0 |"
        in table
    )


@pytest.mark.slow  # four processes of their own: half a minute
def test_both_arms_mine_one_encoding_timed_once(monkeypatch, tmp_path, minilm_path, bible_train):
    """``--encode-once``: each side encoded once, in processes of their own, both arms mine those very vectors,
    and each arm's whole job is that encoding's seconds plus its own."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from argparse import Namespace

    import bench_mining_e2e
    from common import Results
    from sentence_transformers import SentenceTransformer

    source = [" ".join(text.split()[:10]) for text in bible_train.select(range(1000))["en"]]  # short, to be quick
    order = np.random.default_rng(0).permutation(200)
    target = [" ".join(text.split()[:10]) for text in bible_train.select(list(order) + list(range(1000, 1800)))["fr"]]
    (tmp_path / "source.txt").write_text("".join(line + "\n" for line in source), encoding="utf-8")
    (tmp_path / "target.txt").write_text("".join(line + "\n" for line in target), encoding="utf-8")
    gold = {(int(row), position) for position, row in enumerate(order)}
    args = Namespace(model=minilm_path, backend="torch", threads=1, max_length=128, encode_once=[1000],
                     search_again=[])  # fmt: skip
    results = Results(str(tmp_path / "e2e.json"), {"model": "m", "backend": "torch", "threads": 1, "machine": "here"})
    bench_mining_e2e.mine_size(args, results, tmp_path, 1000, gold, ("peer", "hf_xlsr"), "m")

    reference = SentenceTransformer(minilm_path, device="cpu")  # at its own max_seq_length, as hf_xlsr encodes it
    for side, texts in (("source", source), ("target", target)):
        expected = reference.encode(texts, normalize_embeddings=True)
        vectors = np.load(tmp_path / f"hf_xlsr_{side}.npy")
        cosines = np.sum(expected * vectors, axis=1) / np.linalg.norm(vectors, axis=1)
        assert vectors.shape == (1000, 384) and cosines.min() > 0.999, side
    runs = {run["arm"]: run for run in results.data["runs"]}
    encoded = runs["encoding 1000"]["encode_seconds"]
    for arm in ("peer 1000", "hf_xlsr 1000"):
        run = runs[arm]
        assert run["shared_encoding"] and run["encode_seconds"] == encoded
        assert run["seconds"] == pytest.approx(encoded + run["search_seconds"])
        assert run["recall"] == runs["exact 1000"]["recall"] > 0.1  # one list for the peer: both search exactly
    table = bench_mining_e2e.e2e_table(results.data)
    assert "At 1,000 sentences per side both arms mine one encoding" in table
    assert "| 1,000 | sentence-transformers example | " in table
    assert "| 1,000 | exact search on the shared encoding (reference) |" in table
