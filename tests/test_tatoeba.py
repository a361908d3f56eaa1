"""The tatoeba task: MTEB's bitext-mining F1 (weighted by support) of each language against English, from LASER's
test-set files, checked against the F1 counted by hand, through the library and ``hf-xlsr evaluate``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from hf_xlsr.evaluation import TatoebaEvaluator, load_tatoeba

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def write_set(folder, code, sentences, english):
    (folder / f"tatoeba.{code}-eng.{code}").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (folder / f"tatoeba.{code}-eng.eng").write_text("\n".join(english) + "\n", encoding="utf-8")


def weighted_f1_by_hand(predictions: list[int]) -> float:
    """scikit-learn's weighted F1 with labels 0..n-1 counted out: each label's F1 = 2 TP / (2 TP + FP + FN),
    weighted by its support (1 each; a class only predicted has support 0)."""
    n = len(predictions)
    total = 0.0
    for label in range(n):
        tp = int(predictions[label] == label)
        fp = sum(1 for j, p in enumerate(predictions) if p == label and j != label)
        fn = 1 - tp
        total += 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return 100 * total / n


def test_the_score_is_the_weighted_f1_of_the_nearest_english_sentence(tmp_path):
    """A table encoder in two dimensions: French sentence 0 is nearer English sentence 1 than its own translation
    (cosines 0.98 and 0.90), the others find theirs; mined from English instead, every sentence would find its own."""
    write_set(tmp_path, "fra", ["f0", "f1", "f2"], ["e0", "e1", "e2"])
    write_set(tmp_path, "deu", ["d0", "d1"], ["g0", "g1"])
    table = {"e0": (1, 0), "e1": (0.8, 0.6), "e2": (0, 1), "f0": (0.9, 0.436), "f1": (0.8, 0.6), "f2": (0, 1),
             "d0": (1, 0), "d1": (0, 1), "g0": (1, 0), "g1": (0, 1)}  # fmt: skip

    def encoder(sentences, language):
        return np.array([table[s] for s in sentences], dtype=np.float32)

    metrics = TatoebaEvaluator(tmp_path, trained=["en", "fr"]).evaluate(encoder)
    assert metrics["tatoeba_fra_f1"] == pytest.approx(weighted_f1_by_hand([1, 1, 2]))
    assert metrics["tatoeba_fra_f1"] == pytest.approx(100 * (0 + 2 / 3 + 1) / 3)
    assert metrics["tatoeba_deu_f1"] == pytest.approx(100.0)
    assert metrics["tatoeba_f1"] == pytest.approx((metrics["tatoeba_fra_f1"] + 100) / 2)
    assert metrics["tatoeba_trained_f1"] == pytest.approx(metrics["tatoeba_fra_f1"])  # fr trained, de not
    assert metrics["tatoeba_languages"] == 2
    # a catalogue's code names its set as hf_xlsr's does; two codes of one set count it once
    both = TatoebaEvaluator(tmp_path, trained=["en", "fr", "de", "zh-hans", "zh-hant"]).evaluate(encoder)
    assert both["tatoeba_trained_f1"] == pytest.approx(metrics["tatoeba_f1"])  # fra and deu, no cmn set here
    write_set(tmp_path, "eus", ["b0", "b1"], ["g0", "g1"])
    table.update({"b0": (0, 1), "b1": (1, 0)})  # every Basque sentence finds the other's translation: F1 0
    basque = TatoebaEvaluator(tmp_path, trained=["fr", "eu", "eu"]).evaluate(encoder)
    assert basque["tatoeba_eus_f1"] == 0.0
    assert basque["tatoeba_trained_f1"] == pytest.approx(metrics["tatoeba_fra_f1"] / 2)


def test_the_shared_test_sets_load_112_languages_of_aligned_lines(tatoeba_dir):
    sets = load_tatoeba(tatoeba_dir)
    assert len(sets) == 112 and {"fra", "cmn", "swh", "pes"} <= set(sets)
    assert all(len(a) == len(b) <= 1000 for a, b in sets.values())


def test_a_real_encoder_scores_each_language_and_tells_the_router_its_language(tmp_path, minilm_path):
    from sentence_transformers import SentenceTransformer

    write_set(
        tmp_path,
        "fra",
        ["Le chat dort.", "Il pleut.", "Merci beaucoup."],
        ["The cat sleeps.", "It is raining.", "Thank you very much."],
    )
    seen = []
    model = SentenceTransformer(minilm_path, device="cpu")

    def encoder(sentences, language):
        seen.append(language)
        return model.encode(list(sentences), normalize_embeddings=True)

    metrics = TatoebaEvaluator(tmp_path).evaluate(encoder)
    assert 0 <= metrics["tatoeba_fra_f1"] <= 100 and seen == ["fr", "en"]


def test_bad_folders_are_named_before_any_encoding(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_tatoeba(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no tatoeba.XXX-eng.XXX files"):
        load_tatoeba(tmp_path)
    write_set(tmp_path, "fra", ["a", "b"], ["c"])
    with pytest.raises(ValueError, match=r"tatoeba\.fra-eng\.fra: 2 lines, tatoeba\.fra-eng\.eng: 1"):
        load_tatoeba(tmp_path)


def test_evaluate_on_the_command_line_writes_each_languages_f1(tmp_path, minilm_path):
    sets = tmp_path / "sets"
    sets.mkdir()
    write_set(sets, "fra", ["Le chat dort.", "Il pleut."], ["The cat sleeps.", "It is raining."])
    write_set(sets, "deu", ["Die Katze schläft.", "Es regnet."], ["The cat sleeps.", "It is raining."])
    output = tmp_path / "results.json"
    command = [sys.executable, "-m", "hf_xlsr_cli", "evaluate", "--model", minilm_path, "--tasks", "tatoeba",
               "--tatoeba-dir", str(sets), "--languages", "en", "fr", "--output", str(output),
               "--output-dir", str(tmp_path / "plots")]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads(output.read_text())["tatoeba"]
    assert {"tatoeba_fra_f1", "tatoeba_f1", "tatoeba_trained_f1"} <= set(scores)  # --languages en fr: French only
    assert "tatoeba_deu_f1" not in scores and scores["tatoeba_languages"] == 1
    without = [arg for arg in command if arg not in ("--languages", "en", "fr")]
    result = subprocess.run(without, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(output.read_text())["tatoeba"]["tatoeba_languages"] == 2  # every set of the folder
    bars = [line for line in result.stderr.replace("\r", "\n").splitlines() if "it/s]" in line or "/s]" in line]
    assert bars and all(line.startswith("tatoeba:") for line in bars), bars  # one bar for the task, none per batch


def test_a_language_without_a_test_set_is_one_line_before_the_model_loads(tmp_path, capsys):
    from hf_xlsr_cli import main

    write_set(tmp_path, "fra", ["Il pleut."], ["It is raining."])
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "evaluate",
                "--model",
                str(tmp_path / "never-loaded"),
                "--tasks",
                "tatoeba",
                "--tatoeba-dir",
                str(tmp_path),
                "--languages",
                "en",
                "fr",
                "de",
                "--output",
                str(tmp_path / "r.json"),
            ]
        )
    error = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and error == [
        f"hf-xlsr evaluate: error: --tatoeba-dir: {tmp_path}: no Tatoeba test set for de (tatoeba.deu-eng.deu)"
    ]


def test_the_evaluator_takes_either_code_of_a_language_and_encodes_under_one_bar(tmp_path, capsys):
    from hf_xlsr.evaluation.encoders import CachedEncoder

    write_set(tmp_path, "fra", ["f0", "f1"], ["e0", "e1"])
    write_set(tmp_path, "deu", ["d0", "d1"], ["e0", "e1"])
    write_set(tmp_path, "nld", ["n0", "n1"], ["e0", "e1"])
    for languages in (["fr", "nld"], ["en", "fra", "nld"]):
        assert sorted(TatoebaEvaluator(tmp_path, languages=languages).sets) == ["fra", "nld"]

    def encoder(sentences, language):
        encoder.calls.append(encoder.show_progress)
        return np.eye(2, dtype=np.float32)[: len(sentences)]

    encoder.calls, encoder.show_progress = [], True
    metrics = TatoebaEvaluator(tmp_path).evaluate(CachedEncoder(encoder))
    assert metrics["tatoeba_languages"] == 3 and encoder.calls == [False] * 4  # English once, cached
    assert encoder.show_progress is True  # given back after the task
    assert "tatoeba: 100%" in capsys.readouterr().err


def test_the_task_without_its_folder_is_one_line_before_any_work(tmp_path, capsys):
    from hf_xlsr_cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "evaluate",
                "--model",
                str(tmp_path / "never-loaded"),
                "--tasks",
                "tatoeba",
                "--output",
                str(tmp_path / "r.json"),
            ]
        )
    error = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(error) == 1 and "give their folder, --tatoeba-dir DIR" in error[0]
