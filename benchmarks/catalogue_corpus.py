"""The software-catalogue corpus: parallel text for most of Tatoeba's 112 languages, read from Debian's packages.

Each package is downloaded (``apt-get download``) and unpacked (``dpkg-deb -x``; nothing is installed), its catalogues
read by `hf_xlsr.data.catalogues` into one multi-way JSONL file, a ``train_data`` of ``hf-xlsr train``; the text is
never committed (its licences), the counts per language and source are. The report's languages page
(docs/benchmarks/languages.md) says what is read and left out.

    HF_HUB_OFFLINE=1 python benchmarks/catalogue_corpus.py --packages mediawiki gimp-data vlc-l10n --installed \\
        --exclude ../shared/tatoeba --work /tmp/catalogues --out /tmp/catalogues/corpus.jsonl \\
        --counts benchmarks/results/catalogue_corpus.json
    python benchmarks/catalogue_corpus.py --print-languages 100   # the languages a run for Tatoeba trains on
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from hf_xlsr.data.catalogues import PIVOT, catalogue_files, read_catalogues
from hf_xlsr.utils import atomic_file


def unpack(package: str, work: Path) -> Path:
    """``package`` downloaded and unpacked into ``work/package`` (kept: a second build reads it again)."""
    folder = work / package
    if folder.is_dir():
        return folder
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", package], cwd=downloads, check=True, capture_output=True)
    archive = max(downloads.glob(f"{package}_*.deb"), key=lambda p: p.stat().st_mtime)
    staging = work / f".{package}.partial"
    subprocess.run(["dpkg-deb", "-x", str(archive), str(staging)], check=True)
    staging.rename(folder)
    return folder


def catalogue_folders(root: Path) -> list[Path]:
    """The catalogue folders of an unpacked package: each folder holding an ``en.json``, and ``usr/share/locale``."""
    folders = sorted(path.parent for path in root.rglob("en.json"))
    locale = root / "usr" / "share" / "locale"
    return folders + ([locale] if locale.is_dir() else [])


def languages_of(folder: Path) -> list[str]:
    """The languages a folder translates into: English and its variants (``en-gb``, ``en-quot``) left out."""
    return [code for code in catalogue_files(folder) if code != PIVOT and not code.startswith(f"{PIVOT}-")]


def build(sources: dict[str, list[Path]], out: Path, exclude: Path | None) -> dict[str, Counter]:
    """Every message of every source's folders as a JSONL line; ``{language: Counter(source: pairs)}``."""
    counts: dict[str, Counter] = {}
    with atomic_file(out) as handle:
        for source, folders in sources.items():
            for folder in folders:
                languages = languages_of(folder)
                for row in read_catalogues(folder, [PIVOT, *languages], exclude):
                    kept = {code: text for code, text in row.items() if code != "example_id" and text}
                    for code in kept.keys() - {PIVOT}:
                        counts.setdefault(code, Counter())[source] += 1
                    handle.write(json.dumps({**kept, "source": source}, ensure_ascii=False) + "\n")
    return counts


def training_languages(record: dict, min_pairs: int) -> list[str]:
    """What a run for Tatoeba trains on: English first, the Bible's 21 other languages, and every catalogue language
    that names one of Tatoeba's sets with at least ``min_pairs`` pairs with English (the catalogues' codes)."""
    from hf_xlsr.evaluation.tatoeba import CATALOGUE_TATOEBA_CODES, TATOEBA_CODES

    reached = [
        code
        for code, by in record["pairs"].items()
        if code in CATALOGUE_TATOEBA_CODES and sum(by.values()) >= min_pairs
    ]
    return [PIVOT, *TATOEBA_CODES, *sorted(set(reached) - set(TATOEBA_CODES))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", nargs="*", default=["mediawiki", "gimp-data", "vlc-l10n"])
    parser.add_argument("--installed", action="store_true", help="also the catalogues of /usr/share/locale")
    parser.add_argument("--exclude", type=Path, help="a folder of test sets whose lines are never trained on")
    parser.add_argument("--work", type=Path, default=Path("catalogues"))
    parser.add_argument("--out", type=Path, default=Path("catalogues/corpus.jsonl"))
    parser.add_argument("--counts", type=Path, default=Path("benchmarks/results/catalogue_corpus.json"))
    parser.add_argument(
        "--print-languages",
        type=int,
        metavar="MIN_PAIRS",
        help="print the languages a run for Tatoeba trains on, and stop",
    )
    args = parser.parse_args()
    if args.print_languages is not None:
        print(" ".join(training_languages(json.loads(args.counts.read_text()), args.print_languages)))
        return
    if args.packages and not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        raise SystemExit(
            "catalogue_corpus.py: apt-get and dpkg-deb are not here (a Debian or Ubuntu machine has "
            "them): give --packages with no names and --installed, or run it where they are"
        )
    sources = {package: catalogue_folders(unpack(package, args.work)) for package in args.packages}
    if args.installed:
        sources["installed"] = [Path("/usr/share/locale")]
    counts = build(sources, args.out, args.exclude)
    record = {"setup": {"script": "benchmarks/catalogue_corpus.py", "date": time.strftime("%Y-%m-%d"),
                        "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                        "exclude": str(args.exclude) if args.exclude else None},
              "sources": list(sources), "pairs": {code: dict(by) for code, by in sorted(counts.items())}}  # fmt: skip
    args.counts.write_text(json.dumps(record, indent=2) + "\n")
    from report.languages import catalogue_rows

    print(catalogue_rows(record), end="")


if __name__ == "__main__":
    main()
