# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""A memory queue of keys (He et al., 2020): the ``size`` most recent keys with their meaning ids, and the undo
record of the keys an optimizer step has not committed yet. Its pointers and counters are also kept on the host
(`HostIntegers`), so that reading them never waits for a GPU. Only torch is imported (``trust_remote_code``)."""

from __future__ import annotations

import torch
from torch import nn


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

    Writes since the last `commit` can be undone with `rollback` (a skipped optimizer step).

    ``dtype`` is the keys' storage; ``"auto"`` stores them in bfloat16 on a GPU (half the memory, scored by tensor
    cores with float32 accumulation) and in float32 elsewhere, following the queue's moves between devices.
    """

    def __init__(self, size: int, dim: int, dtype: torch.dtype | str = "auto"):
        super().__init__()
        if size < 1 or dim < 1:
            raise ValueError(f"queue size and key dimension must be positive, got size={size}, dim={dim}")
        self.auto_dtype = dtype == "auto"
        dtype = torch.float32 if self.auto_dtype else getattr(torch, dtype) if isinstance(dtype, str) else dtype
        self.register_buffer("keys", torch.zeros(size, dim, dtype=dtype))
        self.register_buffer("ids", torch.full((size,), -1, dtype=torch.long))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        self._undo: list[tuple] = []  # (slots, their old keys, their old ids, old ptr, old filled), oldest first
        self._undo_rows = 0

    def _apply(self, fn, recurse: bool = True):
        super()._apply(fn, recurse)
        if self.auto_dtype:
            wanted = torch.float32 if self.keys.device.type == "cpu" else torch.bfloat16
            if self.keys.dtype != wanted:
                self.keys = self.keys.to(wanted)
        return self

    @property
    def size(self) -> int:
        return self.keys.shape[0]

    def __len__(self) -> int:
        """The number of valid keys (``filled``), read on the host."""
        return self._host_value("filled")

    def negatives(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The valid keys ``(filled, dim)`` in their storage dtype and their ids ``(filled,)``: views, not copies.

        Scoring goes through `queue_logsumexp`, which keeps no reference to them
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
        """Undo every write since the last `commit`; False when they overwrote more than the whole queue
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
