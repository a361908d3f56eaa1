"""mkdocs hook: the benchmark report, its plots, the contributing guide and the changelog live beside the code
(``benchmarks/RESULTS.md``, ``CONTRIBUTING.md``, ``CHANGELOG.md``); they join the site under the same relative paths,
so their links work on GitHub and on the site alike."""

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXTRA = {"benchmarks/RESULTS.md": "benchmarks/RESULTS.md", "CONTRIBUTING.md": "contributing.md",
         "CHANGELOG.md": "changelog.md"}  # fmt: skip


def on_files(files, config):
    for source, destination in EXTRA.items():
        files.append(File.generated(config, destination, abs_src_path=str(ROOT / source)))
    for plot in sorted((ROOT / "benchmarks" / "plots").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/plots/{plot.name}", abs_src_path=str(plot)))
    return files
