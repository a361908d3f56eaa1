"""multilingual-e5-small trained on many languages by hf_xlsr's queue (``DualMomentumModel``) and by
sentence-transformers' ``MultipleNegativesRankingLoss``, each arm at its best under the tuning protocol
(``protocol.py``): seed 0 runs the grid of learning rates and temperatures and is scored on *tune* rows; seeds 1 and 2
run at the pick; the pick's three models are scored on *test* rows, every arm encoding them in bfloat16 weights.

``--train-data`` is the Bible by default (a JSON list joins sources pair by pair: ``'["bible", "corpus.jsonl"]'``),
``--languages`` the Bible's 22, each paired with English; the rows and the recipe are on the report's languages page
(docs/benchmarks/languages.md), which holds every command behind its figures. Every model is saved (``--models``),
for ``tatoeba.py``; a finished point never runs again; ``--checkpoint-steps N`` resumes one killed halfway exactly.

    HF_HUB_OFFLINE=1 python benchmarks/multilingual_grid.py --threads 1 --grid mnrl hf_xlsr \\
        --models runs/multilingual_grid --out benchmarks/results/multilingual_grid.json   # resumable
    python benchmarks/multilingual_grid.py --report --out benchmarks/results/multilingual_grid.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import tempfile
import time
from pathlib import Path

import scratch_arms
import torch
import yaml
from common import ENCODERS, Results, machine
from multilingual_arms import ARMS, GRIDS, HF_XLSR, LABELS, LANGUAGES, QUEUE, START  # noqa: F401 (read through this module too)
from protocol import PICK_SEED, SEEDS, grid_table, job, pick, point, run_grid
from queue_arms import accuracy, evaluators

LARGE_BATCH = {"cmnrl_8B": 8}  # batch k x B in mini-batches of B, steps / k (the same pairs), lr x sqrt(k)
# the arms trained by `hf-xlsr train`'s pipeline, and their model types
MODEL_TYPES = {"hf_xlsr": "xlsr_dual_momentum", "hictl": "xlsr_hictl", "cmlm": "xlsr_cmlm",
               "lightweight": "xlsr_lightweight"}  # fmt: skip
TEST_BACKEND = "bf16"  # every arm's test rows encode in bfloat16 weights: 1.85x float32's speed on one thread here


def training_arguments(args, output_dir: str, seed: int, checkpoint_steps: int = 0) -> dict:
    """The recipe's Trainer arguments; with ``checkpoint_steps``, a checkpoint every that many steps (the newest
    kept), from which the same call goes on (`last_checkpoint`)."""
    saving = {"save_strategy": "no"}
    if checkpoint_steps:
        saving = {"save_strategy": "steps", "save_steps": checkpoint_steps, "save_total_limit": 1}
    return dict(
        output_dir=output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        warmup_steps=args.steps // 10,
        lr_scheduler_type="cosine",
        weight_decay=1e-4,
        max_grad_norm=10.0,
        seed=seed,
        report_to="none",
        disable_tqdm=True,
        logging_steps=40,
        use_cpu=not torch.cuda.is_available(),
        bf16=getattr(args, "bf16", False),
        **saving,
    )


def last_checkpoint(output_dir: str) -> str | None:
    """The newest whole checkpoint a killed run left in ``output_dir`` (one half-written is passed over), or None."""
    from hf_xlsr.trainers.checkpoints import CheckpointError, last_whole_checkpoint

    try:
        return last_whole_checkpoint(output_dir)
    except CheckpointError:
        return None


def english_pairs(args):
    """The run's pairs (``args.languages``, each with English, from ``args.train_data``) stacked: rows ``source``
    (English), ``target``, ``target_language``, ``example_id`` (the meaning)."""
    from hf_xlsr.data.multilingual import load_pair_datasets, resolve_language_pairs, stack_pairs

    return stack_pairs(load_pair_datasets(args.train_data, resolve_language_pairs(args.languages), "train"))


def start_encoder(args) -> str:
    """The encoder the e5 arms start from: multilingual-e5-small, or the settings' ``encoder`` (a smaller one for a
    dry run)."""
    return getattr(args, "encoder", None) or ENCODERS["e5"]


def vocabulary(args) -> str:
    """The folder of the tokenizer that the arms trained from scratch share (`scratch_arms.vocabulary`)."""
    return scratch_arms.vocabulary(args, lambda: english_pairs(args))


def sentence_model(args, seed: int, arm: str = "mnrl"):
    """A sentence-transformers arm's start: multilingual-e5-small, or an untrained 2-layer model for
    ``lightweight_mnrl``."""
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import resolve_reference

    torch.manual_seed(seed)
    if arm in scratch_arms.ARMS:
        model = scratch_arms.untrained_model(args, seed, vocabulary(args))
    else:
        model = SentenceTransformer(resolve_reference(start_encoder(args)), device="cpu")
    model[0].max_seq_length = args.max_length
    return model


def large_batch(arm: str, args) -> argparse.Namespace:
    """An arm's settings at its batch (`LARGE_BATCH`: k times B, steps / k, so the same pairs, the rate times
    sqrt(k), Adam's usual rule); ``args`` itself for the arms at B."""
    k = LARGE_BATCH.get(arm, 1)
    if k == 1:
        return args
    return argparse.Namespace(
        **{
            **vars(args),
            "batch_size": args.batch_size * k,
            "steps": args.steps // k,
            "learning_rate": args.learning_rate * math.sqrt(k),
        }
    )


