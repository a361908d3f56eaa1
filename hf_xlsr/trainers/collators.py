# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Data collators: raw text rows in, model inputs out. Tokenisation happens here, per batch, per language."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

from ..tokenization import one_or_per_language, tokenizer_for


def column(features: Sequence[dict[str, Any]], name: str) -> list[str]:
    """The text of column ``name`` in every row, with a clear error for a missing column or a non-string value."""
    if name not in features[0]:
        raise KeyError(f"batch has no column {name!r} (columns: {', '.join(features[0])})")
    texts = [row[name] for row in features]
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"column {name!r}, row {row} of the batch: expected a string, got {type(text).__name__}")
    return texts


def with_example_ids(batch: dict[str, torch.Tensor], features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
    """Pass the rows' ``example_id`` (``XlsrTrainer`` numbers the training rows) on as ``example_ids``: a model
    with a queue keeps them with the keys, so a query never meets its own example among its negatives."""
    if "example_id" in features[0]:
        batch["example_ids"] = torch.tensor([row["example_id"] for row in features], dtype=torch.long)
    return batch


def tokenize(
    tokenizer: PreTrainedTokenizerBase, texts: list[str], prefix: str, max_length: int
) -> dict[str, torch.Tensor]:
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return {f"{prefix}_{key}": value for key, value in encoded.items()}


def pair_columns(languages: Sequence[str] | None) -> tuple[str, str]:
    """The two text columns of a translation pair: the two language codes (``["en", "fr"]``: columns ``en`` and
    ``fr``), or, for ``None``, the ``source`` and ``target`` columns of stacked multilingual rows (``stack_pairs``)."""
    if languages is None:
        return "source", "target"
    if isinstance(languages, str) or len(languages) != 2:
        raise ValueError(f"languages names the two columns of a pair, e.g. ['en', 'fr'], got {languages!r}")
    return languages[0], languages[1]


@dataclass
class BitextCollator:
    """Tokenise translation pairs into ``source_*`` / ``target_*`` inputs, each sentence with its language's tokenizer.

    ``tokenizer`` is one tokenizer for every language, or a mapping from language code to tokenizer (a model with one
    encoder per language: ``load_tokenizers`` returns that mapping). ``languages`` names the two columns of the rows by
    their language codes (``BitextCollator(tokenizer, languages=["en", "fr"])``); without it the rows are stacked
    multilingual pairs (``source``, ``target``, ``source_language``, ``target_language``: ``stack_pairs``).

    When the rows also carry NLI columns (``nli_columns``: premise, hypothesis, label), those are tokenised with the
    tokenizer of ``nli_language`` (default: the source language) into ``premise_*``, ``hypothesis_*`` and
    ``nli_labels``.
    """

    tokenizer: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase]
    languages: Sequence[str] | None = None
    max_length: int = 128
    nli_columns: tuple[str, str, str] = ("premise", "hypothesis", "label")
    nli_language: str | None = None

    def __post_init__(self):
        self._columns = pair_columns(self.languages)
        self.tokenizer = one_or_per_language(self.tokenizer)

    def row_languages(self, features: Sequence[dict[str, Any]]) -> tuple[str, str]:
        """The languages of the batch's source and target sentences (one each, when tokenizers differ by language)."""
        if self.languages is not None:
            return self._columns
        found = []
        for name in ("source_language", "target_language"):
            codes = {row.get(name) for row in features}
            if isinstance(self.tokenizer, Mapping) and (len(codes) != 1 or None in codes):
                raise ValueError(
                    f"one tokenizer per language needs one {name} per batch, found {sorted(map(str, codes))}"
                )
            found.append(codes.pop() if len(codes) == 1 else None)
        return found[0], found[1]

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        source, target = self.row_languages(features)
        batch = {}
        for prefix, language, name in zip(("source", "target"), (source, target), self._columns, strict=True):
            tokenizer = tokenizer_for(self.tokenizer, language)
            batch.update(tokenize(tokenizer, column(features, name), prefix, self.max_length))
        premise, hypothesis, label = self.nli_columns
        if premise in features[0]:
            nli_tokenizer = tokenizer_for(self.tokenizer, self.nli_language or source)
            batch.update(tokenize(nli_tokenizer, column(features, premise), "premise", self.max_length))
            batch.update(tokenize(nli_tokenizer, column(features, hypothesis), "hypothesis", self.max_length))
            batch["nli_labels"] = torch.tensor([row[label] for row in features], dtype=torch.long)
        return with_example_ids(batch, features)


