"""The blocks of the mining-at-scale page (docs/benchmarks/mining_scale.md): the search against the example from
100,000 to 2,000,000 sentences a side (``bench_mining_scale.py``), the settings ``auto``'s rule was chosen among
(``--rule``), and the list scanner against faiss's IVF search of the same lists (``bench_mining_engines.py``)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import shared

sys.path.insert(0, str(shared.HERE))
from mining_arms import ARMS, ENGINES, REAL, SPEEDUP_GOAL  # noqa: E402

GOAL_TIME, GOAL_MEMORY, GOAL_RECALL = 0.5, 0.5, 1.0  # × the peer's time and memory; points below exact search


def growth(runs: list[dict], arm: str) -> float:
    """The exponent b of a least-squares fit of seconds = a n^b over the sizes of ``arm``'s runs."""
    points = [(run["size"], run["seconds"]) for run in runs if run["arm"].startswith(f"{arm} ")]
    sizes, seconds = np.log([point[0] for point in points]), np.log([point[1] for point in points])
    return float(np.polyfit(sizes, seconds, 1)[0]) if len(points) > 1 else float("nan")


def measurements(data: dict) -> list[tuple[int, int, dict]]:
    """``(size, repeat, {arm: run})`` of every measurement, by size then repeat: the two arms of one
    measurement share a size and a repeat (``--repeat``, stored as the run's ``seed``)."""
    grouped: dict[tuple[int, int], dict] = {}
    for run in data["runs"]:
        grouped.setdefault((run["size"], run.get("seed", 0)), {})[run["arm"].split()[0]] = run
    return [(size, repeat, runs) for (size, repeat), runs in sorted(grouped.items())]


def size_label(size: int, repeat: int, repeats: int) -> str:
    """A size's cell: ``2,000,000``, or ``2,000,000 (run 2)`` for the second of a size's measurements."""
    return f"{size:,}" + (f" (run {repeat + 1})" if repeats > 1 else "")


