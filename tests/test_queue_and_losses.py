"""The memory queue, its undo record, the blocked queue scoring and InfoNCE, against references written
independently of the code under test (float64 loops, a deque FIFO)."""

from __future__ import annotations

import math
from collections import deque

import pytest
import torch
import torch.nn.functional as F
from conftest import batch_of, tiny_dual_momentum

from hf_xlsr.modeling.functional import info_nce, queue_logsumexp
from hf_xlsr.modeling.queue import MemoryQueue


@pytest.mark.parametrize("size", [1, 5, 8])
def test_queue_wraparound_matches_fifo_reference(size):
    """Batches of every size (including larger than the queue and a last partial one) against a deque FIFO."""
    queue = MemoryQueue(size, 2)
    reference = deque(maxlen=size)  # the newest `size` keys, oldest first
    written = 0
    for n in [3, 1, 4, size + 3, 2, 7, 1]:
        keys = torch.stack([torch.tensor([float(written + i), -float(written + i)]) for i in range(n)])
        queue.enqueue(keys, ids=torch.arange(written, written + n))
        for row in keys:
            reference.append(row.tolist())
        written += n
        # Key number i (counting from 0 over the whole run) lives in slot i % size while it is among the newest.
        for i in range(max(0, written - size), written):
            assert queue.keys[i % size].tolist() == [float(i), -float(i)]
            assert int(queue.ids[i % size]) == i
        assert int(queue.filled) == min(written, size)
        assert int(queue.ptr) == written % size
        keys, ids = queue.negatives()
        assert sorted(keys.tolist()) == sorted(reference)
        assert sorted(ids.tolist()) == sorted(int(k[0]) for k in reference)


def test_queue_never_returns_unwritten_slots():
    queue = MemoryQueue(8, 3)
    assert queue.negatives()[0].shape == (0, 3)
    queue.enqueue(torch.ones(3, 3))
    keys, ids = queue.negatives()
    assert torch.equal(keys, torch.ones(3, 3)) and ids.tolist() == [-1, -1, -1]  # -1: no example id given


def test_queue_rejects_wrong_dimension():
    with pytest.raises(ValueError, match="dimension 4 cannot enter a queue of dimension 3"):
        MemoryQueue(8, 3).enqueue(torch.ones(2, 4))


def test_fp16_queue_storage_halves_memory():
    queue = MemoryQueue(8, 4, dtype=torch.float16)
    queue.enqueue(torch.full((2, 4), 0.1))
    assert queue.keys.dtype == torch.float16 and queue.keys.element_size() == 2
    assert torch.allclose(queue.negatives()[0].float(), torch.full((2, 4), 0.1), atol=1e-3)


def queue_state(queue):
    return [t.clone() for t in (queue.keys, queue.ids, queue.ptr, queue.filled)]


def test_rollback_undoes_every_write_since_the_last_commit():
    """A skipped optimizer step of three micro-batches that wrap around a queue of 7 leaves no trace."""
    torch.manual_seed(0)
    queue = MemoryQueue(7, 2)
    queue.enqueue(torch.randn(5, 2), torch.arange(5))
    queue.commit()  # a good optimizer step
    before = queue_state(queue)
    for n in (2, 3, 1):  # the step that will be skipped
        queue.enqueue(torch.randn(n, 2), torch.arange(100, 100 + n))
    assert int(queue.ptr) == (5 + 6) % 7
    assert queue.rollback()
    for a, b in zip(before, queue_state(queue), strict=True):
        assert torch.equal(a, b)
    queue.enqueue(torch.randn(2, 2))
    queue.commit()
    assert queue.rollback() and int(queue.ptr) == 0  # nothing written since the commit: nothing to undo


def test_rollback_after_overwriting_the_whole_queue_empties_it():
    queue = MemoryQueue(4, 2)
    queue.enqueue(torch.ones(3, 2))
    queue.commit()
    queue.enqueue(torch.ones(3, 2))
    queue.enqueue(torch.ones(3, 2))  # 6 keys since the commit: more than the queue holds
    assert not queue.rollback()
    assert int(queue.filled) == 0 and int(queue.ptr) == 0


def reference_lse(queries, keys, scale, query_ids=None, key_ids=None):
    """log sum_j exp(scale q_i . k_j) over the keys not of the query's example, one term at a time, float64."""
    rows = []
    for i, q in enumerate(queries):
        terms = [
            scale * sum(a * b for a, b in zip(q, k, strict=True))
            for j, k in enumerate(keys)
            if query_ids is None or query_ids[i] < 0 or key_ids[j] != query_ids[i]
        ]
        top = max(terms)
        rows.append(top + math.log(sum(math.exp(t - top) for t in terms)))
    return rows


