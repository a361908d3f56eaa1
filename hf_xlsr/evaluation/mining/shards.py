# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""A corpus embedded in shards: ``shard-NNNNN.npy`` files of ``shard_size`` sentences each (float32, L2-normalised,
memory-mapped while written), each renamed into place only once whole, beside a manifest (``shards.json``) naming the
corpus, the model and the sizes. A job stopped at any point resumes from its finished shards; processes (one per GPU
under ``accelerate launch``) take every n-th shard; the vectors are then one memory-mapped ``vectors.npy``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ...utils import with_umask
from ..encoders import Encoder

MANIFEST = "shards.json"
VECTORS = "vectors.npy"
SHARD_SIZE = 100_000


def shard_path(folder: Path, index: int) -> Path:
    return folder / f"shard-{index:05d}.npy"


def corpus_manifest(sentences, language: str | None, model: str, shard_size: int) -> dict:
    """What a folder's shards are embeddings of: the file (path, size, modification time), its sentence count, the
    language and the model; a folder holding another corpus's or model's shards is refused, never mixed."""
    stat = sentences.path.stat()
    return {
        "file": str(sentences.path.resolve()),
        "bytes": stat.st_size,
        "modified": stat.st_mtime_ns,
        "sentences": len(sentences),
        "language": language,
        "model": model,
        "shard_size": shard_size,
        "shards": -(-len(sentences) // shard_size),
    }


def open_folder(folder: str | os.PathLike, manifest: dict) -> Path:
    """Create ``folder`` with ``manifest``, or check that the manifest it holds is this one (a one-line error
    naming the first field that differs)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = folder / MANIFEST
    if written.is_file():
        held = json.loads(written.read_text())
        differs = next((key for key in manifest if held.get(key) != manifest[key]), None)
        if differs is not None:
            raise ValueError(
                f"{folder} holds the shards of another job ({differs}: {held.get(differs)!r}, not "
                f"{manifest[differs]!r}): give another folder, or remove it"
            )
        return folder
    temporary = folder / f".{MANIFEST}.{os.getpid()}.partial"
    temporary.write_text(json.dumps(manifest, indent=2))
    with_umask(temporary)
    os.replace(temporary, written)  # every process writes the same manifest: the last rename wins, alike
    return folder


def embed_shards(
    encoder: Encoder,
    sentences,
    language: str | None,
    folder: str | os.PathLike,
    manifest: dict,
    process_index: int = 0,
    num_processes: int = 1,
    chunk: int = 8192,
    progress: bool = True,
) -> list[int]:
    """Embed this process's shards of ``sentences`` (a `SentenceFile`) that ``folder`` does not hold yet: shard ``i``
    is sentences ``i * shard_size`` to ``(i + 1) * shard_size``, and process ``p`` of ``n`` takes the shards with
    ``i % n == p``. Each shard is written to a temporary file and renamed once whole. Returns the shards embedded."""
    from tqdm.auto import tqdm

    folder = open_folder(folder, manifest)
    size, count = manifest["shard_size"], manifest["shards"]
    todo = [i for i in range(process_index, count, num_processes) if not shard_path(folder, i).is_file()]
    rows = sum(min(len(sentences), (i + 1) * size) - i * size for i in todo)
    described = f"embedding {sentences.path.name}: {len(todo)} of {count} shards"
    with tqdm(total=rows, desc=described, unit="sentence", disable=not progress or not todo) as bar:
        for i in todo:
            begin, end = i * size, min(len(sentences), (i + 1) * size)
            temporary, vectors, start = folder / f".shard-{i:05d}.{os.getpid()}.partial.npy", None, 0
            for batch in sentences.batches(chunk, begin, end):
                embedded = encoder(batch, language)
                if vectors is None:
                    shape = (end - begin, embedded.shape[1])
                    vectors = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32, shape=shape)
                vectors[start : start + len(batch)] = embedded
                start += len(batch)
                bar.update(len(batch))
            vectors.flush()
            del vectors
            with_umask(temporary)
            os.replace(temporary, shard_path(folder, i))
    return todo


def join_shards(folder: str | os.PathLike) -> np.ndarray:
    """The vectors of every shard of ``folder`` as one memory-mapped array (``vectors.npy``, written once, atomically,
    after which the shards are removed); a shard missing is an error naming it."""
    folder = Path(folder)
    target = folder / VECTORS
    if not target.is_file():
        manifest = json.loads((folder / MANIFEST).read_text())
        shards = [shard_path(folder, i) for i in range(manifest["shards"])]
        missing = [path.name for path in shards if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"{folder}: {len(missing)} shards are not embedded yet, the first {missing[0]}")
        first = np.load(shards[0], mmap_mode="r")
        temporary = folder / f".{VECTORS}.{os.getpid()}.partial.npy"
        joined = np.lib.format.open_memmap(
            temporary, mode="w+", dtype=np.float32, shape=(manifest["sentences"], first.shape[1])
        )
        start = 0
        for path in shards:
            part = np.load(path, mmap_mode="r")
            joined[start : start + len(part)] = part
            start += len(part)
        joined.flush()
        del joined, first
        with_umask(temporary)
        os.replace(temporary, target)
        for path in [*shards, *folder.glob(".shard-*.partial.npy")]:  # and what a stopped process left half-written
            path.unlink()
    return np.load(target, mmap_mode="r")


__all__ = ["MANIFEST", "SHARD_SIZE", "VECTORS", "corpus_manifest", "embed_shards", "join_shards", "open_folder"]
