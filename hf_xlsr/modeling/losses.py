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


def _with_queue(scores: torch.Tensor, queries: torch.Tensor, queue: torch.Tensor | None) -> torch.Tensor:
    """Append the queries' scores with queued keys as extra negative columns (hf_xlsr's queue extension)."""
    if queue is None or not len(queue):
        return scores
    return torch.cat([scores, queries.float() @ queue.float().T], dim=1)


def in_batch_alignment_loss(
    u: torch.Tensor, v: torch.Tensor, queue_u: torch.Tensor | None = None, queue_v: torch.Tensor | None = None
) -> torch.Tensor:
    """Translation ranking with in-batch negatives, both directions, raw inner products (Mao et al., Eq. 5).

    ``-log softmax_k(u_j . v_k)[j] - log softmax_k(u_k . v_j)[j]`` for each pair j of the batch: the other
    ``n - 1`` sentences of each language are the negatives (plus ``queue_v`` / ``queue_u`` keys when given). The
    paper sums over pairs; this is the mean, so the loss does not grow with the batch size.
    """
    scores = u.float() @ v.float().T
    targets = torch.arange(len(scores), device=scores.device)
    forward = _with_queue(scores, u, queue_v)
    backward = _with_queue(scores.T, v, queue_u)
    return F.cross_entropy(forward, targets) + F.cross_entropy(backward, targets)


