"""The device paths: bf16 autocast with float32 scores and a float32 EMA, the queue on the device, a checkpoint saved
and resumed there, and the blocked queue's gradient against float64, each on the accelerator.

Marked ``cuda``: they run on a GPU (``pytest -m cuda``, the first part of ``benchmarks/gpu_suite.py``) and are
skipped where there is none, unless ``HF_XLSR_TEST_DEVICE`` names a device (``cpu`` for ``gpu_suite.py --dry-run``).
"""

from __future__ import annotations

import math
import os

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum
from test_trainer import StopAt, make_trainer

from hf_xlsr.modeling.functional import info_nce, queue_logsumexp

pytestmark = pytest.mark.cuda


@pytest.fixture(scope="module")
def device() -> torch.device:
    name = os.environ.get("HF_XLSR_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else None)
    if name is None:
        pytest.skip("no CUDA device (HF_XLSR_TEST_DEVICE=cpu runs these tests on the CPU)")
    return torch.device(name)


def unit_rows(n: int, d: int, seed: int, device: torch.device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=generator), dim=-1).to(device)


def test_bf16_autocast_on_the_device_scores_in_float32(device):
    """MoCo-BERT's Eq. 2 with in-batch keys, 32 queries against 4,096 queued keys at tau = 0.04, under bf16 autocast
    on the device, against the formula in float64 on the host."""
    queries = unit_rows(32, 64, 0, device).requires_grad_()
    keys, queue = unit_rows(32, 64, 1, device), unit_rows(4096, 64, 2, device)
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = info_nce(queries, keys, 0.04, [(queue, None)]).loss
    (gradient,) = torch.autograd.grad(loss, queries)
    q = queries.detach().cpu().double().requires_grad_()
    logits = torch.cat([q @ keys.cpu().double().T, q @ queue.cpu().double().T], dim=1) / 0.04
    expected = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
    (expected_gradient,) = torch.autograd.grad(expected, q)
    assert loss.dtype == torch.float32 and loss.device.type == device.type
    assert loss.item() == pytest.approx(expected.item(), rel=5e-5)
    torch.testing.assert_close(gradient.cpu().double(), expected_gradient, rtol=1e-4, atol=1e-6)


def momentum_weights(model) -> dict[str, torch.Tensor]:
    """The momentum encoder's copies of the query encoder's parameters (float32 buffers), by parameter name."""
    copies = dict(model.momentum_encoder("en").named_buffers())
    return {name: copies[name] for name, _ in model.query_encoder("en").named_parameters()}


def test_the_ema_stays_float32_under_bf16_autocast_on_the_device(device, tokenizer, bible_pairs):
    model = tiny_dual_momentum(queue_size=64, momentum=0.9).to(device).train()
    batch = {name: tensor.to(device) for name, tensor in batch_of(tokenizer, bible_pairs).items()}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    model(**batch)  # the first batch only fills the empty queue (no negatives yet: no gradient)
    model.momentum_update()
    before = {name: weight.double().cpu() for name, weight in momentum_weights(model).items()}
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = model(**{name: tensor.flip(0) for name, tensor in batch.items()}).loss
    loss.backward()
    optimizer.step()
    live = {n: p.detach().double().cpu() for n, p in model.query_encoder("en").named_parameters()}
    model.momentum_update()
    for name, weight in momentum_weights(model).items():
        assert weight.dtype == torch.float32 and weight.device.type == device.type, name
        expected = 0.9 * before[name] + 0.1 * live[name]  # Eq. 1 in float64
        torch.testing.assert_close(weight.double().cpu(), expected, rtol=0, atol=1e-6)
    assert len(before) > 10 and any(not torch.equal(before[n], live[n]) for n in live)  # the step moved the weights


