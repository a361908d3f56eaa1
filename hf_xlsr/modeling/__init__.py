# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Models of hf_xlsr, one configuration_*.py + modeling_*.py pair per paper (transformers style).

Files here import only torch, transformers and each other (relative imports), so a checkpoint pushed with its
code loads through ``trust_remote_code`` where hf_xlsr is not installed.
"""

from .configuration_cmlm import CmlmConfig
from .configuration_dual_momentum import DualMomentumConfig
from .configuration_hictl import HictlConfig, HictlTranslationConfig
from .configuration_lightweight import LightweightDualTransformerConfig
from .modeling_cmlm import CmlmModel, CmlmOutput
from .modeling_dual_momentum import DualMomentumModel, DualMomentumOutput
from .modeling_hictl import HictlForPreTraining, HictlForTranslation, HictlOutput
from .modeling_lightweight import LightweightDualTransformer, LightweightDualTransformerOutput

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
]
