# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Small helpers shared across hf_xlsr."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def current_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def with_umask(path: Path) -> None:
    """Give ``path`` and everything under it the modes a plain ``open`` / ``mkdir`` would have given them under the
    user's umask: temporary files (``mkstemp``, safetensors' writer) are private, 0600."""
    umask = current_umask()
    for entry in [path, *path.rglob("*")] if path.is_dir() else [path]:
        entry.chmod((0o777 if entry.is_dir() else 0o666) & ~umask)


@contextmanager
def atomic_directory(target: str | os.PathLike, merge: bool = False) -> Iterator[Path]:
    """Write a directory's content into a temporary sibling, then rename it into place.

    Yields the temporary directory. On success it replaces ``target`` (``merge=False``) or moves each of its
    entries into ``target``, replacing entries of the same name (``merge=True``, for folders that hold other
    things too). On failure the temporary directory is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        yield staging
        with_umask(staging)  # mkdtemp and safetensors make private files; the result looks like any other folder
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if merge:
        target.mkdir(exist_ok=True)
        for entry in staging.iterdir():
            destination = target / entry.name
            if destination.is_dir() and not destination.is_symlink():
                shutil.rmtree(destination)
            os.replace(entry, destination)
        staging.rmdir()
        return
    if target.exists():
        retired = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
        os.replace(target, retired / target.name)
        os.replace(staging, target)
        shutil.rmtree(retired)
    else:
        os.replace(staging, target)


@contextmanager
def atomic_file(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Open a temporary sibling of ``path`` for writing text and rename it to ``path`` once written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.partial-")
    try:
        with os.fdopen(descriptor, "w", encoding=encoding) as handle:
            yield handle
        with_umask(Path(temporary))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class UnwritableError(OSError):
    """An output location that cannot be written, found before any work starts."""


def check_writable(path: str | os.PathLike, what: str) -> None:
    """Raise `UnwritableError`, naming ``what`` (``output_dir``, ``--output``) and ``path``, unless ``path``
    could be written: its nearest existing folder takes a new file (tried, then removed), and nothing on the way is
    a file. Nothing is left behind; folders that do not exist yet are not made."""
    path = Path(path).expanduser().absolute()
    existing = path
    while not existing.exists():
        existing = existing.parent
    if existing != path and not existing.is_dir():
        raise UnwritableError(f"{what} {path}: {existing} is a file, not a folder")
    folder = existing if existing.is_dir() else existing.parent
    try:
        descriptor, probe = tempfile.mkstemp(dir=folder, prefix=".hf_xlsr-write-check-")
    except OSError as error:
        raise UnwritableError(f"{what} {path}: cannot write in {folder} ({error.strerror})") from None
    os.close(descriptor)
    os.unlink(probe)


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in blocks: what tells the same data apart from its name."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def free_cpu_threads() -> int:
    """The torch threads a process on the CPU should use: ``OMP_NUM_THREADS`` when set; else the cores that other
    processes leave free (the CPU count less the 1-minute load average), shared by the processes of this machine
    (``LOCAL_WORLD_SIZE`` under ``accelerate launch``), at least one: torch's one thread per core, without programs
    fighting over the same cores, which slows each step several times over."""
    import torch

    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    processes = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    free = (os.cpu_count() or 1) - round(os.getloadavg()[0])
    return max(1, min(torch.get_num_threads(), free // processes))
