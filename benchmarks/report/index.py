"""The blocks of the report's first page (docs/benchmarks/index.md): the summary of every claim and question, the
reliability check."""

from __future__ import annotations

import functools
import statistics
import sys
from collections.abc import Callable

from . import shared, tatoeba
from .languages import SCRATCH


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
    measured = (
        f"F1 {mean_text(ours_f1, scale=1)} against {mean_text(theirs_f1, scale=1)} "
        f"({len(seeds)} seed{'s' * (len(seeds) > 1)}), paired {gain:+.2f} points, ahead on "
        f"{sum(d > 0 for d in differences)} of {len(seeds)}"
    )
    if reason := tatoeba.unlike(languages):
        return question, measured, f"cannot show: {reason}"
    if len(seeds) < 3:
        return question, measured, "cannot show before 3 seeds of both"
    spreads = [mean_and_spread(values)[1] for values in (ours_f1, theirs_f1)]
    real = abs(gain) > max(spreads) and len({d > 0 for d in differences}) == 1
    return question, measured, ("holds" if gain > 0 else "does not hold") if real else "within the seeds' spread"


def tatoeba_verdicts() -> str:
    """README's first-screen lines of `tatoeba_verdict`, one per comparison that gives a verdict."""
    return "".join(
        f"- {question}: {measured}: {verdict}.\n"
        for question, measured, verdict in map(tatoeba_verdict, tatoeba.COMPARISONS)
        if not verdict.startswith("cannot show")
    )


def questions_summary() -> str:
    """What hf_xlsr measured, one row per question: the figures from the results files of the 22-language
    model, the language sampling and the step on 22 languages; the rows whose figures are a whole table name its
    section."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread, mean_text
    from multilingual_arms import ARMS, GRIDS, HF_XLSR
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

    found = grid_verdict(grid_rows(shared.load("multilingual_grid.json")["runs"], ARMS, GRIDS), HF_XLSR)
    verdict = "cannot show before 3 seeds at each pick" if not found else "holds" if found[-1] else "does not hold"
    languages = "languages.md#22-languages-each-language-at-the-picks"
    drawing = "languages.md#drawing-the-language-pairs-temperature-and-mixed-batches"
    rows = [
        ("One model for 22 languages above MNRL, each at its pick",
         (f"{stat(grid, 'hf_xlsr', 'bible', 2)}% over 21 languages with English against MNRL "
          f"{stat(grid, 'mnrl', 'bible', 2)}%" + (f", the start {100 * start['bible']:.1f}%" if start else "")
          + f"; zero-shot pairs {stat(grid, 'hf_xlsr', 'zero_shot', 2)} against {stat(grid, 'mnrl', 'zero_shot', 2)}%"
          if {run["arm"] for run in grid} >= {"mnrl", "hf_xlsr"} else "no test figure of both arms yet"),
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


def reliability_sentence(record: dict) -> str:
    """The report's sentence of a ``reliability.py`` results file."""
    same = not record["differing_tensors"]
    return (
        f"Killed {record['kills']} times with SIGKILL ({record['kills_while_saving']} of them while a checkpoint "
        f"was being written) and resumed each time, a {record['steps']}-step run ended with "
        + ("the same" if same else "NOT the same")
        + f" {record['tensors']} tensors as the run never killed "
        f"({record['bytes_compared']:,} bytes compared, {record['queue_and_momentum_tensors']} of them queues and "
        f"the momentum encoder's): " + ("holds." if same else "does not hold.") + "\n"
    )


def reliability(name: str = "reliability.json") -> str:
    record = shared.load(name)
    return (
        reliability_sentence(record)
        + f"\n({record['setup']['machine']}, {record['setup']['date']}, `{record['setup']['command']}`)\n"
    )


# the first table a user reads: (method or peer, its class, its arm in the 22-language grid, its arm in the en-fr
# timing); None where it has none yet. hf_xlsr's methods first, then sentence-transformers' peers.
METHODS = (
    ("MoCo-BERT", "`DualMomentumModel`", "hf_xlsr", "dmm_K256B"),
    ("HICTL", "`HictlForPreTraining`", "hictl", None),
    ("CMLM with bitext retrieval", "`CmlmModel`", "cmlm", None),
    ("lightweight dual transformer, from scratch", "`LightweightDualTransformer`", "lightweight", None),
    ("MNRL, batch B", "`MultipleNegativesRankingLoss`", "mnrl", "mnrl_B"),
    ("CachedMNRL, batch 8B", "`CachedMultipleNegativesRankingLoss`", "cmnrl_8B", "cmnrl_8B"),
    ("MNRL, the same 2-layer model from scratch", "`MultipleNegativesRankingLoss`", "lightweight_mnrl", None),
)


def peers_of(arm: str, rows: dict) -> list[dict]:
    """The rows a method of hf_xlsr faces: the same model trained from scratch by MNRL for the lightweight dual
    transformer (its paper's claim), else sentence-transformers' peers from the same start."""
    import scratch_arms
    from multilingual_arms import ARMS, HF_XLSR

    if arm in scratch_arms.ARMS:
        return [rows[peer] for peer in scratch_arms.ARMS if peer not in HF_XLSR and peer in rows]
    return [rows[peer] for peer in ARMS if peer not in HF_XLSR]


