"""The blocks of the languages page (docs/benchmarks/languages.md) and README's 22-language and Tatoeba tables."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

from . import shared


def grid_figures(name: str = "multilingual_grid.json") -> tuple[list[str], dict | None, dict[str, list[dict]]]:
    """``(languages, start, {arm: [figures of each seed at its pick]})`` of a `multilingual_grid.py` results file,
    each figure set ``{"seed", "bible", "zero_shot", <language>: mean of both directions with English}`` from the
    test rows, for the arms scored on test so far; ``start`` the untrained start's figures (None before it is
    scored). The languages are the run's Bible
    languages, the ones its test rows hold."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_arms import ARMS, LANGUAGES, START
    from protocol import at_pick

    record = shared.load(name)
    languages = [code for code in record["setup"]["languages"] if code in LANGUAGES]
    runs = record["runs"]

    def figures(run: dict) -> dict:
        test, en = run["test"], languages[0]

        def both_ways(language: str) -> float:
            return (test[f"retrieval_{en}2{language}_accuracy"] + test[f"retrieval_{language}2{en}_accuracy"]) / 2

        each = {language: both_ways(language) for language in languages[1:]}
        return {"arm": run["arm"], "seed": run["seed"], "bible": run["bible"], "zero_shot": run["zero_shot"], **each}

    start = next((figures(run) for run in runs if run["arm"] == START), None)
    return languages, start, {arm: scored for arm in ARMS if (scored := [figures(run) for run in at_pick(runs, arm)])}


def multilingual_grid_languages(name: str = "multilingual_grid.json") -> str:
    """Each language against English on the test rows (the mean of both directions, %): the start and each arm's
    mean over its seeds at its pick; then the pairs of two other languages (zero-shot)."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_arms import LABELS

    languages, start, arms = grid_figures(name)

    def cell(figures: list[dict], key: str) -> str:
        return f"{100 * statistics.fmean(run[key] for run in figures):.2f}" if figures else "—"

    header = ["language", "start", *(f"{LABELS[arm]} ({len(figures)} seeds)" for arm, figures in arms.items())]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for key, label in [*((language, language) for language in languages[1:]), ("zero_shot", "zero-shot pairs")]:
        cells = [cell([start] if start else [], key), *(cell(figures, key) for figures in arms.values())]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def multilingual_grid_paired(name: str = "multilingual_grid.json") -> str:
    """hf_xlsr against MNRL at their picks, paired by seed (mean ± spread of the differences, a paired t-test) over
    the languages with English, the zero-shot pairs and each language; the languages below the start."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from compare import paired
    from scipy.stats import ttest_1samp

    languages, start, arms = grid_figures(name)
    runs = [run for figures in arms.values() for run in figures]
    seeds = {arm: {run["seed"] for run in figures} for arm, figures in arms.items()}
    if len(seeds["hf_xlsr"] & seeds["mnrl"]) < 2:
        return "- hf_xlsr against MNRL paired by seed: cannot show before two seeds of both are at their picks.\n"
    pairs = {key: paired(runs, "hf_xlsr", "mnrl", key) for key in ("bible", "zero_shot", *languages[1:])}

    def differences(key: str) -> list[float]:
        return [100 * (a - b) for a, b in pairs[key].values()]

    def stated(key: str) -> str:
        mean, spread, _ = mean_and_spread(differences(key))
        return f"{mean:+.2f} ± {spread:.2f} (p = {ttest_1samp(differences(key), 0).pvalue:.3f})"

    gains = {language: statistics.fmean(differences(language)) for language in languages[1:]}
    order = sorted(gains, key=gains.get)
    lines = [
        f"- hf_xlsr against MNRL, paired by seed ({len(pairs['bible'])} seeds), points: the {len(languages) - 1} "
        f"languages with English {stated('bible')}; the zero-shot pairs {stated('zero_shot')}.",
        f"- ahead on {sum(gain > 0 for gain in gains.values())} of the {len(gains)} languages; least on "
        + ", ".join(f"{language} {gains[language]:+.2f}" for language in order[:2]) + "; most on "
        + ", ".join(f"{language} {gains[language]:+.2f}" for language in order[::-1][:3]) + ".",
    ]  # fmt: skip
    if start:
        below = {
            arm: [
                language
                for language in languages[1:]
                if statistics.fmean(run[language] for run in figures) < start[language]
            ]
            for arm, figures in arms.items()
        }
        lines.append(
            "- languages below the start: "
            + "; ".join(f"{arm} {', '.join(found) or 'none'}" for arm, found in below.items())
            + "."
        )
    return "\n".join(lines) + "\n"