def scale_table(data: dict) -> str:
    """The peer and ``auto`` at each size (each measurement of a size, when it was measured again), the goal's
    verdict, and the growth of each one's time."""
    lines = ["| sentences per side | search | index | seconds | × peer | memory added MB | × peer | "
             "mined gold recall | gold within k: exact | hf_xlsr | neighbours found | goal |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    rows = measurements(data)
    repeats = Counter(size for size, _, _ in rows)
    for size, repeat, runs in rows:
        peer = runs.get("peer")
        label = size_label(size, repeat, repeats[size])
        for arm, name in ARMS.items():
            run = runs.get(arm)
            if run is None:
                continue
            index = run["index"].replace("|", "\\|")
            cells = [label, name, f"`{index}`", f"{run['seconds']:.1f}",
                     f"{run['seconds'] / peer['seconds']:.2f}" if peer else "—", f"{run['peak_added_mb']:.0f}",
                     f"{run['peak_added_mb'] / peer['peak_added_mb']:.2f}" if peer else "—",
                     f"{100 * run['recall']:.1f}"]  # fmt: skip
            if arm != "peer":
                cells += [
                    f"{100 * run['exact_gold_within_k']:.1f}",
                    f"{100 * run['gold_within_k']:.1f}",
                    f"{100 * run['neighbour_recall']:.1f}",
                    verdict(run, peer),
                ]
            else:
                cells += ["", "", "", ""]
            lines.append("| " + " | ".join(cells) + " |")
    setup = data["setup"]
    runs = data["runs"]
    measured = [arm for arm in ARMS if any(run["arm"].startswith(f"{arm} ") for run in runs)]
    fits = ", ".join(f"{ARMS[arm]} n^{growth(runs, arm):.2f}" for arm in measured)
    head = (
        f"USE-m3 embeddings (512-d), {setup['threads']} thread per search; the launching process: "
        f"{setup['machine']}; {setup.get('date', '')}. Real sides up to {REAL:,}, distractors added beyond.\n\n"
    )
    goal = (
        f"\n\nTime grows as: {fits} (least squares over the sizes measured). Goal: at most {GOAL_TIME}× the "
        f"example's time and {GOAL_MEMORY}× its memory, gold pairs within k at most {GOAL_RECALL:g} point below "
        "exact search's."
    )
    return head + "\n".join(lines) + goal + "\n"


def scale_summary(data: dict) -> str:
    """``auto`` against the example at each size, one line per size (each cell over the size's measurements, in
    order, when they differ): time and memory as shares of the example's, gold pairs within k below exact search,
    mined gold recall of both, the goal's verdict."""
    lines = ["| sentences per side | hf_xlsr's time | its memory | gold within k below exact (points) | "
             "mined gold recall: hf_xlsr | the example | goal |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    pairs = [
        (size, runs["hf_xlsr"], runs["peer"])
        for size, _, runs in measurements(data)
        if {"peer", "hf_xlsr"} <= set(runs)
    ]
    for size in sorted({size for size, _, _ in pairs}):
        cells = [
            [
                f"{ours['seconds'] / peer['seconds']:.2f}×",
                f"{ours['peak_added_mb'] / peer['peak_added_mb']:.2f}×",
                f"{100 * (ours['exact_gold_within_k'] - ours['gold_within_k']):.1f}",
                f"{100 * ours['recall']:.1f}",
                f"{100 * peer['recall']:.1f}",
                verdict(ours, peer),
            ]
            for other, ours, peer in pairs
            if other == size
        ]
        columns = [", ".join(dict.fromkeys(column)) for column in zip(*cells, strict=True)]
        verdicts = [row[-1] for row in cells]
        if len(set(verdicts)) > 1:
            columns[-1] = f"met in {verdicts.count('met')} of {len(verdicts)} runs"
        seconds, memory, below, ours, peer, goal = columns
        lines.append(f"| {size:,} | {seconds} the example's | {memory} | {below} | {ours} | {peer} | {goal} |")
    goal = (
        f"Goal: at most {GOAL_TIME}× the example's time and {GOAL_MEMORY}× its memory, gold pairs within k at "
        f"most {GOAL_RECALL:g} point below exact search's."
    )
    return "\n".join(lines) + f"\n\n{goal}\n"


def rule_table(data: dict, first: str = "full lists") -> str:
    """The settings of ``--rule`` at each size: one direction's seconds against the first setting's (``first``
    names it: `RULE`'s is auto's lists of full vectors), and recall."""
    lines = [f"| sentences per side | index | seconds, one direction | × {first} | "
             "gold within k: exact | found | neighbours found |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    runs = data["runs"]
    for size, seed in sorted({(run["size"], run["seed"]) for run in runs}):
        at = [run for run in runs if (run["size"], run["seed"]) == (size, seed)]
        base = at[0]["seconds"]
        shown = {run.get("products") for run in at}
        for run in at:
            index = "`" + run["index"].replace("|", "\\|") + "`"
            index += f", {run['products']} products" if len(shown) > 1 else ""
            sides = "real" if size <= REAL else f"distractors of seed {seed}"
            lines.append(
                f"| {size:,} ({sides}) | {index} | {run['seconds']:.1f} | {run['seconds'] / base:.2f} | "
                f"{100 * run['exact_gold_within_k']:.1f} | {100 * run['gold_within_k']:.1f} | "
                f"{100 * run['neighbour_recall']:.1f} |"
            )
    setup = data["setup"]
    head = f"{setup['threads']} thread; {setup['machine']}; {setup.get('date', '')}.\n\n"
    return head + "\n".join(lines) + "\n"


def verdict(ours: dict, peer: dict | None) -> str:
    if peer is None:
        return "—"
    met = (
        ours["seconds"] <= GOAL_TIME * peer["seconds"]
        and ours["peak_added_mb"] <= GOAL_MEMORY * peer["peak_added_mb"]
        and 100 * (ours["exact_gold_within_k"] - ours["gold_within_k"]) <= GOAL_RECALL + 1e-9
    )
    return "met" if met else "not met"


def figure(data: dict, path: Path) -> None:
    """Seconds against sentences per side, both axes logarithmic, one line per search (a size measured again: the
    mean of its measurements)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    runs = data["runs"]
    for arm, label in ARMS.items():
        sizes = sorted({run["size"] for run in runs if run["arm"].startswith(f"{arm} ")})
        if not sizes:
            continue
        points = [(size, np.mean([run["seconds"] for run in runs if run["arm"] == f"{arm} {size}"])) for size in sizes]
        label = label.replace("`", "")
        axes.plot(*zip(*points, strict=True), marker="o", label=f"{label} (n^{growth(runs, arm):.2f})")
    axes.set(
        xscale="log",
        yscale="log",
        xlabel="sentences per side",
        ylabel="seconds (one thread)",
        title="Mining search time",
    )
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


RECALL_TOLERANCE = 0.005  # gold recall within half a point counts as equal


def engines_table(data: dict) -> str:
    """The list scanner against faiss's IVF search of the same lists (``bench_mining_engines.py``): at each size,
    each engine's median seconds over the rounds, its time over the scanner's, its gold pairs within k against exact
    search's; then the verdict at each size: the scanner stays where it is at least
    ``SPEEDUP_GOAL`` times as fast as every faiss engine whose gold recall is within `RECALL_TOLERANCE` of its own
    or above."""
    from statistics import median

    setup, runs = data["setup"], data["runs"]
    lines = ["| sentences a side | engine | index | seconds | × scanner's | gold within k | exact's |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    verdicts = []
    for size in sorted({run["size"] for run in runs}):
        rows = {arm: [run for run in runs if run["size"] == size and run["engine"] == arm] for arm in ENGINES}
        seconds = {arm: median(run["seconds"] for run in rows[arm]) for arm in ENGINES}
        recall = {arm: rows[arm][0]["gold_within_k"] for arm in ENGINES}
        for arm in ENGINES:
            index = rows[arm][0]["index"].replace("|", "\\|")
            cells = [f"{size:,}", arm, f"`{index}`", f"{seconds[arm]:.1f}",
                     f"{seconds[arm] / seconds['scanner']:.2f}", f"{100 * recall[arm]:.2f}",
                     f"{100 * rows[arm][0]['exact_gold_within_k']:.2f}"]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        equal = [arm for arm in ENGINES[1:] if recall[arm] >= recall["scanner"] - RECALL_TOLERANCE]
        lead = min(seconds[arm] / seconds["scanner"] for arm in equal)
        held = "holds" if lead >= SPEEDUP_GOAL else "does not hold"
        verdicts.append(
            f"at {size:,} a side: {lead:.2f}x the time of the scanner for the fastest faiss engine at "
            f"equal gold recall: the scanner's lead of {SPEEDUP_GOAL}x {held}"
        )
    caption = (
        f"\n\n{setup['queries']:,} source sentences searched in the targets, {setup['rounds']} rounds, one "
        f"thread, {setup['machine']}; {setup['date']}; `python {setup['script']}`.\n\n"
    )
    return "\n".join(lines) + caption + "Verdict " + "; ".join(verdicts) + ".\n"


TABLES: dict[str, Callable[[], str]] = {
    "mining-engines": lambda: engines_table(shared.load("mining_engines.json")),
    "mining-scale": lambda: scale_table(shared.load("mining_scale.json")),
    "mining-scale-summary": lambda: scale_summary(shared.load("mining_scale.json")),
    "mining-scale-rule": lambda: rule_table(shared.load("mining_scale_rule.json")),
    "mining-scale-lists": lambda: rule_table(shared.load("mining_scale_lists.json"), "auto's rule"),
    "mining-scale-products": lambda: rule_table(shared.load("mining_scale_products.json"), "the first row"),
}
