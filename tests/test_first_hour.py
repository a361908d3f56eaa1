"""A new user's first hour, as README and docs/training.md lead it: a TSV of their own, a YAML beside it, train,
evaluate, encode, mine. Each surprise found there is a behaviour here, driven through the real entry point."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MINILM, run_config, tiny_dual_momentum, write_config

from hf_xlsr.commands.train import train_help
from hf_xlsr.data import load_bible
from hf_xlsr.trainers import ConfigFileError, parse_run_arguments
from hf_xlsr_cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def one_line_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture(scope="module")
def en_de(tmp_path_factory) -> Path:
    """A user's own data: 200 en-de verse pairs in a TSV, and a run configuration beside it that names it by a path
    relative to the configuration's folder."""
    folder = tmp_path_factory.mktemp("project")
    rows = load_bible(["en", "de"], split="train").select(range(0, 2000, 10))
    (folder / "en_de.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in zip(rows["en"], rows["de"], strict=True)))
    return run_config(
        folder / "run.yaml",
        train_data="en_de.tsv",
        languages=["en", "de"],
        max_steps=10,
        save_strategy=None,
        output_dir=str(folder / "model"),
        max_eval_pairs=0,
    )


@pytest.fixture(scope="module")
def trained(en_de) -> Path:
    """``hf-xlsr train run.yaml`` run from another folder than the configuration's, in a process of its own."""
    result = subprocess.run(
        [sys.executable, "-m", "hf_xlsr_cli", "train", str(en_de)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return en_de.parent / "model"


def test_the_run_reads_its_data_beside_its_configuration_and_writes_no_checkpoint_unasked(trained):
    """The TSV is found beside the YAML though the run starts elsewhere; ten steps log ten losses (a tenth of the
    run each, not TransformerArguments' 500); no checkpoint folder is left beside the model."""
    run = json.loads((trained / "hf_xlsr_run.json").read_text())
    assert run["train_pairs"] == {"en-de": 32}  # max_train_pairs of the 200
    assert [entry["step"] for entry in run["training_log"]] == list(range(1, 11))
    assert (trained / "model.safetensors").is_file()
    assert not list(trained.glob("checkpoint-*"))


def test_a_checkpoint_is_written_where_asked_and_not_again_at_the_last_step(tmp_path, bible_pairs, tokenizer):
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=6,
        save_steps=4,
        per_device_train_batch_size=4,
        report_to="none",
        use_cpu=True,
    )
    trainer = XlsrTrainer(
        model=tiny_dual_momentum(),
        args=args,
        train_dataset=bible_pairs.select(range(24)),
        data_collator=BitextCollator(tokenizer, languages=["en", "fr"], max_length=16),
    )
    trainer.train()
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-4"]
    assert args.save_total_limit == 2 and trainer.state.logging_steps == 1


def test_a_path_missing_beside_the_configuration_names_the_field_and_the_file(tmp_path, capsys):
    config = run_config(tmp_path / "run.yaml", train_data="en_de.tsv", languages=["en", "de"])
    line = one_line_error(capsys, ["train", str(config)])
    assert line == (
        f"hf-xlsr train: error: {config}: train_data: no such file {tmp_path / 'en_de.tsv'} (a relative "
        "path is read from the configuration file's folder)"
    )
    mapping = write_config(tmp_path / "pairs.yaml", train_data={"en-de": "de.tsv"}, languages=["en", "de"])
    with pytest.raises(ConfigFileError, match=r"pairs.yaml: train_data.en-de: no such file .*de.tsv"):
        parse_run_arguments(mapping)


def test_evaluating_on_the_training_file_warns_wherever_the_file_lies(trained, en_de, tmp_path, capsys, caplog):
    copy = tmp_path / "renamed.tsv"
    copy.write_bytes((en_de.parent / "en_de.tsv").read_bytes())
    other = tmp_path / "other.tsv"
    other.write_text("".join(f"{a}\t{b}\n" for a, b in (("Good morning.", "Guten Morgen."), ("Thanks.", "Danke."))))
    for data, warned in ((copy, True), (other, False)):
        with caplog.at_level(logging.WARNING, logger="hf_xlsr"):
            caplog.clear()
            assert (
                main(
                    [
                        "evaluate",
                        "--model",
                        str(trained),
                        "--data",
                        str(data),
                        "--languages",
                        "en",
                        "de",
                        "--tasks",
                        "retrieval",
                        "--output",
                        str(tmp_path / "r.json"),
                    ]
                )
                == 0
            )
        warnings = [r.getMessage() for r in caplog.records if "trained on" in r.getMessage()]
        assert bool(warnings) is warned, warnings
        if warned:
            assert warnings == [
                f"--data {data} is the data {trained} was trained on (hf_xlsr_run.json): these "
                "scores are on training pairs, not held out"
            ]


def test_the_bible_training_split_warns_and_its_held_out_split_does_not(tmp_path, caplog):
    from hf_xlsr.commands.evaluate import warn_training_data

    (tmp_path / "hf_xlsr_run.json").write_text(json.dumps({"train_data": "bible", "train_split": "train"}))
    with caplog.at_level(logging.WARNING, logger="hf_xlsr"):
        warn_training_data(str(tmp_path), "bible", "heldout")
        assert not caplog.records
        warn_training_data(str(tmp_path), "bible", "train")
    assert [r.getMessage() for r in caplog.records] == [
        f"--data bible --split train is the data {tmp_path} was trained on (hf_xlsr_run.json): these scores are on "
        "training pairs, not held out"
    ]


def test_a_shared_encoder_told_an_untrained_language_warns_with_its_languages(trained, tmp_path, caplog):
    sentences = tmp_path / "fr.txt"
    sentences.write_text("Jésus pleura.\nAu commencement.\n")
    with caplog.at_level(logging.WARNING, logger="hf_xlsr"):
        assert (
            main(
                [
                    "encode",
                    "--model",
                    str(trained),
                    "--input",
                    str(sentences),
                    "--output",
                    str(tmp_path / "v.npy"),
                    "--language",
                    "fr",
                ]
            )
            == 0
        )
        assert (
            main(
                [
                    "encode",
                    "--model",
                    str(trained),
                    "--input",
                    str(sentences),
                    "--output",
                    str(tmp_path / "w.npy"),
                    "--language",
                    "de",
                ]
            )
            == 0
        )
    assert [r.getMessage() for r in caplog.records if "zero-shot" in r.getMessage()] == [
        f"{trained} was trained on en, de, not fr: its vectors of fr are zero-shot"
    ]


def test_a_package_model_is_taken_wherever_a_model_is(tmp_path, capsys):
    sentences = tmp_path / "en.txt"
    sentences.write_text("Jesus wept.\n")
    assert main(["encode", "--model", MINILM, "--input", str(sentences), "--output", str(tmp_path / "v.npy")]) == 0
    assert (
        main(
            [
                "evaluate",
                "--model",
                MINILM,
                "--tasks",
                "retrieval",
                "--max-pairs",
                "20",
                "--output",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "r.json").read_text())["retrieval"]["retrieval_accuracy"] > 0
    capsys.readouterr()
    line = one_line_error(
        capsys,
        [
            "encode",
            "--model",
            "package:no_such_package/model",
            "--input",
            str(sentences),
            "--output",
            str(tmp_path / "x.npy"),
        ],
    )
    assert line.startswith("hf-xlsr encode: error: --model package:no_such_package/model: ")


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["encode", "--model", "m", "--input", "i", "--output", "o.npy", "--batch-size", "-1"], "--batch-size"),
        (["embed", "--model", "m", "--input", "i", "--output", "o", "--shard-size", "0"], "--shard-size"),
        (["evaluate", "--model", "m", "--max-pairs", "0"], "--max-pairs"),
        (["evaluate", "--model", "m", "--max-length", "x"], "--max-length"),
        (["mine", "--model", "m", "--source", "s", "--target", "t", "--output", "o", "--k", "0"], "--k"),
        (["export", "--model", "m", "--output", "o", "--max-length", "-3"], "--max-length"),
    ],
)
def test_a_number_out_of_range_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, argv)
    assert line.startswith(f"hf-xlsr {argv[0]}: error: argument {flag}: ") and line.endswith(
        f"(hf-xlsr {argv[0]} --help)"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "field, value",
    [
        ("per_device_train_batch_size", "-4"),
        ("gradient_accumulation_steps", "0"),
        ("max_length", "0"),
        ("learning_rate", "-1e-4"),
    ],
)
def test_a_training_number_out_of_range_is_one_line_and_no_output_folder(tmp_path, capsys, field, value):
    config = run_config(tmp_path / "run.yaml")
    line = one_line_error(capsys, ["train", str(config), f"--{field}={value}"])
    assert line.startswith(f"hf-xlsr train: error: the command line: {field}: {float(value):g}".replace(".0,", ","))
    assert not (tmp_path / "run").exists()
    config = run_config(tmp_path / "file.yaml", **{field: float(value) if "rate" in field else int(value)})
    assert one_line_error(capsys, ["train", str(config)]).startswith(f"hf-xlsr train: error: {config}: {field}: ")


