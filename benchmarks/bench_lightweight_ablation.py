"""The lightweight dual transformer's ablations in miniature (Mao et al., Tables 5, 6 and 7), on Bible en-fr.

* Table 6 -- generative tasks alone (no contrastive loss): MLM, SMLM, XTR, MLM+XTR, UGT;
* Table 7 -- UGT, UGT + L_align, UGT + L_align + L_sim;
  each trained from scratch with the same Unigram vocabulary, data order and budget, then scored on held-out
  verses: retrieval accuracy both ways (XSR) and the zero-shot book-genre probe trained in English and tested in
  French (the MLDoc-like task);
* Table 5 -- seconds per training step and peak memory by number of layers (1, 2, 3, 4, 6) at batch 128, each
  in its own process; peak RSS is what a CPU gives for the paper's GPU memory.

    HF_HUB_OFFLINE=1 python benchmarks/bench_lightweight_ablation.py [--epochs 1] [--out ablation.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch

TABLE6 = {task: {"generative_task": task, "use_align": False, "use_sim": False}
          for task in ("mlm", "smlm", "xtr", "mlm_xtr", "ugt")}  # fmt: skip
TABLE7 = {
    "ugt": {"generative_task": "ugt", "use_align": False, "use_sim": False},
    "ugt+align": {"generative_task": "ugt", "use_align": True, "use_sim": False},
    "ugt+align+sim": {"generative_task": "ugt", "use_align": True, "use_sim": True},
}


def data():
    from hf_xlsr.data import load_bible

    return load_bible(["en", "fr"], split="train"), load_bible(["en", "fr"], split="heldout")


def tokenizer_for(train, vocab_size: int):
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer

    return train_unigram_tokenizer(list(train["en"]) + list(train["fr"]), vocab_size)


def train_variant(fields: dict, tokenizer, train, args) -> object:
    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.trainers import PairMaskingCollator, XlsrTrainer, XlsrTrainingArguments

    torch.manual_seed(args.seed)
    model = LightweightDualTransformer.from_tokenizer(tokenizer, language_x="en", language_y="fr", **fields)
    with tempfile.TemporaryDirectory() as output_dir:
        training_args = XlsrTrainingArguments(
            output_dir=output_dir, per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
            learning_rate=1e-3, warmup_steps=args.warmup_steps, lr_scheduler_type="inverse_sqrt", weight_decay=0.0,
            max_grad_norm=1.0, seed=args.seed, save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True,
        )  # fmt: skip
        collator = PairMaskingCollator(tokenizer, "en", "fr", args.max_length, task=fields["generative_task"])
        XlsrTrainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                    tokenizers={"x": tokenizer, "y": tokenizer}).train()  # fmt: skip
    return model


def quality(args) -> list[dict]:
    from hf_xlsr.evaluation import LinearProbeEvaluator, RetrievalEvaluator

    train, heldout = data()
    tokenizer = tokenizer_for(train, args.vocab_size)
    tokenizers = {"x": tokenizer, "y": tokenizer}
    retrieval = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=args.seed)
    probe = LinearProbeEvaluator.from_bible("en", ["en", "fr"], max_train=3000, max_test=1000, seed=args.seed)
    rows = []
    print(f"{'table':<7}{'variant':<16}{'XSR en->fr':>11}{'XSR fr->en':>11}{'probe en->fr':>13}{'train s':>9}")
    for table, variants in (("6", TABLE6), ("7", TABLE7)):
        for name, fields in variants.items():
            if table == "7" and name == "ugt" and any(r["variant"] == "ugt" for r in rows):
                rows.append({**next(r for r in rows if r["variant"] == "ugt"), "table": "7"})
            else:
                start = time.time()
                model = train_variant({**fields, "num_hidden_layers": 2}, tokenizer, train, args)
                seconds = time.time() - start
                r, p = retrieval(model, tokenizers), probe(model, tokenizers)
                rows.append({"table": table, "variant": name, "xsr_en2fr": r["retrieval_en2fr_accuracy"],
                             "xsr_fr2en": r["retrieval_fr2en_accuracy"], "probe_en2fr": p["probe_en2fr_accuracy"],
                             "probe_en2en": p["probe_en2en_accuracy"], "train_seconds": seconds})  # fmt: skip
            row = rows[-1]
            print(f"{table:<7}{name:<16}{row['xsr_en2fr']:>11.1%}{row['xsr_fr2en']:>11.1%}"
                  f"{row['probe_en2fr']:>13.1%}{row['train_seconds']:>9.0f}", flush=True)  # fmt: skip
    return rows


def step_child(layers: int, args) -> dict:
    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.trainers import PairMaskingCollator

    torch.set_num_threads(args.threads)
    train, _ = data()
    tokenizer = tokenizer_for(train.select(range(5000)), args.vocab_size)
    model = LightweightDualTransformer.from_tokenizer(tokenizer, num_hidden_layers=layers)
    collator = PairMaskingCollator(tokenizer, "en", "fr", args.max_length)
    batches = [collator([train[i] for i in range(s * args.batch_size, (s + 1) * args.batch_size)]) for s in range(6)]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for i, batch in enumerate(batches):
        start = time.perf_counter()
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= 1:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parameters = sum(p.numel() for p in model.parameters())
    return {"layers": layers, "step_seconds": statistics.median(times), "parameters": parameters,
            "peak_rss_mb": peak / 1024, "training_rss_increase_mb": (peak - before) / 1024}  # fmt: skip


def efficiency(args) -> list[dict]:
    rows = []
    print(f"{'layers':>6}{'s/step':>9}{'x 2-layer':>11}{'params':>12}{'peak RSS MB':>13}{'train +MB':>11}")
    for layers in args.layers:
        command = [sys.executable, __file__, "--child-layers", str(layers), "--batch-size", str(args.batch_size),
                   "--vocab-size", str(args.vocab_size), "--max-length", str(args.max_length),
                   "--threads", str(args.threads)]  # fmt: skip
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
    base = next((r["step_seconds"] for r in rows if r["layers"] == 2), rows[0]["step_seconds"])
    for row in rows:
        row["ratio_to_2_layers"] = row["step_seconds"] / base
        print(f"{row['layers']:>6}{row['step_seconds']:>9.2f}{row['ratio_to_2_layers']:>11.2f}{row['parameters']:>12,}"
              f"{row['peak_rss_mb']:>13.0f}{row['training_rss_increase_mb']:>11.0f}")  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--warmup-steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2, 3, 4, 6])
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--child-layers", type=int)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child_layers:
        print(json.dumps(step_child(args.child_layers, args)))
        return
    torch.set_num_threads(args.threads)
    results = {"efficiency": efficiency(args)}
    if not args.skip_quality:
        results["quality"] = quality(args)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), **results}, handle, indent=2)


if __name__ == "__main__":
    main()
