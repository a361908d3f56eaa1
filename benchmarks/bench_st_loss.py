"""MomentumQueueLoss against sentence-transformers' in-batch losses, under SentenceTransformerTrainer.

The setup of the MoCo claim (``claim_moco.py``): the offline MiniLM-L6, Bible en-fr training pairs, batches of 8,
640 steps, AdamW at 4e-5 with 64 warm-up steps and cosine decay, temperature 0.04 (scale 25), symmetric losses;
held-out retrieval on 1,000 pairs. Arms:

* ``mnrl``: ``MultipleNegativesRankingLoss`` both ways, batch 8 (7 in-batch negatives);
* ``queue``: ``MomentumQueueLoss`` with 128 queued keys (16 batches), momentum 0.99, batch 8;
* ``cached_mnrl``: ``CachedMultipleNegativesRankingLoss`` both ways at batch 128 (mini-batches of 32): as many
  negatives as the queue, all fresh, over the same number of training pairs (a sixteenth of the steps).

The ``mnrl`` arm is the same run as ``claim_moco.py``'s (same function, data order and seeds), so its results can
be taken from there.

``--timing`` measures seconds per step of the three in one process: ``--timing-rounds`` short runs per arm in
palindromic order (A B C C B A ...), the median over their steps.

    HF_HUB_OFFLINE=1 python benchmarks/bench_st_loss.py --timing --out benchmarks/results/st_loss_timing.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_st_loss.py --out benchmarks/results/st_loss.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time

import torch
from claim_moco import training_arguments
from common import ENCODERS, Results, heldout_evaluators, machine, score

ARMS = {"mnrl": 8, "queue": 8, "cached_mnrl": 128}  # arm -> batch size


def loss_for(arm: str, model):
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    from hf_xlsr.losses import MomentumQueueLoss

    both = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    if arm == "mnrl":
        return MultipleNegativesRankingLoss(model, scale=25.0, **both)
    if arm == "cached_mnrl":
        return CachedMultipleNegativesRankingLoss(model, scale=25.0, mini_batch_size=32, **both)
    return MomentumQueueLoss(model, queue_size=128, momentum=0.99, temperature=0.04, in_batch_negatives=True)


def trainer_for(arm: str, train, output_dir: str, seed: int, steps: int):
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    from hf_xlsr.data import resolve_reference

    torch.manual_seed(seed)
    model = SentenceTransformer(resolve_reference(ENCODERS["minilm"]))
    model[0].max_seq_length = 64
    loss = loss_for(arm, model)
    budget = argparse.Namespace(steps=steps, batch_size=ARMS[arm], learning_rate=4e-5)
    args = SentenceTransformerTrainingArguments(**training_arguments(budget, output_dir, seed))
    callbacks = [loss.callback] if hasattr(loss, "callback") else []
    return model, SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss,
                                             callbacks=callbacks)  # fmt: skip


def timing(train, steps: int, rounds: int) -> dict:
    """Seconds per step of each arm, median over ``rounds`` short runs per arm in palindromic order (A B C C B A ...),
    so that a slow spell of the machine weighs on every arm alike; the first step of each run warms up."""
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    arms = list(ARMS)
    order = [arm for i in range(rounds) for arm in (arms if i % 2 == 0 else arms[::-1])]
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    for arm in order:
        with tempfile.TemporaryDirectory() as output_dir:
            _, trainer = trainer_for(arm, train, output_dir, 0, steps + 1)
            clock = Clock()
            trainer.add_callback(clock)
            trainer.train()
        times[arm] += clock.times[1:]
    seconds = {arm: statistics.median(values) for arm, values in times.items()}
    return {
        arm: {"seconds_per_step": s, "ratio_to_mnrl": s / seconds["mnrl"], "steps_timed": len(times[arm])}
        for arm, s in seconds.items()
    }


LABELS = {"mnrl": "`MultipleNegativesRankingLoss`", "queue": "`MomentumQueueLoss`, K = 128, m = 0.99",
          "cached_mnrl": "`CachedMultipleNegativesRankingLoss`"}  # fmt: skip
NEGATIVES = {"mnrl": "7", "queue": "7 + 128", "cached_mnrl": "127"}  # per query, one direction


def report(results: dict, timing_rows: dict, moco: dict) -> str:
    """The three losses: held-out accuracy at seed 0 (MNRL's from ``claim_moco.py``'s ``mnrl`` arm, the same run,
    with its mean over seeds), seconds per step and per training pair against MNRL's (``--timing``)."""
    accuracy = {run["arm"]: run["bible"] for run in results["runs"] if run["seed"] == 0}
    mnrl = [run["bible"] for run in moco["runs"] if run["arm"] == "mnrl"]
    accuracy["mnrl"] = next(run["bible"] for run in moco["runs"] if run["arm"] == "mnrl" and run["seed"] == 0)
    lines = ["| loss | batch | steps | negatives per query (one direction) | held-out mean, seed 0 | s / step | "
             "× MNRL | s / training pair | × MNRL |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    per_pair = {arm: row["seconds_per_step"] / ARMS[arm] for arm, row in timing_rows.items()}
    steps = moco["setup"]["steps"]
    for arm, label in LABELS.items():
        held = f"{100 * accuracy[arm]:.1f}%"
        if arm == "mnrl" and len(mnrl) > 1:
            mean, spread = 100 * statistics.fmean(mnrl), 100 * statistics.stdev(mnrl)
            held += f" (seeds 0-{len(mnrl) - 1}: {mean:.1f} ± {spread:.1f})"
        row = timing_rows[arm]
        lines.append(
            f"| {label} | {ARMS[arm]} | {steps * ARMS['mnrl'] // ARMS[arm]} | {NEGATIVES[arm]} | {held} | "
            f"{row['seconds_per_step']:.3f} | {row['ratio_to_mnrl']:.2f} | {per_pair[arm]:.3f} | "
            f"{per_pair[arm] / per_pair['mnrl']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=640)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--timing-steps", type=int, default=5, help="timed steps per run")
    parser.add_argument("--timing-rounds", type=int, default=4, help="runs per arm, in palindromic order")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from hf_xlsr.data import load_bible

    train = load_bible(["en", "fr"], split="train").select_columns(["en", "fr"])
    if args.timing:
        rows = timing(train, args.timing_steps, args.timing_rounds)
        for arm, row in rows.items():
            print(f"{arm:<12}{row['seconds_per_step']:8.2f} s / step{row['ratio_to_mnrl']:7.2f} x MNRL")
        with open(args.out, "w") as handle:
            json.dump({"machine": machine(), "date": time.strftime("%Y-%m-%d"), "batch_sizes": ARMS, "rows": rows,
                       "command": " ".join(sys.argv)}, handle, indent=2)  # fmt: skip
        return
    evaluators = heldout_evaluators(["en", "fr"])
    results = Results(args.out, {"script": "benchmarks/bench_st_loss.py", "steps": args.steps, "batch_sizes": ARMS,
                                 "machine": machine()})  # fmt: skip
    for seed in args.seeds:
        for arm in args.arms:
            if results.done(arm, seed):
                continue
            began = time.time()
            with tempfile.TemporaryDirectory() as output_dir:
                steps = args.steps * ARMS["mnrl"] // ARMS[arm]  # every arm sees the same pairs
                model, trainer = trainer_for(arm, train, output_dir, seed, steps)
                trainer.train()
            model[0].max_seq_length = 128
            run = {
                "arm": arm,
                "seed": seed,
                "steps": steps,
                "train_seconds": round(time.time() - began),
                **score(evaluators, model),
            }
            results.add(run)
            print(run, flush=True)


if __name__ == "__main__":
    main()
