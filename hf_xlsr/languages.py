# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Language codes: the ISO 639-1 codes hf_xlsr uses, and MTEB's ISO 639-3 + script codes."""

# ISO 639-1 -> MTEB's ISO 639-3 + script, for the languages of the offline corpora; other languages can be given
# directly in "xxx-Xxxx" form.
MTEB_LANGUAGES = {
    "ar": "arb-Arab", "bn": "ben-Beng", "de": "deu-Latn", "en": "eng-Latn", "es": "spa-Latn", "fa": "pes-Arab",
    "fr": "fra-Latn", "hi": "hin-Deva", "id": "ind-Latn", "it": "ita-Latn", "ja": "jpn-Jpan", "ko": "kor-Hang",
    "pl": "pol-Latn", "pt": "por-Latn", "ro": "ron-Latn", "ru": "rus-Cyrl", "sw": "swa-Latn", "tl": "tgl-Latn",
    "tr": "tur-Latn", "uk": "ukr-Cyrl", "vi": "vie-Latn", "zh": "cmn-Hans",
}  # fmt: skip


def mteb_language(code: str) -> str:
    """MTEB's code (``fra-Latn``) of an ISO 639-1 code (``fr``); a code already in that form passes through."""
    if "-" in code:
        return code
    if code not in MTEB_LANGUAGES:
        raise ValueError(f"no MTEB language code for {code!r}: pass it as 'xxx-Xxxx' (ISO 639-3 and script)")
    return MTEB_LANGUAGES[code]
