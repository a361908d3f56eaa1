# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Trainer callbacks for momentum contrast: when the momentum encoders change."""

from __future__ import annotations

import logging
import math
import signal
import sys
import threading
import time

import torch
from torch import nn
from torch.nn.utils import get_total_norm
from torch.optim import Optimizer
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

logger = logging.getLogger(__name__)

MOMENTUM_SCHEDULES = ("constant", "cosine")


def scheduled_momentum(base: float, step: int, total_steps: int, schedule: str = "constant") -> float:
    """Momentum coefficient at optimizer step ``step`` of ``total_steps``.

    ``constant`` keeps ``base`` (the paper); ``cosine`` raises it from ``base`` to 1 over training (BYOL's
    ``m_t = 1 - (1 - m) (cos(pi t / T) + 1) / 2``).
    """
    if schedule == "constant" or total_steps <= 0:
        return base
    if schedule == "cosine":
        return 1.0 - (1.0 - base) * (math.cos(math.pi * min(step, total_steps) / total_steps) + 1.0) / 2.0
    raise ValueError(f"momentum schedule must be one of {MOMENTUM_SCHEDULES}, got {schedule!r}")


class MomentumCallback(TrainerCallback):
    """Run the model's EMA update (``model.momentum_update(m)``) once per optimizer step, or, when the step was
    skipped (fp16 overflow) or its gradients were not finite, ``model.discard_momentum_step()`` instead: no EMA,
    and the step's keys leave the queues again.

    ``on_optimizer_step`` fires after ``optimizer.step()``, once per optimizer step whatever the gradient
    accumulation, so the momentum encoders see exactly one update per parameter update. ``XlsrTrainer`` adds this
    callback itself; with a plain ``transformers.Trainer`` pass it in ``callbacks=[MomentumCallback()]``.

    ``XlsrTrainer`` hands over the gradient norm it computes for clipping (``gradient_norm``); under another
    trainer (``SentenceTransformerTrainer`` with `hf_xlsr.losses.MomentumQueueLoss`) the callback
    computes it.

    ``target`` is what holds the momentum encoder (``momentum_coefficient``, ``momentum_update``,
    ``discard_momentum_step``, ``momentum_contrast``): the trainer's model when None, or another object such as
    `hf_xlsr.losses.MomentumQueueLoss`.
    """

    def __init__(self, schedule: str = "constant", target: nn.Module | None = None):
        if schedule not in MOMENTUM_SCHEDULES:
            raise ValueError(f"momentum schedule must be one of {MOMENTUM_SCHEDULES}, got {schedule!r}")
        self.schedule, self.target = schedule, target
        self.gradient_norm = None  # this step's gradient norm, when the trainer hands it over (XlsrTrainer does)
        self._finite_gradients = True

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs,
    ) -> None:
        contrast = getattr(self.target or model, "momentum_contrast", None)
        if contrast is not None:  # micro-batches per optimizer step: the model warns only beyond that
            contrast.enqueues_per_update = args.gradient_accumulation_steps

    def on_pre_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs,
    ) -> None:
        norm, self.gradient_norm = self.gradient_norm, None
        if norm is None:  # a trainer that keeps its norm to itself: compute it
            gradients = [p.grad for p in model.parameters() if p.grad is not None]
            norm = get_total_norm(gradients) if gradients else 0.0
        self._finite_gradients = math.isfinite(float(norm))

    def on_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        optimizer: Optimizer | None = None,
        **kwargs,
    ) -> None:
        skipped = bool(getattr(optimizer, "step_was_skipped", False))
        if skipped or not self._finite_gradients:
            reason = "was skipped (fp16 overflow)" if skipped else "had non-finite gradients"
            logger.warning(
                "optimizer step %d %s: no EMA update, its keys leave the queues", state.global_step + 1, reason
            )
            (self.target or model).discard_momentum_step()
            return
        target = self.target or model
        base = target.momentum_coefficient
        target.momentum_update(scheduled_momentum(base, state.global_step, state.max_steps, self.schedule))


class StageCallback(TrainerCallback):
    """Switch a multi-stage schedule (CMLM's S2 / S3) to its second stage at optimizer step ``second_stage_step``.

    The model keeps its stage in a buffer, so a checkpoint resumes in the stage it stopped in.
    """

    def __init__(self, second_stage_step: int):
        self.second_stage_step = second_stage_step

    def on_step_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs,
    ) -> None:
        model.stage.fill_(2 if state.global_step >= self.second_stage_step else 1)


