# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""hf_xlsr 0.2.0's names of a run's encoders and tokenizers (``encoder_x`` / ``encoder_y``, ``tokenizer_x`` /
``tokenizer_y``: the first and the second language's), read as today's, with a warning naming the new field."""

from __future__ import annotations

import json
import warnings

from .arguments import DataArguments

# hf_xlsr 0.2.0 named the encoders and tokenizers of a run by the side of the pair: the first language's (x) and the
# second's (y). They still load, with a warning naming the field that replaces them.
LEGACY_REFERENCES = {"encoder_x": "encoder", "encoder_y": "encoders", "tokenizer_x": "tokenizer",
                     "tokenizer_y": "tokenizers"}  # fmt: skip


def translate_legacy_references(values: dict, where) -> dict:
    """``values`` (a run's file, or its command line as ``{field: value}``) with 0.2.0's ``encoder_x`` /
    ``encoder_y`` / ``tokenizer_x`` / ``tokenizer_y`` rewritten as ``encoder`` / ``encoders`` (keyed by the run's
    languages) and ``tokenizer`` / ``tokenizers``, one ``FutureWarning`` per field."""
    languages = values.get("languages") or DataArguments.__dataclass_fields__["languages"].default_factory()
    for kind in ("encoder", "tokenizer"):
        first, second = values.pop(f"{kind}_x", None), values.pop(f"{kind}_y", None)
        if first is None and second is None:
            continue
        if second is None or second == first:
            values.setdefault(kind, first)
            new = f"{kind}: {first}"
        else:
            values.setdefault(f"{kind}s", {languages[0]: first or second, languages[1]: second})
            new = f"{kind}s: {{{languages[0]}: ..., {languages[1]}: ...}}"
        old = f"{kind}_x" if second is None else f"{kind}_x / {kind}_y" if first is not None else f"{kind}_y"
        warnings.warn(f"{where}: {old} is hf_xlsr 0.2.0's name; write {new}", FutureWarning, stacklevel=3)
    return values


def legacy_command_line(overrides: list[str], values: dict) -> list[str]:
    """The command line with 0.2.0's ``--encoder_x`` / ``--encoder_y`` / ``--tokenizer_x`` / ``--tokenizer_y``
    rewritten (``translate_legacy_references``)."""
    kept, legacy, i = [], {}, 0
    while i < len(overrides):
        name, _, value = overrides[i][2:].partition("=")
        if overrides[i].startswith("--") and name in LEGACY_REFERENCES:
            if not value and i + 1 < len(overrides):
                i, value = i + 1, overrides[i + 1]
            legacy[name] = value
        else:
            kept.append(overrides[i])
        i += 1
    if legacy:
        languages = values.get("languages")
        for j, arg in enumerate(kept):  # --languages on the command line names the pair the sides stand for
            if arg == "--languages":
                languages = [a for a in kept[j + 1 : j + 3] if not a.startswith("--")]
        translated = translate_legacy_references({**legacy, "languages": languages}, "the command line")
        for name in ("encoder", "tokenizer", "encoders", "tokenizers"):
            if name in translated:
                value = translated[name]
                kept += [f"--{name}", json.dumps(value) if isinstance(value, dict) else value]
    return kept
