"""``benchmarks/common.py``'s child runner, which every benchmark that runs an arm in a process of its own uses: the
row the child answers comes back, the last answer counting; a child that fails or answers nothing stops the run with
its exit status and the end of its output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")

CHILD = """
import os, sys
sys.path.insert(0, {benchmarks!r})
from common import print_result
print("a progress line")
print_result({{"arm": "first", "offline": os.environ.get("HF_HUB_OFFLINE")}})
print_result({{"arm": sys.argv[1], "peak_mb": 12.5}})
print("a closing line")
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture
def common(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(BENCHMARKS)
    import common

    (tmp_path / "child.py").write_text(CHILD.format(benchmarks=BENCHMARKS))
    return common


def test_the_last_row_a_child_answers_comes_back(common, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert common.run_child(str(tmp_path / "child.py"), ["mnrl", "0"], "mnrl") == {"arm": "mnrl", "peak_mb": 12.5}
    process = common.start_child(str(tmp_path / "child.py"), ["x", "0"])
    assert process.pid != os.getpid() and common.child_result(process, "x")["arm"] == "x"


def test_a_child_that_fails_or_answers_nothing_stops_the_run_naming_it(common, tmp_path, capsys):
    with pytest.raises(SystemExit, match=r"^mnrl, seed 1 failed \(exit 3\)$"):
        common.run_child(str(tmp_path / "child.py"), ["mnrl", "3"], "mnrl, seed 1")
    assert "a closing line" in capsys.readouterr().err  # the end of its output, for the reader
    (tmp_path / "silent.py").write_text("print('no answer')\n")
    with pytest.raises(SystemExit, match=r"^silent failed \(exit 0\)$"):
        common.run_child(str(tmp_path / "silent.py"), [], "silent")


def test_a_child_runs_offline(common, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    (tmp_path / "offline.py").write_text(
        CHILD.format(benchmarks=BENCHMARKS).replace('print_result({"arm": sys.argv[1], "peak_mb": 12.5})\n', "")
    )
    assert common.run_child(str(tmp_path / "offline.py"), ["x", "0"], "x") == {"arm": "first", "offline": "1"}
