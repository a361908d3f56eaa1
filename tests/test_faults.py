"""A run that survives: killed at any moment (a save among them), told to stop with SIGTERM or SIGUSR1 (one process
and two under ``accelerate launch``), or handed a broken checkpoint, it ends with the weights, queues and momentum
encoder of a run never stopped, or says in one line what is wrong before anything trains. Real ``hf-xlsr train``
processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import run_config, tiny_dual_momentum
from safetensors.torch import load_file

from hf_xlsr.trainers.checkpoints import CheckpointError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from reliability import kill_and_resume, wait_for  # noqa: E402

ENVIRONMENT = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
STEPS = 16


def config(tmp_path: Path, name: str, **values) -> Path:
    """A tiny dual-momentum run of `STEPS` steps on 64 Bible pairs, a checkpoint every ``save_steps``."""
    values = {"max_steps": STEPS, "save_strategy": "steps", "save_steps": 2, "max_train_pairs": 64,
              "max_eval_pairs": 0, "output_dir": str(tmp_path / name), "disable_tqdm": True, **values}  # fmt: skip
    return run_config(tmp_path / f"{name}.yaml", **values)


def train(path: Path, *args: str, wait: bool = True):
    command = [sys.executable, "-m", "hf_xlsr_cli", "train", str(path), *args]
    if wait:
        return subprocess.run(command, cwd=ROOT, env=ENVIRONMENT, capture_output=True, text=True, timeout=600)
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=ENVIRONMENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def assert_same_model(folder: Path, reference: Path) -> int:
    """Every tensor of the final model file equal, byte for byte (query and momentum encoders, queues, pointers,
    fill counts, the EMA's step count); returns how many bytes were compared."""
    ours, theirs = load_file(folder / "model.safetensors"), load_file(reference / "model.safetensors")
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert torch.equal(ours[name], tensor), name
    assert any("queue" in name for name in ours) and any("momentum" in name for name in ours)
    return sum(t.numel() * t.element_size() for t in ours.values())


@pytest.fixture(scope="module")
def unstopped(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("unstopped")
    result = train(config(folder, "run"))
    assert result.returncode == 0, result.stderr[-3000:]
    return folder / "run"


@pytest.mark.parametrize(
    "signal_number",
    [signal.SIGTERM, signal.SIGINT, pytest.param(signal.SIGUSR1, marks=pytest.mark.slow)],
    ids=["SIGTERM", "SIGINT", "SIGUSR1"],
)
def test_a_stop_signal_saves_exits_0_and_the_resumed_run_ends_as_one_never_stopped(tmp_path, unstopped, signal_number):
    path = config(tmp_path, "run", save_steps=100)  # no checkpoint on the way: the one saved is the signal's
    job = train(path, wait=False)
    for line in job.stdout:  # the first step's log: training is under way
        if "'loss'" in line:
            break
    os.kill(job.pid, signal_number)
    _, stderr = job.communicate(timeout=300)
    assert job.returncode == 0, stderr[-3000:]
    saved = [line for line in stderr.splitlines() if "stopped by" in line]
    assert len(saved) == 1 and f"stopped by {signal.Signals(signal_number).name} at step " in saved[0], stderr[-2000:]
    step = int(saved[0].split(" at step ")[1].split(":")[0])
    assert 0 < step < STEPS and saved[0].endswith(
        f"saved {tmp_path / 'run' / f'checkpoint-{step}'}; --resume_from_checkpoint true continues the run"
    )
    assert not (tmp_path / "run" / "model.safetensors").exists()  # a stopped run writes no final model
    result = train(path, "--resume_from_checkpoint", "true")
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_same_model(tmp_path / "run", unstopped) > 0


def test_a_second_ctrl_c_stops_at_once_without_a_checkpoint(tmp_path):
    """Ctrl-C twice, more than a second apart: the first asks for a checkpoint after the step (one line says so), the
    second stops the process before the step ends or the checkpoint is saved: one line, exit 130, no checkpoint. The
    process is held (SIGSTOP) between the two, so that the step under way (MiniLM, a second or so) cannot end
    first."""
    import time

    from conftest import MINILM

    path = config(
        tmp_path,
        "run",
        save_steps=100,
        max_steps=100_000,
        logging_steps=1,
        encoder=MINILM,
        tokenizer=None,
        model_config={"queue_size": 16, "shared_encoder": True},
        max_length=128,
        per_device_train_batch_size=16,
    )
    job = train(path, wait=False)
    for line in job.stdout:
        if "'loss'" in line:
            break
    os.kill(job.pid, signal.SIGINT)
    for line in job.stderr:
        if line.startswith("Ctrl-C: finishing this step, then saving a checkpoint"):
            os.kill(job.pid, signal.SIGSTOP)
            break
    time.sleep(1.2)
    os.kill(job.pid, signal.SIGINT)
    os.kill(job.pid, signal.SIGCONT)
    _, stderr = job.communicate(timeout=300)
    assert job.returncode == 130, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "hf-xlsr train: stopped by Ctrl-C" and "Traceback" not in stderr
    assert not list((tmp_path / "run").glob("checkpoint-*"))


FORWARDER = (  # a wrapper in the training process's group that passes Ctrl-C on, as many job wrappers do
    "import signal, subprocess, sys\n"
    "job = subprocess.Popen(sys.argv[1:])\n"
    "signal.signal(signal.SIGINT, lambda *a: job.send_signal(signal.SIGINT))\n"
    "sys.exit(job.wait())\n"
)


def test_one_ctrl_c_that_reaches_the_process_twice_through_a_wrapper_still_saves(tmp_path):
    """Ctrl-C to a group that holds a wrapper forwarding SIGINT and the training process: the process receives it
    from the terminal and again from the wrapper milliseconds later, one key press, which saves a checkpoint and
    exits 0 like a single SIGINT."""
    path = config(tmp_path, "run", save_steps=100, max_steps=100_000, logging_steps=1)
    command = [sys.executable, "-c", FORWARDER, sys.executable, "-m", "hf_xlsr_cli", "train", str(path)]
    job = subprocess.Popen(
        command,
        cwd=ROOT,
        env=ENVIRONMENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    for line in job.stdout:
        if "'loss'" in line:
            break
    os.killpg(job.pid, signal.SIGINT)
    _, stderr = job.communicate(timeout=300)
    assert job.returncode == 0, stderr[-3000:]
    assert stderr.count("Ctrl-C: finishing this step") == 1 and "stopped by SIGINT at step" in stderr
    assert len(list((tmp_path / "run").glob("checkpoint-*/trainer_state.json"))) == 1


@pytest.mark.slow  # ten kills, each a process start: about two minutes
def test_killed_ten_times_at_random_moments_a_save_among_them_the_run_ends_as_one_never_killed(tmp_path):
    """The report's reliability figure (``benchmarks/reliability.py``), run here: every tensor equal."""
    record = kill_and_resume(tmp_path, kills=10)
    assert record["kills"] == 10 and record["kills_while_saving"] >= 3 and record["processes_started"] >= 11
    assert record["differing_tensors"] == [] and record["queue_and_momentum_tensors"] > 0
    assert record["tensors"] == len(load_file(tmp_path / "unkilled" / "model.safetensors"))


def test_a_checkpoint_left_incomplete_is_skipped_with_one_line(tmp_path, tokenizer, bible_pairs, caplog):
    from test_trainer import make_trainer

    first = make_trainer(
        tmp_path,
        tokenizer,
        bible_pairs,
        max_steps=4,
        save_strategy="steps",
        save_steps=2,
        model=tiny_dual_momentum(queue_size=10),
    )
    first.train()
    broken = tmp_path / "checkpoint-6"
    broken.mkdir()
    (broken / "config.json").write_text((tmp_path / "checkpoint-4" / "config.json").read_text())
    resumed = make_trainer(
        tmp_path,
        tokenizer,
        bible_pairs,
        max_steps=6,
        save_strategy="steps",
        save_steps=2,
        model=tiny_dual_momentum(queue_size=10),
    )
    with caplog.at_level("WARNING", logger="hf_xlsr.trainers.checkpoints"):
        resumed.train(resume_from_checkpoint=True)
    assert [r.getMessage() for r in caplog.records] == [
        f"skipping {broken}: not a whole checkpoint (no trainer_state.json, model.safetensors, optimizer.pt, "
        "scheduler.pt), left by a process stopped while saving or by hand"
    ]
    assert resumed.state.global_step == 6 and int(resumed.model.momentum_contrast.momentum_updates) == 6


@pytest.fixture
def checkpoint(tmp_path, tokenizer, bible_pairs) -> Path:
    from test_trainer import make_trainer

    make_trainer(
        tmp_path,
        tokenizer,
        bible_pairs,
        max_steps=2,
        save_strategy="steps",
        save_steps=2,
        model=tiny_dual_momentum(queue_size=10),
    ).train()
    return tmp_path / "checkpoint-2"


@pytest.mark.parametrize(
    "damage, message",
    [
        ("truncate", r"model.safetensors: cannot be read \("),
        (
            "queue",
            r"model.safetensors: momentum_contrast.queue_x.keys has shape \[10, 32\], the model's is \[12, 32\]",
        ),
        ("type", r"config.json: a checkpoint of a 'xlsr_hictl' model, not of this run's 'xlsr_dual_momentum'"),
        ("optimizer", r"checkpoint-2: not a whole checkpoint \(no optimizer.pt\)"),
    ],
    ids=["truncate", "queue", "type", "optimizer"],
)
def test_a_broken_checkpoint_is_one_line_naming_the_file_before_anything_trains(
    tmp_path, checkpoint, tokenizer, bible_pairs, damage, message
):
    from test_trainer import make_trainer

    weights = checkpoint / "model.safetensors"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "type":
        (checkpoint / "config.json").write_text(
            (checkpoint / "config.json")
            .read_text()
            .replace('"model_type": "xlsr_dual_momentum"', '"model_type": "xlsr_hictl"')
        )
    elif damage == "optimizer":
        (checkpoint / "optimizer.pt").unlink()
    model = tiny_dual_momentum(queue_size=12 if damage == "queue" else 10)
    trainer = make_trainer(tmp_path / "again", tokenizer, bible_pairs, max_steps=4, model=model)
    steps = []
    trainer.add_callback(
        type(
            "Spy",
            (__import__("transformers").TrainerCallback,),
            {"on_step_begin": lambda self, *a, **k: steps.append(1)},
        )()
    )
    with pytest.raises(CheckpointError, match=message) as error:
        trainer.train(resume_from_checkpoint=str(checkpoint))
    assert "\n" not in str(error.value) and not steps


def launch(path: Path, *args: str) -> subprocess.Popen:
    """``accelerate launch`` of two training processes (torchrun), in a session of its own."""
    from test_multiprocess import free_port

    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
               str(ROOT / "examples" / "accelerate" / "two_processes.yaml"), "--main_process_port",
               str(free_port()), str(ROOT / "examples" / "train.py"), str(path), *args]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=ENVIRONMENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow  # two runs of two processes: about a minute and a half
def test_ctrl_c_under_accelerate_launch_saves_one_checkpoint_and_the_run_resumes(tmp_path):
    """Ctrl-C in a terminal: SIGINT to the launcher's process group. torch's agent, which starts the training
    processes in sessions of their own, passes it on to each. Both finish the same step and save one checkpoint
    before the agent's grace period ends; the launcher exits 130 (128 + SIGINT, as accelerate does for a signal), and
    the run resumes from that checkpoint to its end."""
    path = config(tmp_path, "run", save_steps=100, max_train_pairs=200)
    job = launch(path)
    for line in job.stdout:
        if "'loss'" in line:
            break
    os.killpg(job.pid, signal.SIGINT)
    try:
        _, stderr = job.communicate(timeout=240)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == 130, stderr[-3000:]
    saved = [line for line in stderr.splitlines() if "stopped by SIGINT" in line]
    assert len(saved) == 1, stderr[-3000:]
    assert stderr.count("Ctrl-C: finishing this step") == 2  # once in each process
    assert len(list((tmp_path / "run").glob("checkpoint-*"))) == 1
    job = launch(path, "--resume_from_checkpoint", "true")
    _, stderr = job.communicate(timeout=600)
    assert job.returncode == 0, stderr[-3000:]
    assert (tmp_path / "run" / "model.safetensors").is_file()


@pytest.mark.slow  # three runs of two processes: about two minutes
def test_sigterm_to_one_process_under_accelerate_launch_stops_both_at_one_step_and_resumes_exactly(tmp_path):
    """SIGTERM to one of the two training processes (SLURM and Kubernetes may reach the processes one by one): both
    finish the same step, one checkpoint is saved, both exit 0 and so does the launcher; resumed under two processes,
    the run ends with the weights and queues of a two-process run never stopped. (A signal to the launcher itself
    reaches the processes too, through torch.distributed.elastic, with the same checkpoint; the launcher then exits
    143, as torch's agent does for a signal it received.)"""
    import psutil

    unstopped = config(tmp_path, "unstopped", save_steps=100, max_train_pairs=200)
    job = launch(unstopped)
    _, stderr = job.communicate(timeout=600)
    assert job.returncode == 0, stderr[-3000:]
    path = config(tmp_path, "run", save_steps=100, max_train_pairs=200)
    job = launch(path)
    for line in job.stdout:
        if "'loss'" in line:
            break
    workers = [p for p in psutil.Process(job.pid).children(recursive=True) if "train.py" in " ".join(p.cmdline())]
    assert len(workers) == 2
    workers[1].send_signal(signal.SIGTERM)
    try:
        _, stderr = job.communicate(timeout=240)
    finally:
        if job.poll() is None:  # a process that stopped alone leaves the other waiting in a collective
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == 0, stderr[-3000:]
    saved = [line for line in stderr.splitlines() if "stopped by SIGTERM" in line]
    assert len(saved) == 1, stderr[-3000:]
    assert len(list((tmp_path / "run").glob("checkpoint-*"))) == 1
    job = launch(path, "--resume_from_checkpoint", "true")
    _, stderr = job.communicate(timeout=600)
    assert job.returncode == 0, stderr[-3000:]
    assert assert_same_model(tmp_path / "run", tmp_path / "unstopped") > 0


def test_an_export_killed_halfway_leaves_the_previous_export_as_it_was(tmp_path, unstopped):
    output = tmp_path / "export"
    command = [sys.executable, "-m", "hf_xlsr_cli", "export", "--model", str(unstopped), "--output", str(output)]
    result = subprocess.run(command, cwd=ROOT, env=ENVIRONMENT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    before = {p.relative_to(output): p.read_bytes() for p in output.rglob("*") if p.is_file()}
    job = subprocess.Popen(
        [*command, "--overwrite"], cwd=ROOT, env=ENVIRONMENT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    assert wait_for(lambda: any(tmp_path.glob(".export.partial-*/*")), job)  # writing the new export
    job.kill()
    job.wait()
    assert {p.relative_to(output): p.read_bytes() for p in output.rglob("*") if p.is_file()} == before


def test_hf_xlsr_train_refuses_a_broken_checkpoint_in_one_line(tmp_path, checkpoint, capsys):
    from hf_xlsr_cli import main

    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    path = config(tmp_path, "again")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(path), "--resume_from_checkpoint", str(checkpoint)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and lines[-1].startswith(f"hf-xlsr train: error: {weights}: cannot be read (")
    assert not (tmp_path / "again" / "model.safetensors").exists()
