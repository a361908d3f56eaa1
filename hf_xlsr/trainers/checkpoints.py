# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Checkpoints a run resumes from: the newest whole one (a folder left half-written by a killed process or an older
version is skipped with one warning line), checked before anything trains, so that a broken file is one line naming
the file and what is wrong."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

logger = logging.getLogger(__name__)

CHECKPOINT = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "adapter_model.safetensors")


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from; the message names the folder or file and what is wrong."""


def missing_parts(folder: Path, with_optimizer: bool = True) -> list[str]:
    """What a whole checkpoint holds and ``folder`` lacks: its configuration, weights, trainer state and, unless the
    run saves the model only, its optimizer and scheduler."""
    missing = [name for name in ("config.json", "trainer_state.json") if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in WEIGHTS):
        missing.append("model.safetensors")
    if with_optimizer:
        missing += [name for name in ("optimizer.pt", "scheduler.pt") if not (folder / name).is_file()]
    return missing


def last_whole_checkpoint(output_dir: str | os.PathLike, with_optimizer: bool = True) -> str:
    """The newest ``checkpoint-N`` of ``output_dir`` that is whole (`missing_parts`); each newer one that is not is
    skipped with one warning line naming it and what it lacks. No whole one: a `CheckpointError`."""
    found = Path(output_dir).iterdir() if Path(output_dir).is_dir() else []
    steps = {int(match.group(1)): path for path in found if path.is_dir() and (match := CHECKPOINT.match(path.name))}
    folders = [steps[step] for step in sorted(steps, reverse=True)]
    for folder in folders:
        missing = missing_parts(folder, with_optimizer)
        if not missing:
            return str(folder)
        logger.warning(
            "skipping %s: not a whole checkpoint (no %s), left by a process stopped while saving or by hand",
            folder,
            ", ".join(missing),
        )
    raise CheckpointError(
        f"{output_dir}: no whole checkpoint to resume from"
        + (f" ({len(folders)} incomplete skipped)" if folders else "")
    )


def check_checkpoint(folder: str | os.PathLike, model, with_optimizer: bool = True, max_steps: int = -1) -> None:
    """``folder`` can be resumed into ``model``: it is whole, of the model's type, before the run's ``max_steps``
    (a checkpoint at or past them would train nothing), and its weights file reads with every tensor the model has at
    the model's shapes (the queues and momentum encoders among them); else one `CheckpointError` line naming the file
    and what is wrong."""
    folder = Path(folder)
    missing = missing_parts(folder, with_optimizer)
    if missing:
        raise CheckpointError(f"{folder}: not a whole checkpoint (no {', '.join(missing)})")
    step = json.loads((folder / "trainer_state.json").read_text()).get("global_step", 0)
    if max_steps > 0 and step >= max_steps:
        raise CheckpointError(
            f"{folder}: a checkpoint at step {step}, at or past this run's max_steps {max_steps}: "
            "nothing would train (raise max_steps to go on)"
        )
    config = json.loads((folder / "config.json").read_text())
    ours = getattr(model.config, "model_type", None)
    if config.get("model_type") != ours:
        raise CheckpointError(
            f"{folder / 'config.json'}: a checkpoint of a {config.get('model_type')!r} model, not "
            f"of this run's {ours!r}"
        )
    weights = folder / "model.safetensors"
    if not weights.is_file():
        return
    from safetensors import safe_open

    try:
        with safe_open(str(weights), framework="pt") as saved:
            shapes = {name: tuple(saved.get_slice(name).get_shape()) for name in saved.keys()}  # noqa: SIM118
    except Exception as error:  # safetensors raises its own error type for a truncated or corrupt file
        raise CheckpointError(f"{weights}: cannot be read ({str(error).splitlines()[0]})") from None
    for name, tensor in model.state_dict().items():
        if name in shapes and shapes[name] != tuple(tensor.shape):
            raise CheckpointError(
                f"{weights}: {name} has shape {list(shapes[name])}, the model's is "
                f"{list(tensor.shape)} (a checkpoint of another configuration)"
            )
