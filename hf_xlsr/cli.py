"""``hf-xlsr``: command line of hf_xlsr. Each command is a thin wrapper over the library.

hf-xlsr train CONFIG.yaml [--key value ...]      (also: accelerate launch examples/train.py CONFIG.yaml)
hf-xlsr export --model DIR --out DIR
hf-xlsr evaluate --model DIR [--data bible --languages en fr --split heldout]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

logger = logging.getLogger("hf_xlsr")


def _train(args: argparse.Namespace, rest: list[str]) -> int:
    from .trainers import parse_run_arguments, run_training

    model_args, data_args, training_args = parse_run_arguments(args.config, rest)
    _, metrics = run_training(model_args, data_args, training_args)
    if metrics:
        print(json.dumps(metrics, indent=2))
    return 0


def _export(args: argparse.Namespace, rest: list[str]) -> int:
    from .evaluation.loading import load_trained_model
    from .export import export_sentence_transformers

    model, tokenizers = load_trained_model(args.model)
    folders = export_sentence_transformers(model, tokenizers, args.out, max_seq_length=args.max_seq_length)
    for side, folder in folders.items():
        print(f"{side}: {folder}")
    return 0


def _evaluate(args: argparse.Namespace, rest: list[str]) -> int:
    from .evaluation.loading import load_for_evaluation
    from .evaluation.retrieval import RetrievalEvaluator
    from .trainers import DataArguments, load_pairs

    data_args = DataArguments(train_data=args.data, languages=args.languages)
    pairs = load_pairs(args.data, args.split, data_args)
    evaluator = RetrievalEvaluator.from_dataset(pairs, args.languages, max_pairs=args.max_pairs)
    model, tokenizers = load_for_evaluation(args.model)
    metrics = evaluator(model, tokenizers=tokenizers, batch_size=args.batch_size)
    print(json.dumps(metrics, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-xlsr", description="Cross-lingual sentence representations")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a model from a YAML/JSON config; extra --key value override it")
    train.add_argument("config", help="run configuration file (model, data and TrainingArguments fields)")
    train.set_defaults(handler=_train, allow_extra=True)

    export = commands.add_parser("export", help="export a trained model to sentence-transformers folders")
    export.add_argument("--model", required=True, help="trained hf_xlsr model folder")
    export.add_argument("--out", required=True, help="output folder")
    export.add_argument("--max-seq-length", type=int, default=128)
    export.set_defaults(handler=_export)

    evaluate = commands.add_parser("evaluate", help="retrieval accuracy of a model on sentence pairs")
    evaluate.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    evaluate.add_argument("--data", default="bible", help="'bible', 'hsk', a .tsv/.jsonl file or a Hub dataset")
    evaluate.add_argument("--languages", nargs=2, default=["en", "fr"], help="x and y columns")
    evaluate.add_argument("--split", default="heldout")
    evaluate.add_argument("--max-pairs", type=int, default=1000)
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.set_defaults(handler=_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "allow_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from .data.bitext import BitextFormatError
    from .trainers.arguments import ConfigFileError

    try:
        return args.handler(args, rest)
    except (ConfigFileError, BitextFormatError, FileNotFoundError) as error:
        parser.exit(2, f"hf-xlsr {args.command}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
