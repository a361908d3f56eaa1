# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The evaluation suite behind ``hf-xlsr evaluate``: named tasks with offline defaults, one JSON of results.

Tasks (``--tasks``, comma-separated):

* ``retrieval``: Tatoeba-style accuracy both ways on held-out Bible verse pairs (or ``--data``);
* ``retrieval_pcr``: the same after removing each language's first principal component;
* ``mining``: BUCC-style F1, held-out verses hidden among unpaired ones, threshold chosen on a dev split;
* ``sts``: Spearman ("all" and "wmean") on the Lee news corpus, or ``--sts-file`` / ``--sts-dataset``;
* ``probe``: book-genre linear probe trained in the first language, tested in each language;
* ``bias``: language bias of retrieval (with and without PCR), plotted as PNG;
* ``plot``: 2-D PCA of parallel verses, as PNG;
* ``mteb``: the local MTEB tasks of the same data (bitext, STS, classification) through ``mteb.evaluate``;
  ``mteb:<TaskName>`` adds a standard MTEB task (its data comes from the Hub).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data.corpora import load_bible
from ..data.multilingual import load_multiway
from .analysis import language_bias, plot_language_bias, plot_parallel_sentences, plot_retrieval_matrix
from .encoders import CachedEncoder, as_encoder
from .mining import MiningEvaluator
from .probe import LinearProbeEvaluator
from .retrieval import HELDOUT_SEED, RetrievalEvaluator
from .sts import STSEvaluator, load_lee_similarity
from .tatoeba import TatoebaEvaluator

logger = logging.getLogger(__name__)

TASKS = ("retrieval", "retrieval_pcr", "mining", "sts", "probe", "bias", "plot", "mteb", "tatoeba")


@dataclass
class SuiteOptions:
    languages: Sequence[str] = ("en", "fr")
    data: str = "bible"
    split: str = "heldout"
    max_pairs: int = 1000
    sts_file: str | None = None
    sts_dataset: str | None = None
    output_dir: str = "evaluation"
    batch_size: int = 64
    max_length: int = 128  # tokens per sentence of an hf_xlsr model (a sentence-transformers folder keeps its own)
    mteb_cache: str | None = None
    model_meta: object | None = None  # the mteb.ModelMeta of an export, labelling the mteb results
    seed: int = HELDOUT_SEED  # draws the held-out samples: the same ones for the same data and size everywhere
    backend: str = "torch"  # where the model encodes (hf_xlsr.evaluation.backends)
    tatoeba_dir: str | None = None  # the Tatoeba test sets (tatoeba.XXX-eng.XXX files) of the tatoeba task
    tatoeba_languages: Sequence[str] | None = None  # the tatoeba task's languages (None: every set of the folder)
    routes: Sequence[str] = ()  # the languages a model encodes each its own way (an export's routes)
    extra: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)  # each task's time, filled by run_suite


def _multiway(options: SuiteOptions):
    """The same meanings in every language of ``options.languages``, a column each."""
    return load_multiway(options.data, options.languages, options.split)


def _sts(options: SuiteOptions) -> STSEvaluator:
    if options.sts_file:
        return STSEvaluator.from_tsv(options.sts_file, language1=options.languages[0])
    if options.sts_dataset:
        return STSEvaluator.from_hub(options.sts_dataset, language1=options.languages[0])
    return STSEvaluator.from_dataset(load_lee_similarity(), language1="en", name="sts_lee")


def _parallel_verses(options: SuiteOptions, n: int) -> dict[str, list[str]]:
    verses = load_bible(list(options.languages), split="heldout").shuffle(seed=options.seed).select(range(n))
    return {language: list(verses[language]) for language in options.languages}


