"""Mixed precision (losses and softmax in float32), gradient checkpointing, and the refusal of sharded parameters
for models with a momentum encoder."""

from __future__ import annotations

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum
from test_queue_extension import build
from test_trainer import make_trainer

from hf_xlsr.modeling.functional import (
    additive_margin_retrieval_loss,
    in_batch_alignment_loss,
    in_batch_similarity_loss,
    info_nce,
    sentence_contrastive_loss,
)

LORA = {"r": 4, "lora_alpha": 8}


def unit_rows(n: int, d: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=generator), dim=-1)


def reference_scores(name: str, a: torch.Tensor, b: torch.Tensor, queue: torch.Tensor) -> torch.Tensor:
    """Each loss written out in float64 from its paper's formula (independent of hf_xlsr's code)."""
    a, b, queue = a.double(), b.double(), queue.double()
    n, targets = len(a), torch.arange(len(a))
    if name == "info_nce_with_queue":  # MoCo-BERT Eq. 2 with in-batch keys, tau = 0.04
        logits = torch.cat([a @ b.T, a @ queue.T], dim=1) / 0.04
        return (torch.logsumexp(logits, dim=1) - logits[targets, targets]).mean()
    if name == "alignment":  # Mao et al. Eq. 5, both directions, means
        scores = a @ b.T
        return sum((torch.logsumexp(s, dim=1) - s[targets, targets]).mean() for s in (scores, scores.T))
    if name == "similarity":  # Mao et al. Eq. 6, summed
        difference = torch.softmax(a @ a.T, dim=-1) - torch.softmax(b @ b.T, dim=-1)
        return -torch.log(torch.cos(torch.pi / 2 * difference)).sum()
    if name == "additive_margin":  # CMLM Section 4.2, m = 0.3, both directions
        scores = a @ b.T - 0.3 * torch.eye(n, dtype=torch.float64)
        return sum((torch.logsumexp(s, dim=1) - s[targets, targets]).mean() for s in (scores, scores.T))
    r = torch.nn.functional.normalize(torch.cat([a, b]), dim=-1)  # HICTL Eq. 2-4: cosines, the other 2n - 2
    # sentences as negatives, tau = 1
    scores = (r @ r.T).masked_fill(torch.eye(2 * n, dtype=torch.bool), -torch.inf)
    partner = torch.cat([targets + n, targets])
    return 2 * (torch.logsumexp(scores, dim=1) - scores[torch.arange(2 * n), partner]).mean()


LOSSES = {
    "info_nce_with_queue": lambda a, b, queue: info_nce(a, b, 0.04, [(queue, None)]).loss,
    "alignment": lambda a, b, queue: in_batch_alignment_loss(a, b),
    "similarity": lambda a, b, queue: in_batch_similarity_loss(a * 3, b * 3),
    "additive_margin": lambda a, b, queue: additive_margin_retrieval_loss(a, b, 0.3),
    "sentence_contrast": lambda a, b, queue: sentence_contrastive_loss(a, b),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_bf16_autocast_keeps_contrastive_scores_and_gradients_in_float32(name):
    """n = 32 queries, 4,096 queued keys, tau = 0.04: under bf16 autocast every score is still computed in float32,
    so the loss and its gradient match a float64 reference to float32 precision (bf16 scores miss by 1e-3 to 1e-1)."""
    a, b, queue = unit_rows(32, 64, 0).requires_grad_(), unit_rows(32, 64, 1), unit_rows(4096, 64, 2)
    scale = 3.0 if name == "similarity" else 1.0  # L_sim on unnormalised vectors, as the lightweight model uses it
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = LOSSES[name](a, b, queue)
    (gradient,) = torch.autograd.grad(loss, a)
    reference_input = (a.detach().double() * scale).requires_grad_()
    expected = reference_scores(name, reference_input, b * scale, queue)
    (expected_gradient,) = torch.autograd.grad(expected, reference_input)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected.item(), rel=5e-5)
    torch.testing.assert_close(gradient.double(), expected_gradient * scale, rtol=1e-4, atol=1e-6)


def test_bf16_training_runs_through_the_trainer(tmp_path, tokenizer, bible_pairs):
    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=3, bf16=True)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(loss)) for loss in losses)
    assert int(trainer.model.momentum_updates) == 3


