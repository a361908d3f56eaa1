"""The queue against large batches: many negatives at batch B, against what sentence-transformers users reach for.

The arms, the pairs they train on and the rows that score them: ``queue_arms.py``; the tuning protocol (``--grid``):
``protocol.py``; how the arms are held to equal compute and timed: the report's queue page (docs/benchmarks/queue.md).

    HF_HUB_OFFLINE=1 python benchmarks/bench_queue_vs_batch.py --threads 1 --whole-test --eval-points 1.0 \\
        --grid mnrl_B mql_K256B --out benchmarks/results/queue_vs_batch_grid.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_queue_vs_batch.py --threads 1 --whole-test --timing \\
        --out benchmarks/results/queue_vs_batch_grid_timing.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from common import ENCODERS, Results, machine, memory_mb, print_result, reset_peak, run_child
from protocol import run_grid
from queue_arms import (
    ARMS,
    BATCH,
    MOMENTUM,
    TEMPERATURE,
    EncoderCounter,
    accuracy,
    build,
    evaluators,
    queue_grid,
    spec,
    training_pairs,
)


def run_one(arm: str, seed: int, args) -> dict:
    """Train one arm for the budget, scoring it at ``--eval-points``; its own process, so its peak memory is its."""
    from transformers import TrainerCallback

    from hf_xlsr.data import resolve_reference

    path = resolve_reference(ENCODERS.get(args.encoder, args.encoder))
    train = training_pairs(args.languages, seed, args.pairs)
    scorers = evaluators(args.languages, args.heldout, whole=args.whole_test)
    s = spec(arm)
    batch = BATCH * s["batch"]
    steps = args.pairs // batch
    queue_size = args.queue_size or BATCH * s.get("queue", 0)
    counter = EncoderCounter()
    curve: list[dict] = []

    class Measure(TrainerCallback):
        def __init__(self):
            self.seconds, self.start = 0.0, None
            self.points = {max(1, round(f * steps)) for f in args.eval_points}

        def on_step_begin(self, a, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, a, state, control, **kwargs):
            self.seconds += time.perf_counter() - self.start
            if state.global_step in self.points:
                counter.active = False
                point = {"step": state.global_step, "pairs": state.global_step * batch,
                         "trainable_encodings": counter.trainable, "extra_forwards": counter.extra,
                         "train_seconds": round(self.seconds, 1)}  # fmt: skip
                for name, evaluator in scorers.items():  # the tuning set only at the end: it serves one choice
                    if name == "bible" or state.global_step == steps:
                        metrics = score(evaluator)
                        point[name] = accuracy(metrics)
                        if "retrieval_zero_shot_accuracy" in metrics:
                            point[f"{name}_zero_shot"] = metrics["retrieval_zero_shot_accuracy"]
                curve.append(point)
                print(arm, seed, point, flush=True)
                counter.active = True

    with tempfile.TemporaryDirectory() as output_dir:
        reset_peak()  # what the arm holds: from before its model, momentum copy and queues are built
        unbuilt = memory_mb("VmRSS")
        trainer, score = build(
            arm,
            path,
            train,
            args.languages,
            steps,
            args.learning_rate,
            output_dir,
            seed,
            args.max_length,
            temperature=args.temperature,
            queue_size=queue_size,
            momentum=args.momentum,
        )
        trainer.add_callback(Measure())
        before = memory_mb("VmRSS")
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        trainer.train()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "arm": arm,
        "seed": seed,
        "batch": batch,
        "steps": steps,
        "learning_rate": args.learning_rate * s["lr_factor"],
        "base_learning_rate": args.learning_rate,
        "temperature": args.temperature,
        "queue": queue_size,
        **({"queue_size": queue_size, "momentum": args.momentum} if queue_size else {}),
        "curve": curve,
        "bible": curve[-1]["bible"],
        "tune": curve[-1]["tune"],
        "train_seconds": curve[-1]["train_seconds"],
        "peak_rss_mb": round(peak, 1),
        "training_mb": round(max(peak, peak_before) - before, 1) if peak > peak_before else None,
        "held_mb": round(memory_mb("VmHWM") - unbuilt, 1),
    }


def child(args) -> None:
    """One (arm, seed) in this process; the result as JSON on the last line of stdout."""
    arm, seed = args.child.split(":")
    print_result(run_one(arm, int(seed), args))


def weight_state_mb(trainer) -> float:
    """What training holds for the weights themselves, whatever the loss: for each weight that got a gradient, the
    gradient and the optimizer's state (AdamW: two moments), read from the tensors after training."""
    held = sum(
        weight.numel() * weight.element_size()
        + sum(value.numel() * value.element_size() for value in state.values() if torch.is_tensor(value))
        for weight, state in trainer.optimizer.state.items()
    )
    return held / 2**20


