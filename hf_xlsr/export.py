"""Trained hf_xlsr encoder -> sentence-transformers folder made of stock modules.

Each exported folder is ``Transformer -> Pooling -> Normalize`` (plus the model's own stock modules, such as a
``Dense`` projection, where it has one) and loads with ``SentenceTransformer(path)`` without ``trust_remote_code``.
Momentum encoders, queues and every training-only head are left out; LoRA adapters are merged into the weights.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .modeling.adapters import merged_copy
from .utils import atomic_directory

logger = logging.getLogger(__name__)


def export_folders(model: PreTrainedModel, output_dir: str | os.PathLike) -> dict[str, Path]:
    """Where each side goes: ``output_dir`` for a shared encoder, else ``output_dir/<language code>``."""
    output_dir = Path(output_dir)
    config = model.config
    if getattr(config, "shared_encoder", True) and not getattr(model, "language_specific_heads", False):
        return {"x": output_dir}
    names = (config.language_x, config.language_y)
    if names[0] == names[1]:
        names = ("x", "y")
    return {"x": output_dir / names[0], "y": output_dir / names[1]}


def sentence_transformer_modules(model: PreTrainedModel, side: str, encoder_dir: str, max_seq_length: int | None):
    """The stock modules that reproduce ``model.get_sentence_embeddings(..., language=side)``."""
    transformer = Transformer(encoder_dir, max_seq_length=max_seq_length)
    hidden_size = model.query_encoder(side).config.hidden_size  # what the pooling sees; heads may change it
    modules = [transformer, Pooling(hidden_size, pooling_mode=model.config.pooling)]
    if hasattr(model, "export_head_modules"):
        modules.extend(model.export_head_modules(side))
    return [*modules, Normalize()]


def export_sentence_transformers(
    model: PreTrainedModel,
    tokenizers: Mapping[str, PreTrainedTokenizerBase],
    output_dir: str | os.PathLike,
    max_seq_length: int | None = 128,
) -> dict[str, Path]:
    """Export the query encoder of each language (one folder when shared) and return ``{side: folder}``.

    Every folder is written to a temporary sibling and renamed into place.
    """
    folders = export_folders(model, output_dir)
    for side, folder in folders.items():
        encoder = model.query_encoder(side)
        if getattr(model.config, "lora", None):
            encoder = merged_copy(encoder)  # adapters merged into the base weights: a plain encoder, no peft needed
        with tempfile.TemporaryDirectory() as encoder_dir, atomic_directory(folder) as staging:
            encoder.save_pretrained(encoder_dir)
            tokenizers[side].save_pretrained(encoder_dir)
            modules = sentence_transformer_modules(model, side, encoder_dir, max_seq_length)
            SentenceTransformer(modules=modules, device="cpu").save(str(staging))
        logger.info("exported the %s encoder to %s", side, folder)
    return folders
