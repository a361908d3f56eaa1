"""Bitext mining's search at the sizes people mine: hf_xlsr's ``mine(index="auto")`` against the sentence-transformers
mining example (``mining_corpus.peer_mine``) from 100,000 to 2,000,000 sentences a side, on this CPU, one thread each.

The sides, the arms, what is timed and how recall is read against exact search are on the report's page
(docs/benchmarks/mining_scale.md); ``--rule`` runs the settings ``auto``'s rule was chosen among (``RULE``, or
``--settings``) on sides the report does not use, one direction's search each.

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_scale.py --threads 1 --out benchmarks/results/mining_scale.json
    python benchmarks/bench_mining_scale.py --report --out benchmarks/results/mining_scale.json   # the report
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
from common import AnonymousPeak, Results, machine, print_result, run_child
from mining_arms import ARMS, REAL
from mining_corpus import CACHE, USE_M3, peer_mine, scored, subsample, use_m3_embeddings

K = 4
SAMPLE = 2000  # random queries per direction for the neighbours' recall
SCALE = CACHE / "scale"


def sides(size: int, seed: int = 0) -> tuple[Path, Path, set[tuple[int, int]]]:
    """The two sides at ``size`` sentences each as ``.npy`` files (written once), and the gold pairs; ``seed`` draws
    the distractors (the report's are seed 0's; ``auto``'s rule beyond the corpus was chosen on seed 1's)."""
    source_rows, target_rows, gold = subsample(min(size, REAL))
    name = f"{size}" if seed == 0 else f"{size}_seed{seed}"
    paths = (SCALE / f"source_{name}.npy", SCALE / f"target_{name}.npy")
    if all(path.is_file() for path in paths):
        return *paths, gold
    SCALE.mkdir(parents=True, exist_ok=True)
    full = use_m3_embeddings((source_rows, target_rows))
    gold_rows = ({s for s, _ in gold}, {t for _, t in gold})
    for side, (rows, path) in enumerate(zip((source_rows, target_rows), paths, strict=True)):
        real = np.asarray(full[side][rows], dtype=np.float32)
        grown = np.lib.format.open_memmap(
            path.with_suffix(".partial.npy"), mode="w+", dtype=np.float32, shape=(size, real.shape[1])
        )
        grown[: len(real)] = real
        others = np.setdiff1d(np.arange(len(real)), np.fromiter(gold_rows[side], dtype=np.int64))
        unit = real[others] / np.linalg.norm(real[others], axis=1, keepdims=True)
        drawn = np.random.default_rng([seed, side]).integers(0, len(others), size=(size - len(real), 2))
        drawn[:, 1] = (drawn[:, 0] + 1 + drawn[:, 1] % (len(others) - 1)) % len(others)  # two different sentences
        for start in range(0, len(drawn), 65536):
            blend = unit[drawn[start : start + 65536, 0]] + unit[drawn[start : start + 65536, 1]]
            grown[len(real) + start : len(real) + start + len(blend)] = blend / np.linalg.norm(
                blend, axis=1, keepdims=True
            )
        grown.flush()
        del grown
        os.replace(path.with_suffix(".partial.npy"), path)
    return *paths, gold


def queries(gold: set[tuple[int, int]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows searched against exact search, each way: the gold pairs' rows, then ``SAMPLE`` random rows."""
    pairs = np.array(sorted(gold))
    rng = np.random.default_rng(0)
    return tuple(np.concatenate([pairs[:, side], rng.choice(size, SAMPLE, replace=False)]) for side in (0, 1))


def neighbours(x: np.ndarray, y: np.ndarray, rows: tuple[np.ndarray, np.ndarray], index: str) -> tuple:
    """The ``K`` neighbours of ``rows`` both ways (source rows in the targets, target rows in the sources), found as
    ``mine(x, y, index=index)`` finds them: the same trained index, the sides centred."""
    from hf_xlsr.evaluation.mining import exact_knn, index_spec, knn, side_centre, train_index

    if index == "flat":
        return exact_knn(x[rows[0]], y, K)[1], exact_knn(y[rows[1]], x, K)[1]
    spec = index_spec(max(len(x), len(y)), index, x.shape[1])
    centres = (side_centre(x), side_centre(y))
    trained = train_index(spec, (x, y), x.shape[1], centres=centres)
    return (
        knn(x[rows[0]], y, K, spec, trained=trained, centres=centres)[1],
        knn(y[rows[1]], x, K, spec, trained=trained, centres=centres[::-1])[1],
    )


