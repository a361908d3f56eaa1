# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The momentum (EMA) copy of a module and its update (MoCo-BERT, Eq. 1), in float32 whatever the precision the live
module trains in. Only torch is imported (``trust_remote_code``)."""

from __future__ import annotations

import copy

import torch
from torch import nn

TOKENIZER_ATTRIBUTES = ("tokenizer", "processor")  # where sentence-transformers' modules keep their tokenizer


def momentum_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` to update by EMA. Its copies of the trainable parameters are float32 *buffers*: the EMA
    needs float32, and a mixed-precision engine casts every parameter of the model it wraps (DeepSpeed's bf16 and
    fp16 do), not its buffers. Frozen parameters (the base weights under LoRA) are shared, not copied, since their
    EMA is themselves. Never an alias of a trainable tensor. A submodule's tokenizer (``TOKENIZER_ATTRIBUTES``) is
    shared too: the copy is given token ids, never text, and a tokenizer of a 250,000-piece vocabulary (XLM-R's, as
    in multilingual-e5) is about 270 MB of Python objects."""
    shared = {id(p): p for p in module.parameters() if not p.requires_grad}
    for submodule in module.modules():
        for name in TOKENIZER_ATTRIBUTES:
            tokenizer = vars(submodule).get(name)
            if tokenizer is not None:
                shared[id(tokenizer)] = tokenizer
    copied = copy.deepcopy(module, memo=shared)
    for submodule in copied.modules():
        for name, parameter in list(submodule._parameters.items()):
            if parameter is not None and id(parameter) not in shared:
                del submodule._parameters[name]
                submodule.register_buffer(name, parameter.detach().float())
    return copied


def momentum_pairs(target: nn.Module, source: nn.Module) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """``(name, momentum tensor, live parameter)`` for every parameter of ``source``: ``target`` (a
    `momentum_copy`) holds it as a buffer of the same name, or shares the very tensor (frozen weights)."""
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
    Eq. 1) that ``target`` (a `momentum_copy`) does not share with it, in float32: the target must hold
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
