"""Train a tiny SentenceTransformer with MomentumQueueLoss under SentenceTransformerTrainer (run by ``accelerate
launch`` with two processes), then write this process's queues, momentum model and parameters to
``OUT/rank<N>.pt``. With ``cached``: CachedMomentumQueueLoss in mini-batches of 3, two micro-batches per step.
Usage: SCRIPT ENCODER_DIR OUT [cached]"""

import sys

import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

from hf_xlsr.data import load_bible
from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueLoss

encoder_dir, out, cached = sys.argv[1], sys.argv[2], sys.argv[3:] == ["cached"]
torch.manual_seed(0)
model = SentenceTransformer(modules=[Transformer(encoder_dir, max_seq_length=32), Pooling(32, "mean")])
pairs = load_bible(["en", "fr"], split="train").select(range(64))
pairs = pairs.rename_columns({"en": "anchor", "fr": "positive"})
if cached:
    loss = CachedMomentumQueueLoss(model, queue_size=64, momentum=0.9, mini_batch_size=3)
else:
    loss = MomentumQueueLoss(model, queue_size=64, momentum=0.9)
args = SentenceTransformerTrainingArguments(
    output_dir=f"{out}/run",
    per_device_train_batch_size=4,
    max_steps=3,
    learning_rate=1e-3,
    save_strategy="no",
    report_to="none",
    disable_tqdm=True,
    use_cpu=True,
    seed=0,
    gradient_accumulation_steps=2 if cached else 1,
)
pairs = pairs.select_columns(["anchor", "positive"])
trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=pairs, loss=loss, callbacks=[loss.callback])
trainer.train()
state = {name: tensor for name, tensor in loss.momentum_contrast.state_dict().items()}
state.update({f"parameter.{name}": p.detach() for name, p in model.named_parameters()})
state["world_size"] = torch.tensor(trainer.accelerator.num_processes)
torch.save(state, f"{out}/rank{trainer.accelerator.process_index}.pt")
trainer.accelerator.wait_for_everyone()  # every rank has written its file before any leaves the group
trainer.accelerator.end_training()
