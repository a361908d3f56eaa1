"""MoCo-BERT's claims (Wang et al., Figure 2, Tables 4 and 5) in miniature, with controls and seeds.

Every arm starts from the same encoder, shares one encoder between the two languages, sees the same number of
steps of the same batch size with the same optimiser and schedule, and is scored on held-out pairs (the Bible's
held-out books, 1,000 pairs, both directions; for en-zh also the HSK held-out topics). Arms differ in one thing:

* ``mnrl``: sentence-transformers ``MultipleNegativesRankingLoss`` both ways (in-batch negatives of the live
  encoder), scale 1 / tau, trained by ``SentenceTransformerTrainer``;
* ``K1B`` / ``K16B`` / ``K128B``: ``DualMomentumModel`` with a queue of B, 16 B and 128 B keys at momentum 0.99;
* ``K128B_m0.999`` / ``K128B_m0``: the largest queue with a slower EMA, and with none (keys from the query encoder,
  Table 5's "w/o momentum");
* ``K128B_tau0.01`` / ``K128B_tau0.1``: Table 4's temperature grid around the default 0.04;
* ``K1B_m0.98`` / ``K64B_m0.98`` / ``K64B_m0`` / ``K64B_m0.98_tau0.01`` / ``K64B_m0.98_tau0.1``: the same questions
  scaled to a 320-step run of a larger encoder.

Budget rules: with 640 steps of 8 pairs, a 1,024-key queue is full after 128 steps (80% of the run) and the EMA
horizon 1 / (1 - m) = 100 steps is a sixth of it; K stays far below the 25,170 training pairs.

    HF_HUB_OFFLINE=1 python benchmarks/claim_moco.py --encoder minilm --languages en fr \
        --out benchmarks/results/claim_moco_minilm_en_fr.json            # resumable: finished runs are skipped
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from common import ENCODERS, Results, heldout_evaluators, machine, print_summary, score


def arms(batch: int) -> dict[str, dict]:
    return {
        "mnrl": {"kind": "mnrl"},
        "K1B": {"queue_size": batch},
        "K16B": {"queue_size": 16 * batch},
        "K128B": {"queue_size": 128 * batch},
        "K128B_m0.999": {"queue_size": 128 * batch, "momentum": 0.999},
        "K128B_m0": {"queue_size": 128 * batch, "momentum": 0.0},
        "K128B_tau0.01": {"queue_size": 128 * batch, "temperature": 0.01},
        "K128B_tau0.1": {"queue_size": 128 * batch, "temperature": 0.1},
        # for 320-step runs (a larger encoder): 512 keys are full after 64 steps, EMA horizon 50 steps
        "K64B_m0.98": {"queue_size": 64 * batch, "momentum": 0.98},
        "K1B_m0.98": {"queue_size": batch, "momentum": 0.98},
        "K64B_m0": {"queue_size": 64 * batch, "momentum": 0.0},
        "K64B_m0.98_tau0.01": {"queue_size": 64 * batch, "momentum": 0.98, "temperature": 0.01},
        "K64B_m0.98_tau0.1": {"queue_size": 64 * batch, "momentum": 0.98, "temperature": 0.1},
    }


def training_arguments(args, output_dir: str, seed: int) -> dict:
    """The budget every arm trains with: Table 9's optimiser settings scaled to the run."""
    return dict(
        output_dir=output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_steps=args.steps // 10, lr_scheduler_type="cosine",
        weight_decay=1e-4, max_grad_norm=10.0, seed=seed, save_strategy="no", report_to="none", disable_tqdm=True,
        logging_steps=10, use_cpu=not torch.cuda.is_available(),
    )  # fmt: skip


def train_mnrl(path, train, args, seed, output_dir, temperature):
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    model = SentenceTransformer(path)
    model[0].max_seq_length = args.max_length
    loss = MultipleNegativesRankingLoss(model, scale=1 / temperature, directions=("query_to_doc", "doc_to_query"),
                                        partition_mode="per_direction")  # fmt: skip
    training_args = SentenceTransformerTrainingArguments(**training_arguments(args, output_dir, seed))
    SentenceTransformerTrainer(model=model, args=training_args, train_dataset=train.select_columns(args.languages),
                               loss=loss).train()  # fmt: skip
    model[0].max_seq_length = 128  # score with the truncation hf_xlsr's encoder uses
    return model, None, {}


def train_moco(path, train, args, seed, output_dir, queue_size, momentum=0.99, temperature=0.04, lora=None):
    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    x, y = args.languages
    torch.manual_seed(seed)
    model = DualMomentumModel.from_encoders(
        path, shared_encoder=True, languages=[x, y], queue_size=queue_size, momentum=momentum,
        temperature=temperature, lora=lora,
    )  # fmt: skip
    tokenizers = AutoTokenizer.from_pretrained(path)
    collator = BitextCollator(tokenizers, languages=[x, y], max_length=args.max_length)
    trainer = XlsrTrainer(model=model, args=XlsrTrainingArguments(**training_arguments(args, output_dir, seed)),
                          train_dataset=train, data_collator=collator, tokenizers=tokenizers)  # fmt: skip
    trainer.train()
    fills = [entry["queue_fill"] for entry in trainer.state.log_history if "queue_fill" in entry]
    extra = {
        "queue_full_share": sum(fill >= 0.999 for fill in fills) / len(fills),
        "ema_horizon_steps": 1 / (1 - momentum) if momentum < 1 else float("inf"),
        "final_accuracy_in_queue": trainer.state.log_history[-2].get("accuracy_source_to_target"),
    }
    return model, tokenizers, extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="minilm", help=f"one of {sorted(ENCODERS)}, or a path")
    parser.add_argument("--languages", nargs=2, default=["en", "fr"])
    parser.add_argument("--steps", type=int, default=640)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from hf_xlsr.data import load_bible, resolve_reference

    path = resolve_reference(ENCODERS.get(args.encoder, args.encoder))
    train = load_bible(args.languages, split="train")
    evaluators = heldout_evaluators(args.languages)
    available = arms(args.batch_size)
    chosen = args.arms or list(available)
    results = Results(args.out, {"script": "benchmarks/claim_moco.py", "encoder": args.encoder,
                                 "languages": args.languages, "steps": args.steps, "batch_size": args.batch_size,
                                 "learning_rate": args.learning_rate, "max_length": args.max_length,
                                 "train_pairs": len(train), "machine": machine()})  # fmt: skip
    if not results.done("untrained", 0):
        from sentence_transformers import SentenceTransformer

        results.add({"arm": "untrained", "seed": 0, **score(evaluators, SentenceTransformer(path))})
    for seed in args.seeds:
        for arm in chosen:
            if results.done(arm, seed):
                continue
            fields = dict(available[arm])
            start = time.time()
            with tempfile.TemporaryDirectory() as output_dir:
                if fields.pop("kind", None) == "mnrl":
                    model, tokenizers, extra = train_mnrl(path, train, args, seed, output_dir, temperature=0.04)
                else:
                    model, tokenizers, extra = train_moco(path, train, args, seed, output_dir, **fields)
            seconds = time.time() - start
            run = {"arm": arm, "seed": seed, "train_seconds": round(seconds), **extra,
                   **score(evaluators, model, tokenizers)}  # fmt: skip
            results.add(run)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in run.items()}, flush=True)
    print_summary(results, [name for name in evaluators] + [f"bible_{args.languages[0]}2{args.languages[1]}"])


if __name__ == "__main__":
    main()