def method_cells() -> dict[str, list[str]]:
    """Each row of `METHODS` (by its arm) as the first table's cells after the class: its test on 22 languages (mean
    ± spread over the 3 seeds at its pick, `multilingual_grid.py`); Tatoeba F1 over the 112 sets and over the Bible's
    21 (its pick's seeds); its seconds per training pair and the memory it holds, each against MNRL at B (en-fr,
    MiniLM-L6, timed interleaved: ``queue_vs_batch_grid_timing.json``); and its verdict against the strongest peer at
    its best, by the protocol's rule (`protocol.grid_verdict`), once both have their whole grid and 3 seeds. The
    lightweight dual transformer faces its paper's claim instead: the same 2-layer model trained from scratch by
    MNRL, both at their own budget (`SCRATCH`)."""
    sys.path.insert(0, str(shared.HERE))
    import scratch_arms
    from common import mean_text
    from multilingual_arms import ARMS, GRIDS, HF_XLSR
    from protocol import grid_rows, grid_verdict

    rows = {row["arm"]: row for row in grid_rows(shared.load("multilingual_grid.json")["runs"], ARMS, GRIDS)}
    if (shared.RESULTS / SCRATCH).is_file():
        scratch = grid_rows(shared.load(SCRATCH)["runs"], scratch_arms.ARMS, GRIDS)
        rows.update((row["arm"], row) for row in scratch)
    timing = shared.load("queue_vs_batch_grid_timing.json")["rows"]
    label = {arm: method for method, _, arm, _ in METHODS}
    cells = {}
    for _, _, arm, timed in METHODS:
        row = rows.get(arm)
        test = (
            "—"
            if not row or len(row["test"]) < 3
            else mean_text(row["test"]) + ("" if row["complete"] else " (pick not final)")
        )
        means = list(tatoeba.tatoeba_means(f"tatoeba_{arm}_22_grid").values())
        f1 = [
            mean_text([run[column] for run in means], scale=1) if len(means) >= 3 else "—"
            for column in ("112", "the Bible's 21")
        ]
        cost = timing.get(timed) if timed else None
        ratios = (
            [
                f"{cost['seconds_per_pair'] / timing['mnrl_B']['seconds_per_pair']:.2f}×",
                f"{cost['held_mb'] / timing['mnrl_B']['held_mb']:.2f}×",
            ]
            if cost
            else ["—", "—"]
        )
        if row is None:
            verdict = "cannot show yet: not run on the 22-language task"
        elif arm not in HF_XLSR:
            verdict = "a peer"
        elif missing := [label[other["arm"]] for other in (row, *peers_of(arm, rows)) if not other["complete"]]:
            verdict = f"cannot show yet: {' and '.join(missing)} without the whole grid and 3 seeds"
        else:
            _, peer, difference, spread, holds = grid_verdict([row, *peers_of(arm, rows)], [arm])
            verdict = (
                f"{'holds' if holds else 'does not hold'} against {label[peer['arm']]}: "
                f"{100 * difference:+.1f} points, the larger seed spread {100 * spread:.1f}"
            )
        cells[arm] = [test, *f1, *ratios, verdict]
    return cells


HEADER = ["22 languages, test (%)", "Tatoeba F1, 112", "Tatoeba F1, the Bible's 21", "s / pair × MNRL (en-fr)",
          "memory × MNRL (en-fr)", "against the strongest peer at its best"]  # fmt: skip


def methods_summary() -> str:
    """One row per method or peer: its name, its class and `method_cells`."""
    lines = ["| " + " | ".join(["method", "class", *HEADER]) + " |", "| --- | --- |" + " ---: |" * 5 + " --- |"]
    cells = method_cells()
    for method, name, arm, _ in METHODS:
        lines.append(f"| {method} | {name} | " + " | ".join(cells[arm]) + " |")
    return "\n".join(lines) + "\n"


# what each method's paper reports of sentence retrieval or transfer, beside its measured row on its model page:
# (the table, its setting, its figure), typed from the papers (../shared/papers)
PAPERS = {
    "hf_xlsr": ("Table 1: Tatoeba en-zh, accuracy", "BERT-base encoders, one per language; 5M en-zh pairs",
                "97.4 (zh→en), 96.6 (en→zh)"),
    "hictl": ("Table 2: XNLI, cross-lingual test, accuracy; the paper reports no sentence retrieval",
              "from XLM-R base; CCNet and parallel corpora in 100 languages", "77.3, the mean of 15 languages"),
    "cmlm": ("Table 5: Tatoeba, XTREME's 36 languages, retrieval accuracy", "CMLM + BR, BERT-base encoder; "
             "Common Crawl in 113 languages, bitext of over 100 languages with English", "94.7, their mean"),
    "lightweight": ("Table 4: sentence retrieval, P@1 of 2,000 queries among 200,000 sentences",
                    "2 layers, width 512, from scratch; ParaCrawl en-fr, en-de, en-es, en-it",
                    "88.8, the mean of 8 directions (en-fr 90.2, 90.8)"),
}  # fmt: skip
MODEL_PAGES = {"hf_xlsr": "dual-momentum", "hictl": "hictl", "cmlm": "cmlm", "lightweight": "lightweight"}


def model_row(arm: str) -> str:
    """A model page's measured row (`method_cells`: its own, and the peer it faces) beside its paper's figure."""
    cells, (table, setting, figure) = method_cells(), PAPERS[arm]
    name = {row_arm: method for method, _, row_arm, _ in METHODS}[arm]
    lines = ["| " + " | ".join(["", *HEADER]) + " |", "| --- |" + " ---: |" * 5 + " --- |",
             f"| {name}, this project's run | " + " | ".join(cells[arm]) + " |"]  # fmt: skip
    return "\n".join(lines) + f"\n\nIts paper: {table}; {setting}: {figure}.\n"


TABLES: dict[str, Callable[[], str]] = {
    "methods-summary": methods_summary,
    "reliability": reliability,
    "questions-summary": questions_summary,
    "tatoeba-verdicts": tatoeba_verdicts,
    **{f"model-row-{page}": functools.partial(model_row, arm) for arm, page in MODEL_PAGES.items()},
}
