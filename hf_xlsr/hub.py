# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Model cards and publishing to the Hugging Face Hub.

``push_to_hub`` exports a trained model to one sentence-transformers folder (a model with one encoder per language
routes by language: ``encode(texts, task="fr")``), writes its model card (what the model is, its paper, its training
run, its evaluation results as a table and as ``model-index`` metadata, usage for sentence-transformers,
transformers and mteb) and uploads it with ``huggingface_hub``. With ``include_checkpoint`` the full training
checkpoint goes along, in a ``checkpoint/`` folder, with its modeling code (``auto_map``) so that
``AutoModel.from_pretrained(repo, subfolder="checkpoint", trust_remote_code=True)`` works where hf_xlsr is not
installed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2
from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .data.multilingual import source_list
from .evaluation.loading import looks_like_a_hub_id, offline
from .export import MTEB_META, base_model_reference, export_sentence_transformers, routes, starting_encoder
from .languages import MTEB_LANGUAGES
from .registry import get_model_type
from .tokenization import save_tokenizers

logger = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "model_cards"
RUN_INFO = "hf_xlsr_run.json"
EVALUATION = "evaluation.json"
CHECKPOINT_FOLDER = "checkpoint"
EXAMPLES = {
    "en": ["The cat sleeps on the mat.", "It is raining today."],
    "fr": ["Le chat dort sur le tapis.", "Il pleut aujourd'hui."],
    "de": ["Die Katze schläft auf der Matte.", "Heute regnet es."],
    "es": ["El gato duerme sobre la alfombra.", "Hoy llueve."],
    "it": ["Il gatto dorme sul tappeto.", "Oggi piove."],
    "zh": ["猫在垫子上睡觉。", "今天下雨。"],
}
TASK_TYPES = {"probe": "text-classification"}


def save_with_code(
    model: PreTrainedModel, tokenizers: PreTrainedTokenizerBase | Mapping, folder: str | os.PathLike
) -> None:
    """``save_pretrained`` plus the modeling code and ``auto_map``, so ``trust_remote_code`` loads it anywhere."""
    model.config.register_for_auto_class("AutoConfig")
    model.register_for_auto_class("AutoModel")
    model.save_pretrained(folder)
    save_tokenizers(tokenizers, folder)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def result_rows(results: Mapping[str, Mapping[str, float]]) -> list[dict]:
    """``{task: {metric: value}}`` (``hf-xlsr evaluate``'s JSON) as rows of numeric results."""
    return [
        {"task": task, "metric": metric, "value": float(value)}
        for task, metrics in results.items()
        for metric, value in metrics.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]


