"""The blocks of the queue pages (docs/benchmarks/queue.md) and README's queue verdicts: the tuning
grid and the queue against large batches."""

from __future__ import annotations

import sys
from collections.abc import Callable

from . import shared


def queue_table(name: str) -> str:
    """A queue-against-batch results file's table and verdict, timed by its own ``_timing`` file."""
    sys.path.insert(0, str(shared.HERE))
    from .queue_vs_batch import languages_label, report, timing_of, verdict

    results = shared.load(name)
    timing = timing_of(shared.RESULTS / name)
    setup = results["setup"]
    heldout = f", {setup['heldout']:,} held-out verses per language" if "heldout" in setup else ""
    if setup.get("whole_test"):
        heldout = f", every held-out verse but the {setup['heldout']:,} tuning ones"
    head = (f"{setup['encoder']}, {languages_label(setup['languages'])}, B = {setup['B']}, {setup['pairs']:,} "
            f"training pairs per arm{heldout}.\n\n")  # fmt: skip
    table = report(results, timing) + "\n\n" + verdict(results, timing) + "\n"
    return head + table + shared.caption(name, setup, results["runs"])


# the steps of the grid's setup timed interleaved (encoder, languages, B and pairs: `timing_of` checks them)
GRID_TIMING = "queue_vs_batch_grid_timing.json"
GRID_ARMS = ("mnrl_B", "cmnrl_8B_sqrtlr", "mql_K256B", "cmql_8B_K256B_sqrtlr", "dmm_K256B")


def grid_table(name: str = "queue_vs_batch_grid.json") -> str:
    """The queue against large batches, every arm under the tuning protocol: its grid, pick and test score."""
    sys.path.insert(0, str(shared.HERE))
    from protocol import grid_table as table
    from queue_arms import HF_XLSR, LABELS, spec

    from .queue_vs_batch import timing_of

    labels = {arm: LABELS[spec(arm)["base"]] + spec(arm)["rate"] for arm in GRID_ARMS}
    ours = [arm for arm in GRID_ARMS if spec(arm)["loss"] in HF_XLSR]
    timed = timing_of(shared.RESULTS / name, shared.RESULTS / GRID_TIMING)
    cost = {arm: timed[spec(arm)["base"]] for arm in GRID_ARMS if spec(arm)["base"] in timed}
    setup = shared.load(GRID_TIMING)["setup"]
    caption = (f"\nTime and memory: `benchmarks/results/{GRID_TIMING}`, every arm's steps timed in {setup['rounds']} "
               f"interleaved rounds of {setup['timed_steps']}; {setup['machine']}; {setup['date']}.\n")  # fmt: skip
    return table(shared.load(name)["runs"], GRID_ARMS, labels, ours, cost) + caption


def grid_verdict() -> str:
    """The grid's verdict lines alone, for README's first screen."""
    return "\n".join(line for line in grid_table().splitlines() if line.startswith("- ")) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "queue-vs-batch-grid-verdict": grid_verdict,
    "queue-vs-batch-grid": grid_table,
    "queue-vs-batch-whole": lambda: queue_table("queue_vs_batch_whole.json"),
}
