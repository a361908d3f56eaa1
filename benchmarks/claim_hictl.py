"""HICTL's claims (Wei et al., Sections 3 and 4) in miniature, from a small model warm-started with TLM.

1. Warm start: a small XLM-R-style model (4 layers, width 256, a Unigram vocabulary learned from the training
   verses) trained with TLM alone on en-fr translation pairs until its first-token ([CLS]) state carries content
   (its held-out retrieval accuracy is recorded); or, with ``--encoder``, a pretrained encoder (MiniLM-L6, e5) whose
   new masked-LM head TLM trains for the warm-up steps. Every arm continues from this one checkpoint.
2. Arms, equal steps, the paper's defaults otherwise (cosine scores at temperature 1, 512 hard negative words):
   ``tlm``, ``tlm+ls`` (sentence-level contrast) and ``tlm+ls+lw`` (and word-level contrast); held-out retrieval
   on [CLS] (1,000 en-fr pairs, both ways) and the zero-shot probe (book genre, trained in English, tested in
   French) on [CLS].
3. Translation (Section 3.2): the encoder of ``tlm+ls+lw`` (first seed; saved beside the warm start) with a new
   2-layer decoder, trained en->fr in two stages (decoder alone for half the steps, then everything), with the
   similarity fusion (its scale tuned once by chrF on 200 held-out development verses) and without it, same steps,
   for each of ``--mt-seeds`` (decoder initialisation and data order); chrF and BLEU on 200 other held-out verses
   against references passed through the tokenizer and back (an uncased tokenizer cannot write case or accents),
   and a few outputs.

    HF_HUB_OFFLINE=1 python benchmarks/claim_hictl.py --out benchmarks/results/claim_hictl.json
    HF_HUB_OFFLINE=1 python benchmarks/claim_hictl.py --encoder minilm --warmup-steps 100 --steps 250 \
        --batch-size 16 --learning-rate 4e-5 --warmup-learning-rate 1e-4 --mt-steps 0 \
        --out benchmarks/results/claim_hictl_minilm.json
    HF_HUB_OFFLINE=1 python benchmarks/claim_hictl.py --encoder minilm --warmup-steps 100 --steps 250 \
        --batch-size 16 --learning-rate 4e-5 --warmup-learning-rate 1e-4 --arms tlm+ls+lw \
        --mt-steps 500 --tune-steps 150 --mt-learning-rate 5e-4 --out benchmarks/results/claim_hictl_minilm.json
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import torch
from common import ENCODERS, Results, machine

ARMS = {
    "tlm": {"use_sentence_level": False, "use_word_level": False},
    "tlm+ls": {"use_sentence_level": True, "use_word_level": False},
    "tlm+ls+lw": {"use_sentence_level": True, "use_word_level": True},
    # the same two with s(q, k) = cosine / 0.05 in Eq. 2, 3 and 5 instead of the paper's plain cosine
    "tlm+ls_tau0.05": {"use_sentence_level": True, "use_word_level": False, "temperature": 0.05},
    "tlm+ls+lw_tau0.05": {"use_sentence_level": True, "use_word_level": True, "temperature": 0.05},
}


def fit(model, collate, rows, steps: int, args, seed: int, learning_rate: float) -> None:
    from hf_xlsr.trainers import XlsrTrainer, XlsrTrainingArguments

    with tempfile.TemporaryDirectory() as output_dir:
        arguments = XlsrTrainingArguments(
            output_dir=output_dir, max_steps=steps, per_device_train_batch_size=args.batch_size,
            learning_rate=learning_rate, warmup_steps=steps // 10, lr_scheduler_type="linear", seed=seed,
            logging_steps=50, save_strategy="no", report_to="none", disable_tqdm=True,
            use_cpu=not torch.cuda.is_available(),
        )  # fmt: skip
        XlsrTrainer(model=model, args=arguments, train_dataset=rows, data_collator=collate).train()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", help=f"start from this pretrained encoder ({sorted(ENCODERS)}, or a path)")
    parser.add_argument("--warmup-steps", type=int, default=1500)
    parser.add_argument("--warmup-learning-rate", type=float, default=5e-4)
    parser.add_argument("--learning-rate", type=float, default=2e-4, help="of the arms")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--mt-steps", type=int, default=1000, help="0 skips the translation arms")
    parser.add_argument("--tune-steps", type=int, default=300, help="of each fusion scale tried on dev verses")
    parser.add_argument("--mt-learning-rate", type=float, default=1e-3)
    parser.add_argument("--mt-seeds", type=int, nargs="+", default=[0, 1, 2], help="of the translation arms")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=["tlm", "tlm+ls", "tlm+ls+lw"], choices=sorted(ARMS))
    parser.add_argument("--warm-dir", default="runs/hictl_warm", help="the warm start is saved here, and reused")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.mt_steps and "tlm+ls+lw" not in args.arms:
        parser.error("the translation arms start from the tlm+ls+lw encoder: add it to --arms, or pass --mt-steps 0")
    torch.set_num_threads(args.threads)

    from transformers import AutoTokenizer

    from hf_xlsr import HictlConfig, HictlForPreTraining, HictlForTranslation
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
    from hf_xlsr.evaluation import LinearProbeEvaluator, RetrievalEvaluator
    from hf_xlsr.evaluation.translation import translate, translation_scores
    from hf_xlsr.trainers import HictlCollator

    train = load_bible(["en", "fr"], split="train")
    heldout = load_bible(["en", "fr"], split="heldout").shuffle(seed=0)
    warm_dir = Path(args.warm_dir) / f"{Path(args.encoder or 'scratch').name}_{args.warmup_steps}_steps"
    cached = (warm_dir / "config.json").is_file()
    start_path = resolve_reference(ENCODERS.get(args.encoder, args.encoder)) if args.encoder else None
    if cached or start_path:
        tokenizer = AutoTokenizer.from_pretrained(warm_dir if cached else start_path)
    else:
        tokenizer = train_unigram_tokenizer(list(train["en"]) + list(train["fr"]), args.vocab_size)
    tokenizers = tokenizer
    retrieval = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=0)
    probe = LinearProbeEvaluator.from_bible("en", ["en", "fr"], max_train=3000, max_test=1000, seed=0)
    collate = HictlCollator(tokenizer, ["en", "fr"], args.max_length)
    results = Results(args.out, {"script": "benchmarks/claim_hictl.py", **{k: v for k, v in vars(args).items()
                                 if k not in ("out", "seeds", "arms", "threads", "warm_dir")},
                                 "machine": machine()})  # fmt: skip

    def scored(model) -> dict:
        found, genre = retrieval(model, tokenizers=tokenizers), probe(model, tokenizers=tokenizers)
        return {"bible_en2fr": found["retrieval_en2fr_accuracy"], "bible_fr2en": found["retrieval_fr2en_accuracy"],
                "bible": found["retrieval_accuracy"], "probe_en2en": genre["probe_en2en_accuracy"],
                "probe_en2fr": genre["probe_en2fr_accuracy"]}  # fmt: skip

    if cached:
        warm = HictlForPreTraining.from_pretrained(warm_dir)
    else:
        torch.manual_seed(0)
        fields = {"languages": ["en", "fr"], **ARMS["tlm"]}
        if start_path:
            warm = HictlForPreTraining.from_encoder(start_path, **fields)
        else:
            positions = max(2 * args.max_length, 128) + 8  # TLM pairs; verses up to the evaluators' 128 tokens
            small = {"model_type": "xlm-roberta", "vocab_size": len(tokenizer), "hidden_size": 256,
                     "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024,
                     "max_position_embeddings": positions, "pad_token_id": tokenizer.pad_token_id,
                     "type_vocab_size": 1}  # fmt: skip
            warm = HictlForPreTraining(HictlConfig(encoder=small, **fields))
        warm.use_tokenizer(tokenizer)
        start = time.time()
        fit(warm, collate, train, args.warmup_steps, args, 0, args.warmup_learning_rate)
        seconds = round(time.time() - start)
        warm.save_pretrained(warm_dir)
        tokenizer.save_pretrained(warm_dir)
        if not results.done("warm start (TLM)", 0):
            results.add({"arm": "warm start (TLM)", "seed": 0, "train_seconds": seconds, **scored(warm)})
    mt_start = warm_dir / f"tlm+ls+lw_seed{args.seeds[0]}_{args.steps}_steps"  # the translation arms' encoder
    for seed in args.seeds:
        for arm in args.arms:
            saves_mt_start = args.mt_steps and (arm, seed) == ("tlm+ls+lw", args.seeds[0])
            saves_mt_start = saves_mt_start and not (mt_start / "config.json").is_file()
            if results.done(arm, seed) and not saves_mt_start:
                continue
            model = copy.deepcopy(warm)
            for name, value in ARMS[arm].items():
                setattr(model.config, name, value)
            torch.manual_seed(seed)
            start = time.time()
            fit(model, collate, train, args.steps, args, seed, args.learning_rate)
            run = {"arm": arm, "seed": seed, "train_seconds": round(time.time() - start), **scored(model)}
            if saves_mt_start:
                model.save_pretrained(mt_start)
            if not results.done(arm, seed):
                results.add(run)
            print(run, flush=True)

    if args.mt_steps == 0:
        return

    def mt_collate(rows):
        source = tokenizer([r["en"] for r in rows], padding=True, truncation=True, max_length=args.max_length,
                           return_tensors="pt")  # fmt: skip
        target = tokenizer([r["fr"] for r in rows], padding=True, truncation=True, max_length=args.max_length,
                           return_tensors="pt")  # fmt: skip
        return {**source, "labels": target["input_ids"].masked_fill(target["attention_mask"] == 0, -100)}

    dev = (list(heldout["en"][1000:1200]), list(heldout["fr"][1000:1200]))
    test = (list(heldout["en"][1200:1400]), list(heldout["fr"][1200:1400]))
    # references as the tokenizer can write them back (an uncased one lowercases and drops accents)
    dev_references, test_references = (tokenizer.batch_decode(tokenizer(texts)["input_ids"], skip_special_tokens=True)
                                       for texts in (dev[1], test[1]))  # fmt: skip

    def translator(steps: int, seed: int, **fields):
        torch.manual_seed(seed)
        encoder = HictlForPreTraining.from_pretrained(mt_start)
        model = HictlForTranslation.from_hictl(encoder, tokenizer, decoder_layers=2, encoder_frozen_steps=steps // 2,
                                               **fields)  # fmt: skip
        fit(model, mt_collate, train, steps, args, seed, args.mt_learning_rate)
        return model

    if not results.done("fusion scale tuning", 0):
        tuning = {}
        for temperature in (0.1, 0.3, 1.0):
            hypotheses = translate(translator(args.tune_steps, 0, fusion_temperature=temperature), tokenizer, dev[0],
                                   max_new_tokens=args.max_length)  # fmt: skip
            tuning[str(temperature)] = translation_scores(hypotheses, dev_references)["chrf"]
        results.add({"arm": "fusion scale tuning", "seed": 0, "dev_chrf_by_temperature": tuning,
                     "best_temperature": float(max(tuning, key=tuning.get))})  # fmt: skip
    best = next(run for run in results.data["runs"] if run["arm"] == "fusion scale tuning")["best_temperature"]
    for seed in args.mt_seeds:
        for arm, fields in (("translation without fusion", {"fusion": False}),
                            ("translation with fusion", {"fusion_temperature": best})):  # fmt: skip
            if results.done(arm, seed):
                continue
            start = time.time()
            model = translator(args.mt_steps, seed, **fields)
            seconds = round(time.time() - start)
            hypotheses = translate(model, tokenizer, test[0], max_new_tokens=args.max_length)
            run = {"arm": arm, "seed": seed, "fusion_temperature": fields.get("fusion_temperature"),
                   "train_seconds": seconds, **translation_scores(hypotheses, test_references),
                   "examples": [{"source": s, "reference": r, "output": h} for s, r, h
                                in zip(test[0], test_references, hypotheses[:4], strict=False)]}  # fmt: skip
            results.add(run)
            print({k: v for k, v in run.items() if k != "examples"}, flush=True)


if __name__ == "__main__":
    main()
