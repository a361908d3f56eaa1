"""The first hour with hf-xlsr: each mistake a new user makes gets one line on stderr that names what is wrong and
where, exit status 2, and an output location left as it was; checks run before any model loads or any work starts.
Driven through the real entry point (``hf_xlsr_cli.main``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from conftest import MINILM, tiny_encoder_config

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr_cli import main


def run_config(path: Path, **values) -> Path:
    base = dict(model_type="dual_momentum", encoder_x=MINILM, train_data="bible", languages=["en", "fr"],
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
    [("/nonexistent/encoder", "encoder_x: /nonexistent/encoder: no such model folder"),
     ("someone/not-in-the-cache", "encoder_x: someone/not-in-the-cache: no such folder, and not a Hub model in this "
                                  "machine's Hugging Face cache")],
)  # fmt: skip
def test_an_encoder_that_is_not_here(tmp_path, capsys, encoder, message):
    config = run_config(tmp_path / "run.yaml", encoder_x=encoder)
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
            "--src",
            str(sentences),
            "--tgt",
            str(sentences),
            "--out",
            f"{target}/p.tsv",
        ],
        "evaluate": ["evaluate", "--model", model, "--output", f"{target}/results.json"],
        "export": ["export", "--model", str(tmp_path / "no-such-model"), "--out", str(target)],
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
    line = one_line_error(capsys, ["push", "--model", str(trained_folder), "--repo-id", "me/model"])
    assert line.startswith("hf-xlsr push: error: me/model: the push failed ("), line
