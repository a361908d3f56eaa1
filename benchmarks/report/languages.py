"""The blocks of the languages page (docs/benchmarks/languages.md) and README's 22-language and Tatoeba tables."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

from . import shared


def multilingual_paired(name: str = "multilingual_final.json") -> str:
    """hf_xlsr against MNRL, paired by seed (mean ± spread of the differences, a paired t-test), per figure and per
    language, and each trained arm against the start, from the 22-language results file."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from compare import paired
    from multilingual_grid import LANGUAGES
    from scipy.stats import ttest_1samp

    runs = shared.load(name)["runs"]
    start = next(run for run in runs if run["arm"] == "e5-small")
    pairs = {key: paired(runs, "hf_xlsr", "mnrl", key) for key in ("mean", "zero_shot", "hsk", *LANGUAGES[1:])}
    seeds = list(pairs["mean"])

    def differences(key: str) -> list[float]:
        return [100 * (a - b) for a, b in pairs[key].values()]

    def stated(key: str) -> str:
        mean, spread, _ = mean_and_spread(differences(key))
        return f"{mean:+.2f} ± {spread:.2f} (p = {ttest_1samp(differences(key), 0).pvalue:.3f})"

    gains = {language: statistics.fmean(differences(language)) for language in LANGUAGES[1:]}
    order = sorted(gains, key=gains.get)
    mean = {arm: {language: statistics.fmean(pair[side] for pair in pairs[language].values())
                  for language in LANGUAGES[1:]} for side, arm in enumerate(("hf_xlsr", "mnrl"))}  # fmt: skip
    least = min(LANGUAGES[1:], key=lambda language: mean["hf_xlsr"][language] - start[language])
    below = {arm: sum(mean[arm][language] < start[language] for language in LANGUAGES[1:]) for arm in mean}
    return "\n".join([
        f"- hf_xlsr against MNRL, paired by seed ({len(seeds)} seeds), points: the 21 languages {stated('mean')}; "
        f"the zero-shot pairs {stated('zero_shot')}; HSK {stated('hsk')}.",
        f"- ahead on {sum(gain > 0 for gain in gains.values())} of the 21 languages; least on "
        + ", ".join(f"{language} {gains[language]:+.2f}" for language in order[:2]) + "; most on "
        + ", ".join(f"{language} {gains[language]:+.1f}" for language in order[::-1][:4]) + ".",
        f"- languages below the start: MNRL {below['mnrl']}, hf_xlsr {below['hf_xlsr']}; hf_xlsr's smallest gain: "
        f"{least} {100 * (mean['hf_xlsr'][least] - start[least]):+.1f} ({100 * start[least]:.1f} → "
        f"{100 * mean['hf_xlsr'][least]:.1f}%).",
    ]) + "\n"  # fmt: skip


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
            cells.append(f"{label} {mean:+.2f} ± {spread:.2f} (ahead on {ahead} of {len(differences)} seeds, p = "
                         f"{ttest_1samp(differences, 0).pvalue:.3f})")  # fmt: skip
        lines.append(f"- `{arm}` against `alpha0.5`, points: " + "; ".join(cells) + ".")
    return "\n".join(lines) + "\n"


def multilingual_table(which: int) -> str:
    """One of the 22-language tables of ``multilingual_final.py``'s report: 0 the arms, 1 each language with English,
    2 the zero-shot pairs."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_final import report

    record = shared.load("multilingual_final.json")
    table = report(str(shared.RESULTS / "multilingual_final.json"))[which] + "\n"
    return table + (shared.caption("multilingual_final.json", record["setup"], record["runs"]) if which == 0 else "")


def sampling_table() -> str:
    """The language-sampling arms (``multilingual_sampling.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_sampling import report

    record = shared.load("multilingual_sampling.json")
    return report(record) + "\n" + shared.caption("multilingual_sampling.json", record["setup"], record["runs"])


def multilingual_step_table() -> str:
    """A step on 22 languages against a bilingual one (``bench_multilingual_step.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_multilingual_step import report

    return report(shared.load("multilingual_step.json")) + "\n"


def multilingual_grid(name: str = "multilingual_grid.json") -> str:
    """The 22-language grid (``multilingual_grid.py``): each arm's tune scores, pick and test score under the
    tuning protocol, the verdict once both arms have it, and the caption from the results file."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_grid import ARMS, LABELS
    from protocol import grid_table

    record = shared.load(name)
    setup, runs = record["setup"], record["runs"]
    rows = (f"\n{len(setup['languages'])} languages, {setup['steps']} steps of {setup['batch_size']} pairs; tune: "
            f"{setup['split']['tune']}; test: {setup['split']['test']}"
            + (f", encoded in {setup['test_backend']}" if "test_backend" in setup else "") + ".\n")  # fmt: skip
    return grid_table(runs, ARMS, LABELS, ["hf_xlsr"]) + rows + shared.caption(name, setup, runs)


def multilingual_grid_verdict() -> str:
    """The 22-language grid's verdict lines alone, for README's first screen."""
    return "\n".join(line for line in multilingual_grid().splitlines() if line.startswith("- ")) + "\n"


def catalogue_corpus(name: str = "catalogue_corpus.json") -> str:
    """The software-catalogue corpus per source: languages, Tatoeba's among them, pairs."""
    sys.path.insert(0, str(shared.HERE))
    from catalogue_corpus import summary

    record = shared.load(name)
    return summary(record) + f"\n({record['setup']['date']}, `{record['setup']['command']}`)\n"


TABLES: dict[str, Callable[[], str]] = {
    "catalogue-corpus": catalogue_corpus,
    "multilingual-grid": multilingual_grid,
    "multilingual-grid-verdict": multilingual_grid_verdict,
    "multilingual-paired": multilingual_paired,
    "sampling-paired": sampling_paired,
    "multilingual-arms": lambda: multilingual_table(0),
    "multilingual-languages": lambda: multilingual_table(1),
    "multilingual-zero-shot": lambda: multilingual_table(2),
    "multilingual-sampling": sampling_table,
    "multilingual-step": multilingual_step_table,
}
