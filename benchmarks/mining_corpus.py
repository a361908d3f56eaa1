"""The corpus, the peer and the scores shared by the mining benchmarks (``bench_mining_e2e.py``,
``bench_mining_search.py``).

The corpus is the whole offline Bible (31 translations, read at run time, never stored in the repository): 5,000
verse numbers are the gold pairs, English (World English Bible) on the source side and French (Louis Segond) on the
target side; the other verse numbers are split in two halves, one for each side, and every translation of a verse of
a side's half goes into that side, so the gold pairs are the only translations across the two sides (409,226 source
and 409,224 target sentences), cached as text files under ``benchmarks/.cache/mining_large``. A size of N sentences
per side takes N / 20 gold pairs and fills each side with its first other sentences (``subsample``).

The peer (``peer_mine``) is the approach of sentence-transformers' ``examples/.../parallel-sentence-mining/
bitext_mining.py`` with ``bitext_mining_utils.py``, written out from its description: faiss IVF with
``min(32768, n / 1000)`` lists and 3 probes, the ratio margin scored candidate by candidate in a
Python loop, ``max`` retrieval, greedy one-to-one pairing.
"""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

CACHE = Path(__file__).parent / ".cache" / "mining_large"


def _construct(n_gold: int, seed: int):
    """The two sides as ``(text, gold number or -1, translation code)`` rows, shuffled, and the gold row pairs."""
    from hf_xlsr.data import BIBLE_TRANSLATIONS, load_bible

    texts = {}  # translation code -> {verse key: text}
    for code in sorted(BIBLE_TRANSLATIONS):
        verses = load_bible(["t"], {"t": code}, min_letters=1)
        texts[code] = dict(zip(zip(verses["book"], verses["chapter"], verses["verse"], strict=True), verses["t"],
                               strict=True))  # fmt: skip
    keys = sorted(set().union(*texts.values()))
    both = [key for key in keys if key in texts["4"] and key in texts["l"]]
    rng = np.random.default_rng(seed)
    gold = {both[i] for i in rng.choice(len(both), n_gold, replace=False)}
    rest = [keys[i] for i in rng.permutation(len(keys)) if keys[i] not in gold]
    halves = (set(rest[: len(rest) // 2]), set(rest[len(rest) // 2 :]))
    numbered = {key: i for i, key in enumerate(sorted(gold))}

    def side(gold_code: str, half: set) -> list[tuple[str, int, str]]:
        rows = [(texts[gold_code][key], numbered[key], gold_code) for key in sorted(gold)]
        return rows + [(t[key], -1, code) for code, t in texts.items() for key in sorted(half) if key in t]

    source, target = side("4", halves[0]), side("l", halves[1])
    source = [source[i] for i in rng.permutation(len(source))]
    target = [target[i] for i in rng.permutation(len(target))]
    target_row = {key: row for row, (_, key, _) in enumerate(target) if key >= 0}
    pairs = [(row, target_row[key]) for row, (_, key, _) in enumerate(source) if key >= 0]
    return source, target, pairs


def build_sides(n_gold: int, seed: int) -> tuple[Path, Path, set[tuple[int, int]]]:
    """Write the two sides' sentences to text files (cached), and the Bible translation of each row beside them;
    return the files and the gold ``(source row, target row)`` pairs."""
    source_file, target_file, gold_file = CACHE / "source.txt", CACHE / "target.txt", CACHE / "gold.json"
    if gold_file.is_file() and TRANSLATIONS.is_file():
        return source_file, target_file, {tuple(pair) for pair in json.loads(gold_file.read_text())}
    source, target, pairs = _construct(n_gold, seed)
    CACHE.mkdir(parents=True, exist_ok=True)
    for rows, file in ((source, source_file), (target, target_file)):
        text = "".join(" ".join(row[0].split()) + "\n" for row in rows)
        if not file.is_file():
            file.write_text(text, encoding="utf-8")
        elif file.read_text(encoding="utf-8") != text:  # the embeddings cached for it would be wrong
            raise SystemExit(f"{file} differs from the corpus built now: remove {CACHE} and its embeddings")
    gold_file.write_text(json.dumps(pairs))
    TRANSLATIONS.write_text("".join(row[2] for row in source) + "\n" + "".join(row[2] for row in target) + "\n")
    return source_file, target_file, set(pairs)


TRANSLATIONS = CACHE / "translations.txt"  # the translation code of each row: the source side's line, the target's


def one_language_sides(source_language: str = "en", target_language: str = "fr"):
    """The rows of the whole corpus in one language per side (every English translation on the source side, every
    French one on the target side: the gold pairs and the unpaired verses of those translations), shuffled as the
    corpus is, and the gold pairs as positions among them."""
    from hf_xlsr.data import BIBLE_TRANSLATIONS

    _, _, gold = build_sides(5000, 0)
    codes = TRANSLATIONS.read_text().split("\n")[:2]
    sides = [[row for row, code in enumerate(line) if BIBLE_TRANSLATIONS[code].language == language]
             for line, language in zip(codes, (source_language, target_language), strict=True)]  # fmt: skip
    position = [{row: i for i, row in enumerate(side)} for side in sides]
    return sides[0], sides[1], {(position[0][s], position[1][t]) for s, t in gold}


GOLD_SHARE = 20  # one sentence in 20 of each side has its translation on the other side


def subsample(size: int, seed: int = 0) -> tuple[list[int], list[int], set[tuple[int, int]]]:
    """Rows of the full sides for ``size`` sentences per side (``size / 20`` gold pairs, then the first other rows,
    each side shuffled), and the gold pairs as positions among them."""
    source_file, target_file, gold = build_sides(5000, seed)
    everything = sorted(gold)
    chosen = everything[: size // GOLD_SHARE]
    rng = np.random.default_rng(seed)
    sides = []
    for side, file in ((0, source_file), (1, target_file)):
        gold_rows = {pair[side] for pair in everything}
        with open(file, encoding="utf-8") as handle:
            count = sum(1 for _ in handle)
        others = [row for row in range(count) if row not in gold_rows][: size - len(chosen)]
        rows = [pair[side] for pair in chosen] + others
        sides.append([rows[i] for i in rng.permutation(len(rows))])
    position = [{row: i for i, row in enumerate(side)} for side in sides]
    return sides[0], sides[1], {(position[0][s], position[1][t]) for s, t in chosen}


def peer_mine(x: np.ndarray, y: np.ndarray, k: int = 4):
    """The sentence-transformers example: IVF kNN both ways, ratio margin per candidate in Python, max, greedy."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)

    def knn(a, b):
        n_cluster = min(32768, int(b.shape[0] / 1000))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(b.shape[1]), b.shape[1], n_cluster, faiss.METRIC_INNER_PRODUCT)
        index.nprobe = 3
        index.train(b)
        index.add(b)
        return index.search(a, k)

    x2y_sim, x2y_ind = knn(x, y)
    y2x_sim, y2x_ind = knn(y, x)
    x2y_mean, y2x_mean = x2y_sim.mean(axis=1), y2x_sim.mean(axis=1)

    def score_candidates(a, b, candidates, fwd_mean, bwd_mean):
        scores = np.zeros(candidates.shape)
        for i in range(scores.shape[0]):
            for j in range(scores.shape[1]):
                c = candidates[i, j]
                scores[i, j] = a[i].dot(b[c]) / ((fwd_mean[i] + bwd_mean[c]) / 2)
        return scores

    fwd_scores = score_candidates(x, y, x2y_ind, x2y_mean, y2x_mean)
    bwd_scores = score_candidates(y, x, y2x_ind, y2x_mean, x2y_mean)
    fwd_best = x2y_ind[np.arange(x.shape[0]), fwd_scores.argmax(axis=1)]
    bwd_best = y2x_ind[np.arange(y.shape[0]), bwd_scores.argmax(axis=1)]
    indices = np.stack([np.concatenate([np.arange(x.shape[0]), bwd_best]),
                        np.concatenate([fwd_best, np.arange(y.shape[0])])], axis=1)  # fmt: skip
    scores = np.concatenate([fwd_scores.max(axis=1), bwd_scores.max(axis=1)])
    seen_src, seen_trg, pairs = set(), set(), []
    for i in np.argsort(-scores):
        s, t = int(indices[i][0]), int(indices[i][1])
        if s not in seen_src and t not in seen_trg:
            seen_src.add(s)
            seen_trg.add(t)
            pairs.append((s, t, float(scores[i])))
    return pairs


def scored(pairs: list[tuple[int, int, float]], gold: set[tuple[int, int]]) -> dict:
    from hf_xlsr.evaluation.mining import MinedPairs, best_threshold, precision_recall_f1

    mined = MinedPairs(*(np.asarray(column) for column in zip(*pairs, strict=True)))
    at_cut = precision_recall_f1(mined.above(1.06), gold)
    return {"pairs": len(mined), "recall": precision_recall_f1(mined, gold)["recall"],
            "best_f1": best_threshold(mined, gold)[1], "precision_at_1.06": at_cut["precision"],
            "recall_at_1.06": at_cut["recall"], "f1_at_1.06": at_cut["f1"]}  # fmt: skip


PROBES = (16, 32, 64, 128, 256)  # inverted lists scanned, for `probe_coverage`


def probe_coverage(
    x: np.ndarray, y: np.ndarray, gold: set[tuple[int, int]], sample: int = 2000, centre: bool = True
) -> dict:
    """Where a query's match lies among the inverted lists of the index ``mine(x, y)`` trains (``index="ivf"``):
    for each number of probes p of `PROBES`, the share of gold pairs whose target sits in one of the p lists its
    source scans (the lists nearest the source, as faiss scans them), and the same share for the exact nearest target
    of ``sample`` sources drawn at random. A search finds a vector only in a list it scans, so a share under 1 is
    what the search cannot find with p probes, whatever its codes. As in ``mine``, each side is centred on its own
    mean for the lists (``centre=False``: as it came); the nearest target is by the cosine of the vectors as they
    came."""
    from hf_xlsr.evaluation.mining.index import index_spec
    from hf_xlsr.evaluation.mining.search import train_index
    from hf_xlsr.evaluation.mining.vectors import centred, side_centre, unit_float32

    x, y = unit_float32(x), unit_float32(y)
    pairs = np.array(sorted(gold))
    drawn = np.sort(np.random.default_rng(0).choice(len(x), min(sample, len(x)), replace=False))
    _, nearest = faiss.knn(x[drawn], y, 1, metric=faiss.METRIC_INNER_PRODUCT)
    spec = index_spec(max(len(x), len(y)), "ivf")
    centres = (side_centre(x), side_centre(y)) if centre else (None, None)
    trained = train_index(spec, [x, y], x.shape[1], centres=centres)  # holds the quantizer below
    x, y = centred(x, centres[0]), centred(y, centres[1])
    quantizer = faiss.downcast_index(faiss.extract_index_ivf(trained).quantizer)
    lists = quantizer.ntotal

    def shares(queries: np.ndarray, targets: np.ndarray) -> list[float]:
        _, scanned = quantizer.search(x[queries], lists)  # every list, nearest first
        _, home = quantizer.search(y[targets], 1)  # the list each target is added to
        rank = np.argmax(scanned == home, axis=1)
        return [float(np.mean(rank < p)) for p in PROBES]

    return {"index": spec, "centred": centre, "lists": lists, "probes": list(PROBES),
            "gold": shares(pairs[:, 0], pairs[:, 1]), "nearest": shares(drawn, nearest[:, 0])}  # fmt: skip


def coverage_table(runs: list[dict]) -> str:
    """`probe_coverage` of each run (``{"model", "size", ...}``) as a Markdown table."""
    head = " | ".join(f"{p} probes" for p in PROBES)
    lines = [f"| embeddings | sentences per side | index | sides | what lies in the scanned lists | {head} |",
             "| --- | ---: | --- | --- | --- |" + " ---: |" * len(PROBES)]  # fmt: skip
    for run in runs:
        index = run["index"].replace("|", "\\|")
        sides = "centred" if run.get("centred") else "as they came"
        for key, what in (("gold", "a gold pair's target"), ("nearest", "a random source's nearest target")):
            cells = " | ".join(f"{100 * share:.1f}%" for share in run[key])
            lines.append(f"| {run['model']} | {run['size']:,} | `{index}` | {sides} | {what} | {cells} |")
    return "\n".join(lines) + "\n"