def test_mine_makes_its_output_folder_as_encode_and_evaluate_do(tmp_path, minilm_path):
    (tmp_path / "en.txt").write_text("Jesus wept.\nIn the beginning God created the heavens and the earth.\n")
    (tmp_path / "fr.txt").write_text("Jésus pleura.\nAu commencement, Dieu créa les cieux et la terre.\n")
    output = tmp_path / "nodir" / "sub" / "pairs.tsv"
    assert (
        main(
            [
                "mine",
                "--model",
                minilm_path,
                "--source",
                str(tmp_path / "en.txt"),
                "--target",
                str(tmp_path / "fr.txt"),
                "--output",
                str(output),
                "--all-pairs",
            ]
        )
        == 0
    )
    assert len(output.read_text().splitlines()) == 2


def test_train_help_shows_the_values_a_run_uses():
    text = " ".join(train_help().split())
    assert "the paper's: xlsr_dual_momentum 4e-05, xlsr_lightweight 0.001, xlsr_cmlm 0.001, xlsr_hictl 2.5e-05" in text
    assert "dual_momentum 400" in text and "at most 10% of the run's steps" in text
    assert "a tenth of the run's steps, at most 500" in text and "(default: 2)" in text


def test_every_option_of_every_command_says_what_it_is():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in commands.items():
        for action in command._actions:
            if action.option_strings and action.help != "==SUPPRESS==" and action.dest != "help":
                assert action.help, f"hf-xlsr {name} {action.option_strings[0]} has no help"


