"""The blocks of the GPU page (docs/benchmarks/gpu.md)."""

from __future__ import annotations

from collections.abc import Callable

from . import shared


def days(dates: str) -> str:
    """The days of a report's ``date`` (its calls' times, joined), without the times: ``2026-11-27, 2026-11-28``."""
    return ", ".join(dict.fromkeys(date.strip()[:10] for date in dates.split(",")))


def gpu_suite_table(results: str) -> str:
    """A GPU suite's report (``gpu_suite.py``'s own Markdown) under a line naming its device, days and file."""
    report = shared.load(results)
    body = markdown(report).split("\n", 1)[1]
    return f"{report['device']}, {days(report['date'])} (`benchmarks/results/{results}`)\n" + body


# a part's entries not printed in its row of figures: its status, its time, its call, and what has a table of its own
SHOWN_APART = ("status", "seconds", "rows", "traceback", "command", "date", "sentences_per_second", "ratio", "mining",
               "table")  # fmt: skip


def number(value: float) -> str:
    """A figure as a reader reads it: three significant digits, thousands with separators, never 1e+03."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def figures_in_words(figures: dict) -> str:
    """A part's figures as ``name value; ...`` (a list of lines: its last), not JSON."""
    said = []
    for key, value in figures.items():
        if isinstance(value, list):
            value = value[-1] if value else "—"
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
        elif isinstance(value, float):
            value = number(value)
        said.append(f"{key.replace('_', ' ')} {value}")
    return "; ".join(said) or "—"


