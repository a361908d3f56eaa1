# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Lightweight dual transformer: Mao, Gupta, Wang, Chu, Jaggi and Kurohashi, "Lightweight Cross-Lingual Sentence
Representation Learning", ACL 2021.

One small transformer (2 layers, hidden 512) encodes both sentences of a translation pair; the sentence vectors
``u``, ``v`` are the means of its final states. Training combines a generative task -- one token ``w_t`` masked
in one of the two sentences, and the token distribution of the translation to reconstruct (SMLM, XTR, and their
union UGT, Eq. 1-4) -- with two in-batch sentence-level contrastive losses (L_align, Eq. 5; L_sim, Eq. 6),
weighted 1, 2, 2 (Eq. 7). The vocabulary distribution ``p(h_S)`` is ``softmax(E . FC(h_S) + b)``: the fully
connected layer of Section 3.1 followed by the input embedding matrix ``E`` (tied input and output embeddings).
As in the official code (Mao-KU/lightweight-crosslingual-sent2vec, ``BertPredictionHeadTransform``), FC is
Linear -> swish -> LayerNorm: a linear map alone would add nothing before the linear output matrix.

Where the paper is ambiguous, this is what was chosen:

* ``h_S`` in Eq. 1-4 is the sentence's mean-pooled final state: the translation side has no masked position to
  predict from, and Section 3.1 puts the FC layer between the sentence representation and the generative loss.
* ``N_w`` in Eq. 3 counts occurrences, so the target sums to 1 (footnote 4 sets ``N_w = 1``, which would not for
  a sentence with a repeated token); in Eq. 4 a translation token equal to ``w_t`` receives both halves.
* L_align (Eq. 5) is the mean over the batch, L_sim (Eq. 6) the sum over the B x B pairs, as in the official
  code (``CrossEntropyLoss()`` and ``torch.sum``); a mean would make L_sim about B^2 times weaker than the paper's.
* ``u``, ``v`` of the contrastive losses come from the same forward pass as the generative loss, one token
  masked ("the masked token w_t is omitted in the following equations").
* The MLM ablation (Table 6) predicts each masked position from its own final state through the same FC layer
  and tied output matrix.

