"""The memory queue and InfoNCE against references written independently of the code under test."""

from __future__ import annotations

import math
from collections import deque

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum

from hf_xlsr.modeling.losses import info_nce
from hf_xlsr.modeling.queue import MemoryQueue


@pytest.mark.parametrize("size", [1, 5, 8])
def test_queue_wraparound_matches_fifo_reference(size):
    """Batches of every size (including larger than the queue and a last partial one) against a deque FIFO."""
    queue = MemoryQueue(size, 2)
    reference = deque(maxlen=size)  # the newest `size` keys, oldest first
    written = 0
    for n in [3, 1, 4, size + 3, 2, 7, 1]:
        keys = torch.stack([torch.tensor([float(written + i), -float(written + i)]) for i in range(n)])
        queue.enqueue(keys)
        for row in keys:
            reference.append(row.tolist())
        written += n
        # Key number i (counting from 0 over the whole run) lives in slot i % size while it is among the newest.
        for i in range(max(0, written - size), written):
            assert queue.keys[i % size].tolist() == [float(i), -float(i)]
        assert int(queue.filled) == min(written, size)
        assert int(queue.ptr) == written % size
        assert sorted(queue.negatives().tolist()) == sorted(reference)


def test_queue_never_returns_unwritten_slots():
    queue = MemoryQueue(8, 3)
    assert queue.negatives().shape == (0, 3)
    queue.enqueue(torch.ones(3, 3))
    assert queue.negatives().shape == (3, 3)
    assert torch.equal(queue.negatives(), torch.ones(3, 3))


def test_queue_rejects_wrong_dimension():
    with pytest.raises(ValueError, match="dimension 4 cannot enter a queue of dimension 3"):
        MemoryQueue(8, 3).enqueue(torch.ones(2, 4))


def test_fp16_queue_storage_halves_memory():
    queue = MemoryQueue(8, 4, dtype=torch.float16)
    queue.enqueue(torch.full((2, 4), 0.1))
    assert queue.keys.dtype == torch.float16
    assert queue.keys.element_size() == 2
    assert torch.allclose(queue.negatives().float(), torch.full((2, 4), 0.1), atol=1e-3)


def reference_info_nce(q, k_pos, negatives, tau):
    """Eq. 2 of the MoCo-BERT paper, one query at a time, in float64 Python arithmetic."""
    losses, hits = [], []
    for i in range(len(q)):
        pos = sum(a * b for a, b in zip(q[i], k_pos[i], strict=True)) / tau
        negs = [sum(a * b for a, b in zip(q[i], n, strict=True)) / tau for n in negatives]
        denominator = math.exp(pos) + sum(math.exp(s) for s in negs)
        losses.append(-math.log(math.exp(pos) / denominator))
        hits.append(all(pos > s for s in negs))
    return sum(losses) / len(losses), sum(hits) / len(hits)


@pytest.mark.parametrize("n_negatives", [0, 1, 9])
def test_info_nce_matches_float64_reference(n_negatives):
    torch.manual_seed(1)
    q = torch.nn.functional.normalize(torch.randn(5, 6), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(5, 6), dim=-1)
    negatives = torch.nn.functional.normalize(torch.randn(n_negatives, 6), dim=-1)
    terms = info_nce(q, k, negatives, temperature=0.07)
    loss, accuracy = reference_info_nce(q.double().tolist(), k.double().tolist(), negatives.double().tolist(), 0.07)
    assert terms.loss.item() == pytest.approx(loss, rel=1e-5, abs=1e-6)
    assert terms.accuracy.item() == pytest.approx(accuracy)


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
        q = model.get_sentence_embeddings(batch["x_input_ids"], batch["x_attention_mask"], language="x")
        k = model._embed(model.momentum_encoder_y, batch["y_input_ids"], batch["y_attention_mask"])
    loss, _ = reference_info_nce(q.double().tolist(), k.double().tolist(), queued_y.double().tolist(), 0.05)
    assert out.loss_xy.item() == pytest.approx(loss, rel=1e-5)
    with_zero_slots = queued_y.tolist() + [[0.0] * 32] * 12
    wrong, _ = reference_info_nce(q.double().tolist(), k.double().tolist(), with_zero_slots, 0.05)
    assert abs(wrong - loss) > 1e-3  # the check above would notice zero slots entering the denominator