def test_the_queue_lives_on_the_device_and_holds_the_momentum_keys(device, tokenizer, bible_pairs):
    model = tiny_dual_momentum(queue_size=64).to(device).train()
    batch = {name: tensor.to(device) for name, tensor in batch_of(tokenizer, bible_pairs).items()}
    model(**batch)
    for queue in model.momentum_contrast.queues():
        assert queue.keys.device.type == device.type
    with torch.no_grad():
        keys = model.momentum_keys(batch["target_input_ids"], batch["target_attention_mask"], side="y")
    stored = model.queue_y.keys.dtype  # "auto": bfloat16 on a GPU
    assert stored == (torch.float32 if device.type == "cpu" else torch.bfloat16)
    torch.testing.assert_close(model.queue_y.keys[:4].float(), keys.to(stored).float(), rtol=1e-5, atol=1e-5)
    assert int(model.queue_y.filled) == 4


def test_a_checkpoint_saved_on_the_device_resumes_the_queue_and_momentum_encoder(
    device, tmp_path, tokenizer, bible_pairs
):
    """4 steps straight against 2 steps, a checkpoint, and 2 more in a new trainer: the same queue, pointer and
    weights (to the device's reduction order)."""
    options = {"max_steps": 4, "use_cpu": device.type == "cpu"}
    straight = make_trainer(
        tmp_path / "straight", tokenizer, bible_pairs, model=tiny_dual_momentum(queue_size=10), **options
    )
    straight.train()
    split = {"save_strategy": "steps", "save_steps": 2, **options}
    first = make_trainer(tmp_path / "split", tokenizer, bible_pairs, model=tiny_dual_momentum(queue_size=10), **split)
    first.add_callback(StopAt(2))
    first.train()
    resumed = make_trainer(
        tmp_path / "split", tokenizer, bible_pairs, model=tiny_dual_momentum(queue_size=10), **split
    )
    resumed.train(resume_from_checkpoint=str(tmp_path / "split" / "checkpoint-2"))
    assert next(resumed.model.parameters()).device.type == device.type
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    for name in a:
        if a[name].is_floating_point():
            torch.testing.assert_close(a[name], b[name], rtol=1e-4, atol=1e-5, msg=name)
        else:
            assert torch.equal(a[name], b[name]), name  # pointers, fill counts, ids
    assert int(b["momentum_contrast.momentum_updates"]) == 4 and int(b["momentum_contrast.queue_x.ptr"]) == 16 % 10


def test_the_blocked_queue_gradient_on_the_device_matches_float64(device):
    """41 float32 keys in blocks of 8 on the device, with meaning ids masking some: the log-sum-exp and the
    queries' gradient against the formula written out in float64 on the host."""
    generator = torch.Generator().manual_seed(3)
    queries = torch.randn(6, 16, generator=generator).to(device).requires_grad_()
    keys = torch.randn(41, 16, generator=generator).to(device)
    query_ids = torch.tensor([3, 0, -1, 9, 3, 5], device=device)
    key_ids = torch.randint(0, 6, (41,), generator=generator).to(device)
    lse, *_ = queue_logsumexp(queries, keys, 2.5, query_ids, key_ids, block_size=8)
    weights = torch.linspace(0.5, 2.0, 6, device=device)
    (gradient,) = torch.autograd.grad((lse * weights).sum(), queries)
    q, k = queries.detach().cpu().double(), keys.cpu().double()
    for i in range(6):
        kept = [j for j in range(41) if query_ids[i] < 0 or key_ids[j] != query_ids[i]]
        logits = torch.stack([2.5 * (q[i] @ k[j]) for j in kept])
        assert lse[i].item() == pytest.approx(torch.logsumexp(logits, 0).item(), rel=1e-5)
        p = torch.softmax(logits, 0)
        expected = float(weights[i]) * 2.5 * sum(p[n] * k[j] for n, j in enumerate(kept))
        torch.testing.assert_close(gradient[i].cpu().double(), expected, rtol=1e-4, atol=1e-5)
    assert math.isfinite(float(lse.sum()))


