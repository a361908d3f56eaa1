"""The blocks of the cost page (docs/benchmarks/cost.md): a training step's time and memory, the queue's cost, LoRA."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

from . import shared


def lora_table() -> str:
    """LoRA against full fine-tuning over the learning-rate grid of each (``bench_lora.py``): parameters, the momentum
    encoder's own weights, peak RSS against full fine-tuning at its first rate, retrieval."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_text as stat

    data = shared.load("lora.json")
    runs, arms = data["runs"], data["setup"]["arms"]

    def of(arm: str, key: str) -> list[float]:
        return shared.arm_values(runs, arm, key)

    order = sorted(arms, key=lambda arm: ("lora" in arms[arm], arms[arm]["learning_rate"]))
    base = statistics.fmean(of(order[0], "peak_rss_mb"))
    lines = ["| arm | learning rate | trainable parameters | momentum encoder's own weights | peak RSS MB | × full | "
             "en→fr | fr→en | retrieval mean ± spread | per seed |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for arm in order:
        lora = arms[arm].get("lora")
        label = f"LoRA r = {lora['r']}, every linear layer" if lora else "full fine-tuning"
        rate = f"{arms[arm]['learning_rate']:.0e}".replace("e-0", "e-")
        lines.append(
            f"| {label} | {rate} | {of(arm, 'trainable_parameters')[0] / 1e6:.2f} M | "
            f"{of(arm, 'momentum_encoder_own_mb')[0]:.1f} MB | {stat(of(arm, 'peak_rss_mb'), 1, thousands=True)} | "
            f"{statistics.fmean(of(arm, 'peak_rss_mb')) / base:.2f} | {stat(of(arm, 'bible_en2fr'))} | "
            f"{stat(of(arm, 'bible_fr2en'))} | {stat(of(arm, 'bible'))} | "
            + ", ".join(f"{round(100 * v, 2):g}" for v in of(arm, "bible"))
            + " |"
        )
    return "\n".join(lines) + "\n" + shared.caption("lora.json", data["setup"], data["runs"])


MEMORY_LABELS = {  # bench_memory.py's variants, as the table names them
    "peer: sentence-transformers MNRL": "peer: sentence-transformers MNRL",
    "float32, K=4096": "float32, K = 4,096",
    "bf16 autocast, K=4096": "bf16 autocast, K = 4,096",
    "gradient checkpointing, K=4096": "gradient checkpointing, K = 4,096",
    "float32 queue, K=409600": "float32 queues, the paper's K = 409,600",
    "float16 queue, K=409600": "float16 queues, K = 409,600",
}


def memory_rows(results: dict) -> str:
    """The Markdown table of a results file: each variant's peak memory against the peer's, and its parts."""
    lines = ["| variant | peak RSS MB | × peer | model + queues MB | training MB | queues MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in results["rows"]:
        lines.append(
            f"| {MEMORY_LABELS[row['variant']]} | {row['peak_rss_mb']:,.0f} | {row['peak_rss_vs_peer']:.2f} | "
            f"{row['model_and_queue_mb']:,.0f} | {row['training_mb']:,.0f} | "
            f"{row['queue_mb']:,.0f} |"
        )
    return "\n".join(lines)


def memory_table() -> str:
    """Peak memory per training step of DualMomentumModel's variants against MNRL's (``bench_memory.py``)."""
    return memory_rows(shared.load("memory.json")) + "\n"


def queue_cost_rows(results: dict) -> str:
    """The Markdown table of a results file: each configuration's added seconds against the two floors and against
    its own products over the stored queue, and its added memory."""
    lines = ["| K | queue dtype | implementation | block | added s | × 2BKd floor | × 4BKd floor | × its products "
             "| added RSS (MB) | queue (MB) |", "| ---: | --- | --- | ---: " + "| ---: " * 6 + "|"]  # fmt: skip
    for row in results["rows"]:
        block = f"{row['block_size']:,}" if row.get("block_size") else ""
        stored = f"{row['ratio_to_stored']:.2f}" if "ratio_to_stored" in row else ""
        lines.append(
            f"| {row['K']:,} | {row['queue_dtype']} | {row['implementation']} | {block} | "
            f"{row['added_seconds']:.4f} | "
            f"{row['ratio_to_floor']:.2f} | {row['ratio_to_issue_floor']:.2f} | {stored} | "
            f"{row['added_rss_mb']:.0f} | {row['queue_mb']:,.0f} |"
        )
    return "\n".join(lines)


def queue_cost_table(name: str) -> str:
    """The queue's added time against its arithmetic floors (``bench_queue.py``)."""
    return queue_cost_rows(shared.load(name)) + "\n"


def step_cost_table(name: str = "queue_vs_batch_grid_timing.json") -> str:
    """Every timed arm's seconds per training pair and the memory it holds, each against MNRL at batch B's, from
    ``bench_queue_vs_batch.py --timing``'s file."""
    sys.path.insert(0, str(shared.HERE))
    from queue_arms import LABELS

    timed = shared.load(name)
    rows, peer = timed["rows"], timed["rows"]["mnrl_B"]
    lines = ["| arm | seconds per pair | × MNRL, batch B | memory held (MB) | × MNRL, batch B |",
             "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for arm, row in rows.items():
        lines.append(
            f"| {LABELS[arm]} | {row['seconds_per_pair']:.3f} | "
            f"{row['seconds_per_pair'] / peer['seconds_per_pair']:.2f} | {row['held_mb']:,.0f} | "
            f"{row['held_mb'] / peer['held_mb']:.2f} |"
        )
    setup = timed["setup"]
    return (
        "\n".join(lines) + f"\n\n`benchmarks/results/{name}`, the median of {setup['rounds']} rounds of "
        f"{setup['timed_steps']} steps; {setup['machine']}; {setup['date']}.\n"
    )


TABLES: dict[str, Callable[[], str]] = {
    "lora": lora_table,
    "step-cost": step_cost_table,
    "dual-momentum-memory": memory_table,
    "queue-cost": lambda: queue_cost_table("queue.json"),
}
