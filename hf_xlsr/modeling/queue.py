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

import copy
import logging
import warnings
from collections.abc import Mapping

import torch
import torch.distributed as dist
from torch import nn
from transformers import initialization as init

from .losses import ContrastiveTerms, info_nce
from .pooling import l2_normalize

logger = logging.getLogger(__name__)


class HostIntegers:
    """Integer buffers (pointers, counters) whose values a module also keeps on the host, so that reading them never
    waits for the device. A value is read from the device again only when its buffer changed behind the module's
    back (a checkpoint loaded into it, a move to another device)."""

    def _host_value(self, name: str) -> int:
        tensor, cache = getattr(self, name), self.__dict__.setdefault("_host", {})
        stamp = (id(tensor), tensor._version)
        if name not in cache or cache[name][0] != stamp:
            cache[name] = (stamp, int(tensor))  # one device read, after a load or a move only
        return cache[name][1]

    def _set_host_value(self, name: str, value: int) -> None:
        tensor = getattr(self, name)
        tensor.fill_(value)  # on the device, without waiting for it
        self.__dict__.setdefault("_host", {})[name] = ((id(tensor), tensor._version), value)


class MemoryQueue(HostIntegers, nn.Module):
    """A first-in-first-out queue of the ``size`` most recent keys (He et al., 2020), stored as buffers.

    ``keys`` is written circularly from ``ptr``; ``filled`` counts the slots written so far (at most ``size``).
    Because writing starts at slot 0 and never skips a slot, the valid entries are always ``keys[:filled]``.
    ``ids`` holds the meaning id of each key (-1 when unknown), so that a loss can leave out queued keys of the
    query's own meaning (its translations in any language). All four buffers are saved with the model, so a
    checkpoint resumes with the exact queue it stopped with.

    Writes since the last :meth:`commit` can be undone with :meth:`rollback` (a skipped optimizer step).
    """

    def __init__(self, size: int, dim: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        if size < 1 or dim < 1:
            raise ValueError(f"queue size and key dimension must be positive, got size={size}, dim={dim}")
        self.register_buffer("keys", torch.zeros(size, dim, dtype=dtype))
        self.register_buffer("ids", torch.full((size,), -1, dtype=torch.long))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        self._undo: list[tuple] = []  # (slots, their old keys, their old ids, old ptr, old filled), oldest first
        self._undo_rows = 0

    @property
    def size(self) -> int:
        return self.keys.shape[0]

    def __len__(self) -> int:
        """The number of valid keys (``filled``), read on the host."""
        return self._host_value("filled")

    def negatives(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The valid keys ``(filled, dim)`` in their storage dtype and their ids ``(filled,)``: views, not copies.

        Scoring goes through :func:`~hf_xlsr.modeling.losses.queue_logsumexp`, which keeps no reference to them
        for the backward pass, so a later enqueue in the same step cannot change a gradient.
        """
        filled = len(self)
        return self.keys[:filled], self.ids[:filled]

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor, ids: torch.Tensor | None = None) -> None:
        """Write ``keys`` (``(n, dim)``) and their meaning ``ids`` from ``ptr`` on, wrapping around; of a batch
        longer than the queue the newest stay."""
        if keys.shape[-1] != self.keys.shape[1]:
            raise ValueError(
                f"keys of dimension {keys.shape[-1]} cannot enter a queue of dimension {self.keys.shape[1]}"
            )
        n, start, filled = keys.shape[0], self._host_value("ptr"), len(self)
        # Key j of the batch belongs in slot (start + j) % size; of a batch longer than the queue only the last
        # `size` keys survive, in the slots they would have reached, so the oldest key is always at the new ptr.
        kept = min(n, self.size)
        slots = (start + torch.arange(n - kept, n, device=self.keys.device)) % self.size
        if self._undo_rows + kept <= self.size:  # beyond that the whole queue changed: the step cannot be undone
            self._undo.append((slots, self.keys[slots].clone(), self.ids[slots].clone(), start, filled))
            self._undo_rows += kept
        else:
            self._undo, self._undo_rows = [None], self.size + 1
        self.keys[slots] = keys.detach()[n - kept :].to(self.keys.dtype)
        self.ids[slots] = -1 if ids is None else ids[n - kept :].to(self.ids)
        self._set_host_value("ptr", (start + n) % self.size)
        self._set_host_value("filled", min(self.size, filled + n))

    def commit(self) -> None:
        """Forget the undo record: the keys written so far stay (called after a good optimizer step)."""
        self._undo, self._undo_rows = [], 0

    @torch.no_grad()
    def rollback(self) -> bool:
        """Undo every write since the last :meth:`commit`; False when they overwrote more than the whole queue
        and could not be recorded (the queue is then emptied, which is always a valid state)."""
        if self._undo and self._undo[0] is None:
            self.reset()
            return False
        for slots, old_keys, old_ids, ptr, filled in reversed(self._undo):
            self.keys[slots], self.ids[slots] = old_keys, old_ids
            self._set_host_value("ptr", ptr)
            self._set_host_value("filled", filled)
        self.commit()
        return True

    @torch.no_grad()
    def reset(self) -> None:
        self.keys.zero_()
        self.ids.fill_(-1)
        self._set_host_value("ptr", 0)
        self._set_host_value("filled", 0)
        self.commit()


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


def momentum_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` to update by EMA. Its copies of the trainable parameters are float32 *buffers*: the EMA
    needs float32, and a mixed-precision engine casts every parameter of the model it wraps (DeepSpeed's bf16 and
    fp16 do), not its buffers. Frozen parameters (the base weights under LoRA) are shared, not copied, since their
    EMA is themselves. Never an alias of a trainable tensor."""
    shared = {id(p): p for p in module.parameters() if not p.requires_grad}
    copied = copy.deepcopy(module, memo=shared)
    for submodule in copied.modules():
        for name, parameter in list(submodule._parameters.items()):
            if parameter is not None and id(parameter) not in shared:
                del submodule._parameters[name]
                submodule.register_buffer(name, parameter.detach().float())
    return copied


def momentum_pairs(target: nn.Module, source: nn.Module) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """``(name, momentum tensor, live parameter)`` for every parameter of ``source``: ``target`` (a
    :func:`momentum_copy`) holds it as a buffer of the same name, or shares the very tensor (frozen weights)."""
    tensors = {**dict(target.named_parameters(remove_duplicate=False)), **dict(target.named_buffers())}
    pairs = []
    for name, s in source.named_parameters(remove_duplicate=False):
        t = tensors.get(name)
        if t is None or t.shape != s.shape:
            raise ValueError(f"momentum encoder and query encoder do not have the same parameters ({name})")
        pairs.append((name, t, s))
    return pairs


@torch.no_grad()
def ema_update_(target: nn.Module, source: nn.Module, momentum: float) -> None:
    """``theta_target <- m * theta_target + (1 - m) * theta_source`` for every parameter of ``source`` (MoCo-BERT,
    Eq. 1) that ``target`` (a :func:`momentum_copy`) does not share with it, in float32: the target must hold
    float32 weights, since with ``1 - m = 0.001`` a bfloat16 weight would keep only a few percent of each update.
    A source in a lower precision (a mixed-precision engine's compute copy) is read as float32."""
    pairs = [(t, s.detach()) for _, t, s in momentum_pairs(target, source) if t is not s]
    low = sorted({str(t.dtype) for t, _ in pairs if t.dtype not in (torch.float32, torch.float64)})
    if low:
        raise ValueError(
            f"the momentum encoder holds {', '.join(low)} weights: an EMA with 1 - m = {1 - momentum:g} in that "
            "precision loses most of each update. Keep the model's weights in float32 and train in mixed precision "
            "(TrainingArguments(bf16=True) or fp16=True autocast the forward pass; the EMA stays in float32)."
        )
    if pairs:
        sources = [s if s.dtype == t.dtype else s.to(t.dtype) for t, s in pairs]
        torch._foreach_lerp_([t for t, _ in pairs], sources, 1.0 - momentum)


def distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_rows(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate ``tensor`` ``(n, ...)`` from every process in rank order (unequal ``n`` allowed): one collective
    for the row counts, one for the rows. Without several processes this returns ``tensor`` itself. The result
    carries no gradient."""
    if not distributed():
        return tensor
    world_size = dist.get_world_size()
    count = torch.tensor([tensor.shape[0]], device=tensor.device)
    counts = [torch.zeros_like(count) for _ in range(world_size)]
    dist.all_gather(counts, count)
    counts = [int(n) for n in counts]
    padded = tensor.new_zeros((max(counts), *tensor.shape[1:]))
    padded[: tensor.shape[0]] = tensor.detach()
    gathered = [torch.empty_like(padded) for _ in range(world_size)]
    dist.all_gather(gathered, padded)
    return torch.cat([part[:n] for part, n in zip(gathered, counts, strict=True)])


def keep_momentum_state_out_of_ddp(model: nn.Module) -> None:
    """Tell ``DistributedDataParallel`` to leave ``model.momentum_contrast`` (momentum weights, queues, counters)
    alone. DDP broadcasts every buffer from rank 0 before each forward by default, which would send every queue
    (2.5 GB at the paper's size) and the momentum weights at every step; every process computes the same ones, so
    nothing needs sending. Called by each model with a momentum encoder at construction."""
    names = [f"momentum_contrast.{name}" for name, _ in model.momentum_contrast.named_buffers()]
    names += [f"momentum_contrast.{name}" for name, _ in model.momentum_contrast.named_parameters()]
    nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, names)


class MomentumContrast(HostIntegers, nn.Module):
    """An EMA copy of the modules that make a sentence vector, a memory queue of that copy's keys per side of the
    pairs (``x``: source sentences, ``y``: their translations; keys of every language of a side share its queue),
    and the counters that tell whether the EMA is really running.

    A model holds one and calls :meth:`enqueue` in its forward pass; the trainer's ``MomentumCallback`` calls the
    model's ``momentum_update`` once per optimizer step (a custom training loop must call
    ``model.momentum_update()`` after each ``optimizer.step()``). If keys keep being enqueued while no EMA update
    has ever run, the queue would fill with keys of a frozen encoder: :meth:`enqueue` warns once (``strict=False``)
    or raises (``strict=True``). ``sides`` names the queues a loss reads (``("y",)``: only the translations' keys).

    Everything is model state: saved with checkpoints, restored on resume, left out of exports.
    """

    def __init__(
        self,
        modules: Mapping[str, nn.Module],
        queue_size: int,
        dim: int,
        dtype: torch.dtype = torch.float32,
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
    """The momentum methods of everything that holds a :class:`MomentumContrast` as ``self.momentum_contrast``
    (None when it has none): the models and :class:`hf_xlsr.losses.MomentumQueueLoss`.

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

    @torch.no_grad()
    def momentum_keys(self, *inputs, **options) -> torch.Tensor:
        """L2-normalised keys of the momentum modules, without gradient, in the compute dtype of the live ones:
        their weights are float32, and under an engine that casts the live weights to bfloat16 (DeepSpeed) the
        momentum forward runs under autocast to that dtype."""
        live = next((p for m in self._key_modules().values() for p in m.parameters() if p.is_floating_point()), None)
        device = live.device.type if live is not None else "cpu"
        low = live is not None and live.dtype in (torch.float16, torch.bfloat16)
        enabled = low and not torch.is_autocast_enabled(device)
        with torch.autocast(device, dtype=live.dtype if low else torch.bfloat16, enabled=enabled):
            return l2_normalize(self._key_vector(self.momentum_contrast.momentum, *inputs, **options))


class QueuedNegativesMixin(MomentumMixin):
    """hf_xlsr's queue extension for a model whose paper uses in-batch negatives (``config.queue_size`` > 0,
    ``config.queue_momentum``, ``config.queue_temperature``).

    With a queue, the paper's in-batch loss is replaced by its MoCo-consistent form (:meth:`_queued_contrast`):
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
        """``L(x -> y) + L(y -> x)`` of :func:`~hf_xlsr.modeling.losses.info_nce`, then the keys are queued.

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
