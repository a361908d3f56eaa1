"""What the report's pages share: the results folder, reading a results file, an arm's values over its seeds, and
the claim tables and paired contrasts of the paper claims (MoCo-BERT on a CPU and on a GPU)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # benchmarks/


RESULTS = HERE / "results"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def arm_values(runs: list[dict], arm: str, key: str) -> list[float]:
    """``key`` of each of ``arm``'s runs that has it, in the order of their seeds."""
    return [run[key] for run in sorted(runs, key=lambda run: run["seed"]) if run["arm"] == arm and key in run]


def claim_contrasts(name: str, contrasts: list[tuple[str, ...]], keys: tuple[str, ...] = ("bible",),
                    places: int = 1, scale: float = 100) -> str:  # fmt: skip
    """Each ``(arm, base)`` of a claim's results file, on the seeds both ran, for each of ``keys`` (or each ``(arm,
    key, base, base_key)``: two figures, of one arm or two): both means ± spread, the difference paired by seed (mean
    ± spread, each seed's, a paired t-test) and whether every seed of one lies above every seed of the other."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread, mean_text
    from compare import paired
    from scipy.stats import ttest_1samp

    runs = load(name)["runs"]
    names = {
        "bible": "Bible",
        "hsk": "HSK",
        "probe_en2en": "English probe",
        "probe_en2fr": "cross-lingual probe",
        "adjacent_retrieval": "adjacent-verse retrieval",
        "bible_with_pcr": "Bible retrieval after PCR",
        "own_language_top1_before_pcr": "before",
        "own_language_top1_after_pcr": "own-language share after PCR",
        "chrf": "chrF",
        "bible_en2fr": "en→fr",
        "bible_fr2en": "fr→en",
        "bleu": "BLEU",
    }
    lines = []
    for contrast in contrasts:
        pairs = [(contrast[0], key, contrast[1], key) for key in keys] if len(contrast) == 2 else [contrast]
        for arm, key, base, base_key in pairs:
            a, b = (list(side) for side in zip(*paired(runs, arm, base, key, base_key).values(), strict=True))
            differences = [scale * (x - y) for x, y in zip(a, b, strict=True)]
            mean, spread, n = mean_and_spread(differences)
            each = ", ".join(f"{d:+.{places}f}" for d in differences)
            test = f"; p = {ttest_1samp(differences, 0).pvalue:.3f}" if n > 2 else ""
            if key != base_key:  # two figures: named after their arms
                left = f"`{arm}` {names.get(key, key)}"
                right = names.get(base_key, base_key) if base == arm else f"`{base}` {names.get(base_key, base_key)}"
            else:
                left, right = f"`{arm}`", f"`{base}`"
                left += f", {names.get(key, key)}" if len(keys) > 1 else ""
            apart = (
                "every seed above every seed of the other"
                if min(a) > max(b)
                else "every seed below every seed of the other"
                if max(a) < min(b)
                else "the seeds' ranges meet"
            )
            lines.append(f"- {left} against {right}: {mean_text(a, scale, places)} against "
                         f"{mean_text(b, scale, places)}, paired {mean:+.{places}f}"
                         + (f" ± {spread:.{places}f}" if n > 1 else "")
                         + f" points ({n} seed{'s' * (n > 1)}: {each}{test}); {apart}.")  # fmt: skip
    return "\n".join(lines) + "\n"


CLAIM_COLUMNS = {  # a claim table's column: the runs' key and how its cell is written
    "seeds": ("seed", "count"),
    "en→fr": ("bible_en2fr", "mean"),
    "fr→en": ("bible_fr2en", "mean"),
    "mean": ("bible", "mean"),
    "per seed": ("bible", "each"),
    "probe en→en": ("probe_en2en", "mean"),
    "probe en→fr": ("probe_en2fr", "mean"),
    "train s": ("train_seconds", "seconds"),
    "queue full": ("queue_full_share", "share"),
    "in-queue accuracy at the end": ("final_accuracy_in_queue", "range"),
    "en→zh": ("bible_en2zh", "mean"),
    "zh→en": ("bible_zh2en", "mean"),
    "HSK en→zh": ("hsk_en2zh", "mean"),
    "HSK zh→en": ("hsk_zh2en", "mean"),
    "HSK mean": ("hsk", "mean"),
    "HSK per seed": ("hsk", "each"),
    "other": ("bible", "other"),  # the same arm's mean ± spread in the file ``other`` names
    "adjacent-verse retrieval": ("adjacent_retrieval", "mean"),
    "loss, true first verse": ("cmlm_loss_true_first", "nats"),
    "loss, another row's": ("cmlm_loss_shuffled_first", "nats"),
    "training loss at the end": ("loss", "curve end"),
    "with PCR": ("bible_with_pcr", "mean"),
    "own-language top-1 before PCR": ("own_language_top1_before_pcr", "mean"),
    "after PCR": ("own_language_top1_after_pcr", "mean"),
    "BR loss at the end": ("loss_br", "curve end"),
    "CMLM loss at the stage's end": ("loss_cmlm", "stage end"),  # at the step the arm's name gives ("lr 600+900")
}


NATS = ("nats", "curve end", "stage end")  # losses: mean ± spread as they are, 2 places


def claim_table(name: str, header: str, rows: list[tuple], columns: list[str], seeds: int | None = None,
                decimals: int | dict = 1, trailing: int = 0, other: str | None = None) -> str:  # fmt: skip
    """A claim's table from its results file: one row per ``(arm, label, *text cells)`` of ``rows``, the runs of the
    arm (its first ``seeds`` seeds when given) summarised by ``columns`` (`CLAIM_COLUMNS`: mean ± spread over the seeds
    in percent to ``decimals`` places, or an arm's entry of it, 1 by default; each seed's figure, their count,
    seconds); the last ``trailing`` text cells of a row come after the columns; ``other``: the results file an
    ``other`` column reads the same arm from. ``header`` is the Markdown header row."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread

    record = load(name)
    runs = record["runs"]
    elsewhere = load(other)["runs"] if other else []
    kinds = [CLAIM_COLUMNS[c][1] for c in columns]
    shown = []
    leading = len(rows[0]) - 2 - trailing
    numbers = ["---" if k in ("each", "seconds") else "---:" for k in kinds]
    lines = [header, "| " + " | ".join(["---"] * (1 + leading) + numbers + ["---:"] * trailing) + " |"]
    for arm, label, *text in rows:
        group = sorted((r for r in runs if r["arm"] == arm), key=lambda r: r["seed"])[:seeds]
        shown += group
        cells = []
        for column in columns:
            key, kind = CLAIM_COLUMNS[column]
            values = [r[key] for r in group if r.get(key) is not None]
            if kind == "other":
                values = [r[key] for r in elsewhere if r["arm"] == arm]
            elif kind == "curve end":  # the last logged value of the training loss curve
                values = [[e[key] for e in r["loss_curve"] if key in e][-1] for r in group
                          if any(key in e for e in r.get("loss_curve", []))]  # fmt: skip
            elif kind == "stage end":
                stage = re.search(r"lr (\d+)\+", arm)
                values = [e[key] for r in group for e in r["loss_curve"]
                          if stage and e["step"] == int(stage.group(1)) and key in e]  # fmt: skip
            if not values:
                cells.append("—")
            elif kind == "share":
                cells.append(f"{100 * sum(values) / len(values):.0f}%")
            elif kind == "count":
                cells.append(str(len(values)))
            elif kind == "each":
                cells.append(", ".join(f"{round(100 * v, 2):g}" for v in values))
            elif kind == "range":  # the lowest and the highest seed's figure
                cells.append("–".join(dict.fromkeys(f"{round(100 * v, 2):g}" for v in (min(values), max(values)))))
            elif kind == "seconds":
                cells.append(", ".join(f"{v:,.0f}" for v in values))
            elif kind in NATS:
                mean, spread, n = mean_and_spread(values)
                cells.append(f"{mean:.2f}" + (f" ± {spread:.2f}" if n > 1 else ""))
            else:
                mean, spread, n = mean_and_spread(values)
                places = decimals.get(arm, 1) if isinstance(decimals, dict) else decimals
                cells.append(f"{100 * mean:.{places}f}" + (f" ± {100 * spread:.{places}f}" if n > 1 else ""))
        after = text[len(text) - trailing :] if trailing else []
        lines.append("| " + " | ".join([label, *text[: len(text) - trailing], *cells, *after]) + " |")
    return "\n".join(lines) + "\n" + caption(name, record["setup"], shown)


def caption(name: str, setup: dict, runs: list[dict]) -> str:
    """A generated table's last line: its results file, the machine and the days its ``runs`` finished."""
    finished = sorted({run["finished"][:10] for run in runs if "finished" in run})
    return f"\n`benchmarks/results/{name}`; {setup['machine']}; {', '.join(finished) or 'no date recorded'}.\n"


LIGHTWEIGHT = ["seeds", "en→fr", "fr→en", "mean", "per seed", "probe en→en", "probe en→fr"]


LSIM_ARMS = [("ugt+align", "`ugt+align`", "0"),
             ("ugt+align+sim@sim_weight={w}", "`ugt+align+sim@sim_weight={w}`", "2/{b}"),
             ("ugt+align+sim", "`ugt+align+sim` (the paper's weight)", "2")]  # fmt: skip


def lsim_rows(weight: str, batch: int) -> list[tuple]:
    return [(arm.format(w=weight), label.format(w=weight), text.format(b=batch)) for arm, label, text in LSIM_ARMS]
