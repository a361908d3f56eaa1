# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Training: the Trainer subclass, its callbacks, collators, run arguments and the run pipeline."""

from .arguments import DataArguments, ModelArguments
from .callbacks import EncoderFreezeCallback, MomentumCallback, StageCallback, scheduled_momentum
from .checks import ConfigFileError
from .collators import BitextCollator, CmlmCollator, HictlCollator, PairMaskingCollator
from .config_file import parse_run_arguments
from .run import load_pairs, run_training
from .trainer import XlsrTrainer, XlsrTrainingArguments

__all__ = [
    "BitextCollator",
    "CmlmCollator",
    "HictlCollator",
    "ConfigFileError",
    "DataArguments",
    "EncoderFreezeCallback",
    "ModelArguments",
    "MomentumCallback",
    "PairMaskingCollator",
    "StageCallback",
    "XlsrTrainer",
    "XlsrTrainingArguments",
    "load_pairs",
    "parse_run_arguments",
    "run_training",
    "scheduled_momentum",
]
