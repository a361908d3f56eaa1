"""Momentum-contrast machinery: a memory queue of keys, the EMA update, and the cross-process gather.

These are model state and model operations; *when* they run is the trainer's business (see
``hf_xlsr.trainers.callbacks``). Only torch is imported so that checkpoints pushed with their code load through
``trust_remote_code``.
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from torch import nn


class MemoryQueue(nn.Module):
    """A first-in-first-out queue of the ``size`` most recent keys (He et al., 2020), stored as buffers.

    ``keys`` is written circularly from ``ptr``; ``filled`` counts the slots written so far (at most ``size``).
    Because writing starts at slot 0 and never skips a slot, the valid entries are always ``keys[:filled]``:
    slots not yet written are never returned as negatives. All three buffers are saved with the model, so a
    checkpoint resumes with the exact queue it stopped with.
    """

    def __init__(self, size: int, dim: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        if size < 1 or dim < 1:
            raise ValueError(f"queue size and key dimension must be positive, got size={size}, dim={dim}")
        self.register_buffer("keys", torch.zeros(size, dim, dtype=dtype))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))

    @property
    def size(self) -> int:
        return self.keys.shape[0]

    def negatives(self) -> torch.Tensor:
        """A copy of the valid keys, shape ``(filled, dim)``.

        It is a copy so that enqueueing later in the same step does not modify a tensor autograd saved.
        """
        return self.keys[: int(self.filled)].clone()

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> None:
        """Write ``keys`` (``(n, dim)``) from ``ptr`` on, wrapping around; of a longer batch the newest stay."""
        if keys.shape[-1] != self.keys.shape[1]:
            raise ValueError(
                f"keys of dimension {keys.shape[-1]} cannot enter a queue of dimension {self.keys.shape[1]}"
            )
        n, start = keys.shape[0], int(self.ptr)
        # Key j of the batch belongs in slot (start + j) % size; of a batch longer than the queue only the last
        # `size` keys survive, in the slots they would have reached, so the oldest key is always at the new ptr.
        kept = min(n, self.size)
        slots = (start + torch.arange(n - kept, n, device=self.keys.device)) % self.size
        self.keys[slots] = keys.detach()[n - kept :].to(self.keys.dtype)
        self.ptr.fill_((start + n) % self.size)
        self.filled.fill_(min(self.size, int(self.filled) + n))

    @torch.no_grad()
    def reset(self) -> None:
        self.keys.zero_()
        self.ptr.zero_()
        self.filled.zero_()


def momentum_copy(module: nn.Module) -> nn.Module:
    """A frozen copy of ``module`` to update by EMA: trainable parameters are copied, frozen ones (the base weights
    under LoRA) are shared, not copied, since their EMA is themselves. Never an alias of a trainable tensor."""
    shared = {id(p): p for p in module.parameters() if not p.requires_grad}
    return copy.deepcopy(module, memo=shared).requires_grad_(False)


@torch.no_grad()
def ema_update_(target: nn.Module, source: nn.Module, momentum: float) -> None:
    """``theta_target <- m * theta_target + (1 - m) * theta_source`` for every parameter (MoCo-BERT, Eq. 1) that
    ``target`` does not share with ``source``."""
    targets, sources = list(target.parameters()), list(source.parameters())
    if len(targets) != len(sources) or any(t.shape != s.shape for t, s in zip(targets, sources, strict=True)):
        raise ValueError("momentum encoder and query encoder do not have the same parameters")
    pairs = [(t, s.detach()) for t, s in zip(targets, sources, strict=True) if t is not s]
    if pairs:
        torch._foreach_lerp_([t for t, _ in pairs], [s for _, s in pairs], 1.0 - momentum)


def gather_from_processes(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate ``tensor`` from every process in rank order (unequal first dimensions allowed).

    Without ``torch.distributed`` initialised this returns ``tensor`` itself. The result carries no gradient.
    """
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    world_size = dist.get_world_size()
    count = torch.tensor([tensor.shape[0]], device=tensor.device)
    counts = [torch.zeros_like(count) for _ in range(world_size)]
    dist.all_gather(counts, count)
    longest = int(max(counts))
    padded = tensor.new_zeros((longest, *tensor.shape[1:]))
    padded[: tensor.shape[0]] = tensor.detach()
    gathered = [torch.empty_like(padded) for _ in range(world_size)]
    dist.all_gather(gathered, padded)
    return torch.cat([part[: int(n)] for part, n in zip(gathered, counts, strict=True)])


class MomentumContrast(nn.Module):
    """The dual momentum model's machinery as a part other models reuse: an EMA copy of the modules that make a
    sentence vector, and one memory queue of that copy's keys per language.

    A model whose in-batch contrastive loss can take more negatives holds one (``config.queue_size > 0``): it
    computes keys with :attr:`momentum` (no gradient, eval mode), scores its queries against
    ``queue_x.negatives()`` / ``queue_y.negatives()`` too, then calls :meth:`enqueue`; the trainer's
    ``MomentumCallback`` calls ``model.momentum_update`` once per optimizer step. Everything is model state:
    saved with checkpoints, restored on resume, left out of exports.
    """

    def __init__(self, modules: dict[str, nn.Module], queue_size: int, dim: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.momentum = nn.ModuleDict({name: momentum_copy(m).eval() for name, m in modules.items()})
        self.queue_x = MemoryQueue(queue_size, dim, dtype)
        self.queue_y = MemoryQueue(queue_size, dim, dtype)

    def train(self, mode: bool = True) -> MomentumContrast:
        super().train(mode)
        self.momentum.eval()  # keys without dropout, as the dual momentum model's
        return self

    @torch.no_grad()
    def update(self, modules: dict[str, nn.Module], momentum: float) -> None:
        for name, module in modules.items():
            ema_update_(self.momentum[name], module, momentum)

    def enqueue(self, keys_x: torch.Tensor, keys_y: torch.Tensor) -> None:
        """Queue the batch's keys of every process, in training with gradients only (checked here, before any
        no-grad context of the caller's own)."""
        if self.training and torch.is_grad_enabled():
            self.queue_x.enqueue(gather_from_processes(keys_x))
            self.queue_y.enqueue(gather_from_processes(keys_y))


class QueuedNegativesMixin:
    """The momentum update of a model with an optional :class:`MomentumContrast` (``config.queue_size`` > 0,
    ``config.queue_momentum``, the modules of ``self._key_modules()``)."""

    @property
    def momentum_coefficient(self) -> float | None:
        """The EMA coefficient, or None without a queue (then the trainer schedules no momentum update)."""
        return self.config.queue_momentum if self.config.queue_size else None

    @torch.no_grad()
    def momentum_update(self, momentum: float | None = None) -> None:
        """EMA of the key encoder: ``theta_k <- m theta_k + (1 - m) theta_q``."""
        if self.config.queue_size:
            m = self.config.queue_momentum if momentum is None else momentum
            self.momentum_contrast.update(self._key_modules(), m)
