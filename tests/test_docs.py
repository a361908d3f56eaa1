"""The documentation: the site builds with ``mkdocs build --strict``, every Python example of README.md and the
docs runs, offline, and prints what the text says it prints (the ```text block that follows it), and README stays a
page a newcomer reads through."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the model cards' examples load their models from the Hub, which the tests never reach
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "model_cards" not in p.parts)]
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def examples(page: Path) -> list[tuple[str, str | None]]:
    """Each Python block of ``page`` and the output shown right after it (None when none is)."""
    text = page.read_text()
    blocks = [(match.group(1), match.group(2), match.start(), match.end()) for match in FENCE.finditer(text)]
    found = []
    for i, (language, code, _, end) in enumerate(blocks):
        if language != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = None
        if following and following[0] == "text" and not text[end : following[2]].strip():  # nothing between
            shown = following[1]
        found.append((code, shown))
    return found


def test_readme_is_under_200_lines_and_opens_with_what_the_library_is():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 200
    assert lines[0] == "# hf_xlsr" and lines[2].startswith("Sentences of many languages in one vector space")


def test_the_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "benchmarks" / "index.html").is_file()
    assert (tmp_path / "site" / "benchmarks" / "queue" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert all(name in api for name in ("MomentumQueueLoss", "mine_files", "mine_in_shards", "scan_lists"))
    signatures = re.sub(r"<[^>]+>", "", api)
    assert "threshold: float | None" in signatures  # signatures show their types
    roles = re.findall(r":(?:meth|class|func|mod|attr|data):", api)  # Sphinx roles render raw: docstrings are Markdown
    assert not roles, roles
    # every Args: section parsed into a table of parameters, no reStructuredText left raw (grid tables, "::")
    assert "Args:" not in signatures and "+----" not in api and not re.search(r"<p>\s*::\s*</p>", api)
    for method in ("HictlForPreTraining.forward", "CmlmModel.forward", "LightweightDualTransformer.forward"):
        section = api[api.index(f'id="hf_xlsr.{method}"') :]
        assert re.search(r"<td>\s*<code>source_input_ids</code>", section[: section.index("</table>")]), method
    # a table's code spans show their | (GitHub's tables need it escaped; the site's must not show the backslash)
    pages = [path.read_text() for path in (tmp_path / "site").rglob("*.html")]
    escaped = [code for page in pages for code in re.findall(r"<code>[^<]*</code>", page) if "\\|" in code]
    assert not escaped, escaped[:3]
    mining = (tmp_path / "site" / "benchmarks" / "mining" / "index.html").read_text()
    assert "<code>IVF316,RaBitQ|nprobe=16</code>" in mining
    # the papers' equations are math (MathJax), not code
    for model in ("dual_momentum", "cmlm", "hictl", "lightweight"):
        page = (tmp_path / "site" / "models" / model / "index.html").read_text()
        assert '<span class="arithmatex">' in page and "mathjax" in page, model
        assert not re.search(r"<code>[^<]*(?:Σ|−log|← m)", page), model


def pages_to_run() -> list[Path]:
    """The pages with Python examples, each set of examples once (docs/index.md repeats README's quickstart)."""
    chosen, seen = [], []
    for page in PAGES:
        found = examples(page)
        if found and found not in seen:
            chosen.append(page)
            seen.append(found)
    return chosen


@pytest.mark.parametrize("page", pages_to_run(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_runs_and_prints_what_the_page_shows(page, tmp_path):
    """Each of the page's blocks runs alone, in an interpreter of its own (a reader may paste any one of them), in
    order in one empty folder (a block may read what an earlier one wrote there), and prints what the page shows
    after it (its last lines: a trainer's log may come first); a page whose examples repeat an earlier page's exactly
    is covered by that page's run."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    for code, shown in examples(page):
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900, env=environment
        )
        assert result.returncode == 0, f"{page.name}: {code[:80]!r}\n{result.stderr[-4000:]}"
        if shown is not None:  # the block's own lines end the output (a trainer's log lines may come before)
            last = result.stdout.strip().splitlines()[-len(shown.strip().splitlines()) :]
            assert last == shown.strip().splitlines(), f"{page.name}: {code[:80]!r} printed {result.stdout!r}"


def test_the_wheel_installs_into_a_clean_venv_with_its_package_data(tmp_path):
    """``python -m build --wheel``, installed without dependencies into a venv of its own: the model-card templates,
    the evaluate metrics and py.typed are inside, and ``hf-xlsr --help`` runs (it needs none of the dependencies)."""
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("hf_xlsr-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)]
    subprocess.run(pip, check=True, timeout=300)
    (site,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    for name in (
        "hf_xlsr/model_cards/base.md",
        "hf_xlsr/model_cards/dual_momentum.md",
        "hf_xlsr/py.typed",
        "hf_xlsr/metrics/retrieval_accuracy/retrieval_accuracy.py",
        "hf_xlsr_cli.py",
        "hf_xlsr/commands/train.py",
        "hf_xlsr/train_help.txt",
    ):
        assert (site / name).is_file(), name
    assert not (site / "tests").exists() and not (site / "benchmarks").exists()
    result = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "hf-xlsr"), "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "{train,encode,embed,export,evaluate,mine,push}" in result.stdout


def test_one_transformers_for_every_install():
    """Only the core dependencies bound transformers: no extra can move it, so the demo's install and the tests'
    run one version."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("transformers") for d in project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        assert not any(r.startswith("transformers") for r in requirements), extra


FORWARD_EXAMPLES = ["DualMomentumModel", "CmlmModel", "HictlForPreTraining", "LightweightDualTransformer"]


@pytest.mark.parametrize("model", FORWARD_EXAMPLES)
def test_each_models_forward_example_runs(model):
    """The ``Example:`` of each model's ``forward`` docstring, run as written: a real batch from the model's
    collator, a loss."""
    import contextlib
    import io

    import hf_xlsr

    code = re.search(r"```python\n(.*?)```", getattr(hf_xlsr, model).forward.__doc__, re.S).group(1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(textwrap.dedent(code), {})  # noqa: S102
    assert printed.getvalue().strip().splitlines()[-1] in ("torch.Size([])", "True True")