def render_model_card(
    model: PreTrainedModel,
    repo_id: str,
    results: Mapping[str, Mapping[str, float]],
    run_info: Mapping,
    checkpoint_subfolder: str | None = None,
    license: str | None = None,
    max_seq_length: int | None = None,
    evaluated_by: str | None = None,
) -> ModelCard:
    """The card of an export: metadata (``ModelCardData``, ``model-index``) and its model type's template, filled from
    the model, its training run's record (``run_info``: data, hyperparameters, log, versions) and ``results``.
    ``evaluated_by`` says what measured the results (default: the run's own final evaluation, or ``hf-xlsr
    evaluate``)."""
    from . import __version__
    from .export import OFFLINE_NOTES

    config = model.config
    entry = get_model_type(config.model_type)
    languages = list(config.languages)
    rows = result_rows(results)
    base_model, base_license = base_model_reference(model, run_info)
    reference = starting_encoder(run_info)
    package = reference[len("package:") :].split("/")[0] if reference.startswith("package:") else None
    train_data = run_info.get("train_data")
    data_kinds = set(source_list(train_data)) if train_data else set()
    hub_datasets = sorted(
        v for v in data_kinds if isinstance(v, str) and looks_like_a_hub_id(v) and v not in ("bible", "hsk")
    )  # the sources that are Hub datasets: the card's datasets metadata
    card_data = ModelCardData(
        model_name=repo_id,
        language=languages,
        license=license or base_license or "apache-2.0",
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        tags=[
            "sentence-transformers",
            "sentence-similarity",
            "feature-extraction",
            "cross-lingual",
            "hf_xlsr",
            entry.card,
        ],
        base_model=base_model,
        datasets=hub_datasets or None,
        eval_results=[
            EvalResult(
                task_type=TASK_TYPES.get(row["task"], "sentence-similarity"),
                dataset_type=f"hf_xlsr/{row['task']}",
                dataset_name=f"{row['task']} ({run_info.get('evaluation_data', 'hf-xlsr evaluate')})",
                metric_type=row["metric"],
                metric_value=row["value"],
            )
            for row in rows
        ]
        or None,
    )
    language_routes = list(routes(model))
    head = "Dense" if getattr(model, "language_specific_heads", False) else entry.exported_head
    stack = ["Transformer", "Pooling", *([head] if head else [])]
    modules = [f"Router({' | '.join(language_routes)}: {' → '.join(stack)})"] if language_routes else stack
    log = run_info.get("training_log") or []
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined)
    content = environment.get_template(f"{entry.card}.md").render(
        card_data=card_data.to_yaml(),
        model_name=repo_id,
        languages=languages,
        routes=language_routes,
        modules=[*modules, "Normalize"],
        examples={lang: EXAMPLES.get(lang, EXAMPLES["en"]) for lang in languages},
        pooling=config.pooling,
        mteb_language=MTEB_LANGUAGES.get(languages[-1], languages[-1]).split("-")[0],
        checkpoint_subfolder=checkpoint_subfolder,
        architecture=type(model).__name__,
        results=rows,
        evaluated_by=evaluated_by or run_info.get("evaluated_by") or "hf-xlsr evaluate",
        evaluation_note=run_info.get("evaluation_data"),
        sources=run_info.get("train_sources") or {},
        train_pairs=run_info.get("train_pairs") or {},
        training=run_info.get("training", {}),
        training_log=log[:: max(1, len(log) // 20)],  # at most about twenty rows
        versions=run_info.get("framework_versions") or {},
        data_kinds=data_kinds,
        max_seq_length=max_seq_length or run_info.get("max_length") or 128,
        trained_length=run_info.get("max_length")
        if max_seq_length and max_seq_length != run_info.get("max_length")
        else None,
        base_model=base_model or "",
        base_note=OFFLINE_NOTES.get(package, "") if package else "",
        hf_xlsr_version=__version__,
        config=config,
        collator=(run_info.get("training") or {}).get("collator"),
    )
    return ModelCard(content)


def prepare_upload(
    model: PreTrainedModel,
    tokenizers: PreTrainedTokenizerBase | Mapping,
    repo_id: str,
    staging_dir: str | os.PathLike,
    results: Mapping[str, Mapping[str, float]] | None = None,
    run_info: Mapping | None = None,
    include_checkpoint: bool = False,
    max_seq_length: int | None = None,
    evaluated_by: str | None = None,
) -> Path:
    """Write the folder to upload under ``staging_dir``: the export, its card, its mteb metadata named after the
    repository, and the checkpoint if asked for; return it. ``max_seq_length`` defaults to the length the run
    trained at (128 without a run record)."""
    run_info = dict(run_info or {})
    length = max_seq_length or run_info.get("max_length") or 128
    folder = export_sentence_transformers(model, tokenizers, Path(staging_dir) / "export", length, run_info)
    meta_file = folder / MTEB_META
    meta = json.loads(meta_file.read_text())
    meta["name"] = repo_id
    meta_file.write_text(json.dumps(meta, indent=2))
    checkpoint = CHECKPOINT_FOLDER if include_checkpoint else None
    if checkpoint:
        save_with_code(model, tokenizers, folder / checkpoint)
    card = render_model_card(
        model,
        repo_id,
        results or {},
        run_info,
        checkpoint,
        max_seq_length=meta["max_tokens"],
        evaluated_by=evaluated_by,
    )
    card.save(folder / "README.md")
    return folder


def push_to_hub(
    model: PreTrainedModel,
    tokenizers: PreTrainedTokenizerBase | Mapping,
    repo_id: str,
    results: Mapping[str, Mapping[str, float]] | None = None,
    run_info: Mapping | None = None,
    include_checkpoint: bool = False,
    private: bool | None = None,
    token: str | None = None,
    commit_message: str = "Upload hf_xlsr model",
) -> list[str]:
    """Export, write the cards and upload; returns the URLs of the commits, one per repository. Raises
    `PushError` (one line) before any work when the Hub cannot be reached (offline mode, no token), and when
    the upload fails."""
    check_hub_reachable(repo_id, token)
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory() as staging:
        folder = prepare_upload(model, tokenizers, repo_id, staging, results, run_info, include_checkpoint)
        sent = ["nothing was sent"]  # what a failure says was sent; the upload is one commit, whole or absent
        with hub_errors(repo_id, sent):
            api.create_repo(repo_id, private=private, exist_ok=True)
            files = [p for p in Path(folder).rglob("*") if p.is_file()]
            megabytes = sum(p.stat().st_size for p in files) / 1e6
            sent[0] = (
                f"{len(files)} files ({megabytes:.1f} MB) were sent as one commit, which the Hub did not "
                "record: the repository holds what it held before"
            )
            commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=commit_message)
        logger.info("pushed %s to %s", folder, repo_id)
    return [str(commit)]


@contextlib.contextmanager
def hub_errors(repo_id: str, sent: Sequence[str] = ("nothing was sent",)):
    """The network's and the Hub's errors, whichever HTTP library raised them, as one `PushError` line, ending with
    ``sent[0]``, what had been sent when it failed."""
    try:
        yield
    except Exception as error:
        if not isinstance(error, OSError) and not type(error).__module__.startswith(("httpx", "huggingface_hub")):
            raise
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PushError(f"{repo_id}: the push failed ({reason}); {sent[0]}") from None


class PushError(RuntimeError):
    """The Hub cannot be reached or refused the upload; the message says why in one line."""


def check_hub_reachable(repo_id: str, token: str | None = None) -> None:
    """Refuse to push, before any work, in offline mode, without a token, or when the Hub does not answer or does
    not take the token."""
    from huggingface_hub import get_token

    if offline():
        raise PushError("HF_HUB_OFFLINE is set: nothing can be pushed to the Hub (unset it to push)")
    if token is None and get_token() is None:
        raise PushError("no Hugging Face token: log in with `hf auth login` or set HF_TOKEN")
    with hub_errors(repo_id):
        HfApi(token=token).whoami()


def push_trained_model(model_dir: str | os.PathLike, repo_id: str, **kwargs) -> list[str]:
    """Push a trained hf_xlsr model folder, with the evaluation results and run record found beside it."""
    from .evaluation.loading import check_model_path, load_trained_model

    check_model_path(model_dir)  # what is wrong here first, then what is wrong with the Hub, then any work
    check_hub_reachable(repo_id, kwargs.get("token"))
    model_dir = Path(model_dir)
    model, tokenizers = load_trained_model(model_dir)
    kwargs.setdefault("results", read_json(model_dir / EVALUATION))
    kwargs.setdefault("run_info", read_json(model_dir / RUN_INFO))
    return push_to_hub(model, tokenizers, repo_id, **kwargs)
