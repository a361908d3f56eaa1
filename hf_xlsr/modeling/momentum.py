# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Momentum-contrast machinery: a memory queue of keys, the EMA update, the cross-process gather, the scoring of
queries against a queue in blocks, and the momentum methods every model with a momentum encoder shares.

These are model state and model operations; *when* they run is the trainer's business (see
``hf_xlsr.trainers.callbacks``). Only torch is imported so that checkpoints pushed with their code load through
``trust_remote_code``.

The rules every model with a queue follows (MoCo, He et al., 2020; MoCo-BERT, Wang et al., 2021):

* keys come from the momentum (EMA) copy of the encoder, without gradient, in eval mode, L2-normalised; a loss that
  uses a queue takes its positive, its in-batch keys and its queued keys from that one encoder;
* keys enter the queue once per micro-batch, in training with gradients enabled, gathered from every process;
  a micro-batch whose loss or keys are not finite enqueues nothing;
* each key carries the id of its example's meaning (``example_ids``: for the Bible, the verse), shared by all the
  translations of that meaning, so that no translation of a query, in any language, is ever its negative;
* the EMA runs once per optimizer step (``momentum_update``), in float32, and commits that step's keys; a skipped
  optimizer step (fp16 overflow, non-finite gradients) runs ``discard_momentum_step`` instead, which takes the
  step's keys back out of the queues, so a skipped step leaves no trace;
* a queue starts empty and only written slots are negatives. On the very first step of MoCo-BERT, whose loss has
  no in-batch negatives, the loss is therefore exactly 0 and gives no gradient: that step only fills the queue.
  MoCo's reference code fills the queue with random unit vectors instead; those are not sentences, and would be
  counted as negatives in the accuracy and the similarity statistics, so hf_xlsr does not.

On a GPU every read of a tensor's value by Python waits for the device. Queue pointers and counters are therefore
kept on the host too (they are deterministic): a training step reads one value from the device, whether the keys
it queues are finite, and gathers the keys of every process in one collective (after one for the batch sizes).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Mapping

import torch
from torch import nn
from transformers import initialization as init

from .distributed import gather_rows
from .ema import ema_update_, momentum_copy
from .functional import ContrastiveTerms, info_nce
from .pooling import l2_normalize
from .queue import HostIntegers, MemoryQueue

logger = logging.getLogger(__name__)


@torch.no_grad()
def init_momentum_state(module: nn.Module) -> None:
    """For a model's ``_init_weights``: empty queues and zero counters (checkpoints overwrite them)."""
    if isinstance(module, MemoryQueue):
        init.zeros_(module.keys)
        init.constant_(module.ids, -1)
        init.zeros_(module.ptr)
        init.zeros_(module.filled)
    elif isinstance(module, MomentumContrast):
        init.zeros_(module.momentum_updates)
        init.zeros_(module.skipped_steps)
        init.zeros_(module.enqueues)


