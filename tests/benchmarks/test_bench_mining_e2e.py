"""``benchmarks/bench_mining_e2e.py``: a size searched again names its index, and both arms mine one encoding timed
once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_an_end_to_end_size_is_searched_again_and_its_rows_name_the_index(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_mining_e2e
    from report.mining import e2e_table

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
    table = e2e_table(
        {"setup": {"model": "m", "backend": "bf16", "threads": 1, "machine": "here"}, "runs": [peer, again]}
    )
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
    from report.mining import e2e_table
    from sentence_transformers import SentenceTransformer

    source = [" ".join(text.split()[:10]) for text in bible_train.select(range(1000))["en"]]  # short, to be quick
    order = np.random.default_rng(0).permutation(200)
    target = [" ".join(text.split()[:10]) for text in bible_train.select(list(order) + list(range(1000, 1800)))["fr"]]
    (tmp_path / "source.txt").write_text("".join(line + "\n" for line in source), encoding="utf-8")
    (tmp_path / "target.txt").write_text("".join(line + "\n" for line in target), encoding="utf-8")
    gold = {(int(row), position) for position, row in enumerate(order)}
    args = Namespace(
        model=minilm_path, backend="torch", threads=1, max_length=128, encode_once=[1000], search_again=[]
    )
    results = Results(str(tmp_path / "e2e.json"), {"model": "m", "backend": "torch", "threads": 1, "machine": "here"})
    bench_mining_e2e.mine_size(args, results, tmp_path, 1000, gold, ("peer", "hf_xlsr"))

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
    table = e2e_table(results.data)
    assert "At 1,000 sentences per side both arms mine one encoding" in table
    assert "| 1,000 | sentence-transformers example | " in table
    assert "| 1,000 | exact search on the shared encoding (reference) |" in table
