"""PCR, STS, linear probe, language bias and plots, evaluate metrics, MTEB tasks, the evaluate command."""

from __future__ import annotations

import json

import evaluate
import numpy as np
import pytest
import torch
from conftest import MINILM, tiny_dual_momentum

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.evaluation import (
    LinearProbeEvaluator,
    RetrievalEvaluator,
    STSEvaluator,
    language_bias,
    load_lee_similarity,
    metric_path,
    mine,
    mining_predictions,
    plot_language_bias,
    plot_parallel_sentences,
    precision_recall_f1,
    principal_components,
    remove_components,
    retrieval_accuracy,
)
from hf_xlsr_cli import main


def fixed_encoder(table: dict[tuple[str, str], np.ndarray]):
    """An encoder that looks vectors up by (language, text): the evaluators' arithmetic on known vectors."""
    return lambda sentences, language: np.stack([table[(language, s)] for s in sentences]).astype(np.float32)


def test_pcr_removes_exactly_the_top_component():
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(200, 12)) + 3.0 * rng.normal(size=12)  # a strong shared direction
    # the top right singular vector is the top eigenvector of M^T M: find it by power iteration, not SVD
    gram = embeddings.T @ embeddings
    vector = np.ones(12)
    for _ in range(500):
        vector = gram @ vector
        vector /= np.linalg.norm(vector)
    component = principal_components(embeddings, 1)[0]
    assert abs(np.dot(component, vector)) == pytest.approx(1.0, abs=1e-8)
    cleaned = remove_components(embeddings, component[None])
    expected = embeddings - np.outer(embeddings @ vector, vector)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(cleaned, expected, atol=1e-6)
    assert np.abs(cleaned @ vector).max() < 1e-6


def test_retrieval_with_pcr_undoes_a_language_offset():
    rng = np.random.default_rng(1)
    meaning = rng.normal(size=(50, 16))
    table = {}
    for i, m in enumerate(meaning):
        table[("en", f"s{i}")] = m + 6.0 * np.eye(16)[0]  # each language adds its own large offset
        table[("fr", f"s{i}")] = m + 0.3 * rng.normal(size=16) + 6.0 * np.eye(16)[1]
    names = [f"s{i}" for i in range(50)]
    plain = RetrievalEvaluator({"en": names, "fr": names})(fixed_encoder(table))
    cleaned = RetrievalEvaluator({"en": names, "fr": names}, pcr=1)(fixed_encoder(table))
    assert cleaned["retrieval_accuracy"] > plain["retrieval_accuracy"]
    assert cleaned["retrieval_accuracy"] > 0.9


def spearman_reference(a, b) -> float:
    def ranks(values):
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(values, kind="stable")
        result = np.empty(len(values))
        i = 0
        while i < len(values):
            j = i
            while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
                j += 1
            result[order[i : j + 1]] = (i + j) / 2 + 1  # ties share their mean rank
            i = j + 1
        return result

    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float(ra @ rb / np.sqrt((ra @ ra) * (rb @ rb)))


def test_sts_spearman_all_and_wmean_against_reference():
    rng = np.random.default_rng(2)
    table, rows = {}, []
    for i in range(60):
        u, v = rng.normal(size=8), rng.normal(size=8)
        table[(None, f"a{i}")], table[(None, f"b{i}")] = u, v  # STS names no language: one encoder for all
        cosine = u @ v / np.linalg.norm(u) / np.linalg.norm(v)
        rows.append((f"a{i}", f"b{i}", round(float(cosine + 0.4 * rng.normal()), 1), "first" if i < 20 else "second"))
    s1, s2, scores, subsets = zip(*rows, strict=True)
    metrics = STSEvaluator(s1, s2, scores, subsets)(fixed_encoder(table))
    u, v = (np.stack([table[(None, row[k])] for row in rows]) for k in (0, 1))
    cosines = list((u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1))
    assert metrics["sts_spearman_all"] == pytest.approx(spearman_reference(cosines, scores))
    first = spearman_reference(cosines[:20], scores[:20])
    second = spearman_reference(cosines[20:], scores[20:])
    assert metrics["sts_first_spearman"] == pytest.approx(first)
    assert metrics["sts_spearman_wmean"] == pytest.approx((20 * first + 40 * second) / 60)


