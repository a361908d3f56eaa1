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
