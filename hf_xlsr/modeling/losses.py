"""Loss functions shared by the hf_xlsr models: pure functions of tensors, no state.

Every contrastive score is computed in float32, whatever the autocast dtype of the encoders, so that the softmax
over hundreds of thousands of negatives stays exact.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F


class ContrastiveTerms(NamedTuple):
    """A contrastive loss and the statistics that tell whether it is learning."""

    loss: torch.Tensor
    accuracy: torch.Tensor  # fraction of queries whose positive outscores every negative
    positive_similarity: torch.Tensor  # mean cosine between a query and its positive
    negative_similarity: torch.Tensor | None  # mean cosine between a query and its negatives (None: no negatives)


def info_nce(
    queries: torch.Tensor, positive_keys: torch.Tensor, negative_keys: torch.Tensor, temperature: float
) -> ContrastiveTerms:
    """InfoNCE with one positive per query and a shared set of negatives (MoCo-BERT, Eq. 2).

    ``L(x, y) = -log exp(h_x . h_y / tau) / sum_{i=0..K} exp(h_x . h_{y_i} / tau)`` where ``h_{y_0} = h_y`` is the
    positive key of each query and ``h_{y_1..K}`` are ``negative_keys`` (the memory queue). Inputs are L2-normalised
    ``(n, d)`` queries and positives and ``(K, d)`` negatives; ``K`` may be 0. The mean over the ``n`` queries is
    returned.
    """
    queries, positive_keys, negative_keys = queries.float(), positive_keys.float(), negative_keys.float()
    positive = (queries * positive_keys).sum(dim=-1, keepdim=True)  # (n, 1)
    negative = queries @ negative_keys.T  # (n, K)
    logits = torch.cat([positive, negative], dim=1) / temperature
    targets = torch.zeros(queries.shape[0], dtype=torch.long, device=queries.device)
    loss = F.cross_entropy(logits, targets)
    with torch.no_grad():
        # A query counts as correct when its positive strictly beats the best negative.
        best_negative = negative.max(dim=1).values if negative.shape[1] else positive.new_full((len(positive),), -2.0)
        accuracy = (positive.squeeze(1) > best_negative).float().mean()
        negative_similarity = negative.mean() if negative.numel() else None
    return ContrastiveTerms(loss, accuracy, positive.detach().mean(), negative_similarity)
