"""The tables README.md and the benchmark report (docs/benchmarks/) print, generated from the results files, never
typed.

Each generated block sits between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``; this script rewrites
every block from ``TABLES[NAME]``, which the modules of ``benchmarks/report/`` give, one per report page
(``--check`` only compares, and exits 1 where a block differs: ``tests/benchmarks/test_readme_tables.py`` runs it).

    python benchmarks/readme_tables.py            # rewrite the blocks of README.md and the report
    python benchmarks/readme_tables.py --check
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from report import (
    cost,
    encoding,
    gpu,
    index,
    languages,
    mining,
    mining_scale,
    queue,
    tatoeba,
)

HERE = Path(__file__).resolve().parent
DOCUMENTS = [HERE.parent / "README.md", *sorted((HERE.parent / "docs" / "benchmarks").glob("*.md")),
             *sorted((HERE.parent / "docs" / "models").glob("*.md"))]  # fmt: skip
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.DOTALL)
PAGES = (index, queue, languages, tatoeba, cost, encoding, mining, mining_scale, gpu)
TABLES = {name: make for page in PAGES for name, make in page.TABLES.items()}


def rewrite(text: str, tables: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        name = match.group("name")
        if name not in tables:
            raise SystemExit(f"a generated block names {name!r}, which is not one of {sorted(tables)}")
        return match.group(1) + tables[name] + match.group(4)

    return BLOCK.sub(fill, text)


def differences() -> list[str]:
    """The documents whose generated blocks differ from what the results files give."""
    tables = {name: make() for name, make in TABLES.items()}
    return [str(path) for path in DOCUMENTS if rewrite(path.read_text(), tables) != path.read_text()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        stale = differences()
        for path in stale:
            print(f"{path}: a generated table differs from the results files", file=sys.stderr)
        return 1 if stale else 0
    tables = {name: make() for name, make in TABLES.items()}
    for path in DOCUMENTS:
        path.write_text(rewrite(path.read_text(), tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
