"""The queue against large batches: many negatives at batch B, against what sentence-transformers users reach for.

Every arm starts from the same encoder, trains on the same pairs (for a seed: the same draw of ``--pairs`` training
pairs, each seen once), with the same learning-rate rule (AdamW, 10% warm-up, cosine decay over the arm's steps),
temperature 0.04 (scale 25), both directions, and is scored on the same held-out pairs. The budget is compute: every
arm puts the same number of sentences through the trainable encoder, forward and backward; the script counts them
with a forward hook on every encoder (``trainable_encodings``), and counts apart the forwards without gradients that
an arm adds (CachedMNRL's first pass, the momentum encoder's keys, the distillation teacher: ``extra_forwards``).

| arm | what |
| --- | --- |
| ``mnrl_B`` | ``MultipleNegativesRankingLoss``, batch B |
| ``mnrl_8B`` | the large batch itself (its loss and gradients are ``cmnrl_8B``'s: GradCache is exact) |
| ``cmnrl_8B`` / ``cmnrl_32B`` | ``CachedMultipleNegativesRankingLoss``, batch 8B / 32B, mini-batch B |
| ``distill`` | multilingual distillation (``make_multilingual``), teacher = the start on the pivot side, ``MSELoss`` |
| ``mql_K32B`` / ``mql_K256B`` | ``MomentumQueueLoss``, batch B, queue of 32B / 256B keys, momentum 0.99 |
| ``dmm_K32B`` / ``dmm_K256B`` | ``DualMomentumModel`` under ``XlsrTrainer``, batch B, the same queues |
| ``contaccum_8B`` | ContAccum (``contaccum.py``): micro-batches of B accumulated to 8B, a memory bank of 64B pairs |

With ``--languages`` naming more than two languages (the Bible's 22: ``en fr de ... zh``) the pairs are
English-centric, the first language with each other one, stacked and drawn from all of them; every row carries its
verse as the id of its meaning, which ``MomentumQueueLoss`` gets as ``label`` and ``DualMomentumModel`` as
``example_id``, so no translation of a verse in any language is its negative, and sentence-transformers' arms draw
their batches with its ``NO_DUPLICATES`` sampler (the one it recommends for in-batch negatives), so no batch holds a
sentence twice. The figure is then each language against the first, both ways, averaged
(``retrieval_zero_shot_accuracy``, the pairs of two other languages, is kept beside it).

An arm name may end in ``_sqrtlr``: the learning rate times sqrt(batch / B), the usual rule for Adam at a larger
batch (``_klr``: times batch / B; ``_invsqrtlr`` and ``_tenthlr``: divided by sqrt(batch / B), and a tenth); which rule
a large-batch arm keeps is chosen on ``tune`` (1,000 held-out pairs the reported ``bible`` figure
does not use: rows 1,000 to 1,999 of the same draw).

Accuracy is measured inside each run at a quarter, half, three quarters and the whole of the budget (the points of
one run, on its schedule: a run stopped at half its budget would have decayed its learning rate). Each (arm, seed)
runs in a process of its own, so that its peak resident memory above what it held before training
(``training_mb``) is its own. ``--timing`` measures seconds per training pair of each arm in short runs in
palindromic order (A B C ... C B A), so that a slow spell of the machine weighs on every arm alike: the figure
behind the equal-time comparison.

    HF_HUB_OFFLINE=1 python benchmarks/bench_queue_vs_batch.py --threads 1 \
        --jobs mnrl_B:0 cmnrl_8B:0 ... --out benchmarks/results/queue_vs_batch.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_queue_vs_batch.py --threads 1 --timing \
        --out benchmarks/results/queue_vs_batch_timing.json
    python benchmarks/bench_queue_vs_batch.py --report benchmarks/results/queue_vs_batch.json
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from common import ENCODERS, Results, machine, memory_mb, reset_peak
from protocol import run_grid, split_rows

BATCH = 8  # B
DIMENSION = 384  # the sentence vectors of MiniLM-L6 and of e5-small
TEMPERATURE = 0.04
ARMS = {
    "mnrl_B": {"loss": "mnrl", "batch": 1},
    "mnrl_8B": {"loss": "mnrl", "batch": 8},
    "cmnrl_8B": {"loss": "cmnrl", "batch": 8},
    "cmnrl_32B": {"loss": "cmnrl", "batch": 32},
    "distill": {"loss": "distill", "batch": 1},
    "mql_K32B": {"loss": "mql", "batch": 1, "queue": 32},
    "mql_K256B": {"loss": "mql", "batch": 1, "queue": 256},
    "mql_8B_K256B": {"loss": "mql", "batch": 8, "queue": 256},
    "cmql_8B_K256B": {"loss": "cmql", "batch": 8, "queue": 256},
    "dmm_K32B": {"loss": "dmm", "batch": 1, "queue": 32},
    "dmm_K256B": {"loss": "dmm", "batch": 1, "queue": 256},
    # ContAccum: 8 micro-batches of B per step; a bank of 64 micro-batches (the authors' cache_size B x 8 steps)
    "contaccum_8B": {"loss": "contaccum", "batch": 8, "queue": 64},
}
LABELS = {
    "mnrl_B": "MNRL, batch B",
    "mnrl_8B": "MNRL, batch 8B",
    "cmnrl_8B": "CachedMNRL, batch 8B",
    "cmnrl_32B": "CachedMNRL, batch 32B",
    "distill": "distillation, teacher = start",
    "mql_K32B": "MomentumQueueLoss, K = 32B",
    "mql_K256B": "MomentumQueueLoss, K = 256B",
    "mql_8B_K256B": "MomentumQueueLoss, batch 8B, K = 256B",
    "cmql_8B_K256B": "CachedMomentumQueueLoss, batch 8B, K = 256B",
    "dmm_K32B": "DualMomentumModel, K = 32B",
    "dmm_K256B": "DualMomentumModel, K = 256B",
    "contaccum_8B": "ContAccum, batch 8B in micro-batches of B, bank of 64B",
}
HF_XLSR = ("mql", "cmql", "dmm")
# an arm without GradCache whose gradients equal a cached arm's (same batch, same loss): timed, never trained again
CACHED_TWIN = {"mnrl_8B": "CachedMNRL 8B", "mql_8B_K256B": "CachedMomentumQueueLoss 8B"}
# an arm's suffix: its rate x f(k) for a batch k times B (``_invsqrtlr`` and ``_tenthlr``: below the base rate, for a
# peer that diverges at it; 2e-5, a tenth of it, is the rate ContAccum's authors train BERT with)
LEARNING_RATE_RULES = {"": lambda k: 1.0, "_sqrtlr": math.sqrt, "_klr": float,
                       "_invsqrtlr": lambda k: 1 / math.sqrt(k), "_tenthlr": lambda k: 0.1}  # fmt: skip


def spec(arm: str) -> dict:
    """An arm's settings: its base arm's, and ``lr_factor``, the learning rate's multiple for a batch k times B
    (``LEARNING_RATE_RULES``: ``_sqrtlr`` sqrt(k), ``_klr`` k, ``_invsqrtlr`` 1 / sqrt(k), ``_tenthlr`` 0.1, no
    suffix 1), and ``rate``, how the report names it."""
    suffix = next((s for s in LEARNING_RATE_RULES if s and arm.endswith(s)), "")
    base = arm.removesuffix(suffix) if suffix else arm
    if base not in ARMS:
        raise SystemExit(f"unknown arm {arm!r}: one of {', '.join(ARMS)}, optionally followed by one of "
                         f"{', '.join(filter(None, LEARNING_RATE_RULES))}")  # fmt: skip
    k = ARMS[base]["batch"]
    factor = LEARNING_RATE_RULES[suffix](k)
    rate = {"": "", "_sqrtlr": f" (lr × √{k})", "_klr": f" (lr × {k})", "_invsqrtlr": f" (lr ÷ √{k})",
            "_tenthlr": " (lr ÷ 10)"}[suffix] if factor != 1 else ""  # fmt: skip
    return {**ARMS[base], "base": base, "rate": rate, "lr_factor": factor}


class EncoderCounter:
    """Counts the sentences every encoder forward sees: with gradients (the trainable encoder) or without."""

    def __init__(self):
        self.trainable = self.extra = 0
        self.active = True
        self.handle = torch.nn.modules.module.register_module_forward_hook(self.hook)

    def hook(self, module, inputs, output):
        if not self.active or type(module).__name__ != "BertEmbeddings":
            return
        rows = len(output)  # (sentences, tokens, width)
        if torch.is_grad_enabled() and any(p.requires_grad for p in module.parameters()):
            self.trainable += rows
        else:
            self.extra += rows


def evaluators(languages: list[str], size: int = 1000, whole: bool = False) -> dict:
    """``bible``: the ``size`` held-out verses every figure of the report uses (in every language), or with
    ``whole`` every held-out verse but the tuning ones (a test that does not saturate: 4,801 en-fr pairs); ``tune``:
    the ``size`` verses after the first ``size`` of the same draw, on which a tuning choice is made."""
    from hf_xlsr.data import load_bible
    from hf_xlsr.data.bitext import unique_pairs
    from hf_xlsr.evaluation import RetrievalEvaluator

    heldout = unique_pairs(load_bible(languages, split="heldout"), languages).shuffle(seed=0)
    rows = split_rows(len(heldout), size, whole)
    return {name: RetrievalEvaluator({lang: heldout.select(rows[part])[lang] for lang in languages}, deduplicate=False)
            for name, part in (("bible", "test"), ("tune", "tune"))}  # fmt: skip


def accuracy(metrics: dict) -> float:
    """The reported figure: retrieval both ways between the two languages, or with more languages the mean over each
    language against the first (the pairs trained on; ``retrieval_zero_shot_accuracy`` holds the others)."""
    return metrics.get("retrieval_trained_accuracy", metrics["retrieval_accuracy"])


def training_pairs(languages: list[str], seed: int, pairs: int):
    """A seed's draw of ``pairs`` training pairs, each seen once. Two languages: rows of their two columns. More:
    English-centric pairs of the first language with each other one, stacked (``source``, ``target``, their
    languages and ``example_id``, the verse: one id per meaning, across languages), drawn from all of them."""
    from hf_xlsr.data import load_bible

    if len(languages) == 2:
        return load_bible(languages, split="train").shuffle(seed=seed).select(range(pairs))
    from hf_xlsr.data.multilingual import load_pair_datasets, resolve_language_pairs, stack_pairs

    stacked = stack_pairs(load_pair_datasets("bible", resolve_language_pairs(languages), "train"))
    return stacked.shuffle(seed=seed).select(range(pairs))


def training_arguments(
    steps: int, batch: int, learning_rate: float, output_dir: str, seed: int, bf16: bool = False, accumulation: int = 1
) -> dict:
    return dict(
        output_dir=output_dir, max_steps=steps, per_device_train_batch_size=batch // accumulation,
        gradient_accumulation_steps=accumulation, learning_rate=learning_rate,
        bf16=bf16, warmup_steps=max(1, steps // 10), lr_scheduler_type="cosine", weight_decay=1e-4, max_grad_norm=10.0,
        seed=seed, save_strategy="no", report_to="none", disable_tqdm=True, logging_steps=max(1, steps // 8),
        use_cpu=not torch.cuda.is_available(), dataloader_pin_memory=False,
    )  # fmt: skip


def build(arm: str, path: str, train, languages: list[str], steps: int, learning_rate: float, output_dir: str,
          seed: int, max_length: int, base: int = BATCH, bf16: bool = False,
          temperature: float = TEMPERATURE):  # fmt: skip
    """``(trainer, score)``: the arm's trainer and a function scoring its model on an evaluator; ``base`` is B;
    ``bf16`` trains in mixed precision. Rows with an ``example_id`` (the meaning: a verse) give the queue's arms their
    ``label`` and sentence-transformers' arms its ``NO_DUPLICATES`` batches, so that no copy of a pair's own
    translation is its negative when the pairs repeat or span several languages."""
    from transformers import TrainerCallback  # noqa: F401  (imported before sentence-transformers' trainer)

    s = spec(arm)
    batch = base * s["batch"]
    learning_rate *= s["lr_factor"]
    torch.manual_seed(seed)
    many = len(languages) > 2
    ids = "example_id" in train.column_names
    columns = ["source", "target"] if many else languages
    if s["loss"] == "dmm":
        from transformers import AutoTokenizer

        from hf_xlsr import DualMomentumModel
        from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

        model = DualMomentumModel.from_encoders(path, shared_encoder=True, languages=languages,
                                                queue_size=base * s["queue"], momentum=0.99,
                                                temperature=temperature)  # fmt: skip
        tokenizers = AutoTokenizer.from_pretrained(path)
        collator = BitextCollator(tokenizers, languages=None if many else languages, max_length=max_length)
        args = XlsrTrainingArguments(**training_arguments(steps, batch, learning_rate, output_dir, seed, bf16))
        # with many languages the rows keep their languages and meaning ids: no translation of a verse is a negative
        kept = [*columns, "source_language", "target_language", "example_id"] if many else columns
        trainer = XlsrTrainer(model=model, args=args, train_dataset=train.select_columns(kept),
                              data_collator=collator, tokenizers=tokenizers)  # fmt: skip
        return trainer, lambda evaluator: evaluator(model, tokenizers=tokenizers)

    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueLoss

    model = SentenceTransformer(path, device="cpu")
    model[0].max_seq_length = max_length
    both = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    data = train.select_columns(columns)
    callbacks = []
    extra = {}
    accumulation = 1
    if ids:  # a verse in several pairs: sentence-transformers' sampler for in-batch negatives keeps it once a batch
        from sentence_transformers.base.sampler import BatchSamplers

        extra["batch_sampler"] = BatchSamplers.NO_DUPLICATES
    if s["loss"] == "mnrl":
        loss = losses.MultipleNegativesRankingLoss(model, scale=1 / temperature, **both)
    elif s["loss"] == "cmnrl":
        loss = losses.CachedMultipleNegativesRankingLoss(model, scale=1 / temperature, mini_batch_size=base, **both)
    elif s["loss"] == "contaccum":
        from contaccum import ContAccumLoss

        loss = ContAccumLoss(model, bank_batches=s["queue"], scale=1 / temperature)
        accumulation = s["batch"]  # micro-batches of B, one optimizer step per batch
    elif s["loss"] in ("mql", "cmql"):
        options = {"queue_size": base * s["queue"], "momentum": 0.99, "temperature": temperature}
        loss = (MomentumQueueLoss(model, **options) if s["loss"] == "mql"
                else CachedMomentumQueueLoss(model, mini_batch_size=base, **options))  # fmt: skip
        callbacks = [loss.callback]
    else:  # make_multilingual: student(pivot) and student(other) regress on teacher(pivot); teacher = the start
        teacher = SentenceTransformer(path, device="cpu")
        teacher[0].max_seq_length = max_length
        labels = teacher.encode(data[columns[0]], batch_size=64, convert_to_numpy=True)
        del teacher
        data = data.add_column("label", [row.tolist() for row in labels])
        loss = losses.MSELoss(model)
    if ids and s["loss"] in ("mql", "cmql", "contaccum"):  # no queued or banked copy of a query's verse is a negative
        data = data.add_column("label", train["example_id"])
    args = SentenceTransformerTrainingArguments(
        **training_arguments(steps, batch, learning_rate, output_dir, seed, bf16, accumulation), **extra
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss, callbacks=callbacks)

    def score(evaluator):
        model[0].max_seq_length = 128  # score with the truncation hf_xlsr's encoder uses
        try:
            return evaluator(model)
        finally:
            model[0].max_seq_length = max_length

    return trainer, score


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
        trainer, score = build(arm, path, train, args.languages, steps, args.learning_rate, output_dir, seed,
                               args.max_length, temperature=args.temperature)  # fmt: skip
        trainer.add_callback(Measure())
        before = memory_mb("VmRSS")
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        trainer.train()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "arm": arm, "seed": seed, "batch": batch, "steps": steps,
        "learning_rate": args.learning_rate * s["lr_factor"], "base_learning_rate": args.learning_rate,
        "temperature": args.temperature,
        "queue": BATCH * s.get("queue", 0), "curve": curve, "bible": curve[-1]["bible"], "tune": curve[-1]["tune"],
        "train_seconds": curve[-1]["train_seconds"], "peak_rss_mb": round(peak, 1),
        "training_mb": round(max(peak, peak_before) - before, 1) if peak > peak_before else None,
        "held_mb": round(memory_mb("VmHWM") - unbuilt, 1),
    }  # fmt: skip


def child(args) -> None:
    """One (arm, seed) in this process; the result as JSON on the last line of stdout."""
    arm, seed = args.child.split(":")
    print("RESULT " + json.dumps(run_one(arm, int(seed), args)), flush=True)


def weight_state_mb(trainer) -> float:
    """What training holds for the weights themselves, whatever the loss: for each weight that got a gradient, the
    gradient and the optimizer's state (AdamW: two moments), read from the tensors after training."""
    held = sum(weight.numel() * weight.element_size() + sum(value.numel() * value.element_size()
                                                            for value in state.values() if torch.is_tensor(value))
               for weight, state in trainer.optimizer.state.items())  # fmt: skip
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
        trainer, _ = build(arm, path, train, args.languages, steps, args.learning_rate, output_dir, 0, args.max_length,
                           temperature=args.temperature)  # fmt: skip
        trainer.add_callback(Clock())
        before = memory_mb("VmRSS")
        trainer.train()
        state = weight_state_mb(trainer)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    top = memory_mb("VmHWM")  # the peak since before the build
    row = {"arm": arm, "seconds_per_pair": sum(times[1:]) / (len(times[1:]) * batch), "peak_rss_mb": peak,
           "training_mb": top - before, "held_mb": top - unbuilt, "state_mb": state}  # fmt: skip
    print("RESULT " + json.dumps(row), flush=True)


