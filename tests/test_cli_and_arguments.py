"""Run configuration files, paper defaults, and the two entry points (``hf-xlsr train``, ``examples/train.py``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import MINILM, run_config, tiny_encoder_config, write_config
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformer

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.registry import trained_types
from hf_xlsr.trainers import ConfigFileError, parse_run_arguments

ROOT = Path(__file__).resolve().parents[1]


def test_paper_defaults_fill_what_the_run_does_not_set(tmp_path):
    config = write_config(tmp_path / "run.yaml", output_dir=str(tmp_path), encoder_x=MINILM, learning_rate="1e-4")
    model_args, data_args, training_args = parse_run_arguments(config, ["--warmup_steps", "7"])
    assert training_args.learning_rate == 1e-4  # from the file (a YAML string)
    assert training_args.warmup_steps == 7  # from the command line
    assert training_args.max_grad_norm == 10.0 and training_args.weight_decay == 1e-4  # Table 9
    assert training_args.num_train_epochs == 15 and training_args.lr_scheduler_type == "cosine"
    assert training_args.per_device_train_batch_size == 1024
    assert data_args.languages == ["en", "fr"] and model_args.model_type == "xlsr_dual_momentum"


def test_one_rule_for_training_values_explicit_then_the_papers_recipe(tmp_path):
    """Command line > a training field in the file > the paper's recipe, in ``hf-xlsr train``; in Python,
    ``XlsrTrainingArguments.from_paper``: explicit arguments > the paper's recipe. A model configuration holds no
    training value: one under ``model_config`` is refused, one in a saved 0.2.0 configuration is dropped."""
    from hf_xlsr import DualMomentumConfig
    from hf_xlsr.trainers import XlsrTrainingArguments

    config = write_config(tmp_path / "run.yaml", output_dir=str(tmp_path), encoder_x=MINILM, weight_decay=0.3)
    _, _, args = parse_run_arguments(config, ["--warmup_steps", "7"])
    assert args.warmup_steps == 7  # command line
    assert args.weight_decay == 0.3  # a training field of the file
    assert (args.learning_rate, args.max_grad_norm, args.lr_scheduler_type) == (4e-5, 10.0, "cosine")  # Table 9
    assert args.per_device_train_batch_size == 1024
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORLD_SIZE", "2")
        shared = XlsrTrainingArguments.from_paper(DualMomentumConfig(), output_dir=str(tmp_path))
    assert shared.per_device_train_batch_size == 512  # Table 9's 1,024 over two processes
    python = XlsrTrainingArguments.from_paper(DualMomentumConfig(), output_dir=str(tmp_path), weight_decay=0.5)
    assert (python.learning_rate, python.weight_decay, python.max_grad_norm) == (4e-5, 0.5, 10.0)
    assert python.per_device_train_batch_size == 1024 and python.warmup_steps == 400
    assert python.paper_values >= {"learning_rate", "warmup_steps"} and "weight_decay" not in python.paper_values
    assert XlsrTrainingArguments.from_paper("xlsr_cmlm", output_dir=str(tmp_path)).learning_rate == 1e-3
    assert XlsrTrainingArguments(output_dir=str(tmp_path)).learning_rate == 5e-5  # the plain class: no paper value
    inside = write_config(tmp_path / "inside.yaml", output_dir=str(tmp_path), model_config={"learning_rate": 1e-4})
    with pytest.raises(
        ConfigFileError,
        match=r"inside\.yaml: model_config: learning_rate is a training argument, "
        r"not a field of DualMomentumConfig: set it beside model_config",
    ):
        parse_run_arguments(inside)
    saved = DualMomentumConfig.from_dict({**DualMomentumConfig().to_dict(), "learning_rate": 4e-5, "max_length": 9})
    assert "learning_rate" not in saved.to_dict() and "max_length" not in saved.to_dict()


def test_model_config_values_are_checked_and_coerced(tmp_path):
    config = write_config(
        tmp_path / "run.yaml", output_dir=str(tmp_path), model_config={"temperature": "5e-2", "momentum": 1}
    )
    model_args, _, _ = parse_run_arguments(config)
    assert model_args.model_config == {"temperature": 0.05, "momentum": 1.0}
    bad = write_config(tmp_path / "bad.yaml", output_dir=str(tmp_path), model_config={"quue_size": 10})
    typo = r"bad\.yaml: model_config: DualMomentumConfig has no field 'quue_size' \(did you mean queue_size\?\)$"
    with pytest.raises(ConfigFileError, match=typo):
        parse_run_arguments(bad)


def tiny_run_config(tmp_path: Path, name: str) -> Path:
    return write_config(
        tmp_path / f"{name}.yaml",
        model_type="xlsr_dual_momentum",
        tokenizer=MINILM,
        model_config={"encoder_x": tiny_encoder_config(), "queue_size": 32},
        train_data="bible",
        max_train_pairs=64,
        max_eval_pairs=20,
        max_length=32,
        per_device_train_batch_size=8,
        max_steps=2,
        learning_rate=1e-3,
        output_dir=str(tmp_path / name),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        export_dir=str(tmp_path / name / "export"),
    )


@pytest.mark.slow  # two trainings, one per entry point: about 20 seconds
def test_both_entry_points_run_the_same_training(tmp_path):
    commands = {
        "script": [sys.executable, str(ROOT / "examples" / "train.py"), str(tiny_run_config(tmp_path, "script"))],
        "cli": [sys.executable, "-m", "hf_xlsr_cli", "train", str(tiny_run_config(tmp_path, "cli"))],
    }
    for command in commands.values():
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        assert '"eval_retrieval_accuracy"' in result.stdout
    script, cli = (
        load_file(tmp_path / "script" / "model.safetensors"),
        load_file(tmp_path / "cli" / "model.safetensors"),
    )
    assert script.keys() == cli.keys()
    assert all(torch.equal(script[name], cli[name]) for name in script)
    assert int(cli["momentum_contrast.queue_x.filled"]) == 16 and int(cli["momentum_contrast.momentum_updates"]) == 2
    routed = SentenceTransformer(str(tmp_path / "cli" / "export"))  # one encoder per language: routed by language
    assert routed.encode(["Au commencement"], task="fr").shape == (1, 32)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples" / "configs").glob("*.yaml")))
def test_example_configs_parse(name, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the examples name today's fields and model types
        model_args, data_args, training_args = parse_run_arguments(
            ROOT / "examples" / "configs" / name, ["--output_dir", str(tmp_path)]
        )
    assert model_args.model_type in trained_types()
    assert data_args.train_data == "bible" and training_args.output_dir == str(tmp_path)


TINY_RECIPES = {
    "xlsr_dual_momentum": {"tokenizer": MINILM, "model_config": {"encoder_x": tiny_encoder_config(),
                                                                 "queue_size": 32, "shared_encoder": True}},
    "xlsr_lightweight": {"model_config": {"vocab_size": 600, "hidden_size": 32, "intermediate_size": 64,
                                          "num_attention_heads": 2}},
    "xlsr_cmlm": {"tokenizer": MINILM, "second_stage_step": 1,
                  "model_config": {"encoder": tiny_encoder_config(), "num_projections": 3, "schedule": "s3",
                                   "pcr_components": 1}},
    "xlsr_hictl": {"tokenizer": MINILM, "monolingual_probability": 0.5,
                   "model_config": {"encoder": tiny_encoder_config(), "num_negatives": 16}},
}  # fmt: skip


@pytest.mark.parametrize("model_type", sorted(TINY_RECIPES))
def test_every_recipe_trains_three_languages_evaluates_and_exports(model_type, tmp_path, capsys):
    """`hf-xlsr train` on en-fr and en-de pairs of the Bible: held-out retrieval between all three languages, the
    export and its metadata name all three (CMLM's PCR gives each its own route)."""
    from hf_xlsr_cli import main

    config = write_config(
        tmp_path / "run.yaml",
        model_type=model_type,
        train_data="bible",
        languages=["en", "fr", "de"],
        max_train_pairs=150,
        max_eval_pairs=30,
        max_length=24,
        per_device_train_batch_size=8,
        max_steps=2,
        learning_rate=1e-3,
        output_dir=str(tmp_path / "run"),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        export_dir=str(tmp_path / "export"),
        **TINY_RECIPES[model_type],
    )
    assert main(["train", str(config)]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads(printed[printed.rindex("{\n") :])  # the JSON hf-xlsr prints after the Trainer's logs
    for a, b in (("en", "fr"), ("fr", "en"), ("en", "de"), ("de", "fr")):  # de-fr: never trained directly
        assert 0 <= metrics[f"eval_retrieval_{a}2{b}_accuracy"] <= 1
    assert 0 <= metrics["eval_retrieval_zero_shot_accuracy"] <= 1
    record = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())
    assert record["language_pairs"] == ["en-fr", "en-de"] and record["training"]["optimizer_steps"] == 2
    assert record["training"].get("second_stage_step") == (1 if model_type == "xlsr_cmlm" else None)
    exported = SentenceTransformer(str(tmp_path / "export"))
    routes = list(exported[0].sub_modules) if type(exported[0]).__name__ == "Router" else []
    assert routes == (["en", "fr", "de"] if model_type == "xlsr_cmlm" else [])
    assert exported.encode(["Au commencement"], **({"task": "fr"} if routes else {})).shape[0] == 1
    meta = json.loads((tmp_path / "export" / "mteb_model_meta.json").read_text())
    assert meta["training_datasets"] == [] and meta["languages"] == ["eng-Latn", "fra-Latn", "deu-Latn"]


def test_training_and_evaluate_score_one_held_out_sample(tmp_path):
    """One rule draws the held-out pairs (the data, its size, a fixed seed): training with seed 42 and `hf-xlsr
    evaluate` see the same 300 pairs, and each records the sample with its figures."""
    from hf_xlsr.evaluation.suite import SuiteOptions, build_task
    from hf_xlsr.trainers.run import run_training

    config = tiny_run_config(tmp_path, "run")
    trainer, _ = run_training(*parse_run_arguments(config, ["--seed", "42", "--max_eval_pairs", "300"]))
    during_training = trainer.evaluators[0]
    evaluator = build_task("retrieval", SuiteOptions(max_pairs=300)).evaluator
    assert during_training.sentences == evaluator.sentences
    record = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())
    assert record["evaluation_data"] == "bible (heldout), 300 unique pairs, drawn with seed 0"
    other = build_task("retrieval", SuiteOptions(max_pairs=300, seed=1)).evaluator
    assert other.sentences != evaluator.sentences and other.sample.endswith("seed 1")
    safetensors = tmp_path / "run" / "model.safetensors"
    from hf_xlsr.utils import current_umask

    assert safetensors.stat().st_mode & 0o777 == 0o666 & ~current_umask()  # not the 0600 of a temporary file


