# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Configurations of `HictlForPreTraining` and `HictlForTranslation` (Wei et al., ICLR 2021, "On
Learning Universal Representations Across Languages")."""

from typing import Literal

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, EncoderDecoderConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .configuration_dual_momentum import drop_moved_fields, take_saved_fields, validate_languages, validate_queue


@strict
class HictlConfig(PreTrainedConfig):
    r"""Hierarchical contrastive learning around an XLM-R-style masked LM (Sections 3.1 and 4.1).

    ``L = L_LM + L_S + L_W`` (Eq. 7): TLM on translation pairs (MLM on a sentence and its reordering when the data
    is monolingual), the sentence-level contrast of Eq. 2-4 and the word-level contrast of Eq. 5-6.

    Attributes:
        encoder (`PreTrainedConfig` or `dict`, *optional*, defaults to `None`):
            XLM-R-style encoder with a masked-LM head (AutoModelForMaskedLM).
        languages (`list[str]`, *optional*, defaults to `None`):
            language codes (exports, model cards, per-language parts); first: pivot.
        pooling (`Literal["cls", "mean"]`, *optional*, defaults to `"cls"`):
            g: the final state of the first token (Section 3.1). From scratch, every input's first state starts out the
            same and dropout noise between the two passes buries the difference, so L_S alone barely moves: warm up
            with TLM first (use_sentence_level=False), or use "mean", the mean of the final states, which L_S trains at
            once.
        projection_size (`int`, *optional*, defaults to `None`):
            f: linear projection of g(M(x)); None keeps the hidden size.
        use_lm (`bool`, *optional*, defaults to `True`):
            L_LM: TLM / MLM (Eq. 7).
        use_sentence_level (`bool`, *optional*, defaults to `True`):
            L_S (Eq. 4).
        use_word_level (`bool`, *optional*, defaults to `True`):
            L_W (Eq. 6).
        temperature (`float`, *optional*, defaults to `1.0`):
            s(q, k) / temperature in Eq. 2, 3, 5; the paper uses the plain cosine (1.0).
        num_negatives (`int`, *optional*, defaults to `512`):
            m, sampled negative words (Section 4.1).
        negative_sampling_temperature (`float`, *optional*, defaults to `0.05`):
            negatives are drawn with probability softmax(cos(q, e(w)) / this) over the words outside the pair: the
            paper samples "according to the normalized similarities" without a temperature; at 1.0 cosines in [-1, 1]
            give an almost uniform draw, so the default makes the negatives really hard (see sample_word_negatives).
        special_token_ids (`list[int]`, *optional*, defaults to `None`):
            the tokenizer's special ids: never words of a bag, never negatives.
        queue_size (`int`, *optional*, defaults to `0`):
            0: the paper's in-batch L_S.
        queue_momentum (`float`, *optional*, defaults to `0.999`):
            EMA coefficient of the key encoder.
        queue_temperature (`float`, *optional*, defaults to `0.04`):
            tau of the queued loss (MoCo-BERT's best, its Table 4).
    """

    model_type = "xlsr_hictl"
    sub_configs_defaults = {"encoder": SubConfigSpec(AutoConfig, model_type="xlm-roberta")}

    encoder: PreTrainedConfig | dict | None = None
    languages: list[str] | None = None
    pooling: Literal["cls", "mean"] = "cls"
    projection_size: int | None = None

    use_lm: bool = True
    use_sentence_level: bool = True
    use_word_level: bool = True
    temperature: float = 1.0
    num_negatives: int = 512
    negative_sampling_temperature: float = 0.05
    special_token_ids: list[int] | None = None

    # A queue of momentum keys (hf_xlsr's extension, not in the paper): L_S becomes MoCo-style InfoNCE against the
    # momentum encoder's keys (positive, the other 2n - 2 of the batch, both queues), at queue_temperature
    queue_size: int = 0
    queue_momentum: float = 0.999
    queue_temperature: float = 0.04

    @property
    def shared_encoder(self) -> bool:
        return True

    @property
    def hidden_size(self) -> int:
        return self.encoder.hidden_size

    @property
    def embedding_size(self) -> int:
        return self.projection_size or self.encoder.hidden_size

    def __post_init__(self, **kwargs):
        take_saved_fields(self, kwargs)
        super().__post_init__(**kwargs)

    def validate_hictl(self):
        validate_languages(self)
        validate_queue(self)
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not self.negative_sampling_temperature > 0:
            raise ValueError(
                f"negative_sampling_temperature must be positive, got {self.negative_sampling_temperature}"
            )
        if self.num_negatives < 1:
            raise ValueError(f"num_negatives must be at least 1, got {self.num_negatives}")
        if not (self.use_lm or self.use_sentence_level or self.use_word_level):
            raise ValueError("at least one of use_lm, use_sentence_level, use_word_level must be on")


@strict
class HictlTranslationConfig(EncoderDecoderConfig):
    r"""The HICTL encoder with a new shallow decoder (Section 3.2, Figure 2); the similarity between the encoder's
    first-token state and every target word is added to the decoder's logits at each step.

    Attributes:
        fusion (`bool`, *optional*, defaults to `True`):
            add the similarity to the logits (Section 3.2); False: the same decoder without it.
        fusion_temperature (`float`, *optional*, defaults to `1.0`):
            scale of the added similarity: cos(h_cls, e(w)) / fusion_temperature.
        decoder_layers (`int`, *optional*, defaults to `4`):
            "a shallower decoder with 4 identical layers" (Section 4.2).
    """

    model_type = "xlsr_hictl_translation"

    fusion: bool = True
    fusion_temperature: float = 1.0
    decoder_layers: int = 4

    def __post_init__(self, **kwargs):
        drop_moved_fields(self, kwargs)  # encoder_frozen_steps is a training argument now
        super().__post_init__(**kwargs)


__all__ = ["HictlConfig", "HictlTranslationConfig"]