class MomentumContrast(HostIntegers, nn.Module):
    """An EMA copy of the modules that make a sentence vector, a memory queue of that copy's keys per side of the
    pairs (``x``: source sentences, ``y``: their translations; keys of every language of a side share its queue),
    and the counters that tell whether the EMA is really running.

    A model holds one and calls `enqueue` in its forward pass; the trainer's ``MomentumCallback`` calls the
    model's ``momentum_update`` once per optimizer step (a custom training loop must call
    ``model.momentum_update()`` after each ``optimizer.step()``). If keys keep being enqueued while no EMA update
    has ever run, the queue would fill with keys of a frozen encoder: `enqueue` warns once (``strict=False``)
    or raises (``strict=True``). ``sides`` names the queues a loss reads (``("y",)``: only the translations' keys).

    Everything is model state: saved with checkpoints, restored on resume, left out of exports.
    """

    def __init__(
        self,
        modules: Mapping[str, nn.Module],
        queue_size: int,
        dim: int,
        dtype: torch.dtype | str = "auto",
        strict: bool = False,
        sides: tuple[str, ...] = ("x", "y"),
    ):
        super().__init__()
        self.strict = strict
        self.momentum = nn.ModuleDict({name: momentum_copy(m).eval() for name, m in modules.items()})
        self.queue_x = MemoryQueue(queue_size, dim, dtype) if "x" in sides else None
        self.queue_y = MemoryQueue(queue_size, dim, dtype) if "y" in sides else None
        self.register_buffer("momentum_updates", torch.zeros((), dtype=torch.long))  # EMA updates (good steps)
        self.register_buffer("skipped_steps", torch.zeros((), dtype=torch.long))  # optimizer steps discarded
        self.register_buffer("enqueues", torch.zeros((), dtype=torch.long))  # micro-batches enqueued
        self.enqueues_per_update = 1  # micro-batches per optimizer step; MomentumCallback sets it
        self._warned = False

    def train(self, mode: bool = True) -> MomentumContrast:
        super().train(mode)
        self.momentum.eval()  # keys without dropout
        return self

    def queues(self) -> list[MemoryQueue]:
        return [queue for queue in (self.queue_x, self.queue_y) if queue is not None]

    @property
    def queue_size(self) -> int:
        return self.queues()[0].size

    def fill(self) -> torch.Tensor:
        """The share of the queue's slots written so far (logged as ``queue_fill``)."""
        queue = self.queues()[-1]
        return queue.filled.float() / queue.size

    @torch.no_grad()
    def synchronize(self, modules: Mapping[str, nn.Module]) -> None:
        """Make every momentum module an exact copy of its live module (at construction, after loading
        adapters); not an optimizer step, so no counter moves."""
        for name, module in modules.items():
            ema_update_(self.momentum[name], module, 0.0)

    @torch.no_grad()
    def update(self, modules: Mapping[str, nn.Module], momentum: float) -> None:
        """EMA of every momentum module towards its live module, then the step's keys are committed."""
        for name, module in modules.items():
            ema_update_(self.momentum[name], module, momentum)
        for queue in self.queues():
            queue.commit()
        self._set_host_value("momentum_updates", self._host_value("momentum_updates") + 1)

    @torch.no_grad()
    def discard_step(self) -> None:
        """A skipped optimizer step: no EMA, and the keys it enqueued leave the queues again."""
        for queue in self.queues():
            queue.rollback()
        self._set_host_value("skipped_steps", self._host_value("skipped_steps") + 1)

    def enqueue(
        self,
        keys_x: torch.Tensor | None,
        keys_y: torch.Tensor | None,
        ids: torch.Tensor | None = None,
        loss: torch.Tensor | None = None,
    ) -> bool:
        """Queue the batch's keys of every process (``keys_x`` into ``queue_x``, ``keys_y`` into ``queue_y``, with
        the rows' meaning ``ids``), in training with gradients only (checked here, before any no-grad context of the
        caller's own). Nothing is queued when the loss or a key is not finite. Returns whether the keys were queued.

        The keys, the ids and the finiteness of each process travel in one tensor, gathered at once.
        """
        if not (self.training and torch.is_grad_enabled()):
            return False
        parts = [keys for keys in (keys_x, keys_y) if keys is not None]
        n = parts[0].shape[0]
        finite = torch.stack([torch.isfinite(keys).all() for keys in parts]).all()
        if loss is not None:
            finite = finite & torch.isfinite(loss).all()
        ids = torch.full((n,), -1, dtype=torch.long, device=parts[0].device) if ids is None else ids.long()
        # one row per example: its keys as float32, its id's 64 bits as two float32 columns, the finite flag
        columns = [keys.float() for keys in parts]
        columns += [ids.reshape(n, 1).view(torch.float32), finite.float().expand(n, 1)]
        rows = gather_rows(torch.cat(columns, dim=1))
        if not bool(rows[:, -1].min() > 0):  # the one value a step reads from the device: all processes alike
            step = self._host_value("momentum_updates") + self._host_value("skipped_steps") + 1
            logger.warning("optimizer step %d: the loss or the momentum keys are not finite; nothing was queued", step)
            return False
        # a fresh (n, 2) tensor: a one-row slice counts as contiguous but keeps the row's stride, which view refuses
        all_ids = torch.stack([rows[:, -3], rows[:, -2]], dim=1).view(torch.long).reshape(-1)
        start = 0
        for keys, queue in zip((keys_x, keys_y), (self.queue_x, self.queue_y), strict=True):
            if keys is not None:
                dim = keys.shape[1]
                queue.enqueue(rows[:, start : start + dim], all_ids)
                start += dim
        enqueues = self._host_value("enqueues") + 1
        self._set_host_value("enqueues", enqueues)
        if self._host_value("momentum_updates") == 0 and enqueues > self.enqueues_per_update and not self._warned:
            self._warned = True
            message = (
                f"keys have been enqueued {enqueues} times but the momentum encoder has never been "
                "updated: the queue is filling with keys of a frozen copy. Train with hf_xlsr's XlsrTrainer (its "
                "MomentumCallback runs the EMA), pass hf_xlsr.trainers.MomentumCallback() to your Trainer, or call "
                "model.momentum_update() after every optimizer.step() in your own loop."
            )
            if self.strict:
                raise RuntimeError(message)
            warnings.warn(message, stacklevel=3)
        return True


