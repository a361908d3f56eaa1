"""LoRA against full fine-tuning of DualMomentumModel on the same budget: parameters, memory, step time, accuracy.

The two methods differ in what trains: every weight of the encoder, or a rank-16 LoRA adapter on each of its linear
layers (query, key, value, dense). Each is run at four learning rates, doubling from Table 9's 4e-5 (full
fine-tuning) and from 5e-4 (the adapter), so that each can be compared at its best rate; the arms of one method differ
only in the rate. Everything else is claim 1's setting (``claim_moco.py``): MiniLM-L6 shared by the two languages,
tau = 0.04, batch 8 of en-fr Bible pairs, AdamW, cosine decay with 10% warm-up, held-out scoring on 1,000 pairs of the
Bible's held-out books, both directions; three seeds per arm.

Budget rules: 320 steps of 8 pairs fill the 512-key queue after 64 steps (it is full for 80% of the run); the EMA
horizon 1 / (1 - 0.98) = 50 steps is under a sixth of the run; K stays far below the 25,170 training pairs.

Each run trains in its own process, so its peak RSS is its own; step time is the time to build and train the model,
divided by the steps.

    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --arms full --out benchmarks/results/lora.json &
    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --arms lora --out benchmarks/results/lora.json  # side by side
    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --arms lora_lr1e-3 lora_lr2e-3 --out benchmarks/results/lora.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --arms full_lr1e-4 full_lr2e-4 --out benchmarks/results/lora.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --arms lora_lr4e-3 full_lr4e-4 --out benchmarks/results/lora.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

import torch
from claim_moco import train_moco
from common import ENCODERS, Results, heldout_evaluators, machine, mean_and_spread, print_summary, score

ADAPTER = {"r": 16, "lora_alpha": 32, "target_modules": ["query", "key", "value", "dense"]}
ARMS = {
    "full": {"learning_rate": 4e-5},
    "full_lr1e-4": {"learning_rate": 1e-4},
    "full_lr2e-4": {"learning_rate": 2e-4},
    "full_lr4e-4": {"learning_rate": 4e-4},
    "lora": {"learning_rate": 5e-4, "lora": ADAPTER},
    "lora_lr1e-3": {"learning_rate": 1e-3, "lora": ADAPTER},
    "lora_lr2e-3": {"learning_rate": 2e-3, "lora": ADAPTER},
    "lora_lr4e-3": {"learning_rate": 4e-3, "lora": ADAPTER},
}  # fmt: skip
PEER = "full"


def child(arm: str, seed: int, args) -> dict:
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.modeling.ema import momentum_pairs

    torch.set_num_threads(args.threads)
    fields = ARMS[arm]
    args.learning_rate = fields["learning_rate"]
    path = resolve_reference(ENCODERS["minilm"])
    train = load_bible(args.languages, split="train")
    with tempfile.TemporaryDirectory() as output_dir:
        start = time.perf_counter()
        model, tokenizers, extra = train_moco(path, train, args, seed, output_dir, queue_size=args.queue_size,
                                              momentum=args.momentum, lora=fields.get("lora"))  # fmt: skip
        seconds = time.perf_counter() - start
    own = [k for _, k, q in momentum_pairs(model.momentum_encoder_x, model.encoder_x) if k is not q]  # its own
    return {
        "arm": arm, "seed": seed, "learning_rate": fields["learning_rate"],
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "momentum_encoder_own_mb": sum(p.numel() * p.element_size() for p in own) / 2**20,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "step_seconds": seconds / args.steps, **extra,
        **score(heldout_evaluators(args.languages), model, tokenizers),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--queue-size", type=int, default=512)
    parser.add_argument("--momentum", type=float, default=0.98)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", nargs=2, metavar=("ARM", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    args.languages = ["en", "fr"]
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args)))
        return
    results = Results(args.out, {"script": "benchmarks/bench_lora.py", "steps": args.steps,
                                 "batch_size": args.batch_size, "queue_size": args.queue_size,
                                 "momentum": args.momentum, "max_length": args.max_length, "arms": ARMS,
                                 "machine": machine() + f", {args.threads} thread per run"})  # fmt: skip
    for seed in args.seeds:
        for arm in args.arms:
            if results.done(arm, seed):
                continue
            command = [sys.executable, __file__, *sys.argv[1:], "--child", arm, str(seed)]
            output = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout
            run = json.loads(output.strip().splitlines()[-1])
            results.add(run)
            print({k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in run.items()}, flush=True)
    print_summary(results, ["bible", "bible_en2fr", "bible_fr2en"])
    costs = ["trainable_parameters", "momentum_encoder_own_mb", "peak_rss_mb", "step_seconds"]
    means = {arm: {m: mean_and_spread([r[m] for r in results.data["runs"] if r["arm"] == arm])[0] for m in costs}
             for arm in dict.fromkeys(r["arm"] for r in results.data["runs"])}  # fmt: skip
    for arm, cost in means.items() if PEER in means else {}.items():  # ratios need the peer's runs
        print(f"{arm:<12}" + "".join(f"{m} {v:,.4g} ({v / means[PEER][m]:.2f}x {PEER})  " for m, v in cost.items()))


if __name__ == "__main__":
    main()