@dataclass
class PairMaskingCollator:
    """Tokenise sentence pairs with one shared tokenizer and mask them for a generative task.

    ``task`` ``smlm`` / ``ugt``: in each pair one token of one sentence (side and position uniform over its
    content tokens) becomes [MASK]; ``masked_side`` (0: source, 1: target), ``masked_position`` and
    ``masked_token`` say which. ``mlm`` / ``mlm_xtr``: BERT masking of both sentences
    (``DataCollatorForLanguageModeling``), labels in ``source_mlm_labels`` / ``target_mlm_labels``. ``xtr`` /
    ``none``: no masking. ``languages`` names the two text columns (``pair_columns``).
    """

    tokenizer: PreTrainedTokenizerBase
    languages: Sequence[str] | None = None
    max_length: int = 128
    task: str = "ugt"
    mlm_probability: float = 0.15

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=self.mlm_probability)

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = {}
        for prefix, name in zip(("source", "target"), pair_columns(self.languages), strict=True):
            encoded = self.tokenizer(
                column(features, name),
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
                return_special_tokens_mask=True,
            )
            special = encoded.pop("special_tokens_mask").bool() | ~encoded["attention_mask"].bool()
            if self.task in ("mlm", "mlm_xtr"):
                ids, labels = self._bert_masking.torch_mask_tokens(encoded["input_ids"].clone(), special)
                encoded["input_ids"], batch[f"{prefix}_mlm_labels"] = ids, labels
            batch.update({f"{prefix}_{key}": value for key, value in encoded.items()})
            batch[f"_{prefix}_special"] = special
        special_x, special_y = batch.pop("_source_special"), batch.pop("_target_special")
        if self.task in ("smlm", "ugt"):
            batch.update(self._mask_one_token(batch, special_x, special_y))
        return with_example_ids(batch, features)

    def _mask_one_token(self, batch, special_x, special_y) -> dict[str, torch.Tensor]:
        n = len(special_x)
        side = torch.randint(0, 2, (n,))
        positions, tokens = torch.empty(n, dtype=torch.long), torch.empty(n, dtype=torch.long)
        for row in range(n):
            ids, special = (
                (batch["source_input_ids"], special_x) if side[row] == 0 else (batch["target_input_ids"], special_y)
            )
            content = (~special[row]).nonzero(as_tuple=True)[0]
            if not len(content):
                raise ValueError(f"row {row} of the batch: its {('source', 'target')[side[row]]} has no token to mask")
            positions[row] = content[torch.randint(0, len(content), ())]
            tokens[row] = ids[row, positions[row]]
            ids[row, positions[row]] = self.tokenizer.mask_token_id
        return {"masked_side": side, "masked_position": positions, "masked_token": tokens}


