"""The blocks of the report's first page (docs/benchmarks/index.md): the summary of every claim and question, the
reliability check."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

from . import shared, tatoeba


def tatoeba_verdict(languages: str) -> tuple[str, str, str]:
    """hf_xlsr's model against MNRL trained on the same languages (a key of `tatoeba.COMPARISONS`) on Tatoeba's 112
    languages, paired by seed, and its verdict by the report's rule: real when the mean difference exceeds both arms'
    spreads over 3 or more seeds, with every seed on the same side."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread, mean_text

    ours, theirs, seeds, setting = tatoeba.tatoeba_seeds_of_both(languages)
    question = f"The {languages} model above MNRL, {setting}, out of the Bible's domain (Tatoeba, 112 languages)"
    if not seeds:
        return question, "no seed of both", "not measured"
    ours_f1, theirs_f1 = ([runs[seed]["112"] for seed in seeds] for runs in (ours, theirs))
    differences = [a - b for a, b in zip(ours_f1, theirs_f1, strict=True)]
    gain = statistics.fmean(differences)
    measured = (f"F1 {mean_text(ours_f1, scale=1)} against {mean_text(theirs_f1, scale=1)} "
                f"({len(seeds)} seed{'s' * (len(seeds) > 1)}), paired {gain:+.2f} points, ahead on "
                f"{sum(d > 0 for d in differences)} of {len(seeds)}")  # fmt: skip
    if len(seeds) < 3:
        return question, measured, "cannot show before 3 seeds of both"
    spreads = [mean_and_spread(values)[1] for values in (ours_f1, theirs_f1)]
    real = abs(gain) > max(spreads) and len({d > 0 for d in differences}) == 1
    return question, measured, ("holds" if gain > 0 else "does not hold") if real else "within the seeds' spread"


def tatoeba_verdicts() -> str:
    """README's first-screen lines of `tatoeba_verdict`, one per comparison."""
    return "".join(f"- {question}: {measured}: {verdict}.\n"
                   for question, measured, verdict in map(tatoeba_verdict, tatoeba.COMPARISONS))  # fmt: skip


