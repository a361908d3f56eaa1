# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""hf_xlsr's model types, one `register_model_type` entry each: its classes, how a run builds, reads and collates it
(``"module:function"``, imported when a run starts), its paper's training recipe (what a run takes where it sets
nothing itself: `XlsrTrainingArguments.from_paper`, ``hf-xlsr train``) and its model card. ``train_batch_size`` is
the paper's batch over all devices. Importing ``hf_xlsr`` runs this module."""

from __future__ import annotations

from transformers import AutoModelForSeq2SeqLM

from .modeling import (
    CmlmConfig,
    CmlmModel,
    DualMomentumConfig,
    DualMomentumModel,
    HictlConfig,
    HictlForPreTraining,
    HictlForTranslation,
    HictlTranslationConfig,
    LightweightDualTransformer,
    LightweightDualTransformerConfig,
)
from .registry import ModelType, register_model_type

BUILDERS = "hf_xlsr.trainers.builders"  # imported when a run needs them: importing hf_xlsr stays light

register_model_type(
    ModelType(
        name="xlsr_dual_momentum",
        config_class=DualMomentumConfig,
        model_class=DualMomentumModel,
        build=f"{BUILDERS}:build_dual_momentum",
        collator=f"{BUILDERS}:bitext_collator",
        # MoCo-BERT (Yang et al., 2021), Table 9: AdamW with cosine decay, 400 warm-up steps, clip 10
        paper_recipe={
            "learning_rate": 4e-5,
            "lr_scheduler_type": "cosine",
            "warmup_steps": 400,
            "max_grad_norm": 10.0,
            "weight_decay": 1e-4,
            "num_train_epochs": 15,
            "train_batch_size": 1024,
        },
        card="dual_momentum",
        old_names=("dual_momentum",),
    )
)
register_model_type(
    ModelType(
        name="xlsr_lightweight",
        config_class=LightweightDualTransformerConfig,
        model_class=LightweightDualTransformer,
        build=f"{BUILDERS}:build_lightweight",
        collator=f"{BUILDERS}:pair_masking_collator",
        collator_settings=("mlm_probability",),
        # The lightweight dual transformer (Mao et al., 2021), Section 4.1: Adam 1e-3, 12 epochs of which 3 warm up
        # (a warm-up below 1 is a share of training); the paper names no decay, inverse square root is assumed
        paper_recipe={
            "learning_rate": 1e-3,
            "lr_scheduler_type": "inverse_sqrt",
            "warmup_steps": 3 / 12,
            "weight_decay": 0.0,
            "max_grad_norm": 1.0,
            "num_train_epochs": 12,
            "train_batch_size": 128,
        },
        card="lightweight",
        old_names=("lightweight",),
    )
)
register_model_type(
    ModelType(
        name="xlsr_cmlm",
        config_class=CmlmConfig,
        model_class=CmlmModel,
        build=f"{BUILDERS}:build_cmlm",
        collator=f"{BUILDERS}:cmlm_collator",
        collator_settings=("mlm_probability", "mask_replace_prob", "random_replace_prob", "swap_probability"),
        train_data=f"{BUILDERS}:load_cmlm_data",
        # CMLM (Yang et al., 2021), Section 3: LAMB in the paper, AdamW here (transformers has no LAMB); its 2.5M
        # steps are not applied, as they would override a run's epochs
        paper_recipe={
            "learning_rate": 1e-3,
            "lr_scheduler_type": "linear",
            "warmup_steps": 10_000,
            "train_batch_size": 2048,
        },
        card="cmlm",
        old_names=("cmlm",),
    )
)
register_model_type(
    ModelType(
        name="xlsr_hictl",
        config_class=HictlConfig,
        model_class=HictlForPreTraining,
        build=f"{BUILDERS}:build_hictl",
        collator=f"{BUILDERS}:hictl_collator",
        collator_settings=("mlm_probability", "monolingual_probability", "perturbation", "perturbation_window"),
        # HICTL (Wei et al., 2021), Section 4.1: Adam, linear decay
        paper_recipe={"learning_rate": 2.5e-5, "lr_scheduler_type": "linear", "train_batch_size": 1024},
        card="hictl",
        exported_head="Dense",
        old_names=("hictl",),
    )
)
# HICTL's translation model (Section 3.3) loads and fine-tunes with transformers' seq2seq tools; hf-xlsr trains no
# such model
register_model_type(
    ModelType(
        name="xlsr_hictl_translation",
        config_class=HictlTranslationConfig,
        model_class=HictlForTranslation,
        auto_class=AutoModelForSeq2SeqLM,
    )
)
