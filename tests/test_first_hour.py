"""The first hour with hf-xlsr: each mistake a new user makes gets one line on stderr that names what is wrong and
where, exit status 2, and an output location left as it was; checks run before any model loads or any work starts.
Driven through the real entry point (``hf_xlsr_cli.main``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import MINILM, tiny_encoder_config

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr_cli import main


def run_config(path: Path, **values) -> Path:
    base = dict(model_type="dual_momentum", tokenizer=MINILM, train_data="bible", languages=["en", "fr"],
                model_config={"encoder_x": tiny_encoder_config(), "queue_size": 16, "shared_encoder": True},
                max_train_pairs=32, max_eval_pairs=16, max_length=16, per_device_train_batch_size=4, max_steps=1,
                output_dir=str(path.parent / "run"), save_strategy="no", report_to="none")  # fmt: skip
    base.update(values)
    path.write_text(yaml.safe_dump({k: v for k, v in base.items() if v is not None}))
    return path


def unwritable(tmp_path: Path) -> Path:
    """A folder no process can write into: a read-only one for a user, /sys for root (who may write anywhere)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "out"
    return Path("/sys/hf_xlsr_out")


def one_line_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"hf-xlsr {argv[0]}: error: "), err
    return lines[0]


def untouched(tmp_path: Path) -> set[str]:
    return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}


@pytest.mark.parametrize(
    "encoder, message",
    [("/nonexistent/encoder", "encoder: /nonexistent/encoder: no such model folder"),
     ("someone/not-in-the-cache", "encoder: someone/not-in-the-cache: no such folder, and not a Hub model in this "
                                  "machine's Hugging Face cache")],
)  # fmt: skip
def test_an_encoder_that_is_not_here(tmp_path, capsys, encoder, message):
    config = run_config(tmp_path / "run.yaml", encoder=encoder, model_config={"queue_size": 16})
    before = untouched(tmp_path)
    assert one_line_error(capsys, ["train", str(config)]).startswith(f"hf-xlsr train: error: {config}: {message}")
    assert untouched(tmp_path) == before


def test_a_misspelt_override_names_the_closest_field(tmp_path, capsys):
    config = run_config(tmp_path / "run.yaml")
    line = one_line_error(capsys, ["train", str(config), "--max_stpes", "3"])
    assert line.endswith("the command line: unknown argument --max_stpes (did you mean --max_steps?)")
    assert not (tmp_path / "run").exists()


def test_a_wrong_type_in_the_file_names_the_file_and_field(tmp_path, capsys):
    config = run_config(tmp_path / "run.yaml", max_steps="ten")
    assert one_line_error(capsys, ["train", str(config)]).endswith(f"{config}: max_steps: invalid int value: 'ten'")
    line = one_line_error(capsys, ["train", str(config), "--max_steps", "eleven"])
    assert line.endswith("the command line: max_steps: invalid int value: 'eleven'")


def test_a_language_the_corpus_lacks_lists_the_corpus_languages(tmp_path, capsys):
    config = run_config(tmp_path / "run.yaml", languages=["en", "xx"])
    line = one_line_error(capsys, ["train", str(config)])
    assert line.startswith(f"hf-xlsr train: error: {config}: languages: the Bible has no language 'xx'; it has ar, ")
    assert " en, " in line and " zh " in line and "'1'" not in line
    assert not (tmp_path / "run").exists()


def test_the_runs_default_values_are_logged_once_it_is_valid_never_before_an_error(tmp_path, capsys, caplog):
    from hf_xlsr.trainers.arguments import parse_run_arguments

    with caplog.at_level("INFO", logger="hf_xlsr.trainers.arguments"):
        one_line_error(capsys, ["train", str(run_config(tmp_path / "bad.yaml", languages=["en", "xx"]))])
    assert "values the run does not set" not in caplog.text
    with caplog.at_level("INFO", logger="hf_xlsr.trainers.arguments"):
        parse_run_arguments(run_config(tmp_path / "good.yaml"))
    assert "values the run does not set, from the model configuration" in caplog.text


