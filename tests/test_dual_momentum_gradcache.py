"""DualMomentumModel with ``mini_batch_size`` (GradCache inside the model's forward): its loss, every weight's
gradient and the queues after a step are the uncached model's and a float64 model written out from Eq. 2 and 3;
dropout is replayed; the replay keeps the forward's bf16 autocast; it trains under XlsrTrainer with accumulation and
under two DDP processes as the uncached model does."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum, tiny_encoder_config
from test_multiprocess import ROOT, launch_two_processes, run_config

N, MINI_BATCH, TAU = 13, 5, 0.1  # 13 rows in mini-batches of 5, 5 and 3
SCALE = 0.5  # the loss is scaled before its backward pass, as gradient accumulation over two micro-batches does


def fill_queues(model, seed: int = 0) -> None:
    """12 committed unit keys per queue with meaning ids 0-5, which the batch's ids (0-12) meet."""
    generator = torch.Generator().manual_seed(seed)
    for queue in (model.queue_x, model.queue_y):
        keys = torch.nn.functional.normalize(torch.randn(12, queue.keys.shape[1], generator=generator), dim=-1)
        queue.enqueue(keys, torch.randint(0, 6, (12,), generator=generator))
        queue.commit()


def reference_loss(model, batch, ids) -> torch.Tensor:
    """Eq. 3 from its definition, row by row in float64: query i of one side against its translation's momentum key
    and the other side's queued keys whose meaning is not its own."""
    double = copy.deepcopy(model).double()

    def side(name, prefix):
        return double._embed(name, batch[f"{prefix}_input_ids"], batch[f"{prefix}_attention_mask"])

    h_x, h_y = side("x", "source"), side("y", "target")
    with torch.no_grad():
        k_x, k_y = (
            torch.nn.functional.normalize(
                double._key_vector(
                    double.momentum_contrast.momentum, batch[f"{p}_input_ids"], batch[f"{p}_attention_mask"], side=s
                ),
                dim=-1,
            )
            for s, p in (("x", "source"), ("y", "target"))
        )

    def direction(queries, keys, queue):
        written = int(queue.filled)
        queued, queued_ids = queue.keys[:written].double(), queue.ids[:written].tolist()
        total = 0.0
        for i in range(N):
            scores = [queries[i] @ keys[i]] + [
                queries[i] @ k for k, m in zip(queued, queued_ids, strict=True) if m != int(ids[i])
            ]
            logits = torch.stack(scores) / TAU
            total = total + torch.logsumexp(logits, 0) - logits[0]
        return total / N

    loss = direction(h_x, k_y, model.queue_y) + direction(h_y, k_x, model.queue_x)
    (SCALE * loss).backward()
    return loss, {name: p.grad for name, p in double.named_parameters() if p.grad is not None}


def step(model, batch, ids):
    model.train()
    model.zero_grad()
    output = model(**batch, example_ids=ids)
    (SCALE * output.loss).backward()
    return output, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("shared", [True, False], ids=["one shared encoder", "one encoder per language"])
