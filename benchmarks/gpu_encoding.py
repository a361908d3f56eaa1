"""The GPU suite's encoding parts (``gpu_suite.py``): sentences per second of hf_xlsr's bf16 path against
``SentenceTransformer.encode``, mining as many sentences as the part's time holds (``encoding``), and the demo on the
GPU (``demo``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from common import interleaved
from gpu_steps import MINILM, synchronize

ROOT = Path(__file__).resolve().parents[1]
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
    arms = {
        name: (lambda m=model: m.encode(texts, batch_size=256, normalize_embeddings=True))
        for name, model in models.items()
    }
    arms["hf_xlsr_bf16"] = lambda: ours(texts, "en")
    times, _ = interleaved(arms, 3, palindromic=False, sync=lambda: synchronize(device))
    rate = {name: len(texts) / statistics.median(each) for name, each in times.items()}
    result = {"sentences": n, "sentences_per_second": rate}
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


def demo(args, device: torch.device, seconds: float) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "examples/demo.py", "--output_dir", f"{scratch}/run",
                   "--export_dir", f"{scratch}/export"]  # fmt: skip
        if args.dry_run:
            command += ["--max_steps", "2", "--max_eval_pairs", "50", "--per_device_train_batch_size", "4"]
        began = time.perf_counter()
        result = subprocess.run(
            command,
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            capture_output=True,
            text=True,
            timeout=max(10, seconds),
        )
    figures = [line for line in result.stdout.splitlines() if "mean" in line and "->" in line]
    return {
        "returncode": result.returncode,
        "seconds": time.perf_counter() - began,
        "held_out": figures,
        "error": result.stderr.strip().splitlines()[-1:] if result.returncode else None,
    }
