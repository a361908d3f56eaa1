"""The demo as README runs it: real training on the Bible, held-out retrieval before and after, the export ranked by
``SentenceTransformer``. Four to ten minutes on 2 cores, so it is a ``slow`` test: ``pytest -m slow``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_demo_learns_the_space_and_its_export_ranks_the_translation_first(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "demo.py"),
            "--output_dir",
            str(tmp_path / "run"),
            "--export_dir",
            str(tmp_path / "export"),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = (float(m) for m in re.findall(r"mean\s+([\d.]+)%", result.stdout))
    assert after > before + 30, result.stdout  # 19.4% -> 75.3% on 2 CPU cores, 2026-11-25
    first = next(line for line in result.stdout.splitlines() if line.strip().startswith("1."))
    assert first.endswith("<- translation"), result.stdout
