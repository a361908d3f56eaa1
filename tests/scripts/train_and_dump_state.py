"""Run ``hf-xlsr train`` (as ``accelerate launch -m hf_xlsr_cli train`` does), then write this process's queues and
momentum encoders to ``OUT/rank<N>.pt`` so a test can compare the processes. Usage: SCRIPT CONFIG OUT [--key value]"""

import sys

import torch

import hf_xlsr.trainers
from hf_xlsr_cli import main

config, out, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
trainers = []
run_training = hf_xlsr.trainers.run_training


def keeping_the_trainer(*args, **kwargs):
    trainer, metrics = run_training(*args, **kwargs)
    trainers.append(trainer)
    return trainer, metrics


hf_xlsr.trainers.run_training = keeping_the_trainer
assert main(["train", config, *overrides]) == 0
trainer = trainers[0]
state = trainer.accelerator.unwrap_model(trainer.model).state_dict()
kept = {name: tensor for name, tensor in state.items() if name.startswith(("queue_", "momentum_"))}
kept["world_size"] = torch.tensor(trainer.accelerator.num_processes)
live = next(trainer.accelerator.unwrap_model(trainer.model).query_encoder("en").parameters())
kept["query_dtype_is_bfloat16"] = torch.tensor(live.dtype == torch.bfloat16)
torch.save(kept, f"{out}/rank{trainer.accelerator.process_index}.pt")
