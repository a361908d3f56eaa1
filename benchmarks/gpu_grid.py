"""The GPU suite's grid part (``gpu_suite.py --parts queue_grid``): the queue against large batches on a GPU, in bf16,
every arm under the tuning protocol of ``protocol.py``, ``--grid-pairs`` training pairs per run (2**14 by default, at
B = 256: 64 steps) from MiniLM-L6 on en-fr Bible verses, each verse its meaning id. Every run appends to
``--grid-out`` (``common.Results``), so a call cut short goes on where it stopped; a run starts only if its arm's
time so far fits in what is left. Each run is scored on tune and test rows; the chooser reads tune alone.

    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts queue_grid --out c.json   # runs in c_grid.json
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
GRID_ARMS = ["mnrl_B", "cmnrl_8B_sqrtlr", "mql_K256B"]


class OutOfTime(Exception):
    """The next run does not fit in the part's time."""


def queue_grid(args, device: torch.device, seconds: float) -> dict:
    """Each of ``--grid-arms`` through `protocol.run_grid` until every arm has its grid and its 3 seeds at the pick
    or the time runs out; the runs of ``--grid-out``, their table and what is left to run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import Results
    from gpu_steps import encoder_folder, peak_mb, reset_peak
    from protocol import grid_table, next_jobs, run_grid
    from queue_arms import HF_XLSR, LABELS, build, datasets_repeat, evaluators, meaning_verses, spec

    base, pairs = (4, 128) if args.dry_run else (256, args.grid_pairs)
    setup = {"script": "benchmarks/gpu_grid.py", "encoder": "tiny" if args.dry_run else "minilm", "B": base,
             "pairs": pairs, "bf16": not args.dry_run, "device": str(device),
             "split": {"tune": "held-out en-fr pairs 1,000-1,999 of one draw",
                       "test": "every other held-out en-fr pair"}}  # fmt: skip
    results = Results(args.grid_out or Path(args.out).with_name(Path(args.out).stem + "_grid.json"), setup)
    verses = meaning_verses()
    scorers = evaluators(["en", "fr"], whole=not args.dry_run)
    deadline, spent = time.perf_counter() + seconds, {}

    def run(job: str) -> None:
        arm, seed, rate, temperature = job.split(":")
        if time.perf_counter() + spent.get(arm, 0) > deadline:
            raise OutOfTime(job)
        began = time.perf_counter()
        batch = base * spec(arm)["batch"]
        row = {"arm": arm, "seed": int(seed), "base_learning_rate": float(rate), "temperature": float(temperature),
               "batch": batch, "pairs": pairs, "steps": pairs // batch}  # fmt: skip
        with tempfile.TemporaryDirectory() as scratch:
            reset_peak(device)
            trainer, score = build(
                arm,
                encoder_folder(setup["encoder"], Path(scratch)),
                datasets_repeat(verses.shuffle(seed=int(seed)), pairs),
                ["en", "fr"],
                pairs // batch,
                float(rate),
                f"{scratch}/run",
                int(seed),
                16 if args.dry_run else 64,
                base=base,
                bf16=not args.dry_run,
                temperature=float(temperature),
            )
            trainer.train()
            row["peak_mb"] = peak_mb(device)
            for name, evaluator in scorers.items():
                row["tune" if name == "tune" else "bible"] = score(evaluator)["retrieval_accuracy"]
        spent[arm] = time.perf_counter() - began
        row["seconds"] = spent[arm]
        results.add(row)

    try:
        run_grid(results.runs, args.grid_arms, run)
    except OutOfTime as stopped:
        print(f"queue_grid: {stopped} does not fit in the time left; the same command goes on from it", flush=True)
    runs = results.runs()
    labels = {arm: LABELS[spec(arm)["base"]] + spec(arm)["rate"] for arm in args.grid_arms}
    ours = [arm for arm in args.grid_arms if spec(arm)["loss"] in HF_XLSR]
    left = {arm: jobs for arm in args.grid_arms if (jobs := next_jobs(runs, arm))}
    return {"rows": runs, "table": grid_table(runs, args.grid_arms, labels, ours), "left": left}
