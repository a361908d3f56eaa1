"""The arms of the multilingual grid (``multilingual_grid.py``): the languages, each arm's label and what it runs
beyond every arm's rates and temperatures; what the report reads to name the arms of a results file."""

from __future__ import annotations

import scratch_arms
from protocol import ArmGrid

LANGUAGES = "en fr de es it pt ru uk pl ro tr ar fa hi bn id vi tl sw ja ko zh".split()  # the Bible's 22
ARMS = ("mnrl", "hf_xlsr", "cmnrl_8B", "hictl", "cmlm")  # from multilingual-e5-small; scratch_arms.ARMS: from scratch
LABELS = {
    "mnrl": "MNRL, batch B",
    "hf_xlsr": "DualMomentumModel (one encoder, a queue of momentum keys)",
    "cmnrl_8B": "CachedMNRL, batch 8B (lr × √8)",
    "hictl": "HictlForPreTraining (L_S + L_W + TLM)",
    "cmlm": "CmlmModel (CMLM, then CMLM + bitext retrieval)",
    "lightweight": "LightweightDualTransformer from scratch (UGT + L_align + L_sim)",
    "lightweight_mnrl": "MNRL, the same 2-layer model from scratch, batch B",
}
HF_XLSR = ("hf_xlsr", "hictl", "cmlm", "lightweight")  # hf_xlsr's methods; the others are sentence-transformers'
QUEUE = (1024, 0.99)  # the queue's size and momentum at which its rates and temperatures run
GRIDS = {  # what an arm runs beyond the rates and temperatures of every arm (protocol.ArmGrid)
    "hf_xlsr": ArmGrid(queue=QUEUE, queue_sizes=(256, 1024, 4096)),  # 16x, the largest 4x the size first run
    "hictl": ArmGrid(paper_temperature=1.0),  # HICTL scores by the plain cosine (its Eq. 2)
    "cmlm": ArmGrid(paper_temperature=0.0),  # CMLM's bitext retrieval: the raw inner product (its Section 4.2)
    "lightweight": ArmGrid(paper_temperature=0.0, learning_rates=scratch_arms.RATES),  # L_align: its Eq. 5
    "lightweight_mnrl": ArmGrid(learning_rates=scratch_arms.RATES),
}
START = "e5-small"  # the untrained start's arm in the results file
