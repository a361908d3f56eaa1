"""Translation quality of a sequence-to-sequence model (HICTL's fine-tuning path): BLEU and chrF with sacreBLEU
when it is installed, otherwise chrF computed here (Popović, 2015), the same way sacreBLEU does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch


def _char_ngrams(text: str, n: int) -> Counter:
    text = "".join(text.split())  # chrF ignores whitespace
    return Counter(text[i : i + n] for i in range(len(text) - n + 1))


def chrf(hypotheses: Sequence[str], references: Sequence[str], order: int = 6, beta: float = 2.0) -> float:
    """Corpus chrF: character n-gram precision and recall (n = 1..order, whitespace ignored) from counts summed
    over the corpus, averaged over the orders present in both, combined into an F-beta score; 0..100."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    precisions, recalls = [], []
    for n in range(1, order + 1):
        matches = hypothesis_count = reference_count = 0
        for hypothesis, reference in zip(hypotheses, references, strict=True):
            h, r = _char_ngrams(hypothesis, n), _char_ngrams(reference, n)
            matches += sum((h & r).values())
            hypothesis_count += sum(h.values())
            reference_count += sum(r.values())
        if hypothesis_count and reference_count:
            precisions.append(matches / hypothesis_count)
            recalls.append(matches / reference_count)
    if not precisions:
        return 0.0
    precision, recall = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    if precision + recall == 0:
        return 0.0
    factor = beta**2
    return 100 * (1 + factor) * precision * recall / (factor * precision + recall)


def translation_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``{"bleu", "chrf"}`` by sacreBLEU if installed, else ``{"chrf"}`` by :func:`chrf`."""
    try:
        import sacrebleu
    except ImportError:
        return {"chrf": chrf(hypotheses, references)}
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