def test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3(tokenizer, bible_pairs, shared):
    plain = tiny_dual_momentum(shared_encoder=shared, queue_size=32, temperature=TAU, dropout=0.0)
    fill_queues(plain)
    cached = copy.deepcopy(plain)
    cached.mini_batch_size = MINI_BATCH
    batch = batch_of(tokenizer, bible_pairs, n=N)
    ids = torch.arange(N)
    expected_loss, expected_grads = reference_loss(plain, batch, ids)
    out_plain, grads_plain = step(plain, batch, ids)
    out_cached, grads_cached = step(cached, batch, ids)
    assert set(grads_cached) == set(grads_plain) == set(expected_grads)
    torch.testing.assert_close(out_cached.loss, out_plain.loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(out_cached.loss.double(), expected_loss.detach(), rtol=1e-4, atol=1e-6)
    for name, grad in grads_cached.items():
        torch.testing.assert_close(grad, grads_plain[name], rtol=1e-4, atol=1e-6, msg=name)
        torch.testing.assert_close(grad.double(), expected_grads[name], rtol=1e-3, atol=1e-5, msg=name)
    for queue in ("queue_x", "queue_y"):
        a, b = getattr(cached, queue), getattr(plain, queue)
        torch.testing.assert_close(a.keys, b.keys, rtol=1e-5, atol=1e-6)
        assert torch.equal(a.ids, b.ids) and int(a.filled) == int(b.filled) == 12 + N
    torch.testing.assert_close(out_cached.source_embeddings, out_plain.source_embeddings, rtol=1e-5, atol=1e-6)
    assert not out_cached.source_embeddings.requires_grad


def test_dropout_of_each_mini_batch_is_replayed_in_the_backward_pass(tokenizer, bible_pairs):
    """With dropout, the backward pass must see the masks the loss saw: the gradient equals that of the same
    mini-batch forwards, in the same order from the same random state, kept in one graph."""
    model = tiny_dual_momentum(shared_encoder=True, queue_size=32, temperature=TAU, dropout=0.3)
    model.mini_batch_size = MINI_BATCH
    fill_queues(model)
    reference = copy.deepcopy(model)
    batch = batch_of(tokenizer, bible_pairs, n=N)
    ids = torch.arange(N)
    torch.manual_seed(7)
    output, grads = step(model, batch, ids)

    reference.train()
    side_inputs = {"x": "source", "y": "target"}
    keys = {
        s: reference.momentum_keys(batch[f"{p}_input_ids"], batch[f"{p}_attention_mask"], side=s)
        for s, p in side_inputs.items()
    }
    torch.manual_seed(7)
    h = {
        s: torch.cat(
            [
                reference._embed(
                    s, batch[f"{p}_input_ids"][b : b + MINI_BATCH], batch[f"{p}_attention_mask"][b : b + MINI_BATCH]
                )
                for b in range(0, N, MINI_BATCH)
            ]
        )
        for s, p in side_inputs.items()
    }
    xy, yx = reference._contrast(h["x"], h["y"], keys["x"], keys["y"], ids)
    (SCALE * (xy.loss + yx.loss)).backward()
    torch.testing.assert_close(output.loss, (xy.loss + yx.loss).detach(), rtol=1e-5, atol=1e-7)
    for name, parameter in reference.named_parameters():
        if parameter.grad is not None:
            torch.testing.assert_close(grads[name], parameter.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_the_replay_runs_in_the_forwards_bf16_autocast(tokenizer, bible_pairs):
    model = tiny_dual_momentum(shared_encoder=True, queue_size=32, dropout=0.0)
    model.mini_batch_size = MINI_BATCH
    fill_queues(model)
    dtypes = []
    hook = model.encoder_x.encoder.layer[0].attention.self.query.register_forward_hook(
        lambda module, inputs, output: dtypes.append((torch.is_grad_enabled(), output.dtype))
    )
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = model(**batch_of(tokenizer, bible_pairs, n=N), example_ids=torch.arange(N))
    output.loss.backward()  # outside the autocast, as the Trainer's backward is
    hook.remove()
    replayed = [dtype for with_grad, dtype in dtypes if with_grad]
    assert len(replayed) == 6 and set(replayed) == {torch.bfloat16}  # 3 mini-batches x 2 sides
    assert {dtype for with_grad, dtype in dtypes if not with_grad} == {torch.bfloat16}


def test_the_cached_model_refuses_the_nli_head_and_a_mini_batch_below_one(tmp_path):
    from hf_xlsr.trainers import XlsrTrainingArguments

    with pytest.raises(ValueError, match="mini_batch_size does not combine with nli_head"):
        tiny_dual_momentum(nli_head=True).mini_batch_size = 4
    with pytest.raises(ValueError, match="mini_batch_size must be at least 1"):
        tiny_dual_momentum().mini_batch_size = 0
    with pytest.raises(ValueError, match="mini_batch_size must be at least 1, got 0"):
        XlsrTrainingArguments(output_dir=str(tmp_path), mini_batch_size=0)


def test_mini_batches_are_a_training_argument_not_a_configuration_field(tmp_path):
    """GradCache is how a run trains, not what the model is: the trainer hands the argument to the model, a saved
    configuration holds no ``mini_batch_size``, and one an earlier version saved loads with a warning."""
    from hf_xlsr import DualMomentumConfig
    from hf_xlsr.trainers import XlsrTrainer, XlsrTrainingArguments

    model = tiny_dual_momentum(shared_encoder=True, queue_size=24)
    args = XlsrTrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, mini_batch_size=4)
    XlsrTrainer(model=model, args=args)
    assert model.mini_batch_size == 4 and model.uses_gradcache
    model.save_pretrained(tmp_path / "saved")
    assert "mini_batch_size" not in json.loads((tmp_path / "saved" / "config.json").read_text())
    with pytest.warns(FutureWarning, match="mini_batch_size 64 ignored: it is a training argument now"):
        old = DualMomentumConfig(encoder_x=tiny_encoder_config(), mini_batch_size=64)
    assert "mini_batch_size" not in old.to_dict()


def test_the_trainer_runs_a_cached_model_under_ddp_without_the_search_for_unused_parameters(tmp_path, tokenizer):
    """The cached model declares GradCache (``uses_gradcache``): every weight gets its gradient in the backward hook,
    so ``XlsrTrainer`` turns DDP's search for unused parameters off, and refuses a run that turns it on."""
    from hf_xlsr.trainers import XlsrTrainer, XlsrTrainingArguments

    def arguments(**options):
        return XlsrTrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, **options)

    cached = tiny_dual_momentum(shared_encoder=True, queue_size=24)
    trainer = XlsrTrainer(model=cached, args=arguments(mini_batch_size=4), tokenizers=tokenizer)
    assert cached.uses_gradcache and trainer.args.ddp_find_unused_parameters is False
    plain = tiny_dual_momentum(shared_encoder=True, queue_size=24)
    assert XlsrTrainer(model=plain, args=arguments(), tokenizers=tokenizer).args.ddp_find_unused_parameters is None
    assert not plain.uses_gradcache
    with pytest.raises(ValueError, match="mini_batch_size trains under DDP with ddp_find_unused_parameters=False"):
        XlsrTrainer(model=cached, args=arguments(ddp_find_unused_parameters=True, mini_batch_size=4))