def drawn_pairs(pairs, args, seed: int):
    """The pairs a sentence-transformers arm sees, steps x batch of them (as many as hf_xlsr's arms draw): with
    ``--sampler one``, the very rows hf_xlsr's `LanguagePairSampler` draws at this seed (language pairs at α = 0.5,
    mixed batches), so that both sides train on one draw; with ``shuffle``, a shuffle of all pairs (pairs drawn in
    proportion to the corpus)."""
    count = args.steps * args.batch_size
    if getattr(args, "sampler", "shuffle") == "shuffle":
        return pairs.shuffle(seed=seed).select(range(count))
    import itertools

    from hf_xlsr.data.multilingual import LANGUAGE_SAMPLING_ALPHA, LanguagePairSampler

    sampler = LanguagePairSampler(pairs["pair"][:], args.batch_size, LANGUAGE_SAMPLING_ALPHA, "mixed", seed=seed)
    return pairs.select(list(itertools.islice(iter(sampler), count)))


def train_sentence_transformers(arm: str, args, seed: int, output_dir: str, pairs, checkpoint_steps: int = 0):
    """MNRL at B; CachedMNRL at 8B (GradCache in mini-batches of B, sentence-transformers' ``NO_DUPLICATES`` batches,
    the sampler it recommends for in-batch negatives: a verse's English side in two pairs of one batch would be a
    negative of itself); ``lightweight_mnrl``: MNRL on an untrained 2-layer model (`scratch_arms`)."""
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    base = args.batch_size
    args = large_batch(arm, args)
    if checkpoint_steps:  # as many pairs between checkpoints at any batch
        checkpoint_steps = max(1, checkpoint_steps * base // args.batch_size)
    model = sentence_model(args, seed, arm)
    pairs = drawn_pairs(pairs, args, seed)
    both = {"partition_mode": "per_direction", "directions": ("query_to_doc", "doc_to_query")}
    extra = {}
    if arm == "cmnrl_8B":
        loss = CachedMultipleNegativesRankingLoss(model, scale=1 / args.temperature, mini_batch_size=base, **both)
        extra["batch_sampler"] = BatchSamplers.NO_DUPLICATES
    else:
        loss = MultipleNegativesRankingLoss(model, scale=1 / args.temperature, **both)
    train = pairs.select_columns(["source", "target"]).rename_columns({"source": "anchor", "target": "positive"})
    arguments = SentenceTransformerTrainingArguments(
        **training_arguments(args, output_dir, seed, checkpoint_steps), **extra
    )
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=train, loss=loss)
    trainer.train(resume_from_checkpoint=last_checkpoint(output_dir))
    return model