@pytest.mark.parametrize("field", ["output_dir", "export_dir"])
def test_train_checks_its_output_folders_can_be_written_before_training(tmp_path, capsys, field):
    target = unwritable(tmp_path)
    config = run_config(tmp_path / "run.yaml", **{field: str(target)})
    line = one_line_error(capsys, ["train", str(config)])
    assert line.startswith(f"hf-xlsr train: error: {config}: {field} {target}: cannot write in {target.parent}")
    assert not (tmp_path / "run").exists() and not target.exists()


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sentences") / "en.txt"
    path.write_text("\n".join(load_bible(["en"], split="heldout")["en"][:8]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["encode", "mine", "evaluate", "export"])
def test_every_command_checks_its_output_can_be_written_before_loading(tmp_path, capsys, sentences, command):
    target = unwritable(tmp_path)
    model = resolve_reference(MINILM)
    argv = {
        "encode": ["encode", "--model", model, "--input", str(sentences), "--output", f"{target}/v.npy"],
        "mine": [
            "mine",
            "--model",
            model,
            "--source",
            str(sentences),
            "--target",
            str(sentences),
            "--output",
            f"{target}/p.tsv",
        ],
        "evaluate": ["evaluate", "--model", model, "--output", f"{target}/results.json"],
        "export": ["export", "--model", str(tmp_path / "no-such-model"), "--output", str(target)],
    }[command]
    line = one_line_error(capsys, argv)
    assert f"{target}" in line and "cannot write in" in line, line
    assert not target.exists()


def test_evaluate_names_a_language_the_data_lacks_and_leaves_no_folder(tmp_path, capsys):
    output = tmp_path / "evaluation"
    line = one_line_error(capsys, ["evaluate", "--model", resolve_reference(MINILM), "--languages", "en", "xx",
                                   "--output", str(output / "results.json"), "--output-dir", str(output)])  # fmt: skip
    assert line.endswith("--languages xx: --data bible has no language 'xx'; it has ar, bn, de, en, es, fa, fr, hi, "
                         "id, it, ja, ko, pl, pt, ro, ru, sw, tl, tr, uk, vi, zh")  # fmt: skip
    assert not output.exists()


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory, tokenizer) -> Path:
    from conftest import tiny_dual_momentum

    folder = tmp_path_factory.mktemp("trained") / "model"
    tiny_dual_momentum().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_push_offline_says_so_in_one_line_before_any_work(tmp_path, capsys, trained_folder):
    line = one_line_error(capsys, ["push", "--model", str(trained_folder), "--repo-id", "me/model"])
    assert line == "hf-xlsr push: error: HF_HUB_OFFLINE is set: nothing can be pushed to the Hub (unset it to push)"


def test_push_without_a_token_or_a_network_says_so_in_one_line(tmp_path, capsys, trained_folder, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no stored token
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    line = one_line_error(capsys, ["push", "--model", str(trained_folder), "--repo-id", "me/model"])
    assert line == "hf-xlsr push: error: no Hugging Face token: log in with `hf auth login` or set HF_TOKEN"
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: no network
    from hf_xlsr.evaluation import loading

    loaded = []
    load = loading.load_trained_model
    monkeypatch.setattr(loading, "load_trained_model", lambda *args: loaded.append(args) or load(*args))
    line = one_line_error(capsys, ["push", "--model", str(trained_folder), "--repo-id", "me/model"])
    assert line.startswith("hf-xlsr push: error: me/model: the push failed ("), line
    assert loaded == []  # the Hub was asked before any model was loaded or exported


def test_a_ten_step_run_warms_up_for_a_tenth_of_itself_not_the_papers_400_steps(tmp_path, capsys, caplog):
    """max_steps 10 and no warm-up given: the paper's 400 warm-up steps would train at 1e-7 to 9e-7; the run warms
    up for 1 step and follows the cosine decay from the paper's peak, 4e-5 (Table 9), and the log says so. The first
    log line holds no queue statistic, for the queue holds no key yet (no NaN, no accuracy of 1)."""
    import json
    import logging
    import math

    config = run_config(tmp_path / "run.yaml", max_steps=10, logging_steps=1, max_train_pairs=48, max_eval_pairs=0)
    with caplog.at_level(logging.INFO, logger="hf_xlsr"):
        assert main(["train", str(config)]) == 0
    history = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())["training_log"]
    logged = [(entry["step"], entry["learning_rate"]) for entry in history if "learning_rate" in entry]
    assert [step for step, _ in logged] == list(range(1, 11))
    for step, rate in logged:  # step k trains at the rate of k - 1 steps done: 1 warm-up step, then cosine decay
        done = step - 1
        expected = 0.0 if done < 1 else 4e-5 * 0.5 * (1 + math.cos(math.pi * (done - 1) / 9))
        assert rate == pytest.approx(expected, rel=1e-6, abs=1e-12), (step, rate)
    assert min(rate for step, rate in logged if step > 1) > 1e-6  # not the 1e-7 to 9e-7 of 400 warm-up steps
    assert "warm-up: 1 of this run's 10 steps (10%), not the paper's 400" in caplog.text
    assert "learning_rate=4e-05" in caplog.text and "warmup_steps=400" not in caplog.text  # one warm-up figure


def test_the_first_log_line_of_a_queue_holds_no_statistic_of_an_empty_queue(tmp_path, tokenizer, bible_pairs):
    """MoCo-BERT's first step has no negative (the queue is empty, by design): its log line holds no accuracy and no
    negative similarity (no NaN, no accuracy of 1); from the second step on they are there."""
    import math

    from conftest import tiny_dual_momentum

    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    args = XlsrTrainingArguments(output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=4,
                                 logging_steps=1, report_to="none", save_strategy="no", use_cpu=True,
                                 disable_tqdm=True)  # fmt: skip
    trainer = XlsrTrainer(model=tiny_dual_momentum(), args=args, train_dataset=bible_pairs.select(range(12)),
                          data_collator=BitextCollator(tokenizer, languages=["en", "fr"], max_length=24),
                          tokenizers=tokenizer)  # fmt: skip
    trainer.train()
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert history[0]["step"] == 1 and history[0]["loss"] == 0.0
    assert not {"negative_similarity", "accuracy_source_to_target", "accuracy_target_to_source"} & set(history[0]), (
        history[0]
    )
    assert all(not (isinstance(v, float) and math.isnan(v)) for entry in history for v in entry.values())
    assert "negative_similarity" in history[1] and 0 <= history[1]["accuracy_source_to_target"] <= 1


