"""The first hour with hf-xlsr: each mistake a new user makes gets one line on stderr that names what is wrong and
where, exit status 2, and an output location left as it was; checks run before any model loads or any work starts.
Driven through the real entry point (``hf_xlsr_cli.main``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MINILM, run_config, write_config

from hf_xlsr.data import resolve_reference
from hf_xlsr.trainers import ConfigFileError, parse_run_arguments
from hf_xlsr_cli import main


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
    [
        ("/nonexistent/encoder", "encoder: /nonexistent/encoder: no such model folder"),
        (
            "someone/not-in-the-cache",
            "encoder: someone/not-in-the-cache: no such folder, and not a Hub model in this "
            "machine's Hugging Face cache",
        ),
    ],
)
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
    from hf_xlsr.trainers import parse_run_arguments

    with caplog.at_level("INFO", logger="hf_xlsr.trainers.config_file"):
        one_line_error(capsys, ["train", str(run_config(tmp_path / "bad.yaml", languages=["en", "xx"]))])
    assert "values the run does not set" not in caplog.text
    with caplog.at_level("INFO", logger="hf_xlsr.trainers.config_file"):
        parse_run_arguments(run_config(tmp_path / "good.yaml"))
    assert "values the run does not set, from the paper's recipe" in caplog.text


@pytest.mark.parametrize("field", ["output_dir", "export_dir"])
def test_train_checks_its_output_folders_can_be_written_before_training(tmp_path, capsys, field):
    target = unwritable(tmp_path)
    config = run_config(tmp_path / "run.yaml", **{field: str(target)})
    line = one_line_error(capsys, ["train", str(config)])
    assert line.startswith(f"hf-xlsr train: error: {config}: {field} {target}: cannot write in {target.parent}")
    assert not (tmp_path / "run").exists() and not target.exists()


@pytest.mark.parametrize("command", ["encode", "embed", "mine", "evaluate", "export"])
def test_every_command_checks_its_output_can_be_written_before_loading(tmp_path, capsys, sentences, command):
    target = unwritable(tmp_path)
    model = resolve_reference(MINILM)
    argv = {
        "encode": ["encode", "--model", model, "--input", str(sentences), "--output", f"{target}/v.npy"],
        "embed": ["embed", "--model", model, "--input", str(sentences), "--output", f"{target}/shards"],
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
    line = one_line_error(
        capsys,
        [
            "evaluate",
            "--model",
            resolve_reference(MINILM),
            "--languages",
            "en",
            "xx",
            "--output",
            str(output / "results.json"),
            "--output-dir",
            str(output),
        ],
    )
    assert line.endswith(
        "--languages xx: --data bible has no language 'xx'; it has ar, bn, de, en, es, fa, fr, hi, "
        "id, it, ja, ko, pl, pt, ro, ru, sw, tl, tr, uk, vi, zh"
    )
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
    assert line.endswith("; nothing was sent"), line  # the repository could not even be created
    assert loaded == []  # the Hub was asked before any model was loaded or exported


@pytest.mark.parametrize(
    "text, message",
    [
        ("learning_rat: 0.1\n", r"run\.yaml: unknown argument 'learning_rat'"),
        ("- a\n- b\n", r"run\.yaml: expected a mapping"),
        ("output_dir: [unclosed\n", r"run\.yaml:2: not valid YAML: expected ',' or '\]', but got '<stream end>'$"),
        ("model_type: xlsr_dual_momentum\n  max_steps: 3\n", r"run\.yaml:2: not valid YAML: mapping values are not"),
        ("model_type: transformer_xl\n", r"unknown model_type 'transformer_xl'"),
    ],
)
def test_bad_config_files_name_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match=message) as error:
        parse_run_arguments(path)
    assert "\n" not in str(error.value)


def test_cli_reports_a_bad_config_without_a_traceback_dump(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("learning_rat: 0.1\n")
    result = subprocess.run(
        [sys.executable, "-m", "hf_xlsr_cli", "train", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "run.yaml: unknown argument 'learning_rat'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["mine", "evaluate", "export", "push"])
def test_cli_names_a_model_path_that_is_not_a_model(command, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "a.txt").write_text("one\n")
    extra = {
        "mine": [
            "--source",
            str(tmp_path / "a.txt"),
            "--target",
            str(tmp_path / "a.txt"),
            "--output",
            str(tmp_path / "o"),
        ],
        "evaluate": [],
        "export": ["--output", str(tmp_path / "out")],
        "push": ["--repo-id", "me/model"],
    }[command]
    for model, reason in (
        (str(tmp_path / "nowhere"), "no such model folder"),
        (str(empty), "not a model folder (no config.json or modules.json in it)"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--model", model, *extra])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.strip() == f"hf-xlsr {command}: error: {model}: {reason}"
    assert not (tmp_path / "o").exists() and not (tmp_path / "out").exists()


def test_an_output_dir_that_is_a_file_is_refused_before_anything_loads(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("not a folder\n")
    config = write_config(tmp_path / "run.yaml", output_dir=str(taken), encoder_x=MINILM)
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(config)])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr().err.strip()
        == f"hf-xlsr train: error: {config}: output_dir {taken} is a file, not a folder"
    )
    assert taken.read_text() == "not a folder\n"


@pytest.mark.parametrize("command", ["embed", "mine"])
def test_a_shard_of_no_sentences_is_refused_before_the_model_loads(tmp_path, capsys, sentences, command, monkeypatch):
    import hf_xlsr.evaluation.loading as loading

    monkeypatch.setattr(loading, "load_for_evaluation", lambda *a, **k: pytest.fail("the model was loaded"))
    files = {
        "embed": ["--input", str(sentences), "--output", str(tmp_path / "shards")],
        "mine": ["--source", str(sentences), "--target", str(sentences), "--output", str(tmp_path / "p.tsv")],
    }
    line = one_line_error(
        capsys, [command, "--model", resolve_reference(MINILM), *files[command], "--shard-size", "0"]
    )
    assert line == f"hf-xlsr {command}: error: argument --shard-size: 0: at least 1 (hf-xlsr {command} --help)"


def test_train_without_a_configuration_gives_a_usage_line_and_an_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "usage: hf-xlsr train CONFIG.yaml [--field value ...]",
        "hf-xlsr train: error: give a run configuration, a YAML or JSON file (hf-xlsr train --help lists its fields)",
    ]


def test_a_backend_whose_runtime_is_missing_names_the_install_before_the_model_loads(
    tmp_path, capsys, sentences, monkeypatch
):
    import importlib.util

    from hf_xlsr.evaluation import loading

    find_spec = importlib.util.find_spec
    missing = lambda name, *args: None if name == "openvino" else find_spec(name, *args)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", missing)
    monkeypatch.setattr(loading, "load_for_evaluation", lambda *args: pytest.fail("the model loaded"))
    line = one_line_error(
        capsys,
        [
            "encode",
            "--model",
            MINILM,
            "--input",
            str(sentences),
            "--output",
            str(tmp_path / "v.npy"),
            "--backend",
            "openvino",
        ],
    )
    assert line.endswith(
        """--backend openvino: backend 'openvino' needs openvino: pip install "hf_xlsr[openvino]" """
        """(from a clone: pip install ".[openvino]")"""
    )
    assert not (tmp_path / "v.npy").exists()


def test_a_warm_up_of_half_the_run_or_more_is_said(tmp_path, caplog):
    from hf_xlsr.trainers import run_training

    config = run_config(
        tmp_path / "run.yaml", output_dir=str(tmp_path / "run"), max_steps=4, warmup_steps=4, max_eval_pairs=0
    )
    with caplog.at_level("INFO"):
        run_training(*parse_run_arguments(config))
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "warmup_steps" in r.getMessage()]
    assert said == [
        "warmup_steps 4 of this run's 4 steps: the whole run is warm-up; lower warmup_steps to train at the full rate"
    ]
    assert not any("None" in r.getMessage() for r in caplog.records if r.name.startswith("hf_xlsr"))


def test_the_old_import_path_of_the_losses_still_works_with_a_warning_naming_the_new_one():
    import importlib
    import sys

    sys.modules.pop("hf_xlsr.sentence_transformers", None)
    with pytest.warns(FutureWarning, match=r"hf_xlsr.sentence_transformers is now hf_xlsr.losses"):
        old = importlib.import_module("hf_xlsr.sentence_transformers")
    from hf_xlsr.losses import MomentumQueueLoss

    assert old.MomentumQueueLoss is MomentumQueueLoss


def test_evaluate_writes_beside_the_model_or_where_asked_never_into_the_current_folder(
    tmp_path, capsys, trained_folder, monkeypatch
):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(trained_folder, model)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["evaluate", "--model", str(model), "--tasks", "retrieval", "--max-pairs", "20"]) == 0
    assert "retrieval_accuracy" in json.loads((model / "eval_results.json").read_text())["retrieval"]
    assert not list(work.iterdir())
    capsys.readouterr()
    line = one_line_error(capsys, ["evaluate", "--model", MINILM, "--tasks", "retrieval"])
    assert line.endswith(f"--model {MINILM} is not a folder of yours to write results into: give --output FILE.json")
