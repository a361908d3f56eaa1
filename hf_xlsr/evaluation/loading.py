"""Load whatever a user points an evaluation at: an hf_xlsr model folder, a sentence-transformers folder, or an
export folder holding one sentence-transformers folder per language."""

from __future__ import annotations

import os
from pathlib import Path

from sentence_transformers import SentenceTransformer
from transformers import AutoModel, PreTrainedModel

from ..tokenization import load_tokenizers


def load_trained_model(path: str | os.PathLike) -> tuple[PreTrainedModel, dict]:
    """An hf_xlsr model (any of the registered types) and its tokenizers."""
    import hf_xlsr  # noqa: F401  (registers the model types with AutoModel)

    model = AutoModel.from_pretrained(str(path))
    if not hasattr(model, "get_sentence_embeddings"):
        raise ValueError(f"{path}: {type(model).__name__} is not an hf_xlsr model")
    return model, load_tokenizers(path)


def load_for_evaluation(path: str | os.PathLike) -> tuple[object, dict | None]:
    """``(model, tokenizers)`` ready for :func:`~hf_xlsr.evaluation.encoders.as_encoder`."""
    folder = Path(path)
    if (folder / "modules.json").is_file():
        return SentenceTransformer(str(folder)), None
    languages = sorted(p.name for p in folder.iterdir() if (p / "modules.json").is_file()) if folder.is_dir() else []
    if languages:
        return {language: SentenceTransformer(str(folder / language)) for language in languages}, None
    return load_trained_model(path)