def questions_summary() -> str:
    """What hf_xlsr adds beyond the papers, one row per question: the figures from the results files of the 22-language
    model, the language sampling and the step on 22 languages; the rows whose figures are a whole table name its
    section."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread, mean_text
    from multilingual_grid import ARMS
    from protocol import grid_rows, grid_verdict

    from .languages import grid_figures

    def stat(runs: list[dict], arm: str, key: str, places: int) -> str:
        return mean_text(shared.arm_values(runs, arm, key), places=places)

    _, start, at_picks = grid_figures()
    grid = [run for figures in at_picks.values() for run in figures]
    sampling = shared.load("multilingual_sampling.json")["runs"]
    mixed = {run["seed"]: run["trained"] for run in sampling if run["arm"] == "alpha0.5"}
    one_pair = {run["seed"]: run["trained"] for run in sampling if run["arm"] == "alpha0.5_one_pair"}
    differences = [100 * (mixed[seed] - one_pair[seed]) for seed in mixed if seed in one_pair]
    gain, gain_spread, paired = mean_and_spread(differences)
    ahead = "ahead on each" if all(d > 0 for d in differences) else f"ahead on {sum(d > 0 for d in differences)}"

    def mean_of(arm: str, key: str) -> float:
        return 100 * statistics.fmean(run[key] for run in sampling if run["arm"] == arm)

    largest = 100 * (mean_of("alpha0", "fr") - mean_of("alpha0.5", "fr")) / 100
    step = shared.load("multilingual_step.json")["rows"]["22 languages"]["ratio_to_bilingual"]

    found = grid_verdict(grid_rows(shared.load("multilingual_grid.json")["runs"], ARMS), ["hf_xlsr"])
    verdict = "cannot show before 3 seeds at each pick" if not found else "holds" if found[-1] else "does not hold"
    languages = "languages.md#22-languages-each-language-at-the-picks"
    drawing = "languages.md#drawing-the-language-pairs-temperature-and-mixed-batches"
    rows = [
        ("One model for 22 languages above MNRL, each at its pick",
         (f"{stat(grid, 'hf_xlsr', 'bible', 2)}% over 21 languages with English against MNRL "
          f"{stat(grid, 'mnrl', 'bible', 2)}%" + (f", the start {100 * start['bible']:.1f}%" if start else "")
          + f"; zero-shot pairs {stat(grid, 'hf_xlsr', 'zero_shot', 2)} against {stat(grid, 'mnrl', 'zero_shot', 2)}%"
          if {run["arm"] for run in grid} == set(ARMS) else "no test figure of both arms yet"),
         verdict, f"[22 languages]({languages})"),
        ("Mixed batches train many languages better than batches of one pair",
         f"{gain:+.2f} ± {gain_spread:.2f} points paired ({paired} seeds, {ahead})", "holds: the default",
         f"[sampling]({drawing})"),
        ("The sampling temperature α = 0.5",
         f"{stat(sampling, 'alpha0.5', 'trained', 1)}% against {stat(sampling, 'alpha1', 'trained', 1)}% proportional "
         f"(α = 1) and {stat(sampling, 'alpha0', 'trained', 1)}% uniform (α = 0, which costs the largest pair "
         f"{-largest:.1f} points)", "the default", f"[sampling]({drawing})"),
        *((*tatoeba_verdict(languages), "[Tatoeba](tatoeba.md)") for languages in tatoeba.COMPARISONS),
        ("A step on 22 languages costs what a bilingual step costs", f"{step:.2f}× (goal ≤ 1.05×)",
         "holds" if step <= 1.05 else "does not hold",
         "[step](languages.md#a-step-on-22-languages-against-a-bilingual-step)"),
    ]  # fmt: skip
    lines = ["| question | hf_xlsr measured | verdict | section |", "| --- | --- | --- | --- |"]
    return "\n".join(lines + [f"| {' | '.join(row)} |" for row in rows]) + "\n"


def claims_summary() -> str:
    """The papers' claims, one row each: what the paper reports, what hf_xlsr measured (from the claims' results
    files), and the verdict its report page reaches."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread, mean_text
    from scipy.stats import ttest_1samp

    def values(name: str, arm: str, key: str = "bible") -> dict[int, float]:
        return {r["seed"]: r[key] for r in shared.load(name)["runs"] if r["arm"] == arm and key in r}

    def stat(name: str, arm: str, key: str = "bible", places: int = 1, scale: float = 100) -> str:
        return mean_text(list(values(name, arm, key).values()), scale, places)

    def mean(name: str, arm: str, key: str = "bible", scale: float = 100) -> float:
        return scale * statistics.fmean(values(name, arm, key).values())

    def paired(name: str, arm: str, base: str, places: int = 1) -> tuple[str, int, float]:
        a, b = values(name, arm), values(name, base)
        differences = [100 * (a[seed] - b[seed]) for seed in a if seed in b]
        m, spread, n = mean_and_spread(differences)
        return f"{m:+.{places}f} ± {spread:.{places}f}", n, float(ttest_1samp(differences, 0).pvalue)

    def paired_mean(name: str, arm: str, base: str) -> float:
        a, b = values(name, arm), values(name, base)
        return statistics.fmean(100 * (a[seed] - b[seed]) for seed in a if seed in b)

    moco, e5 = "claim_moco_minilm_en_fr_lr2e-4.json", "claim_moco_e5_en_fr.json"
    extension, extension_2e4 = "claim_queue_extension.json", "claim_queue_extension_lr2e-4.json"
    lightweight, h100, long = (
        "claim_lightweight.json",
        "claim_lightweight_fullsize_h100.json",
        "claim_lightweight_long.json",
    )
    cmlm, hictl = "claim_cmlm.json", "claim_hictl_minilm.json"
    cmlm_queue, _, _ = paired(extension_2e4, "cmlm K=512", "cmlm K=0")
    hictl_queue, hictl_seeds, _ = paired(extension_2e4, "hictl K=512", "hictl K=0")
    lsim, lsim_seeds, lsim_p = paired(h100, "ugt+align+sim@sim_weight=0.015625", "ugt+align", places=2)
    costs = [paired_mean(name, "ugt+align+sim", "ugt+align") for name in (lightweight, h100)]  # on the seeds of both
    stage, stage_seeds, _ = paired(cmlm, "schedule cmlm->br per-stage lr 4000+900", "schedule br 900")
    order = sorted(["mlm_xtr", "ugt", "xtr", "smlm", "mlm"], key=lambda arm: -mean(long, arm))
    names = {"mlm_xtr": "MLM ⊕ XTR", "ugt": "UGT", "xtr": "XTR", "smlm": "SMLM", "mlm": "MLM"}
    rows = [
        ("MoCo-BERT: a longer queue helps (Figure 2)", "accuracy rises with K",
         f"MiniLM-L6, 640 steps of 8, AdamW 2e-4: K = 8 / 128 / 1,024 → {stat(moco, 'K1B')} / {stat(moco, 'K16B')} / "
         f"**{stat(moco, 'K128B')}%** (3 seeds); MNRL {stat(moco, 'mnrl')}%", "holds"),
        ("MoCo-BERT: temperature 0.04 (Table 4)", "0.04 best",
         f"{stat(moco, 'K128B')}% against {stat(moco, 'K128B_tau0.01')}% (0.01) and {stat(moco, 'K128B_tau0.1')}% "
         "(0.1)", "holds"),
        ("MoCo-BERT: momentum is needed (Table 5)", "no convergence without it",
         f"m = 0: {stat(moco, 'K128B_m0', places=2)}% (chance 0.1%)", "holds"),
        ("MoCo-BERT from multilingual-e5-small, en-fr", "—",
         f"512-key queue {stat(e5, 'K64B_m0.98', places=2)}% against MNRL {stat(e5, 'mnrl', places=2)}%", "holds"),
        ("A queue for the other models (hf_xlsr's extension)", "—",
         f"lightweight {mean(extension, 'lightweight K=1024') - mean(extension, 'lightweight K=0'):+.1f} points; "
         f"CMLM's bitext retrieval {cmlm_queue} (2e-4); HICTL's L_S {hictl_queue} ({hictl_seeds} seeds)", "helps"),
        ("Lightweight: L_align makes the space (Table 7)", "—",
         f"UGT alone {stat(lightweight, 'ugt')}%; with L_align {stat(lightweight, 'ugt+align')}%", "holds"),
        ("Lightweight: L_sim adds (Table 7)", "+0.3 to +0.9",
         f"at the paper's weight {max(costs):.0f} to {min(costs):.0f} points; at 2/B {lsim} paired over {lsim_seeds} "
         f"seeds (H100, p = {lsim_p:.3f})", "holds at 2/B only"),
        ("Lightweight: UGT the best generative task (Table 6)", "UGT above MLM ⊕ XTR, XTR, SMLM, MLM",
         "3,200 steps: " + " > ".join(f"{names[arm]} {mean(long, arm):.1f}" for arm in order) + "%", "does not hold"),
        ("CMLM: the first sentence's vector is read (Section 2)", "—",
         f"held-out loss {mean(cmlm, 'cmlm', 'cmlm_loss_true_first', 1):.2f} nats with it, "
         f"{mean(cmlm, 'cmlm', 'cmlm_loss_shuffled_first', 1):.2f} with another row's", "holds"),
        ("CMLM: a CMLM stage helps bitext retrieval; S3 best (Table 4)", "S3 best",
         f"4,000-step stage {stage} points paired ({stage_seeds} seeds)", "cannot show at this budget"),
        ("CMLM: principal-component removal cuts language bias (Section 5.2)", "less same-language retrieval",
         f"own-language neighbours e.g. {mean(cmlm, 'schedule cmlm+br', 'own_language_top1_before_pcr'):.1f}% → "
         f"{mean(cmlm, 'schedule cmlm+br', 'own_language_top1_after_pcr'):.1f}%, retrieval unchanged", "holds"),
        ("HICTL: the sentence-level contrast (Section 3.1)", "—",
         f"[CLS] retrieval {stat(hictl, 'tlm')}% → {stat(hictl, 'tlm+ls')}%", "holds"),
        ("HICTL: the word-level contrast adds (Section 3.1)", "—",
         f"{mean(hictl, 'tlm+ls+lw') - mean(hictl, 'tlm+ls'):+.1f} at the paper's sampling; "
         f"{mean(hictl, 'tlm+ls+lw_tau0.05') - mean(hictl, 'tlm+ls_tau0.05'):+.1f} "
         f"({mean(hictl, 'tlm+ls_tau0.05'):.1f} → {mean(hictl, 'tlm+ls+lw_tau0.05'):.1f}%) with hard negatives at "
         "temperature 0.05", "holds at 0.05 only"),
        ("HICTL: similarity fusion helps translation (Section 3.2)", "—",
         f"chrF {stat(hictl, 'translation without fusion', 'chrf', scale=1)} → "
         f"{stat(hictl, 'translation with fusion', 'chrf', scale=1)}; BLEU within the spread", "holds (chrF)"),
    ]  # fmt: skip
    lines = ["| paper: claim | what the paper reports | hf_xlsr measured | verdict |", "| --- | --- | --- | --- |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def reliability(name: str = "reliability.json") -> str:
    sys.path.insert(0, str(shared.HERE))
    from reliability import summary

    record = shared.load(name)
    return (
        summary(record)
        + f"\n({record['setup']['machine']}, {record['setup']['date']}, `{record['setup']['command']}`)\n"
    )


TABLES: dict[str, Callable[[], str]] = {
    "reliability": reliability,
    "questions-summary": questions_summary,
    "tatoeba-verdicts": tatoeba_verdicts,
    "claims-summary": claims_summary,
}