class EncoderFreezeCallback(TrainerCallback):
    """The encoder frozen for the first ``steps`` optimizer steps, then thawed
    (``model.set_encoder_frozen(bool)``): CMLM's warm-up of a new masked-LM head, and HICTL's two-stage translation
    fine-tuning (Section 3.2), in which only the decoder learns at first.

    The optimizer is built before training starts, with every parameter, so the encoder's parameters are in it and
    resume updating when they thaw; while frozen they have no gradient and the optimizer skips them.
    """

    def __init__(self, steps: int):
        self.steps = steps

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs,
    ) -> None:
        self._frozen = None
        self._set(model, state.global_step)

    def on_step_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        **kwargs,
    ) -> None:
        self._set(model, state.global_step)

    def _set(self, model: nn.Module, step: int) -> None:
        frozen = step < self.steps
        if frozen != self._frozen:
            model.set_encoder_frozen(frozen)
            logger.info("step %d: encoder %s", step, "frozen" if frozen else "trains")
            self._frozen = frozen


class RunLengthCallback(TrainerCallback):
    """What depends on the run's length, once it is known: logs every tenth of the run (at most every ``cap``
    steps) where ``logging_steps`` was not set, and no checkpoint at the last step off a ``save_steps`` boundary
    unless ``save_final_checkpoint`` (the trained model is what ``save_model`` writes)."""

    def __init__(self, cap: int):
        self.cap = cap

    def on_train_begin(self, args, state, control, **kwargs):
        if getattr(args, "logging_sized", False):
            state.logging_steps = max(1, min(self.cap, state.max_steps // 10))

    def on_step_end(self, args, state, control, **kwargs):
        last = state.global_step >= state.max_steps
        on_boundary = args.save_strategy == "steps" and state.save_steps and state.global_step % state.save_steps == 0
        if (
            last
            and not on_boundary
            and not getattr(args, "save_final_checkpoint", True)
            and not (args.load_best_model_at_end)
        ):
            control.should_save = False
        return control


class PreemptionCallback(TrainerCallback):
    """SIGTERM and SIGUSR1 during training (what SLURM, with ``--signal``, and Kubernetes send before they kill a
    job) and SIGINT (Ctrl-C): the step under way finishes, a checkpoint is saved, training stops, and `stopped_by`
    names the signal. A second Ctrl-C, a second or more after the first, stops at once without saving
    (``KeyboardInterrupt``); one sooner is the same key press reaching the process twice, through a launcher. Under
    several processes the processes agree at each step's end (the largest signal number over them), so that every
    one saves and stops at the same step."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)
    REPEAT_SECONDS = 1.0  # a second SIGINT sooner than this after the first is the first one forwarded

    def __init__(self):
        self.received = 0
        self.interrupted_at: float | None = None
        self.stopped_by: str | None = None
        self.previous: dict = {}

    def handle(self, number, frame) -> None:
        if number == signal.SIGINT:
            now = time.monotonic()
            if self.interrupted_at is not None and now - self.interrupted_at >= self.REPEAT_SECONDS:
                raise KeyboardInterrupt  # the second Ctrl-C: stop now, without a checkpoint
            if self.interrupted_at is None:
                self.interrupted_at = now
                print(
                    "Ctrl-C: finishing this step, then saving a checkpoint (Ctrl-C again stops at once, "
                    "without saving)",
                    file=sys.stderr,
                    flush=True,
                )
        self.received = max(self.received, number)

    def on_train_begin(self, args, state, control, **kwargs):
        self.received, self.stopped_by, self.interrupted_at = 0, None, None
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            self.previous = {number: signal.signal(number, self.handle) for number in self.SIGNALS}

    def on_step_end(self, args, state, control, **kwargs):
        received = self.received
        if args.world_size > 1 and torch.distributed.is_initialized():
            agreed = torch.tensor([received], device=args.device)
            torch.distributed.all_reduce(agreed, op=torch.distributed.ReduceOp.MAX)
            received = int(agreed.item())
        if received and state.global_step < state.max_steps:
            self.stopped_by = signal.Signals(received).name
            control.should_save = control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        self.previous = {}