@pytest.mark.slow  # a MiniLM run, its export and an evaluation
def test_the_run_its_export_and_evaluate_give_one_figure_for_one_model(tmp_path):
    """The run's max_length truncates its held-out evaluation and its export, so `hf-xlsr evaluate` on the export
    gives the figure the run gave (at 8 tokens, far from the 128 an evaluation would otherwise take)."""
    from hf_xlsr.trainers.run import run_training
    from hf_xlsr_cli import main

    config = write_config(
        tmp_path / "run.yaml",
        model_type="xlsr_dual_momentum",
        encoder=MINILM,
        train_data="bible",
        model_config={"queue_size": 32, "shared_encoder": True},
        max_train_pairs=16,
        max_eval_pairs=100,
        max_length=8,
        per_device_train_batch_size=8,
        max_steps=1,
        output_dir=str(tmp_path / "run"),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        export_dir=str(tmp_path / "export"),
    )
    trainer, _ = run_training(*parse_run_arguments(config, []))
    assert trainer.args.eval_max_length == 8
    during = trainer.evaluate()["eval_retrieval_accuracy"]
    out = tmp_path / "scores.json"
    command = ["evaluate", "--model", str(tmp_path / "export"), "--tasks", "retrieval", "--max-pairs", "100"]
    assert main([*command, "--output", str(out)]) == 0
    scored = json.loads(out.read_text())["retrieval"]
    assert 0.05 < during < 0.95 and scored["retrieval_accuracy"] == pytest.approx(during, abs=1e-6)


