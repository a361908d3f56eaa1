"""mkdocs hook: the benchmark report with its plots and model cards, the contributing guide and the changelog live
beside the code (``benchmarks/``, ``CONTRIBUTING.md``, ``CHANGELOG.md``); they join the site under the same relative
paths, so their links work on GitHub and on the site alike."""

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXTRA = {"benchmarks/RESULTS.md": "benchmarks/RESULTS.md", "CONTRIBUTING.md": "contributing.md",
         "CHANGELOG.md": "changelog.md"}  # fmt: skip


def on_files(files, config):
    for source, destination in EXTRA.items():
        files.append(File.generated(config, destination, abs_src_path=str(ROOT / source)))
    for page in sorted((ROOT / "benchmarks" / "report").glob("*.md")):
        files.append(File.generated(config, f"benchmarks/report/{page.name}", abs_src_path=str(page)))
    for plot in sorted((ROOT / "benchmarks" / "plots").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/plots/{plot.name}", abs_src_path=str(plot)))
    for card in sorted((ROOT / "benchmarks" / "model_cards").glob("*.md")):
        files.append(File.generated(config, f"benchmarks/model_cards/{card.name}", abs_src_path=str(card)))
    return files
