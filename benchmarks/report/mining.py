"""The blocks of the mining pages (docs/benchmarks/mining.md, mining_scale.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from . import shared


def e2e_table() -> str:
    """Mining end to end against the example (``bench_mining_e2e.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_mining_e2e import e2e_table as table

    return table(shared.load("mining_e2e.json"))


def mining_scale_table() -> str:
    """The search from 100,000 to 2,000,000 sentences a side against the example (``bench_mining_scale.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_mining_scale import scale_table

    return scale_table(shared.load("mining_scale.json"))


def mining_rule_table(name: str, first: str = "full lists") -> str:
    """Settings searched one direction at a size (``bench_mining_scale.py --rule``), each row's seconds against the
    size's first row (``first`` names it): the settings `auto`'s rule was chosen among
    (``mining_scale_rule.json``), more lists, fewer dimensions and more re-scored candidates (``--settings``,
    ``mining_scale_lists.json``), and its lists scored in bfloat16 and in int8 products (``--products``,
    ``mining_scale_products.json``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_mining_scale import rule_table

    return rule_table(shared.load(name), first)


def mining_scale_summary() -> str:
    """README's line per size of the search at scale (``bench_mining_scale.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_mining_scale import scale_summary

    return scale_summary(shared.load("mining_scale.json"))


RECALL_TOLERANCE = 0.005  # gold recall within half a point counts as equal


def engines_table(data: dict) -> str:
    """The list scanner against faiss's IVF search of the same lists (``bench_mining_engines.py``): at each size,
    each engine's median seconds and peak memory over the rounds, its time over the scanner's, its gold pairs within
    k against exact search's; then the verdict at each size: the scanner stays where it is at least
    ``SPEEDUP_GOAL`` times as fast as every faiss engine whose gold recall is within `RECALL_TOLERANCE` of its own
    or above."""
    from statistics import median

    sys.path.insert(0, str(shared.HERE))
    from bench_mining_engines import ARMS, SPEEDUP_GOAL

    setup, runs = data["setup"], data["runs"]
    lines = ["| sentences a side | engine | index | seconds | × scanner's | peak MB | gold within k | exact's |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    verdicts = []
    for size in sorted({run["size"] for run in runs}):
        rows = {arm: [run for run in runs if run["size"] == size and run["engine"] == arm] for arm in ARMS}
        seconds = {arm: median(run["seconds"] for run in rows[arm]) for arm in ARMS}
        recall = {arm: rows[arm][0]["gold_within_k"] for arm in ARMS}
        for arm in ARMS:
            memory = median(run["peak_added_mb"] for run in rows[arm])
            cells = [f"{size:,}", arm, f"`{rows[arm][0]['index']}`", f"{seconds[arm]:.1f}",
                     f"{seconds[arm] / seconds['scanner']:.2f}", f"{memory:.0f}", f"{100 * recall[arm]:.2f}",
                     f"{100 * rows[arm][0]['exact_gold_within_k']:.2f}"]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        equal = [arm for arm in ARMS[1:] if recall[arm] >= recall["scanner"] - RECALL_TOLERANCE]
        lead = min(seconds[arm] / seconds["scanner"] for arm in equal)
        held = "holds" if lead >= SPEEDUP_GOAL else "does not hold"
        verdicts.append(f"at {size:,} a side: {lead:.2f}x the time of the scanner for the fastest faiss engine at "
                        f"equal gold recall: the scanner's lead of {SPEEDUP_GOAL}x {held}")  # fmt: skip
    caption = (f"\n{setup['queries']:,} source sentences searched in the targets, {setup['rounds']} rounds, one "
               f"thread, {setup['machine']}; {setup['date']}; `python {setup['script']}`.\n\n")  # fmt: skip
    return "\n".join(lines) + caption + "Verdict " + "; ".join(verdicts) + ".\n"


TABLES: dict[str, Callable[[], str]] = {
    "mining-e2e": e2e_table,
    "mining-scale": mining_scale_table,
    "mining-scale-summary": mining_scale_summary,
    "mining-scale-rule": lambda: mining_rule_table("mining_scale_rule.json"),
    "mining-scale-lists": lambda: mining_rule_table("mining_scale_lists.json", "auto's rule"),
    "mining-scale-products": lambda: mining_rule_table("mining_scale_products.json", "the first row"),
}
