# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Mining two text files of any size: embeddings go to memory-mapped files, texts are read back from the input files
by offset as the pairs are written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..encoders import Encoder
from .index import check_index, index_spec
from .job import mine_in_shards
from .shards import SHARD_SIZE, VECTORS, corpus_manifest, embed_shards, join_shards, open_folder

if TYPE_CHECKING:
    from ...data.bitext import SentenceFile


def embed_file(
    encoder: Encoder,
    sentences: SentenceFile,
    language: str,
    path: str | os.PathLike,
    chunk: int = 8192,
    progress: bool = True,
    model: str = "",
    process_index: int = 0,
    num_processes: int = 1,
    wait: Callable[[], None] = lambda: None,
    shard_size: int = SHARD_SIZE,
) -> np.ndarray:
    """Embed a `SentenceFile` into a float32 ``.npy`` file at ``path`` and return it memory-mapped: neither the texts
    nor the vectors are held in memory all at once. The vectors are written in shards (``shards.py``) in the folder
    ``<path>.shards``, which keeps the manifest afterwards: a job stopped at any point and started again with the
    same ``path`` resumes from its finished shards, and finds a finished ``path`` of the same corpus and ``model``
    done. Process ``process_index`` of ``num_processes`` embeds its share of the shards; process 0 joins them once
    every process is done (``wait``: their barrier)."""
    path = Path(path)
    folder = Path(f"{path}.shards")
    manifest = corpus_manifest(sentences, language, model, shard_size)
    open_folder(folder, manifest)
    if not path.is_file():
        embed_shards(encoder, sentences, language, folder, manifest, process_index, num_processes, chunk, progress)
        wait()
        if process_index == 0:
            join_shards(folder)
            os.replace(folder / VECTORS, path)
        wait()
    return np.load(path, mmap_mode="r")


def mine_files(
    encoder: Encoder,
    source: SentenceFile,
    target: SentenceFile,
    output: str | os.PathLike,
    source_language: str,
    target_language: str,
    threshold: float | None,
    work_dir: str | os.PathLike,
    k: int = 4,
    margin: str = "ratio",
    mode: str = "max",
    index: str = "auto",
    progress: bool = True,
    model: str = "",
    memory: int | None = None,
    process_index: int = 0,
    num_processes: int = 1,
    wait: Callable[[], None] = lambda: None,
    shard_size: int = SHARD_SIZE,
) -> int | None:
    """Mine two `SentenceFile` s: embed each into ``work_dir`` (memory-mapped), mine, and
    write the pairs scoring at least ``threshold`` (all with None), best first, to ``output`` as
    ``score, source line, target line, source, target`` (tab-separated), reading each text back from its file as
    the pair is written. Returns the number of pairs written.

    Each stage is kept in ``work_dir`` and resumed from there (`embed_file`, `mine_in_shards`); process
    ``process_index`` of ``num_processes`` (``accelerate launch``) does its share of each, ``wait`` being their
    barrier, and process 0 writes the pairs (the others return None); ``shard_size`` sentences make a shard of the
    embeddings and queries one of the search."""
    from ...utils import atomic_file

    check_index(index_spec(0, index), encoder(["a"], source_language).shape[1])  # before any work
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    share = {"process_index": process_index, "num_processes": num_processes, "wait": wait, "shard_size": shard_size}
    x = embed_file(
        encoder, source, source_language, Path(work_dir) / "source.npy", progress=progress, model=model, **share
    )
    y = embed_file(
        encoder, target, target_language, Path(work_dir) / "target.npy", progress=progress, model=model, **share
    )
    pairs = mine_in_shards(
        x,
        y,
        Path(work_dir) / "search",
        k=k,
        margin=margin,
        mode=mode,
        index=index,
        memory=memory,
        progress=progress,
        **share,
    )
    if pairs is None:
        return None
    if threshold is not None:
        pairs = pairs.above(threshold)
    with atomic_file(output) as handle, source.reader() as source_text, target.reader() as target_text:
        for s, t, score in zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True):
            handle.write(
                f"{score:.4f}\t{source.line_numbers[s]}\t{target.line_numbers[t]}\t{source_text(s)}\t"
                f"{target_text(t)}\n"
            )
    return len(pairs)