def markdown(report: dict) -> str:
    lines = [f"# GPU suite: {report['device']}, {report['date']}", "", "| part | status | seconds | figures |",
             "| --- | --- | ---: | --- |"]  # fmt: skip
    for name, part in report["parts"].items():
        shown = {k: v for k, v in part.items() if k not in SHOWN_APART}
        lines.append(f"| {name} | {part['status']} | {part.get('seconds', 0):.0f} | {figures_in_words(shown)} |")
    steps = report["parts"].get("training_step", {}).get("rows", [])
    if steps:
        lines += [
            "",
            "| encoder | batch | arm | K | s / step | × MNRL | peak MB | EMA share |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in steps:
            cells = [row.get("seconds_per_step"), row.get("ratio_to_mnrl"), row.get("peak_mb"), row.get("ema_share")]
            shown = [number(value) if isinstance(value, float) else (row.get("error") or "—") for value in cells]
            lines.append(
                f"| {row['encoder']} | {row['batch']} | {row['arm']} | {row['queue_size'] or '—'} | "
                + " | ".join(shown)
                + " |"
            )
    if "table" in report["parts"].get("queue_grid", {}):
        lines += ["", report["parts"]["queue_grid"]["table"]]
    for row in report["parts"].get("queue_floor", {}).get("rows", []):
        lines.append(
            f"\nqueue K = {row['queue_size']:,}: {row['added_seconds']:.4f} s added, "
            f"{row['times_floor']:.2f} × its bfloat16 floor, both directions"
        )
    encoding = report["parts"].get("encoding", {})
    if "sentences_per_second" in encoding:
        rates = encoding["sentences_per_second"]
        lines += ["", f"| encoding {encoding['sentences']:,} verses | sentences / s |", "| --- | ---: |"]
        lines += [f"| {name} | {rate:,.0f} |" for name, rate in rates.items()]
        lines.append(f"\nhf_xlsr's bf16 at {encoding['ratio']:.2f} × sentence-transformers' bf16")
    mining = encoding.get("mining")
    if mining and "skipped" in mining:
        lines.append(f"\nmining skipped: {mining['skipped']}")
    elif mining:
        lines.append(
            f"\nmining {mining['per_side']:,} sentences per side: {mining['encode_seconds']:.0f} s encoding "
            f"(GPU), {mining['search_seconds']:.0f} s search (on the {mining['faiss']}), "
            f"{mining['gold_found']:.1%} of the gold pairs found"
        )
    return "\n".join(lines) + "\n"


def gpu_step_summary(name: str = "gpu_suite_h200_bf16.json") -> str:
    """A training step's time and peak memory against MNRL's, per arm, from a GPU suite report (bf16)."""
    report = shared.load(name)
    rows = report["parts"]["training_step"]["rows"]
    groups = sorted({(row["encoder"], row["batch"]) for row in rows}, key=lambda g: (g[0] != "minilm", g[1]))
    arms = list(dict.fromkeys((row["arm"], row["queue_size"]) for row in rows if row["arm"] != "mnrl"))
    peaks = {(r["encoder"], r["batch"]): r["peak_mb"] for r in rows if r["arm"] == "mnrl"}
    head = "| arm | " + " | ".join(f"{e} {b}" for e, b in groups) + " |"
    lines = [f"{report['device']}, {days(report['date'])}: seconds per step × MNRL's (peak memory × MNRL's), "
             "every arm in bf16 and train mode, timed interleaved (`benchmarks/gpu_suite.py`).", "", head,
             "| --- |" + " ---: |" * len(groups)]  # fmt: skip
    for arm, queue in arms:
        cells = []
        for encoder, batch in groups:
            row = next(
                (
                    r
                    for r in rows
                    if (r["encoder"], r["batch"], r["arm"], r["queue_size"]) == (encoder, batch, arm, queue)
                ),
                None,
            )
            ratio = row and row.get("ratio_to_mnrl")
            memory = row and row.get("peak_mb") and row["peak_mb"] / peaks[(encoder, batch)]
            cells.append(f"{ratio:.2f} ({memory:.2f})" if ratio and memory else "—")
        label = arm + (f", K = {queue:,}" if queue else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gpu_step_findings(name: str = "gpu_suite_h200_bf16.json") -> str:
    """What a GPU suite report's step, cached-memory and queue-floor parts show, as the report's bullets: each arm's
    range of seconds per step and peak memory against MNRL's (or CachedMNRL's) over the encoders and batches."""
    parts = shared.load(name)["parts"]
    rows = parts["training_step"]["rows"]

    def span(values) -> str:
        low, high = min(values), max(values)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"

    def ratios(arm: str, **where) -> list[float]:
        return [
            row["ratio_to_mnrl"]
            for row in rows
            if row["arm"].startswith(arm)
            and "ratio_to_mnrl" in row
            and all(row[key] == value for key, value in where.items())
        ]

    first = [row for row in rows if row["queue_size"] in (None, 0, 65536)]  # each arm at its first queue size
    peak = {(row["encoder"], row["batch"], row["arm"]): row["peak_mb"] for row in first}
    step = {(row["encoder"], row["batch"], row["arm"]): row["seconds_per_step"] for row in first}
    dual = [row for row in rows if row["arm"].startswith("dual_momentum")]
    memory = [row["peak_mb"] / peak[(row["encoder"], row["batch"], "mnrl")] for row in dual]
    groups = [(encoder, batch) for encoder, batch, arm in peak if arm == "cached_mql"]
    cached = [peak[(*group, "cached_mql")] / peak[(*group, "cached_mnrl")] for group in groups]
    cached_time = [step[(*group, "cached_mql")] / step[(*group, "cached_mnrl")] for group in groups]
    lines = [
        f"- **A `DualMomentumModel` step in bf16 costs {span(ratios('dual_momentum'))} times MNRL's** (one shared "
        f"encoder: {span(ratios('dual_momentum_shared'))}; one per language: "
        f"{span(ratios('dual_momentum_per_language'))}), `MomentumQueueLoss`'s {span(ratios('mql'))} times; with "
        f"65,536 keys at batch 1,024, {span(ratios('dual_momentum', batch=1024, queue_size=65536))}. Its peak memory "
        f"is {span(memory)} times MNRL's.",
        f"- **`CachedMomentumQueueLoss` costs {span(cached_time)} times `CachedMultipleNegativesRankingLoss`'s step** "
        f"(its key encoder's forward in mini-batches on top of GradCache's two passes), at {span(cached)} times its "
        "peak memory, which holds the queues and the momentum copy",
    ]
    if "cached_memory" in parts:
        held = parts["cached_memory"]
        lines[-1] += (
            f" (`cached_memory`: {held['ratio_beyond_queue']:.2f} times CachedMNRL's beyond the queue's "
            f"{held['queue_mb']:.0f} MB)"
        )
    lines[-1] += "."
    if "queue_floor" in parts:
        floor = parts["queue_floor"]["rows"]
        lines.append(
            "- **The queue's own time against its floor** (the bfloat16 products of the same shapes, both "
            "directions): "
            + "; ".join(
                f"{1e3 * row['added_seconds']:.1f} ms added per step at "
                f"{row['queue_size']:,} keys, {row['times_floor']:.1f} times"
                for row in floor
            )
            + "."
        )
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "gpu-suite-h200-bf16": lambda: gpu_suite_table("gpu_suite_h200_bf16.json"),
    "gpu-step-summary": gpu_step_summary,
    "gpu-step-findings": gpu_step_findings,
}
