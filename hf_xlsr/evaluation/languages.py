# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Deprecated: the language codes moved to `hf_xlsr.languages` (the export and the Hub code read them without the
evaluation package); this alias leaves in the release after 0.2."""

import warnings

from ..languages import MTEB_LANGUAGES, mteb_language

warnings.warn("hf_xlsr.evaluation.languages is now hf_xlsr.languages", FutureWarning, stacklevel=2)

__all__ = ["MTEB_LANGUAGES", "mteb_language"]
