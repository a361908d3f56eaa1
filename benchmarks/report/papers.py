"""The blocks of MoCo-BERT's claim pages (docs/benchmarks/papers.md, papers_queue_extension.md): each claim's
table and paired contrasts."""

from __future__ import annotations

from collections.abc import Callable

from . import shared

# CMLM's and HICTL's queue against their in-batch loss: the long queue, one batch of queued keys, and the one
# against the other (claim 2, at both rates)
EXTENSION_CONTRASTS = [(f"{model} K={arm}", f"{model} K={base}") for model in ("cmlm", "hictl")
                       for arm, base in ((512, 0), (16, 0), (512, 16))]  # fmt: skip


MOCO_ARMS_2E4 = [
    ("untrained", "`untrained`", "MiniLM-L6, untrained"),
    ("mnrl", "`mnrl`", "sentence-transformers MNRL, in-batch negatives (7)"),
    ("K1B", "`K1B`", "DualMomentumModel, K = B = 8"),
    ("K16B", "`K16B`", "DualMomentumModel, K = 16 B = 128"),
    ("K128B", "`K128B`", "DualMomentumModel, K = 128 B = 1,024"),
    ("K128B_tau0.01", "`K128B_tau0.01`", "K = 1,024, tau = 0.01"),
    ("K128B_tau0.1", "`K128B_tau0.1`", "K = 1,024, tau = 0.1"),
    ("K128B_m0", "`K128B_m0`", "K = 1,024, m = 0 (keys from the query encoder)"),
]


QUEUE_EXTENSION_ARMS = [
    ("lightweight K=0", "lightweight, from scratch", "K = 0 (the paper's in-batch L_align)"),
    ("lightweight K=32", "lightweight, from scratch", "K = B = 32 (queued form, one batch of keys)"),
    ("lightweight K=1024", "lightweight, from scratch", "K = 1,024"),
    ("cmlm K=0", "CMLM `br`, from MiniLM-L6", "K = 0 (the paper's in-batch L_br)"),
    ("cmlm K=16", "CMLM `br`, from MiniLM-L6", "K = B = 16 (queued form, one batch of keys)"),
    ("cmlm K=512", "CMLM `br`, from MiniLM-L6", "K = 512"),
    ("hictl K=0", "HICTL L_S, from MiniLM-L6", "K = 0 (the paper's in-batch L_S)"),
    ("hictl K=16", "HICTL L_S, from MiniLM-L6", "K = B = 16 (queued form, one batch of keys)"),
    ("hictl K=512", "HICTL L_S, from MiniLM-L6", "K = 512"),
    ("hictl K=512 queue_tau0.04", "HICTL L_S, from MiniLM-L6", "K = 512, queued form at tau 0.04 (indicative)"),
]


E5_ARMS = [
    ("untrained", "multilingual-e5-small, untrained"),
    ("mnrl", "MNRL (in-batch, sentence-transformers)"),
    ("K64B_m0.98", "`DualMomentumModel`, K = 64 B = 512, m = 0.98"),
    ("K1B_m0.98", "`DualMomentumModel`, K = B = 8, m = 0.98"),
    ("K64B_m0.98_tau0.01", "`DualMomentumModel`, K = 512, m = 0.98, tau = 0.01"),
    ("K64B_m0.98_tau0.1", "`DualMomentumModel`, K = 512, m = 0.98, tau = 0.1"),
    ("K64B_m0", "`DualMomentumModel`, K = 512, m = 0"),
]


