"""``benchmarks/bench_dual_momentum_step.py``: the floor its table prints."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_dual_momentum_step

    return bench_dual_momentum_step


def test_the_floor_is_the_peers_step_of_the_same_batch_plus_the_keys(bench):
    def row(method, batch, seconds, keys=None):
        return {"method": method, "batch_size": batch, "step_seconds": seconds, "ratio_to_peer": 0.0,
                "keys_seconds": keys, "trainable_parameters": 22_713_216, "peak_rss_mb": 1000.0}  # fmt: skip

    rows = [row("st_mnrl_symmetric", 8, 0.5), row("dual_momentum_shared", 8, 0.7, keys=0.1),
            row("st_mnrl_symmetric", 16, 2.0), row("dual_momentum_shared", 16, 2.6, keys=0.5)]  # fmt: skip
    lines = bench.report({"rows": rows}).splitlines()
    assert lines[3].endswith("| 0.100 | 1.20 | 1,000 |")  # (0.5 + 0.1) / 0.5, against batch 8's MNRL step
    assert lines[5].endswith("| 0.500 | 1.25 | 1,000 |")  # (2.0 + 0.5) / 2.0, against batch 16's
    assert lines[2].endswith("| — | — | 1,000 |")  # MNRL computes no keys


def test_each_rounds_ratio_sets_a_method_against_mnrls_step_of_the_same_round(bench):
    """Three rounds in which the machine slows and speeds up: each round's ratio is the method's step over MNRL's
    step of that round (1.1, 1.2, 1.0), whatever the medians, and the row's ratio is the medians' (1.5 / 1.5)."""
    steps = {"st_mnrl_symmetric": [1.0, 2.0, 1.5], "dual_momentum_shared": [1.1, 2.4, 1.5],
             "dual_momentum_separate": [1.3, 2.6, 1.8]}  # fmt: skip
    runs = {method: [{"method": method, "step_seconds": s, "keys_seconds": None if method.startswith("st") else 0.1,
                      "trainable_parameters": 1, "peak_rss_mb": 1.0, "training_rss_increase_mb": 1.0}
                     for s in seconds] for method, seconds in steps.items()}  # fmt: skip
    rows = {row["method"]: row for row in bench.batch_rows(runs, 16)}
    assert rows["dual_momentum_shared"]["round_ratios"] == pytest.approx([1.1, 1.2, 1.0])
    assert rows["dual_momentum_separate"]["round_ratios"] == pytest.approx([1.3, 1.3, 1.2])
    assert rows["dual_momentum_shared"]["ratio_to_peer"] == pytest.approx(1.0)
    assert rows["dual_momentum_shared"]["round_seconds"] == [1.1, 2.4, 1.5]
    assert rows["st_mnrl_symmetric"]["keys_seconds"] is None and rows["dual_momentum_shared"]["keys_seconds"] == 0.1


def test_the_table_shows_the_lowest_and_highest_round_ratio_where_the_rounds_were_kept(bench):
    def row(method, seconds, ratios=None, keys=None):
        return {"method": method, "batch_size": 16, "step_seconds": seconds, "ratio_to_peer": seconds / 1.0,
                "keys_seconds": keys, "trainable_parameters": 22_713_216, "peak_rss_mb": 1000.0,
                **({"round_ratios": ratios} if ratios else {})}  # fmt: skip

    rows = [row("st_mnrl_symmetric", 1.0, [1.0, 1.0, 1.0]), row("dual_momentum_shared", 1.2, [1.1, 1.3, 1.2], 0.2),
            row("dual_momentum_separate", 1.4)]  # fmt: skip
    lines = bench.report({"rows": rows}).splitlines()
    assert "| 1.20 | 1.10-1.30 (3) | 0.200 | 1.20 |" in lines[3]
    assert "| 1.40 | — | — | — |" in lines[4]  # a file of older runs, without its rounds