def model_config(arm: str, args) -> dict:
    """The ``model_config`` of an arm trained by hf_xlsr: DualMomentumModel with one encoder and a queue; HICTL
    with its three losses, its paper's pooling (the first token) and a fresh LM head on the start (e5 has none); CMLM
    as its paper trains many languages (Section 4.2's S3: CMLM, then CMLM with bitext retrieval from half the run,
    `schedule_arguments`), the temperature that of bitext retrieval (0: the paper's raw inner product); the
    lightweight dual transformer at its paper's size, L_align at the temperature (0:
    its Eq. 5's raw inner products)."""
    if arm == "hictl":
        return {"temperature": args.temperature}
    if arm == "cmlm":
        return {"schedule": "cmlm->cmlm+br", "br_temperature": args.temperature}
    if arm == "lightweight":
        return {"align_temperature": args.temperature}
    return {
        "shared_encoder": True,
        "queue_size": args.queue_size,
        "momentum": args.momentum,
        "temperature": args.temperature,
    }


def schedule_arguments(arm: str, args) -> dict:
    """CMLM's schedule, scaled to the run: the second stage from half the run, and the fresh MLM head trained alone,
    the encoder frozen, for its first tenth."""
    if arm == "cmlm":
        return {"second_stage_step": args.steps // 2, "encoder_frozen_steps": args.steps // 10}
    return {}


def train_hf_xlsr(args, seed: int, output_dir: str, checkpoint_steps: int = 0, arm: str = "hf_xlsr"):
    """Through ``hf-xlsr train``'s pipeline; returns the export, loaded by sentence-transformers, and the trainer.
    A run stopped by SIGTERM or SIGINT saves a checkpoint and stops the script; the same call goes on from it."""
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.trainers import parse_run_arguments, run_training

    start = {"tokenizer": vocabulary(args)} if arm in scratch_arms.ARMS else {"encoder": start_encoder(args)}
    config = {
        "model_type": MODEL_TYPES[arm], **start, "languages": args.languages,
        "train_data": args.train_data, "model_config": model_config(arm, args),
        "max_eval_pairs": 0, "max_length": args.max_length, "export_dir": f"{output_dir}/export",
        "language_batches": args.language_batches,
        **training_arguments(args, output_dir, seed, checkpoint_steps), **schedule_arguments(arm, args),
    }  # fmt: skip
    if last_checkpoint(output_dir):
        config["resume_from_checkpoint"] = "latest"
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    path = Path(output_dir) / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    trainer, _ = run_training(*parse_run_arguments(path))
    if trainer.preemption.stopped_by:
        raise SystemExit(
            f"stopped by {trainer.preemption.stopped_by} at step {trainer.state.global_step}, its "
            f"checkpoint in {output_dir}: the same command goes on from it"
        )
    return SentenceTransformer(f"{output_dir}/export", device="cpu"), trainer


def job_parts(job: str) -> tuple[str, int, float, float, int | None, float | None]:
    """``(arm, seed, rate, temperature, queue size, momentum)`` of a `protocol.job` (None, None: no queue)."""
    arm, seed, rate, temperature, *queue = job.split(":")
    size, momentum = (int(queue[0]), float(queue[1])) if queue else (None, None)
    return arm, int(seed), float(rate), float(temperature), size, momentum


def test_scores(folder, test) -> dict:
    """The reported figures on the test rows, of the model saved in ``folder`` encoding in ``TEST_BACKEND``: each
    language against English both ways (their mean), and the pairs of two other languages (never trained together)."""
    from hf_xlsr.evaluation.loading import load_for_evaluation

    model, _ = load_for_evaluation(folder, TEST_BACKEND)
    model[0].max_seq_length = 128  # every model scored with the same truncation
    metrics = test(model)
    return {"bible": accuracy(metrics), "zero_shot": metrics.get("retrieval_zero_shot_accuracy"), "test": metrics}


def train(settings, arm: str, seed: int, run_dir: Path):
    """One grid point's model. With ``--checkpoint-steps``, its Trainer checkpoints go to ``run_dir`` (kept until the
    model is saved), and a run killed or stopped goes on from the newest whole one when the same command runs again;
    without, the run trains in a temporary folder."""
    every = settings.checkpoint_steps
    with contextlib.nullcontext(str(run_dir)) if every else tempfile.TemporaryDirectory() as output_dir:
        if arm in MODEL_TYPES:
            model, _ = train_hf_xlsr(settings, seed, output_dir, every, arm)
        else:
            model = train_sentence_transformers(arm, settings, seed, output_dir, english_pairs(settings), every)
    return model


def run_job(args, results: Results, job: str, rows: dict) -> None:
    """Train one grid point (``ARM:SEED:RATE:TEMPERATURE``), save the model, score it on tune; a seed other than the
    pick seed runs at the pick only, so it is scored on test too."""
    arm, seed, rate, temperature, size, momentum = job_parts(job)
    queue = {"queue_size": size, "momentum": momentum} if size is not None else {}
    if results.done(arm, seed, base_learning_rate=rate, temperature=temperature, **queue):
        return
    folder = Path(args.models) / job.replace(":", "_")
    seconds = resumed = None
    if folder.is_dir():  # trained and saved whole (a save goes to a side folder, renamed when complete): score it
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(folder), device="cpu")
    else:
        settings = argparse.Namespace(**{**vars(args), "learning_rate": rate, "temperature": temperature, **queue})
        began = time.time()
        run_dir = folder.with_name(folder.name + ".run")
        resumed = last_checkpoint(str(run_dir))
        model = train(settings, arm, seed, run_dir)
        seconds = None if resumed else round(time.time() - began)  # a resumed run's time is not the whole run's
        model[0].max_seq_length = 128  # every model scored with the same truncation
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)  # what a process killed while saving left
        model.save(str(partial))
        partial.rename(folder)
        shutil.rmtree(run_dir, ignore_errors=True)
    at = large_batch(arm, argparse.Namespace(learning_rate=rate, batch_size=args.batch_size, steps=args.steps))
    run = {"arm": arm, "seed": seed, "base_learning_rate": rate, "learning_rate": at.learning_rate,
           "temperature": temperature, **queue, "model": str(folder),
           "tune": accuracy(rows["tune"](model))}  # fmt: skip
    if at.batch_size != args.batch_size:
        run.update(batch_size=at.batch_size, steps=at.steps)
    if seconds is not None:
        run["train_seconds"] = seconds
    if resumed:
        run["resumed_from"] = Path(resumed).name
    if seed != PICK_SEED:
        run.update(test_scores(folder, rows["bible"]))
    results.add(run)
    print(json.dumps({key: value for key, value in run.items() if key != "test"}), flush=True)