def checkpointing_case(kind, tokenizer, bible_pairs):
    """A model with dropout off, its queue partly filled, and one training batch."""
    if kind.startswith("dual_momentum"):
        model = tiny_dual_momentum(queue_size=8, dropout=0.0, lora=LORA if kind.endswith("lora") else None)
        model.train()
        model(**batch_of(tokenizer, bible_pairs))
        return model, batch_of(tokenizer, bible_pairs, offset=4)
    model, collator, rows, _ = build(kind, tokenizer)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model.train()
    model(**collator([rows[i] for i in range(4)]))
    return model, collator([rows[i] for i in range(4, 8)])


@pytest.mark.parametrize("kind", ["dual_momentum", "dual_momentum_lora", "lightweight", "cmlm", "hictl"])
def test_gradient_checkpointing_gives_the_same_loss_and_gradients(kind, tokenizer, bible_pairs):
    results = []
    for checkpointing in (False, True):
        model, batch = checkpointing_case(kind, tokenizer, bible_pairs)
        if checkpointing:
            model.activation_checkpointing_enable()
            assert model.is_activation_checkpointing
        torch.manual_seed(1)  # the same word negatives (HICTL) in both runs
        out = model(**batch)
        out.loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((out.loss.detach(), grads))
    (loss_a, grads_a), (loss_b, grads_b) = results
    torch.testing.assert_close(loss_a, loss_b)
    assert grads_a.keys() == grads_b.keys() and len(grads_a) > 8  # every used parameter, adapters alone under LoRA
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], atol=1e-6, rtol=1e-5)


def test_sharded_parameters_are_refused_for_momentum_models(tmp_path, tokenizer, bible_pairs):
    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=1)
    trainer.refuse_sharded_parameters()  # DDP / one process: fine
    trainer.is_fsdp_enabled = True  # what Trainer sets when accelerate shards parameters with FSDP (GPUs only)
    with pytest.raises(ValueError, match="needs whole parameters on every process, but FSDP shards them"):
        trainer.refuse_sharded_parameters()


def linear_output_dtypes(modules) -> tuple[set, list]:
    """The dtypes of every Linear layer's outputs in ``modules``, recorded by forward hooks (and the hooks)."""
    seen, hooks = set(), []
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, torch.nn.Linear):
                hooks.append(layer.register_forward_hook(lambda _, __, output: seen.add(output.dtype)))
    return seen, hooks


def queued_model_and_batch(kind, tokenizer, bible_pairs):
    if kind == "dual_momentum":
        return tiny_dual_momentum(queue_size=8), batch_of(tokenizer, bible_pairs)
    model, collator, rows, _ = build(kind, tokenizer)
    return model, collator([rows[i] for i in range(4)])


@pytest.mark.parametrize("kind", ["dual_momentum", "lightweight", "cmlm", "hictl"])
def test_under_a_callers_bf16_autocast_the_momentum_keys_are_bf16_too(kind, tokenizer, bible_pairs):
    """The Trainer's ``bf16=True`` autocasts the model's forward: the momentum encoder's forward inside it runs in
    that autocast (bfloat16 products), as the live encoder's does, not in float32 with the autocast switched off."""
    model, batch = queued_model_and_batch(kind, tokenizer, bible_pairs)
    model.train()
    live, hooks = linear_output_dtypes(model._key_modules().values())
    momentum, more = linear_output_dtypes(model.momentum_contrast.momentum.values())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = model(**batch)
    for hook in hooks + more:
        hook.remove()
    assert live == {torch.bfloat16} and momentum == {torch.bfloat16}
    assert output.loss.dtype == torch.float32 and torch.isfinite(output.loss)
    assert len(model.momentum_contrast.queues()[0]) > 0  # the bf16 keys entered the queue


def test_without_autocast_the_momentum_keys_stay_float32(tokenizer, bible_pairs):
    model, batch = queued_model_and_batch("dual_momentum", tokenizer, bible_pairs)
    momentum, hooks = linear_output_dtypes(model.momentum_contrast.momentum.values())
    model.train()(**batch)
    for hook in hooks:
        hook.remove()
    assert momentum == {torch.float32}
