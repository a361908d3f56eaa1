"""Mixed precision (losses and softmax in float32), gradient checkpointing, and the refusal of sharded parameters
for models with a momentum encoder."""

from __future__ import annotations

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum
from test_queue_extension import build
from test_trainer import make_trainer

LORA = {"r": 4, "lora_alpha": 8}


def test_bf16_autocast_keeps_the_contrastive_loss_in_float32(tokenizer, bible_pairs):
    model = tiny_dual_momentum(queue_size=8, dropout=0.0)
    model.train()
    model(**batch_of(tokenizer, bible_pairs))  # fill the queue a little
    batch = batch_of(tokenizer, bible_pairs, offset=4)
    model.eval()
    linear = next(m for m in model.encoder_x.modules() if isinstance(m, torch.nn.Linear))
    dtypes = []
    linear.register_forward_hook(lambda module, args, output: dtypes.append(output.dtype))
    with torch.no_grad():
        full = model(**batch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            half = model(**batch)
    assert dtypes[0] == torch.float32 and dtypes[-1] == torch.bfloat16  # the encoders' matrix products run in bf16 ...
    assert half.loss.dtype == torch.float32 and half.loss_xy.dtype == torch.float32  # ... the loss does not
    assert half.loss.item() == pytest.approx(full.loss.item(), rel=0.05)


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