class MomentumMixin:
    """The momentum methods of everything that holds a `MomentumContrast` as ``self.momentum_contrast``
    (None when it has none): the models and `hf_xlsr.losses.MomentumQueueLoss`.

    The owner provides ``momentum_coefficient`` (the EMA's m, None without a momentum encoder), ``_key_modules()``
    (the live modules the momentum copies follow, by name) and ``_key_vector(modules, *inputs)`` (the sentence vector
    that those modules, live or momentum, make of the inputs), so that keys and queries are the same function of
    their weights.
    """

    momentum_contrast: MomentumContrast | None

    @torch.no_grad()
    def momentum_update(self, momentum: float | None = None) -> None:
        """Eq. 1 for every momentum module, ``theta_k <- m * theta_k + (1 - m) * theta_q``, in float32; call it
        once after every optimizer step (``MomentumCallback`` does)."""
        if self.momentum_contrast is not None:
            m = self.momentum_coefficient if momentum is None else momentum
            self.momentum_contrast.update(self._key_modules(), m)

    @torch.no_grad()
    def discard_momentum_step(self) -> None:
        """The optimizer step was skipped: no EMA, and the keys of its micro-batches leave the queues."""
        if self.momentum_contrast is not None:
            self.momentum_contrast.discard_step()

    @torch.no_grad()
    def synchronize_momentum_encoder(self) -> None:
        """Restart the momentum modules as exact copies of the live ones."""
        if self.momentum_contrast is not None:
            self.momentum_contrast.synchronize(self._key_modules())

    key_autocast: torch.dtype | None = None  # the trainer's bf16 / fp16 when it autocasts the live forward only

    @torch.no_grad()
    def momentum_keys(self, *inputs, **options) -> torch.Tensor:
        """L2-normalised keys of the momentum modules, without gradient, in the compute precision of the live ones.

        The momentum weights are float32. An autocast that the caller opened (the Trainer's ``bf16=True`` around
        the model's forward) stays as it is, so the keys are computed in its dtype; without one, the momentum
        forward runs under autocast to the live weights' dtype when an engine cast them to bfloat16 / float16
        (DeepSpeed), or to ``key_autocast`` when the owner's trainer autocasts only the live model's forward
        (``MomentumQueueLoss`` under ``SentenceTransformerTrainer(bf16=True)``).
        """
        live = next((p for m in self._key_modules().values() for p in m.parameters() if p.is_floating_point()), None)
        device = live.device.type if live is not None else "cpu"
        dtype = live.dtype if live is not None and live.dtype in (torch.float16, torch.bfloat16) else self.key_autocast
        context = contextlib.nullcontext()
        if dtype is not None and not torch.is_autocast_enabled(device):
            context = torch.autocast(device, dtype=dtype)
        with context:
            return l2_normalize(self._key_vector(self.momentum_contrast.momentum, *inputs, **options))


class QueuedNegativesMixin(MomentumMixin):
    """hf_xlsr's queue extension for a model whose paper uses in-batch negatives (``config.queue_size`` > 0,
    ``config.queue_momentum``, ``config.queue_temperature``).

    With a queue, the paper's in-batch loss is replaced by its MoCo-consistent form (`_queued_contrast`):
    live queries against keys of the momentum encoder only (the positive, the in-batch negatives and the queued
    negatives), all L2-normalised and scored by cosine / ``queue_temperature``. Mixing live positives with stale
    queued keys would let the model tell the two encoders apart instead of the sentences.
    """

    @property
    def momentum_coefficient(self) -> float | None:
        """The EMA coefficient, or None without a queue (then the trainer schedules no momentum update)."""
        return self.config.queue_momentum if self.config.queue_size else None

    def _queued_contrast(
        self,
        queries_x: torch.Tensor,
        queries_y: torch.Tensor,
        keys_x: torch.Tensor,
        keys_y: torch.Tensor,
        example_ids: torch.Tensor | None = None,
        margin: float = 0.0,
        both_languages: bool = False,
    ) -> tuple[torch.Tensor, ContrastiveTerms]:
        """``L(x -> y) + L(y -> x)`` of `info_nce`, then the keys are queued.

        ``queries_*`` are the live encoder's L2-normalised vectors, ``keys_*`` the momentum encoder's. Each x query's
        positive is its translation's key; its negatives are the other y keys of the batch and the y queue, or with
        ``both_languages`` (HICTL's L_S) the other 2n - 2 keys of the batch and both queues. Keys of the query's own
        meaning (``example_ids``, in any language) are never negatives. Returns the loss and the x -> y terms
        (accuracy and similarities, for logging).
        """
        tau = self.config.queue_temperature
        contrast = self.momentum_contrast
        if both_languages:
            ids = None if example_ids is None else torch.cat([example_ids, example_ids])
            queues = [contrast.queue_x.negatives(), contrast.queue_y.negatives()]
            options = {"query_ids": example_ids, "key_ids": ids}
            n = len(queries_x)
            own = torch.zeros(n, 2 * n, dtype=torch.bool, device=queries_x.device)
            own[torch.arange(n), n + torch.arange(n)] = True  # the query's own key is not its negative
            xy = info_nce(queries_x, torch.cat([keys_y, keys_x]), tau, queues, exclude=own, **options)
            yx = info_nce(queries_y, torch.cat([keys_x, keys_y]), tau, queues, exclude=own, **options)
        else:
            options = {"margin": margin, "query_ids": example_ids, "key_ids": example_ids}
            xy = info_nce(queries_x, keys_y, tau, [contrast.queue_y.negatives()], **options)
            yx = info_nce(queries_y, keys_x, tau, [contrast.queue_x.negatives()], **options)
        loss = xy.loss + yx.loss
        contrast.enqueue(keys_x, keys_y, example_ids, loss)
        return loss, xy

    def queue_statistics(self) -> dict[str, torch.Tensor]:
        """``{"queue_fill": ...}`` for a model's output when it has a queue, else nothing."""
        return {"queue_fill": self.momentum_contrast.fill()} if self.config.queue_size else {}