def spawn(args, flag: str, value: str) -> dict:
    command = [sys.executable, __file__, flag, value, "--threads", str(args.threads), "--encoder", args.encoder,
               "--languages", *args.languages, "--pairs", str(args.pairs), "--learning-rate", str(args.learning_rate),
               "--temperature", str(args.temperature),
               "--max-length", str(args.max_length), "--timing-steps", str(args.timing_steps),
               "--heldout", str(args.heldout), "--eval-points", *map(str, args.eval_points),
               "--out", args.out] + (["--whole-test"] if args.whole_test else [])  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        sys.stderr.write(completed.stdout[-3000:] + completed.stderr[-6000:])
        raise SystemExit(f"{flag} {value} failed (exit {completed.returncode})")
    return json.loads(lines[-1][len("RESULT ") :])


def setup(args) -> dict:
    return {"script": "benchmarks/bench_queue_vs_batch.py", "encoder": args.encoder, "languages": args.languages,
            "B": BATCH, "pairs": args.pairs, "learning_rate": args.learning_rate, "temperature": args.temperature,
            "momentum": 0.99, "max_length": args.max_length, "heldout": args.heldout, "whole_test": args.whole_test,
            "eval_points": args.eval_points, "machine": machine(), "date": time.strftime("%Y-%m-%d"),
            "split": {"train": "the Bible's training books", "tune": f"held-out rows {args.heldout}-"
                      f"{2 * args.heldout - 1} of one draw (seed 0)", "test": f"held-out rows 0-{args.heldout - 1}"
                      + (f" and from {2 * args.heldout} on" if args.whole_test else "")},
            "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}  # fmt: skip


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
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument(
        "--jobs",
        nargs="+",
        default=[],
        help="ARM:SEED or ARM:SEED:RATE:TEMPERATURE (a grid point), run one after the other",
    )
    parser.add_argument("--grid", nargs="+", metavar="ARM",
                        help="run each arm's jobs under the tuning protocol (protocol.py), one after the other, "
                             "resumed from --out")  # fmt: skip
    parser.add_argument("--arms", nargs="+", help="with --timing: the arms to time (default: every base arm)")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--timing-steps", type=int, default=3)
    parser.add_argument("--timing-rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/queue_vs_batch.json")
    parser.add_argument("--report", metavar="RESULTS", help="print the table and verdict of a results file, and plot")
    parser.add_argument("--timing-file", type=Path, help="with --report: its timing (RESULTS_timing.json)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--timing-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.report:
        from report.queue_vs_batch import plot, report, timing_of, verdict

        results = json.loads(Path(args.report).read_text())
        rows = timing_of(Path(args.report), args.timing_file)
        print(report(results, rows))
        print()
        print(verdict(results, rows))
        plot(results, rows, f"docs/benchmarks/plots/{Path(args.report).stem}.png")
        return
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
    run_grid(results.runs, args.grid or [], lambda job: run_jobs(args, results, [job]))
    run_jobs(args, results, jobs)


def run_jobs(args, results: Results, jobs: list[str]) -> None:
    """Each ``ARM:SEED`` or ``ARM:SEED:RATE:TEMPERATURE`` not in the results file yet, in a process of its own."""
    for job in jobs:
        arm, seed, *point = job.split(":")
        spec(arm)
        rate, temperature = map(float, point) if point else (args.learning_rate, args.temperature)
        settings = {"base_learning_rate": rate, "temperature": temperature} if point else {}
        if results.done(arm, int(seed), **settings):
            continue
        run = spawn(argparse.Namespace(**{**vars(args), "learning_rate": rate, "temperature": temperature}),
                    "--child", f"{arm}:{seed}")  # fmt: skip
        results.add(run)
        print(json.dumps({k: v for k, v in run.items() if k != "curve"}), flush=True)


if __name__ == "__main__":
    main()
