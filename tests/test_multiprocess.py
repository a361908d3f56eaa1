"""Two CPU processes under ``accelerate launch``: keys from every process enter one identical queue."""

from __future__ import annotations

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


def launch_two_processes(script: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(ROOT / "examples" / "accelerate" / "two_processes.yaml"),
        "--main_process_port", str(free_port()),
        str(script), *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)


@pytest.mark.parametrize("lora", [None, {"r": 4, "lora_alpha": 8}], ids=["full", "lora"])
def test_two_processes_hold_identical_queues_of_gathered_keys(tmp_path, lora):
    config = {
        "model_type": "dual_momentum",
        "tokenizer_x": MINILM,
        "model_config": {"encoder_x": tiny_encoder_config(), "queue_size": 64, "lora": lora},
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
    result = launch_two_processes(
        ROOT / "tests" / "scripts" / "train_and_dump_state.py", str(config_path), str(tmp_path)
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
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
    assert (tmp_path / "run" / "adapters" / "encoder_x" / "adapter_model.safetensors").is_file() == bool(lora)
