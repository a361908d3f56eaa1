"""Two CPU processes under ``accelerate launch``: keys from every process enter one identical queue."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import MINILM, tiny_encoder_config

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_two_processes(
    script: Path, *args: str, config: str = "two_processes.yaml", env: dict | None = None
) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(ROOT / "examples" / "accelerate" / config),
        "--main_process_port", str(free_port()),
        str(script), *args,
    ]  # fmt: skip
    environment = {**os.environ, **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, env=environment)


@pytest.fixture(scope="module")
def deepspeed_env(tmp_path_factory) -> dict:
    """DeepSpeed's CPU accelerator JIT-compiles its shared-memory collective into TORCH_EXTENSIONS_DIR, guarded by a
    lock file there; a process killed while building leaves the lock behind and every later build waits on it forever.
    A directory of this module's own keeps the tests clear of locks and builds from other environments."""
    pytest.importorskip("deepspeed")
    return {"DS_ACCELERATOR": "cpu", "TORCH_EXTENSIONS_DIR": str(tmp_path_factory.mktemp("torch_extensions"))}


def run_config(tmp_path, lora=None) -> Path:
    """A tiny dual-momentum run on 200 Bible pairs, 3 steps of 4 pairs per process."""
    config = {
        "model_type": "xlsr_dual_momentum",
        "tokenizer": MINILM,
        "model_config": {"encoder_x": tiny_encoder_config(), "queue_size": 64},
        "lora": lora,
        "train_data": "bible",
        "languages": ["en", "fr"],
        "max_train_pairs": 200,
        "max_eval_pairs": 20,
        "max_length": 32,
        "per_device_train_batch_size": 4,
        "max_steps": 3,
        "learning_rate": 1e-3,
        "output_dir": str(tmp_path / "run"),
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
    }
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    return config_path


@pytest.mark.parametrize(
    "lora", [None, pytest.param({"r": 4, "lora_alpha": 8}, marks=pytest.mark.slow)], ids=["full", "lora"]
)
def test_two_processes_hold_identical_queues_of_gathered_keys(tmp_path, lora):
    config_path = run_config(tmp_path, lora)
    result = launch_two_processes(
        ROOT / "tests" / "scripts" / "train_and_dump_state.py", str(config_path), str(tmp_path)
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # what hf-xlsr train reports, once, not once per process
    assert result.stderr.count("training on 200 pairs") == 1 and result.stdout.count('"eval_retrieval_accuracy"') == 1
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert int(rank0["world_size"]) == 2
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    # 3 steps x 4 pairs per process x 2 processes: every process queued the keys of both.
    assert int(rank0["momentum_contrast.queue_x.filled"]) == 24 and int(rank0["momentum_contrast.queue_x.ptr"]) == 24
    assert int(rank0["momentum_contrast.momentum_updates"]) == 3
    assert torch.count_nonzero(rank0["momentum_contrast.queue_y.keys"][:24].norm(dim=1) > 0.99) == 24
    ids = rank0["momentum_contrast.queue_y.ids"][:24].tolist()  # XlsrTrainer numbered the rows; both ranks' ids
    assert min(ids) >= 0 and len(set(ids)) == 24
    assert (tmp_path / "run" / "model.safetensors").is_file()
    assert (tmp_path / "run" / "adapters" / "en" / "adapter_model.safetensors").is_file() == bool(lora)


def test_a_plain_trainer_under_ddp_broadcasts_no_queue_and_gathers_keys_once_per_micro_batch(tmp_path, minilm_path):
    """DDP's default broadcasts every buffer from rank 0 before each forward; the momentum state is kept out of it
    (every process computes the same), and each micro-batch gathers its keys, ids and finiteness in one collective
    (after one for the batch sizes)."""
    result = launch_two_processes(ROOT / "tests" / "scripts" / "plain_trainer_ddp.py", minilm_path, str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rank0, rank1 = (torch.load(tmp_path / f"rank{rank}.pt") for rank in (0, 1))
    assert int(rank0["state"]["world_size"]) == 2
    for name in rank0["state"]:
        assert torch.equal(rank0["state"][name], rank1["state"][name]), name
    assert int(rank0["state"]["momentum_contrast.queue_x.filled"]) == 3 * 2 * 4 * 2  # steps x micro x rows x ranks
    assert rank0["synchronised_buffers"] and not any("momentum" in name for name in rank0["synchronised_buffers"])
    assert int(rank0["state"]["gathers_from_the_queue"]) == 2 * 3 * 2  # two collectives per micro-batch
    assert "broadcast_buffers` is deprecated" not in result.stderr


@pytest.mark.slow  # 30 launches: about ten minutes
def test_thirty_launches_in_a_row_beside_two_busy_processes_all_exit_cleanly(tmp_path, minilm_path):
    """A finished two-process run exits 0 every time, also on a loaded machine: no process aborts in its teardown."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for launch in range(30):
            out = tmp_path / str(launch)
            out.mkdir()
            result = launch_two_processes(ROOT / "tests" / "scripts" / "plain_trainer_ddp.py", minilm_path, str(out))
            assert result.returncode == 0, f"launch {launch}: " + result.stderr[-3000:]
            assert all((out / f"rank{rank}.pt").is_file() for rank in (0, 1))
    finally:
        for process in busy:
            process.kill()
            process.wait()


@pytest.mark.slow  # two DeepSpeed processes: about half a minute
def test_deepspeed_zero2_in_bf16_trains_a_momentum_encoder_with_a_float32_ema(tmp_path, deepspeed_env):
    """DeepSpeed's bf16 casts every parameter of the model it wraps, frozen ones included; the momentum weights are
    float32 buffers, which it leaves alone, so the EMA stays float32 while the query encoder computes in bf16.
    Two CPU processes, DeepSpeed's own engine (its CPU accelerator, gloo)."""
    config_path = run_config(tmp_path)
    result = launch_two_processes(
        ROOT / "tests" / "scripts" / "train_and_dump_state.py",
        str(config_path),
        str(tmp_path),
        "--bf16",
        "true",
        config="deepspeed_two_cpu_processes.yaml",
        env=deepspeed_env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert int(rank0["world_size"]) == 2 and rank0["query_dtype_is_bfloat16"]  # DeepSpeed did cast the model
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    assert (
        int(rank0["momentum_contrast.momentum_updates"]) == 3 and int(rank0["momentum_contrast.queue_x.filled"]) == 24
    )
    weight = rank0["momentum_contrast.momentum.encoder_x.encoder.layer.0.attention.self.query.weight"]
    assert weight.dtype == torch.float32
    assert (weight != weight.bfloat16().float()).float().mean() > 0.9  # float32 precision that bf16 cannot hold


@pytest.mark.slow  # two DeepSpeed processes start before the refusal: about half a minute
def test_deepspeed_zero3_is_refused_for_a_momentum_encoder(tmp_path, deepspeed_env):
    env = {**os.environ, **deepspeed_env, "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}  # fmt: skip
    script = ROOT / "tests" / "scripts" / "zero3_refusal.py"
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert "refused: DualMomentumModel keeps a momentum (EMA) copy" in result.stdout, result.stderr[-3000:]
    assert "but DeepSpeed ZeRO-3 shards them" in result.stdout
