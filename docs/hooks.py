"""mkdocs hook: the contributing guide and the changelog live at the repository's top (``CONTRIBUTING.md``,
``CHANGELOG.md``), where GitHub shows them; they join the site as pages of their own."""

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXTRA = {"CONTRIBUTING.md": "contributing.md", "CHANGELOG.md": "changelog.md"}


def on_files(files, config):
    for source, destination in EXTRA.items():
        files.append(File.generated(config, destination, abs_src_path=str(ROOT / source)))
    return files
