# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Configuration of `CmlmModel` (Yang et al., EMNLP 2021, "Universal Sentence Representation Learning with
Conditional Masked Language Model")."""

from typing import Literal

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .configuration_dual_momentum import take_saved_fields, validate_languages, validate_queue

# Schedules by what they do: "a->b" trains a for second_stage_step optimizer steps, then b; "+" trains both.
SCHEDULES = ("cmlm", "br", "cmlm+br", "cmlm->br", "cmlm->cmlm+br")
# Section 4.2's names. Table 4's caption swaps S1 and S2 (it calls CMLM -> BR "S1"); the text's are kept here.
SCHEDULE_ALIASES = {"s1": "cmlm+br", "s2": "cmlm->br", "s3": "cmlm->cmlm+br"}


@strict
class CmlmConfig(PreTrainedConfig):
    r"""Conditional MLM around any BERT-like masked language model shared by both sentences.

    ``schedule`` combines CMLM and bitext retrieval (BR) as in Section 4.2, named by what it does: ``cmlm+br`` both
    from the start (Section 4.2's S1), ``cmlm->br`` CMLM then BR alone (S2), ``cmlm->cmlm+br`` CMLM then CMLM + BR
    (S3, the paper's choice); ``cmlm`` / ``br`` train one loss. ``s1`` / ``s2`` / ``s3`` are accepted as aliases with
    Section 4.2's meaning (Table 4's caption swaps S1 and S2) and stored under the descriptive name. The second
    stage starts at the training arguments' ``second_stage_step`` (the paper's 1.5M steps, Section 4.4, where they
    set none). Defaults are the paper's (Sections 3, 4.2 and Appendix C).

    Attributes:
        encoder (`PreTrainedConfig` or `dict`, *optional*, defaults to `None`):
            a BERT-like encoder with a masked-LM head (AutoModelForMaskedLM).
        languages (`list[str]`, *optional*, defaults to `None`):
            language codes (exports, model cards, per-language parts); first: pivot.
        pooling (`Literal["mean", "max", "cls"]`, *optional*, defaults to `"mean"`):
            sentence vector v: average pooling (Section 2, footnote 1).
        num_projections (`int`, *optional*, defaults to `15`):
            N, projection spaces of v (Table 7).
        identity_projection (`bool`, *optional*, defaults to `True`):
            "one of the projections being the identity mapping".
        projection_multiplier (`int`, *optional*, defaults to `2`):
            P: FC(h, 2h, ReLU), FC(2h, 2h, ReLU), FC(2h, h) per space (Appendix C).
        br_margin (`float`, *optional*, defaults to `0.3`):
            additive margin m.
        br_weight (`float`, *optional*, defaults to `0.2`):
            alpha in L = L_CMLM + alpha L_br.
        br_temperature (`float`, *optional*, defaults to `0.0`):
            0: phi is the raw inner product of the sentence vectors (Section 4.2); > 0: the cosine of the L2-normalised
            vectors, every logit (the positive's less the margin) divided by it.
        schedule (`str`, *optional*, defaults to `"cmlm->cmlm+br"`):
            How CMLM and bitext retrieval combine over training (Section 4.2), as described above: `"cmlm"`, `"br"`,
            `"cmlm+br"`, `"cmlm->br"`, `"cmlm->cmlm+br"`, or the aliases `"s1"`, `"s2"`, `"s3"`.
        queue_size (`int`, *optional*, defaults to `0`):
            0: the paper's in-batch L_br on raw inner products.
        queue_momentum (`float`, *optional*, defaults to `0.999`):
            EMA coefficient of the key encoder.
        queue_temperature (`float`, *optional*, defaults to `0.04`):
            tau of the queued loss (MoCo-BERT's best, its Table 4); br_margin is on cosines.
        nli_head (`bool`, *optional*, defaults to `False`):
            3-way classifier on [u, v, |u - v|, u * v].
        nli_num_labels (`int`, *optional*, defaults to `3`):
            Classes of the NLI head (entailment, neutral, contradiction).
        pcr_components (`int`, *optional*, defaults to `0`):
            components removed per language at inference (the paper removes 1); 0: off.
    """

    model_type = "xlsr_cmlm"
    sub_configs_defaults = {"encoder": SubConfigSpec(AutoConfig, model_type="bert")}

    # Encoder (Section 2)
    encoder: PreTrainedConfig | dict | None = None
    languages: list[str] | None = None
    pooling: Literal["mean", "max", "cls"] = "mean"

    # Conditional MLM (Section 2, Section 3, Appendix C)
    num_projections: int = 15
    identity_projection: bool = True
    projection_multiplier: int = 2

    # Bitext retrieval and schedules (Section 4.2)
    br_margin: float = 0.3
    br_weight: float = 0.2
    br_temperature: float = 0.0
    schedule: Literal["cmlm", "br", "cmlm+br", "cmlm->br", "cmlm->cmlm+br", "s1", "s2", "s3"] = "cmlm->cmlm+br"

    # A queue of momentum keys (hf_xlsr's extension, not in the paper): L_br becomes an additive-margin InfoNCE
    # against the momentum encoder's keys (positive, in-batch and queued), L2-normalised, at queue_temperature
    queue_size: int = 0
    queue_momentum: float = 0.999
    queue_temperature: float = 0.04

    # Cross-lingual NLI fine-tuning (Section 4.3)
    nli_head: bool = False
    nli_num_labels: int = 3

    # Principal-component removal (Section 5.2)
    pcr_components: int = 0

    @property
    def shared_encoder(self) -> bool:
        return True  # one encoder embeds both sentences and both languages

    @property
    def hidden_size(self) -> int:
        return self.encoder.hidden_size

    def __post_init__(self, **kwargs):
        take_saved_fields(self, kwargs)
        super().__post_init__(**kwargs)
        self.schedule = SCHEDULE_ALIASES.get(self.schedule, self.schedule)

    def stage_losses(self, stage: int) -> tuple[bool, bool]:
        """Which losses are on, ``(cmlm, br)``, in ``stage`` 1 or 2 of the schedule."""
        stages = self.schedule.split("->")
        losses = set(stages[min(stage, len(stages)) - 1].split("+"))
        return "cmlm" in losses, "br" in losses

    def validate_cmlm(self):
        validate_languages(self)
        if self.num_projections < 1:
            raise ValueError(f"num_projections must be at least 1, got {self.num_projections}")
        if self.br_temperature < 0:
            raise ValueError(f"br_temperature must be 0 (inner products) or positive, got {self.br_temperature}")
        validate_queue(self)


__all__ = ["SCHEDULES", "SCHEDULE_ALIASES", "CmlmConfig"]