def test_sts_from_tsv_names_bad_lines(tmp_path):
    path = tmp_path / "sts.tsv"
    path.write_text("A man sings.\tA person sings.\t4.5\nA dog.\tA cat.\tmany\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"sts\.tsv:2: score 'many' is not a number"):
        STSEvaluator.from_tsv(path)
    path.write_text("A man sings.\tA person sings.\t4.5\nA dog.\tA cat.\t1\nA car.\tA bus.\t2.5\n", encoding="utf-8")
    assert STSEvaluator.from_tsv(path).scores.tolist() == [4.5, 1.0, 2.5]


def test_lee_corpus_loads_offline():
    lee = load_lee_similarity()
    assert len(lee) == 1225  # 50 documents, every pair once
    assert lee[0]["sentence1"].startswith("The national executive of the strife-torn Democrats")
    assert min(lee["score"]) >= 0.0 and max(lee["score"]) <= 1.0


def test_linear_probe_transfers_when_the_space_is_language_agnostic():
    rng = np.random.default_rng(3)
    labels = [i % 3 for i in range(90)]
    centres = 4.0 * rng.normal(size=(3, 10))
    table = {}
    for i, label in enumerate(labels):
        meaning = centres[label] + rng.normal(size=10)
        table[("en", f"s{i}")], table[("fr", f"s{i}")] = meaning, meaning + 0.1 * rng.normal(size=10)
        table[("de", f"s{i}")] = rng.normal(size=10)  # a language the space does not align
    names = [f"s{i}" for i in range(90)]
    evaluator = LinearProbeEvaluator(
        names[:60], labels[:60], "en", {language: (names[60:], labels[60:]) for language in ("en", "fr", "de")}
    )
    metrics = evaluator(fixed_encoder(table))
    assert metrics["probe_en2en_accuracy"] == 1.0 and metrics["probe_en2fr_accuracy"] == 1.0
    assert metrics["probe_en2de_accuracy"] < 0.7


def test_linear_probe_sees_classes_under_a_dominant_shared_direction():
    """Unit vectors that share one dominant direction (mean cosine 0.99), the classes in the small remainder, the
    majority class at two thirds: the probe standardises the features and finds the classes."""
    rng = np.random.default_rng(5)
    labels = rng.choice(3, size=600, p=[0.6, 0.25, 0.15]).tolist()
    centres = rng.normal(size=(3, 64))
    vectors = 100 * np.eye(64)[0] + centres[labels] + rng.normal(size=(600, 64))
    table = {("en", f"s{i}"): vector / np.linalg.norm(vector) for i, vector in enumerate(vectors)}
    names = [f"s{i}" for i in range(600)]
    metrics = LinearProbeEvaluator(names[:400], labels[:400], "en", {"en": (names[400:], labels[400:])})(
        fixed_encoder(table)
    )
    majority = labels[400:].count(0) / 200
    assert metrics["probe_en2en_accuracy"] > 0.95 and majority < 0.7


def test_bible_probe_has_held_out_books_and_real_labels():
    evaluator = LinearProbeEvaluator.from_bible("en", ["en", "fr"], max_train=200, max_test=50)
    assert set(evaluator.train_labels) <= {"law", "history", "poetry", "prophets", "gospels", "letters"}
    assert not set(evaluator.test_sets["en"][0]) & set(evaluator.train_texts)
    assert evaluator.test_sets["fr"][1] == evaluator.test_sets["en"][1]


def test_language_bias_and_pcr_on_a_biased_space(tmp_path):
    rng = np.random.default_rng(4)
    table = {}
    for i in range(40):
        meaning = rng.normal(size=16)
        for j, language in enumerate(("en", "fr", "de")):
            table[(language, f"s{i}")] = meaning + 0.5 * rng.normal(size=16) + 5.0 * np.eye(16)[j]
    sentences = {language: [f"s{i}" for i in range(40)] for language in ("en", "fr", "de")}
    biased = language_bias(fixed_encoder(table), sentences, k=4)
    cleaned = language_bias(fixed_encoder(table), sentences, k=4, pcr=1)
    for language in sentences:
        assert sum(biased[language].values()) == pytest.approx(1.0)
        assert biased[language][language] > 0.9  # neighbours come from the query's own language
        assert cleaned[language][language] < biased[language][language] - 0.3
    plot_language_bias(biased, tmp_path / "bias.png")
    points = plot_parallel_sentences(fixed_encoder(table), sentences, tmp_path / "pca.png")
    assert points.shape == (120, 2)
    for name in ("bias.png", "pca.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_metric_modules_load_offline_and_agree():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(30, 8)).astype(np.float32)
    y = x + 0.8 * rng.normal(size=(30, 8)).astype(np.float32)
    retrieval = evaluate.load(metric_path("retrieval_accuracy"))
    result = retrieval.compute(predictions=x.tolist(), references=y.tolist())
    assert (result["source2target_accuracy"], result["target2source_accuracy"]) == pytest.approx(
        retrieval_accuracy(x, y)
    )
    pairs = mine(x, y, mode="max").above(1.0)
    gold = {(i, i) for i in range(0, 30, 2)}
    references = [i if i % 2 == 0 else -1 for i in range(30)]
    mining = evaluate.load(metric_path("bitext_mining"))
    result = mining.compute(predictions=mining_predictions(pairs, 30).tolist(), references=references)
    assert result == pytest.approx(precision_recall_f1(pairs, gold))
    with pytest.raises(ValueError, match="no metric 'bleu'"):
        metric_path("bleu")


def test_mteb_local_tasks_route_languages_and_match_our_scores(tmp_path):
    import datasets
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.evaluation.mteb import bitext_task, classification_task, run_mteb, sts_task

    calls = []

    def encoder(sentences, language):
        calls.append((language, len(sentences)))
        return np.stack([vectors[language][s] for s in sentences]).astype(np.float32)

    rng = np.random.default_rng(6)
    meaning = rng.normal(size=(30, 8))
    vectors = {
        "en": {f"e{i}": m for i, m in enumerate(meaning)},
        "fr": {f"f{i}": m + 0.05 * rng.normal(size=8) for i, m in enumerate(meaning)},
    }
    pairs = datasets.Dataset.from_dict({"en": [f"e{i}" for i in range(30)], "fr": [f"f{i}" for i in range(30)]})
    train = datasets.Dataset.from_dict({"text": [f"e{i}" for i in range(20)], "label": [i % 2 for i in range(20)]})
    test = datasets.Dataset.from_dict(
        {"text": [f"f{i}" for i in range(20, 30)], "label": [i % 2 for i in range(20, 30)]}
    )
    tasks = [
        bitext_task(pairs, ["en", "fr"], name="T_bitext"),
        classification_task(train, test, "en", "fr", name="T_cls"),
    ]
    scores = run_mteb(encoder, tasks, languages=["en", "fr"], name="fixed")
    assert scores["T_bitext"] == 1.0  # translations are each other's nearest neighbours
    assert ("en", 20) in calls and ("fr", 10) in calls  # train split in English, test split in French
    assert {language for language, n in calls if n == 30} == {"en", "fr"}  # each bitext column in its language

    minilm = SentenceTransformer(resolve_reference(MINILM), device="cpu")
    lee = load_lee_similarity().select(range(200))
    mteb_score = run_mteb(minilm, [sts_task(lee, "en", name="T_lee", min_score=0, max_score=1)])["T_lee"]
    ours = STSEvaluator.from_dataset(lee, language1="en")(minilm)["sts_spearman_all"]
    assert mteb_score == pytest.approx(ours, abs=1e-6)


def test_mteb_cache_is_keyed_by_the_weights(tmp_path, tokenizer, heldout_pairs, monkeypatch):
    from hf_xlsr.evaluation import mteb as adapter

    encode_calls = []
    original = adapter.XlsrMtebEncoder.encode
    monkeypatch.setattr(
        adapter.XlsrMtebEncoder, "encode", lambda self, *a, **k: encode_calls.append(1) or original(self, *a, **k)
    )
    model = tiny_dual_momentum()
    task = adapter.bitext_task(heldout_pairs.select(range(30)), ["en", "fr"], name="T_cache")
    tokenizers = tokenizer
    first = adapter.run_mteb(model, [task], tokenizers, cache_dir=tmp_path, name="tiny")
    assert len(encode_calls) == 2  # one per language column
    fingerprint = adapter.model_fingerprint(model)
    again = adapter.run_mteb(model, [task], tokenizers, cache_dir=tmp_path, name="tiny")
    assert len(encode_calls) == 2 and again == pytest.approx(first, abs=1e-6)  # same weights: read from the cache
    with torch.no_grad():
        model.encoder_y.embeddings.word_embeddings.weight.mul_(-1.0)  # "retrain": same name, new weights
    assert adapter.model_fingerprint(model) != fingerprint
    second = adapter.run_mteb(model, [task], tokenizers, cache_dir=tmp_path, name="tiny")
    assert len(encode_calls) == 4  # recomputed, not read back from the older checkpoint's cache
    assert second != pytest.approx(first, abs=1e-6)
    revisions = {p.name for p in tmp_path.rglob("*") if p.is_dir() and p.parent.name == "hf_xlsr__tiny"}
    assert len(revisions) == 2


def test_evaluate_command_writes_json_and_table(tmp_path, capsys):
    output = tmp_path / "results.json"
    code = main(
        [
            "evaluate",
            "--model",
            resolve_reference(MINILM),
            "--tasks",
            "retrieval,retrieval_pcr,sts,bias",
            "--max-pairs",
            "100",
            "--output",
            str(output),
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    results = json.loads(output.read_text())
    assert set(results) == {"retrieval", "retrieval_pcr", "sts", "bias"}
    assert 0 <= results["retrieval"]["retrieval_accuracy"] <= 1
    assert results["sts"]["sts_lee_spearman_all"] > 0.3
    assert (tmp_path / "language_bias.png").is_file() and (tmp_path / "language_bias_pcr.png").is_file()
    printed = capsys.readouterr().out
    assert "retrieval_en2fr_accuracy" in printed and "sts_lee_spearman_all" in printed
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", resolve_reference(MINILM), "--tasks", "retrieval,bleu", "--output", str(output)])


def test_bible_verses_are_real():
    assert load_bible(["en", "fr"], split="heldout")[0]["fr"].startswith("Après la mort de Moïse")


def test_evaluate_marks_the_languages_never_trained_and_times_each_task(tmp_path, capsys, tokenizer):
    from conftest import tiny_dual_momentum

    folder = tmp_path / "model"
    tiny_dual_momentum(shared_encoder=True).save_pretrained(folder)  # trained on en and fr
    tokenizer.save_pretrained(folder)
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(folder),
                "--languages",
                "en",
                "fr",
                "de",
                "--max-pairs",
                "40",
                "--tasks",
                "retrieval,retrieval_pcr",
                "--output",
                str(tmp_path / "out" / "results.json"),
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"{folder} was trained on en, fr; de: zero-shot" in out
    assert "| de (zero-shot) |" in out and "| fr |" in out
    assert "time per task: retrieval " in out and ", retrieval_pcr " in out


def test_an_evaluation_encodes_each_sentence_of_each_language_once():
    """CachedEncoder gives each caller the vectors the encoder gives, in the caller's order, and encodes a sentence
    of a language once, however many tasks ask for it."""
    import numpy as np

    from hf_xlsr.evaluation.encoders import CachedEncoder

    asked: list[tuple[str, str]] = []

    def encoder(sentences, language):  # a deterministic stand-in: vector = (length, language's number)
        asked.extend((language, s) for s in sentences)
        return np.array([[len(s), ord(language[0])] for s in sentences], dtype=np.float32).reshape(-1, 2)

    cached = CachedEncoder(encoder)
    first = cached(["a", "bb", "a"], "en")
    second = cached(["ccc", "bb"], "en")
    third = cached(["bb"], "fr")
    assert first.tolist() == [[1, 101], [2, 101], [1, 101]] and second.tolist() == [[3, 101], [2, 101]]
    assert third.tolist() == [[2, 102]] and cached([], "en").shape == (0, 2)
    assert asked == [("en", "a"), ("en", "bb"), ("en", "ccc"), ("fr", "bb")]


def test_the_command_line_names_every_evaluation_task_and_its_cost():
    from hf_xlsr.evaluation.suite import TASKS
    from hf_xlsr_cli import DEFAULT_EVALUATION_TASKS, EVALUATION_TASKS

    assert set(EVALUATION_TASKS) == set(TASKS) and set(DEFAULT_EVALUATION_TASKS) <= set(TASKS)


def test_evaluate_on_every_engine_through_the_cached_encoder_scores_alike(tmp_path, capsys):
    """The run's one cached encoder meets the backends: evaluate on ONNX Runtime gives the retrieval figures of
    PyTorch, PCR included (both tasks read the same vectors)."""
    import json

    results = {}
    for backend in ("torch", "onnx"):
        output = tmp_path / backend / "results.json"
        assert (
            main(
                [
                    "evaluate",
                    "--model",
                    resolve_reference(MINILM),
                    "--languages",
                    "en",
                    "fr",
                    "--max-pairs",
                    "60",
                    "--tasks",
                    "retrieval,retrieval_pcr",
                    "--backend",
                    backend,
                    "--output",
                    str(output),
                    "--output-dir",
                    str(output.parent),
                ]
            )
            == 0
        )
        results[backend] = json.loads(output.read_text())
    for task in ("retrieval", "retrieval_pcr"):
        assert results["onnx"][task][f"{task}_accuracy"] == pytest.approx(results["torch"][task][f"{task}_accuracy"])
    assert "time per task: retrieval " in capsys.readouterr().out
