"""Nothing a user has is lost: an export writes only its own folder, a run never mixes with another run's checkpoints,
and ``encode`` gives row i for line i. Each case runs ``hf-xlsr`` as a user types it, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_config

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENT = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def hf_xlsr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hf_xlsr_cli", *map(str, args)],
        cwd=ROOT,
        env=ENVIRONMENT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def refused(result: subprocess.CompletedProcess, command: str) -> str:
    """The one line of a refusal (exit 2), without a traceback."""
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"hf-xlsr {command}: error: ")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    return lines[0]


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def three_steps(folder: Path) -> Path:
    """A tiny run of 3 steps into ``folder / "run"``, a checkpoint at each step (the newest kept)."""
    return run_config(
        folder / "run.yaml",
        output_dir=str(folder / "run"),
        max_steps=3,
        save_strategy="steps",
        save_steps=1,
        save_total_limit=1,
        max_eval_pairs=0,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """`three_steps` run: its folder holds the model, its checkpoint and its run record."""
    folder = tmp_path_factory.mktemp("trained")
    result = hf_xlsr("train", three_steps(folder))
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def test_export_refuses_a_folder_of_other_files_the_model_and_its_parent_and_replaces_only_its_own(tmp_path, trained):
    model = trained / "run"
    before = tree(trained)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    line = refused(hf_xlsr("export", "--model", model, "--output", mine), "export")
    assert "holds files that are not an export of hf_xlsr (notes.txt)" in line
    assert (mine / "notes.txt").read_text() == "my notes" and len(list(mine.iterdir())) == 1
    for target, relation in ((model, "is"), (trained, "holds")):
        line = refused(hf_xlsr("export", "--model", model, "--output", target), "export")
        assert f"--output {target} {relation} the model or run it exports from" in line, line
    assert tree(trained) == before  # the run, its checkpoint and its record as they were

    export = tmp_path / "export"
    assert hf_xlsr("export", "--model", model, "--output", export).returncode == 0
    marker = json.loads((export / "hf_xlsr_export.json").read_text())
    assert set(marker["files"]) == {p.name for p in export.iterdir()} - {"hf_xlsr_export.json"}
    line = refused(hf_xlsr("export", "--model", model, "--output", export), "export")
    assert line.endswith("holds an earlier export; --overwrite replaces it")
    (export / "extra.txt").write_text("added by hand")
    line = refused(hf_xlsr("export", "--model", model, "--output", export, "--overwrite"), "export")
    assert "(extra.txt)" in line and (export / "extra.txt").is_file()
    (export / "extra.txt").unlink()
    result = hf_xlsr("export", "--model", model, "--output", export, "--overwrite")
    assert result.returncode == 0, result.stderr[-2000:]
    from sentence_transformers import SentenceTransformer

    assert SentenceTransformer(str(export), device="cpu").encode(["Jesus wept."]).shape == (1, 32)


@pytest.mark.parametrize("where", ["output_dir", "parent"])
def test_train_refuses_an_export_dir_that_is_or_holds_its_run_before_training(tmp_path, where):
    export_dir = tmp_path / "run" if where == "output_dir" else tmp_path
    config = run_config(tmp_path / "run.yaml", output_dir=str(tmp_path / "run"), export_dir=str(export_dir))
    line = refused(hf_xlsr("train", config), "train")
    relation = "is" if where == "output_dir" else "holds"
    assert f"export_dir {export_dir} {relation} the model or run it exports from" in line, line
    assert not (tmp_path / "run").exists()


def test_a_second_run_in_a_used_folder_is_refused_resumes_only_its_own_run_and_overwrites_when_told(tmp_path):
    config = three_steps(tmp_path)
    assert hf_xlsr("train", config).returncode == 0
    before = tree(tmp_path / "run")
    assert "checkpoint-3/trainer_state.json" in before
    line = refused(hf_xlsr("train", config, "--max_steps", "2"), "train")
    assert (
        f"output_dir {tmp_path / 'run'} holds another run (checkpoint-3, hf_xlsr_run.json, model.safetensors): "
        "--resume_from_checkpoint true continues it, --overwrite_output_dir true replaces it"
    ) in line
    # resume: only this run's checkpoints, and never one at or past max_steps without saying so
    line = refused(hf_xlsr("train", config, "--resume_from_checkpoint", "true", "--learning_rate", "0.01"), "train")
    assert "belong to another run (training.learning_rate" in line and "--overwrite_output_dir true" in line, line
    line = refused(hf_xlsr("train", config, "--resume_from_checkpoint", "true"), "train")
    assert "checkpoint-3: a checkpoint at step 3, at or past this run's max_steps 3: nothing would train" in line
    assert tree(tmp_path / "run") == before
    result = hf_xlsr("train", config, "--resume_from_checkpoint", "true", "--max_steps", "4")
    assert result.returncode == 0, result.stderr[-2000:]
    state = json.loads((tmp_path / "run" / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    # overwrite: the old run's checkpoints leave, the new run's alone are there
    result = hf_xlsr("train", config, "--overwrite_output_dir", "true", "--max_steps", "2", "--save_steps", "100")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not list((tmp_path / "run").glob("checkpoint-*"))
    assert json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())["training"]["optimizer_steps"] == 2


def test_encode_gives_row_i_for_line_i_blank_lines_included_and_counts_the_lines_it_cuts(tmp_path, minilm_path):
    from sentence_transformers import SentenceTransformer

    long = " ".join(["word"] * 40)  # far past 16 tokens
    lines = ["Jesus wept.", "", "In the beginning God created the heavens and the earth.", "   ", long]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "vectors.npy"
    result = hf_xlsr("encode", "--model", minilm_path, "--input", source, "--output", output)
    assert result.returncode == 0, result.stderr[-2000:]
    vectors = np.load(output)
    assert vectors.shape == (5, 384)
    assert "5 lines of" in result.stdout and "2 blank lines encoded as the empty string" in result.stdout
    assert "lines cut" not in result.stdout  # MiniLM takes 256 tokens: nothing cut
    model = SentenceTransformer(minilm_path, device="cpu")
    expected = model.encode([line.strip() for line in lines], normalize_embeddings=True)
    assert np.allclose(vectors, expected, atol=1e-5)  # row i is line i
    model.max_seq_length = 16
    short = tmp_path / "short"
    model.save(str(short))
    result = hf_xlsr("encode", "--model", short, "--input", source, "--output", tmp_path / "cut.npy")
    assert result.returncode == 0, result.stderr[-2000:]
    cut = sum(len(model.tokenizer(line.strip())["input_ids"]) > 16 for line in lines)  # special tokens counted
    assert cut == 1 and f"; {cut} lines cut to 16 tokens" in result.stdout, result.stdout
