"""How to draw the language pairs of a multilingual run: the sampling temperature alpha (p_k ~ n_k^alpha) and batches
that mix the pairs against batches of one pair each.

The arms (``ARMS``: ``language_sampling_alpha`` 0, 0.5 and 1 in mixed batches, and 0.5 in batches of one pair), the
unbalanced English-centric Bible pairs they train on through ``hf-xlsr train``'s pipeline, and the scores are on the
report's languages page (docs/benchmarks/languages.md).

    HF_HUB_OFFLINE=1 python benchmarks/multilingual_sampling.py --threads 1 \\
        --out benchmarks/results/multilingual_sampling.json           # resumable: finished runs are skipped
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch
import yaml
from common import ENCODERS, Results, machine

SIZES = {"fr": 16_000, "de": 4_000, "es": 1_000, "it": 250}
ARMS = {
    "alpha0.5": {"language_sampling_alpha": 0.5, "language_batches": "mixed"},
    "alpha0.5_one_pair": {"language_sampling_alpha": 0.5, "language_batches": "one_pair"},
    "alpha0": {"language_sampling_alpha": 0.0, "language_batches": "mixed"},
    "alpha1": {"language_sampling_alpha": 1.0, "language_batches": "mixed"},
}


def write_pair_files(folder: Path) -> dict[str, str]:
    """One headerless two-column TSV per pair, the first ``SIZES[language]`` of its shuffled training verses."""
    from hf_xlsr.data import load_bible

    files = {}
    for language, size in SIZES.items():
        verses = load_bible(["en", language], split="train").shuffle(seed=0).select(range(size))
        path = folder / f"en_{language}.tsv"
        path.write_text("".join(f"{en}\t{other}\n" for en, other in zip(verses["en"], verses[language], strict=True)))
        files[f"en-{language}"] = str(path)
    return files


def run(arm: str, seed: int, files: dict[str, str], args, folder: Path) -> dict:
    from hf_xlsr.trainers import parse_run_arguments, run_training

    languages = ["en", *SIZES]
    config = {
        "model_type": "xlsr_dual_momentum", "encoder": ENCODERS["minilm"], "languages": languages, "train_data": files,
        "eval_data": "bible", "max_eval_pairs": 1000, "max_length": 64,
        "model_config": {"shared_encoder": True, "queue_size": 1024, "momentum": 0.99, "temperature": 0.04},
        "per_device_train_batch_size": args.batch_size, "max_steps": args.steps, "learning_rate": args.learning_rate,
        "warmup_steps": args.steps // 10, "lr_scheduler_type": "cosine", "weight_decay": 1e-4, "max_grad_norm": 10.0,
        "seed": seed, "save_strategy": "no", "report_to": "none", "disable_tqdm": True, "logging_steps": 50,
        "output_dir": str(folder / f"{arm}_{seed}"), **ARMS[arm],
    }  # fmt: skip
    path = folder / f"{arm}_{seed}.yaml"
    path.write_text(yaml.safe_dump(config))
    _, metrics = run_training(*parse_run_arguments(path))
    scores = {key.removeprefix("eval_retrieval_"): value for key, value in metrics.items() if "retrieval" in key}
    per_language = {
        language: (scores[f"en2{language}_accuracy"] + scores[f"{language}2en_accuracy"]) / 2 for language in SIZES
    }
    return {
        "trained": scores["trained_accuracy"],
        "zero_shot": scores["zero_shot_accuracy"],
        **per_language,
        "directions": scores,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    setup = {"script": "benchmarks/multilingual_sampling.py", "sizes": SIZES, "arms": ARMS, "steps": args.steps,
             "batch_size": args.batch_size, "learning_rate": args.learning_rate, "machine": machine()}  # fmt: skip
    results = Results(args.out, setup)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files = write_pair_files(folder)
        for seed in args.seeds:
            for arm in args.arms:
                if results.done(arm, seed):
                    continue
                began = time.time()
                scores = run(arm, seed, files, args, folder)
                results.add({"arm": arm, "seed": seed, "train_seconds": round(time.time() - began), **scores})
                print(
                    json.dumps({"arm": arm, "seed": seed, **{k: v for k, v in scores.items() if k != "directions"}}),
                    flush=True,
                )


if __name__ == "__main__":
    main()