@dataclass
class CmlmCollator:
    """Batches for conditional MLM and bitext retrieval from rows with ``first`` / ``second`` (adjacent sentences)
    and the two language columns (a translation pair: ``languages``, see ``pair_columns``); either part may be absent.

    The order of the adjacent pair is swapped with ``swap_probability``; the second sentence is masked the BERT
    way (``mlm_probability`` of its tokens, 80/10/10) by ``DataCollatorForLanguageModeling``.
    """

    tokenizer: PreTrainedTokenizerBase
    languages: Sequence[str] | None = None
    first_column: str = "first"
    second_column: str = "second"
    max_length: int = 256
    mlm_probability: float = 0.3125
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    swap_probability: float = 0.5

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(
            self.tokenizer,
            mlm_probability=self.mlm_probability,
            mask_replace_prob=self.mask_replace_prob,
            random_replace_prob=self.random_replace_prob,
        )

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
            encoded = self.tokenizer(
                second,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
                return_special_tokens_mask=True,
            )
            special = encoded.pop("special_tokens_mask").bool() | ~encoded["attention_mask"].bool()
            encoded["input_ids"], batch["second_labels"] = self._bert_masking.torch_mask_tokens(
                encoded["input_ids"].clone(), special
            )
            batch.update({f"second_{key}": value for key, value in encoded.items() if key != "token_type_ids"})
        source, target = pair_columns(self.languages)
        if source in features[0]:
            batch.update(tokenize(self.tokenizer, column(features, source), "source", self.max_length))
            batch.update(tokenize(self.tokenizer, column(features, target), "target", self.max_length))
        batch = {key: value for key, value in batch.items() if not key.endswith("token_type_ids")}
        return with_example_ids(batch, features)


def special_token_templates(tokenizer: PreTrainedTokenizerBase) -> tuple[tuple[list, list], tuple[list, list, list]]:
    """The special tokens a tokenizer puts around one sentence (before, after) and a pair (start, middle, end),
    read off its encodings of two probe words: ``[CLS] a [SEP]`` / ``[CLS] a [SEP] b [SEP]`` for BERT,
    ``<s> a </s>`` / ``<s> a </s></s> b </s>`` for XLM-R."""
    a, b = (tokenizer(word, add_special_tokens=False)["input_ids"] for word in ("a", "b"))
    single, pair = tokenizer("a")["input_ids"], tokenizer("a", "b")["input_ids"]

    def find(sequence, part, start=0):
        for i in range(start, len(sequence) - len(part) + 1):
            if sequence[i : i + len(part)] == part:
                return i
        raise ValueError(f"cannot read the special tokens of {type(tokenizer).__name__}: {part} not in {sequence}")

    i = find(single, a)
    j = find(pair, a)
    k = find(pair, b, j + len(a))
    return (single[:i], single[i + len(a) :]), (pair[:j], pair[j + len(a) : k], pair[k + len(b) :])


def reorder(items: Sequence, perturbation: str, window: int, rng: random.Random) -> list:
    """HICTL's perturbation of a sentence: its items (words, or tokenizer pieces) reordered -- ``shuffle`` all,
    ``local_shuffle`` within consecutive windows of ``window`` items, or ``reverse``."""
    items = list(items)
    if perturbation == "reverse":
        return items[::-1]
    if perturbation == "shuffle":
        rng.shuffle(items)
        return items
    if perturbation == "local_shuffle":
        blocks = [items[i : i + window] for i in range(0, len(items), window)]
        for block in blocks:
            rng.shuffle(block)
        return [item for block in blocks for item in block]
    raise ValueError(f"perturbation must be 'shuffle', 'local_shuffle' or 'reverse', got {perturbation!r}")