def sampling_paired(name: str = "multilingual_sampling.json") -> str:
    """Each sampling arm against the default (α = 0.5, mixed batches), paired by seed: the mean of the four pairs, the
    zero-shot pairs and the largest pair (fr), mean ± spread of the differences, how many seeds ahead, a paired
    t-test."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from compare import paired
    from scipy.stats import ttest_1samp

    runs = shared.load(name)["runs"]
    lines = []
    for arm in ("alpha0.5_one_pair", "alpha1", "alpha0"):
        cells = []
        for key, label in (("trained", "mean"), ("zero_shot", "zero-shot"), ("fr", "fr")):
            differences = [100 * (a - b) for a, b in paired(runs, arm, "alpha0.5", key).values()]
            mean, spread, _ = mean_and_spread(differences)
            ahead = sum(d > 0 for d in differences)
            cells.append(
                f"{label} {mean:+.2f} ± {spread:.2f} (ahead on {ahead} of {len(differences)} seeds, p = "
                f"{ttest_1samp(differences, 0).pvalue:.3f})"
            )
        lines.append(f"- `{arm}` against `alpha0.5`, points: " + "; ".join(cells) + ".")
    return "\n".join(lines) + "\n"


SAMPLING_ORDER = (
    "alpha1",
    "alpha0.5",
    "alpha0",
    "alpha0.5_one_pair",
)  # multilingual_sampling.py's arms, in the table's order
SAMPLING_DEFAULT = "alpha0.5"


def sampling_rows(results: dict) -> str:
    """The Markdown table of a results file: each arm's mean ± spread over its seeds, the best of each column bold."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread

    sizes, arms = results["setup"]["sizes"], results["setup"]["arms"]
    columns = ["trained", "zero_shot", *sizes]
    stats = {
        arm: {c: mean_and_spread([r[c] for r in results["runs"] if r["arm"] == arm]) for c in columns}
        for arm in SAMPLING_ORDER
        if any(r["arm"] == arm for r in results["runs"])
    }
    best = {c: max(stats, key=lambda arm: stats[arm][c][0]) for c in columns}
    lines = ["| arm | α | batches | mean of the 4 | zero-shot | "
             + " | ".join(f"{language} ({size:,})" for language, size in sizes.items()) + " |",
             "| --- | ---: | --- |" + " ---: |" * len(columns)]  # fmt: skip
    for arm, row in stats.items():
        cells = []
        for c in columns:
            mean, spread, _ = row[c]
            cell = f"{100 * mean:.1f} ± {100 * spread:.1f}"
            cells.append(f"**{cell}**" if best[c] == arm else cell)
        name = f"`{arm}`" + (" (the default)" if arm == SAMPLING_DEFAULT else "")
        batches = arms[arm]["language_batches"].replace("_", " ")
        lines.append(f"| {name} | {arms[arm]['language_sampling_alpha']:g} | {batches} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sampling_table() -> str:
    """The language-sampling arms (``multilingual_sampling.py``)."""
    record = shared.load("multilingual_sampling.json")
    return sampling_rows(record) + "\n" + shared.caption("multilingual_sampling.json", record["setup"], record["runs"])


def multilingual_step_rows(results: dict) -> str:
    """The Markdown table of a results file: each stream's seconds per step against the bilingual one's."""
    lines = [f"| stream | s / step (median of {results['steps']}) | × bilingual |", "| --- | ---: | ---: |"]
    for name, row in results["rows"].items():
        lines.append(
            f"| {name.replace('bilingual (en-fr)', 'en-fr')} | {row['seconds_per_step']:.3f} | "
            f"{row['ratio_to_bilingual']:.2f} |"
        )
    return "\n".join(lines)


def multilingual_step_table() -> str:
    """A step on 22 languages against a bilingual one (``bench_multilingual_step.py``)."""
    return multilingual_step_rows(shared.load("multilingual_step.json")) + "\n"


SCRATCH = "multilingual_scratch.json"  # the arms trained from scratch, at their own budget


def multilingual_grid(name: str = "multilingual_grid.json") -> str:
    """The 22-language grid (``multilingual_grid.py``): each arm's tune scores, pick and test score under the
    tuning protocol, the verdict once both arms have it, and the caption from the results file; for
    ``multilingual_scratch.json``, the arms trained from scratch (`scratch_arms.ARMS`), "not run yet" before it
    exists."""
    sys.path.insert(0, str(shared.HERE))
    import scratch_arms
    from multilingual_arms import ARMS, GRIDS, HF_XLSR, LABELS
    from protocol import grid_table

    arms = scratch_arms.ARMS if name == SCRATCH else ARMS
    if not (shared.RESULTS / name).is_file():
        return f"Not run yet: `benchmarks/results/{name}` holds no run.\n"
    record = shared.load(name)
    setup, runs = record["setup"], record["runs"]
    rows = (
        f"\n{len(setup['languages'])} languages, {setup['steps']} steps of {setup['batch_size']} pairs; tune: "
        f"{setup['split']['tune']}; test: {setup['split']['test']}"
        + (f", encoded in {setup['test_backend']}" if "test_backend" in setup else "")
        + ".\n"
    )
    return grid_table(runs, arms, LABELS, HF_XLSR, grids=GRIDS) + rows + shared.caption(name, setup, runs)


def multilingual_grid_verdict() -> str:
    """The 22-language grid's verdict lines alone, for README's first screen."""
    return "\n".join(line for line in multilingual_grid().splitlines() if line.startswith("- ")) + "\n"


def multilingual_118(name: str = "multilingual_118.json") -> str:
    """The models trained on the Bible and the software catalogues at the 22-language grid's picks
    (``multilingual_grid.py --picks-from``): each arm's tune score and its seeds' test figures on the held-out Bible
    verses, beside the start on the same rows; the caption from the results file."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_text
    from multilingual_arms import LABELS
    from protocol import SEEDS, grid_verdict, pick

    record = shared.load(name)
    setup, runs = record["setup"], record["runs"]
    languages, start, arms = grid_figures(name)
    lines = ["| arm | pick (lr, T) | seeds | tune, seed 0 (%) | test: with English (%) | test: zero-shot pairs (%) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    if start:
        lines.append(
            f"| the start (multilingual-e5-small) | — | — | — | {100 * start['bible']:.2f} | "
            f"{100 * start['zero_shot']:.2f} |"
        )
    arms = {arm: figures for arm, figures in arms.items() if figures}
    chosen = {arm: pick(runs, arm) for arm in arms}  # each arm's one point, seed 0's run
    for arm, figures in arms.items():
        lines.append(
            f"| {LABELS[arm]} | {chosen[arm]['base_learning_rate']:g}, {chosen[arm]['temperature']:g} | "
            f"{len(figures)} | {100 * chosen[arm]['tune']:.2f} | "
            f"{mean_text([run['bible'] for run in figures], 100, 2)} | "
            f"{mean_text([run['zero_shot'] for run in figures], 100, 2)} |"
        )
    rows = [
        {
            "arm": arm,
            "pick_tune": chosen[arm]["tune"],
            "test": [run["bible"] for run in figures],
            "complete": len(figures) >= len(SEEDS),
        }
        for arm, figures in arms.items()
    ]
    from .tatoeba import TWO_SAMPLERS

    if setup.get("sampler") != "one":
        lines.append(f"\n- hf_xlsr against MNRL: cannot show: {TWO_SAMPLERS}.")
    elif verdict := grid_verdict(rows, ["hf_xlsr"]):
        _, _, difference, spread, holds = verdict
        lines.append(
            f"\n- hf_xlsr against MNRL: {100 * difference:+.2f} points on test, the larger seed spread "
            f"{100 * spread:.2f}: {'holds' if holds else 'does not hold'}."
        )
    else:
        lines.append(f"\n- hf_xlsr against MNRL: cannot show before {len(SEEDS)} seeds of each at its pick.")
    said = (
        f"\n{len(setup['languages'])} languages ({len(languages)} of them in the Bible), {setup['steps']} steps "
        f"of {setup['batch_size']} pairs; tune: {setup['split']['tune']}; test: {setup['split']['test']}, "
        f"encoded in {setup['test_backend']}; picks from `{setup['picks_from']}`.\n"
    )
    return "\n".join(lines) + "\n" + said + shared.caption(name, setup, runs)


def catalogue_rows(record: dict) -> str:
    """The report's table: each source's languages and pairs, and Tatoeba's languages they reach."""
    from hf_xlsr.evaluation.tatoeba import ALL_TATOEBA_CODES as TATOEBA

    counts = record["pairs"]
    reached = {TATOEBA[code] for code in counts if code in TATOEBA}
    lines = ["| source | languages | of Tatoeba's 112 | pairs with English | languages with at least 1,000 pairs |",
             "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for source in [*record["sources"], "all"]:
        per = {code: sum(n for s, n in by.items() if source in ("all", s)) for code, by in counts.items()}
        per = {code: n for code, n in per.items() if n}
        tatoeba = {TATOEBA[code] for code in per if code in TATOEBA}
        lines.append(
            f"| {source} | {len(per)} | {len(tatoeba)} | {sum(per.values()):,} | "
            f"{sum(n >= 1000 for n in per.values())} |"
        )
    return "\n".join(lines) + f"\n\nTatoeba's languages with no catalogue here: {112 - len(reached)}.\n"


def catalogue_corpus(name: str = "catalogue_corpus.json") -> str:
    """The software-catalogue corpus per source: languages, Tatoeba's among them, pairs."""
    record = shared.load(name)
    return catalogue_rows(record) + f"\n({record['setup']['date']}, `{record['setup']['command']}`)\n"


TABLES: dict[str, Callable[[], str]] = {
    "catalogue-corpus": catalogue_corpus,
    "multilingual-grid": multilingual_grid,
    "multilingual-grid-verdict": multilingual_grid_verdict,
    "multilingual-scratch": lambda: multilingual_grid(SCRATCH),
    "multilingual-grid-languages": multilingual_grid_languages,
    "multilingual-grid-paired": multilingual_grid_paired,
    "multilingual-118": multilingual_118,
    "multilingual-118-languages": lambda: multilingual_grid_languages("multilingual_118.json"),
    "sampling-paired": sampling_paired,
    "multilingual-sampling": sampling_table,
    "multilingual-step": multilingual_step_table,
}