def timing_child(args) -> None:
    """A short run of one arm: seconds per training pair over its steps after the first, and its peak memory."""
    from transformers import TrainerCallback

    from hf_xlsr.data import resolve_reference

    arm = args.timing_child
    s = spec(arm)
    batch = BATCH * s["batch"]
    steps = args.timing_steps + 1
    path = resolve_reference(ENCODERS.get(args.encoder, args.encoder))
    train = training_pairs(args.languages, 0, steps * batch)
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, a, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, a, state, control, **kwargs):
            times.append(time.perf_counter() - self.start)

    with tempfile.TemporaryDirectory() as output_dir:
        reset_peak()
        unbuilt = memory_mb("VmRSS")
        trainer, _ = build(
            arm,
            path,
            train,
            args.languages,
            steps,
            args.learning_rate,
            output_dir,
            0,
            args.max_length,
            temperature=args.temperature,
        )
        trainer.add_callback(Clock())
        before = memory_mb("VmRSS")
        trainer.train()
        state = weight_state_mb(trainer)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    top = memory_mb("VmHWM")  # the peak since before the build
    row = {"arm": arm, "seconds_per_pair": sum(times[1:]) / (len(times[1:]) * batch), "peak_rss_mb": peak,
           "training_mb": top - before, "held_mb": top - unbuilt, "state_mb": state}  # fmt: skip
    print_result(row)


def spawn(args, flag: str, value: str) -> dict:
    """The arm ``value`` (``--child`` or ``--timing-child``) in a process of its own (`common.run_child`), with this
    run's settings."""
    arguments = [
        flag,
        value,
        "--threads",
        str(args.threads),
        "--encoder",
        args.encoder,
        "--languages",
        *args.languages,
        "--pairs",
        str(args.pairs),
        "--learning-rate",
        str(args.learning_rate),
        "--temperature",
        str(args.temperature),
        "--momentum",
        str(args.momentum),
        *(["--queue-size", str(args.queue_size)] if args.queue_size else []),
        "--max-length",
        str(args.max_length),
        "--timing-steps",
        str(args.timing_steps),
        "--heldout",
        str(args.heldout),
        "--eval-points",
        *map(str, args.eval_points),
        "--out",
        args.out,
        *(["--whole-test"] if args.whole_test else []),
    ]
    return run_child(__file__, arguments, f"{flag} {value}")


