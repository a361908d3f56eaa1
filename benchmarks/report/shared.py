"""What the report's pages share: the results folder, reading a results file, an arm's values over its seeds and a
generated table's caption."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # benchmarks/


RESULTS = HERE / "results"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def arm_values(runs: list[dict], arm: str, key: str) -> list[float]:
    """``key`` of each of ``arm``'s runs that has it, in the order of their seeds."""
    return [run[key] for run in sorted(runs, key=lambda run: run["seed"]) if run["arm"] == arm and key in run]


def caption(name: str, setup: dict, runs: list[dict]) -> str:
    """A generated table's last line: its results file, the machine and the days its ``runs`` finished."""
    finished = sorted({run["finished"][:10] for run in runs if "finished" in run})
    return f"\n`benchmarks/results/{name}`; {setup['machine']}; {', '.join(finished) or 'no date recorded'}.\n"
