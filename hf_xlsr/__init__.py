# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""hf_xlsr: cross-lingual sentence representations for the Hugging Face ecosystem.

Importing the package registers every model with ``AutoConfig`` / ``AutoModel``.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .modeling import (
    CmlmConfig,
    CmlmModel,
    CmlmOutput,
    DualMomentumConfig,
    DualMomentumModel,
    DualMomentumOutput,
    HictlConfig,
    HictlForPreTraining,
    HictlForTranslation,
    HictlOutput,
    HictlTranslationConfig,
    LightweightDualTransformer,
    LightweightDualTransformerConfig,
    LightweightDualTransformerOutput,
)

__version__ = "0.2.0"

for _config, _model in (
    (DualMomentumConfig, DualMomentumModel),
    (CmlmConfig, CmlmModel),
    (HictlConfig, HictlForPreTraining),
    (LightweightDualTransformerConfig, LightweightDualTransformer),
):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModel.register(_config, _model, exist_ok=True)
AutoConfig.register(HictlTranslationConfig.model_type, HictlTranslationConfig, exist_ok=True)
AutoModelForSeq2SeqLM.register(HictlTranslationConfig, HictlForTranslation, exist_ok=True)

__all__ = [
    "CmlmConfig",
    "CmlmModel",
    "CmlmOutput",
    "DualMomentumConfig",
    "DualMomentumModel",
    "DualMomentumOutput",
    "HictlConfig",
    "HictlForPreTraining",
    "HictlForTranslation",
    "HictlOutput",
    "HictlTranslationConfig",
    "LightweightDualTransformer",
    "LightweightDualTransformerConfig",
    "LightweightDualTransformerOutput",
    "__version__",
]
