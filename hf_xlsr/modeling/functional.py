# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Loss functions shared by the hf_xlsr models: pure functions of tensors, no state.

Every contrastive score is computed in float32, whatever the autocast dtype of the encoders, so that the softmax
over hundreds of thousands of negatives stays exact: the score functions run with autocast switched off
(`float32_scores`), since under ``torch.autocast`` a ``.float()`` cast is undone by the next matrix product.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

QUEUE_BLOCK_SIZE = 2048  # queued keys scored at once on the CPU: memory is O(batch x block), never O(batch x queue)
GPU_BLOCK_ELEMENTS = 2**26  # on a GPU, a block's float32 logits take at most 256 MiB: few kernels per queue


def queue_block_size(queries: int, device: torch.device) -> int:
    """Queued keys scored at once: `QUEUE_BLOCK_SIZE` on the CPU (a block of keys, 3 MiB in float32 at d = 384,
    stays in cache between its two products: the logits, and the queries' gradient); on a GPU as many as keep a
    block's float32 logits within `GPU_BLOCK_ELEMENTS`, so that a queue of 65,536 keys against a batch of 1,024 is
    one block and its scoring a dozen kernels, not a dozen per 2,048 keys."""
    if device.type == "cpu":
        return QUEUE_BLOCK_SIZE
    return max(QUEUE_BLOCK_SIZE, GPU_BLOCK_ELEMENTS // max(queries, 1))


def float32_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` in float32 (float64 when ``a`` is). When ``b`` is stored in float16 / bfloat16 on a GPU, ``a`` is
    rounded to ``b``'s dtype and the products accumulate in float32 (``torch.mm(..., out_dtype=torch.float32)``):
    tensor-core speed, and scores still in float32. Elsewhere ``b`` is converted to ``a``'s dtype."""
    if b.dtype in (torch.float16, torch.bfloat16) and a.dtype == torch.float32 and a.device.type == "cuda":
        return torch.mm(a.to(b.dtype), b, out_dtype=torch.float32)
    return a @ b.to(a.dtype)


def at_least_float32(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` in float32, or float64 when it is (scores are never computed in half precision)."""
    return tensor if tensor.dtype == torch.float64 else tensor.float()


def float32_scores(function: Callable) -> Callable:
    """Run ``function`` with autocast off on the device of its first tensor argument: its inputs are cast to float32
    inside, and under ``torch.autocast(bfloat16)`` every matrix product would otherwise run in bfloat16 again."""

    @functools.wraps(function)
    def without_autocast(*args, **kwargs):
        device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        with torch.autocast(device_type=device, enabled=False):
            return function(*args, **kwargs)

    return without_autocast


class ContrastiveTerms(NamedTuple):
    """A contrastive loss and the statistics that tell whether it is learning."""

    loss: torch.Tensor
    accuracy: torch.Tensor  # fraction of queries whose positive outscores every negative
    positive_similarity: torch.Tensor  # mean cosine between a query and its positive
    negative_similarity: torch.Tensor  # mean cosine between a query and its negatives (NaN: no negatives)


class _QueueLogSumExp(torch.autograd.Function):
    """``log sum_j exp(q_i . k_j * scale)`` over a queue, block by block, with the gradient for ``q`` accumulated in
    the same pass (an online softmax, as in memory-efficient attention): nothing of size batch x queue is ever held,
    and the queue itself is not saved for the backward pass."""

    @staticmethod
    @float32_scores
    def forward(ctx, queries, keys, scale, query_ids, key_ids, block_size):
        q = at_least_float32(queries) * scale  # scaled once: each block's logits come straight from the matmul
        n = q.shape[0]
        running_max, total = q.new_full((n,), -math.inf), q.new_zeros(n)  # also each query's best logit
        weighted = q.new_zeros(q.shape) if ctx.needs_input_grad[0] else None  # sum_j e^(logit_ij - max_i) k_j
        logit_sum, count = q.new_zeros(()), q.new_zeros(())
        lowest = torch.finfo(q.dtype).min  # the shift of a row with nothing but masked keys so far: e^-inf = 0
        masking = query_ids is not None and key_ids is not None
        block_size = block_size or queue_block_size(n, q.device)
        on_cpu = q.device.type == "cpu"  # each block converted once, its logits written into one buffer
        buffer = q.new_empty(n, min(block_size, len(keys))) if on_cpu else None
        for start in range(0, keys.shape[0], block_size):
            block = keys[start : start + block_size]  # in its storage dtype: the whole queue is never converted
            if on_cpu:
                block = block.to(q.dtype)  # a no-op for float32 keys; one copy of a float16 block for both products
                logits = torch.mm(q, block.T, out=buffer[:, : len(block)])
            else:
                logits = float32_product(q, block.T)
            if masking:  # a query's own example is not its negative
                same = (query_ids[:, None] == key_ids[None, start : start + block_size]) & (query_ids[:, None] >= 0)
                logits.masked_fill_(same, -math.inf)
                count += (~same).sum()
                logit_sum += logits.masked_fill(same, 0.0).sum()
            else:
                count += logits.numel()
                logit_sum += logits.sum()
            new_max = torch.maximum(running_max, logits.amax(dim=1))
            shift = new_max.clamp(min=lowest)
            rescale = (running_max - shift).exp_()  # e^-inf = 0 for rows that had nothing yet
            weights = logits.sub_(shift[:, None]).exp_()  # in place: the block's logits are not needed any more
            total.mul_(rescale).add_(weights.sum(dim=1))
            if weighted is not None:
                weighted.mul_(rescale[:, None]).add_(float32_product(weights, block))
            running_max = new_max
        lse = torch.where(torch.isfinite(running_max), running_max, 0.0) + torch.log(total)  # -inf: all masked
        if weighted is not None:  # d lse_i / d q_i = scale * sum_j softmax_ij k_j
            inverse = torch.where(total > 0, scale / total, 0.0)
            ctx.save_for_backward((weighted * inverse[:, None]).to(queries.dtype))
        best = running_max.to(queries.dtype)
        ctx.mark_non_differentiable(best, logit_sum, count)
        return lse.to(queries.dtype), best, logit_sum.to(queries.dtype), count

    @staticmethod
    def backward(ctx, grad_lse, grad_best, grad_sum, grad_count):
        (gradient,) = ctx.saved_tensors
        return grad_lse[:, None] * gradient, None, None, None, None, None


def queue_logsumexp(
    queries: torch.Tensor,
    keys: torch.Tensor,
    scale: float,
    query_ids: torch.Tensor | None = None,
    key_ids: torch.Tensor | None = None,
    block_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Score ``queries`` ``(n, d)`` against queued ``keys`` ``(K, d)`` (any storage dtype) in blocks.

    Returns ``(lse, best, logit_sum, count)``: ``lse[i] = log sum_j exp(scale * q_i . k_j)`` (differentiable in
    ``queries``), and without gradient the best logit of each query, the sum of all logits and their number.
    Keys whose id equals the query's id (ids >= 0) are left out. ``block_size`` keys are scored at once
    (`queue_block_size` when None). A float16 / bfloat16 queue on a GPU is scored with products in its dtype that
    accumulate in float32; elsewhere each block is converted to float32 on its own. The full queue never is.
    """
    return _QueueLogSumExp.apply(queries, keys, scale, query_ids, key_ids, block_size)


@float32_scores
def info_nce(
    queries: torch.Tensor,
    keys: torch.Tensor,
    temperature: float,
    queues: Sequence[tuple[torch.Tensor, torch.Tensor | None]] = (),
    *,
    in_batch_negatives: bool = True,
    margin: float = 0.0,
    exclude: torch.Tensor | None = None,
    query_ids: torch.Tensor | None = None,
    key_ids: torch.Tensor | None = None,
    offset: int = 0,
) -> ContrastiveTerms:
    """InfoNCE of L2-normalised queries against keys and queues of keys, scored by cosine / temperature.

    Query i's positive is ``keys[offset + i]`` (``offset``: the first query's row in its batch, when a batch's
    queries are scored in chunks against all its keys); the other rows of ``keys`` are its in-batch negatives (unless
    ``in_batch_negatives`` is False or ``exclude[i, j]`` is True), and every key of every ``(keys, ids)`` pair in
    ``queues`` is a negative. A key whose id (``key_ids`` in the batch, the queue's ids) equals the query's
    ``query_ids`` entry, ids >= 0, is never a negative: it is a translation of the query's own meaning, in any
    language. The mean over queries of

    ```text
    L_i = -log e^((q_i.k_i - m)/tau) / (e^((q_i.k_i - m)/tau) + sum_{j != i} e^(q_i.k_j/tau) + sum_Q e^(q_i.Q/tau))
    ```

    With ``in_batch_negatives=False`` this is MoCo-BERT's Eq. 2 (the queue alone holds the negatives); with a
    margin m it is an additive-margin softmax. Queues are scored block by block (`queue_logsumexp`) in their
    storage dtype, without a float32 copy or a batch x queue matrix of logits. The statistics read nothing back from
    the device: ``negative_similarity`` is NaN when no query has a negative, and ``accuracy`` counts only the
    queries that have one (NaN when none has, as on the first step of a queue-only loss).
    """
    q, k = at_least_float32(queries), at_least_float32(keys)
    scale = 1.0 / temperature
    cosines = q @ k.T  # (n, m): query i's positive in column offset + i
    rows = torch.arange(len(q), device=q.device)
    columns = rows + offset
    positive = columns[:, None] == torch.arange(len(k), device=q.device)[None, :]
    negative = ~positive if in_batch_negatives else torch.zeros_like(positive)
    if exclude is not None:
        negative &= ~exclude
    if query_ids is not None and key_ids is not None:  # the query's own meaning, in any language
        negative &= (query_ids[:, None] != key_ids[None, :]) | (query_ids[:, None] < 0)
    logits = (cosines - margin * positive.float()) * scale
    total = torch.logsumexp(logits.masked_fill(~(positive | negative), -math.inf), dim=1)
    with torch.no_grad():
        best = cosines.masked_fill(~negative, -2.0).max(dim=1).values
        negative_sum, negative_count = torch.where(negative, cosines, 0.0).sum(), negative.sum()  # no host sync
    for queue, queue_ids in queues:
        if not len(queue):
            continue
        queue_lse, queue_best, queue_sum, queue_count = queue_logsumexp(q, queue, scale, query_ids, queue_ids)
        total = torch.logaddexp(total, queue_lse)
        with torch.no_grad():
            best = torch.maximum(best, queue_best / scale)
            negative_sum, negative_count = negative_sum + queue_sum / scale, negative_count + queue_count
    loss = (total - logits[rows, columns]).mean()
    with torch.no_grad():
        positive_cosine = cosines[rows, columns]
        correct = (positive_cosine > best).float()
        if not any(len(queue) for queue, _ in queues):  # a query with no negative at all has no accuracy (NaN)
            correct = correct.masked_fill(~negative.any(dim=1), math.nan)
        accuracy = correct.nanmean()
        negative_similarity = negative_sum / negative_count  # 0 / 0 = NaN without negatives
    return ContrastiveTerms(loss, accuracy, positive_cosine.mean(), negative_similarity)


def other_rows_of_the_same_meaning(ids: torch.Tensor | None, n: int, device: torch.device) -> torch.Tensor:
    """``(n, n)``, True where two different rows of a batch share a meaning id (ids >= 0): translations of one
    sentence (multi-way data), which must not be each other's negatives. All False without ids."""
    if ids is None:
        return torch.zeros(n, n, dtype=torch.bool, device=device)
    same = (ids[:, None] == ids[None, :]) & (ids[:, None] >= 0)
    return same & ~torch.eye(n, dtype=torch.bool, device=device)


@float32_scores
def in_batch_alignment_loss(
    u: torch.Tensor, v: torch.Tensor, ids: torch.Tensor | None = None, temperature: float = 0.0
) -> torch.Tensor:
    """Translation ranking with in-batch negatives, both directions, raw inner products (Mao et al., Eq. 5).

    ``-log softmax_k(u_j . v_k)[j] - log softmax_k(u_k . v_j)[j]`` for each pair j of the batch: the other
    ``n - 1`` sentences of each language are the negatives, but those of the row's own meaning (``ids``). Eq. 5
    sums over pairs; the official code (``nn.CrossEntropyLoss()``) takes the mean, as here, so the loss does not
    grow with the batch size. ``temperature`` 0 scores by the raw inner product (the paper's); above 0, by the
    cosine divided by it (MultipleNegativesRankingLoss's scores at ``scale = 1 / temperature``). It is
    `additive_margin_retrieval_loss` without a margin.
    """
    return additive_margin_retrieval_loss(u, v, 0.0, ids, temperature)


@float32_scores
def in_batch_similarity_loss(u: torch.Tensor, v: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Align the in-batch similarity structure of the two languages (Mao et al., Eq. 6).

    With ``P_u[j1, j2] = softmax_k(u_j1 . u_k)[j2]`` and ``P_v`` likewise, the loss is
    ``-sum_{j1, j2} log cos(pi / 2 * (P_u - P_v))``: zero when the two languages see the batch the same way.
    Eq. 6 writes one index j for the pair (j1, j2); every pair of the batch is used, and the terms are summed, not
    averaged, as in the paper and the official code (``torch.sum``): a mean over the B x B entries would weigh
    L_sim about B^2 times less against L_align (1/16,384 at B = 128), switching it off in effect.
    ``cos`` is clamped at ``eps`` because ``|P_u - P_v|`` can reach 1. It is computed as ``1 - 2 sin^2(x / 2)``: for
    the small differences of a trained model, ``cos`` itself would round to 1 in float32 and lose the loss.
    """
    p_u = torch.softmax(u.float() @ u.float().T, dim=-1)
    p_v = torch.softmax(v.float() @ v.float().T, dim=-1)
    cos_minus_one = -2 * torch.sin(torch.pi / 4 * (p_u - p_v)) ** 2
    return -torch.log1p(cos_minus_one.clamp(min=eps - 1)).sum()


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

    ``other_sentence`` is the bag of words of the translation (`bag_of_words`, rows summing to 1). For a
    sentence in which ``masked_token`` was masked, half the mass goes to that token and half is spread over the
    translation's tokens; a token of the translation equal to the masked one receives both shares. For the other
    sentence the target is the translation's bag of words alone (Eq. 3). Rows sum to 1.
    """
    half = is_masked_side.float().unsqueeze(1) * 0.5
    target = other_sentence * (1.0 - half)
    return target.scatter_add(1, masked_token.unsqueeze(1), half)


def masked_token_loss(
    states: torch.Tensor, labels: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of the masked tokens (``labels`` >= 0, -100 elsewhere) and the share predicted right, with the
    vocabulary ``head`` applied to the masked positions' ``states`` only: the same loss as scoring every position and
    ignoring the others, without a ``(batch, length, vocabulary)`` tensor (a third of the positions at most)."""
    masked = labels != -100
    if not bool(masked.any()):
        zero = states.sum() * 0.0
        return zero, zero.detach()
    logits = head(states[masked]).float()
    targets = labels[masked]
    with torch.no_grad():
        accuracy = (logits.argmax(-1) == targets).float().mean()
    return F.cross_entropy(logits, targets), accuracy


@float32_scores
def kl_to_target(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``D_KL(target || softmax(logits))``, averaged over rows, computed in float32."""
    return F.kl_div(torch.log_softmax(logits.float(), dim=-1), target, reduction="batchmean")


@float32_scores
def additive_margin_retrieval_loss(
    source: torch.Tensor,
    target: torch.Tensor,
    margin: float,
    ids: torch.Tensor | None = None,
    temperature: float = 0.0,
) -> torch.Tensor:
    """Bitext retrieval with additive margin softmax, both directions (Yang et al., 2021, Section 4.2).

    ``L_sbr = -1/B sum_i log e^(phi(s_i, t_i) - m) / (e^(phi(s_i, t_i) - m) + sum_{j != i} e^(phi(s_i, t_j)))``
    with ``phi`` the inner product of the sentence vectors (``temperature`` 0, the paper's), or with ``temperature``
    > 0 the cosine of L2-normalised vectors and every logit, the margin's included, divided by it
    (``(cos(s_i, t_i) - m) / temperature``, additive-margin softmax's usual scale); ``L_tbr`` normalises over the
    sources instead. Returns ``L_br = L_sbr + L_tbr``. The margin is subtracted from the positive logit only; rows of
    the same meaning (``ids``: translations of one sentence) are not each other's candidates.
    """
    if temperature > 0:
        source, target = F.normalize(source.float(), dim=-1), F.normalize(target.float(), dim=-1)
    scores = source.float() @ target.float().T
    scores = scores - margin * torch.eye(len(scores), device=scores.device)
    if temperature > 0:
        scores = scores / temperature
    scores = scores.masked_fill(other_rows_of_the_same_meaning(ids, len(scores), scores.device), -math.inf)
    targets = torch.arange(len(scores), device=scores.device)
    return F.cross_entropy(scores, targets) + F.cross_entropy(scores.T, targets)


@float32_scores
def sentence_contrastive_loss(
    source: torch.Tensor, target: torch.Tensor, temperature: float = 1.0, ids: torch.Tensor | None = None
) -> torch.Tensor:
    """HICTL's sentence-level contrast (Wei et al., Eq. 2-4) of the sentence representations ``source`` and
    ``target`` (the paper's r_x and r_y, row i of one translating row i of the other): for each pair, the other
    2n - 2 sentences of the batch (both languages) are the negatives, but those of the pair's own meaning (``ids``);
    scores are cosine similarities divided by ``temperature``.

    ``L_S = 1/n sum_i (L_sctl(x_i) + L_sctl(y_i))``.
    """
    r = F.normalize(torch.cat([source, target]).float(), dim=-1)
    n = len(source)
    scores = (r @ r.T) / temperature
    both = None if ids is None else torch.cat([ids, ids])
    partner = torch.eye(2 * n, dtype=torch.bool, device=r.device).roll(n, dims=1)  # x_i <-> y_i
    ruled_out = torch.eye(2 * n, dtype=torch.bool, device=r.device)  # not itself
    ruled_out |= other_rows_of_the_same_meaning(both, 2 * n, r.device) & ~partner  # nor its own meaning
    scores = scores.masked_fill(ruled_out, float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(r.device)  # x_i <-> y_i
    return 2 * F.cross_entropy(scores, targets)


def sample_word_negatives(
    similarities: torch.Tensor,
    in_bag: torch.Tensor,
    num_negatives: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sample ``num_negatives`` words per row from outside its bag of words, without replacement, with
    probability ``softmax(similarities / temperature)`` restricted to the words outside the bag: "sampled according
    to the normalized similarities between q and the embeddings of the words" (HICTL, Section 3.1).

    ``similarities`` (n, V) are query-word cosines, ``in_bag`` (n, V) is True for the pair's own words (and any
    word that must never be a negative). The temperature sets how hard the negatives are: cosines lie in [-1, 1],
    so at 1.0 the softmax is nearly uniform and the "hard" negatives are random words; at 0.05 a word 0.1 more
    similar to the query is e^2 = 7.4 times more likely. Returns word ids, shape (n, num_negatives).
    """
    probabilities = torch.softmax(similarities.detach().float() / temperature, dim=-1).masked_fill(in_bag, 0.0)
    available = int((~in_bag).sum(dim=1).min())
    if available < num_negatives:
        raise ValueError(f"only {available} words outside a bag of words, cannot sample {num_negatives} negatives")
    return torch.multinomial(probabilities, num_negatives, replacement=False, generator=generator)


@float32_scores
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
