"""hf_xlsr's list scanner (``scan_lists``) against faiss's own IVF search, on the same inverted lists.

``auto``'s index is trained once at each of ``--sizes`` (the sides of ``bench_mining_scale.py``), and the same
``--queries`` are searched three ways, interleaved in rounds: ``scanner`` (``knn`` on ``list_layout``), ``faiss Flat``
(the same lists, full vectors) and ``faiss SQ8`` (the same lists, 8-bit codes). What is timed, the recall and the
verdict's rule (1.5x at equal gold recall): the report's mining-at-scale page (docs/benchmarks/mining_scale.md).

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_engines.py --sizes 409226 2000000 \\
        --out benchmarks/results/mining_engines.json
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import numpy as np
from bench_mining_scale import K, sides
from common import Results, machine
from mining_arms import ENGINES as ARMS


def query_rows(gold: set[tuple[int, int]], size: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The searched source rows (every gold source first, then random others, ``count`` in all) and the gold
    sources' translations."""
    pairs = np.array(sorted(gold))
    others = np.setdiff1d(np.arange(size), pairs[:, 0])
    extra = np.random.default_rng(0).choice(others, count - len(pairs), replace=False)
    return np.concatenate([pairs[:, 0], extra]), pairs[:, 1]


def measure(size: int, count: int, rounds: int) -> list[dict]:
    """Every arm at ``size`` sentences a side, ``rounds`` times (`ARMS`, the order reversed each round)."""
    import faiss

    from hf_xlsr.evaluation.mining import exact_knn, index_spec, knn, side_centre, train_index
    from hf_xlsr.evaluation.mining.scan import list_layout
    from hf_xlsr.evaluation.mining.search import build_index

    source, target, gold = sides(size)
    x, y = np.load(source, mmap_mode="r"), np.load(target, mmap_mode="r")
    rows, translations = query_rows(gold, size, count)
    queries = np.ascontiguousarray(x[rows])
    exact = exact_knn(queries[: len(translations)], y, K)[1]
    exact_within = float((exact == translations[:, None]).any(axis=1).mean())
    centres = (side_centre(x), side_centre(y))
    spec = index_spec(size, "auto", x.shape[1])
    trained = {"scanner": train_index(spec, (x, y), x.shape[1], centres=centres)}
    trained["faiss Flat"] = trained["scanner"]
    trained["faiss SQ8"] = train_index(spec.replace(",Flat", ",SQ8"), (x, y), x.shape[1], centres=centres)
    lists = [faiss.extract_index_ivf(trained[arm]).quantizer for arm in ("scanner", "faiss SQ8")]
    if not np.array_equal(*(q.reconstruct_n(0, q.ntotal) for q in lists)):
        raise SystemExit(f"{size}: the SQ8 index was trained to other lists than the Flat one")
    runs = []
    for repeat in range(rounds):
        for arm in ARMS[:: 1 if repeat % 2 == 0 else -1]:
            gc.collect()
            began = time.perf_counter()
            if arm == "scanner":
                prepared = list_layout(y, trained[arm], centres[1])
            else:
                prepared = build_index(y, spec, trained=trained[arm], centre=centres[1])
            filled = time.perf_counter() - began
            found = knn(queries, y, K, spec, trained=trained[arm], centres=centres, prepared=prepared)[1]
            seconds = time.perf_counter() - began
            del prepared
            within = float((found[: len(translations)] == translations[:, None]).any(axis=1).mean())
            runs.append(
                {
                    "arm": f"{arm} {size}",
                    "engine": arm,
                    "seed": repeat,
                    "size": size,
                    "queries": count,
                    "index": spec if arm != "faiss SQ8" else spec.replace(",Flat", ",SQ8"),
                    "nprobe": faiss.extract_index_ivf(trained[arm]).nprobe,
                    "seconds": seconds,
                    "fill_seconds": filled,
                    "gold_within_k": within,
                    "exact_gold_within_k": exact_within,
                }
            )
            print(json.dumps(runs[-1]), flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[409_226, 2_000_000])
    parser.add_argument("--queries", type=int, default=2**15, help="source sentences searched at each size")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import faiss
    import torch

    faiss.omp_set_num_threads(1)
    torch.set_num_threads(1)
    setup = {"script": "benchmarks/bench_mining_engines.py", "model": "use-m3", "threads": 1, "queries": args.queries,
             "rounds": args.rounds, "machine": machine(), "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    results = Results(args.out, setup)
    for size in args.sizes:
        if not results.done(f"scanner {size}", 0):
            for run in measure(size, args.queries, args.rounds):
                results.add(run)


if __name__ == "__main__":
    main()
