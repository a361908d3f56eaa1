# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Tatoeba (Artetxe and Schwenk, 2019): up to 1,000 sentences of each of 112 languages with their English
translations, scored as MTEB's ``Tatoeba`` task scores them: each sentence of a language is a query, its nearest
English sentence by cosine (top 1) its prediction, and the score the F1 of those predictions weighted by support
(scikit-learn's ``f1_score(average="weighted")``, MTEB's main score), per language, in percent.

The files are LASER's test sets (``tatoeba.XXX-eng.XXX`` and ``tatoeba.XXX-eng.eng``, ISO 639-3 codes), the
sentences of MTEB's task. They are test data: never train on them or choose a setting by them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .encoders import Encoder, Evaluator, without_progress

# ISO 639-1 codes of hf_xlsr's languages -> the ISO 639-3 codes of the Tatoeba files
TATOEBA_CODES = {
    "ar": "ara", "bn": "ben", "de": "deu", "es": "spa", "fa": "pes", "fr": "fra", "hi": "hin", "id": "ind",
    "it": "ita", "ja": "jpn", "ko": "kor", "pl": "pol", "pt": "por", "ro": "ron", "ru": "rus", "sw": "swh",
    "tl": "tgl", "tr": "tur", "uk": "ukr", "vi": "vie", "zh": "cmn",
}  # fmt: skip
# the other languages of Tatoeba's 112 as software catalogues name them (hf_xlsr.data.catalogues); kzj, max, orv, swg
# and tzl have none. Tatoeba's ber is mostly Latin script: Riffian's catalogue (rif) is; cmn is both scripts of zh.
CATALOGUE_TATOEBA_CODES = {
    "af": "afr", "am": "amh", "ang": "ang", "arq": "arq", "arz": "arz", "ast": "ast", "awa": "awa", "az": "aze",
    "be": "bel", "rif": "ber", "bs": "bos", "br": "bre", "bg": "bul", "ca": "cat", "cbk-zam": "cbk", "ceb": "ceb",
    "cs": "ces", "ch": "cha", "zh-hans": "cmn", "zh-hant": "cmn", "kw": "cor", "csb": "csb", "cy": "cym", "da": "dan",
    "dsb": "dsb", "dtp": "dtp", "el": "ell", "eo": "epo", "et": "est", "eu": "eus", "fo": "fao", "fi": "fin",
    "fy": "fry", "gd": "gla", "ga": "gle", "gl": "glg", "gsw": "gsw", "he": "heb", "hr": "hrv", "hsb": "hsb",
    "hu": "hun", "hy": "hye", "io": "ido", "ie": "ile", "ia": "ina", "is": "isl", "jv": "jav", "kab": "kab",
    "ka": "kat", "kk-cyrl": "kaz", "km": "khm", "ku-latn": "kur", "la": "lat", "lfn": "lfn", "lt": "lit", "lv": "lvs",
    "ml": "mal", "mr": "mar", "mhr": "mhr", "mk": "mkd", "mn": "mon", "nds": "nds", "nl": "nld", "nn": "nno",
    "nb": "nob", "nov": "nov", "oc": "oci", "pam": "pam", "pms": "pms", "pt-br": "por", "sk": "slk", "sl": "slv",
    "sq": "sqi", "sr-ec": "srp", "sv": "swe", "ta": "tam", "tt-cyrl": "tat", "te": "tel", "th": "tha", "tk": "tuk",
    "ug-arab": "uig", "ur": "urd", "uz": "uzb", "war": "war", "wuu": "wuu", "xh": "xho", "yi": "yid", "yue": "yue",
    "ms": "zsm", "zh-cn": "cmn", "zh-tw": "cmn", "sr": "srp", "kk": "kaz", "tt": "tat", "ug": "uig", "ku": "kur",
}  # fmt: skip
ALL_TATOEBA_CODES = {**CATALOGUE_TATOEBA_CODES, **TATOEBA_CODES}  # every code that names one of Tatoeba's sets
FILE = re.compile(r"tatoeba\.([a-z]{3})-eng\.\1")


