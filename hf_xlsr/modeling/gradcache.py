# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""GradCache (Gao, Zhang, Han and Callan, 2021) inside a model's forward: a loss over a large batch at the activation
memory of one mini-batch, with the same loss and gradients as the whole batch at once.

1. every mini-batch of rows is embedded without gradient, the random state of each forward kept (dropout);
2. the loss is computed on those embeddings and its gradient with respect to them is kept (the cache);
3. when the trainer back-propagates the loss, a hook embeds each mini-batch again, with gradient and the same random
   state, and back-propagates the cached gradient from it.

sentence-transformers' ``CachedLossMixin`` does the same for a loss whose trainer hands it the
``DistributedDataParallel`` wrapper, so it can open ``no_sync`` around all but the last mini-batch. A model's forward
never sees that wrapper; here the first mini-batches' parameter gradients are summed with ``torch.autograd.grad``
(which fires no DDP hook) and the last mini-batch's backward carries them, so each parameter receives one gradient
per backward, as DDP expects. Only torch is imported (``trust_remote_code``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.utils.checkpoint import get_device_states, set_device_states

from .distributed import distributed


class RandomState:
    """The CPU and device random states at construction, restored inside ``with`` (and the outer ones after)."""

    def __init__(self, *tensors: torch.Tensor):
        self.cpu = torch.get_rng_state()
        self.devices, self.states = get_device_states(*tensors)

    def __enter__(self) -> None:
        self._fork = torch.random.fork_rng(devices=self.devices)
        self._fork.__enter__()
        torch.set_rng_state(self.cpu)
        set_device_states(self.devices, self.states)

    def __exit__(self, *exc) -> None:
        self._fork.__exit__(*exc)


def row_ranges(rows: int, size: int) -> list[tuple[int, int]]:
    """``[(begin, end), ...]`` of ``rows`` rows in mini-batches of ``size``."""
    return [(begin, min(begin + size, rows)) for begin in range(0, rows, size)]


def embed_without_gradient(
    embed: Callable[[int, int], torch.Tensor], ranges: Sequence[tuple[int, int]], like: torch.Tensor
) -> tuple[torch.Tensor, list[RandomState]]:
    """Step 1 for one column: ``embed(begin, end)`` of every range without gradient, as one leaf tensor that
    requires a gradient, and the random state before each mini-batch (``like``: a tensor on the device)."""
    parts, states = [], []
    with torch.no_grad():
        for begin, end in ranges:
            states.append(RandomState(like))
            parts.append(embed(begin, end))
    return torch.cat(parts).requires_grad_(), states


def cache_gradients(
    loss: torch.Tensor,
    columns: Sequence[tuple[Callable[[int, int], torch.Tensor], torch.Tensor, list[tuple[int, int]], list]],
    parameters: Sequence[torch.nn.Parameter],
) -> torch.Tensor:
    """Steps 2 and 3: ``loss``'s gradient with respect to each column's embeddings (``(embed, leaf, ranges,
    states)`` of `embed_without_gradient`) is kept, and the returned loss (the same value, detached) carries a hook
    that replays every mini-batch with gradient and back-propagates the kept gradient into ``parameters``, scaled
    by the gradient the trainer hands the loss (accumulation, loss scaling). The replay runs under the autocast
    that was open here: the trainer's ``bf16=True`` autocasts the forward, not the backward that runs the hook."""
    cached = torch.autograd.grad(loss, [leaf for _, leaf, _, _ in columns])
    trainable = [p for p in parameters if p.requires_grad]
    carried = distributed()  # under DDP: one backward per parameter, the last mini-batch's
    device = loss.device.type
    precision = torch.autocast(
        device, dtype=torch.get_autocast_dtype(device), enabled=torch.is_autocast_enabled(device)
    )

    def replay(grad_output: torch.Tensor) -> None:
        sums: list[torch.Tensor | None] = [None] * len(trainable)
        steps = [
            (embed, grad, r, s)
            for (embed, _, ranges, states), grad in zip(columns, cached, strict=True)
            for r, s in zip(ranges, states, strict=True)
        ]
        with torch.enable_grad():
            for index, (embed, grad, (begin, end), state) in enumerate(steps):
                with state, precision:
                    reps = embed(begin, end)
                surrogate = torch.dot(reps.flatten().float(), grad[begin:end].flatten().float()) * grad_output
                if carried and index < len(steps) - 1:
                    parts = torch.autograd.grad(surrogate, trainable, allow_unused=True)
                    sums = [s if g is None else g if s is None else s + g for s, g in zip(sums, parts, strict=True)]
                    continue
                if carried:  # every weight gets a gradient, zero where the loss does not reach it (an unused pooler)
                    pairs = zip(trainable, sums, strict=True)
                    surrogate = surrogate + sum(p.sum() * 0 if s is None else (p * s).sum() for p, s in pairs)
                surrogate.backward()

    loss = loss.detach().requires_grad_()
    loss.register_hook(replay)
    return loss


__all__ = ["RandomState", "cache_gradients", "embed_without_gradient", "row_ranges"]