def setup(args) -> dict:
    return {
        "script": "benchmarks/bench_queue_vs_batch.py",
        "encoder": args.encoder,
        "languages": args.languages,
        "B": BATCH,
        "pairs": args.pairs,
        "learning_rate": args.learning_rate,
        "temperature": args.temperature,
        "momentum": 0.99,
        "max_length": args.max_length,
        "heldout": args.heldout,
        "whole_test": args.whole_test,
        "eval_points": args.eval_points,
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "split": {
            "train": "the Bible's training books",
            "tune": f"held-out rows {args.heldout}-{2 * args.heldout - 1} of one draw (seed 0)",
            "test": f"held-out rows 0-{args.heldout - 1}"
            + (f" and from {2 * args.heldout} on" if args.whole_test else ""),
        },
        "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }


def timing(args) -> None:
    """Every arm of ``--arms`` timed in ``--timing-rounds`` rounds, each in a process of its own, the order reversed
    every other round; the results file is rewritten after each round with the medians of the rounds so far."""
    arms = args.arms or list(ARMS)
    rows: dict[str, list[dict]] = {arm: [] for arm in arms}
    for i in range(args.timing_rounds):
        for arm in arms if i % 2 == 0 else arms[::-1]:
            rows[arm].append(spawn(args, "--timing-child", arm))
            print(rows[arm][-1], flush=True)
        done = {**setup(args), "rounds": i + 1, "timed_steps": args.timing_steps}
        Path(args.out).write_text(json.dumps({"setup": done, "rows": timing_summary(rows)}, indent=2))


def timing_summary(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Each arm's medians over its timed runs, and its seconds per pair over MNRL at B's."""
    keys = ("seconds_per_pair", "training_mb", "held_mb", "peak_rss_mb", "state_mb")
    summary = {arm: {key: statistics.median(run[key] for run in runs) for key in keys} for arm, runs in rows.items()}
    base = summary.get("mnrl_B", {}).get("seconds_per_pair")
    for row in summary.values():
        row["time_ratio_to_mnrl_B"] = row["seconds_per_pair"] / base if base else None
    return summary


# ---------------------------------------------------------------------------------------------------------------------
# Report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="minilm", help=f"one of {sorted(ENCODERS)}, or a path")
    parser.add_argument(
        "--languages",
        nargs="+",
        default=["en", "fr"],
        help="two languages, or more: English-centric pairs of the first with each other one",
    )
    parser.add_argument("--heldout", type=int, default=1000, help="held-out verses per language, and as many to tune")
    parser.add_argument(
        "--eval-points",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 0.75, 1.0],
        help="the fractions of the budget at which a run is scored",
    )
    parser.add_argument(
        "--whole-test",
        action="store_true",
        help="score on every held-out pair but the tuning ones (4,801 en-fr), not --heldout",
    )
    parser.add_argument("--pairs", type=int, default=5120, help="the budget: training pairs every arm sees once")
    parser.add_argument("--learning-rate", type=float, default=2e-4, help="the base rate, before an arm's batch rule")
    parser.add_argument("--temperature", type=float, default=TEMPERATURE, help="every arm's (MNRL's scale: 1 / it)")
    parser.add_argument("--queue-size", type=int, help="a queue's size in keys (default: the arm's own, K x B)")
    parser.add_argument("--momentum", type=float, default=MOMENTUM, help="a queue's momentum")
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument(
        "--jobs",
        nargs="+",
        default=[],
        help="ARM:SEED or ARM:SEED:RATE:TEMPERATURE (a grid point), run one after the other",
    )
    parser.add_argument(
        "--grid",
        nargs="+",
        metavar="ARM",
        help="run each arm's jobs under the tuning protocol (protocol.py), one after the other, resumed from --out",
    )
    parser.add_argument("--arms", nargs="+", help="with --timing: the arms to time (default: every base arm)")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--timing-steps", type=int, default=3)
    parser.add_argument("--timing-rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="the results file (a grid's, or --timing's)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--timing-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.out:
        parser.error("--out names the results file")
    torch.set_num_threads(args.threads)
    if args.child:
        return child(args)
    if args.timing_child:
        return timing_child(args)
    if args.timing:
        return timing(args)
    results = Results(args.out, setup(args))
    for arm in args.grid or []:
        spec(arm)
    jobs = list(args.jobs)
    grids = {arm: grid for arm in args.grid or [] if (grid := queue_grid(arm))}  # the queue's step: K, then m
    run_grid(results.runs, args.grid or [], lambda job: run_jobs(args, results, [job]), grids)
    run_jobs(args, results, jobs)


def run_jobs(args, results: Results, jobs: list[str]) -> None:
    """Each ``ARM:SEED`` or ``ARM:SEED:RATE:TEMPERATURE`` not in the results file yet, in a process of its own."""
    for job in jobs:
        arm, seed, *point = job.split(":")
        spec(arm)
        rate, temperature = map(float, point[:2]) if point else (args.learning_rate, args.temperature)
        queue = {"queue_size": int(point[2]), "momentum": float(point[3])} if len(point) == 4 else {}
        settings = {"base_learning_rate": rate, "temperature": temperature, **queue} if point else {}
        if results.done(arm, int(seed), **settings):
            continue
        run = spawn(
            argparse.Namespace(**{**vars(args), "learning_rate": rate, "temperature": temperature, **queue}),
            "--child",
            f"{arm}:{seed}",
        )
        results.add(run)
        print(json.dumps({k: v for k, v in run.items() if k != "curve"}), flush=True)


if __name__ == "__main__":
    main()
