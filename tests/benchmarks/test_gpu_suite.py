"""``benchmarks/gpu_suite.py --dry-run``: every part of the GPU suite runs at toy size on the CPU and reports."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
# in this order
EVERY_PART = ["cuda_tests", "training_step", "cached_memory", "queue_floor", "encoding", "demo", "queue_grid"]


def dry_run(tmp_path: Path, *parts: str) -> tuple[dict, Path]:
    """``gpu_suite.py --dry-run`` (with ``--parts`` when given): its report, and where it was written."""
    out = tmp_path / "gpu_suite.json"
    command = [sys.executable, "benchmarks/gpu_suite.py", "--dry-run", "--out", str(out)]
    command += ["--parts", *parts] if parts else []
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert list(report["parts"]) == list(parts or EVERY_PART)
    assert all(part["status"] == "done" for part in report["parts"].values()), report["parts"]
    return report, out


@pytest.mark.slow  # the whole dry run is slow too; the parts' own logic is tested below
def test_the_gpu_suites_quicker_parts_run_in_a_dry_run(tmp_path):
    report, out = dry_run(tmp_path, "training_step", "queue_floor", "encoding")
    steps = report["parts"]["training_step"]["rows"]
    arms = {(row["batch"], row["arm"]) for row in steps}
    assert arms == {
        (b, a)
        for b in (4, 8)
        for a in (
            "mnrl",
            "cached_mnrl",
            "mql",
            "cached_mql",
            "dual_momentum_shared",
            "dual_momentum_per_language",
            "dual_momentum_cached",
        )
    }
    assert all(row["ratio_to_mnrl"] > 0 for row in steps)
    assert all(0 < row["ema_share"] < 1 for row in steps if "mql" in row["arm"] or "dual" in row["arm"])
    encoding = report["parts"]["encoding"]
    assert set(encoding["sentences_per_second"]) == {
        "sentence-transformers_bf16",
        "sentence-transformers_float32",
        "hf_xlsr_bf16",
    }
    assert 0 <= encoding["mining"]["gold_found"] <= 1
    assert "| training_step | done |" in out.with_suffix(".md").read_text()


@pytest.mark.slow
def test_the_gpu_suite_runs_every_part_in_a_dry_run(tmp_path):
    report, _ = dry_run(tmp_path)
    cuda_tests = (ROOT / "tests" / "test_cuda.py").read_text().count("\ndef test_")  # every one, none skipped
    assert report["parts"]["cuda_tests"]["passed"] == cuda_tests and "failed" not in report["parts"]["cuda_tests"]
    grid = report["parts"]["queue_grid"]
    assert {row["arm"] for row in grid["rows"]} == {"mnrl_B", "cmnrl_8B_sqrtlr", "mql_K256B"}
    assert all(0 <= row["bible"] <= 1 and 0 <= row["tune"] <= 1 for row in grid["rows"])
    assert report["parts"]["demo"]["returncode"] == 0 and len(report["parts"]["demo"]["held_out"]) == 2


def test_an_arm_out_of_memory_is_a_row_and_the_others_are_timed_interleaved(monkeypatch):
    """An arm that does not fit is a row with its error and the arms after it still run (the part is not lost);
    the others are timed in rounds, one arm after the other within each round."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_steps

    calls = []

    def sentence_transformer_step(folder, batch_size, device, max_length, arm, queue_size, mini_batch):
        return (lambda: calls.append(arm)), None

    def dual_momentum_step(folder, batch_size, device, max_length, shared, queue_size, mini_batch_size=None):
        if shared:  # one shared encoder, with or without GradCache
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
        return (lambda: calls.append("dual_momentum_per_language")), (lambda: None)

    monkeypatch.setattr(gpu_steps, "encoder_folder", lambda kind, scratch: str(scratch))
    monkeypatch.setattr(gpu_steps, "sentence_transformer_step", sentence_transformer_step)
    monkeypatch.setattr(gpu_steps, "dual_momentum_step", dual_momentum_step)
    result = gpu_steps.training_step(argparse.Namespace(dry_run=True), torch.device("cpu"), seconds=60)
    rows = result["rows"]
    timed = ["mnrl", "cached_mnrl", "mql", "cached_mql", "dual_momentum_per_language"]
    assert [row["arm"] for row in rows] == (["dual_momentum_shared", "dual_momentum_cached"] + timed) * 2
    assert all(
        row["error"].startswith("out of memory: CUDA out of memory")
        for row in rows
        if row["arm"] in ("dual_momentum_shared", "dual_momentum_cached")
    )
    assert all("seconds_per_step" in row and row["ratio_to_mnrl"] > 0 for row in rows if row["arm"] in timed)
    assert calls[:15] == timed + timed + timed[::-1]  # warm-up steps, then rounds interleaved, every other reversed
    assert calls[15:30] == calls[:15]  # the second batch size
    assert result["skipped"] == []


