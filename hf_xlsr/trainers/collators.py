"""Data collators: raw text rows in, model inputs out. Tokenisation happens here, per batch, per language."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase


def column(features: Sequence[dict[str, Any]], name: str) -> list[str]:
    """The text of column ``name`` in every row, with a clear error for a missing column or a non-string value."""
    if name not in features[0]:
        raise KeyError(f"batch has no column {name!r} (columns: {', '.join(features[0])})")
    texts = [row[name] for row in features]
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"column {name!r}, row {row} of the batch: expected a string, got {type(text).__name__}")
    return texts


def tokenize(
    tokenizer: PreTrainedTokenizerBase, texts: list[str], prefix: str, max_length: int
) -> dict[str, torch.Tensor]:
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return {f"{prefix}_{key}": value for key, value in encoded.items()}


@dataclass
class BitextCollator:
    """Tokenise sentence pairs, each side with its language's tokenizer, into ``x_*`` / ``y_*`` inputs.

    When the rows also carry NLI columns (``nli_columns``: premise, hypothesis, label), those are tokenised with
    the tokenizer of ``nli_side`` into ``premise_*``, ``hypothesis_*`` and ``nli_labels``.
    """

    tokenizer_x: PreTrainedTokenizerBase
    tokenizer_y: PreTrainedTokenizerBase | None = None
    x_column: str = "x"
    y_column: str = "y"
    max_length: int = 128
    nli_columns: tuple[str, str, str] = ("premise", "hypothesis", "label")
    nli_side: str = "x"

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        tokenizer_y = self.tokenizer_y or self.tokenizer_x
        batch = tokenize(self.tokenizer_x, column(features, self.x_column), "x", self.max_length)
        batch.update(tokenize(tokenizer_y, column(features, self.y_column), "y", self.max_length))
        premise, hypothesis, label = self.nli_columns
        if premise in features[0]:
            nli_tokenizer = self.tokenizer_x if self.nli_side == "x" else tokenizer_y
            batch.update(tokenize(nli_tokenizer, column(features, premise), "premise", self.max_length))
            batch.update(tokenize(nli_tokenizer, column(features, hypothesis), "hypothesis", self.max_length))
            batch["nli_labels"] = torch.tensor([row[label] for row in features], dtype=torch.long)
        return batch
