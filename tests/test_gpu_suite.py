"""``benchmarks/gpu_suite.py --dry-run``: every part of the GPU suite runs at toy size on the CPU and reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_suite_runs_every_part_in_a_dry_run(tmp_path):
    out = tmp_path / "gpu_suite.json"
    command = [sys.executable, "benchmarks/gpu_suite.py", "--dry-run", "--out", str(out)]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert list(report["parts"]) == ["cuda_tests", "training_step", "queue_floor", "encoding", "demo"]
    assert all(part["status"] == "done" for part in report["parts"].values()), report["parts"]
    assert report["parts"]["cuda_tests"]["passed"] == 5 and "failed" not in report["parts"]["cuda_tests"]
    steps = report["parts"]["training_step"]["rows"]
    arms = {(row["batch"], row["arm"]) for row in steps}
    assert arms == {(b, a) for b in (4, 8) for a in ("mnrl", "dual_momentum_shared", "dual_momentum_per_language")}
    assert all(row["ratio_to_mnrl"] > 0 and 0 < row["ema_share"] < 1 for row in steps if row["arm"] != "mnrl")
    assert report["parts"]["encoding"]["mining"]["pairs"] > 0
    assert report["parts"]["demo"]["returncode"] == 0 and len(report["parts"]["demo"]["held_out"]) == 2
    assert "| training_step | done |" in out.with_suffix(".md").read_text()
