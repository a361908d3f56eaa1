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
from pathlib import Path

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
    from .export import export_sentence_transformers, routes
    from .hub import RUN_INFO, read_json

    model, tokenizers = load_trained_model(args.model)
    run_info = read_json(Path(args.model) / RUN_INFO)
    folder = export_sentence_transformers(model, tokenizers, args.out, args.max_seq_length, run_info)
    language_routes = routes(model)
    if language_routes:
        print(f"{folder}: one encoder per language; encode with task=<language>, one of {', '.join(language_routes)}")
    else:
        print(f"{folder}")
    return 0


def _evaluate(args: argparse.Namespace, rest: list[str]) -> int:
    from .evaluation.loading import load_for_evaluation
    from .evaluation.suite import TASKS, SuiteOptions, format_table, run_suite

    tasks = [task.strip() for task in args.tasks.split(",") if task.strip()]
    unknown = [task for task in tasks if task not in TASKS and not task.startswith("mteb:")]
    if unknown:
        sys.exit(f"hf-xlsr evaluate: error: unknown task {unknown[0]!r} (one of {', '.join(TASKS)}, mteb:<TaskName>)")

    options = SuiteOptions(
        languages=args.languages, data=args.data, split=args.split, max_pairs=args.max_pairs, sts_file=args.sts_file,
        sts_dataset=args.sts_dataset, output_dir=args.output_dir, batch_size=args.batch_size,
        mteb_cache=args.mteb_cache,
    )  # fmt: skip
    from .export import MTEB_META

    model, tokenizers = load_for_evaluation(args.model)
    if any(task.startswith("mteb") for task in tasks) and (Path(args.model) / MTEB_META).is_file():
        from .evaluation.mteb import export_model_meta

        options.model_meta = export_model_meta(args.model)  # an export: label mteb's results with its metadata
    results = run_suite(model, tokenizers, tasks, options, output=args.output)
    print(format_table(results))
    print(f"results written to {args.output}")
    return 0


def _mine(args: argparse.Namespace, rest: list[str]) -> int:
    import tempfile

    from .data.bitext import SentenceFile
    from .evaluation.encoders import as_encoder
    from .evaluation.loading import load_for_evaluation
    from .evaluation.mining import RATIO_THRESHOLD, mine_files

    threshold = None if args.all_pairs else args.threshold
    if threshold is None and not args.all_pairs:
        if args.margin != "ratio":
            raise MiningArgumentError("the distance margin has no customary cut: give --threshold, or --all-pairs")
        threshold = RATIO_THRESHOLD
        print(f"keeping pairs whose ratio margin is at least {threshold} (the customary cut; --threshold to change "
              "it, --all-pairs to keep every mined pair)")  # fmt: skip
    source, target = SentenceFile(args.src), SentenceFile(args.tgt)
    model, tokenizers = load_for_evaluation(args.model)
    encode = as_encoder(model, tokenizers, batch_size=args.batch_size)
    work = Path(args.embeddings) if args.embeddings else None
    with tempfile.TemporaryDirectory(dir=Path(args.out).resolve().parent) as scratch:
        written = mine_files(
            encode, source, target, args.out, args.src_lang, args.tgt_lang, threshold, work or scratch, k=args.k,
            margin=args.margin, mode=args.mode, index=args.index,
        )  # fmt: skip
    print(f"{written} pairs written to {args.out} (score, source line, target line, source, target)")
    return 0


class MiningArgumentError(ValueError):
    """Mining options that do not go together."""


def _push(args: argparse.Namespace, rest: list[str]) -> int:
    from .hub import push_trained_model

    urls = push_trained_model(
        args.model, args.repo_id, include_checkpoint=args.include_checkpoint, private=args.private or None
    )
    print("\n".join(urls))
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

    evaluate = commands.add_parser("evaluate", help="run evaluation tasks; write one JSON and print a table")
    evaluate.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    evaluate.add_argument("--tasks", default="retrieval,retrieval_pcr,mining,sts,probe",
                          help="comma-separated: retrieval, retrieval_pcr, mining, sts, probe, bias, plot, mteb, "
                               "mteb:<TaskName>")  # fmt: skip
    evaluate.add_argument("--languages", nargs=2, default=["en", "fr"], help="x and y language codes")
    evaluate.add_argument("--data", default="bible", help="'bible', 'hsk', a .tsv/.jsonl file or a Hub dataset")
    evaluate.add_argument("--split", default="heldout")
    evaluate.add_argument("--max-pairs", type=int, default=1000)
    evaluate.add_argument("--sts-file", help="STS pairs: sentence1<TAB>sentence2<TAB>score[<TAB>subset]")
    evaluate.add_argument("--sts-dataset", help="Hub STS dataset with sentence1/sentence2/score columns")
    evaluate.add_argument("--output", default="evaluation/results.json", help="JSON file of all results")
    evaluate.add_argument("--output-dir", default="evaluation", help="folder for plots")
    evaluate.add_argument("--mteb-cache", help="MTEB result cache folder (results are keyed by weight hash)")
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.set_defaults(handler=_evaluate)

    mine = commands.add_parser("mine", help="mine parallel sentences from two files (margin-based)")
    mine.add_argument("--model", required=True, help="hf_xlsr model, sentence-transformers folder or export")
    mine.add_argument("--src", required=True, help="source sentences, one per line")
    mine.add_argument("--tgt", required=True, help="target sentences, one per line")
    mine.add_argument("--out", required=True, help="output TSV: score, source line, target line, source, target")
    mine.add_argument("--src-lang", default="x", help="language of --src (picks the encoder of a dual model)")
    mine.add_argument("--tgt-lang", default="y", help="language of --tgt")
    mine.add_argument("--k", type=int, default=4, help="neighbours in the margin (Eq. 4)")
    mine.add_argument("--margin", choices=("ratio", "distance"), default="ratio")
    mine.add_argument("--mode", choices=("forward", "backward", "max", "intersect"), default="max")
    mine.add_argument("--index", choices=("auto", "flat", "ivf"), default="auto")
    mine.add_argument("--threshold", type=float,
                      help="keep pairs scoring at least this (default: 1.06 for the ratio margin)")  # fmt: skip
    mine.add_argument("--all-pairs", action="store_true", help="keep every mined pair, whatever its score")
    mine.add_argument("--embeddings", help="folder for the embeddings (memory-mapped .npy; default: a temporary one)")
    mine.add_argument("--batch-size", type=int, default=64)
    mine.set_defaults(handler=_mine)

    push = commands.add_parser("push", help="push a trained model's export and model card to the Hub")
    push.add_argument("--model", required=True, help="trained hf_xlsr model folder")
    push.add_argument("--repo-id", required=True, help="repository id (a dual encoder adds -<language>)")
    push.add_argument("--include-checkpoint", action="store_true", help="also push the full training checkpoint")
    push.add_argument("--private", action="store_true")
    push.set_defaults(handler=_push)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # hf_xlsr's own progress at INFO; other libraries (faiss's loader, datasets, ...) only when they warn
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    logger.setLevel(logging.INFO)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "allow_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from .data.bitext import BitextFormatError
    from .evaluation.loading import ModelLoadError
    from .trainers.arguments import ConfigFileError

    try:
        return args.handler(args, rest)
    except (ConfigFileError, BitextFormatError, FileNotFoundError, ModelLoadError, MiningArgumentError) as error:
        parser.exit(2, f"hf-xlsr {args.command}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
