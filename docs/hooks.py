"""mkdocs hook: the contributing guide and the changelog live at the repository's top (``CONTRIBUTING.md``,
``CHANGELOG.md``), where GitHub shows them; they join the site as pages of their own."""

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXTRA = {"CONTRIBUTING.md": "contributing.md", "CHANGELOG.md": "changelog.md"}


def on_files(files, config):
    for source, destination in EXTRA.items():
        files.append(File.generated(config, destination, abs_src_path=str(ROOT / source)))
    return files


CODE_SPAN = re.compile(r"`[^`\n]+`")


def on_page_markdown(markdown, page, config, files):
    """GitHub's tables need a ``|`` inside a code span escaped (``\\|``), Python-Markdown's keep the backslash: on
    the site, a table row's code spans lose it, so that a copied faiss index string is the string."""
    return "\n".join(
        CODE_SPAN.sub(lambda span: span.group(0).replace("\\|", "|"), line) if line.lstrip().startswith("|") else line
        for line in markdown.split("\n")
    )
