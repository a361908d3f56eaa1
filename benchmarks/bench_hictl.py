"""HICTL in miniature (Wei et al., Sections 3 and 4), on Bible en-fr.

1. Pre-training from a small XLM-R-style configuration (a Unigram vocabulary learned from the training verses) on
   translation pairs, a quarter of them turned monolingual (a verse and its word reordering): with and without the
   word-level contrastive loss, the same data and steps; retrieval accuracy on held-out verse pairs.
2. Translation: the pre-trained encoder with a new 2-layer decoder (similarity fusion), trained en -> fr in two
   stages (decoder alone, then everything); BLEU and chrF on held-out verses before and after.

    HF_HUB_OFFLINE=1 python benchmarks/bench_hictl.py [--steps 300] [--mt-steps 300] [--out hictl.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch


def training_arguments(output_dir: str, steps: int, args, learning_rate: float):
    from hf_xlsr.trainers import XlsrTrainingArguments

    return XlsrTrainingArguments(
        output_dir=output_dir, max_steps=steps, per_device_train_batch_size=args.batch_size,
        learning_rate=learning_rate, warmup_steps=steps // 10, lr_scheduler_type="linear", seed=args.seed,
        save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--mt-steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from hf_xlsr import HictlConfig, HictlForPreTraining, HictlForTranslation
    from hf_xlsr.data import load_bible
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
    from hf_xlsr.evaluation import RetrievalEvaluator
    from hf_xlsr.evaluation.translation import translate, translation_scores
    from hf_xlsr.trainers import HictlCollator, XlsrTrainer

    train = load_bible(["en", "fr"], split="train")
    heldout = load_bible(["en", "fr"], split="heldout")
    tokenizer = train_unigram_tokenizer(list(train["en"]) + list(train["fr"]), args.vocab_size)
    tokenizers = {"x": tokenizer, "y": tokenizer}
    retrieval = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=args.seed)
    encoder = {
        "model_type": "xlm-roberta", "vocab_size": len(tokenizer), "hidden_size": args.hidden_size,
        "num_hidden_layers": args.layers, "num_attention_heads": 4, "intermediate_size": 4 * args.hidden_size,
        "max_position_embeddings": 2 * args.max_length + 4, "pad_token_id": tokenizer.pad_token_id,
        "type_vocab_size": 1,
    }  # fmt: skip
    results = {"pretraining": [], "translation": {}}
    pairs = len(retrieval.sentences_x)
    print(f"pre-training {args.steps} steps x batch {args.batch_size} from scratch; {pairs} held-out pairs")
    print(f"{'variant':<22}{'en->fr':>8}{'fr->en':>8}{'mean':>8}{'train s':>9}")
    pretrained = None
    for name, word_level in (("without word-level", False), ("with word-level (L_W)", True)):
        torch.manual_seed(args.seed)
        model = HictlForPreTraining(HictlConfig(encoder=encoder, use_word_level=word_level, num_negatives=512,
                                                temperature=0.1, language_x="en", language_y="fr"))  # fmt: skip
        model.use_tokenizer(tokenizer)
        collator = HictlCollator(tokenizer, "en", "fr", args.max_length, monolingual_probability=0.25)
        start = time.time()
        with tempfile.TemporaryDirectory() as output_dir:
            XlsrTrainer(model=model, args=training_arguments(output_dir, args.steps, args, 5e-4), train_dataset=train,
                        data_collator=collator, tokenizers=tokenizers).train()  # fmt: skip
        scores = retrieval(model, tokenizers)
        row = {"variant": name, "en2fr": scores["retrieval_en2fr_accuracy"],
               "fr2en": scores["retrieval_fr2en_accuracy"], "mean": scores["retrieval_accuracy"],
               "train_seconds": time.time() - start}  # fmt: skip
        results["pretraining"].append(row)
        print(
            f"{name:<22}{row['en2fr']:>8.1%}{row['fr2en']:>8.1%}{row['mean']:>8.1%}{row['train_seconds']:>9.0f}",
            flush=True,
        )
        pretrained = model

    translation = HictlForTranslation.from_hictl(pretrained, tokenizer, decoder_layers=2,
                                                 encoder_frozen_steps=args.mt_steps // 2)  # fmt: skip
    sources, references = list(heldout["en"][:200]), list(heldout["fr"][:200])
    before = translation_scores(translate(translation, tokenizer, sources, max_new_tokens=48), references)

    def collate(rows):
        source = tokenizer(
            [r["en"] for r in rows], padding=True, truncation=True, max_length=args.max_length, return_tensors="pt"
        )
        target = tokenizer(
            [r["fr"] for r in rows], padding=True, truncation=True, max_length=args.max_length, return_tensors="pt"
        )
        return {**source, "labels": target["input_ids"].masked_fill(target["attention_mask"] == 0, -100)}

    start = time.time()
    with tempfile.TemporaryDirectory() as output_dir:
        mt_args = training_arguments(output_dir, args.mt_steps, args, 1e-3)
        XlsrTrainer(model=translation, args=mt_args, train_dataset=train, data_collator=collate).train()
    hypotheses = translate(translation, tokenizer, sources, max_new_tokens=48)
    after = translation_scores(hypotheses, references)
    example = {"source": sources[0], "reference": references[0], "output": hypotheses[0]}
    results["translation"] = {
        "before": before,
        "after": after,
        "train_seconds": time.time() - start,
        "example": example,
    }
    print(f"translation en->fr, {len(sources)} held-out verses: before {before}, after {after}")
    print(f"example: {sources[0]!r} -> {hypotheses[0]!r} (reference {references[0]!r})")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), **results}, handle, indent=2)


if __name__ == "__main__":
    main()
