"""Draw the curves of the benchmark report (docs/benchmarks/) from the JSON in benchmarks/results/.

    python benchmarks/plot_results.py      # writes docs/benchmarks/plots/*.png (needs matplotlib: hf_xlsr[eval])

* ``moco_queue_size.png`` -- held-out retrieval against queue size K, mean and spread over seeds, with the in-batch
  peer, at Table 9's learning rate and at 2e-4 (``results/claim_moco_minilm_en_fr.json``,
  ``results/claim_moco_minilm_en_fr_lr2e-4.json``);
* ``queue_cost.png`` -- seconds a queue adds to a step against K: blocked, materialised, and the arithmetic floor
  (``results/queue.json``);
* ``cmlm_loss.png`` -- CMLM and MLM training loss against steps, every seed (``results/claim_cmlm.json``);
* ``cmlm_schedules.png`` -- part B's arms, every seed: CMLM loss against steps (stage switch marked) and bitext
  retrieval loss against the steps since BR began; dashed: each stage its own lr
  schedule (``results/claim_cmlm.json``);
* ``lsim_paired.png`` -- L_sim at 2/128 minus no L_sim, paired by seed, at the lightweight model's full size: each
  seed's difference and the running mean with its 95% t interval as seeds are added, on the CPU and on the H100
  (``results/claim_lightweight_fullsize.json``, ``results/claim_lightweight_fullsize_h100.json``).

A plot whose results file does not exist yet is skipped.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import mean_and_spread  # noqa: E402

from hf_xlsr.modeling.functional import QUEUE_BLOCK_SIZE  # noqa: E402

HERE = Path(__file__).parent
RESULTS, PLOTS = HERE / "results", HERE.parent / "docs" / "benchmarks" / "plots"


def load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def moco_queue_size() -> None:
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, color in (("claim_moco_minilm_en_fr", "C0"), ("claim_moco_minilm_en_fr_lr2e-4", "C1")):
        if not (RESULTS / f"{name}.json").is_file():
            continue
        data = load(name)
        batch, rate = data["setup"]["batch_size"], data["setup"]["learning_rate"]
        by_arm: dict[str, list[float]] = {}
        for run in data["runs"]:
            by_arm.setdefault(run["arm"], []).append(100 * run["bible"])
        points = [(multiple * batch, *mean_and_spread(by_arm[f"K{multiple}B"])[:2])
                  for multiple in (1, 16, 128) if f"K{multiple}B" in by_arm]  # fmt: skip
        ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], fmt="o-", capsize=3,
                    color=color, label=f"DualMomentumModel, m = 0.99, lr {rate:g}")  # fmt: skip
        if "mnrl" in by_arm:
            mean, spread, _ = mean_and_spread(by_arm["mnrl"])
            ax.axhline(mean, color=color, linestyle="--", label=f"sentence-transformers MNRL (in-batch), lr {rate:g}")
            ax.axhspan(mean - spread, mean + spread, color=color, alpha=0.12)
    ax.set(xscale="log", xlabel="queue size K", ylabel="held-out en-fr retrieval accuracy (%)",
           title=f"MiniLM-L6, batch {batch}, {data['setup']['steps']} steps")  # fmt: skip
    ax.set_xticks([p[0] for p in points], [str(p[0]) for p in points])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOTS / "moco_queue_size.png", dpi=120)


def queue_cost() -> None:
    rows = load("queue")["rows"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for implementation, dtype, style in (
        ("blocked", "float32", "o-"),
        ("blocked", "float16", "o--"),
        ("materialised", "float32", "s-"),
        ("materialised", "float16", "s--"),
    ):
        points = sorted((r["K"], 1e3 * r["added_seconds"]) for r in rows
                        if r["implementation"] == implementation and r["queue_dtype"] == dtype
                        and r.get("block_size", 0) in (0, QUEUE_BLOCK_SIZE))  # fmt: skip
        ax.plot(*zip(*points, strict=True), style, label=f"{implementation}, {dtype} queue")
    sizes = sorted({r["K"] for r in rows})  # each configuration timed its own floor: their median per K
    floor = [1e3 * statistics.median(r["floor_seconds"] for r in rows if r["K"] == size) for size in sizes]
    ax.plot(sizes, floor, "k:", label="floor: 2 x 2 B K d multiply-adds")
    ax.set(xscale="log", yscale="log", xlabel="queue size K", ylabel="ms added to a step",
           title="The queue's cost, batch 32, d = 384, 2 CPU threads")  # fmt: skip
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOTS / "queue_cost.png", dpi=120)


def cmlm_loss() -> None:
    runs = [run for run in load("claim_cmlm")["runs"] if run["arm"] in ("mlm", "cmlm")]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    colours = {"mlm": "tab:grey", "cmlm": "tab:blue"}
    for run in runs:
        curve = [(entry["step"], entry["loss"]) for entry in run["loss_curve"] if "step" in entry]
        if curve:
            label = run["arm"] if run["seed"] == 0 else None
            ax.plot(*zip(*curve, strict=True), color=colours[run["arm"]], label=label)
    ax.set(xlabel="optimizer step", ylabel="masked-token loss", title="Conditional MLM against MLM, tiny BERT")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS / "cmlm_loss.png", dpi=120)


def cmlm_schedules() -> None:
    """Left: CMLM loss against optimizer step. Right: BR loss against the steps since BR began (the second stage's
    start for the two-stage arms), so that BR from a CMLM-trained start and from the random one line up."""
    data = load("claim_cmlm")
    runs = [run for run in data["runs"] if run["arm"].startswith("schedule ")]
    colours = {"cmlm+br": "tab:green", "cmlm->br": "tab:orange", "cmlm->cmlm+br": "tab:blue", "br": "tab:red"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labelled = set()
    # solid: one decay (first design); each stage its own warm-up and decay (second design): dashed after the
    # 600-step CMLM stage, dash-dotted after the 2,000-step one, dotted after the 4,000-step one
    switches = {data["setup"]["stage_one"]}
    for run in runs:
        arm = run["arm"].removeprefix("schedule ")
        schedule = arm.split()[0]
        style = "-"
        if "per-stage" in arm:
            stage_one = int(arm.split()[-1].split("+")[0])
            switches.add(stage_one)
            style = {600: "--", 2000: "-."}.get(stage_one, ":")
        label = None if arm in labelled else arm
        labelled.add(arm)
        cmlm = [(e["step"], e["loss_cmlm"]) for e in run["loss_curve"] if "loss_cmlm" in e]
        if cmlm:
            axes[0].plot(*zip(*cmlm, strict=True), style, color=colours[schedule], label=label, alpha=0.7)
        br = [(e["step"], e["loss_br"]) for e in run["loss_curve"] if "loss_br" in e]
        switch = br[0][0] - 50  # curves are logged every 50 steps
        axes[1].plot(*zip(*[(step - switch, loss) for step, loss in br], strict=True), style,
                     color=colours[schedule], label=label, alpha=0.7)  # fmt: skip
    for i, step in enumerate(sorted(switches)):
        axes[0].axvline(step, color="grey", linestyle=":", label="stage switch" if i == 0 else None)
    axes[0].set(xlabel="optimizer step", ylabel="CMLM loss", title="CMLM loss, tiny BERT from scratch")
    axes[1].set(xlabel="steps since BR began", ylabel="BR loss (both directions)", title="bitext retrieval loss")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOTS / "cmlm_schedules.png", dpi=120)


def lsim_paired() -> None:
    from scipy import stats

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, label, color in (("claim_lightweight_fullsize", "2-core CPU", "tab:blue"),
                               ("claim_lightweight_fullsize_h100", "H100", "tab:orange")):  # fmt: skip
        if not (RESULTS / f"{name}.json").is_file():
            continue
        by_arm: dict[str, dict[int, float]] = {}
        for run in load(name)["runs"]:
            by_arm.setdefault(run["arm"], {})[run["seed"]] = 100 * run["bible"]
        without, with_sim = by_arm["ugt+align"], by_arm["ugt+align+sim@sim_weight=0.015625"]
        differences = [with_sim[seed] - without[seed] for seed in sorted(set(without) & set(with_sim))]
        counts = range(3, len(differences) + 1)
        intervals = [stats.ttest_1samp(differences[:n], 0).confidence_interval(0.95) for n in counts]
        ax.plot(range(1, len(differences) + 1), differences, ".", color=color, alpha=0.5)
        ax.plot(counts, [mean_and_spread(differences[:n])[0] for n in counts], "-", color=color,
                label=f"{label}: running mean, 95% interval")  # fmt: skip
        ax.fill_between(counts, [i.low for i in intervals], [i.high for i in intervals], color=color, alpha=0.2)
    ax.axhspan(0.3, 0.9, color="green", alpha=0.12, label="the paper's gain (Table 7, XSR)")
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set(xlabel="seeds", ylabel="retrieval, L_sim at 2/128 minus none (points)",
           title="L_sim at the paper's size, paired by seed (dots: one seed)")  # fmt: skip
    ax.set_ylim(top=ax.get_ylim()[1] + 1.5)  # room for the legend above every seed
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(PLOTS / "lsim_paired.png", dpi=120)


def main() -> None:
    PLOTS.mkdir(exist_ok=True)
    for plot, needs in ((moco_queue_size, "claim_moco_minilm_en_fr"), (queue_cost, "queue"), (cmlm_loss, "claim_cmlm"),
                        (cmlm_schedules, "claim_cmlm"),
                        (lsim_paired, "claim_lightweight_fullsize_h100")):  # fmt: skip
        if not (RESULTS / f"{needs}.json").is_file():
            print(f"skipped {plot.__name__}: no results/{needs}.json")
            continue
        plot()
        print(f"wrote {PLOTS / plot.__name__}.png")


if __name__ == "__main__":
    main()