def _bias(model, tokenizers, options: SuiteOptions) -> dict[str, float]:
    sentences = _parallel_verses(options, min(options.max_pairs, 1000))
    results = {}
    for pcr in (0, 1):
        bias = language_bias(model, sentences, k=10, tokenizers=tokenizers, pcr=pcr)
        suffix = "_pcr" if pcr else ""
        path = Path(options.output_dir) / f"language_bias{suffix}.png"
        plot_language_bias(bias, path, title="with PCR" if pcr else "without PCR")
        for query, shares in bias.items():
            results[f"bias{suffix}_{query}_same_language"] = shares[query]
    return results


def _plot(model, tokenizers, options: SuiteOptions) -> dict[str, float]:
    path = Path(options.output_dir) / "parallel_sentences_pca.png"
    plot_parallel_sentences(model, _parallel_verses(options, 15), path, tokenizers=tokenizers)
    return {}


def _mteb(model, tokenizers, options: SuiteOptions, standard: Sequence[str]) -> dict[str, float]:
    from .mteb import bitext_task, classification_task, run_mteb, sts_task

    pivot, *others = options.languages
    pairs = _multiway(options).shuffle(seed=options.seed).select(range(min(options.max_pairs, 1000)))
    tasks = list(standard)
    for y in others:  # the pivot against each language: bitext mining, and a genre probe trained in the pivot
        train = load_bible([pivot, y], split="train").shuffle(seed=options.seed).select(range(2000))
        test = load_bible([pivot, y], split="heldout").shuffle(seed=options.seed).select(range(1000))
        tasks.append(bitext_task(pairs, [pivot, y], name=f"HfXlsrBitext_{pivot}_{y}"))
        train, test = (
            train.rename_columns({pivot: "text", "group": "label"}),
            test.rename_columns({y: "text", "group": "label"}),
        )
        tasks.append(classification_task(train, test, pivot, y, name=f"HfXlsrBibleGenre_{pivot}_{y}"))
    if "en" in options.languages:
        tasks.append(sts_task(load_lee_similarity(), "en", name="HfXlsrLeeSTS", min_score=0.0, max_score=1.0))
    scores = run_mteb(
        model,
        tasks,
        tokenizers,
        options.languages,
        options.mteb_cache,
        batch_size=options.batch_size,
        model_meta=options.model_meta,
    )
    return {f"mteb_{task}": score for task, score in scores.items()}


def build_task(name: str, options: SuiteOptions) -> Callable:
    """A callable ``task(model, tokenizers) -> dict`` for one task name of ``TASKS``."""
    evaluator = None
    if name in ("retrieval", "retrieval_pcr"):
        evaluator = RetrievalEvaluator.from_dataset(
            _multiway(options),
            options.languages,
            max_pairs=options.max_pairs,
            seed=options.seed,
            pcr=1 if name == "retrieval_pcr" else 0,
            name=name,
        )
    elif name == "mining":  # the pivot against each language
        pivot, *others = options.languages
        evaluators = [
            MiningEvaluator.from_bible(
                [pivot, y], seed=options.seed, name="mining" if len(others) == 1 else f"mining_{pivot}_{y}"
            )
            for y in others
        ]
        return lambda model, tokenizers: {
            key: value
            for e in evaluators
            for key, value in e(model, tokenizers=tokenizers, batch_size=options.batch_size).items()
        }
    elif name == "sts":
        evaluator = _sts(options)
    elif name == "tatoeba":
        if options.tatoeba_dir is None:
            raise ValueError("the tatoeba task reads the test sets of a folder: give tatoeba_dir (--tatoeba-dir)")
        evaluator = TatoebaEvaluator(
            options.tatoeba_dir, trained=options.languages, languages=options.tatoeba_languages, routes=options.routes
        )
    elif name == "probe":
        evaluator = LinearProbeEvaluator.from_bible(options.languages[0], options.languages, seed=options.seed)
    if evaluator is not None:

        def run(model, tokenizers):
            metrics = evaluator(model, tokenizers=tokenizers, batch_size=options.batch_size)
            return {**metrics, "sample": getattr(evaluator, "sample", f"seed {options.seed}")}

        run.evaluator = evaluator
        return run
    if name == "bias":
        return lambda model, tokenizers: _bias(model, tokenizers, options)
    if name == "plot":
        return lambda model, tokenizers: _plot(model, tokenizers, options)
    if name == "mteb" or name.startswith("mteb:"):
        standard = [name.split(":", 1)[1]] if ":" in name else []
        return lambda model, tokenizers: _mteb(model, tokenizers, options, standard)
    raise ValueError(f"unknown evaluation task {name!r} (one of {', '.join(TASKS)}, or mteb:<TaskName>)")