def arm_index(arm: str, size: int, dim: int) -> str:
    """The index an hf_xlsr arm mines with: ``auto``'s (`index_spec`), or for ``hf_xlsr_wide`` the same with twice its
    probes (more recall for more time)."""
    from hf_xlsr.evaluation.mining import index_spec

    spec = index_spec(size, "auto", dim)
    return re.sub(r"nprobe=(\d+)", lambda m: f"nprobe={2 * int(m.group(1))}", spec) if arm == "hf_xlsr_wide" else spec


# --rule: the settings auto's rule was chosen among, as faiss strings ({r}: int(sqrt(n)) lists,
# {p}: a twelfth of them, at most 64; a number before r or p multiplies it: {2p} is twice that, {4r} 4 sqrt(n))
RULE = ["IVF{r},Flat|nprobe={p}", "PCA128,IVF{r},Flat|nprobe={p}", "PCA128,IVF{r},Flat|nprobe={p},k_factor=8",
        "PCA64,IVF{r},Flat|nprobe={p},k_factor=8", "PCA128,IVF{r},Flat|nprobe={2p},k_factor=8"]  # fmt: skip


def rule_spec(setting: str, size: int) -> str:
    """A `RULE` setting at ``size`` sentences a side, its ``{r}`` and ``{p}`` (times any number before them) filled."""
    root = int(np.sqrt(size))
    value = {"r": root, "p": min(root // 12, 64)}
    return re.sub(r"\{([\d.]*)([rp])\}", lambda m: str(round(float(m.group(1) or 1) * value[m.group(2)])), setting)


def rule_check(size: int, seed: int, settings: list[str], products: list[str] | None = None) -> Iterator[dict]:
    """Each of ``settings`` (`RULE`'s form) at ``size`` sentences a side (distractors of ``seed``): the seconds of one
    direction's search (training included), and recall against exact search as in the scaling
    (`recall_against_exact`), each as soon as it is measured. With ``products`` (torch dtype names), each setting once
    per entry, in that order, its lists scored in that dtype (`scan._products_dtype`) instead of the CPU's own."""
    import torch

    from hf_xlsr.evaluation.mining import exact_knn, knn, scan, side_centre, train_index

    source, target, gold = sides(size, seed)
    x, y = np.load(source, mmap_mode="r"), np.load(target, mmap_mode="r")
    rows = queries(gold, size)
    exact = exact_knn(x[rows[0]], y, K)[1]
    centres = (side_centre(x), side_centre(y))
    for setting in settings:
        spec = rule_spec(setting, size)
        for kind in products or [None]:
            dtype = getattr(torch, kind) if kind else scan._products_dtype()
            with mock.patch.object(scan, "_products_dtype", lambda dtype=dtype: dtype):
                began = time.perf_counter()
                trained = train_index(spec, (x, y), x.shape[1], centres=centres)
                found = knn(x, y, K, spec, trained=trained, centres=centres)[1][rows[0]]
                seconds = time.perf_counter() - began
            recall = recall_against_exact((found,), (exact,), (rows[1][: len(gold)],), len(gold))
            named = f" {kind} products" if kind else ""
            yield {
                "arm": f"rule {setting}{named} {size} seed {seed}",
                "seed": seed,
                "size": size,
                "index": spec,
                "products": str(dtype).removeprefix("torch."),
                "seconds": seconds,
                **recall,
            }


def child(args) -> dict:
    """One arm at one size, in this process."""
    import faiss
    import torch

    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    from hf_xlsr.evaluation.mining import mine

    source, target, gold = sides(args.size)
    x, y = np.load(source, mmap_mode="r"), np.load(target, mmap_mode="r")
    rows = queries(gold, args.size)
    if args.arm == "exact":
        found = neighbours(x, y, rows, "flat")
        with open(f"{args.neighbours}.partial", "wb") as handle:  # whole or absent: two processes may wait on it
            np.savez(handle, forward=found[0], backward=found[1])
        os.replace(f"{args.neighbours}.partial", args.neighbours)
        return {"index": "Flat"}
    for side in (x, y):  # the inputs read once before the clock starts, as the example holds them in memory
        np.add.reduce(side, axis=0)
    began = time.perf_counter()
    with AnonymousPeak() as peak:
        if args.arm == "peer":
            pairs = peer_mine(x, y, k=K)
        else:
            mined = mine(x, y, k=K, index=arm_index(args.arm, args.size, x.shape[1]))
            pairs = list(zip(mined.source.tolist(), mined.target.tolist(), mined.scores.tolist(), strict=True))
    run = {
        "seconds": time.perf_counter() - began,
        "peak_added_mb": peak.mb,
        **scored(pairs, gold),
        "index": "n / 1000 lists, 3 probes" if args.arm == "peer" else arm_index(args.arm, args.size, x.shape[1]),
    }
    if args.arm != "peer":
        exact = np.load(args.neighbours)
        found = neighbours(x, y, rows, arm_index(args.arm, args.size, x.shape[1]))
        translations = (rows[1][: len(gold)], rows[0][: len(gold)])
        run.update(recall_against_exact(found, (exact["forward"], exact["backward"]), translations, len(gold)))
    return run


def recall_against_exact(found: tuple, exact: tuple, translations: tuple, n_gold: int) -> dict:
    """Gold pairs whose translation is among the ``K`` neighbours, by each search (every direction given pooled: the
    neighbours of each direction's queries, the first ``n_gold`` of them gold, and those gold queries' translations),
    and the share of the other, random queries' exact neighbours found."""
    within = {"found": 0, "exact": 0}
    kept, total = 0, 0
    for ours, truth, translation in zip(found, exact, translations, strict=True):
        within["found"] += int((ours[:n_gold] == translation[:, None]).any(axis=1).sum())
        within["exact"] += int((truth[:n_gold] == translation[:, None]).any(axis=1).sum())
        for mine, true in zip(ours[n_gold:], truth[n_gold:], strict=True):
            kept += len(set(mine.tolist()) & set(true.tolist()))
            total += len(true)
    gold = n_gold * len(found)
    return {
        "gold_within_k": within["found"] / gold,
        "exact_gold_within_k": within["exact"] / gold,
        "neighbour_recall": kept / total,
    }


def run_arm(args, arm: str, size: int) -> dict:
    """The arm at ``size`` in a process of its own (`common.run_child`)."""
    arguments = [
        "--child",
        "--arm",
        arm,
        "--size",
        str(size),
        "--threads",
        str(args.threads),
        "--neighbours",
        str(SCALE / f"exact_{size}.npz"),
        "--out",
        "-",
    ]
    return run_child(__file__, arguments, f"{arm} at {size:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 200_000, REAL, 1_000_000, 2_000_000])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=["peer", "hf_xlsr"])
    parser.add_argument("--rule", action="store_true", help="the settings of RULE at --sizes instead")
    parser.add_argument("--seed", type=int, default=0, help="with --rule: the distractors' seed")
    parser.add_argument("--repeat", type=int, default=0, help="a measurement of the sizes again: 1, 2, ...")
    parser.add_argument("--settings", nargs="+", default=RULE, help="with --rule: these settings (RULE's form)")
    parser.add_argument(
        "--products",
        nargs="+",
        choices=["int8", "bfloat16", "float32"],
        help="with --rule: each setting scored in each of these dtypes, in this order",
    )
    parser.add_argument("--report", action="store_true", help="print the table of a results file (--out) and stop")
    parser.add_argument("--figure", help="with --report: also draw the growth figure to this PNG")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--neighbours", help=argparse.SUPPRESS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.rule and args.repeat:
        parser.error("--repeat measures the scale's arms again; --rule has no repeats (--seed draws other sides)")
    if args.report:
        from report.mining_scale import figure, rule_table, scale_table

        data = json.loads(Path(args.out).read_text())
        print(rule_table(data) if data["setup"].get("rule") else scale_table(data))
        if args.figure:
            figure(data, Path(args.figure))
        return
    if args.child:
        print_result(child(args))
        return
    import torch

    torch.set_num_threads(args.threads)
    setup = {"script": "benchmarks/bench_mining_scale.py", "model": USE_M3, "threads": args.threads,
             "machine": machine(), "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    results = Results(args.out, {**setup, "rule": True} if args.rule else setup)
    if args.rule:
        import faiss

        faiss.omp_set_num_threads(args.threads)
        for size in args.sizes:
            for run in rule_check(size, args.seed, args.settings, args.products):
                results.add(run)
                print(json.dumps(run), flush=True)
        return
    for position, size in enumerate(args.sizes):
        sides(size)  # written before anything is timed
        if not (SCALE / f"exact_{size}.npz").is_file() and not (SCALE / f"exact_{size}.npz.partial").is_file():
            run_arm(args, "exact", size)
        while not (SCALE / f"exact_{size}.npz").is_file():  # another process is computing it
            time.sleep(10)
        for arm in list(ARMS)[:: 1 if position % 2 == 0 else -1]:
            if arm in args.arms and not results.done(f"{arm} {size}", args.repeat):
                run = run_arm(args, arm, size)
                results.add({"arm": f"{arm} {size}", "seed": args.repeat, "size": size, **run})
                print(json.dumps({"arm": arm, "size": size, **run}), flush=True)


if __name__ == "__main__":
    main()