def test_mining_sides_are_distinct_sentences_whose_gold_pairs_are_translations(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_encoding

    verses = {"en": [f"e{i}" for i in range(7)], "fr": [f"f{i}" for i in range(7)]}
    source, target, gold = gpu_encoding.mining_sides(verses, 42)  # all n (n - 1) joins of 7 verses
    assert len(set(source)) == len(set(target)) == 42
    assert all(target[gold[i]] == text.replace("e", "f") for i, text in enumerate(source))
    assert sorted(gold.tolist()) == list(range(42)) and gold.tolist() != list(range(42))  # shuffled
    with pytest.raises(ValueError, match="43 sentences per side: 7 verses join into 42 distinct ones"):
        gpu_encoding.mining_sides(verses, 43)


def test_the_mining_takes_as_many_sentences_as_the_parts_time_holds(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_encoding

    # 8,000 verses a second: 4 / 8,000 s to encode a sentence of two verses on both sides, 1.5e-4 s to search it
    assert gpu_encoding.mining_size(100, 8000) == 153_600  # 100 / 6.5e-4 = 153,846, down to a multiple of 1,024
    assert gpu_encoding.mining_size(10_000, 8000) == 409_600
    assert gpu_encoding.mining_size(5, 8000) == 7168


def test_a_call_cut_short_keeps_the_parts_it_finished(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_suite

    def killed(args, device, seconds):
        raise KeyboardInterrupt  # what a call's time limit does to the process, as far as the report can tell

    monkeypatch.setitem(gpu_suite.PARTS, "queue_floor", lambda args, device, seconds: {"figure": 1.5})
    monkeypatch.setitem(gpu_suite.PARTS, "encoding", killed)
    out = tmp_path / "cut.json"
    monkeypatch.setattr(
        sys, "argv", ["gpu_suite.py", "--dry-run", "--parts", "queue_floor", "encoding", "--out", str(out)]
    )
    with pytest.raises(KeyboardInterrupt):
        gpu_suite.main()
    assert json.loads(out.read_text())["parts"] == {
        "queue_floor": {"status": "done", "figure": 1.5, "seconds": pytest.approx(0, abs=1)}
    }


def test_reports_of_two_calls_join_into_one(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_suite

    def report(date: str, command: str, parts: dict) -> dict:
        return {"device": "H100", "date": date, "command": command, "torch": "t", "dry_run": False, "parts": parts}

    first = report(
        "d1",
        "c1",
        {"cuda_tests": {"status": "done", "passed": 5}, "encoding": {"status": "skipped: 3 s left of the budget"}},
    )
    second = report(
        "d2",
        "c2",
        {"encoding": {"status": "done", "sentences": 3}, "cuda_tests": {"status": "skipped: 1 s left of the budget"}},
    )
    joined = gpu_suite.join([first, second])
    assert joined["parts"]["cuda_tests"] == {"status": "done", "passed": 5, "command": "c1", "date": "d1"}
    assert joined["parts"]["encoding"] == {"status": "done", "sentences": 3, "command": "c2", "date": "d2"}
    assert joined["date"] == "d1, d2"
    third = report("d3", "c3", {"cuda_tests": {"status": "done", "passed": 7}})
    again = gpu_suite.join([joined, third])["parts"]  # a joined report joins again, each part's origin kept
    assert again["cuda_tests"] == {"status": "done", "passed": 7, "command": "c3", "date": "d3"}
    assert again["encoding"] == {"status": "done", "sentences": 3, "command": "c2", "date": "d2"}
    with pytest.raises(SystemExit, match="different devices"):
        gpu_suite.join([first, {**second, "device": "H200"}])


def test_a_reports_days_leave_out_the_times_and_name_each_day_once(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from report.gpu import days

    assert days("2026-11-27 19:27 UTC, 2026-11-27 19:34 UTC, 2026-11-28 07:30 UTC") == "2026-11-27, 2026-11-28"
    assert days("2026-11-26 19:56 UTC") == "2026-11-26"


@pytest.mark.slow  # seven toy runs: about a minute
def test_the_grid_part_runs_the_protocol_scores_tune_and_test_and_goes_on_where_it_stopped(tmp_path):
    """``queue_grid`` at toy size: an arm's four rates at 0.04 (and the rates beyond an end that wins), then 0.05 at
    the best on tune, then seeds 1 and 2 at the pick, each run trained at its own rate and temperature and scored on
    both row sets; a call with no time runs nothing and says what is left; a call after the grid is done runs
    nothing more."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_grid
    from protocol import pick, point

    args = argparse.Namespace(
        dry_run=True, grid_pairs=0, grid_arms=["mnrl_B"], grid_out=None, out=str(tmp_path / "suite.json")
    )
    stopped = gpu_grid.queue_grid(args, torch.device("cpu"), seconds=0)
    assert stopped["rows"] == [] and stopped["left"]["mnrl_B"][0] == "mnrl_B:0:5e-05:0.04"
    result = gpu_grid.queue_grid(args, torch.device("cpu"), seconds=600)
    runs = result["rows"]
    assert [(run["seed"], run["base_learning_rate"], run["temperature"]) for run in runs[:4]] == [
        (0, rate, 0.04) for rate in (5e-5, 1e-4, 2e-4, 4e-4)
    ]
    beyond = next(i for i, run in enumerate(runs) if run["temperature"] != 0.04)  # rates beyond an end that won
    assert all(run["base_learning_rate"] not in (5e-5, 1e-4, 2e-4, 4e-4) for run in runs[4:beyond])
    best_rate = max(runs[:beyond], key=lambda run: run["tune"])["base_learning_rate"]
    assert point(runs[beyond]) == (best_rate, 0.05, None, None) and runs[beyond]["seed"] == 0  # no queue
    assert [(run["seed"], point(run)) for run in runs[beyond + 1 :]] == [
        (1, point(pick(runs, "mnrl_B"))),
        (2, point(pick(runs, "mnrl_B"))),
    ]
    assert all(0 <= run["tune"] <= 1 and 0 <= run["bible"] <= 1 and run["steps"] == 32 for run in runs)
    assert len({run["tune"] for run in runs[:4]}) > 1  # the rate reaches the trainer
    assert result["left"] == {} and "| MNRL, batch B |" in result["table"]
    assert (tmp_path / "suite_grid.json").is_file()
    assert gpu_grid.queue_grid(args, torch.device("cpu"), seconds=600)["rows"] == runs  # nothing run again


def languages_args(tmp_path, **values) -> argparse.Namespace:
    return argparse.Namespace(
        **{
            "dry_run": True,
            "languages_arms": None,
            "languages_out": None,
            "languages_models": str(tmp_path / "models"),
            "out": str(tmp_path / "suite.json"),
            "corpus": None,
            "tatoeba_dir": None,
            **values,
        }
    )


def test_the_languages_grid_part_with_no_time_runs_nothing_and_names_what_is_left(tmp_path):
    """``languages_grid`` given no time: no run, and each arm's next job is the protocol's first (its queue for
    DualMomentumModel)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_languages
    import multilingual_grid

    before = dict(multilingual_grid.ENCODERS)
    result = gpu_languages.languages_grid(languages_args(tmp_path), torch.device("cpu"), seconds=0)
    assert multilingual_grid.ENCODERS == before  # a dry run's small encoder is its own, not every later run's
    assert result["rows"] == []
    assert result["left"]["mnrl"][0] == "mnrl:0:5e-05:0.04"
    assert result["left"]["hf_xlsr"][0] == "hf_xlsr:0:5e-05:0.04:1024:0.99"
    assert set(result["left"]) == {"mnrl", "hf_xlsr", "cmnrl_8B", "hictl", "cmlm"}


@pytest.mark.slow  # an arm's whole grid at toy size: about 2 minutes
def test_the_languages_grid_part_runs_an_arms_protocol_and_goes_on_where_it_stopped(tmp_path):
    """``languages_grid`` at toy size on the CPU: HICTL's rates, its temperatures with its paper's 1.0, then its seeds
    at the pick, each scored on tune and its seeds on test, in the part's results file; a second call runs nothing."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_languages

    args = languages_args(tmp_path, languages_arms=["hictl"])
    runs = gpu_languages.languages_grid(args, torch.device("cpu"), seconds=3600)["rows"]
    assert {run["temperature"] for run in runs if run["seed"] == 0} >= {0.04, 0.05, 1.0}
    assert sorted(run["seed"] for run in runs if "bible" in run) == [0, 1, 2]
    assert all(0 <= run["tune"] <= 1 for run in runs if "tune" in run)
    assert (tmp_path / "suite_languages.json").is_file()
    again = gpu_languages.languages_grid(args, torch.device("cpu"), seconds=3600)
    assert again["rows"] == runs and again["left"] == {}


@pytest.mark.slow  # a short run and two Tatoeba sets: about a minute
def test_the_118_language_part_trains_at_the_grids_pick_on_its_corpus_draw_and_scores_tatoeba(tmp_path):
    """``languages_118`` at toy size: a draw of the corpus within its byte limit; DualMomentumModel at the
    22-language grid's pick (from its tune scores) on the Bible and the draw; Tatoeba's sets of the folder scored;
    the model saved, so a second call scores it again without training; no draw is an error naming the flag."""
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_languages
    from protocol import pick, point

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"en": f"Open file {i}", "fr": f"Ouvrir le fichier {i}", "source": "t"}) + "\n"
            for i in range(200)
        )
    )
    drawn = gpu_languages.draw_corpus(corpus, tmp_path / "draw.jsonl", max_bytes=4000)
    assert 0 < drawn["rows"] < 200 and (tmp_path / "draw.jsonl").stat().st_size <= 4000
    with pytest.raises(FileExistsError, match="draw.jsonl: exists"):  # a second draw never overwrites the first
        gpu_languages.draw_corpus(corpus, tmp_path / "draw.jsonl")
    tatoeba = tmp_path / "tatoeba"
    tatoeba.mkdir()
    for code, lines in (("fra", ["Bonjour.", "Merci."]), ("deu", ["Hallo.", "Danke."])):
        (tatoeba / f"tatoeba.{code}-eng.{code}").write_text("\n".join(lines) + "\n")
        (tatoeba / f"tatoeba.{code}-eng.eng").write_text("Hello.\nThank you.\n")
    args = languages_args(tmp_path, corpus=str(tmp_path / "draw.jsonl"), tatoeba_dir=str(tatoeba))
    result = gpu_languages.languages_118(args, torch.device("cpu"), seconds=3600)
    chosen = pick(json.loads((ROOT / "benchmarks/results/multilingual_grid.json").read_text())["runs"], "hf_xlsr")
    rate, temperature, size, momentum = point(chosen)
    assert (result["learning_rate"], result["temperature"], result["queue_size"], result["momentum"]) == (
        rate,
        temperature,
        size,
        momentum,
    )
    import yaml

    trained = yaml.safe_load((tmp_path / "models" / "hf_xlsr_118.run" / "run.yaml").read_text())  # what it trained
    assert (
        trained["learning_rate"],
        trained["model_config"]["temperature"],
        trained["model_config"]["queue_size"],
        trained["model_config"]["momentum"],
    ) == (rate, temperature, size, momentum)
    assert trained["train_data"] == ["bible", str(tmp_path / "draw.jsonl")]
    assert set(result["metrics"]) >= {"tatoeba_fra_f1", "tatoeba_deu_f1", "tatoeba_f1"}
    assert (tmp_path / "models" / "hf_xlsr_118").is_dir()
    assert gpu_languages.languages_118(args, torch.device("cpu"), seconds=0)["metrics"] == result["metrics"]
    with pytest.raises(FileNotFoundError, match="--corpus"):
        gpu_languages.languages_118(languages_args(tmp_path), torch.device("cpu"), seconds=3600)