def load_tatoeba(directory: str | os.PathLike) -> dict[str, tuple[list[str], list[str]]]:
    """``{code: (sentences, english)}`` of every ``tatoeba.XXX-eng.XXX`` file in ``directory`` and its ``.eng``
    partner, line by line. A folder without such files, a missing partner or partners of different lengths is an
    error naming the file, before anything is encoded."""
    folder = Path(directory)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder of Tatoeba test sets (tatoeba.XXX-eng.XXX files)")
    sets = {}
    for path in sorted(folder.iterdir()):
        match = FILE.fullmatch(path.name)
        if not match:
            continue
        english = path.with_name(f"tatoeba.{match.group(1)}-eng.eng")
        if not english.is_file():
            raise FileNotFoundError(f"{english}: missing, the English side of {path.name}")
        sentences, translations = (p.read_text(encoding="utf-8").splitlines() for p in (path, english))
        if len(sentences) != len(translations) or not sentences:
            raise ValueError(
                f"{path}: {len(sentences)} lines, {english.name}: {len(translations)}; "
                "a test set is line-aligned pairs"
            )
        sets[match.group(1)] = (sentences, translations)
    if not sets:
        raise FileNotFoundError(f"{folder}: no tatoeba.XXX-eng.XXX files")
    return sets


def tatoeba_codes(sets: Mapping[str, object], languages: Sequence[str], directory: str | os.PathLike) -> list[str]:
    """The test sets of ``languages`` (hf_xlsr's codes, ``fr``, or Tatoeba's, ``fra``; English, the side every set
    has, left out) among ``sets``; a language without one is an error naming it and the folder."""
    codes = [ALL_TATOEBA_CODES.get(code, code) for code in languages if code not in ("en", "eng")]
    for language in languages:
        three = ALL_TATOEBA_CODES.get(language, language)
        if language not in ("en", "eng") and three not in sets:
            raise ValueError(f"{directory}: no Tatoeba test set for {language} (tatoeba.{three}-eng.{three})")
    return list(dict.fromkeys(codes))


def mining_f1(queries: np.ndarray, corpus: np.ndarray) -> float:
    """MTEB's bitext-mining F1, in percent: query i's gold match is corpus row i; its prediction the corpus row of
    highest cosine."""
    from sklearn.metrics import f1_score

    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    corpus = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    predictions = np.argmax(queries @ corpus.T, axis=1)
    return 100 * float(f1_score(np.arange(len(queries)), predictions, average="weighted", zero_division=0))


class TatoebaEvaluator(Evaluator):
    """``tatoeba_<xxx>_f1`` for each language (ISO 639-3), their mean ``tatoeba_f1`` over every language, and
    ``tatoeba_trained_f1`` over the test sets of the ``trained`` languages (hf_xlsr's codes and the catalogues':
    ``fr``, ``eu``, ``zh-hans``; English left out), each set once.
    A model that encodes each language its own way (``routes``) is scored on the languages it routes only."""

    name = "tatoeba"
    primary_metric_name = "f1"

    def __init__(
        self,
        directory: str | os.PathLike,
        trained: Sequence[str] = (),
        languages: Sequence[str] | None = None,
        routes: Sequence[str] = (),
    ):
        self.sets = load_tatoeba(directory)
        if languages is not None:
            self.sets = {code: self.sets[code] for code in tatoeba_codes(self.sets, languages, directory)}
        codes = {three: one for one, three in TATOEBA_CODES.items()}
        self.language_of = {code: codes.get(code, code) for code in self.sets}  # what the encoder is told
        if routes:
            self.sets = {code: pair for code, pair in self.sets.items() if self.language_of[code] in routes}
        self.trained = sorted({ALL_TATOEBA_CODES[c] for c in trained if ALL_TATOEBA_CODES.get(c) in self.sets})

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        """Every language's F1, under one progress bar for the task (languages done of all)."""
        scores = {}
        with without_progress(encoder):
            for code, (sentences, english) in tqdm(self.sets.items(), desc="tatoeba", unit="language"):
                scores[code] = mining_f1(encoder(sentences, self.language_of[code]), encoder(english, "en"))
        metrics = {f"{code}_f1": score for code, score in scores.items()}
        metrics["f1"] = float(np.mean(list(scores.values())))
        if self.trained:
            metrics["trained_f1"] = float(np.mean([scores[code] for code in self.trained]))
        metrics["languages"] = len(scores)
        return self.prefixed(metrics)