def test_a_warm_up_the_run_sets_is_kept(tmp_path):
    import json

    config = run_config(tmp_path / "run.yaml", max_steps=4, logging_steps=1, warmup_steps=3, max_eval_pairs=0)
    assert main(["train", str(config)]) == 0
    history = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())["training_log"]
    rates = [entry["learning_rate"] for entry in history if "learning_rate" in entry]
    assert rates[:3] == pytest.approx([0.0, 4e-5 / 3, 8e-5 / 3], rel=1e-6)


def test_evaluate_marks_the_languages_never_trained_and_times_each_task(tmp_path, capsys, tokenizer):
    from conftest import tiny_dual_momentum

    folder = tmp_path / "model"
    tiny_dual_momentum(shared_encoder=True).save_pretrained(folder)  # trained on en and fr
    tokenizer.save_pretrained(folder)
    assert main(["evaluate", "--model", str(folder), "--languages", "en", "fr", "de", "--max-pairs", "40",
                 "--tasks", "retrieval,retrieval_pcr", "--output", str(tmp_path / "out" / "results.json"),
                 "--output-dir", str(tmp_path / "out")]) == 0  # fmt: skip
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


# What a short run prints at the default log level, stdout and stderr together: hf_xlsr's own lines (the values
# it chose, the data, training progress, the final metrics), no other library's progress bars or notices.
LINE_BUDGET = {"train": 22, "encode": 2}  # train: its final evaluation is announced and shows progress


def printed_lines(command: list[str], cwd: Path) -> list[str]:
    import subprocess
    import sys

    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_DISABLE", "HF_DATASETS_DISABLE"))}
    completed = subprocess.run([sys.executable, "-m", "hf_xlsr_cli", *command], cwd=cwd, capture_output=True,
                               text=True, env={**environment, "HF_HUB_OFFLINE": "1"}, timeout=600)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    # lines as a terminal shows them: a progress bar is one line, however often it is redrawn
    lines, bar = [], None
    for line in re.split(r"[\r\n]", completed.stdout + "\n" + completed.stderr):
        label = line.split("%|")[0].rsplit(":", 1)[0].strip() if "%|" in line else None
        if line.strip() and (label is None or label != bar):
            lines.append(line)
        bar = label if line.strip() else bar
    return lines


def test_a_short_train_and_encode_print_within_their_line_budget(tmp_path, sentences):
    config = run_config(tmp_path / "run.yaml", max_steps=2, export_dir=str(tmp_path / "export"))
    lines = printed_lines(["train", str(config)], tmp_path)
    text = "\n".join(lines)
    for noise in ("Loading weights", "Writing model shards", "Filter", "Setting accelerator", "pin_memory",
                  "Flattening"):  # fmt: skip
        assert noise not in text, text
    assert len(lines) <= LINE_BUDGET["train"], text
    lines = printed_lines(["encode", "--model", str(tmp_path / "export"), "--input", str(sentences), "--output",
                           str(tmp_path / "v.npy")], tmp_path)  # fmt: skip
    assert len(lines) <= LINE_BUDGET["encode"], "\n".join(lines)
    assert lines[0].startswith(f"8 sentences of {sentences} -> ")


def test_one_transformers_for_every_install():
    """Only the core dependencies bound transformers: no extra can move it, so the demo's install and the tests'
    run one version."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("transformers") for d in project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        assert not any(r.startswith("transformers") for r in requirements), extra


def test_evaluate_on_every_engine_through_the_cached_encoder_scores_alike(tmp_path, capsys):
    """The run's one cached encoder meets the backends: evaluate on ONNX Runtime gives the retrieval figures of
    PyTorch, PCR included (both tasks read the same vectors)."""
    import json

    results = {}
    for backend in ("torch", "onnx"):
        output = tmp_path / backend / "results.json"
        assert main(["evaluate", "--model", resolve_reference(MINILM), "--languages", "en", "fr", "--max-pairs", "60",
                     "--tasks", "retrieval,retrieval_pcr", "--backend", backend, "--output", str(output),
                     "--output-dir", str(output.parent)]) == 0  # fmt: skip
        results[backend] = json.loads(output.read_text())
    for task in ("retrieval", "retrieval_pcr"):
        assert results["onnx"][task][f"{task}_accuracy"] == pytest.approx(results["torch"][task][f"{task}_accuracy"])
    assert "time per task: retrieval " in capsys.readouterr().out
