# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Keys from every process: the one gather a queue makes per micro-batch, and keeping the momentum state out of
``DistributedDataParallel``'s buffer broadcast. Only torch is imported (``trust_remote_code``)."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn


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
