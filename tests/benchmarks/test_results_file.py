"""``benchmarks/common.py``'s results file: what a benchmark skips, and runs that processes add at the same time."""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")


@pytest.fixture
def Results(monkeypatch):
    monkeypatch.syspath_prepend(BENCHMARKS)
    from common import Results

    return Results


def add_runs(path: str, worker: int, count: int, start) -> None:
    sys.path.insert(0, BENCHMARKS)
    from common import Results

    results = Results(path, {"threads": 1})
    start.wait()  # every process has imported and opened the file: their adds overlap
    for seed in range(count):
        results.add({"arm": f"worker {worker}", "seed": seed, "payload": "x" * 20_000})


def test_processes_adding_runs_to_one_file_at_once_keep_every_run(tmp_path):
    """Several processes fill one file (two training runs on two cores, each appending when it ends): each add reads
    the runs on disk, appends and replaces the file under a lock, so no process's run is lost. Four processes of 40
    runs each, with runs large enough that reading and writing the file takes a while."""
    path = str(tmp_path / "runs.json")
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    workers = [context.Process(target=add_runs, args=(path, worker, 40, start)) for worker in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0] * 4
    runs = json.loads(Path(path).read_text())["runs"]
    expected = [(f"worker {worker}", seed) for worker in range(4) for seed in range(40)]
    assert sorted((run["arm"], run["seed"]) for run in runs) == expected


def test_a_run_another_process_added_is_skipped_and_the_skip_is_said(Results, tmp_path, capsys):
    """``done`` reads the file on disk, not the runs this process read when it opened it, and says what it skips."""
    path = tmp_path / "runs.json"
    mine, other = Results(path, {"threads": 1}), Results(path, {"threads": 1})
    assert not mine.done("queue", 2)
    other.add({"arm": "queue", "seed": 2, "accuracy": 0.9})
    assert mine.done("queue", 2)
    assert f"queue, seed 2: skipped, {path} holds it" in capsys.readouterr().err


def test_arms_are_timed_in_turn_the_order_reversed_every_other_round(monkeypatch):
    """``common.interleaved`` on a clock that only the arms move: A takes 1 s, B 2 s, C 4 s; three rounds run
    A B C, C B A, A B C (palindromic) or A B C three times, each arm's seconds are its own, ``sync`` brackets every
    call and the first call's return value is kept."""
    import types

    monkeypatch.syspath_prepend(BENCHMARKS)
    import common

    clock, calls = [0.0], []

    def arm(name: str, seconds: float):
        def run():
            calls.append(name)
            clock[0] += seconds
            return f"{name}{len(calls)}"

        return run

    monkeypatch.setattr(common, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    runs = {"A": arm("A", 1.0), "B": arm("B", 2.0), "C": arm("C", 4.0)}
    synced = []
    seconds, first = common.interleaved(runs, 3, sync=lambda: synced.append(len(calls)))
    assert calls == list("ABCCBAABC")
    assert seconds == {"A": [1.0, 1.0, 1.0], "B": [2.0, 2.0, 2.0], "C": [4.0, 4.0, 4.0]}
    assert first == {"A": "A1", "B": "B2", "C": "C3"}
    assert synced == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9]
    calls.clear()
    common.interleaved(runs, 3, palindromic=False)
    assert calls == list("ABCABCABC")
