"""The blocks of the lightweight dual transformer's claim page (docs/benchmarks/papers_lightweight.md)."""

from __future__ import annotations

from collections.abc import Callable

from . import shared

TABLES: dict[str, Callable[[], str]] = {
    "lightweight-contrasts": lambda: shared.claim_contrasts(
        "claim_lightweight.json",
        [
            ("ugt+align", "ugt"),
            ("ugt+align+sim", "ugt+align"),
            ("ugt+align+sim@sim_weight=0.0625", "ugt+align+sim"),
            ("ugt+align+sim@sim_weight=0.0625", "ugt+align"),
        ],
        places=2,
    ),
    "lightweight-long-contrasts": lambda: shared.claim_contrasts(
        "claim_lightweight_long.json", [("mlm_xtr", "ugt"), ("ugt", "xtr"), ("xtr", "smlm"), ("smlm", "mlm")], places=2
    ),
    "lightweight-fullsize-contrasts": lambda: shared.claim_contrasts(
        "claim_lightweight_fullsize.json",
        [
            ("ugt+align+sim", "ugt+align"),
            ("ugt+align+sim@sim_weight=0.015625", "ugt+align+sim"),
            ("ugt+align+sim@sim_weight=0.015625", "ugt+align"),
        ],
        places=2,
    ),
    "lightweight-tasks": lambda: shared.claim_table(
        "claim_lightweight.json",
        "| arm | losses | seeds | en→fr | fr→en | retrieval mean ± spread | per seed | probe en→en | probe en→fr |",
        [
            ("mlm", "`mlm`", "MLM alone (indicative)"),
            ("smlm", "`smlm`", "SMLM alone (indicative)"),
            ("xtr", "`xtr`", "XTR alone (indicative)"),
            ("mlm_xtr", "`mlm_xtr`", "MLM ⊕ XTR (indicative)"),
            ("ugt", "`ugt`", "UGT (SMLM ⊕ XTR) alone (indicative)"),
            ("ugt+align", "`ugt+align`", "UGT + L_align"),
            ("ugt+align+sim", "`ugt+align+sim`", "UGT + L_align + L_sim (the full model)"),
        ],
        shared.LIGHTWEIGHT,
        seeds=3,
    ),
    "lightweight-fullsize": lambda: shared.claim_table(
        "claim_lightweight_fullsize.json",
        "| arm (width 512, batch 128, 394 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed "
        "| probe en→en | probe en→fr | train s per seed |",
        [("ugt+align+sim", "`ugt+align+sim` (the full model)"), ("ugt+align", "`ugt+align`")],
        [*shared.LIGHTWEIGHT, "train s"],
        seeds=3,
    ),
    "lightweight-lsim-cpu-small": lambda: shared.claim_table(
        "claim_lightweight.json",
        "| arm (width 256, batch 32, 800 steps) | L_sim weight | seeds | en→fr | fr→en | retrieval mean ± spread "
        "| per seed | probe en→en | probe en→fr |",
        shared.lsim_rows("0.0625", 32),
        shared.LIGHTWEIGHT,
        seeds=3,
    ),
    "lightweight-lsim-cpu-small-8": lambda: shared.claim_table(
        "claim_lightweight.json",
        "| arm (width 256, batch 32, 800 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed (0-7) "
        "| probe en→en | probe en→fr |",
        [("ugt+align", "`ugt+align`"), ("ugt+align+sim@sim_weight=0.0625", "`ugt+align+sim@sim_weight=0.0625`")],
        shared.LIGHTWEIGHT,
    ),
    "lightweight-long": lambda: shared.claim_table(
        "claim_lightweight_long.json",
        "| arm (width 256, batch 32, 3,200 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed "
        "| at 800 steps (seed 0) | probe en→en | probe en→fr | train s per seed |",
        [
            ("mlm", "`mlm`"),
            ("smlm", "`smlm`"),
            ("xtr", "`xtr`"),
            ("mlm_xtr", "`mlm_xtr` (MLM ⊕ XTR)"),
            ("ugt", "`ugt` (SMLM ⊕ XTR)"),
        ],
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "other", "probe en→en", "probe en→fr", "train s"],
        other="claim_lightweight.json",
    ),
    "lightweight-lsim-cpu-fullsize": lambda: shared.claim_table(
        "claim_lightweight_fullsize.json",
        "| arm (width 512, batch 128, 394 steps) | L_sim weight | seeds | en→fr | fr→en | retrieval mean ± spread "
        "| per seed | probe en→en | probe en→fr |",
        shared.lsim_rows("0.015625", 128),
        shared.LIGHTWEIGHT,
    ),
}