def claimer(models: str):
    """``claim(job)`` for `protocol.run_grid`: True where this process takes the job (a file ``JOB.claim`` in
    ``models`` holds its pid; one whose process has ended is taken over), False where a live process holds it, so
    that two processes run one arm's grid two jobs at a time."""
    import os

    def claim(job: str) -> bool:
        path = Path(models) / f"{job.replace(':', '_')}.claim"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            holder = int(path.read_text() or 0)
        except (FileNotFoundError, ValueError):
            holder = 0
        if holder == os.getpid():
            return True
        if holder:
            try:
                os.kill(holder, 0)
                return False
            except ProcessLookupError:
                path.unlink(missing_ok=True)
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(descriptor, "w") as handle:
            handle.write(str(os.getpid()))
        return True

    return claim


def test_the_pick(results: Results, arm: str, test) -> None:
    """Seed 0's pick scored on test, from its saved model: the grid's other points are never scored on test."""
    chosen = pick(results.runs(), arm)
    at_pick = [
        run for run in results.runs() if run["arm"] == arm and run["seed"] == PICK_SEED and point(run) == point(chosen)
    ]
    if any("bible" in run for run in at_pick):
        return
    saved = next(run for run in at_pick if "model" in run)
    queue = {name: saved[name] for name in ("queue_size", "momentum") if name in saved}
    results.add(
        {
            "arm": arm,
            "seed": PICK_SEED,
            "base_learning_rate": saved["base_learning_rate"],
            "temperature": saved["temperature"],
            **queue,
            "model": saved["model"],
            **test_scores(saved["model"], test),
        }
    )


def test_the_start(results: Results, test) -> None:
    """The untrained start (``START``) on the test rows, once: what each language had before any arm trained it."""
    if not any(run["arm"] == START for run in results.runs()):
        results.add({"arm": START, "seed": PICK_SEED, "model": ENCODERS["e5"], **test_scores(ENCODERS["e5"], test)})