def run_suite(
    model: object, tokenizers, tasks: Sequence[str], options: SuiteOptions, output: str | os.PathLike | None = None
) -> dict[str, dict[str, float]]:
    """Run ``tasks`` on ``model``; write ``{task: {metric: value}}`` as JSON to ``output`` if given. Each task's
    time is logged as it ends and kept in ``options.seconds``."""
    callables = {name: build_task(name, options) for name in tasks}  # fail on a bad name before any work
    # one encoder for every task (each route of a backend exported once), each sentence encoded once, with progress
    encoder = CachedEncoder(
        as_encoder(
            model, tokenizers, options.batch_size, options.max_length, show_progress=True, backend=options.backend
        )
    )
    results = {}
    for number, (name, task) in enumerate(callables.items(), start=1):
        logger.info("evaluating %s (%d of %d)", name, number, len(callables))
        start = time.perf_counter()
        mteb = name.startswith("mteb") and options.backend == "torch"  # mteb encodes through the model itself
        results[name] = task(model, tokenizers) if mteb else task(encoder, None)
        options.seconds[name] = time.perf_counter() - start
        logger.info("%s done in %.1f s", name, options.seconds[name])
        if name.startswith("retrieval") and len(options.languages) > 2:
            plot_retrieval_matrix(results[name], options.languages, Path(options.output_dir) / f"{name}.png", name)
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(f"{output}.partial")
        temporary.write_text(json.dumps(results, indent=2))
        os.replace(temporary, output)
    return results


def format_table(results: dict[str, dict[str, float]]) -> str:
    rows = [
        (task, metric, value)
        for task, metrics in results.items()
        for metric, value in metrics.items()
        if isinstance(value, (int, float))
    ]
    width = max([len(m) for _, m, _ in rows] + [6])
    lines = [f"{'task':<14}{'metric':<{width + 2}}value"]
    lines += [f"{task:<14}{metric:<{width + 2}}{value:.4f}" for task, metric, value in rows]
    return "\n".join(lines)


def format_language_table(
    metrics: dict[str, float], languages: Sequence[str], name: str = "retrieval", zero_shot: Sequence[str] = ()
) -> str:
    """Held-out retrieval of each language against the pivot (both directions and their mean), the mean over the
    trained pairs, over the pairs never trained directly, and over all, as a Markdown table; a language of
    ``zero_shot`` (one the model was never trained on) is marked so."""
    pivot, others = languages[0], languages[1:]
    lines = [f"| language | {pivot} → language | language → {pivot} | mean |", "| --- | ---: | ---: | ---: |"]
    for language in others:
        forward = metrics[f"{name}_{pivot}2{language}_accuracy"]
        backward = metrics[f"{name}_{language}2{pivot}_accuracy"]
        label = f"{language} (zero-shot)" if language in zero_shot else language
        lines.append(f"| {label} | {forward:.1%} | {backward:.1%} | {(forward + backward) / 2:.1%} |")
    for label, key in (
        ("trained pairs", "trained_accuracy"),
        ("pairs never trained", "zero_shot_accuracy"),
        ("every pair", "accuracy"),
    ):
        if f"{name}_{key}" in metrics:
            lines.append(f"| **{label}** | | | **{metrics[f'{name}_{key}']:.1%}** |")
    return "\n".join(lines)
