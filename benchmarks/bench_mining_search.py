"""The search of bitext mining alone (nearest neighbours both ways, margin scoring, one-to-one pairing) on the
embeddings of a strong encoder, against the sentence-transformers example's approach, from 10,000 to about 409,000
sentences per side; and the faiss settings ``hf_xlsr.evaluation.mine`` uses by default, chosen by measurement.

Data: the corpus of ``mining_corpus.py``, sized as in ``bench_mining_e2e.py`` (5% of each side has its
translation on the other side; all 5,000 gold pairs at full size). The sentences are embedded once by ``--model`` on
``--backend`` (memory-mapped, cached under ``benchmarks/.cache/mining_large``; a larger size embeds only the rows it
adds).

* ``--sweep SIZE``: index settings at one size, each in a process of its own: seconds, peak resident memory added,
  recall of the gold pairs, best F1, and the agreement of the mined pairs with exact search's.
* scaling (the default): ``hf_xlsr`` (``mine(index="auto")``) and ``peer`` (``mining_corpus.peer_mine``: IVF with
  n / 1000 lists and 3 probes, margins in a Python loop, greedy pairing) at each of ``--sizes``, alternating which
  runs first, each in a process of its own; with the embeddings already in memory, as the example holds them.

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_search.py --model MODEL --sweep 100000 \\
        --out benchmarks/results/mining_search_sweep.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_search.py --model MODEL --out benchmarks/results/mining_search.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from mining_corpus import CACHE, build_sides, memory_mb, peer_mine, reset_peak, scored, subsample

# (name, index) for the sweep; "peer" is the sentence-transformers example's search
SWEEP = [  # (name, index, k-means sample per list: None for the library's default)
    ("exact", "flat", None),
    ("peer", "peer", None),
    ("IVF 4 sqrt(n) lists, 16 probes", "IVF{4r},Flat|nprobe=16", None),
    ("IVF 4 sqrt(n), 8 probes", "IVF{4r},Flat|nprobe=8", None),
    ("IVF sqrt(n), 8 probes", "IVF{r},Flat|nprobe=8", None),
    ("IVF sqrt(n), 4 probes", "IVF{r},Flat|nprobe=4", None),
    ("IVF sqrt(n), SQ8, 8 probes", "IVF{r},SQ8|nprobe=8", None),
    ("HNSW32, efSearch 64", "HNSW32|efSearch=64", None),
    ("OPQ48 + IVF sqrt(n) + PQ48, 16 probes", "OPQ48,IVF{r},PQ48|nprobe=16", None),
    ("IVF 4 sqrt(n), 16 probes, k-means on 64 per list", "IVF{4r},Flat|nprobe=16", 64),
    ("IVF 4 sqrt(n), 8 probes, k-means on 64 per list", "IVF{4r},Flat|nprobe=8", 64),
    ("IVF 2 sqrt(n), 8 probes, k-means on 64 per list", "IVF{2r},Flat|nprobe=8", 64),
    ("IVF 2 sqrt(n), 16 probes, k-means on 64 per list", "IVF{2r},Flat|nprobe=16", 64),
    ("IVF sqrt(n), 16 probes, k-means on 64 per list", "IVF{r},Flat|nprobe=16", 64),
    ("IVF sqrt(n), SQ8, 16 probes, k-means on 64 per list", "IVF{r},SQ8|nprobe=16", 64),
    ("IVF 4 sqrt(n), SQ8, 16 probes, k-means on 64 per list", "IVF{4r},SQ8|nprobe=16", 64),
    ("IVF 4 sqrt(n), SQ8, 24 probes, k-means on 64 per list", "IVF{4r},SQ8|nprobe=24", 64),
    ("IVF 4 sqrt(n), 24 probes, k-means on 64 per list", "IVF{4r},Flat|nprobe=24", 64),
    ("peer, again", "peer", None),
    ("exact, again", "flat", None),
]


def embeddings(model: str, backend: str, threads: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Both full sides as embedded by ``model`` on ``backend`` (memory-mapped, cached), with at least the rows of
    ``size`` sentences per side filled in: the rows of a size hold those of every smaller size, so a larger size
    embeds only the rows it adds."""
    source_file, target_file, _ = build_sides(5000, 0)
    needed = subsample(size)[:2]
    sides = []
    for side, (file, language) in enumerate(((source_file, "en"), (target_file, "fr"))):
        name = "_".join(Path(model).resolve().parts[-2:])
        path = CACHE / f"{('source', 'target')[side]}_{name}_{backend}.npy"
        done_path = path.with_suffix(".done.npy")
        with open(file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        done = np.load(done_path) if done_path.is_file() else np.zeros(len(lines), dtype=bool)
        missing = [row for row in needed[side] if not done[row]]
        if missing:
            import torch

            from hf_xlsr.evaluation import as_encoder
            from hf_xlsr.evaluation.loading import load_for_evaluation

            torch.set_num_threads(threads)
            loaded, tokenizers = load_for_evaluation(model)
            encode = as_encoder(loaded, tokenizers, batch_size=32, max_length=128, backend=backend, show_progress=True)
            dimension = len(encode(["a"], language)[0])
            mode = "r+" if path.is_file() else "w+"
            vectors = np.lib.format.open_memmap(path, mode=mode, dtype=np.float32, shape=(len(lines), dimension))
            for start in range(0, len(missing), 8192):  # saved as it goes: an interrupted run loses one chunk
                rows = missing[start : start + 8192]
                vectors[rows] = encode([lines[row] for row in rows], language)
                vectors.flush()
                done[rows] = True
                np.save(done_path, done)
            del vectors
        sides.append(np.load(path, mmap_mode="r"))
    return sides[0], sides[1]


def expand(index: str, n: int) -> str:
    root = int(np.sqrt(n))
    return index.replace("{4r}", str(4 * root)).replace("{2r}", str(2 * root)).replace("{r}", str(root))


def child(args) -> dict:
    """One search at one size, in this process: seconds and the peak memory it added over its inputs."""
    import faiss

    faiss.omp_set_num_threads(args.threads)
    from hf_xlsr.evaluation import mining
    from hf_xlsr.evaluation.mining import mine

    if args.train_points:
        mining.IVF_TRAIN_POINTS = args.train_points
    x_full, y_full = embeddings(args.model, args.backend, args.threads, args.size)
    source_rows, target_rows, gold = subsample(args.size)
    x, y = np.ascontiguousarray(x_full[source_rows]), np.ascontiguousarray(y_full[target_rows])
    reset_peak()
    before = memory_mb("VmRSS")
    began = time.perf_counter()
    if args.index == "peer":
        pairs = peer_mine(x, y, k=4)
    else:
        mined = mine(x, y, k=4, index=expand(args.index, len(y)))
        pairs = list(zip(mined.source.tolist(), mined.target.tolist(), mined.scores.tolist(), strict=True))
    seconds = time.perf_counter() - began
    added = memory_mb("VmHWM") - before
    Path(args.pairs).write_text(json.dumps(pairs))
    return {"seconds": seconds, "peak_added_mb": added, "inputs_mb": (x.nbytes + y.nbytes) / 2**20,
            **scored(pairs, gold)}  # fmt: skip


def run_child(args, index: str, size: int, pairs: Path, train_points: int | None = None) -> dict:
    command = [sys.executable, __file__, "--child", "--model", args.model, "--backend", args.backend, "--threads",
               str(args.threads), "--index", index, "--size", str(size), "--pairs", str(pairs),
               "--out", "-"] + (["--train-points", str(train_points)] if train_points else [])  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if result.returncode:
        raise SystemExit(f"{index} at {size} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def agreement(pairs: Path, reference: Path) -> float:
    """The share of exact search's mined pairs that this search mined too."""
    ours = {(s, t) for s, t, _ in json.loads(pairs.read_text())}
    exact = {(s, t) for s, t, _ in json.loads(reference.read_text())}
    return len(ours & exact) / len(exact)


def report(path: str) -> None:
    """The Markdown table of a results file: each setting (sweep) or each size and arm (scaling)."""
    data = json.loads(Path(path).read_text())
    peers = {run["size"]: run for run in data["runs"] if run["arm"].startswith("peer")}
    print("| search | seconds | × peer | added MB | × peer | recall | best F1 | F1 at 1.06 | pairs as exact's |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")  # fmt: skip
    for run in data["runs"]:
        peer = peers.get(run["size"])
        time_ratio, memory_ratio = (
            f"{run[key] / peer[key]:.2f}" if peer else "—" for key in ("seconds", "peak_added_mb")
        )
        agree = f"{100 * run['agreement_with_exact']:.1f}%" if "agreement_with_exact" in run else "—"
        print(
            f"| {run['arm']} | {run['seconds']:.1f} | {time_ratio} | {run['peak_added_mb']:.0f} | {memory_ratio} | "
            f"{100 * run['recall']:.1f} | {100 * run['best_f1']:.1f} | {100 * run['f1_at_1.06']:.1f} | {agree} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a sentence-transformers folder (an hf_xlsr export)")
    parser.add_argument("--backend", default="bf16")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000, 200_000, 409_226])
    parser.add_argument("--sweep", type=int, help="run the index settings at this size instead")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--embed-only", action="store_true", help="embed the rows of the largest size, then stop")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--index")
    parser.add_argument("--size", type=int)
    parser.add_argument("--pairs")
    parser.add_argument("--train-points", type=int, help="k-means sample per inverted list (IVF_TRAIN_POINTS)")
    parser.add_argument("--report", action="store_true", help="print the table of a results file (--out) and stop")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.report:
        report(args.out)
        return
    if args.child:
        print(json.dumps(child(args)))
        return
    from common import Results, machine

    embeddings(args.model, args.backend, args.threads, args.sweep or max(args.sizes))  # before anything is timed
    if args.embed_only:
        return
    results = Results(args.out, {"script": "benchmarks/bench_mining_search.py", "model": args.model,
                                 "backend": args.backend, "threads": args.threads, "machine": machine()})  # fmt: skip
    work = CACHE / "search"
    work.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        reference = work / f"sweep_{args.sweep}_0.json"  # exact search, the first setting
        for number, (name, index, train_points) in enumerate(SWEEP):
            arm = f"{name} {args.sweep}"
            if results.done(arm, 0):
                continue
            pairs = work / f"sweep_{args.sweep}_{number}.json"
            run = run_child(args, index, args.sweep, pairs, train_points)
            run["agreement_with_exact"] = agreement(pairs, reference)
            results.add({"arm": arm, "seed": 0, "size": args.sweep, "index": expand(index, args.sweep),
                         "train_points": train_points, **run})  # fmt: skip
            print(json.dumps({"arm": arm, **run}), flush=True)
        return
    for position, size in enumerate(args.sizes):
        for arm in ("peer", "hf_xlsr") if position % 2 == 0 else ("hf_xlsr", "peer"):
            if results.done(f"{arm} {size}", 0):
                continue
            run = run_child(args, "peer" if arm == "peer" else "auto", size, work / f"{arm}_{size}.json")
            results.add({"arm": f"{arm} {size}", "seed": 0, "size": size, **run})
            print(json.dumps({"arm": arm, "size": size, **run}), flush=True)


if __name__ == "__main__":
    main()