@pytest.mark.parametrize("block_size", [1, 7, 64])
@pytest.mark.parametrize("masked", [False, True])
def test_blocked_queue_logsumexp_and_its_gradient_match_float64(block_size, masked):
    """37 keys in blocks of 1, 7 (which does not divide 37) and 64; with example ids, a query's own keys leave."""
    torch.manual_seed(0)
    queries = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    keys = torch.randn(37, 6, dtype=torch.float64)
    query_ids = torch.tensor([3, 0, -1, 9, 3]) if masked else None
    key_ids = torch.randint(0, 6, (37,)) if masked else None
    lse, best, total, count = queue_logsumexp(queries, keys, 2.5, query_ids, key_ids, block_size=block_size)
    expected = reference_lse(queries.tolist(), keys.tolist(), 2.5, query_ids, key_ids)
    torch.testing.assert_close(lse, torch.tensor(expected, dtype=torch.float64), rtol=1e-12, atol=1e-12)
    weights = torch.linspace(0.5, 2.0, 5, dtype=torch.float64)
    (gradient,) = torch.autograd.grad((lse * weights).sum(), queries)
    # d lse_i / d q_i = scale * sum_j softmax_ij k_j, written out from the formula
    expected_gradient = torch.zeros_like(queries)
    for i in range(5):
        kept = [not masked or query_ids[i] < 0 or key_ids[j] != query_ids[i] for j in range(37)]
        logits = [2.5 * float(queries[i].detach() @ keys[j]) if kept[j] else -math.inf for j in range(37)]
        top = max(logits)
        p = [math.exp(t - top) for t in logits]
        expected_gradient[i] = weights[i] * 2.5 * sum(p[j] / sum(p) * keys[j] for j in range(37))
    torch.testing.assert_close(gradient, expected_gradient, rtol=1e-10, atol=1e-12)
    kept = [
        (i, j) for i in range(5) for j in range(37) if not masked or query_ids[i] < 0 or key_ids[j] != query_ids[i]
    ]
    assert int(count) == len(kept)
    assert float(total) == pytest.approx(sum(2.5 * float(queries[i].detach() @ keys[j]) for i, j in kept), rel=1e-10)
    best_expected = [max(2.5 * float(queries[i].detach() @ keys[j]) for i2, j in kept if i2 == i) for i in range(5)]
    torch.testing.assert_close(best, torch.tensor(best_expected, dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_blocked_scoring_of_a_float16_queue_matches_its_float32_values():
    """The value and the gradient for the queries, against float64 scoring of the float16 keys' own values."""
    torch.manual_seed(1)
    queries = F.normalize(torch.randn(4, 16), dim=-1).requires_grad_()
    keys = F.normalize(torch.randn(50, 16), dim=-1).half()
    weights = torch.linspace(0.5, 2.0, 4)
    lse = queue_logsumexp(queries, keys, 25.0, block_size=8)[0]
    (gradient,) = torch.autograd.grad((lse * weights).sum(), queries)
    exact = queries.detach().double().requires_grad_()
    reference = torch.logsumexp(exact @ keys.double().T * 25.0, dim=1)
    (expected,) = torch.autograd.grad((reference * weights.double()).sum(), exact)
    torch.testing.assert_close(lse.double(), reference.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(gradient.double(), expected, rtol=1e-4, atol=5e-6)
    assert keys.dtype == torch.float16  # the queue itself is untouched


def reference_info_nce(queries, positives, negatives_of, tau, margin=0.0):
    """-mean_i log e^((q.k_i - m)/tau) / (e^((q.k_i - m)/tau) + sum over negatives_of(i)), cosines, float64."""

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    total, hits, scored = 0.0, 0, 0  # accuracy over the queries that have a negative; NaN when none has
    for i, q in enumerate(queries):
        positive = (cos(q, positives[i]) - margin) / tau
        negatives = [cos(q, k) / tau for k in negatives_of(i)]
        total -= positive - math.log(math.exp(positive) + sum(math.exp(s) for s in negatives))
        if negatives:
            hits += all(cos(q, positives[i]) > cos(q, k) for k in negatives_of(i))
            scored += 1
    return total / len(queries), hits / scored if scored else math.nan


def unit(*shape):
    return F.normalize(torch.randn(*shape, dtype=torch.float64), dim=-1)


@pytest.mark.parametrize("n_queued", [0, 1, 9])
def test_info_nce_with_a_queue_alone_is_moco_bertss_eq2(n_queued):
    torch.manual_seed(1)
    q, k, queue = unit(5, 6), unit(5, 6), unit(n_queued, 6)
    terms = info_nce(q, k, 0.07, [(queue, None)], in_batch_negatives=False)
    loss, accuracy = reference_info_nce(q.tolist(), k.tolist(), lambda i: queue.tolist(), 0.07)
    assert terms.loss.item() == pytest.approx(loss, rel=1e-6, abs=1e-9)
    assert terms.accuracy.item() == pytest.approx(accuracy, nan_ok=True)


def test_info_nce_with_in_batch_keys_margin_queue_and_example_ids():
    """The queue extension of L_align / L_br: in-batch keys, a queue without the query's own example, a margin."""
    torch.manual_seed(2)
    q, k, queue = unit(4, 6), unit(4, 6), unit(11, 6)
    query_ids, queue_ids = torch.tensor([10, 11, 12, 13]), torch.tensor([11, 0, 1, 2, 12, 3, 4, 5, 6, 11, 7])

    def negatives_of(i):
        batch = [k[j].tolist() for j in range(4) if j != i]
        return batch + [queue[j].tolist() for j in range(11) if int(queue_ids[j]) != int(query_ids[i])]

    terms = info_nce(q, k, 0.05, [(queue, queue_ids)], margin=0.3, query_ids=query_ids)
    loss, accuracy = reference_info_nce(q.tolist(), k.tolist(), negatives_of, 0.05, margin=0.3)
    assert terms.loss.item() == pytest.approx(loss, rel=1e-6)
    assert terms.accuracy.item() == pytest.approx(accuracy)


def test_info_nce_over_both_languages_excludes_the_querys_own_key():
    """HICTL's L_S with a queue: positives y_i, negatives the other 2n - 2 keys of the batch and two queues."""
    torch.manual_seed(3)
    n = 4
    q, k_y, k_x, queue_x, queue_y = unit(n, 6), unit(n, 6), unit(n, 6), unit(3, 6), unit(5, 6)
    own = torch.zeros(n, 2 * n, dtype=torch.bool)
    own[torch.arange(n), n + torch.arange(n)] = True
    terms = info_nce(q, torch.cat([k_y, k_x]), 0.1, [(queue_x, None), (queue_y, None)], exclude=own)

    def negatives_of(i):
        others = [k_y[j].tolist() for j in range(n) if j != i] + [k_x[j].tolist() for j in range(n) if j != i]
        assert len(others) == 2 * n - 2
        return others + queue_x.tolist() + queue_y.tolist()

    loss, _ = reference_info_nce(q.tolist(), k_y.tolist(), negatives_of, 0.1)
    assert terms.loss.item() == pytest.approx(loss, rel=1e-6)


def test_info_nce_gradients_match_a_naive_float64_implementation():
    """Every form of the loss: the blocked queue gives the gradient of the loss written out term by term."""
    torch.manual_seed(4)
    q = unit(6, 5).requires_grad_()
    k, queue = unit(6, 5), unit(23, 5)
    ids, queue_ids = torch.arange(6), torch.randint(0, 8, (23,))
    for options in ({"in_batch_negatives": False}, {"margin": 0.2}, {"margin": 0.2, "query_ids": ids}):
        terms = info_nce(q, k, 0.07, [(queue, queue_ids)], **options)
        (gradient,) = torch.autograd.grad(terms.loss, q)
        naive = 0.0
        for i in range(6):
            logits = [(q[i] @ k[i] - options.get("margin", 0.0)) / 0.07]
            if options.get("in_batch_negatives", True):
                logits += [q[i] @ k[j] / 0.07 for j in range(6) if j != i]
            logits += [
                q[i] @ queue[j] / 0.07 for j in range(23) if "query_ids" not in options or int(queue_ids[j]) != i
            ]
            naive = naive - torch.log_softmax(torch.stack(logits), dim=0)[0] / 6
        (expected,) = torch.autograd.grad(naive, q)
        torch.testing.assert_close(gradient, expected, rtol=1e-8, atol=1e-9)


def test_unfilled_queue_slots_are_not_negatives(tokenizer, bible_pairs):
    """After one batch of 4 in a queue of 16, the loss uses exactly those 4 keys: not the 12 zero slots."""
    model = tiny_dual_momentum(queue_size=16, temperature=0.05)
    model.train()
    model(**batch_of(tokenizer, bible_pairs, offset=0))
    assert int(model.queue_y.filled) == 4
    queued_y = model.queue_y.keys[:4].clone()
    batch = batch_of(tokenizer, bible_pairs, offset=4)
    model.eval()  # deterministic and no enqueue: compare against the reference on the same state
    with torch.no_grad():
        out = model(**batch)
        q = model.get_sentence_embeddings(batch["source_input_ids"], batch["source_attention_mask"], language="en")
        k = model.momentum_keys(batch["target_input_ids"], batch["target_attention_mask"], side="y")
    loss, _ = reference_info_nce(q.double().tolist(), k.double().tolist(), lambda i: queued_y.double().tolist(), 0.05)
    assert out.loss_source_to_target.item() == pytest.approx(loss, rel=1e-5)
    with_zero_slots = queued_y.tolist() + [[1e-3] * 32] * 12
    wrong, _ = reference_info_nce(q.double().tolist(), k.double().tolist(), lambda i: with_zero_slots, 0.05)
    assert abs(wrong - loss) > 1e-3  # the check above would notice zero slots entering the denominator
