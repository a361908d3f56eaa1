"""``benchmarks/catalogue_corpus.py``: catalogues of several sources into one multi-way JSONL file that training reads,
counted per language and source, Tatoeba's languages among them; a clean stop where apt is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import catalogue_corpus  # noqa: E402
from report.languages import catalogue_rows  # noqa: E402
from test_catalogues import write_json_folder, write_mo  # noqa: E402

from hf_xlsr.data.multilingual import load_pair_datasets  # noqa: E402


def test_sources_become_one_jsonl_that_training_reads_and_counts_per_language_and_source(tmp_path):
    wiki = write_json_folder(tmp_path / "wiki" / "i18n")
    (wiki / "en-gb.json").write_text(json.dumps({"save": "Save the page"}))  # a variant of English: not a target
    (wiki / "qqq.json").write_text(json.dumps({"save": "Label of the save button"}))  # documentation: not a language
    locale = tmp_path / "app" / "usr" / "share" / "locale"
    write_mo(locale / "fr" / "LC_MESSAGES" / "app.mo", {"Print the page": "Imprimer la page"})
    write_mo(locale / "af" / "LC_MESSAGES" / "app.mo", {"Print the page": "Druk die bladsy"})
    sources = {name: catalogue_corpus.catalogue_folders(tmp_path / name) for name in ("wiki", "app")}
    assert sources == {"wiki": [wiki], "app": [locale]}
    out = tmp_path / "corpus.jsonl"
    counts = catalogue_corpus.build(sources, out, exclude=None)
    assert {code: dict(by) for code, by in counts.items()} == {
        "fr": {"wiki": 3, "app": 1},
        "de": {"wiki": 2},
        "af": {"app": 1},
    }
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[-1] == {"en": "Print the page", "fr": "Imprimer la page", "af": "Druk die bladsy", "source": "app"}
    parts = load_pair_datasets(out, [("en", "fr"), ("en", "de")])
    assert len(parts["en-fr"]) == 4 and len(parts["en-de"]) == 2
    record = {"sources": ["wiki", "app"], "pairs": {code: dict(by) for code, by in counts.items()}}
    table = catalogue_rows(record).splitlines()
    assert table[2] == "| wiki | 2 | 2 | 5 | 0 |" and table[3] == "| app | 2 | 2 | 2 | 0 |"
    assert table[4] == "| all | 3 | 3 | 7 | 0 |" and table[-1] == "Tatoeba's languages with no catalogue here: 109."
    # the languages of a run for Tatoeba: the Bible's 22 (English first; fr and de among them), then each other
    # catalogue language of a Tatoeba set with enough pairs (af has 1); a code that names no Tatoeba set (aae) is left
    record["pairs"] |= {"eu": {"wiki": 3}, "zh-hant": {"app": 2}, "aae": {"wiki": 9}}
    chosen = catalogue_corpus.training_languages(record, min_pairs=2)
    assert chosen[:3] == ["en", "ar", "bn"] and len(set(chosen)) == len(chosen) == 22 + 2
    assert chosen[22:] == ["eu", "zh-hant"] and {"fr", "de"} <= set(chosen[:22])
    assert catalogue_corpus.training_languages(record, min_pairs=1)[22:] == ["af", "eu", "zh-hant"]
    assert catalogue_corpus.training_languages(record, min_pairs=3)[22:] == ["eu"]


def test_without_apt_it_stops_in_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(catalogue_corpus.shutil, "which", lambda name: None)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "catalogue_corpus.py",
            "--work",
            str(tmp_path / "w"),
            "--out",
            str(tmp_path / "c.jsonl"),
            "--counts",
            str(tmp_path / "n.json"),
        ],
    )
    with pytest.raises(SystemExit, match="apt-get and dpkg-deb are not here"):
        catalogue_corpus.main()
    assert not list(tmp_path.iterdir())
