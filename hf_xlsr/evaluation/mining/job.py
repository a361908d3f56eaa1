# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The search of a mining job in stages on disk, resumable and split over processes: the trained index
(``index.faiss``, written once by the first process), then the neighbours of each shard of queries in each direction
(``neighbours-<direction>-NNNNN.npz``, each renamed into place only once whole), beside a manifest naming the search.
Process ``p`` of ``n`` (one per GPU under ``accelerate launch``) searches the shards ``i`` with ``i % n == p``; a job
stopped at any point resumes from its finished shards. Every shard is searched alike, so the pairs do not depend on
how many processes ran or how often the job stopped."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np

from ...utils import with_umask
from .index import index_spec
from .margin import MinedPairs, check_mode, pair_neighbours
from .search import knn, prepare, train_index
from .shards import SHARD_SIZE, open_folder
from .vectors import side_centre

DIRECTIONS = ("source-to-target", "target-to-source")
logger = logging.getLogger(__name__)


def fingerprint(vectors: np.ndarray) -> str:
    """A digest of a side's size and of its first and last rows: the search of other vectors is refused, not mixed."""
    rows = np.ascontiguousarray(np.concatenate([vectors[:8], vectors[-8:]]), dtype=np.float32)
    return hashlib.sha1(str(vectors.shape).encode() + rows.tobytes()).hexdigest()


def neighbours_path(folder: Path, direction: str, index: int) -> Path:
    return folder / f"neighbours-{direction}-{index:05d}.npz"


def mine_in_shards(
    source_embeddings: np.ndarray,
    target_embeddings: np.ndarray,
    folder: str | os.PathLike,
    k: int = 4,
    margin: str = "ratio",
    mode: str = "max",
    index: str = "auto",
    memory: int | None = None,
    process_index: int = 0,
    num_processes: int = 1,
    wait: Callable[[], None] = lambda: None,
    shard_size: int = SHARD_SIZE,
    block_size: int = 16384,
    progress: bool = True,
) -> MinedPairs | None:
    """`mine` as a job in ``folder``: this process's shards of queries searched, each direction, then (after
    ``wait``, every process's barrier) the margins and one-to-one pairs of all of them, by process 0 (the others
    return None). An approximate index is
    trained once, by process 0, on each side centred on its own mean (`knn`), and read back by every process."""
    from tqdm.auto import tqdm

    check_mode(mode)
    sides = (source_embeddings, target_embeddings)
    spec = index_spec(max(map(len, sides)), index, sides[0].shape[1], memory)
    manifest = {"index": spec, "k": k, "shard_size": shard_size, "source": fingerprint(sides[0]),
                "target": fingerprint(sides[1])}  # fmt: skip
    folder = open_folder(folder, manifest)
    approximate = spec != "Flat"
    centres = tuple(side_centre(side, block_size) for side in sides) if approximate else None
    trained = None
    if approximate:
        path = folder / "index.faiss"
        if process_index == 0 and not path.is_file():
            logger.info("training the index %s on a sample of both sides (faiss's k-means, no progress shown)", spec)
            temporary = folder / f".index.faiss.{os.getpid()}.partial"
            faiss.write_index(train_index(spec, sides, sides[0].shape[1], centres=centres), str(temporary))
            with_umask(temporary)
            os.replace(temporary, path)
        wait()
        trained = faiss.read_index(str(path))  # its parameters (the probes) are written with it
    found = {}
    for direction, (queries, corpus), oriented in zip(
        DIRECTIONS, (sides, sides[::-1]), (centres, centres[::-1] if centres else None), strict=True
    ):
        count = -(-len(queries) // shard_size)
        todo = [
            i
            for i in range(process_index, count, num_processes)
            if not neighbours_path(folder, direction, i).is_file()
        ]
        rows = sum(min(len(queries), (i + 1) * shard_size) - i * shard_size for i in todo)
        described = f"searching {direction}: {len(todo)} of {count} shards"
        # the corpus made ready once for this process's shards (its inverted lists laid out, or an index built)
        prepared = prepare(corpus, spec, block_size, trained, oriented[1] if oriented else None) if todo else None
        with tqdm(total=rows, desc=described, unit="query", disable=not progress or not todo) as bar:
            for i in todo:
                begin, end = i * shard_size, min(len(queries), (i + 1) * shard_size)
                similarities, indices = knn(
                    queries[begin:end], corpus, k, spec, block_size, trained, oriented, prepared
                )
                temporary = folder / f".neighbours-{direction}-{i:05d}.{os.getpid()}.partial.npz"
                np.savez(temporary, similarities=similarities, indices=indices)
                with_umask(temporary)
                os.replace(temporary, neighbours_path(folder, direction, i))
                bar.update(end - begin)
        found[direction] = count
    wait()
    if process_index != 0:
        return None
    arrays = []
    for direction, count in found.items():
        parts = [np.load(neighbours_path(folder, direction, i)) for i in range(count)]
        arrays += [np.concatenate([p["similarities"] for p in parts]), np.concatenate([p["indices"] for p in parts])]
    return pair_neighbours(*arrays, margin=margin, mode=mode)


__all__ = ["DIRECTIONS", "mine_in_shards"]
