"""The search of a mining job in shards on disk (``mine_in_shards``): the pairs of one search whatever the shards, a
job stopped in the middle resumes from its finished shards to the same pairs, a folder of another search is refused,
and two processes under ``accelerate launch`` mine the pairs of one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import MINILM
from test_multiprocess import ROOT, launch_two_processes

import hf_xlsr.evaluation.mining.job as job_module
import hf_xlsr.evaluation.mining.scan as scan_module
from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.evaluation.mining import mine
from hf_xlsr.evaluation.mining.job import mine_in_shards
from hf_xlsr_cli import main

INDEXES = ["flat", "IVF24,Flat|nprobe=6", "PCA16,IVF24,Flat|nprobe=6,k_factor=8", "IVF24,SQ8|nprobe=6"]  # exact, lists
# scanned by scan_lists (of the vectors, and of their PCA map), faiss's codes


@pytest.fixture(scope="module")
def sides() -> tuple[np.ndarray, np.ndarray]:
    """2,500 vectors a side, 64-d, in clusters (as sentences are), 2,000 of them translations of each other (the
    target a noisy copy of its source, in another order)."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 64)).astype(np.float32)
    source = centres[rng.integers(0, 40, 2500)] + 0.6 * rng.standard_normal((2500, 64)).astype(np.float32)
    target = np.concatenate(
        [
            source[:2000] + 0.3 * rng.standard_normal((2000, 64)).astype(np.float32),
            centres[rng.integers(0, 40, 500)] + 0.6 * rng.standard_normal((500, 64)),
        ]
    )
    order = rng.permutation(2500)
    return source, target[order].astype(np.float32)


def same_pairs(a, b) -> None:
    """The same pairs at the same scores (the order of pairs whose scores tie in all but the last bits aside)."""
    first, second = (
        dict(zip(zip(p.source.tolist(), p.target.tolist(), strict=True), p.scores.tolist(), strict=True))
        for p in (a, b)
    )
    assert first.keys() == second.keys()
    np.testing.assert_allclose([first[pair] for pair in second], list(second.values()), rtol=1e-5)


@pytest.mark.parametrize("products", ["int8", "bfloat16"])  # the scanned lists' scores: both kinds of ties
@pytest.mark.parametrize("index", INDEXES)
def test_shards_of_queries_give_the_pairs_of_one_search(sides, index, products, tmp_path, monkeypatch):
    monkeypatch.setattr(scan_module, "_products_dtype", lambda: getattr(torch, products))
    whole = mine(*sides, index=index)
    assert len(whole) > 2000
    sharded = mine_in_shards(*sides, tmp_path / "search", index=index, shard_size=700)  # 4 shards each way
    same_pairs(sharded, whole)
    names = sorted(p.name for p in (tmp_path / "search").iterdir())
    assert [n for n in names if n.startswith("neighbours-source")] == [
        f"neighbours-source-to-target-{i:05d}.npz" for i in range(4)
    ]
    assert ("index.faiss" in names) == (index != "flat")


def test_a_search_stopped_in_the_middle_resumes_to_the_same_pairs(sides, tmp_path, monkeypatch):
    index = "IVF24,Flat|nprobe=6"
    uninterrupted = mine_in_shards(*sides, tmp_path / "one", index=index, shard_size=700)
    real, calls = job_module.knn, []

    def stopping(*args, **kwargs):
        if len(calls) == 5:  # the two directions' 8 shards: stopped in the second direction's second
            raise KeyboardInterrupt
        calls.append(args[0].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(job_module, "knn", stopping)
    with pytest.raises(KeyboardInterrupt):
        mine_in_shards(*sides, tmp_path / "job", index=index, shard_size=700)
    finished = sorted(p.name for p in (tmp_path / "job").glob("neighbours-*.npz"))
    assert len(finished) == 5 and "neighbours-target-to-source-00000.npz" in finished
    kept = {name: (tmp_path / "job" / name).stat().st_mtime_ns for name in finished}
    calls.clear()
    monkeypatch.setattr(job_module, "knn", lambda *a, **k: calls.append(a[0].shape[0]) or real(*a, **k))
    same_pairs(mine_in_shards(*sides, tmp_path / "job", index=index, shard_size=700), uninterrupted)
    assert calls == [700, 700, 400]  # only the three shards not finished (the last of a side: 400 queries)
    assert kept == {name: (tmp_path / "job" / name).stat().st_mtime_ns for name in finished}


def test_a_folder_of_another_search_is_refused(sides, tmp_path):
    mine_in_shards(*sides, tmp_path / "search", index="flat", k=4)
    with pytest.raises(ValueError, match=r"holds the shards of another job \(k: 4, not 6\)"):
        mine_in_shards(*sides, tmp_path / "search", index="flat", k=6)
    other = (sides[0][::-1].copy(), sides[1])
    with pytest.raises(ValueError, match=r"holds the shards of another job \(source: "):
        mine_in_shards(*other, tmp_path / "search", index="flat", k=4)


@pytest.mark.slow  # three mining runs of 600 sentences a side, two of them two processes each
def test_two_processes_mine_the_pairs_of_one(tmp_path):
    verses = load_bible(["en", "fr"], split="heldout").select(range(600))
    for language in ("en", "fr"):
        (tmp_path / f"{language}.txt").write_text("".join(f"{v}\n" for v in verses[language]), encoding="utf-8")

    def argv(name: str) -> list[str]:
        return [
            "mine",
            "--model",
            resolve_reference(MINILM),
            "--source",
            str(tmp_path / "en.txt"),
            "--target",
            str(tmp_path / "fr.txt"),
            "--output",
            str(tmp_path / f"{name}.tsv"),
            "--embeddings",
            str(tmp_path / name),
            "--shard-size",
            "150",
            "--index",
            "IVF24,Flat|nprobe=6",
        ]

    assert main(argv("one")) == 0
    one = (tmp_path / "one.tsv").read_text()
    assert len(one.splitlines()) > 100
    result = launch_two_processes(ROOT / "hf_xlsr_cli.py", *argv("two"), env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert (tmp_path / "two.tsv").read_text() == one
    # both processes searched: 4 shards a direction, two each
    assert len(list((tmp_path / "two" / "search").glob("neighbours-*.npz"))) == 8
    assert result.stdout.count("pairs written to") == 1
