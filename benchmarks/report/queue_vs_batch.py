"""The tables, verdicts and plot of a queue-against-batch results file (``bench_queue_vs_batch.py``): each arm at
its chosen learning-rate rule over its seeds, the goal at equal compute, time and memory, and the curves."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from . import shared

sys.path.insert(0, str(shared.HERE))
from common import mean_and_spread, mean_text  # noqa: E402
from queue_arms import ARMS, BATCH, CACHED_TWIN, DIMENSION, HF_XLSR, LABELS, spec  # noqa: E402


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


def languages_label(languages: list[str]) -> str:
    return "-".join(languages) if len(languages) == 2 else f"{len(languages)} languages, {languages[0]} with each"


def by_arm(runs: list[dict]) -> dict[str, list[dict]]:
    arms: dict[str, list[dict]] = {}
    for run in runs:
        arms.setdefault(run["arm"], []).append(run)
    return arms


def chosen_arms(runs: list[dict]) -> dict[str, str]:
    """For each base arm, the learning-rate rule with the higher ``tune`` accuracy at seed 0."""
    best: dict[str, tuple[float, str]] = {}
    for run in runs:
        if run["seed"] != 0:
            continue
        base = spec(run["arm"])["base"]
        if base not in best or run["tune"] > best[base][0]:
            best[base] = (run["tune"], run["arm"])
    return {base: arm for base, (_, arm) in best.items()}


def negatives_per_query(arm: str, batch: int, queue: int) -> str:
    loss = spec(arm)["loss"]
    if loss == "distill":
        return "—"
    if loss == "dmm":
        return f"{queue:,}"  # MoCo-BERT's Eq. 2: the queue holds the negatives
    if loss == "contaccum":
        return f"{BATCH - 1 + queue:,}"  # a micro-batch's other rows and the bank
    return f"{batch - 1 + queue:,}"  # the other rows' keys (and the queue)


def memory_of(row: dict) -> float | None:
    """What a run held: from before its model, momentum copy and queues were built (``held_mb``), or, in results
    measured without that figure, what training added after them (``training_mb``)."""
    return row.get("held_mb", row["training_mb"])


def mean_memory(group: list[dict]) -> float:
    return statistics.fmean(memory_of(r) for r in group if memory_of(r) is not None)


def report(results: dict, timing_rows: dict | None) -> str:
    """The Markdown table: each base arm at its chosen learning-rate rule, mean ± spread over its seeds, and from
    ``--timing`` the peak memory a short run adds and its seconds per training pair (without timing: the memory the
    full runs added, evaluations inside them included)."""
    runs = results["runs"]
    arms = by_arm(runs)
    chosen = chosen_arms(runs)
    b = results["setup"]["B"]
    lines = [
        "| arm | batch | negatives per query | steps | held-out accuracy (%) | seeds | tune (%) | memory (MB) "
        "| seconds per pair (× MNRL B) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    timing_rows = timing_rows or {}
    pairs = results["setup"]["pairs"]
    for base in ARMS:
        t = timing_rows.get(base)
        speed = f"{t['seconds_per_pair']:.3f} ({t['time_ratio_to_mnrl_B']:.2f}×)" if t else "—"
        if base not in chosen:
            if base in CACHED_TWIN and t:  # its gradients are its GradCache twin's: timed, not trained again
                batch, twin = ARMS[base]["batch"] * b, CACHED_TWIN[base]
                negatives = negatives_per_query(base, batch, ARMS[base].get("queue", 0) * b)
                lines.append(f"| {LABELS[base]} | {batch} | {negatives} | {pairs // batch} | as {twin} | — "
                             f"| — | {memory_of(t):.0f} | {speed} |")  # fmt: skip
            continue
        arm = chosen[base]
        group = arms[arm]
        first = group[0]
        rate = spec(arm)["rate"]
        accuracy = mean_text([r["bible"] for r in group])
        negatives = negatives_per_query(arm, first["batch"], first["queue"])
        tune = 100 * statistics.fmean(r["tune"] for r in group)
        memory = memory_of(t) if t else mean_memory(group)
        lines.append(f"| {LABELS[base]}{rate} | {first['batch']} | {negatives} | {first['steps']} | {accuracy} | "
                     f"{len(group)} | {tune:.1f} | {memory:.0f} | {speed} |")  # fmt: skip
    return "\n".join(lines)


def accuracy_at(run: dict, share: float) -> float | None:
    """A run's held-out accuracy after ``share`` of its training pairs, read linearly between the points of its
    curve; None before its first point."""
    total = run["curve"][-1]["pairs"]
    points = [(p["pairs"] / total, p["bible"]) for p in run["curve"]]
    if share < points[0][0]:
        return None
    for (a, x), (b, y) in zip(points, points[1:], strict=False):
        if a <= share <= b:
            return x + (y - x) * (share - a) / (b - a)
    return points[-1][1]


def equal_time(runs: list[dict], ours: dict, peer: dict, m_peer: float, spread: float) -> str:
    """The verdict at equal time: the hf_xlsr runs read where they have spent the peer's whole time, by the seconds
    per training pair of the timed runs; a faster arm is read at its whole budget (then a lower bound)."""
    ratio = ours["seconds_per_pair"] / peer["seconds_per_pair"]
    share = min(1.0, 1 / ratio)
    readings = [accuracy_at(run, share) for run in runs]
    head = (f"- equal time (seconds per training pair {ratio:.2f}× the peer's): the hf_xlsr run at {100 * share:.0f}% "
            "of its pairs")  # fmt: skip
    if None in readings:
        return head + ", before its first measured point: not measured."
    mean = statistics.fmean(readings)
    reading = "holds" if len(runs) >= 3 and mean - m_peer > spread else "does not hold"
    return head + f", {100 * mean:.1f}%, against the peer's {100 * m_peer:.1f}%: {reading}."


def cached_queue_memory(queue: dict, peer: dict, keys: int) -> str:
    """The cached queue's memory against CachedMNRL's at the same batch and mini-batch, and against CachedMNRL's
    plus the queue's own state: the momentum encoder's copy of the weights (float32, a third of AdamW's gradient and
    two moments, ``state_mb``) and the two queues of ``keys`` float32 keys."""
    own = peer["state_mb"] / 3 + 2 * keys * DIMENSION * 4 / 2**20
    ratio = queue["held_mb"] / (peer["held_mb"] + own)
    return (f"- the cached queue at 8B (mini-batches of B): {queue['held_mb']:.0f} MB against CachedMNRL's "
            f"{peer['held_mb']:.0f} MB ({queue['held_mb'] / peer['held_mb']:.2f}×); against CachedMNRL's plus the "
            f"queue's own state ({own:.0f} MB: the momentum copy and two queues of {keys:,} keys) {ratio:.2f}× "
            "(goal at most 1.1×): " + ("holds" if ratio <= 1.1 else "does not hold") + ".")  # fmt: skip


def verdict(results: dict, timing_rows: dict | None) -> str:
    """The goal, tested: the best hf_xlsr arm against the best peer, each chosen by its seed-0 accuracy on the tuning
    pairs, compared by mean held-out accuracy over their seeds."""
    runs = results["runs"]
    arms = by_arm(runs)
    chosen = chosen_arms(runs)
    means = {arm: mean_and_spread([r["bible"] for r in arms[arm]]) for arm in chosen.values()}
    tune = {arm: next(r["tune"] for r in arms[arm] if r["seed"] == 0) for arm in chosen.values()}
    # the best arm of each side is chosen on the tuning pairs at seed 0, not on the figure it is then reported by
    ours = max((a for a in means if spec(a)["loss"] in HF_XLSR), key=tune.get)
    peer = max((a for a in means if spec(a)["loss"] not in HF_XLSR), key=tune.get)
    (m_ours, s_ours, n_ours), (m_peer, s_peer, n_peer) = means[ours], means[peer]
    halves = [next((p["bible"] for p in r["curve"] if p["pairs"] * 2 == r["curve"][-1]["pairs"]), None)
              for r in arms[ours]]  # fmt: skip
    seeded = n_ours >= 3 and n_peer >= 3
    spread = max(s_ours, s_peer) if n_ours > 1 and n_peer > 1 else float("nan")
    reading = ("holds" if m_ours - m_peer > spread else "does not hold") if seeded else "not decided before 3 seeds"
    lines = [
        f"- best hf_xlsr arm: {LABELS[spec(ours)['base']]}, {100 * m_ours:.1f}% (n = {n_ours}); best peer: "
        f"{LABELS[spec(peer)['base']]}, {100 * m_peer:.1f}% (n = {n_peer}).",
        f"- equal compute: {100 * (m_ours - m_peer):+.1f} points, "
        + (f"the larger seed spread {100 * spread:.1f}" if spread == spread else "one seed, no spread")
        + f": {reading}.",
    ]
    if None in halves:
        lines.append("- half the compute: no point at half the budget inside the hf_xlsr runs, not measured.")
    else:
        half = statistics.fmean(halves)
        lines.append(f"- half the compute (the point at half the budget inside the hf_xlsr run): {100 * half:.1f}% "
                     f"against the peer's {100 * m_peer:.1f}% at the whole budget: "
                     + ("holds" if half >= m_peer else "does not hold") + ".")  # fmt: skip
    timed = timing_rows or {}  # memory and time from the short timed runs where there are some (no evaluation inside)
    if spec(ours)["base"] in timed and spec(peer)["base"] in timed:
        lines.append(equal_time(arms[ours], timed[spec(ours)["base"]], timed[spec(peer)["base"]], m_peer, spread))
    memory = {a: memory_of(timed[spec(a)["base"]]) if spec(a)["base"] in timed else mean_memory(arms[a])
              for a in (ours, peer)}  # fmt: skip
    ratio = memory[ours] / memory[peer]
    held = all("held_mb" in (timed.get(spec(a)["base"]) or arms[a][0]) for a in (ours, peer))
    kind = "memory held" if held else "training memory"
    reading = (
        ("holds" if ratio <= 1 else "does not hold")
        if held
        else "not decided: measured after the arm was built, without its momentum copy and queues"
    )
    lines.append(f"- {kind}: {memory[ours]:.0f} MB against {memory[peer]:.0f} MB ({ratio:.2f}×; goal at most the "
                 f"peer's): {reading}.")  # fmt: skip
    state = {a: timed[spec(a)["base"]].get("state_mb") for a in (ours, peer) if spec(a)["base"] in timed}
    if len(state) == 2 and None not in state.values():  # the rest: activations, caches, the queue, a momentum copy
        rest = {a: memory[a] - state[a] for a in (ours, peer)}
        lines.append(f"- beyond the weights' gradients and AdamW state ({state[ours]:.0f} MB against "
                     f"{state[peer]:.0f} MB): {rest[ours]:.0f} MB against {rest[peer]:.0f} MB "
                     f"({rest[ours] / rest[peer]:.2f}×).")  # fmt: skip
    large = (timing_rows or {}).get("mnrl_8B")
    if large:
        lines.append(f"- against the large batch itself (MNRL at 8B, timed): {memory[ours]:.0f} MB against "
                     f"{memory_of(large):.0f} MB ({memory[ours] / memory_of(large):.2f}×).")  # fmt: skip
    cached = [timed.get(arm) for arm in ("cmql_8B_K256B", "cmnrl_8B")]
    if None not in cached and all("held_mb" in row for row in cached):
        lines.append(cached_queue_memory(*cached, results["setup"]["B"] * ARMS["cmql_8B_K256B"]["queue"]))
    if all("bible_zero_shot" in r["curve"][-1] for a in (ours, peer) for r in arms[a]):
        shown = {a: mean_text([r["curve"][-1]["bible_zero_shot"] for r in arms[a]]) + "%" for a in (ours, peer)}
        lines.append(f"- the pairs of two languages besides the first (never trained together): {shown[ours]} "
                     f"against {shown[peer]}.")  # fmt: skip
    return "\n".join(lines)


def plot(results: dict, timing_rows: dict | None, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    arms = by_arm(runs)
    chosen = chosen_arms(runs)
    panels = 2 if timing_rows else 1
    figure, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.5), squeeze=False)
    for base, arm in chosen.items():
        group = arms[arm]
        xs = [p["trainable_encodings"] for p in group[0]["curve"]]
        ys = [100 * statistics.fmean(r["curve"][i]["bible"] for r in group) for i in range(len(xs))]
        style = "-" if spec(arm)["loss"] in HF_XLSR else "--"
        axes[0][0].plot(xs, ys, style, marker="o", label=LABELS[base])
        if timing_rows and base in timing_rows:
            seconds = [p["pairs"] * timing_rows[base]["seconds_per_pair"] for p in group[0]["curve"]]
            axes[0][1].plot(seconds, ys, style, marker="o", label=LABELS[base])
    axes[0][0].set_xlabel("sentences through the trainable encoder (forward and backward)")
    axes[0][0].set_ylabel("held-out retrieval accuracy (%)")
    axes[0][0].legend(fontsize=9)
    if timing_rows:
        axes[0][1].set_xlabel("training seconds (pairs × the arm's interleaved seconds per pair)")
    setup = results["setup"]
    heldout = setup.get("heldout", 1000)  # older files held 1,000 out, the only size then
    scored = "every held-out pair but the tuning ones" if setup.get("whole_test") else f"{heldout:,} held-out"
    figure.suptitle(f"{setup['encoder']}, {languages_label(setup['languages'])}, B = {setup['B']}, {scored}: "
                    "the queue against large batches")  # fmt: skip
    figure.tight_layout()
    figure.savefig(out, dpi=110)
