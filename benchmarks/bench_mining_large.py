"""Mining at corpus size: about 409,000 sentences per side, against the sentence-transformers example's approach.

Data: the whole offline Bible (31 translations, read at run time, never stored in the repository). 5,000 verse
numbers are the gold pairs, English (World English Bible) on the source side and French (Louis Segond) on the
target side; the other verse numbers are split in two halves, one for each side, and every translation of a verse
of a side's half goes into that side, so the gold pairs are the only translations across the two sides (409,226
source and 409,224 target sentences). Each side is written to a text file and embedded once with hf_xlsr's
streaming path (an indexed ``SentenceFile``, embeddings in a memory-mapped ``.npy``, both cached under
``benchmarks/.cache/mining_large``) by ``--model`` (by default the full lightweight model of
``claim_lightweight.py``, 2 layers: MiniLM-L6 would take three times longer on this CPU).

Methods, each timed on the cached embeddings, with the peak resident memory it added:

* full size: hf_xlsr ``mine`` (``index="auto"``: IVF with 4 sqrt(n) lists and 16 probes, vectors added and queries
  searched in blocks, from memory-mapped embeddings) and the peer's IVF (``n / 1000`` lists, 3 probes);
* a 100k subsample (the first 100,000 rows of each side): exact search (hf_xlsr ``index="flat"``, the reference),
  hf_xlsr's IVF and the peer's IVF.

Scores: recall (gold pairs among the mined pairs), the best F1 over thresholds, and precision / recall at the
customary ratio-margin cut of 1.06 that ``hf-xlsr mine`` applies by default.

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_large.py --out benchmarks/results/mining_large.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np
from bench_mining import peer_mine

CACHE = Path(__file__).parent / ".cache" / "mining_large"


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def memory_mb(field: str) -> float:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(f"{field}:")) / 1024


def build_sides(n_gold: int, seed: int) -> tuple[Path, Path, set[tuple[int, int]]]:
    """Write the two sides' sentences to text files (cached); return them and the gold ``(source row, target
    row)`` pairs."""
    source_file, target_file, gold_file = CACHE / "source.txt", CACHE / "target.txt", CACHE / "gold.json"
    if gold_file.is_file():
        return source_file, target_file, {tuple(pair) for pair in json.loads(gold_file.read_text())}
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

    def side(gold_code: str, half: set) -> list[tuple[str, int]]:
        rows = [(texts[gold_code][key], numbered[key]) for key in sorted(gold)]
        return rows + [(t[key], -1) for t in texts.values() for key in sorted(half) if key in t]

    source, target = side("4", halves[0]), side("l", halves[1])
    source = [source[i] for i in rng.permutation(len(source))]
    target = [target[i] for i in rng.permutation(len(target))]
    target_row = {key: row for row, (_, key) in enumerate(target) if key >= 0}
    pairs = [(row, target_row[key]) for row, (_, key) in enumerate(source) if key >= 0]
    CACHE.mkdir(parents=True, exist_ok=True)
    source_file.write_text("".join(" ".join(text.split()) + "\n" for text, _ in source), encoding="utf-8")
    target_file.write_text("".join(" ".join(text.split()) + "\n" for text, _ in target), encoding="utf-8")
    gold_file.write_text(json.dumps(pairs))
    return source_file, target_file, set(pairs)


def embeddings(model_path: str, source_file: Path, target_file: Path, threads: int) -> tuple[np.ndarray, np.ndarray]:
    import torch

    from hf_xlsr.data import SentenceFile
    from hf_xlsr.evaluation import as_encoder
    from hf_xlsr.evaluation.loading import load_for_evaluation
    from hf_xlsr.evaluation.mining import embed_file

    cached = [CACHE / f"{side}_{Path(model_path).name}.npy" for side in ("source", "target")]
    if all(path.is_file() for path in cached):
        return tuple(np.load(path, mmap_mode="r") for path in cached)
    torch.set_num_threads(threads)
    model, tokenizers = load_for_evaluation(model_path)
    encode = as_encoder(model, tokenizers, batch_size=128, max_length=64)
    sides = ((source_file, "en", cached[0]), (target_file, "fr", cached[1]))
    return tuple(embed_file(encode, SentenceFile(file), language, path) for file, language, path in sides)


def scored(pairs: list[tuple[int, int, float]], gold: set[tuple[int, int]]) -> dict:
    from hf_xlsr.evaluation.mining import MinedPairs, best_threshold, precision_recall_f1

    mined = MinedPairs(*(np.asarray(column) for column in zip(*pairs, strict=True)))
    at_cut = precision_recall_f1(mined.above(1.06), gold)
    return {"pairs": len(mined), "recall": precision_recall_f1(mined, gold)["recall"],
            "best_f1": best_threshold(mined, gold)[1], "precision_at_1.06": at_cut["precision"],
            "recall_at_1.06": at_cut["recall"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="runs/claim_lightweight_full")
    parser.add_argument("--gold", type=int, default=5000)
    parser.add_argument("--subsample", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)
    from hf_xlsr.evaluation import mine

    source_file, target_file, gold = build_sides(args.gold, args.seed)
    start = time.time()
    x, y = embeddings(args.model, source_file, target_file, args.threads)
    print(f"{len(x):,} source and {len(y):,} target sentences, {len(gold):,} gold pairs "
          f"(embeddings ready in {time.time() - start:.0f} s)")  # fmt: skip

    def hf_xlsr(x, y, index):
        pairs = mine(x, y, k=4, margin="ratio", mode="max", index=index)
        return list(zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True))

    n = args.subsample
    sub_gold = {(s, t) for s, t in gold if s < n and t < n}
    cases = [
        ("full", "hf_xlsr (auto: IVF)", lambda: hf_xlsr(x, y, "auto"), gold),
        (
            "full",
            "peer (IVF, n/1000 lists, 3 probes)",
            lambda: peer_mine(np.array(x), np.array(y), ann=True),
            gold,
        ),
        ("100k", "hf_xlsr exact (reference)", lambda: hf_xlsr(x[:n], y[:n], "flat"), sub_gold),
        ("100k", "hf_xlsr (IVF)", lambda: hf_xlsr(x[:n], y[:n], "ivf"), sub_gold),
        ("100k", "peer (IVF)", lambda: peer_mine(np.asarray(x[:n]), np.asarray(y[:n]), ann=True), sub_gold),
    ]
    rows = []
    print(f"{'size':<6}{'method':<38}{'seconds':>9}{'peak MB':>9}{'recall':>8}{'best F1':>9}{'P@1.06':>8}")
    for size, name, run, truth in cases:
        reset_peak()
        before = memory_mb("VmRSS")
        began = time.perf_counter()
        pairs = run()
        seconds = time.perf_counter() - began
        row = {"size": size, "method": name, "seconds": seconds, "peak_added_mb": memory_mb("VmHWM") - before,
               "gold_pairs": len(truth), **scored(pairs, truth)}  # fmt: skip
        rows.append(row)
        print(f"{size:<6}{name:<38}{seconds:>9.1f}{row['peak_added_mb']:>9.0f}{row['recall']:>8.3f}"
              f"{row['best_f1']:>9.3f}{row['precision_at_1.06']:>8.3f}", flush=True)  # fmt: skip
    with open(args.out, "w") as handle:
        json.dump({"arguments": vars(args), "sentences": [len(x), len(y)], "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
