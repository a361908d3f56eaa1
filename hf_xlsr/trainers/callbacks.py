"""Trainer callbacks for momentum contrast: when the momentum encoders change."""

from __future__ import annotations

import logging
import math

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
    """Run the model's EMA update (``model.momentum_update(m)``) once per optimizer step.

    ``on_optimizer_step`` fires after ``optimizer.step()``, once per optimizer step whatever the gradient
    accumulation, so the momentum encoders see exactly one update per parameter update.
    """

    def __init__(self, schedule: str = "constant"):
        if schedule not in MOMENTUM_SCHEDULES:
            raise ValueError(f"momentum schedule must be one of {MOMENTUM_SCHEDULES}, got {schedule!r}")
        self.schedule = schedule

    def on_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None, **kwargs
    ) -> None:
        base = model.momentum_coefficient
        model.momentum_update(scheduled_momentum(base, state.global_step, state.max_steps, self.schedule))


class StageCallback(TrainerCallback):
    """Switch a multi-stage schedule (CMLM's S2 / S3) to its second stage at ``config.second_stage_step``.

    The model keeps its stage in a buffer, so a checkpoint resumes in the stage it stopped in.
    """

    def on_step_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None, **kwargs
    ) -> None:
        model.stage.fill_(2 if state.global_step >= model.config.second_stage_step else 1)


class EncoderFreezeCallback(TrainerCallback):
    """Two-stage fine-tuning (HICTL, Section 3.2): the encoder is frozen for ``config.encoder_frozen_steps``
    optimizer steps, only the decoder learning, then every parameter trains.

    The optimizer is built before training starts, with every parameter, so the encoder's parameters are in it and
    resume updating when they thaw; while frozen they have no gradient and the optimizer skips them.
    """

    def on_train_begin(self, args, state: TrainerState, control: TrainerControl, model=None, **kwargs) -> None:
        self._set(model, state.global_step)

    def on_step_begin(self, args, state: TrainerState, control: TrainerControl, model=None, **kwargs) -> None:
        self._set(model, state.global_step)

    @staticmethod
    def _set(model, step: int) -> None:
        model.encoder.requires_grad_(step >= model.config.encoder_frozen_steps)
