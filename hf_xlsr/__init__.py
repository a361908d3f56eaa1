# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""hf_xlsr: cross-lingual sentence representations for the Hugging Face ecosystem.

Importing the package registers every model type (`hf_xlsr.registry`) with ``AutoConfig`` / ``AutoModel``.
"""

from . import model_types  # noqa: F401  (registers the model types with the Auto classes)
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
from .registry import MODEL_TYPES, ModelType, register_model_type

__version__ = "0.2.0"

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
    "MODEL_TYPES",
    "ModelType",
    "__version__",
    "register_model_type",
]
