"""The blocks of the queue page (docs/benchmarks/queue.md) and README's queue verdict: the queue against large
batches, every arm under the tuning protocol, timed interleaved."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from . import shared


def timing_of(results_path: Path, path: Path | None = None) -> dict | None:
    """The ``--timing`` rows measured for a results file: ``path``, else ``NAME_timing.json`` beside ``NAME.json``, or
    none (the steps timed do not depend on the test, so a whole-test file may name the timing of its setup's other
    test). A timing file of another setup (encoder, languages, B, pairs) is refused: its seconds and memory are
    another run's."""
    path = path or results_path.with_name(f"{results_path.stem}_timing.json")
    if not path.is_file():
        return None
    ours, timed = json.loads(results_path.read_text())["setup"], json.loads(path.read_text())
    keys = ("encoder", "languages", "B", "pairs")
    if any(ours[key] != timed["setup"][key] for key in keys):
        raise SystemExit(f"{path}: timed for another setup than {results_path} ({', '.join(keys)} differ)")
    return timed["rows"]


# the steps of the grid's setup timed interleaved (encoder, languages, B and pairs: `timing_of` checks them)
GRID_TIMING = "queue_vs_batch_grid_timing.json"
GRID_ARMS = ("mnrl_B", "cmnrl_8B_sqrtlr", "mql_K256B", "cmql_8B_K256B_sqrtlr", "dmm_K256B")


def grid_table(name: str = "queue_vs_batch_grid.json") -> str:
    """The queue against large batches, every arm under the tuning protocol: its grid, pick and test score."""
    sys.path.insert(0, str(shared.HERE))
    from protocol import grid_table as table
    from queue_arms import HF_XLSR, LABELS, queue_grid, spec

    labels = {arm: LABELS[spec(arm)["base"]] + spec(arm)["rate"] for arm in GRID_ARMS}
    ours = [arm for arm in GRID_ARMS if spec(arm)["loss"] in HF_XLSR]
    timed = timing_of(shared.RESULTS / name, shared.RESULTS / GRID_TIMING)
    cost = {arm: timed[spec(arm)["base"]] for arm in GRID_ARMS if spec(arm)["base"] in timed}
    setup = shared.load(GRID_TIMING)["setup"]
    caption = (
        f"\nTime and memory: `benchmarks/results/{GRID_TIMING}`, every arm's steps timed in {setup['rounds']} "
        f"interleaved rounds of {setup['timed_steps']}; {setup['machine']}; {setup['date']}.\n"
    )
    grids = {arm: grid for arm in GRID_ARMS if (grid := queue_grid(arm))}  # the queues' step: K, then m
    return table(shared.load(name)["runs"], GRID_ARMS, labels, ours, cost, grids) + caption


def grid_verdict() -> str:
    """The grid's verdict lines alone, for README's first screen."""
    return "\n".join(line for line in grid_table().splitlines() if line.startswith("- ")) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "queue-vs-batch-grid-verdict": grid_verdict,
    "queue-vs-batch-grid": grid_table,
}
