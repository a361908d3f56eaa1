"""Dual momentum contrast ("MoCo-BERT"): Wang, Zhao and Liu, "Aligning Cross-lingual Sentence Representations with
Dual Momentum Contrast", EMNLP 2021.

Each language has a query encoder and a momentum encoder updated by EMA (Eq. 1) and a memory queue of the momentum
encoder's most recent keys. Sentences are mean-pooled and L2-normalised; the loss is InfoNCE of each language's
queries against the other language's positive key and queue (Eq. 2), summed over both directions (Eq. 3). An
optional NLI head adds ``alpha * L_nli`` (Appendix B, Eq. 5).

State changes and when they happen (``queue.py`` has the rules every hf_xlsr queue follows):

* the queues are written in :meth:`DualMomentumModel.forward`, once per micro-batch, only while the model is
  training with gradients enabled and only when the loss and the keys are finite; under several processes the keys
  of every process are gathered first, so every process holds the same queue;
* the momentum encoders change only in :meth:`DualMomentumModel.momentum_update`, in float32, which the trainer's
  callback calls once per optimizer step (a custom loop calls it after each ``optimizer.step()``); a skipped step
  calls :meth:`DualMomentumModel.discard_momentum_step`, which takes that step's keys back out of the queues;
* the queues start empty and only written slots are negatives, so the very first step, with no negative at all,
  has a loss of exactly 0 and no gradient: it only fills the queues.

Momentum encoders always run in eval mode (no dropout): keys are deterministic functions of the EMA weights. Before
any EMA update the momentum encoders are exact copies of the query encoders; they are frozen parameters and are
saved with checkpoints, as are the queues, so a resumed run continues exactly. ``hf_xlsr.export`` leaves them out.
With ``config.lora`` only LoRA adapters train; the momentum encoders then share the frozen base weights and EMA
their own copies of the adapters (``adapters.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .adapters import FrozenParametersMixin
from .common import SentenceEncoderMixin
from .configuration_dual_momentum import DROPOUT_FIELDS, DualMomentumConfig
from .losses import info_nce
from .pooling import l2_normalize, pool
from .queue import MemoryQueue, MomentumContrast, MomentumMixin, init_momentum_state, keep_momentum_state_out_of_ddp


@dataclass
class DualMomentumOutput(ModelOutput):
    r"""
    loss: ``L(x, y) + L(y, x) + alpha * L_nli`` (Eq. 3 and Eq. 5).
    loss_xy: ``L(x, y)`` of Eq. 2: x queries against the y momentum keys (positive plus queue_y).
    loss_yx: ``L(y, x)``: y queries against the x momentum keys (positive plus queue_x).
    loss_nli: cross-entropy of the NLI head, before the weight alpha (Appendix B).
    accuracy_xy / accuracy_yx: fraction of queries whose positive key beats every key in the other queue.
    positive_similarity / negative_similarity: mean cosine of a query to its positive key / to the queued keys.
    queue_fill: fraction of the queue slots written so far.
    embeddings_x / embeddings_y: L2-normalised sentence vectors of the query encoders.
    """

    loss: torch.FloatTensor | None = None
    loss_xy: torch.FloatTensor | None = None
    loss_yx: torch.FloatTensor | None = None
    loss_nli: torch.FloatTensor | None = None
    accuracy_xy: torch.FloatTensor | None = None
    accuracy_yx: torch.FloatTensor | None = None
    positive_similarity: torch.FloatTensor | None = None
    negative_similarity: torch.FloatTensor | None = None
    queue_fill: torch.FloatTensor | None = None
    embeddings_x: torch.FloatTensor | None = None
    embeddings_y: torch.FloatTensor | None = None


class DualMomentumPreTrainedModel(PreTrainedModel):
    config: DualMomentumConfig
    config_class = DualMomentumConfig
    base_model_prefix = "dual_momentum"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        init_momentum_state(module)
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=0.02)
            init.zeros_(module.bias)


class DualMomentumModel(SentenceEncoderMixin, MomentumMixin, FrozenParametersMixin, DualMomentumPreTrainedModel):
    """MoCo-BERT. Build it from a configuration, or from two pretrained encoders with :meth:`from_encoders`."""

    _lora_modules = ("encoder_x", "encoder_y")

    def __init__(
        self,
        config: DualMomentumConfig,
        encoder_x: PreTrainedModel | None = None,
        encoder_y: PreTrainedModel | None = None,
    ):
        super().__init__(config)
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
        # Memory queues of the momentum keys, one per language (Section 2). Under config.lora only the adapters are
        # trainable: the momentum encoders share the frozen base weights.
        self._add_lora()
        hidden_size = config.encoder_x.hidden_size
        self.momentum_contrast = MomentumContrast(
            self._key_modules(), config.queue_size, hidden_size, getattr(torch, config.queue_dtype)
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
        encoder_x: str | os.PathLike,
        encoder_y: str | os.PathLike | None = None,
        *,
        encoder_kwargs: dict | None = None,
        **config_kwargs,
    ) -> DualMomentumModel:
        """Build the model from pretrained encoders: Hub ids or local paths of any ``AutoModel``.

        ``encoder_y`` defaults to a second copy of ``encoder_x`` (ignored with ``shared_encoder=True``).
        ``config_kwargs`` set :class:`DualMomentumConfig` fields; ``encoder_kwargs`` go to
        ``AutoModel.from_pretrained``.
        """
        dropout = config_kwargs.get("dropout", DualMomentumConfig.dropout)

        def load(name_or_path):
            encoder_config = AutoConfig.from_pretrained(name_or_path)
            for name in DROPOUT_FIELDS:
                if dropout is not None and hasattr(encoder_config, name):
                    setattr(encoder_config, name, dropout)
            return AutoModel.from_pretrained(name_or_path, config=encoder_config, **(encoder_kwargs or {}))

        model_x = load(encoder_x)
        model_y = None if config_kwargs.get("shared_encoder") else load(encoder_y or encoder_x)
        config = DualMomentumConfig(
            encoder_x=model_x.config.to_dict(),
            encoder_y=model_y.config.to_dict() if model_y is not None else None,
            **config_kwargs,
        )
        return cls(config, encoder_x=model_x, encoder_y=model_y)

    # ----------------------------------------------------------------------------------------------------------------
    # Encoders

    @property
    def sentence_embedding_dimension(self) -> int:
        return self.config.encoder_x.hidden_size

    def query_encoder(self, language: str) -> PreTrainedModel:
        """The query encoder of ``language`` (a code, or the side ``x`` / ``y``); the one kept after training."""
        return self.encoder_y if self.language_side(language) == "y" else self.encoder_x

    def momentum_encoder(self, language: str) -> PreTrainedModel:
        """The EMA copy of ``language``'s query encoder, which makes that language's keys."""
        return self.momentum_contrast.momentum[f"encoder_{self.language_side(language)}"]

    def _key_modules(self) -> dict[str, PreTrainedModel]:
        """The query encoders by name (``encoder_x``, ``encoder_y``): the modules the momentum encoders follow."""
        sides = ["x"] if self.config.shared_encoder else ["x", "y"]
        return {f"encoder_{side}": self.query_encoder(side) for side in sides}

    @property
    def momentum_encoder_x(self) -> PreTrainedModel:
        return self.momentum_encoder("x")

    @property
    def momentum_encoder_y(self) -> PreTrainedModel:
        return self.momentum_encoder("y")

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
        encoder = modules[f"encoder_{self.language_side(side)}"]
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
        language: str = "x",
    ) -> torch.Tensor:
        """L2-normalised sentence vectors of the ``language`` query encoder, shape ``(batch, hidden_size)``."""
        side = self.language_side(language)
        return l2_normalize(self._key_vector(self._key_modules(), input_ids, attention_mask, token_type_ids, side))

    # ----------------------------------------------------------------------------------------------------------------
    # Forward and loss

    def forward(
        self,
        x_input_ids: torch.Tensor | None = None,
        x_attention_mask: torch.Tensor | None = None,
        x_token_type_ids: torch.Tensor | None = None,
        y_input_ids: torch.Tensor | None = None,
        y_attention_mask: torch.Tensor | None = None,
        y_token_type_ids: torch.Tensor | None = None,
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
        r"""Embed the x and y sentences; with both given and ``return_loss``, compute Eq. 3 (and Eq. 5).

        ``x_*`` / ``y_*`` are the tokenised sentences of each language (row i of x translates row i of y).
        ``example_ids`` (optional, one per row) travel with the keys into the queues, so that a query never meets
        its own example's key among its negatives.
        ``premise_*``, ``hypothesis_*`` and ``nli_labels`` feed the NLI head when the config has one.
        """
        h_x = h_y = None
        if x_input_ids is not None:
            h_x = self.get_sentence_embeddings(x_input_ids, x_attention_mask, x_token_type_ids, "x")
        if y_input_ids is not None:
            h_y = self.get_sentence_embeddings(y_input_ids, y_attention_mask, y_token_type_ids, "y")
        if not return_loss or h_x is None or h_y is None:
            return DualMomentumOutput(embeddings_x=h_x, embeddings_y=h_y)

        # keys: momentum encoders, stop-gradient (Figure 1)
        k_x = self.momentum_keys(x_input_ids, x_attention_mask, x_token_type_ids, side="x")
        k_y = self.momentum_keys(y_input_ids, y_attention_mask, y_token_type_ids, side="y")
        # Eq. 2: the positive key and the queue of the other language, no in-batch negatives. A queued key of the
        # same example (the translation itself, seen an epoch ago) is left out when example ids are given.
        tau, only_queue = self.config.temperature, {"in_batch_negatives": False, "query_ids": example_ids}
        xy = info_nce(h_x, k_y, tau, [self.queue_y.negatives()], **only_queue)  # L(x, y)
        yx = info_nce(h_y, k_x, tau, [self.queue_x.negatives()], **only_queue)  # L(y, x)
        loss = xy.loss + yx.loss  # Eq. 3

        loss_nli = None
        if self.config.nli_head and premise_input_ids is not None:
            if nli_labels is None:
                raise ValueError("premise and hypothesis inputs were given without nli_labels")
            side = self.config.nli_language
            u = self.get_sentence_embeddings(premise_input_ids, premise_attention_mask, premise_token_type_ids, side)
            v = self.get_sentence_embeddings(
                hypothesis_input_ids, hypothesis_attention_mask, hypothesis_token_type_ids, side
            )
            loss_nli = F.cross_entropy(self.nli_head(torch.cat([u, v, (u - v).abs()], dim=-1)).float(), nli_labels)
            loss = loss + self.config.nli_weight * loss_nli  # Eq. 5

        self.momentum_contrast.enqueue(k_x, k_y, example_ids, loss)  # in training with gradients, finite only
        return DualMomentumOutput(
            loss=loss,
            loss_xy=xy.loss.detach(),
            loss_yx=yx.loss.detach(),
            loss_nli=loss_nli.detach() if loss_nli is not None else None,
            accuracy_xy=xy.accuracy,
            accuracy_yx=yx.accuracy,
            positive_similarity=(xy.positive_similarity + yx.positive_similarity) / 2,
            negative_similarity=(xy.negative_similarity + yx.negative_similarity) / 2,
            queue_fill=self.momentum_contrast.fill(),
            embeddings_x=h_x,
            embeddings_y=h_y,
        )

    @property
    def momentum_coefficient(self) -> float:
        """m of Eq. 1 (``MomentumMixin`` runs the update once per optimizer step)."""
        return self.config.momentum


__all__ = ["DualMomentumModel", "DualMomentumOutput", "DualMomentumPreTrainedModel"]