Two details where this implementation departs from the official code on purpose, because the code does not do
what Eq. 3-4 say: the masked token ``w_t`` keeps its 0.5 share of the UGT target even when it also occurs in the
translation (the official ``index_fill`` overwrites it with the translation's share), and the other sentence's
target is the bag of words of the masked sentence *before* masking (the official one counts the [MASK] token).

With ``config.queue_size`` > 0 (hf_xlsr's extension), L_align becomes its MoCo-consistent form: live queries
against the momentum encoder's keys (positive, in-batch negatives and queue), L2-normalised, at
``queue_temperature`` (see ``momentum.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .adapters import FrozenParametersMixin
from .common import SentenceEncoderMixin, XlsrPreTrainedModel
from .configuration_lightweight import LightweightDualTransformerConfig
from .distributed import keep_momentum_state_out_of_ddp
from .functional import (
    bag_of_words,
    in_batch_alignment_loss,
    in_batch_similarity_loss,
    kl_to_target,
    unified_generative_target,
)
from .momentum import MomentumContrast, QueuedNegativesMixin
from .pooling import l2_normalize, pool


@dataclass
class LightweightDualTransformerOutput(ModelOutput):
    r"""
    Output of `LightweightDualTransformer.forward`.

    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*):
            `w_gen * L_gen + w_align * L_align + w_sim * L_sim` (Eq. 7).
        loss_generative (`torch.FloatTensor` of shape `()`, *optional*):
            The generative loss of `config.generative_task` (SMLM Eq. 1, XTR Eq. 2-3, UGT Eq. 4, MLM), detached.
        loss_align (`torch.FloatTensor` of shape `()`, *optional*):
            L_align (Eq. 5), detached.
        loss_sim (`torch.FloatTensor` of shape `()`, *optional*):
            L_sim (Eq. 6), detached.
        generative_accuracy (`torch.FloatTensor` of shape `()`, *optional*):
            How often the masked token is the most probable word (SMLM / UGT).
        accuracy_source_to_target (`torch.FloatTensor` of shape `()`, *optional*):
            In-batch retrieval accuracy, source to target, by inner product.
        queue_fill (`torch.FloatTensor` of shape `()`, *optional*):
            With a queue (hf_xlsr's extension), the share of its slots written so far.
        source_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the source sentences.
        target_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the target sentences.
    """

    loss: torch.FloatTensor | None = None
    loss_generative: torch.FloatTensor | None = None
    loss_align: torch.FloatTensor | None = None
    loss_sim: torch.FloatTensor | None = None
    generative_accuracy: torch.FloatTensor | None = None
    accuracy_source_to_target: torch.FloatTensor | None = None
    queue_fill: torch.FloatTensor | None = None
    source_embeddings: torch.FloatTensor | None = None
    target_embeddings: torch.FloatTensor | None = None


class LightweightDualTransformerPreTrainedModel(XlsrPreTrainedModel):
    config: LightweightDualTransformerConfig
    config_class = LightweightDualTransformerConfig
    base_model_prefix = "lightweight"

    def _initializer_range(self) -> float:
        return self.config.initializer_range

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, LightweightDualTransformer):
            init.zeros_(module.generative_bias)


class LightweightDualTransformer(
    SentenceEncoderMixin, QueuedNegativesMixin, FrozenParametersMixin, LightweightDualTransformerPreTrainedModel
):
    """The lightweight dual transformer; build it with `from_tokenizer` to take the tokenizer's ids."""

    _lora_modules = ("encoder",)

    def __init__(self, config: LightweightDualTransformerConfig, lora: dict | None = None):
        super().__init__(config)
        # One encoder for both languages (Section 3.1: the dual encoders share every parameter).
        self.encoder = BertModel(config.encoder_config(), add_pooling_layer=False)
        # The fully connected layer before the generative loss (Section 3.1), Linear -> swish -> LayerNorm as in the
        # official code; the output matrix is the input embeddings.
        self.generative_dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.generative_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.generative_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self._add_lora(lora)  # adapters on the encoder, the rest of it frozen
        self.momentum_contrast = None
        if config.queue_size:  # hf_xlsr's extension: queued momentum keys as more negatives of L_align
            self.momentum_contrast = MomentumContrast(self._key_modules(), config.queue_size, config.hidden_size)
            keep_momentum_state_out_of_ddp(self)
        self.post_init()
        self.synchronize_momentum_encoder()  # the key encoder starts as an exact copy
        self._record_parameter_state()

    @classmethod
    def from_tokenizer(cls, tokenizer, lora: dict | None = None, **config_kwargs) -> LightweightDualTransformer:
        """A new model whose vocabulary and special token ids are the tokenizer's; with ``lora``
        (``peft.LoraConfig`` fields), adapters on its encoder."""
        config = LightweightDualTransformerConfig(
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            mask_token_id=tokenizer.mask_token_id,
            **config_kwargs,
        )
        return cls(config, lora=lora)

    # ----------------------------------------------------------------------------------------------------------------
    # Encoder

    @property
    def sentence_embedding_dimension(self) -> int:
        return self.config.hidden_size

    def query_encoder(self, language: str | None = None) -> BertModel:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embeddings.word_embeddings

    def _encode(self, input_ids, attention_mask=None, modules=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Final token states and their mean ``u`` (the sentence representation, not normalised), of the live
        encoder or of ``modules["encoder"]`` (its momentum copy)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        encoder = (modules or self._key_modules())["encoder"]
        states = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return states, pool(states, attention_mask, "mean")

    def _key_modules(self) -> dict:
        return {"encoder": self.encoder}

    def _key_vector(self, modules, input_ids, attention_mask=None) -> torch.Tensor:
        return self._encode(input_ids, attention_mask, modules)[1]

    def get_sentence_embeddings(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        language: str | None = None,
    ) -> torch.Tensor:
        """L2-normalised mean-pooled sentence vectors (any language: the encoder is shared)."""
        return l2_normalize(self._encode(input_ids, attention_mask)[1])

    def generative_logits(self, states: torch.Tensor) -> torch.Tensor:
        """``E . FC(h) + b``: vocabulary scores from a state, FC = LayerNorm(swish(Linear(h))), output matrix tied to
        the input embeddings."""
        transformed = self.generative_norm(F.silu(self.generative_dense(states)))
        return F.linear(transformed, self.get_input_embeddings().weight, self.generative_bias)

    def _content(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        special = [
            i
            for i in (
                self.config.pad_token_id,
                self.config.bos_token_id,
                self.config.eos_token_id,
                self.config.mask_token_id,
            )
            if i is not None
        ]
        return attention_mask.bool() & ~torch.isin(input_ids, torch.tensor(special, device=input_ids.device))

    # ----------------------------------------------------------------------------------------------------------------
    # Forward and losses

    def forward(
        self,
        source_input_ids: torch.Tensor | None = None,
        source_attention_mask: torch.Tensor | None = None,
        target_input_ids: torch.Tensor | None = None,
        target_attention_mask: torch.Tensor | None = None,
        masked_side: torch.Tensor | None = None,
        masked_position: torch.Tensor | None = None,
        masked_token: torch.Tensor | None = None,
        source_mlm_labels: torch.Tensor | None = None,
        target_mlm_labels: torch.Tensor | None = None,
        source_token_type_ids: torch.Tensor | None = None,
        target_token_type_ids: torch.Tensor | None = None,
        example_ids: torch.Tensor | None = None,
        return_loss: bool = True,
    ) -> LightweightDualTransformerOutput:
        r"""Encode the pairs; with `return_loss`, compute Eq. 7.

        Args:
            source_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                Token ids of the source sentences.
            source_attention_mask (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                1 for tokens, 0 for padding.
            target_input_ids (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                Token ids of the target sentences; row i translates source row i.
            target_attention_mask (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                1 for tokens, 0 for padding.
            masked_side (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                SMLM / UGT: 0 where row i's source sentence had a token replaced by [MASK], 1 where its target did.
            masked_position (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                SMLM / UGT: the position of that token.
            masked_token (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                SMLM / UGT: the original token.
            source_mlm_labels (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                MLM: the original ids at masked positions of the source sentences, -100 elsewhere.
            target_mlm_labels (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                MLM: the same for the target sentences.
            source_token_type_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                Segment ids, where the encoder takes them.
            target_token_type_ids (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                Segment ids, where the encoder takes them.
            example_ids (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                The meaning id of each row (-1: unknown).
            return_loss (`bool`, *optional*, defaults to `True`):
                Compute the loss; `False` only embeds.

        Returns:
            `LightweightDualTransformerOutput`: the loss, its parts and the sentence vectors.

        Example:
            ```python
            from hf_xlsr import LightweightDualTransformer
            from hf_xlsr.data import load_bible
            from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
            from hf_xlsr.trainers import PairMaskingCollator

            verses = load_bible(["en", "fr"], split="train").select(range(500))
            tokenizer = train_unigram_tokenizer([*verses["en"], *verses["fr"]], vocab_size=1000)
            model = LightweightDualTransformer.from_tokenizer(tokenizer, languages=["en", "fr"], hidden_size=64,
                                                              intermediate_size=128, num_attention_heads=2)
            collator = PairMaskingCollator(tokenizer, languages=["en", "fr"], max_length=32)
            outputs = model(**collator([verses[i] for i in range(4)]))  # UGT + L_align + L_sim (Eq. 7)
            print(outputs.loss.shape)
            ```
        """
        states_x = states_y = u = v = None
        if source_input_ids is not None:
            states_x, u = self._encode(source_input_ids, source_attention_mask)
        if target_input_ids is not None:
            states_y, v = self._encode(target_input_ids, target_attention_mask)
        embeddings = {"source_embeddings": l2_normalize(u) if u is not None else None,
                      "target_embeddings": l2_normalize(v) if v is not None else None}  # fmt: skip
        if not return_loss or u is None or v is None:
            return LightweightDualTransformerOutput(**embeddings)
        source_attention_mask = (
            source_attention_mask if source_attention_mask is not None else torch.ones_like(source_input_ids)
        )
        target_attention_mask = (
            target_attention_mask if target_attention_mask is not None else torch.ones_like(target_input_ids)
        )

        config, parts = self.config, {}
        loss = u.new_zeros((), dtype=torch.float32)
        if config.generative_task != "none":
            x = (source_input_ids, source_attention_mask, source_mlm_labels, states_x, u)
            y = (target_input_ids, target_attention_mask, target_mlm_labels, states_y, v)
            generative, accuracy = self._generative_loss(x, y, masked_side, masked_position, masked_token)
            parts.update(loss_generative=generative.detach(), generative_accuracy=accuracy)
            loss = loss + config.generative_weight * generative
        if config.use_align:
            if config.queue_size:  # hf_xlsr's extension: momentum keys, a queue of them, cosine / temperature
                keys_x = self.momentum_keys(source_input_ids, source_attention_mask)
                keys_y = self.momentum_keys(target_input_ids, target_attention_mask)
                queries = embeddings["source_embeddings"], embeddings["target_embeddings"]
                align, _ = self._queued_contrast(*queries, keys_x, keys_y, example_ids)
                parts.update(self.queue_statistics())
            else:
                align = in_batch_alignment_loss(u, v, example_ids, config.align_temperature)  # Eq. 5
            parts["loss_align"] = align.detach()
            loss = loss + config.align_weight * align
        if config.use_sim:
            sim = in_batch_similarity_loss(u, v)  # Eq. 6
            parts["loss_sim"] = sim.detach()
            loss = loss + config.sim_weight * sim
        if config.generative_task == "none" and not (config.use_align or config.use_sim):
            raise ValueError("the configuration switches every loss off: set generative_task, use_align or use_sim")
        with torch.no_grad():
            scores = u.float() @ v.float().T
            parts["accuracy_source_to_target"] = (
                (scores.argmax(dim=1) == torch.arange(len(u), device=u.device)).float().mean()
            )
        return LightweightDualTransformerOutput(loss=loss, **parts, **embeddings)

    def _generative_loss(self, x, y, masked_side, masked_position, masked_token):
        """The generative loss of ``config.generative_task`` and, for SMLM / UGT, the masked-token accuracy.

        ``x`` and ``y`` are ``(input ids, attention mask, MLM labels, final states, sentence vector)``.
        """
        task = self.config.generative_task
        (ids_x, mask_x, labels_x, states_x, u), (ids_y, mask_y, labels_y, states_y, v) = x, y
        if task in ("mlm", "mlm_xtr"):
            loss = self._mlm_loss(states_x, labels_x) + self._mlm_loss(states_y, labels_y)
            if task == "mlm_xtr":
                loss = loss + self._xtr_loss(
                    u, v, self._bag(ids_x, mask_x, labels_x), self._bag(ids_y, mask_y, labels_y)
                )
            return loss, None
        restored = [
            self._unmask(ids, side, masked_side, masked_position, masked_token)
            for ids, side in ((ids_x, 0), (ids_y, 1))
        ]
        bag_x, bag_y = self._bag(restored[0], mask_x), self._bag(restored[1], mask_y)
        if task == "xtr":
            return self._xtr_loss(u, v, bag_x, bag_y), None
        if masked_side is None:
            raise ValueError(f"generative_task {task!r} needs masked_side, masked_position and masked_token inputs")
        logits_u, logits_v = self.generative_logits(u), self.generative_logits(v)
        with torch.no_grad():
            hits = torch.cat([logits_u.argmax(-1) == masked_token, logits_v.argmax(-1) == masked_token])
        if task == "smlm":  # Eq. 1: predict w_t from the masked sentence and from its translation
            loss = F.cross_entropy(logits_u.float(), masked_token) + F.cross_entropy(logits_v.float(), masked_token)
            return loss, hits.float().mean()
        # UGT, Eq. 4: a masked sentence's target is half w_t, half its translation's tokens; the other is Eq. 3
        target_u = unified_generative_target(bag_y, masked_token, masked_side == 0)
        target_v = unified_generative_target(bag_x, masked_token, masked_side == 1)
        return kl_to_target(logits_u, target_u) + kl_to_target(logits_v, target_v), hits.float().mean()

    def _xtr_loss(self, u, v, bag_x, bag_y) -> torch.Tensor:
        """XTR, Eq. 2-3: each sentence's vector reconstructs the token distribution of its translation."""
        return kl_to_target(self.generative_logits(u), bag_y) + kl_to_target(self.generative_logits(v), bag_x)

    def _mlm_loss(self, states, labels) -> torch.Tensor:
        """BERT's MLM (the Table 6 ablation): each masked position predicted from its own final state."""
        logits = self.generative_logits(states).flatten(0, 1).float()
        return F.cross_entropy(logits, labels.flatten(), ignore_index=-100)

    def _bag(self, input_ids, attention_mask, mlm_labels=None) -> torch.Tensor:
        """Token distribution (Eq. 3) of the sentence before masking, over its content tokens."""
        if mlm_labels is not None:
            input_ids = torch.where(mlm_labels >= 0, mlm_labels, input_ids)
        return bag_of_words(input_ids, self._content(input_ids, attention_mask), self.config.vocab_size)

    @staticmethod
    def _unmask(input_ids, side, masked_side, masked_position, masked_token) -> torch.Tensor:
        """Put ``w_t`` back where it was masked in the sentences of ``side``."""
        if masked_side is None:
            return input_ids
        rows = (masked_side == side).nonzero(as_tuple=True)[0]
        return input_ids.index_put((rows, masked_position[rows]), masked_token[rows])


__all__ = ["LightweightDualTransformer", "LightweightDualTransformerOutput"]
