# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""What every hf_xlsr model shares, whatever its paper: the `PreTrainedModel` base (attention backends, gradient
checkpointing, weight initialisation), what the evaluators and the export need, and the prediction head of a masked
LM, which CMLM and HICTL apply to the masked positions only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init

from .momentum import init_momentum_state


class TrainingDeclarations:
    """What `XlsrTrainer` needs to know of a model beyond its momentum encoder (`MomentumMixin`), declared by the
    model, never probed: a model that declares nothing (any ``transformers`` model) trains as declared here.

    The step counts are what the model asks for where the training arguments set none (`XlsrTrainingArguments`'
    ``second_stage_step``, ``encoder_frozen_steps``); ``mini_batch_size`` is what the trainer sets from its arguments.
    """

    # a schedule switched at an optimizer step (StageCallback sets the model's ``stage``): the step, else None
    second_stage_step: int | None = None
    encoder_frozen_steps = 0  # optimizer steps trained with the encoder frozen (EncoderFreezeCallback)
    supports_gradcache = False  # the forward embeds a batch in passes of ``mini_batch_size`` rows (GradCache)
    mini_batch_size: int | None = None  # set by the trainer from its arguments; None: the batch in one pass

    @property
    def uses_gradcache(self) -> bool:
        """GradCache's backward hook gives the gradients: DDP runs without its search for unused parameters."""
        return self.mini_batch_size is not None


class XlsrPreTrainedModel(TrainingDeclarations, PreTrainedModel):
    """The base of the four models' ``PreTrainedModel`` classes: SDPA attention and gradient checkpointing where the
    encoders support them, and ``_init_weights`` for what a model adds to its encoders (new linear layers from a
    normal of ``initializer_range``, empty queues, zero counters); a model's class adds its own buffers."""

    supports_gradient_checkpointing = True
    _supports_sdpa = True

    def _initializer_range(self) -> float:
        """The standard deviation of a new linear layer's weights: the encoder configuration's, else 0.02."""
        return getattr(getattr(self.config, "encoder", None), "initializer_range", 0.02)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        init_momentum_state(module)
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=self._initializer_range())
            if module.bias is not None:
                init.zeros_(module.bias)


def masked_lm_head(masked_lm: nn.Module) -> nn.Module:
    """The prediction head of an ``AutoModelForMaskedLM``: its one child besides the base model (BERT's ``cls``,
    XLM-R's ``lm_head``, ...), mapping final states ``(..., hidden)`` to vocabulary scores."""
    heads = [module for name, module in masked_lm.named_children() if name != masked_lm.base_model_prefix]
    if len(heads) != 1:
        raise ValueError(f"cannot tell the prediction head of {type(masked_lm).__name__} from its other modules")
    return heads[0]


class SentenceEncoderMixin:
    """The languages of a model, ``config.languages`` (the first is the pivot of English-centric pairs).

    One encoder serves every language, unless the model has one per language (MoCo-BERT's default): then its two
    languages are the paper's ``x`` (``languages[0]``) and ``y`` (``languages[1]``), each with its own encoder and
    tokenizer. A model provides ``query_encoder(language)`` (the transformer kept after training),
    ``get_sentence_embeddings(input_ids, attention_mask, token_type_ids, language)`` and
    ``sentence_embedding_dimension``; ``hf_xlsr.export`` and ``hf_xlsr.evaluation`` rely on nothing else. A model
    with one encoder for every language needs no ``language``; a model with one per language needs it.
    """

    @property
    def encoders_per_language(self) -> bool:
        """True when each of the two languages has its own encoder (and tokenizer)."""
        return not getattr(self.config, "shared_encoder", True)

    def encoder_side(self, language: str | None) -> str:
        """Which of the paper's two encoders serves ``language``: ``"x"`` (the first language's, and the one encoder
        of a shared model, whatever the language) or ``"y"`` (the second's)."""
        if not self.encoders_per_language:
            return "x"
        languages = self.config.languages
        if language is None:
            raise ValueError(f"the model has one encoder for each of {', '.join(languages)}: name the language")
        if language not in languages:
            raise ValueError(
                f"unknown language {language!r}: the model has one encoder for each of {', '.join(languages)}"
            )
        return "xy"[languages.index(language)]

    def max_tokens(self, language: str | None = None) -> int | None:
        """The longest input, in tokens, that the position table of ``language``'s query encoder takes (None when it
        has no learned table). RoBERTa-style tables (XLM-R's) count positions from the padding index + 1."""
        table = getattr(getattr(self.query_encoder(language), "embeddings", None), "position_embeddings", None)
        if not isinstance(table, nn.Embedding):
            return None
        return table.num_embeddings - (0 if table.padding_idx is None else table.padding_idx + 1)