TABLES: dict[str, Callable[[], str]] = {
    "queue-extension-contrasts": lambda: shared.claim_contrasts(
        "claim_queue_extension.json",
        [
            ("lightweight K=1024", "lightweight K=0"),
            ("lightweight K=32", "lightweight K=0"),
            ("lightweight K=1024", "lightweight K=32"),
            *EXTENSION_CONTRASTS,
        ],
        places=2,
    ),
    "queue-extension-2e-4-contrasts": lambda: shared.claim_contrasts(
        "claim_queue_extension_lr2e-4.json", EXTENSION_CONTRASTS, places=2
    ),
    "moco-e5-en-fr-contrasts": lambda: shared.claim_contrasts(
        "claim_moco_e5_en_fr.json",
        [
            ("K64B_m0.98", "mnrl"),
            ("K64B_m0.98", "K1B_m0.98"),
            ("K1B_m0.98", "mnrl"),
            ("K64B_m0.98", "K64B_m0.98_tau0.01"),
            ("K64B_m0.98", "K64B_m0.98_tau0.1"),
            ("K64B_m0.98", "K64B_m0"),
            ("K64B_m0", "mnrl"),
        ],
        places=2,
    ),
    "moco-e5-en-zh-contrasts": lambda: shared.claim_contrasts(
        "claim_moco_e5_en_zh.json",
        [
            ("K64B_m0.98", "mnrl"),
            ("K64B_m0.98", "K1B_m0.98"),
            ("K1B_m0.98", "mnrl"),
            ("K64B_m0.98", "K64B_m0"),
            ("K64B_m0.98", "K64B_m0.98_tau0.01"),
            ("K64B_m0.98", "K64B_m0.98_tau0.1"),
        ],
        ("bible", "hsk"),
        2,
    ),
    "moco-claim-contrasts": lambda: shared.claim_contrasts(
        "claim_moco_minilm_en_fr.json",
        [
            ("K16B", "K1B"),
            ("K128B", "K16B"),
            ("K128B", "mnrl"),
            ("K1B", "mnrl"),
            ("K128B", "K128B_m0"),
            ("K128B", "K128B_tau0.01"),
            ("K128B", "K128B_tau0.1"),
            ("K128B", "K128B_m0.999"),
        ],
    ),
    "moco-claim-2e-4-contrasts": lambda: shared.claim_contrasts(
        "claim_moco_minilm_en_fr_lr2e-4.json",
        [
            ("K16B", "K1B"),
            ("K128B", "K16B"),
            ("K128B", "mnrl"),
            ("K1B", "mnrl"),
            ("K128B", "K128B_tau0.01"),
            ("K128B", "K128B_tau0.1"),
            ("K128B", "K128B_m0"),
        ],
    ),
    "moco-claim": lambda: shared.claim_table(
        "claim_moco_minilm_en_fr.json",
        "| arm | what differs | seeds | en→fr | fr→en | mean ± spread | per seed | queue full |",
        [
            ("untrained", "`untrained`", "MiniLM-L6, untrained", "—"),
            ("mnrl", "`mnrl`", "sentence-transformers MNRL, in-batch negatives (7)", "—"),
            ("K1B", "`K1B`", "DualMomentumModel, K = B = 8", "100%"),
            ("K16B", "`K16B`", "DualMomentumModel, K = 16 B = 128", "97%"),
            ("K128B", "`K128B`", "DualMomentumModel, K = 128 B = 1,024", "80%"),
            (
                "K128B_m0.999",
                "`K128B_m0.999`",
                "K = 1,024, m = 0.999 (horizon 1,000 > run: breaks the budget rule)",
                "80%",
            ),
            ("K128B_tau0.01", "`K128B_tau0.01`", "K = 1,024, tau = 0.01", "80%"),
            ("K128B_tau0.1", "`K128B_tau0.1`", "K = 1,024, tau = 0.1", "80%"),
            ("K128B_m0", "`K128B_m0`", "K = 1,024, m = 0 (keys from the query encoder)", "80%"),
        ],
        ["seeds", "en→fr", "fr→en", "mean", "per seed"],
        trailing=1,
    ),
    "moco-claim-2e-4": lambda: shared.claim_table(
        "claim_moco_minilm_en_fr_lr2e-4.json",
        "| arm | what differs | seeds | en→fr | fr→en | mean ± spread | per seed | same arm at 4e-5 "
        "| in-queue accuracy at the end |",
        MOCO_ARMS_2E4,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "other", "in-queue accuracy at the end"],
        other="claim_moco_minilm_en_fr.json",
        decimals={"K128B_m0": 2},
    ),
    "queue-extension": lambda: shared.claim_table(
        "claim_queue_extension.json",
        "| model | arm | seeds | en→fr | fr→en | mean ± spread | per seed | queue full |",
        QUEUE_EXTENSION_ARMS,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "queue full"],
    ),
    "queue-extension-2e-4": lambda: shared.claim_table(
        "claim_queue_extension_lr2e-4.json",
        "| model | arm | seeds | en→fr | fr→en | mean ± spread | per seed | same arm at 4e-5 |",
        [row for row in QUEUE_EXTENSION_ARMS if not row[0].startswith("lightweight") and "tau" not in row[0]],
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "other"],
        other="claim_queue_extension.json",
    ),
    "moco-e5-en-fr": lambda: shared.claim_table(
        "claim_moco_e5_en_fr.json",
        "| arm | seeds | Bible en→fr | fr→en | Bible mean ± spread | per seed | in-queue accuracy at the end |",
        E5_ARMS,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "in-queue accuracy at the end"],
        decimals=2,
    ),
    "moco-e5-en-zh": lambda: shared.claim_table(
        "claim_moco_e5_en_zh.json",
        "| arm | seeds | Bible en→zh | zh→en | Bible mean ± spread | per seed | HSK en→zh | zh→en | HSK mean ± spread "
        "| per seed |",
        E5_ARMS,
        ["seeds", "en→zh", "zh→en", "mean", "per seed", "HSK en→zh", "HSK zh→en", "HSK mean", "HSK per seed"],
        seeds=3,
        decimals=2,
    ),
    "moco-e5-en-zh-five-seeds": lambda: shared.claim_table(
        "claim_moco_e5_en_zh.json",
        "| arm, five seeds | Bible mean ± spread | per seed (0-4) | HSK mean ± spread | per seed (0-4) "
        "| in-queue accuracy at the end |",
        [("K64B_m0.98", "K = 512, m = 0.98"), ("K64B_m0", "K = 512, m = 0")],
        ["mean", "per seed", "HSK mean", "HSK per seed", "in-queue accuracy at the end"],
        decimals=2,
    ),
}