def test_a_bf16_queue_is_scored_in_bf16_products_with_float32_scores_on_the_device(device):
    """4,096 bfloat16 keys, 64 queries, scale 25, meaning ids masking some keys: the log-sum-exp and the queries'
    gradient against float64 on the host from the same bfloat16 keys. Products of bfloat16 queries that accumulate
    in float32 miss the best logit by under 8e-3 (4e-3 here); logits rounded to bfloat16 miss it by 1.5e-2."""
    generator = torch.Generator().manual_seed(4)
    queries = torch.nn.functional.normalize(torch.randn(64, 384, generator=generator), dim=-1).to(device)
    queries.requires_grad_()
    keys = torch.nn.functional.normalize(torch.randn(4096, 384, generator=generator), dim=-1).to(device)
    keys = keys.to(torch.bfloat16)
    query_ids, key_ids = torch.arange(64, device=device), torch.randint(0, 512, (4096,), device=device)
    lse, best, _, _ = queue_logsumexp(queries, keys, 25.0, query_ids, key_ids)
    (gradient,) = torch.autograd.grad(lse.sum(), queries)
    q = queries.detach().cpu().double().requires_grad_()
    logits = 25.0 * q @ keys.cpu().double().T
    logits = logits.masked_fill(query_ids.cpu()[:, None] == key_ids.cpu()[None, :], -math.inf)
    expected = torch.logsumexp(logits, dim=1)
    (expected_gradient,) = torch.autograd.grad(expected.sum(), q)
    assert lse.dtype == torch.float32
    torch.testing.assert_close(lse.cpu().double(), expected.detach(), rtol=0, atol=2e-3)
    torch.testing.assert_close(gradient.cpu().double(), expected_gradient, rtol=0, atol=5e-3)
    assert (best.cpu().double() - logits.max(dim=1).values.detach()).abs().max() < 8e-3


def test_an_auto_queue_is_bfloat16_on_the_device_and_float32_back_on_the_host(device):
    from hf_xlsr.modeling.queue import MemoryQueue

    queue = MemoryQueue(16, 8)
    assert queue.keys.dtype == torch.float32
    queue.to(device)
    assert queue.keys.dtype == (torch.float32 if device.type == "cpu" else torch.bfloat16)
    queue.to("cpu")
    assert queue.keys.dtype == torch.float32


def test_mining_searches_every_vector_on_the_device_as_a_float64_search_does(device):
    """`device_knn` on the device (chunks of 20,000 of 50,000 corpus vectors, 2,000 queries in blocks of 512) against
    the cosines written out in float64 on the host; on a GPU with the corpus's memory, ``auto`` picks it."""
    import numpy as np

    from hf_xlsr.evaluation.mining.device import device_knn, search_device
    from hf_xlsr.evaluation.mining.index import index_spec

    rng = np.random.default_rng(0)
    topics = rng.normal(size=(50, 64))
    corpus = (topics[rng.integers(0, 50, 50_000)] + 0.5 * rng.normal(size=(50_000, 64))).astype(np.float32)
    queries = (topics[rng.integers(0, 50, 2000)] + 0.5 * rng.normal(size=(2000, 64))).astype(np.float32)
    sims, ids = device_knn(queries, corpus, 4, device, block_size=512, chunk=20_000)
    unit_queries, unit_corpus = (
        v.astype(np.float64) / np.linalg.norm(v, axis=1, keepdims=True) for v in (queries, corpus)
    )
    cosines = unit_queries @ unit_corpus.T
    assert np.mean(ids == np.argsort(-cosines, axis=1)[:, :4]) > 0.99
    assert np.allclose(np.take_along_axis(cosines, ids, axis=1), sims, atol=1e-5)
    if device.type == "cuda":
        assert search_device(50_000, 64) is not None and index_spec(50_000, "auto", 64) == "Flat|k_factor=4"
