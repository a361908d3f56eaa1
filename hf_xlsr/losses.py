"""hf_xlsr 0.2.0's home of `MomentumQueueLoss`; it lives in `hf_xlsr.sentence_transformers` (the
sentence-transformers integration) now. Importing from here still works, with a warning."""

import warnings

from .sentence_transformers import MomentumQueueLoss

warnings.warn(
    "hf_xlsr.losses is hf_xlsr 0.2.0's name: import MomentumQueueLoss from hf_xlsr.sentence_transformers",
    FutureWarning,
    stacklevel=2,
)

__all__ = ["MomentumQueueLoss"]
