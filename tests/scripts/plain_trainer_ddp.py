"""A plain ``transformers.Trainer`` with ``MomentumCallback`` under DDP (``accelerate launch``, two processes, its
default ``broadcast_buffers``), counting the collectives the queue makes; writes this process's queues, the names of
the buffers DDP synchronises and the count to ``OUT/rank<N>.pt``. Usage: SCRIPT TOKENIZER_DIR OUT"""

import sys

import torch
import torch.distributed as dist
from transformers import AutoTokenizer, Trainer, TrainingArguments

from hf_xlsr import DualMomentumConfig, DualMomentumModel
from hf_xlsr.data import load_bible
from hf_xlsr.trainers import BitextCollator, MomentumCallback

tokenizer_dir, out = sys.argv[1], sys.argv[2]
gathers_from_the_queue = 0
all_gather = dist.all_gather


def counting_all_gather(*args, **kwargs):
    global gathers_from_the_queue
    gathers_from_the_queue += sys._getframe(1).f_code.co_filename.endswith("distributed.py")
    return all_gather(*args, **kwargs)


dist.all_gather = counting_all_gather
torch.manual_seed(0)
encoder = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
           "intermediate_size": 64, "max_position_embeddings": 128}  # fmt: skip
model = DualMomentumModel(DualMomentumConfig(encoder_x=encoder, queue_size=64, languages=["en", "fr"]))
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
pairs = load_bible(["en", "fr"], split="train").select(range(64)).select_columns(["en", "fr"])
args = TrainingArguments(
    output_dir=f"{out}/run",
    per_device_train_batch_size=4,
    max_steps=3,
    gradient_accumulation_steps=2,
    learning_rate=1e-3,
    save_strategy="no",
    report_to="none",
    disable_tqdm=True,
    use_cpu=True,
    seed=0,
    remove_unused_columns=False,
)
collator = BitextCollator(tokenizer, languages=["en", "fr"], max_length=32)
trainer = Trainer(model=model, args=args, train_dataset=pairs, data_collator=collator, callbacks=[MomentumCallback()])
trainer.train()
state = {name: t for name, t in model.state_dict().items() if name.startswith("momentum_contrast.queue")}
state["world_size"] = torch.tensor(trainer.accelerator.num_processes)
state["gathers_from_the_queue"] = torch.tensor(gathers_from_the_queue)
torch.save(
    {"state": state, "synchronised_buffers": sorted(trainer.model_wrapped.named_module_buffers)},
    f"{out}/rank{trainer.accelerator.process_index}.pt",
)
trainer.accelerator.wait_for_everyone()  # every rank has written its file before any leaves the group
trainer.accelerator.end_training()