def run_at_picks(args, results: Results, rows: dict) -> None:
    """Each arm's 3 seeds at the pick of ``--picks-from`` (a grid's results file, read through `pick`: its tune
    scores alone), for a run whose own grid would cost too much; an arm that file has not picked stops the run.
    ``--seeds``: the seeds to run on this call, so that a run of many hours goes in chunks."""
    chosen = {arm: pick(json.loads(args.picks_from.read_text())["runs"], arm) for arm in args.grid}
    missing = [arm for arm, run in chosen.items() if run is None]
    if missing:
        raise SystemExit(f"{args.picks_from}: no pick for {', '.join(missing)} yet")
    for arm, run in chosen.items():
        for seed in args.seeds:
            run_job(args, results, job(arm, seed, *point(run)), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", nargs="+", choices=(*ARMS, *scratch_arms.ARMS), default=list(ARMS))
    parser.add_argument("--train-data", default="bible", help="a source, or a JSON list of sources")
    parser.add_argument("--languages", nargs="+", default=LANGUAGES, help="the first is the pivot")
    parser.add_argument("--tune-rows", type=int, default=300, help="held-out verses to tune (as many come first)")
    parser.add_argument(
        "--whole-test",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="test on every held-out verse but the tuning ones (--no-whole-test: the first --tune-rows)",
    )
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--queue-size", type=int, default=QUEUE[0])
    parser.add_argument("--momentum", type=float, default=QUEUE[1])
    parser.add_argument("--language-batches", default="mixed")
    parser.add_argument(
        "--sampler",
        choices=("shuffle", "one"),
        default="shuffle",
        help="how sentence-transformers' arms draw their pairs: a shuffle of all pairs, or one draw "
        "with hf_xlsr's arms (its language-pair sampler, α = 0.5)",
    )
    parser.add_argument("--models", default="runs/multilingual_grid", help="where every trained model is saved")
    parser.add_argument(
        "--checkpoint-steps",
        type=int,
        default=0,
        help="a checkpoint every N steps, from which a killed run goes on (0: none)",
    )
    parser.add_argument(
        "--picks-from", type=Path, help="run no grid: each arm's 3 seeds at its pick in this grid's results file"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        choices=SEEDS,
        default=list(SEEDS),
        help="with --picks-from: the seeds to run now (the rest on a later call)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="print the grid's table of --out and stop")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.train_data.lstrip().startswith("["):
        args.train_data = json.loads(args.train_data)
    if 0 < len(set(args.grid) & set(scratch_arms.ARMS)) < len(args.grid):
        parser.error(
            f"{' and '.join(scratch_arms.ARMS)} train from scratch at a budget of their own: give them a "
            "--grid, --steps, --batch-size and --out of their own"
        )
    if args.report:
        runs = json.loads(Path(args.out).read_text())["runs"]
        print(grid_table(runs, args.grid, LABELS, HF_XLSR, grids=GRIDS))
        return
    torch.set_num_threads(args.threads)
    bible_languages = [code for code in args.languages if code in LANGUAGES]
    rows = evaluators(bible_languages, args.tune_rows, whole=args.whole_test)  # {"tune": ..., "bible": test}
    setup = {"script": "benchmarks/multilingual_grid.py", "languages": args.languages, "train_data": args.train_data,
             "steps": args.steps, "batch_size": args.batch_size, "max_length": args.max_length,
             "queue_size": args.queue_size, "momentum": args.momentum, "sampler": args.sampler, "machine": machine(),
             "test_backend": TEST_BACKEND,
             "split": {"train": f"{args.train_data}: training part",
                       "tune": f"held-out Bible verses in {len(bible_languages)} languages, rows {args.tune_rows}-"
                               f"{2 * args.tune_rows - 1} of one draw (seed 0)",
                       "test": f"the other held-out verses ({len(rows['bible'].sentences['en'])})" if args.whole_test
                               else f"rows 0-{args.tune_rows - 1} of the same draw"}}  # fmt: skip
    if args.picks_from:
        setup["picks_from"] = str(args.picks_from)
    results = Results(args.out, setup)
    if args.picks_from:
        run_at_picks(args, results, rows)
    else:
        run_grid(results.runs, args.grid, lambda job: run_job(args, results, job, rows), GRIDS, claimer(args.models))
    claim = claimer(args.models)
    for arm in args.grid:
        if claim(f"{arm}:test"):  # one process scores the pick
            test_the_pick(results, arm, rows["bible"])
    if not set(args.grid) & set(scratch_arms.ARMS):  # e5, where the arms start
        test_the_start(results, rows["bible"])
    print(grid_table(results.runs(), args.grid, LABELS, HF_XLSR, grids=GRIDS))


if __name__ == "__main__":
    main()