def in_batch_similarity_loss(u: torch.Tensor, v: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Align the in-batch similarity structure of the two languages (Mao et al., Eq. 6).

    With ``P_u[j1, j2] = softmax_k(u_j1 . u_k)[j2]`` and ``P_v`` likewise, the loss is
    ``-log cos(pi / 2 * (P_u - P_v))`` averaged over every pair ``(j1, j2)``: zero when the two languages see
    the batch the same way. Eq. 6 writes one index j for the pair (j1, j2); all pairs of the batch are used here.
    ``cos`` is clamped at ``eps`` because ``|P_u - P_v|`` can reach 1.
    """
    p_u = torch.softmax(u.float() @ u.float().T, dim=-1)
    p_v = torch.softmax(v.float() @ v.float().T, dim=-1)
    return -torch.log(torch.cos(torch.pi / 2 * (p_u - p_v)).clamp(min=eps)).mean()


def bag_of_words(token_ids: torch.Tensor, keep: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Token distribution of each sentence: ``q(w) = N_w / |S|`` over its kept tokens (Mao et al., Eq. 3).

    ``keep`` marks the content tokens (not padding or special tokens). A token that occurs twice gets twice the
    mass, so every row sums to 1 (the paper's footnote 4 sets ``N_w = 1``, which would not).
    """
    counts = torch.zeros(token_ids.shape[0], vocab_size, device=token_ids.device)
    counts.scatter_add_(1, token_ids, keep.float())
    return counts / counts.sum(dim=1, keepdim=True).clamp(min=1.0)


def unified_generative_target(other_sentence: torch.Tensor, masked_token: torch.Tensor, is_masked_side: torch.Tensor):
    """The label distribution of the unified generative task (Mao et al., Eq. 4).

    ``other_sentence`` is the bag of words of the translation (:func:`bag_of_words`, rows summing to 1). For a
    sentence in which ``masked_token`` was masked, half the mass goes to that token and half is spread over the
    translation's tokens; a token of the translation equal to the masked one receives both shares. For the other
    sentence the target is the translation's bag of words alone (Eq. 3). Rows sum to 1.
    """
    half = is_masked_side.float().unsqueeze(1) * 0.5
    target = other_sentence * (1.0 - half)
    return target.scatter_add(1, masked_token.unsqueeze(1), half)


def kl_to_target(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``D_KL(target || softmax(logits))``, averaged over rows, computed in float32."""
    return F.kl_div(torch.log_softmax(logits.float(), dim=-1), target, reduction="batchmean")


def additive_margin_retrieval_loss(
    source: torch.Tensor,
    target: torch.Tensor,
    margin: float,
    queue_source: torch.Tensor | None = None,
    queue_target: torch.Tensor | None = None,
) -> torch.Tensor:
    """Bitext retrieval with additive margin softmax, both directions (Yang et al., 2021, Section 4.2).

    ``L_sbr = -1/B sum_i log e^(phi(s_i, t_i) - m) / (e^(phi(s_i, t_i) - m) + sum_{j != i} e^(phi(s_i, t_j)))``
    with ``phi`` the inner product of the sentence vectors; ``L_tbr`` normalises over the sources instead.
    Returns ``L_br = L_sbr + L_tbr``. The margin is subtracted from the positive logit only; queued keys, when
    given, are extra negatives.
    """
    scores = source.float() @ target.float().T
    scores = scores - margin * torch.eye(len(scores), device=scores.device)
    targets = torch.arange(len(scores), device=scores.device)
    forward = _with_queue(scores, source, queue_target)
    backward = _with_queue(scores.T, target, queue_source)
    return F.cross_entropy(forward, targets) + F.cross_entropy(backward, targets)


def sentence_contrastive_loss(
    r_x: torch.Tensor, r_y: torch.Tensor, temperature: float = 1.0, queue: torch.Tensor | None = None
) -> torch.Tensor:
    """HICTL's sentence-level contrast (Wei et al., Eq. 2-4): for each pair, the other 2n - 2 sentences of the batch
    (both languages) are the negatives; scores are cosine similarities divided by ``temperature``.

    ``L_S = 1/n sum_i (L_sctl(x_i) + L_sctl(y_i))``. Queued keys (either language), when given, are extra
    negatives of every query.
    """
    r = F.normalize(torch.cat([r_x, r_y]).float(), dim=-1)
    n = len(r_x)
    scores = (r @ r.T) / temperature
    scores = scores.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=r.device), float("-inf"))  # not itself
    if queue is not None and len(queue):
        scores = torch.cat([scores, (r @ F.normalize(queue.float(), dim=-1).T) / temperature], dim=1)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(r.device)  # x_i <-> y_i
    return 2 * F.cross_entropy(scores, targets)


def sample_word_negatives(
    scores: torch.Tensor, in_bag: torch.Tensor, num_negatives: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Sample ``num_negatives`` words per row from outside its bag of words, without replacement, with
    probability ``softmax(scores)`` restricted to the words outside the bag (hard negatives; HICTL, Section 3.1).

    ``scores`` (n, V) are query-word similarities, ``in_bag`` (n, V) is True for the pair's own words (and any
    word that must never be a negative). Returns word ids, shape (n, num_negatives).
    """
    probabilities = torch.softmax(scores.detach().float(), dim=-1).masked_fill(in_bag, 0.0)
    available = int((~in_bag).sum(dim=1).min())
    if available < num_negatives:
        raise ValueError(f"only {available} words outside a bag of words, cannot sample {num_negatives} negatives")
    return torch.multinomial(probabilities, num_negatives, replacement=False, generator=generator)


def word_contrastive_loss(scores: torch.Tensor, in_bag: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
    """HICTL's word-level contrast (Wei et al., Eq. 5-6): every word of the pair's bag is a positive against the
    sampled negatives, ``-1/|B| sum_t log e^s(q, w_t) / (e^s(q, w_t) + sum_{w_j in S} e^s(q, w_j))``, averaged
    over the pairs. ``scores`` (n, V) are the query's scores with every word, ``in_bag`` marks the positives.
    """
    scores = scores.float()
    negative = torch.logsumexp(scores.gather(1, negatives), dim=1, keepdim=True)  # (n, 1)
    per_word = torch.logaddexp(scores, negative) - scores  # -log of the fraction, for every word as positive
    per_pair = (per_word * in_bag).sum(dim=1) / in_bag.sum(dim=1).clamp(min=1)
    return per_pair.mean()
