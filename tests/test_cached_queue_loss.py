"""CachedMomentumQueueLoss: GradCache's two passes with the momentum queue. Its loss, its gradients and the queues
after a step are MomentumQueueLoss's on the same batch and queue, and a float64 model written out from the formula's
definition; it trains under SentenceTransformerTrainer with accumulation, two processes and resume."""

from __future__ import annotations

import copy

import pytest
import torch
from test_multiprocess import ROOT, launch_two_processes
from test_st_loss import encoder_dir, pairs, sentence_model, trainer_for  # noqa: F401 (fixtures)
from test_trainer import StopAt

from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueLoss

N, MINI_BATCH, TAU = 13, 5, 0.1  # 13 rows in mini-batches of 5, 5 and 3


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def unit(tensor: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(tensor, dim=-1)


def fill_queues(loss, seed: int) -> None:
    """24 queued unit keys per queue with meaning ids 0-7, some of them shared with the batch's rows."""
    generator = torch.Generator().manual_seed(seed)
    for queue in loss.momentum_contrast.queues():
        dim = queue.keys.shape[1]
        queue.enqueue(unit(torch.randn(24, dim, generator=generator)), torch.randint(0, 8, (24,), generator=generator))
        queue.commit()


def reference_loss(model, momentum, features, labels, queues, symmetric, in_batch):
    """The loss from its definition, row by row in float64: query i's positive is its own positive's momentum key;
    its negatives are the other keys of the batch (all of them, or only its own row's hard negatives), and the
    queue, minus every key of its own meaning (labels >= 0; hard negatives carry no meaning)."""
    embed = lambda m, f: unit(m(dict(f))["sentence_embedding"])  # noqa: E731
    columns = len(features) - 1
    anchors = embed(model, features[0])
    with torch.no_grad():
        keys = [embed(momentum, f) for f in features]
    candidates = torch.cat(keys[1:])
    candidate_meaning = [int(labels[j % N]) if labels is not None and j < N else -1 for j in range(N * columns)]

    def direction(queries, batch_keys, meanings, queue):
        total = 0.0
        for i in range(N):
            own = int(labels[i]) if labels is not None else -1
            scores = [queries[i] @ batch_keys[i]]
            for j in range(len(batch_keys)):
                if j == i or (not in_batch and j % N != i) or (own >= 0 and meanings[j] == own):
                    continue
                scores.append(queries[i] @ batch_keys[j])
            queued, queued_ids = queue
            scores += [
                queries[i] @ k for k, m in zip(queued, queued_ids.tolist(), strict=True) if labels is None or m != own
            ]
            logits = torch.stack(scores) / TAU
            total = total + torch.logsumexp(logits, 0) - logits[0]
        return total / N

    loss = direction(anchors, candidates, candidate_meaning, queues[1])
    if symmetric:
        positives = embed(model, features[1])
        meanings = [int(labels[j]) if labels is not None else -1 for j in range(N)]
        loss = (loss + direction(positives, keys[0], meanings, queues[0])) / 2
    return loss


CASES = {  # symmetric, columns, labels, in-batch negatives
    "symmetric pairs with meaning ids": (True, 2, True, True),
    "triplets, one direction, own row only": (False, 3, True, False),
    "symmetric triplets without ids": (True, 3, False, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_cached_loss_gives_the_plain_losss_value_gradients_and_queues(encoder_dir, pairs, case):  # noqa: F811
    symmetric, columns, with_labels, in_batch = CASES[case]
    options = {"queue_size": 40, "temperature": TAU, "symmetric": symmetric, "in_batch_negatives": in_batch}
    plain_model = without_dropout(sentence_model(encoder_dir))
    cached_model = copy.deepcopy(plain_model)
    plain = MomentumQueueLoss(plain_model, **options)
    cached = CachedMomentumQueueLoss(cached_model, mini_batch_size=MINI_BATCH, **options)
    for loss in (plain, cached):
        fill_queues(loss, seed=1)
    with torch.no_grad():  # the live model moves away from its momentum copy
        generator = torch.Generator().manual_seed(2)
        for p in plain_model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    cached_model.load_state_dict(plain_model.state_dict())
    texts = [pairs["anchor"][:N], pairs["positive"][:N], pairs["positive"][30 : 30 + N]][:columns]
    labels = torch.tensor([0, 1, 2, 0, 3, 4, 5, 1, 6, 7, 8, 9, 2]) if with_labels else None
    queues = [
        (q.negatives()[0].double().clone(), q.negatives()[1].clone()) if q is not None else None
        for q in (plain.momentum_contrast.queue_x, plain.momentum_contrast.queue_y)
    ]
    model64 = copy.deepcopy(plain_model).double()
    momentum64 = copy.deepcopy(plain.momentum_contrast.momentum["encoder"]).double()

    values = {}
    for name, loss, model in (("plain", plain, plain_model), ("cached", cached, cached_model)):
        loss.train()
        value = loss([model.preprocess(list(t)) for t in texts], labels)
        value.backward()
        values[name] = value.item()
    expected = reference_loss(
        model64, momentum64, [model64.preprocess(list(t)) for t in texts], labels, queues, symmetric, in_batch
    )
    expected.backward()

    assert values["cached"] == pytest.approx(values["plain"], rel=1e-5)
    assert values["cached"] == pytest.approx(expected.item(), rel=1e-5)
    scale = max(r.grad.abs().max().item() for r in model64.parameters() if r.grad is not None)
    for (name, p), q, r in zip(
        plain_model.named_parameters(), cached_model.parameters(), model64.parameters(), strict=True
    ):
        if p.grad is None:
            assert q.grad is None and r.grad is None, name
            continue
        torch.testing.assert_close(q.grad.double(), p.grad.double(), rtol=1e-5, atol=1e-5 * scale, msg=name)
        torch.testing.assert_close(q.grad.double(), r.grad, rtol=1e-4, atol=1e-4 * scale, msg=name)
    a, b = plain.momentum_contrast.state_dict(), cached.momentum_contrast.state_dict()
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-5, atol=1e-6, msg=name)
    assert int(b["queue_y.ptr"]) == (24 + N) % 40


def test_the_second_pass_replays_the_first_passs_dropout(encoder_dir, pairs):  # noqa: F811
    """With dropout on, the cached gradient is the gradient of the embeddings the loss was computed from: the same
    as back-propagating, with one graph, the mini-batches embedded in the same order from the same random state."""
    model = sentence_model(encoder_dir)
    assert any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
    loss = CachedMomentumQueueLoss(model, queue_size=40, temperature=TAU, mini_batch_size=MINI_BATCH)
    fill_queues(loss, seed=1)
    features = [model.preprocess(list(t)) for t in (pairs["anchor"][:N], pairs["positive"][:N])]
    reference = copy.deepcopy(model)
    loss.train()
    torch.manual_seed(5)
    value = loss(features)
    value.backward()

    from sentence_transformers.base.losses.gradcache import _create_minibatch

    reference.train()
    torch.manual_seed(5)
    live = [
        torch.cat(
            [
                unit(reference(_create_minibatch(f, b, min(b + MINI_BATCH, N)))["sentence_embedding"])
                for b in range(0, N, MINI_BATCH)
            ]
        )
        for f in features
    ]
    keys = [k.detach() for k in (loss._batch_keys(features, loss.momentum_keys))]  # eval mode: no random state
    from hf_xlsr.modeling.functional import info_nce

    queues = loss.momentum_contrast
    queue_x = (queues.queue_x.keys[:24], queues.queue_x.ids[:24])  # the queue before this step's keys
    queue_y = (queues.queue_y.keys[:24], queues.queue_y.ids[:24])
    expected = (info_nce(live[0], keys[0], TAU, [queue_y]).loss + info_nce(live[1], keys[1], TAU, [queue_x]).loss) / 2
    expected.backward()
    assert value.item() == pytest.approx(expected.item(), rel=1e-5)
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_trains_with_accumulation_one_ema_per_step_and_resumes_exactly(encoder_dir, pairs, tmp_path):  # noqa: F811
    """Batches of 8 in mini-batches of 3, two micro-batches per optimizer step: one EMA per step, two enqueues; 4
    steps straight equal 2 steps, a checkpoint, and 2 resumed."""

    def run(folder, stop=None, resume=None):
        model = sentence_model(encoder_dir)
        loss = CachedMomentumQueueLoss(model, queue_size=20, momentum=0.9, mini_batch_size=3)
        trainer = trainer_for(
            model,
            loss,
            pairs,
            folder,
            max_steps=4,
            per_device_train_batch_size=8,
            gradient_accumulation_steps=2,
            save_strategy="steps",
            save_steps=2,
        )
        if stop:
            trainer.add_callback(StopAt(stop))
        trainer.train(resume_from_checkpoint=resume)
        return model, loss

    straight_model, straight = run(tmp_path / "straight")
    contrast = straight.momentum_contrast
    assert int(contrast.momentum_updates) == 4 and int(contrast.enqueues) == 8
    assert int(contrast.queue_x.ptr) == (8 * 8) % 20
    run(tmp_path / "split", stop=2)
    model, resumed = run(tmp_path / "split", resume=str(tmp_path / "split" / "checkpoint-2"))
    a, b = contrast.state_dict(), resumed.momentum_contrast.state_dict()
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-5, atol=1e-6, msg=name)
    for (name, p), q in zip(straight_model.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.slow  # two accelerate processes: about 20 seconds
def test_two_processes_with_accumulation_hold_the_same_queue_and_weights(encoder_dir, tmp_path):  # noqa: F811
    script = ROOT / "tests" / "scripts" / "train_st_loss.py"
    result = launch_two_processes(script, encoder_dir, str(tmp_path), "cached")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    # 3 steps x 2 micro-batches x 4 rows x 2 processes
    assert int(rank0["queue_x.filled"]) == 48 and int(rank0["momentum_updates"]) == 3


def test_the_config_names_the_mini_batch(encoder_dir):  # noqa: F811
    loss = CachedMomentumQueueLoss(sentence_model(encoder_dir), queue_size=10, mini_batch_size=7)
    assert loss.get_config_dict()["mini_batch_size"] == 7
    with pytest.raises(ValueError, match="mini_batch_size must be at least 1"):
        CachedMomentumQueueLoss(sentence_model(encoder_dir), queue_size=10, mini_batch_size=0)
