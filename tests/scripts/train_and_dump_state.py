"""Run the training pipeline (as ``examples/train.py`` does), then write this process's queues and momentum
encoders to ``OUT/rank<N>.pt`` so a test can compare the processes. Usage: SCRIPT CONFIG OUT [--key value ...]"""

import sys

import torch

from hf_xlsr.trainers import parse_run_arguments, run_training

config, out, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
trainer, _ = run_training(*parse_run_arguments(config, overrides))
state = trainer.accelerator.unwrap_model(trainer.model).state_dict()
kept = {name: tensor for name, tensor in state.items() if name.startswith(("queue_", "momentum_"))}
kept["world_size"] = torch.tensor(trainer.accelerator.num_processes)
torch.save(kept, f"{out}/rank{trainer.accelerator.process_index}.pt")
