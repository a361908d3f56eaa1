"""Data collators: raw text rows in, model inputs out. Tokenisation happens here, per batch, per language."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase


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


@dataclass
class PairMaskingCollator:
    """Tokenise sentence pairs with one shared tokenizer and mask them for a generative task.

    ``task`` ``smlm`` / ``ugt``: in each pair one token of one sentence (side and position uniform over its
    content tokens) becomes [MASK]; ``masked_side`` (0: x, 1: y), ``masked_position`` and ``masked_token`` say
    which. ``mlm`` / ``mlm_xtr``: BERT masking of both sentences (``DataCollatorForLanguageModeling``), labels in
    ``x_mlm_labels`` / ``y_mlm_labels``. ``xtr`` / ``none``: no masking.
    """

    tokenizer: PreTrainedTokenizerBase
    x_column: str = "x"
    y_column: str = "y"
    max_length: int = 128
    task: str = "ugt"
    mlm_probability: float = 0.15

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=self.mlm_probability)

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = {}
        for prefix, name in (("x", self.x_column), ("y", self.y_column)):
            encoded = self.tokenizer(column(features, name), padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt", return_special_tokens_mask=True)  # fmt: skip
            special = encoded.pop("special_tokens_mask").bool() | ~encoded["attention_mask"].bool()
            if self.task in ("mlm", "mlm_xtr"):
                ids, labels = self._bert_masking.torch_mask_tokens(encoded["input_ids"].clone(), special)
                encoded["input_ids"], batch[f"{prefix}_mlm_labels"] = ids, labels
            batch.update({f"{prefix}_{key}": value for key, value in encoded.items()})
            batch[f"_{prefix}_special"] = special
        special_x, special_y = batch.pop("_x_special"), batch.pop("_y_special")
        if self.task in ("smlm", "ugt"):
            batch.update(self._mask_one_token(batch, special_x, special_y))
        return batch

    def _mask_one_token(self, batch, special_x, special_y) -> dict[str, torch.Tensor]:
        n = len(special_x)
        side = torch.randint(0, 2, (n,))
        positions, tokens = torch.empty(n, dtype=torch.long), torch.empty(n, dtype=torch.long)
        for row in range(n):
            ids, special = (batch["x_input_ids"], special_x) if side[row] == 0 else (batch["y_input_ids"], special_y)
            content = (~special[row]).nonzero(as_tuple=True)[0]
            if not len(content):
                raise ValueError(f"row {row} of the batch has no token to mask on side {'xy'[side[row]]}")
            positions[row] = content[torch.randint(0, len(content), ())]
            tokens[row] = ids[row, positions[row]]
            ids[row, positions[row]] = self.tokenizer.mask_token_id
        return {"masked_side": side, "masked_position": positions, "masked_token": tokens}


@dataclass
class CmlmCollator:
    """Batches for conditional MLM and bitext retrieval from rows with ``first`` / ``second`` (adjacent sentences)
    and the two language columns (a translation pair); either part may be absent.

    The order of the adjacent pair is swapped with ``swap_probability``; the second sentence is masked the BERT
    way (``mlm_probability`` of its tokens, 80/10/10) by ``DataCollatorForLanguageModeling``.
    """

    tokenizer: PreTrainedTokenizerBase
    x_column: str = "x"
    y_column: str = "y"
    first_column: str = "first"
    second_column: str = "second"
    max_length: int = 256
    mlm_probability: float = 0.3125
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    swap_probability: float = 0.5

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(
            self.tokenizer, mlm_probability=self.mlm_probability, mask_replace_prob=self.mask_replace_prob,
            random_replace_prob=self.random_replace_prob,
        )  # fmt: skip

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = {}
        if self.first_column in features[0]:
            first, second = column(features, self.first_column), column(features, self.second_column)
            swap = (torch.rand(len(first)) < self.swap_probability).tolist()
            first, second = (
                [s if w else f for f, s, w in zip(first, second, swap, strict=True)],
                [f if w else s for f, s, w in zip(first, second, swap, strict=True)],
            )
            batch.update(tokenize(self.tokenizer, first, "first", self.max_length))
            encoded = self.tokenizer(second, padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt", return_special_tokens_mask=True)  # fmt: skip
            special = encoded.pop("special_tokens_mask").bool() | ~encoded["attention_mask"].bool()
            encoded["input_ids"], batch["second_labels"] = self._bert_masking.torch_mask_tokens(
                encoded["input_ids"].clone(), special
            )
            batch.update({f"second_{key}": value for key, value in encoded.items() if key != "token_type_ids"})
        if self.x_column in features[0]:
            batch.update(tokenize(self.tokenizer, column(features, self.x_column), "x", self.max_length))
            batch.update(tokenize(self.tokenizer, column(features, self.y_column), "y", self.max_length))
        return {key: value for key, value in batch.items() if not key.endswith("token_type_ids")}


def reorder_words(text: str, perturbation: str, window: int, rng: random.Random) -> str:
    """HICTL's monolingual counterpart of a sentence: its words reordered (``shuffle`` all, ``local_shuffle``
    within consecutive windows of ``window`` words, or ``reverse``)."""
    words = text.split()
    if perturbation == "reverse":
        return " ".join(reversed(words))
    if perturbation == "shuffle":
        rng.shuffle(words)
        return " ".join(words)
    if perturbation == "local_shuffle":
        blocks = [words[i : i + window] for i in range(0, len(words), window)]
        for block in blocks:
            rng.shuffle(block)
        return " ".join(word for block in blocks for word in block)
    raise ValueError(f"perturbation must be 'shuffle', 'local_shuffle' or 'reverse', got {perturbation!r}")


@dataclass
class HictlCollator:
    """Batches for HICTL: the two sentences of each pair (``x_*``, ``y_*``) and their concatenation masked for
    TLM (``pair_*``, ``pair_labels``).

    A row without a ``y_column`` text -- or, with ``monolingual_probability``, any row -- is monolingual: its
    counterpart is the sentence with its words reordered (``perturbation``), and the LM task is then MLM.
    """

    tokenizer: PreTrainedTokenizerBase
    x_column: str = "x"
    y_column: str = "y"
    max_length: int = 128
    mlm_probability: float = 0.15
    perturbation: str = "local_shuffle"
    perturbation_window: int = 3
    monolingual_probability: float = 0.0

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=self.mlm_probability)

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        rng = random.Random(int(torch.randint(0, 2**31, ())))
        xs = column(features, self.x_column)
        ys = [row.get(self.y_column) for row in features]
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if y is None or rng.random() < self.monolingual_probability:
                source = x if y is None or rng.random() < 0.5 else y
                xs[i], ys[i] = source, reorder_words(source, self.perturbation, self.perturbation_window, rng)
        batch = tokenize(self.tokenizer, xs, "x", self.max_length)
        batch.update(tokenize(self.tokenizer, ys, "y", self.max_length))
        pair = self.tokenizer(xs, ys, padding=True, truncation=True, max_length=2 * self.max_length,
                              return_tensors="pt", return_special_tokens_mask=True)  # fmt: skip
        special = pair.pop("special_tokens_mask").bool() | ~pair["attention_mask"].bool()
        batch["pair_input_ids"], batch["pair_labels"] = self._bert_masking.torch_mask_tokens(
            pair["input_ids"].clone(), special
        )
        batch["pair_attention_mask"] = pair["attention_mask"]
        return {key: value for key, value in batch.items() if not key.endswith("token_type_ids")}