def test_xlsr_trainer_with_accumulation_trains_the_cached_model_as_the_uncached_one(tmp_path, tokenizer, bible_pairs):
    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    def train(mini_batch_size):
        model = tiny_dual_momentum(shared_encoder=True, queue_size=24, dropout=0.0)
        args = XlsrTrainingArguments(
            mini_batch_size=mini_batch_size,
            output_dir=str(tmp_path / str(mini_batch_size)),
            per_device_train_batch_size=6,
            gradient_accumulation_steps=2,
            max_steps=3,
            learning_rate=1e-3,
            warmup_steps=0,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
            seed=0,
            dataloader_pin_memory=False,
        )
        collator = BitextCollator(tokenizer, languages=["en", "fr"], max_length=32)
        trainer = XlsrTrainer(
            model=model,
            args=args,
            train_dataset=bible_pairs.select(range(48)),
            data_collator=collator,
            tokenizers=tokenizer,
        )
        trainer.train()
        return model

    plain, cached = train(None), train(4)
    assert int(cached.momentum_updates) == 3 and int(cached.queue_x.filled) == 24
    for (name, a), b in zip(cached.state_dict().items(), plain.state_dict().values(), strict=True):
        if a.is_floating_point():
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
        else:
            assert torch.equal(a, b), name


@pytest.mark.slow
def test_two_ddp_processes_train_the_cached_model_as_the_uncached_one(tmp_path):
    """``hf-xlsr train`` under two processes; momentum 0 makes each momentum encoder a copy of the trained weights,
    which the script dumps with the queues."""
    import yaml

    script = ROOT / "tests" / "scripts" / "train_and_dump_state.py"
    states = {}
    for name, mini in (("plain", None), ("cached", 2)):
        (tmp_path / name).mkdir()
        config_path = run_config(tmp_path / name)
        config = yaml.safe_load(config_path.read_text())
        config["model_config"] |= {"dropout": 0.0, "momentum": 0.0}
        config["mini_batch_size"] = mini
        config_path.write_text(yaml.safe_dump(config))
        result = launch_two_processes(script, str(config_path), str(tmp_path / name))
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        states[name] = [torch.load(tmp_path / name / f"rank{rank}.pt") for rank in (0, 1)]
    for name, tensor in states["cached"][0].items():
        assert torch.equal(tensor, states["cached"][1][name]), name
        if tensor.is_floating_point():
            torch.testing.assert_close(tensor, states["plain"][0][name], rtol=1e-4, atol=1e-5, msg=name)
        else:
            assert torch.equal(tensor, states["plain"][0][name]), name
    assert int(states["cached"][0]["world_size"]) == 2
