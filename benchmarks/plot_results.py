"""Draw the curves of benchmarks/RESULTS.md from the JSON the benchmark scripts wrote to benchmarks/results/.

    python benchmarks/plot_results.py      # writes benchmarks/plots/*.png (needs matplotlib: hf_xlsr[eval])

* ``queue_size.png`` -- held-out retrieval accuracy against queue size K (``results/quality.json``);
* ``step_time.png`` -- train-step time against batch size, each method and sentence-transformers
  (``results/step.json``);
* ``mining_time.png`` -- mining time against sentences per side, hf_xlsr and the peer (``results/mining.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
RESULTS, PLOTS = HERE / "results", HERE / "plots"


def rows(name: str) -> list[dict]:
    return json.loads((RESULTS / f"{name}.json").read_text())["rows"]


def queue_size() -> None:
    table = {row["variant"]: row["mean"] for row in rows("quality")}
    sizes = [256, 1024, 4096]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    accuracy = [100 * table[f"dm_separate_K{k}_m0.999"] for k in sizes]
    ax.plot(sizes, accuracy, "o-", label="DualMomentumModel, m = 0.999")
    ax.axhline(100 * table["st_mnrl"], color="grey", linestyle="--", label="sentence-transformers MNRL (no queue)")
    ax.set(xscale="log", xlabel="queue size K", ylabel="held-out en-fr retrieval accuracy (%)",
           title="Queue size (120 steps x 32 pairs)")  # fmt: skip
    ax.set_xticks(sizes, [str(k) for k in sizes])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(50, 65)  # one seed: differences under a point are noise
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS / "queue_size.png", dpi=120)


def step_time() -> None:
    data = rows("step")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = {"st_mnrl_symmetric": "sentence-transformers MNRL (peer)",
              "dual_momentum_shared": "DualMomentumModel, shared encoder",
              "dual_momentum_separate": "DualMomentumModel, encoder per language"}  # fmt: skip
    for method, label in labels.items():
        points = sorted((row["batch_size"], row["step_seconds"]) for row in data if row["method"] == method)
        ax.plot(*zip(*points, strict=True), "o-", label=label)
    ax.set(xscale="log", yscale="log", xlabel="batch size (en-fr pairs)", ylabel="seconds per train step",
           title="Train-step time, MiniLM-L6, 2 CPU threads")  # fmt: skip
    batches = sorted({row["batch_size"] for row in data})
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS / "step_time.png", dpi=120)


def mining_time() -> None:
    data = rows("mining")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = {"peer_exact": "peer, exact search", "peer_ivf": "peer, IVF",
              "hf_xlsr_exact": "hf_xlsr, exact search", "hf_xlsr_auto": "hf_xlsr, auto (IVF from 100k)"}  # fmt: skip
    for method, label in labels.items():
        points = sorted((row["size"], row["seconds"]) for row in data if row["method"] == method)
        ax.plot(*zip(*points, strict=True), "o-", label=label)
    ax.set(xscale="log", yscale="log", xlabel="sentences per side", ylabel="seconds",
           title="Bitext mining time, 2 CPU threads")  # fmt: skip
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS / "mining_time.png", dpi=120)


def main() -> None:
    PLOTS.mkdir(exist_ok=True)
    for plot in (queue_size, step_time, mining_time):
        plot()
        print(f"wrote {PLOTS / plot.__name__}.png")


if __name__ == "__main__":
    main()