@dataclass
class HictlCollator:
    """Batches for HICTL: the two sentences of each pair (``source_*``, ``target_*``; the columns ``languages``
    names, see ``pair_columns``) and their concatenation masked for TLM (``pair_*``, ``pair_labels``).

    A row without a target text -- or, with ``monolingual_probability``, any row -- is monolingual: its
    counterpart is the sentence reordered (``perturbation``) at the level of the tokenizer's words, or of its
    pieces where the sentence is one word to the tokenizer (Chinese, Japanese, Thai), so that scripts without
    spaces are reordered too. The LM task is then MLM, and the reordered half of the pair is made from the *masked*
    sentence: a masked word is masked in both halves, so the MLM cannot copy it from the other half. Labels stand
    on the first half only.
    """

    tokenizer: PreTrainedTokenizerBase
    languages: Sequence[str] | None = None
    max_length: int = 128
    mlm_probability: float = 0.15
    perturbation: str = "local_shuffle"
    perturbation_window: int = 3
    monolingual_probability: float = 0.0

    def __post_init__(self):
        self._bert_masking = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=self.mlm_probability)
        self._single, self._pair = special_token_templates(self.tokenizer)

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if self.tokenizer.padding_side == "left":
            raise ValueError("HictlCollator needs a tokenizer that pads on the right")
        rng = random.Random(int(torch.randint(0, 2**31, ())))
        source, target = pair_columns(self.languages)
        xs = column(features, source)
        ys = [row.get(target) for row in features]
        monolingual = [y is None or rng.random() < self.monolingual_probability for y in ys]
        # A monolingual row reorders its source sentence, or half of the time its target when it has one.
        firsts = [
            y if mono and y is not None and rng.random() < 0.5 else x
            for x, y, mono in zip(xs, ys, monolingual, strict=True)
        ]
        options = {"add_special_tokens": False, "truncation": True, "max_length": self.max_length - 2}
        pieces = self.tokenizer(firsts, **options)
        bilingual = [i for i, mono in enumerate(monolingual) if not mono]
        y_pieces = self.tokenizer([ys[i] for i in bilingual], **options)["input_ids"] if bilingual else []
        y_pieces = dict(zip(bilingual, y_pieces, strict=True))
        rows = {"source": [], "target": [], "pair": [], "labels": []}
        for i, mono in enumerate(monolingual):
            x_ids = pieces["input_ids"][i]
            if mono:
                order = self._reordering(pieces, i, rng)
                masked_x, labels_x = self._mask(x_ids)
                y_ids, masked_y, labels_y = (
                    [x_ids[j] for j in order],
                    [masked_x[j] for j in order],
                    [-100] * len(order),
                )
            else:
                y_ids = y_pieces[i]
                masked, labels = self._mask(x_ids + y_ids)
                masked_x, masked_y = masked[: len(x_ids)], masked[len(x_ids) :]
                labels_x, labels_y = labels[: len(x_ids)], labels[len(x_ids) :]
            (before, after), (start, middle, end) = self._single, self._pair
            rows["source"].append(before + x_ids + after)
            rows["target"].append(before + y_ids + after)
            rows["pair"].append(start + masked_x + middle + masked_y + end)
            rows["labels"].append([-100] * len(start) + labels_x + [-100] * len(middle) + labels_y + [-100] * len(end))
        batch = {}
        for prefix in ("source", "target", "pair"):
            padded = self.tokenizer.pad({"input_ids": rows[prefix]}, return_tensors="pt")
            batch[f"{prefix}_input_ids"], batch[f"{prefix}_attention_mask"] = (
                padded["input_ids"],
                padded["attention_mask"],
            )
        width = batch["pair_input_ids"].shape[1]
        batch["pair_labels"] = torch.tensor([labels + [-100] * (width - len(labels)) for labels in rows["labels"]])
        return with_example_ids(batch, features)

    def _mask(self, ids: list[int]) -> tuple[list[int], list[int]]:
        """BERT masking of content tokens: the masked ids and the labels (-100 where not masked)."""
        if not ids:
            return [], []
        masked, labels = self._bert_masking.torch_mask_tokens(
            torch.tensor([ids]), special_tokens_mask=torch.zeros(1, len(ids), dtype=torch.bool)
        )
        return masked[0].tolist(), labels[0].tolist()

    def _reordering(self, encoded, row: int, rng: random.Random) -> list[int]:
        """A permutation of row ``row``'s pieces that reorders its words (pieces of a word stay together), or its
        pieces when the tokenizer sees a single word."""
        n = len(encoded["input_ids"][row])
        words = encoded.word_ids(row) if encoded.is_fast else [None] * n
        groups: list[list[int]] = []
        for position, word in enumerate(words):
            if groups and word is not None and words[position - 1] == word:
                groups[-1].append(position)
            else:
                groups.append([position])
        if len(groups) < 2:
            groups = [[position] for position in range(n)]
        return [
            position
            for group in reorder(groups, self.perturbation, self.perturbation_window, rng)
            for position in group
        ]
