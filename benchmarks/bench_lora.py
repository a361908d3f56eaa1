"""LoRA against full fine-tuning of DualMomentumModel on the same budget: parameters, memory, step time, accuracy.

Every weight of MiniLM-L6, or a rank-16 LoRA adapter on each of its linear layers, each at four learning rates
(``ARMS``), three seeds, each run in a process of its own (its peak RSS is its own); the setting and its budget rules
are on the report's cost page (docs/benchmarks/cost.md), with every command behind its table.

    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py --out benchmarks/results/lora.json   # every arm; resumable
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time

import torch
from common import ENCODERS, Results, heldout_evaluators, machine, print_result, run_child, score

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


def train(path: str, args, seed: int, learning_rate: float, lora: dict | None):
    """DualMomentumModel trained for ``args.steps`` steps on the Bible's en-fr training books (Table 9's optimiser
    settings scaled to the run: AdamW, cosine decay, 10% warm-up)."""
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import load_bible
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    torch.manual_seed(seed)
    model = DualMomentumModel.from_encoders(
        path,
        shared_encoder=True,
        languages=args.languages,
        queue_size=args.queue_size,
        momentum=args.momentum,
        lora=lora,
    )
    tokenizers = AutoTokenizer.from_pretrained(path)
    with tempfile.TemporaryDirectory() as output_dir:
        arguments = XlsrTrainingArguments(
            output_dir=output_dir,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            learning_rate=learning_rate,
            warmup_steps=args.steps // 10,
            lr_scheduler_type="cosine",
            weight_decay=1e-4,
            max_grad_norm=10.0,
            seed=seed,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
        )
        XlsrTrainer(
            model=model,
            args=arguments,
            train_dataset=load_bible(args.languages, split="train"),
            data_collator=BitextCollator(tokenizers, languages=args.languages, max_length=args.max_length),
            tokenizers=tokenizers,
        ).train()
    return model, tokenizers


def child(arm: str, seed: int, args) -> dict:
    from hf_xlsr.data import resolve_reference
    from hf_xlsr.modeling.ema import momentum_pairs

    torch.set_num_threads(args.threads)
    fields = ARMS[arm]
    start = time.perf_counter()
    model, tokenizers = train(
        resolve_reference(ENCODERS["minilm"]), args, seed, fields["learning_rate"], fields.get("lora")
    )
    seconds = time.perf_counter() - start
    own = [k for _, k, q in momentum_pairs(model.momentum_encoder_x, model.encoder_x) if k is not q]  # its own
    return {
        "arm": arm,
        "seed": seed,
        "learning_rate": fields["learning_rate"],
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "momentum_encoder_own_mb": sum(p.numel() * p.element_size() for p in own) / 2**20,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "step_seconds": seconds / args.steps,
        **score(heldout_evaluators(args.languages), model, tokenizers),
    }


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
        print_result(child(args.child[0], int(args.child[1]), args))
        return
    results = Results(
        args.out,
        {
            "script": "benchmarks/bench_lora.py",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "queue_size": args.queue_size,
            "momentum": args.momentum,
            "max_length": args.max_length,
            "arms": ARMS,
            "machine": machine() + f", {args.threads} thread per run",
        },
    )
    for seed in args.seeds:
        for arm in args.arms:
            if results.done(arm, seed):
                continue
            run = run_child(__file__, [*sys.argv[1:], "--child", arm, str(seed)], f"{arm}, seed {seed}")
            results.add(run)
            print({k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in run.items()}, flush=True)


if __name__ == "__main__":
    main()
