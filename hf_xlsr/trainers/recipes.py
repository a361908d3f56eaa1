# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The papers' training recipes, as ``TrainingArguments`` fields, by model type.

A model configuration holds the architecture and the method (what ``config.json`` reloads); how a paper trained the
model lives here, and a run takes it only where it sets nothing itself (`XlsrTrainingArguments.from_paper`,
``hf-xlsr train``). ``train_batch_size`` is the paper's batch over all devices; the batch per device is its share.
"""

from __future__ import annotations

PAPER_RECIPES: dict[str, dict[str, float | int | str]] = {
    # MoCo-BERT (Yang et al., 2021), Table 9: AdamW with cosine decay, 400 warm-up steps, clip 10
    "xlsr_dual_momentum": {
        "learning_rate": 4e-5,
        "lr_scheduler_type": "cosine",
        "warmup_steps": 400,
        "max_grad_norm": 10.0,
        "weight_decay": 1e-4,
        "num_train_epochs": 15,
        "train_batch_size": 1024,
    },
    # CMLM (Yang et al., 2021), Section 3: LAMB in the paper, AdamW here (transformers has no LAMB); its 2.5M steps
    # are not applied, as they would override a run's epochs
    "xlsr_cmlm": {
        "learning_rate": 1e-3,
        "lr_scheduler_type": "linear",
        "warmup_steps": 10_000,
        "train_batch_size": 2048,
    },
    # HICTL (Wei et al., 2021), Section 4.1: Adam, linear decay
    "xlsr_hictl": {"learning_rate": 2.5e-5, "lr_scheduler_type": "linear", "train_batch_size": 1024},
    # The lightweight dual transformer (Mao et al., 2021), Section 4.1: Adam 1e-3, 12 epochs of which 3 warm up (a
    # warm-up below 1 is a share of training); the paper names no decay, inverse square root is assumed
    "xlsr_lightweight": {
        "learning_rate": 1e-3,
        "lr_scheduler_type": "inverse_sqrt",
        "warmup_steps": 3 / 12,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "num_train_epochs": 12,
        "train_batch_size": 128,
    },
}


def paper_recipe(model_type: str, given=frozenset(), world_size: int = 1) -> dict[str, float | int | str]:
    """The paper's ``TrainingArguments`` values for a model type (``config.model_type``), less the fields in
    ``given``; the paper's total batch becomes ``per_device_train_batch_size``, its share of ``world_size``
    processes. ``{}`` for a model type without a recipe."""
    recipe = dict(PAPER_RECIPES.get(model_type, {}))
    total = recipe.pop("train_batch_size", None)
    values = {name: value for name, value in recipe.items() if name not in given}
    if total is not None and "per_device_train_batch_size" not in given:
        values["per_device_train_batch_size"] = max(1, total // world_size)
    return values


__all__ = ["PAPER_RECIPES", "paper_recipe"]
