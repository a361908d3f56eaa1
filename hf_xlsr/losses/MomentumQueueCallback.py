# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""`MomentumQueueCallback`: the trainer callback of `MomentumQueueLoss` (``loss.callback``)."""

from __future__ import annotations

import logging
import os

import torch
from safetensors.torch import load_model, save_model
from transformers import TrainerControl, TrainerState, TrainingArguments

from ..trainers.callbacks import MomentumCallback

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "momentum_queue_loss.safetensors"  # the loss's state, in each checkpoint folder


class MomentumQueueCallback(MomentumCallback):
    """``MomentumQueueLoss.callback``: the EMA once per optimizer step, and the loss's state in checkpoints.

    ``on_train_begin`` sets the precision of the momentum forward to the trainer's (``bf16`` / ``fp16``), which
    autocasts only the live model's forward; ``on_save`` writes the momentum copy, the queues and their counters
    into the checkpoint just saved;
    ``on_train_begin`` of a resumed run reads them back from ``output_dir/checkpoint-<step>``.
    """

    def __init__(self, loss: torch.nn.Module):  # the MomentumQueueLoss it serves
        super().__init__(target=loss)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        # the trainer autocasts the live model's forward, not the loss's momentum copy: the keys follow its precision
        self.target.key_autocast = torch.bfloat16 if args.bf16 else torch.float16 if args.fp16 else None
        if state.global_step == 0:
            return
        path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", CHECKPOINT_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{path}: training resumes at step {state.global_step}, but MomentumQueueLoss finds no saved queue "
                "and momentum model there. It restores them from checkpoints of args.output_dir written with "
                "callbacks=[loss.callback]."
            )
        load_model(self.target.momentum_contrast, path, device=str(next(self.target.parameters()).device))
        logger.info("restored the momentum model and queues from %s", path)

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        if args.should_save:
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            save_model(self.target.momentum_contrast, os.path.join(folder, CHECKPOINT_FILE))
