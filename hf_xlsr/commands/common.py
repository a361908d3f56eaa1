# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""What several ``hf-xlsr`` commands share: the one-line error of wrong options, the checks made before any model
loads or any work starts, the languages a model was trained on, and the encoder of a file's sentences."""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import torch

from ..evaluation import loading
from ..evaluation.encoders import as_encoder, model_languages, truncated_count
from ..references import resolve_reference
from ..utils import UnwritableError, check_writable, free_cpu_threads

logger = logging.getLogger("hf_xlsr")


class UsageError(ValueError):
    """Command-line options that are wrong or do not go together."""


def writable(*outputs: tuple[str, str | os.PathLike]) -> None:
    """Each ``(flag, path)`` can be written, checked before any model loads or any work starts."""

    for flag, path in outputs:
        try:
            check_writable(path, flag)
        except UnwritableError as error:
            raise UsageError(str(error)) from None


def resolve_model(name: str) -> str:
    """``--model``'s ``package:<name>/<path>`` as its folder inside the installed package; other names as given."""

    try:
        return resolve_reference(name)
    except (ImportError, FileNotFoundError) as error:
        raise UsageError(f"--model {name}: {error}") from None


def choose_threads() -> None:
    """On the CPU, torch's threads as `hf_xlsr.utils.free_cpu_threads` chooses them, said in the first line."""

    if torch.cuda.is_available():
        return
    torch.set_num_threads(free_cpu_threads())
    count = torch.get_num_threads()
    logger.info(
        "%d torch thread%s on %d cores (OMP_NUM_THREADS sets the number)",
        count,
        "s" if count > 1 else "",
        os.cpu_count() or 1,
    )


def sentence_encoder(args: argparse.Namespace):
    """``--model`` as an encoder of ``--language``'s sentences; a one-line error when the model encodes each of its
    languages its own way and ``--language`` names none of them."""

    model, tokenizers = loading.load_for_evaluation(args.model, args.backend)
    languages = model_languages(model)
    if languages and args.language not in languages:
        given = "no --language" if args.language is None else f"--language {args.language}"
        raise UsageError(
            f"{given}: the model encodes each of {', '.join(languages)} its own way; give one of them with --language"
        )
    warn_untrained(model, args.model, [args.language])
    return as_encoder(model, tokenizers, batch_size=args.batch_size, max_length=args.max_length, backend=args.backend)


def lines_said(sentences, encode, language: str | None) -> str:
    """What the summary line says of the input's lines besides their count: the blank ones (encoded as the empty
    string) and the ones cut to the encoder's length."""

    said = f"; {sentences.blank_lines} blank lines encoded as the empty string" if sentences.blank_lines else ""
    cut, limit = truncated_count(encode, sentences.batches(1024), language)
    return said + (f"; {cut} lines cut to {limit} tokens" if cut else "")


def warn_untrained(model, path: str, languages: Sequence[str | None]) -> None:
    """A warning for each of ``languages`` that the model was not trained on, naming those it was: one encoder for
    every language encodes any language, but only the trained ones are in its space by training."""
    trained = trained_languages(model, path)
    for language in languages:
        if language and trained and language not in trained:
            logger.warning(
                "%s was trained on %s, not %s: its vectors of %s are zero-shot",
                path,
                ", ".join(trained),
                language,
                language,
            )


def trained_languages(model, path: str) -> list[str]:
    """The languages a model was trained on: an hf_xlsr model's configuration, an export's mteb metadata; [] when
    the model does not say (a plain sentence-transformers folder)."""
    languages = getattr(getattr(model, "config", None), "languages", None)
    if languages:
        return list(languages)
    meta = Path(path) / "mteb_model_meta.json"
    if meta.is_file():
        from ..languages import MTEB_LANGUAGES

        codes = {name: code for code, name in MTEB_LANGUAGES.items()}
        return [codes[name] for name in json.loads(meta.read_text()).get("languages") or [] if name in codes]
    return []