def test_the_same_rows_log_their_dropped_duplicates_once(caplog):
    """Two tasks of one evaluation read the same held-out rows: the drop is logged once, the second reader's at
    DEBUG; other rows log theirs."""
    import uuid

    import datasets

    from hf_xlsr.data.bitext import unique_pairs

    marker = uuid.uuid4().hex  # rows no other test of this process has read

    def rows(tag: str) -> datasets.Dataset:
        return datasets.Dataset.from_dict({"en": [marker, marker, tag], "fr": ["a", "b", "c"]})

    with caplog.at_level(logging.DEBUG, logger="hf_xlsr.data.bitext"):
        assert len(unique_pairs(rows("x"), ["en", "fr"])) == 2
        assert len(unique_pairs(rows("x"), ["en", "fr"])) == 2
        unique_pairs(rows("y"), ["en", "fr"])
    dropped = [
        r.levelno for r in caplog.records if r.getMessage() == "dropped 1 pairs whose sentence repeats an earlier one"
    ]
    assert dropped == [logging.INFO, logging.DEBUG, logging.INFO]


def test_a_plain_clone_skips_the_tatoeba_tests_with_their_reason():
    env = {k: v for k, v in os.environ.items() if k != "HF_XLSR_TATOEBA_DIR"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-rs",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_tatoeba.py::test_the_shared_test_sets_load_112_languages_of_aligned_lines",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout and "give --tatoeba-dir DIR or HF_XLSR_TATOEBA_DIR" in result.stdout
