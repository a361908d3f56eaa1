"""``hf-xlsr embed`` and the shards behind ``mine --embeddings``: a corpus embedded in shards gives the vectors of one
pass, a job killed in the middle resumes from its finished shards to the same vectors, a folder of another job is
refused before any model loads, and two processes under ``accelerate launch`` share the shards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import MINILM
from test_multiprocess import ROOT, launch_two_processes

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.data.bitext import SentenceFile
from hf_xlsr_cli import main


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """600 held-out English verses with blank lines among them (skipped, as everywhere)."""
    path = tmp_path_factory.mktemp("corpus") / "en.txt"
    verses = load_bible(["en"], split="heldout")["en"][:600]
    path.write_text("".join(f"{v}\n" + ("\n" if i % 50 == 0 else "") for i, v in enumerate(verses)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def one_pass(corpus, tmp_path_factory) -> np.ndarray:
    out = tmp_path_factory.mktemp("one") / "v.npy"
    assert main(["encode", "--model", resolve_reference(MINILM), "--input", str(corpus), "--output", str(out)]) == 0
    return np.load(out)


def embed(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["embed", "--model", resolve_reference(MINILM), "--input", str(corpus), "--output", str(out), *extra]


def test_a_range_of_sentences_reads_from_its_offset_and_skips_blank_lines(corpus):
    sentences = SentenceFile(corpus)
    everything = [s for batch in sentences.batches(64) for s in batch]
    assert len(everything) == len(sentences) == 600
    assert [s for batch in sentences.batches(7, 95, 160) for s in batch] == everything[95:160]
    assert [s for batch in sentences.batches(7, 590, 700) for s in batch] == everything[590:]


def test_shards_give_the_vectors_of_one_pass(corpus, one_pass, tmp_path, capsys):
    assert main(embed(corpus, tmp_path / "shards", "--shard-size", "130")) == 0
    vectors = np.load(tmp_path / "shards" / "vectors.npy")
    np.testing.assert_allclose(vectors, one_pass, atol=1e-6)
    assert "5 shards, 5 embedded by this process" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == ["shards.json", "vectors.npy"]


@pytest.mark.slow  # two embedding processes of 600 sentences: about a minute
def test_a_job_killed_in_the_middle_resumes_to_the_same_vectors(corpus, one_pass, tmp_path):
    folder = tmp_path / "shards"
    command = [sys.executable, "-m", "hf_xlsr_cli", *embed(corpus, folder, "--shard-size", "100")]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    job = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while not (folder / "shard-00001.npy").is_file() and job.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    job.send_signal(signal.SIGKILL)  # with shards 0 and 1 whole, and the next one half-written
    job.wait()
    finished = sorted(p.name for p in folder.glob("shard-*.npy"))
    assert 2 <= len(finished) < 6 and not (folder / "vectors.npy").exists(), finished
    kept = {name: (folder / name).stat().st_mtime_ns for name in finished}
    result = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"6 shards, {6 - len(finished)} embedded by this process" in result.stdout
    np.testing.assert_allclose(np.load(folder / "vectors.npy"), one_pass, atol=1e-6)
    assert kept  # the finished shards were not embedded again (counted above), and are gone once joined
    assert not list(folder.glob("shard-*")) and not list(folder.glob(".shard-*"))


def test_a_folder_of_another_job_is_refused_in_one_line_before_the_model_loads(corpus, tmp_path, capsys, monkeypatch):
    assert main(embed(corpus, tmp_path / "shards", "--shard-size", "600")) == 0
    capsys.readouterr()
    import hf_xlsr.evaluation.loading as loading

    monkeypatch.setattr(loading, "load_for_evaluation", lambda *a, **k: pytest.fail("the model was loaded"))
    with pytest.raises(SystemExit) as exit_info:
        main(embed(corpus, tmp_path / "shards", "--shard-size", "100"))
    assert exit_info.value.code == 2
    line = capsys.readouterr().err.strip()
    assert (
        line.startswith(
            f"hf-xlsr embed: error: --output {tmp_path / 'shards'} holds the shards of another job "
            "(shard_size: 600, not 100)"
        )
        and "\n" not in line
    )


@pytest.mark.slow  # two mining runs of 600 sentences a side
def test_mine_resumes_its_embeddings_folder(corpus, tmp_path):
    """``mine --embeddings DIR`` keeps each side's shards and manifest there: a second run finds both sides done."""
    folder = tmp_path / "embeddings"
    argv = ["mine", "--model", resolve_reference(MINILM), "--source", str(corpus), "--target", str(corpus),
            "--output", str(tmp_path / "pairs.tsv"), "--embeddings", str(folder)]  # fmt: skip
    assert main(argv) == 0
    first = (tmp_path / "pairs.tsv").read_text()
    stamps = {side: (folder / f"{side}.npy").stat().st_mtime_ns for side in ("source", "target")}
    assert main(argv) == 0
    assert (tmp_path / "pairs.tsv").read_text() == first
    assert stamps == {side: (folder / f"{side}.npy").stat().st_mtime_ns for side in ("source", "target")}


@pytest.mark.slow
def test_two_processes_share_the_shards_and_give_the_vectors_of_one(corpus, one_pass, tmp_path):
    result = launch_two_processes(
        ROOT / "hf_xlsr_cli.py",
        *embed(corpus, tmp_path / "shards", "--shard-size", "100"),
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "6 shards, 3 embedded by this process, the others found done or by the other 1 processes" in result.stdout
    np.testing.assert_allclose(np.load(tmp_path / "shards" / "vectors.npy"), one_pass, atol=1e-6)
