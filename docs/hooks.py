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


TYPE_CELL = re.compile(r"<td>(\s*)<code>([^<]*`[^<]*)</code>(\s*)</td>")
BACKTICKS = re.compile(r"`([^`]+)`")
EMPHASIS = re.compile(r"\*([^*]+)\*")


def on_page_content(html, page, config, files):
    """A parameter's type written transformers' way (``(`torch.LongTensor` of shape `(batch, length)`, *optional*)``)
    reaches mkdocstrings' table as one code span with its backticks and asterisks: show it as prose with code spans
    and emphasis instead."""

    def prose(match: re.Match) -> str:
        text = EMPHASIS.sub(r"<em>\1</em>", BACKTICKS.sub(r"<code>\1</code>", match.group(2)))
        return f"<td>{match.group(1)}{text}{match.group(3)}</td>"

    return TYPE_CELL.sub(prose, html)
