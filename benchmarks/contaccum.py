"""ContAccum (Kim, Lee and Kang, "A Gradient Accumulation Method for Dense Retriever under Memory Constraint", NeurIPS
2024) as a sentence-transformers loss, a peer arm of ``bench_queue_vs_batch.py``.

Gradient accumulation over micro-batches with a dual memory bank: the query and the document representations of the
last ``bank_batches`` micro-batches, detached, as the trainable encoder produced them (no momentum encoder; the
authors' ``prev_cache``: the banks outlive an optimizer step). A micro-batch's loss is InfoNCE over its rows and the
banked ones, ``[q; Q] [d; D]^T``, each row's positive its own pair (the authors' ``LossCalculator``, written here from
its description); then the micro-batch joins the banks, the oldest leaving. hf_xlsr's harness trains every arm both
ways, so the loss is the mean of the rows' and the columns' cross-entropy, as MNRL's two directions are. With meaning
ids (``labels``, as `MomentumQueueLoss` takes them) the banks keep them too, and no pair of a row's own meaning but
its own is its negative.
"""

from __future__ import annotations

from collections import deque

import torch
import torch.nn.functional as F
from torch import nn


class ContAccumLoss(nn.Module):
    """ContAccum's loss for ``SentenceTransformerTrainer`` with ``gradient_accumulation_steps``: ``bank_batches``
    micro-batches of both columns kept (the authors keep ``cache_size`` x accumulation steps), cosine scores times
    ``scale``."""

    def __init__(self, model, bank_batches: int, scale: float = 20.0):
        super().__init__()
        self.model, self.scale = model, scale
        self.queries: deque[torch.Tensor] = deque(maxlen=bank_batches)
        self.documents: deque[torch.Tensor] = deque(maxlen=bank_batches)
        self.labels: deque[torch.Tensor] = deque(maxlen=bank_batches)

    def forward(self, sentence_features, labels: torch.Tensor | None = None) -> torch.Tensor:
        """The loss of one micro-batch of ``(query, document)`` pairs; ``labels`` of shape ``(batch,)``: each pair's
        meaning id, given with every micro-batch or with none."""
        if self.queries and (labels is not None) != bool(self.labels):
            raise ValueError("ContAccumLoss: meaning ids (labels) are given with every micro-batch or with none")
        query, document = (F.normalize(self.model(f)["sentence_embedding"], dim=-1) for f in sentence_features)
        queries = torch.cat([query, *(q.to(query.dtype) for q in self.queries)])
        documents = torch.cat([document, *(d.to(document.dtype) for d in self.documents)])
        scores = self.scale * queries @ documents.T
        target = torch.arange(len(scores), device=scores.device)
        if labels is not None:  # a pair of the row's own meaning is not its negative (its own pair stays the target)
            ids = torch.cat([labels, *self.labels]).to(scores.device)
            same = (ids[:, None] == ids[None, :]) & (target[:, None] != target[None, :])
            scores = scores.masked_fill(same, float("-inf"))
            self.labels.append(labels.detach())
        self.queries.append(query.detach())
        self.documents.append(document.detach())
        return (F.cross_entropy(scores, target) + F.cross_entropy(scores.T, target)) / 2

    @property
    def citation(self) -> str:
        return "Kim, Lee and Kang, NeurIPS 2024, arXiv:2406.12356"
