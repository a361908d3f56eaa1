"""Mining two text files of any size: embeddings go to memory-mapped files, texts are read back from the input files
by offset as the pairs are written."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..encoders import Encoder
from .margin import mine
from .search import check_index, index_spec
from .shards import SHARD_SIZE, VECTORS, corpus_manifest, embed_shards, join_shards, open_folder


def embed_file(
    encoder: Encoder,
    sentences,
    language: str,
    path: str | os.PathLike,
    chunk: int = 8192,
    progress: bool = True,
    model: str = "",
) -> np.ndarray:
    """Embed a `SentenceFile` into a float32 ``.npy`` file at ``path`` and return it memory-mapped: neither the texts
    nor the vectors are held in memory all at once. The vectors are written in shards (``shards.py``) in the folder
    ``<path>.shards``, which keeps the manifest afterwards: a job stopped at any point and started again with the
    same ``path`` resumes from its finished shards, and finds a finished ``path`` of the same corpus and ``model``
    done."""
    path = Path(path)
    folder = Path(f"{path}.shards")
    manifest = corpus_manifest(sentences, language, model, SHARD_SIZE)
    open_folder(folder, manifest)
    if not path.is_file():
        embed_shards(encoder, sentences, language, folder, manifest, chunk=chunk, progress=progress)
        join_shards(folder)
        os.replace(folder / VECTORS, path)
    return np.load(path, mmap_mode="r")


def mine_files(
    encoder: Encoder,
    source,
    target,
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
) -> int:
    """Mine two `SentenceFile` s: embed each into ``work_dir`` (memory-mapped), mine, and
    write the pairs scoring at least ``threshold`` (all with None), best first, to ``output`` as
    ``score, source line, target line, source, target`` (tab-separated), reading each text back from its file as
    the pair is written. Returns the number of pairs written."""
    from ...utils import atomic_file

    check_index(index_spec(0, index), encoder(["a"], source_language).shape[1])  # before any work
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    x = embed_file(encoder, source, source_language, Path(work_dir) / "source.npy", progress=progress, model=model)
    y = embed_file(encoder, target, target_language, Path(work_dir) / "target.npy", progress=progress, model=model)
    pairs = mine(x, y, k=k, margin=margin, mode=mode, index=index, memory=memory)
    if threshold is not None:
        pairs = pairs.above(threshold)
    with atomic_file(output) as handle, source.reader() as source_text, target.reader() as target_text:
        for s, t, score in zip(pairs.source.tolist(), pairs.target.tolist(), pairs.scores.tolist(), strict=True):
            handle.write(f"{score:.4f}\t{source.line_numbers[s]}\t{target.line_numbers[t]}\t{source_text(s)}\t"
                         f"{target_text(t)}\n")  # fmt: skip
    return len(pairs)
