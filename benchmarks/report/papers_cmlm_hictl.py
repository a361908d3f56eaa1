"""The blocks of CMLM's and HICTL's claim pages (docs/benchmarks/papers_cmlm.md, papers_hictl.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from . import shared


def translation_table() -> str:
    """HICTL's translation claim (``claim_hictl.py``, Section 3.2): the fused decoder against the plain one, chrF and
    BLEU per seed."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_text

    runs = shared.load("claim_hictl_minilm.json")["runs"]
    lines = ["| arm | seeds | chrF mean ± spread | per seed | BLEU mean ± spread | per seed | train s per run |",
             "| --- | ---: | ---: | --- | ---: | --- | ---: |"]  # fmt: skip
    for arm, label in (("translation without fusion", "decoder without fusion"),
                       ("translation with fusion", "decoder with fusion")):  # fmt: skip
        rows = sorted((run for run in runs if run["arm"] == arm), key=lambda run: run["seed"])
        scale = {run["fusion_temperature"] for run in rows} - {None}
        label += f" (t = {scale.pop():g})" if scale else ""
        cells = [label, str(len(rows))]
        for metric in ("chrf", "bleu"):
            values = [run[metric] for run in rows]
            cells += [mean_text(values, 1, 2),
                      ", ".join(f"{value:.2f}" for value in values)]  # fmt: skip
        seconds = [run["train_seconds"] for run in rows]
        cells.append(f"{min(seconds):,}-{max(seconds):,}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


CMLM_PART_A = [("mlm", "`mlm`"), ("cmlm", "`cmlm` (N = 15)")]


CMLM_ONE_DECAY = [
    ("schedule cmlm+br", "`cmlm+br`", "CMLM + BR for 900 steps (BR at weight 0.2)"),
    ("schedule cmlm->br", "`cmlm->br`", "CMLM 600 steps, then BR alone 300"),
    ("schedule cmlm->cmlm+br", "`cmlm->cmlm+br`", "CMLM 600 steps, then CMLM + BR 300"),
]


CMLM_PER_STAGE = [
    ("schedule br 300", "`br`", "BR alone 300 steps from the random start"),
    ("schedule cmlm->br per-stage lr 600+300", "`cmlm->br`", "CMLM 600, then BR alone 300"),
    ("schedule cmlm->cmlm+br per-stage lr 600+300", "`cmlm->cmlm+br`", "CMLM 600, then CMLM + BR 300"),
    ("schedule br 900", "`br`", "BR alone 900 steps from the random start"),
    ("schedule cmlm->br per-stage lr 600+900", "`cmlm->br`", "CMLM 600, then BR alone 900"),
    ("schedule cmlm->cmlm+br per-stage lr 600+900", "`cmlm->cmlm+br`", "CMLM 600, then CMLM + BR 900"),
    ("schedule cmlm->br per-stage lr 2000+900", "`cmlm->br`", "CMLM 2,000, then BR alone 900"),
    ("schedule cmlm->cmlm+br per-stage lr 2000+900", "`cmlm->cmlm+br`", "CMLM 2,000, then CMLM + BR 900"),
]


CMLM_LONG_STAGE = [
    ("schedule br 900", "`br`", "BR alone 900 steps from the random start"),
    ("schedule cmlm->br per-stage lr 4000+900", "`cmlm->br`", "CMLM 4,000, then BR alone 900"),
]


CMLM_RETRIEVAL = ["seeds", "en→fr", "fr→en", "mean", "per seed", "with PCR", "own-language top-1 before PCR",
                  "after PCR"]  # fmt: skip


CMLM_RETRIEVAL_HEADER = ("| arm | what it does | seeds | en→fr | fr→en | retrieval mean ± spread | per seed | "
                         "with PCR | own-language top-1 before PCR | after PCR |")  # fmt: skip


TABLES: dict[str, Callable[[], str]] = {
    "cmlm-prefix": lambda: shared.claim_table(
        "claim_cmlm.json",
        "| arm | seeds | probe en→en | probe en→fr | adjacent-verse retrieval | loss, true first "
        "verse | loss, another row's | training loss at step 1,000 |",
        CMLM_PART_A,
        [
            "seeds",
            "probe en→en",
            "probe en→fr",
            "adjacent-verse retrieval",
            "loss, true first verse",
            "loss, another row's",
            "training loss at the end",
        ],
    ),
    "cmlm-one-decay": lambda: shared.claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " BR loss at step 900 |",
        CMLM_ONE_DECAY,
        [*CMLM_RETRIEVAL, "BR loss at the end"],
    ),
    "cmlm-per-stage": lambda: shared.claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " CMLM loss at the stage's end | BR loss at the end |",
        CMLM_PER_STAGE,
        [*CMLM_RETRIEVAL, "CMLM loss at the stage's end", "BR loss at the end"],
        seeds=3,
    ),
    "cmlm-long-stage": lambda: shared.claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " CMLM loss at the stage's end | BR loss at the end |",
        CMLM_LONG_STAGE,
        [*CMLM_RETRIEVAL, "CMLM loss at the stage's end", "BR loss at the end"],
    ),
    "hictl-translation": translation_table,
    "hictl-small-contrasts": lambda: shared.claim_contrasts(
        "claim_hictl.json",
        [
            ("tlm+ls", "tlm"),
            ("tlm+ls+lw", "tlm+ls"),
            ("tlm+ls_tau0.05", "tlm+ls"),
            ("tlm+ls+lw_tau0.05", "tlm+ls_tau0.05"),
        ],
        places=2,
    ),
    "hictl-minilm-contrasts": lambda: shared.claim_contrasts(
        "claim_hictl_minilm.json",
        [
            ("tlm+ls", "tlm"),
            ("tlm+ls+lw", "tlm+ls"),
            ("tlm+ls_tau0.05", "tlm+ls"),
            ("tlm+ls+lw_tau0.05", "tlm+ls_tau0.05"),
        ],
        ("bible", "probe_en2en", "probe_en2fr"),
        2,
    ),
    "hictl-translation-contrasts": lambda: shared.claim_contrasts(
        "claim_hictl_minilm.json",
        [("translation with fusion", "translation without fusion")],
        ("chrf", "bleu"),
        2,
        1,
    ),
    "cmlm-part-a-contrasts": lambda: shared.claim_contrasts(
        "claim_cmlm.json", [("cmlm", "mlm")], ("probe_en2en", "probe_en2fr", "adjacent_retrieval")
    ),
    "cmlm-one-decay-contrasts": lambda: shared.claim_contrasts(
        "claim_cmlm.json",
        [
            ("schedule cmlm+br", "schedule cmlm->br"),
            ("schedule cmlm->cmlm+br", "schedule cmlm->br"),
            *(
                (arm, "own_language_top1_after_pcr", arm, "own_language_top1_before_pcr")
                for arm in ("schedule cmlm+br", "schedule cmlm->br", "schedule cmlm->cmlm+br")
            ),
            *(
                (arm, "bible_with_pcr", arm, "bible")
                for arm in ("schedule cmlm+br", "schedule cmlm->br", "schedule cmlm->cmlm+br")
            ),
        ],
    ),
    "cmlm-per-stage-contrasts": lambda: shared.claim_contrasts(
        "claim_cmlm.json",
        [
            ("schedule cmlm->br per-stage lr 600+300", "schedule br 300"),
            ("schedule cmlm->br per-stage lr 600+900", "schedule br 900"),
            ("schedule cmlm->cmlm+br per-stage lr 600+900", "schedule cmlm->br per-stage lr 600+900"),
            ("schedule cmlm->cmlm+br per-stage lr 600+900", "schedule br 900"),
            ("schedule cmlm->br per-stage lr 2000+900", "schedule cmlm->br per-stage lr 600+900"),
            ("schedule cmlm->br per-stage lr 2000+900", "schedule br 900"),
            ("schedule cmlm->cmlm+br per-stage lr 2000+900", "schedule cmlm->br per-stage lr 2000+900"),
            ("schedule cmlm->br per-stage lr 4000+900", "schedule cmlm->br per-stage lr 2000+900"),
            ("schedule cmlm->br per-stage lr 4000+900", "schedule br 900"),
        ],
    ),
    "hictl-small": lambda: shared.claim_table(
        "claim_hictl.json",
        "| arm | losses | seeds | en→fr | fr→en | retrieval mean ± spread | per seed | probe en→en | probe en→fr |",
        [
            ("warm start (TLM)", "warm start", "TLM, 500 steps"),
            ("tlm", "`tlm`", "TLM, 250 more steps"),
            ("tlm+ls", "`tlm+ls`", "+ L_S (sentence-level contrast)"),
            ("tlm+ls+lw", "`tlm+ls+lw`", "+ L_S + L_W (word-level contrast)"),
            ("tlm+ls_tau0.05", "`tlm+ls_tau0.05`", "+ L_S, temperature 0.05 (one change from `tlm+ls`)"),
            (
                "tlm+ls+lw_tau0.05",
                "`tlm+ls+lw_tau0.05`",
                "+ L_S + L_W, temperature 0.05 (one change from `tlm+ls+lw`)",
            ),
        ],
        shared.LIGHTWEIGHT,
        decimals=2,
    ),
    "hictl-minilm": lambda: shared.claim_table(
        "claim_hictl_minilm.json",
        "| arm | losses | seeds | en→fr | fr→en | retrieval mean ± spread | per seed | probe en→en | probe en→fr "
        "| train s per run |",
        [
            ("warm start (TLM)", "warm start", "TLM, 100 steps"),
            ("tlm", "`tlm`", "TLM, 250 more steps"),
            ("tlm+ls", "`tlm+ls`", "+ L_S"),
            ("tlm+ls+lw", "`tlm+ls+lw`", "+ L_S + L_W"),
            ("tlm+ls_tau0.05", "`tlm+ls_tau0.05`", "+ L_S, temperature 0.05 (one change from `tlm+ls`)"),
            (
                "tlm+ls+lw_tau0.05",
                "`tlm+ls+lw_tau0.05`",
                "+ L_S + L_W, temperature 0.05 (one change from `tlm+ls+lw`)",
            ),
        ],
        [*shared.LIGHTWEIGHT, "train s"],
        decimals=2,
    ),
}
