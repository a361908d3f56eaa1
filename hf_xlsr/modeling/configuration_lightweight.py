# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Configuration of `LightweightDualTransformer` (Mao et al., 2021, "Lightweight Cross-Lingual Sentence
Representation Learning")."""

from typing import Literal

from huggingface_hub.dataclasses import strict
from transformers import BertConfig, PreTrainedConfig

from .configuration_dual_momentum import take_saved_fields, validate_languages, validate_queue

GENERATIVE_TASKS = ("ugt", "smlm", "xtr", "mlm", "mlm_xtr", "none")


@strict
class LightweightDualTransformerConfig(PreTrainedConfig):
    r"""A 2-layer transformer shared by both languages, trained from scratch (Table 1, Sections 3 and 4.1).

    ``generative_task`` picks the generative loss of Table 6: ``ugt`` (the paper's unified task, SMLM and XTR),
    ``smlm``, ``xtr``, ``mlm`` (BERT-style masking), ``mlm_xtr`` or ``none``; ``use_align`` / ``use_sim`` switch the
    two sentence-level contrastive losses of Table 7. Special token ids come from the tokenizer
    (`LightweightDualTransformer.from_tokenizer` fills them in).

    Attributes:
        vocab_size (`int`, *optional*, defaults to `50000`):
            shared SentencePiece vocabulary of the language pair.
        hidden_size (`int`, *optional*, defaults to `512`):
            d_h; also the dimension of the sentence vectors u, v.
        num_hidden_layers (`int`, *optional*, defaults to `2`):
            encoder layers (Table 5: 2 is the default).
        num_attention_heads (`int`, *optional*, defaults to `8`):
            attn_h.
        intermediate_size (`int`, *optional*, defaults to `1024`):
            d_fc, feed-forward filter size.
        hidden_dropout_prob (`float`, *optional*, defaults to `0.1`):
            dropout probability.
        attention_probs_dropout_prob (`float`, *optional*, defaults to `0.1`):
            Dropout probability of the attention weights.
        max_position_embeddings (`int`, *optional*, defaults to `256`):
            Longest input the position table holds, in tokens.
        layer_norm_eps (`float`, *optional*, defaults to `1e-12`):
            Epsilon of the layer norms.
        initializer_range (`float`, *optional*, defaults to `0.02`):
            Standard deviation of the normal initialisation of the weights.
        pooling (`Literal["mean"]`, *optional*, defaults to `"mean"`):
            sentence vector: mean of the final states (Section 3.1).
        languages (`list[str]`, *optional*, defaults to `None`):
            language codes (exports, model cards, per-language parts); first: pivot.
        pad_token_id (`int`, *optional*, defaults to `0`):
            The tokenizer's padding id.
        bos_token_id (`int`, *optional*, defaults to `None`):
            the tokenizer's [CLS].
        eos_token_id (`int`, *optional*, defaults to `None`):
            the tokenizer's [SEP].
        mask_token_id (`int`, *optional*, defaults to `None`):
            the tokenizer's [MASK].
        generative_task (`Literal["ugt", "smlm", "xtr", "mlm", "mlm_xtr", "none"]`, *optional*, defaults to `"ugt"`):
            Table 6.
        use_align (`bool`, *optional*, defaults to `True`):
            L_align, Eq. 5.
        use_sim (`bool`, *optional*, defaults to `True`):
            L_sim, Eq. 6.
        generative_weight (`float`, *optional*, defaults to `1.0`):
            weight of the generative loss in Eq. 7.
        align_weight (`float`, *optional*, defaults to `2.0`):
            weight of L_align in Eq. 7.
        sim_weight (`float`, *optional*, defaults to `2.0`):
            weight of L_sim in Eq. 7.
        align_temperature (`float`, *optional*, defaults to `0.0`):
            scores of L_align: 0 the paper's raw inner products (Eq. 5), above 0 cosine / align_temperature.
        queue_size (`int`, *optional*, defaults to `0`):
            0: the paper's in-batch L_align on raw inner products.
        queue_momentum (`float`, *optional*, defaults to `0.999`):
            EMA coefficient of the key encoder.
        queue_temperature (`float`, *optional*, defaults to `0.04`):
            tau of the queued loss (MoCo-BERT's best, its Table 4).
    """

    model_type = "xlsr_lightweight"

    # Architecture (Table 1, Section 4.1)
    vocab_size: int = 50000
    hidden_size: int = 512
    num_hidden_layers: int = 2
    num_attention_heads: int = 8
    intermediate_size: int = 1024
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 256
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02
    pooling: Literal["mean"] = "mean"
    languages: list[str] | None = None
    pad_token_id: int | None = 0
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    mask_token_id: int | None = None

    # Training tasks (Sections 3.2-3.4)
    generative_task: Literal["ugt", "smlm", "xtr", "mlm", "mlm_xtr", "none"] = "ugt"
    use_align: bool = True
    use_sim: bool = True
    generative_weight: float = 1.0
    align_weight: float = 2.0
    sim_weight: float = 2.0
    align_temperature: float = 0.0

    # A queue of momentum keys (hf_xlsr's extension, not in the paper): L_align becomes MoCo-style InfoNCE against
    # the momentum encoder's keys (positive, in-batch and queued), L2-normalised, at queue_temperature
    queue_size: int = 0
    queue_momentum: float = 0.999
    queue_temperature: float = 0.04

    @property
    def shared_encoder(self) -> bool:
        return True  # Section 3.1: the two encoders share every parameter

    def encoder_config(self) -> BertConfig:
        """The transformer encoder as a BERT configuration (no pooler, one token type)."""
        return BertConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings,
            layer_norm_eps=self.layer_norm_eps,
            initializer_range=self.initializer_range,
            type_vocab_size=1,
            pad_token_id=self.pad_token_id,
        )

    def __post_init__(self, **kwargs):
        take_saved_fields(self, kwargs)
        super().__post_init__(**kwargs)

    def validate_lightweight(self):
        validate_languages(self)
        validate_queue(self)
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of {self.num_attention_heads} heads")
        if self.align_temperature < 0:
            raise ValueError(f"align_temperature must be 0 (inner products) or positive, got {self.align_temperature}")


__all__ = ["GENERATIVE_TASKS", "LightweightDualTransformerConfig"]