def test_the_command_line_answers_help_and_version_without_importing_the_library():
    code = (
        "import sys, contextlib, io, hf_xlsr_cli\n"
        "for argv in (['--help'], ['--version'], ['train', '--help'], ['encode', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "        hf_xlsr_cli.main(argv)\n"
        "    print(out.getvalue())\n"
        "print('loaded:', [m for m in ('torch', 'transformers', 'hf_xlsr') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    import hf_xlsr

    assert "{train,encode,embed,export,evaluate,mine,push}" in result.stdout
    assert f"hf-xlsr {hf_xlsr.__version__}" in result.stdout
    assert "--resume_from_checkpoint" in result.stdout and "--input INPUT" in result.stdout  # train's and encode's
    assert "loaded: []" in result.stdout, result.stdout + result.stderr


def test_the_shipped_train_help_is_what_the_run_fields_give():
    """``hf-xlsr train --help`` prints the package's ``train_help.txt`` at once; it must be what `train_help` builds
    from the run's dataclasses and the papers' recipes (after a change: ``python -c "from hf_xlsr.commands.train
    import write_train_help; write_train_help()"``); the command line reads the same file."""
    import hf_xlsr_cli
    from hf_xlsr.commands.train import TRAIN_HELP_FILE, train_help

    assert hf_xlsr_cli.TRAIN_HELP_FILE == TRAIN_HELP_FILE
    assert TRAIN_HELP_FILE.read_text(encoding="utf-8") == train_help()


def test_train_help_lists_the_run_fields(capsys):
    from hf_xlsr_cli import main

    assert main(["train", "--help"]) == 0
    text = capsys.readouterr().out
    for field in (
        "--languages",
        "--language_pairs",
        "--language_sampling_alpha",
        "--resume_from_checkpoint",
        "--model_config",
        "--train_data",
        "--max_steps",
    ):
        assert field in text, field
    # the run's own fields first, the rest of TrainingArguments named in one line at the end
    assert text.index("--languages") < text.index("--max_steps") and "--adam_beta1" not in text
    assert "Every other field of transformers.TrainingArguments is accepted too" in text
    assert len(text.splitlines()) < 260


def test_encode_streams_a_file_into_the_vectors_sentence_transformers_gives(tmp_path, capsys):
    from hf_xlsr_cli import main

    verses = load_bible(["en", "fr"], split="heldout").select(range(30))
    source = tmp_path / "fr.txt"
    source.write_text("\n".join(verses["fr"][:10]) + "\n\n" + "\n".join(verses["fr"][10:]) + "\n", encoding="utf-8")
    output = tmp_path / "out" / "fr.npy"
    assert (
        main(
            [
                "encode",
                "--model",
                resolve_reference(MINILM),
                "--input",
                str(source),
                "--output",
                str(output),
                "--batch-size",
                "7",
            ]
        )
        == 0
    )
    vectors = np.load(output)
    lines = [*verses["fr"][:10], "", *verses["fr"][10:]]  # the blank line is row 10, the empty string's vector
    expected = SentenceTransformer(resolve_reference(MINILM)).encode(lines, normalize_embeddings=True)
    assert vectors.shape == (31, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    assert "31 lines" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["encode", "--model", resolve_reference(MINILM), "--input", str(source), "--output", str(tmp_path / "x")])
    assert "--output " in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_a_run_on_per_pair_files_exports_with_its_training_datasets(tmp_path, capsys):
    """train_data as one file per language pair: after training, the export is written, its mteb metadata lists no
    training dataset (local files), and a Hub dataset among the pairs' sources is named."""
    from hf_xlsr.export import mteb_training_datasets
    from hf_xlsr_cli import main

    verses = load_bible(["en", "fr", "de"], split="train").select(range(40))
    sources = {}
    for other in ("fr", "de"):
        path = tmp_path / f"en_{other}.tsv"
        path.write_text("".join(f"{a}\t{b}\n" for a, b in zip(verses["en"], verses[other], strict=True)), "utf-8")
        sources[f"en-{other}"] = str(path)
    config = write_config(
        tmp_path / "run.yaml",
        model_type="xlsr_dual_momentum",
        train_data=sources,
        languages=["en", "fr", "de"],
        eval_data="bible",
        max_eval_pairs=20,
        max_length=24,
        per_device_train_batch_size=8,
        max_steps=1,
        output_dir=str(tmp_path / "run"),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        export_dir=str(tmp_path / "export"),
        **TINY_RECIPES["xlsr_dual_momentum"],
    )
    assert main(["train", str(config)]) == 0
    meta = json.loads((tmp_path / "export" / "mteb_model_meta.json").read_text())
    assert meta["training_datasets"] == []
    assert SentenceTransformer(str(tmp_path / "export")).encode(["Au commencement"]).shape[0] == 1
    assert mteb_training_datasets({"en-fr": sources["en-fr"], "en-de": "mteb/tatoeba-bitext-mining"}) == ["Tatoeba"]


def test_per_pair_files_of_hyphenated_codes_train_and_score_each_pair(tmp_path, capsys):
    """Catalogue codes hold hyphens (``zh-hans``, ``pt-br``): per-pair training and held-out files named
    ``en-zh-hans`` and ``pt-br-zh-hans`` train, and each pair gets its own held-out evaluator, whose figure matches
    retrieval computed here from the exported model (float64, both ways)."""
    from hf_xlsr_cli import main

    verses = load_bible(["en", "pt", "zh"], split="train").select(range(48))
    held = load_bible(["en", "pt", "zh"], split="heldout").select(range(12))
    columns = {"en": "en", "pt-br": "pt", "zh-hans": "zh"}
    pairs = (("en", "zh-hans"), ("pt-br", "zh-hans"))

    def files(rows, kind: str) -> dict[str, str]:
        sources = {}
        for first, second in pairs:
            path = tmp_path / f"{kind}_{first}_{second}.jsonl"
            lines = zip(rows[columns[first]], rows[columns[second]], strict=True)
            path.write_text("".join(json.dumps({first: a, second: b}, ensure_ascii=False) + "\n" for a, b in lines))
            sources[f"{first}-{second}"] = str(path)
        return sources

    config = write_config(
        tmp_path / "run.yaml",
        model_type="xlsr_dual_momentum",
        train_data=files(verses, "train"),
        eval_data=files(held, "heldout"),
        languages=["en", "pt-br", "zh-hans"],
        language_pairs=["en-zh-hans", "pt-br-zh-hans"],
        max_eval_pairs=12,
        max_length=24,
        per_device_train_batch_size=8,
        max_steps=1,
        output_dir=str(tmp_path / "run"),
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        export_dir=str(tmp_path / "export"),
        **TINY_RECIPES["xlsr_dual_momentum"],
    )
    assert main(["train", str(config)]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads(printed[printed.rindex("{\n") :])
    model = SentenceTransformer(str(tmp_path / "export"), device="cpu")
    for first, second in pairs:
        a, b = (model.encode(held[columns[code]]).astype(np.float64) for code in (first, second))
        a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
        gold = np.arange(len(a))
        hits = (np.argmax(a @ b.T, axis=1) == gold).mean() + (np.argmax(b @ a.T, axis=1) == gold).mean()
        name = f"{first}-{second}".replace("-", "_")
        assert metrics[f"eval_retrieval_{name}_accuracy"] == pytest.approx(hits / 2, abs=1e-9), name


@pytest.mark.parametrize("command", ["train", "encode", "embed", "evaluate", "mine", "export"])
def test_every_command_spells_its_output_and_length_alike(command):
    """One name per idea: each command that writes takes --output, each that tokenises --max-length (train: as run
    fields, output_dir and max_length)."""
    from hf_xlsr.commands.train import train_help
    from hf_xlsr_cli import build_parser

    if command == "train":
        text = train_help()
        assert "--output_dir" in text and "--max_length" in text
        return
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    shown = [action for action in commands[command]._actions if action.help != argparse.SUPPRESS]
    flags = {flag for action in shown for flag in action.option_strings}
    assert {"--output", "--max-length"} <= flags, flags


# What a short run prints at the default log level, stdout and stderr together: hf_xlsr's own lines (the values
# it chose, the data, training progress, the final metrics), no other library's progress bars or notices.
# train: its final evaluation is announced and shows progress; a 2-step run logs its loss at each step (a tenth of
# the run, at least one step)
LINE_BUDGET = {"train": 25, "encode": 3}  # the first line names the torch threads


def printed_lines(command: list[str], cwd: Path) -> list[str]:
    import subprocess
    import sys

    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_DISABLE", "HF_DATASETS_DISABLE"))}
    completed = subprocess.run(
        [sys.executable, "-m", "hf_xlsr_cli", *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**environment, "HF_HUB_OFFLINE": "1"},
        timeout=600,
    )
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
    for noise in (
        "Loading weights",
        "Writing model shards",
        "Filter",
        "Setting accelerator",
        "pin_memory",
        "Flattening",
    ):
        assert noise not in text, text
    assert len(lines) <= LINE_BUDGET["train"], text
    lines = printed_lines(
        [
            "encode",
            "--model",
            str(tmp_path / "export"),
            "--input",
            str(sentences),
            "--output",
            str(tmp_path / "v.npy"),
        ],
        tmp_path,
    )
    assert len(lines) <= LINE_BUDGET["encode"], "\n".join(lines)
    assert lines[0].startswith(f"8 lines of {sentences} -> ")


def test_every_command_runs_from_its_own_module_of_the_package():
    """``hf_xlsr_cli`` holds the options and the dispatch; each command's work is ``hf_xlsr.commands.<name>.run``."""
    import importlib

    from hf_xlsr_cli import build_parser

    (commands,) = [action for action in build_parser()._actions if action.dest == "command"]
    assert sorted(commands.choices) == ["embed", "encode", "evaluate", "export", "mine", "push", "train"]
    for name, parser in commands.choices.items():
        assert parser.get_default("handler") == name
        assert callable(importlib.import_module(f"hf_xlsr.commands.{name}").run)
