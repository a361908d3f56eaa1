# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Translation quality of a sequence-to-sequence model (HICTL's fine-tuning path): BLEU and chrF by sacreBLEU
(``pip install 'hf_xlsr[eval]'``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def translation_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus ``{"bleu", "chrf"}`` of ``hypotheses`` against one reference each, by sacreBLEU."""
    try:
        import sacrebleu
    except ImportError as error:
        raise ImportError("translation scores need sacrebleu: pip install 'hf_xlsr[eval]'") from error
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return {
        "bleu": sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
        "chrf": sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
    }


@torch.no_grad()
def translate(
    model, tokenizer, sources: Sequence[str], max_new_tokens: int = 64, num_beams: int = 1, batch_size: int = 32
):
    """Greedy (or beam) translations of ``sources`` with ``model.generate``."""
    was_training = model.training
    model.eval()
    outputs = []
    for start in range(0, len(sources), batch_size):
        inputs = tokenizer(
            list(sources[start : start + batch_size]), padding=True, truncation=True, return_tensors="pt"
        )
        generated = model.generate(**inputs.to(model.device), max_new_tokens=max_new_tokens, num_beams=num_beams)
        outputs += tokenizer.batch_decode(generated, skip_special_tokens=True)
    model.train(was_training)
    return outputs
