"""DualMomentumModel: construction, pooling, EMA, enqueue rules, NLI head, save/load."""

from __future__ import annotations

import json
import math
import os
import traceback

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum, tiny_encoder_config
from safetensors import safe_open
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoConfig, AutoModel

import hf_xlsr
from hf_xlsr import DualMomentumConfig, DualMomentumModel
from hf_xlsr.modeling.ema import momentum_pairs
from hf_xlsr.modeling.pooling import pool
from hf_xlsr.registry import paper_recipe


def test_auto_classes_resolve_the_model_type(tmp_path):
    model = tiny_dual_momentum()
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "xlsr_dual_momentum"
    assert isinstance(AutoConfig.from_pretrained(tmp_path), DualMomentumConfig)
    assert isinstance(AutoModel.from_pretrained(tmp_path), DualMomentumModel)


def test_config_defaults_are_the_papers():
    config = DualMomentumConfig()
    assert (config.queue_size, config.temperature, config.momentum) == (409600, 0.04, 0.999)
    recipe = paper_recipe(config.model_type, world_size=4)  # Table 9, its batch of 1,024 shared by 4 processes
    assert (recipe["learning_rate"], recipe["max_grad_norm"], recipe["warmup_steps"]) == (4e-5, 10.0, 400)
    assert (recipe["per_device_train_batch_size"], recipe["weight_decay"], recipe["num_train_epochs"]) == (
        256,
        1e-4,
        15,
    )
    assert recipe["lr_scheduler_type"] == "cosine" and "learning_rate" not in config.to_dict()
    assert config.pooling == "mean" and config.dropout == 0.1
    assert (config.nli_hidden_size, config.nli_num_labels, config.nli_weight) == (256, 3, 0.1)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"temperature": 0.0}, "temperature must be positive"),
        ({"momentum": 1.5}, r"momentum must lie in \[0, 1\]"),
        ({"queue_size": 0}, "queue_size must be at least 1"),
        ({"pooling": "avg"}, "pooling"),
        ({"temperature": "warm"}, "temperature"),
    ],
)
def test_config_rejects_bad_values(fields, message):
    with pytest.raises(Exception, match=message):
        DualMomentumConfig(**fields)


def test_encoders_with_different_widths_are_refused():
    with pytest.raises(Exception, match="same hidden_size"):
        DualMomentumConfig(
            encoder_x=tiny_encoder_config(hidden_size=32), encoder_y=tiny_encoder_config(hidden_size=64)
        )


def test_momentum_encoders_are_frozen_copies_not_aliases():
    model = tiny_dual_momentum()
    for query, key in [(model.encoder_x, model.momentum_encoder_x), (model.encoder_y, model.momentum_encoder_y)]:
        assert not list(key.parameters())  # float32 buffers, which a mixed-precision engine does not cast
        for name, k, q in momentum_pairs(key, query):
            assert torch.equal(q, k), name
            assert q.data_ptr() != k.data_ptr()
            assert q.requires_grad and not k.requires_grad and k.dtype == torch.float32
    model.train()
    assert not model.momentum_encoder_x.training and model.encoder_x.training


def test_pretrained_encoders_keep_their_weights(minilm_path):
    reference = AutoModel.from_pretrained(minilm_path).state_dict()
    model = DualMomentumModel.from_encoders(minilm_path, queue_size=8)
    for encoder in (model.encoder_x, model.encoder_y, model.momentum_encoder_x, model.momentum_encoder_y):
        state = encoder.state_dict()
        assert all(torch.equal(reference[name], state[name]) for name in reference)
    assert model.config.encoder_x.model_type == "bert" and model.config.encoder_x.hidden_size == 384


def test_pooling_modes_against_manual_computation():
    torch.manual_seed(0)
    hidden = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    assert torch.allclose(pool(hidden, mask, "mean")[1], hidden[1, :2].mean(0))
    assert torch.allclose(pool(hidden, mask, "max")[0], hidden[0, :3].max(0).values)
    assert torch.equal(pool(hidden, mask, "cls"), hidden[:, 0])
    with pytest.raises(ValueError, match="pooling mode"):
        pool(hidden, mask, "sum")


def test_embeddings_are_unit_length(tokenizer, bible_pairs):
    model = tiny_dual_momentum(pooling="max").eval()
    out = model(**batch_of(tokenizer, bible_pairs), return_loss=False)
    assert out.loss is None
    assert torch.allclose(out.source_embeddings.norm(dim=-1), torch.ones(4), atol=1e-5)


def trained_apart(tokenizer, bible_pairs, **config):
    """A model after two SGD steps, each followed by an EMA step at m = 0.5: query and momentum encoders differ."""
    model = tiny_dual_momentum(momentum=0.5, dropout=0.0, **config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    for offset in (0, 4, 8):
        loss = model(**batch_of(tokenizer, bible_pairs, offset=offset)).loss
        if loss.requires_grad and loss.item() > 0:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.momentum_update()
    return model


def test_positive_keys_come_from_the_momentum_encoder(tokenizer, bible_pairs):
    """Eq. 2 written out in float64 with keys from the momentum encoders, after EMA steps have moved them away
    from the query encoders: the model's loss is that one, not the one with live positives."""
    model = trained_apart(tokenizer, bible_pairs).eval()
    assert int(model.momentum_updates) == 3
    batch = batch_of(tokenizer, bible_pairs, offset=12)
    with torch.no_grad():
        out = model(**batch)
        h_x = model.get_sentence_embeddings(
            batch["source_input_ids"], batch["source_attention_mask"], language="en"
        ).double()
        momentum_y = model.momentum_encoder_y(
            input_ids=batch["target_input_ids"], attention_mask=batch["target_attention_mask"]
        )
        live_y = model.encoder_y(input_ids=batch["target_input_ids"], attention_mask=batch["target_attention_mask"])
    mask = batch["target_attention_mask"].unsqueeze(-1).double()

    def keys(states):  # mean pooling and L2, by hand
        mean = (states.last_hidden_state.double() * mask).sum(1) / mask.sum(1)
        return mean / mean.norm(dim=1, keepdim=True)

    queue = model.queue_y.keys[: int(model.queue_y.filled)].double()

    def eq2(k):
        total = 0.0
        for i in range(4):
            logits = [float(h_x[i] @ k[i]) / 0.04] + [float(h_x[i] @ key) / 0.04 for key in queue]
            top = max(logits)
            total -= logits[0] - top - math.log(sum(math.exp(t - top) for t in logits))
        return total / 4

    assert (keys(momentum_y) - keys(live_y)).abs().max() > 1e-3  # the two encoders really differ by now
    assert out.loss_source_to_target.item() == pytest.approx(eq2(keys(momentum_y)), rel=1e-5)
    assert abs(eq2(keys(live_y)) - out.loss_source_to_target.item()) > 1e-3


def test_each_languages_keys_enter_its_own_queue(tokenizer, bible_pairs):
    """After EMA steps, queue_x holds momentum_x(x sentences) and queue_y momentum_y(y sentences), in order."""
    model = trained_apart(tokenizer, bible_pairs)
    batch = batch_of(tokenizer, bible_pairs, offset=12)
    start = int(model.queue_x.ptr)
    model(**batch)
    slots = [(start + i) % model.queue_x.size for i in range(4)]
    with torch.no_grad():
        k_x = model.momentum_keys(batch["source_input_ids"], batch["source_attention_mask"], side="x")
        k_y = model.momentum_keys(batch["target_input_ids"], batch["target_attention_mask"], side="y")
    torch.testing.assert_close(model.queue_x.keys[slots], k_x)
    torch.testing.assert_close(model.queue_y.keys[slots], k_y)
    assert (k_x - k_y).abs().max() > 1e-2


def test_ema_refuses_low_precision_momentum_weights():
    model = tiny_dual_momentum().to(torch.bfloat16)
    with pytest.raises(ValueError, match="holds torch.bfloat16 weights: an EMA with 1 - m = 0.001"):
        model.momentum_update()


def test_ema_of_bfloat16_query_weights_into_float32_momentum_weights_is_exact():
    """Mixed precision keeps float32 masters; should a query encoder be bf16, the float32 EMA stays exact."""
    model = tiny_dual_momentum(momentum=0.999)
    model.encoder_x.to(torch.bfloat16)
    old = {n: k.double().clone() for n, k, _ in momentum_pairs(model.momentum_encoder_x, model.encoder_x)}
    model.momentum_update()
    for name, key, query in momentum_pairs(model.momentum_encoder_x, model.encoder_x):
        assert key.dtype == torch.float32
        expected = 0.999 * old[name] + 0.001 * query.double()
        torch.testing.assert_close(key.double(), expected, rtol=1e-6, atol=1e-7)


def test_a_non_finite_loss_queues_nothing(tokenizer, bible_pairs, caplog):
    model = tiny_dual_momentum(queue_size=10)
    model.train()
    model(**batch_of(tokenizer, bible_pairs))
    model.momentum_update()
    state = [(q.keys, q.ids, q.ptr, q.filled) for q in (model.queue_x, model.queue_y)]
    before = [[t.clone() for t in tensors] for tensors in state]
    with torch.no_grad():
        model.encoder_x.embeddings.word_embeddings.weight[:] = float("nan")  # a diverged query encoder
    with caplog.at_level("WARNING"):
        out = model(**batch_of(tokenizer, bible_pairs, offset=4))
    assert not torch.isfinite(out.loss)
    for old, new in zip(before, state, strict=True):  # neither language's queue moved
        assert all(torch.equal(a, b) for a, b in zip(old, new, strict=True))
    assert len(model.queue_x) == len(model.queue_y) == 4
    assert "optimizer step 2: the loss or the momentum keys are not finite; nothing was queued" in caplog.text


def test_ema_update_matches_hand_computation(tokenizer, bible_pairs):
    model = tiny_dual_momentum(momentum=0.9)
    old = {n: k.double().clone() for n, k, _ in momentum_pairs(model.momentum_encoder_y, model.encoder_y)}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    model.momentum_contrast.enqueues_per_update = 2  # two micro-batches per optimizer step, as a custom loop says
    model(**batch_of(tokenizer, bible_pairs)).loss.backward()  # first micro-batch: empty queue, loss 0
    model(**batch_of(tokenizer, bible_pairs, offset=4)).loss.backward()
    optimizer.step()
    new = {n: p.detach().double().clone() for n, p in model.encoder_y.named_parameters()}
    assert any(not torch.equal(old[n], new[n]) for n in old)  # the query encoder moved
    model.momentum_update()
    for name, key, _ in momentum_pairs(model.momentum_encoder_y, model.encoder_y):
        expected = 0.9 * old[name] + 0.1 * new[name]
        torch.testing.assert_close(key.double(), expected, rtol=1e-6, atol=1e-7)
    assert int(model.momentum_updates) == 1


def test_momentum_zero_makes_keys_follow_queries_exactly():
    model = tiny_dual_momentum(momentum=0.0)
    with torch.no_grad():
        for p in model.encoder_x.parameters():
            p.add_(1.0)
    model.momentum_update()
    assert all(torch.equal(q, k) for _, k, q in momentum_pairs(model.momentum_encoder_x, model.encoder_x))


def test_enqueue_only_when_training_with_gradients(tokenizer, bible_pairs):
    model = tiny_dual_momentum()
    batch = batch_of(tokenizer, bible_pairs)
    model.eval()
    model(**batch)
    model.train()
    with torch.no_grad():
        model(**batch)
    assert int(model.queue_x.filled) == 0 and int(model.queue_y.filled) == 0
    model(**batch)
    assert int(model.queue_x.filled) == 4 and int(model.queue_y.filled) == 4
    keys = model.momentum_keys(batch["source_input_ids"], batch["source_attention_mask"], side="x")
    torch.testing.assert_close(model.queue_x.keys[:4], keys.detach())


def test_shared_encoder_has_one_encoder_and_saves(tmp_path, tokenizer, bible_pairs):
    model = tiny_dual_momentum(shared_encoder=True)
    assert not hasattr(model, "encoder_y") and model.momentum_encoder_y is model.momentum_encoder_x
    assert model.query_encoder("fr") is model.encoder_x
    model.train()
    model(**batch_of(tokenizer, bible_pairs))
    model.save_pretrained(tmp_path)
    loaded = DualMomentumModel.from_pretrained(tmp_path)
    assert loaded.config.shared_encoder and loaded.config.encoder_y is None
    assert torch.equal(loaded.queue_y.keys, model.queue_y.keys)


def test_save_load_round_trip_is_exact(tmp_path, tokenizer, bible_pairs):
    model = tiny_dual_momentum(queue_size=6, queue_dtype="float16")
    model.train()
    for offset in (0, 4, 8):
        model(**batch_of(tokenizer, bible_pairs, offset=offset)).loss.backward()
        model.momentum_update()
    model.save_pretrained(tmp_path)
    loaded = DualMomentumModel.from_pretrained(tmp_path)
    expected, actual = model.state_dict(), loaded.state_dict()
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name
    assert int(loaded.queue_x.ptr) == 12 % 6 and int(loaded.queue_x.filled) == 6 and int(loaded.momentum_updates) == 3
    with safe_open(tmp_path / "model.safetensors", "pt") as handle:
        assert handle.get_tensor("momentum_contrast.queue_y.keys").dtype == torch.float16
    model.eval(), loaded.eval()
    batch = batch_of(tokenizer, bible_pairs, offset=12)
    torch.testing.assert_close(model(**batch).loss, loaded(**batch).loss, rtol=0, atol=0)


def test_nli_head_adds_weighted_cross_entropy(tokenizer, bible_pairs):
    model = tiny_dual_momentum(nli_head=True, nli_weight=0.1).eval()
    batch = batch_of(tokenizer, bible_pairs)
    premise = tokenizer(["A man plays a guitar.", "A dog runs."], padding=True, return_tensors="pt")
    hypothesis = tokenizer(["Someone makes music.", "A cat sleeps."], padding=True, return_tensors="pt")
    labels = torch.tensor([0, 2])
    out = model(
        **batch,
        premise_input_ids=premise["input_ids"],
        premise_attention_mask=premise["attention_mask"],
        hypothesis_input_ids=hypothesis["input_ids"],
        hypothesis_attention_mask=hypothesis["attention_mask"],
        nli_labels=labels,
    )
    u = model.get_sentence_embeddings(premise["input_ids"], premise["attention_mask"], language="en")
    v = model.get_sentence_embeddings(hypothesis["input_ids"], hypothesis["attention_mask"], language="en")
    logits = model.nli_head(torch.cat([u, v, (u - v).abs()], dim=-1)).double()
    expected = -torch.log_softmax(logits, dim=-1)[torch.arange(2), labels].mean()
    assert out.loss_nli.item() == pytest.approx(expected.item(), rel=1e-5)
    assert out.loss.item() == pytest.approx(
        (out.loss_source_to_target + out.loss_target_to_source + 0.1 * out.loss_nli).item(), rel=1e-6
    )
    assert model.nli_head[0].in_features == 3 * 32 and model.nli_head[0].out_features == 256


def test_encoders_keep_their_attention_implementation(tmp_path, minilm_path):
    expected = AutoModel.from_pretrained(minilm_path).config._attn_implementation
    model = DualMomentumModel.from_encoders(minilm_path, queue_size=8)
    model.save_pretrained(tmp_path)
    for m in (model, DualMomentumModel.from_pretrained(tmp_path)):
        implementations = {e.config._attn_implementation for e in (m.encoder_x, m.encoder_y, m.momentum_encoder_x)}
        assert implementations == {expected}


class DeviceReads(TorchDispatchMode):
    """Count the reads of a tensor's value by Python (``item``, ``int``, ``bool``: each waits for a GPU) made by
    hf_xlsr's own code, as opposed to the encoder's. Code is told apart by the package it lives in, not by a name in
    its path: a clone in a folder named hf_xlsr holds its virtual environment's transformers too."""

    TORCH = os.path.dirname(torch.__file__) + os.sep
    HF_XLSR = os.path.dirname(hf_xlsr.__file__) + os.sep

    def __init__(self):
        super().__init__()
        self.places = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            stack = reversed(traceback.extract_stack()[:-1])
            caller = next(f for f in stack if not f.filename.startswith(self.TORCH))
            if caller.filename.startswith(self.HF_XLSR):
                self.places.append(f"{caller.filename.rsplit('/', 1)[-1]}:{caller.lineno}")
        return func(*args, **(kwargs or {}))


def test_a_training_step_reads_one_value_from_the_device(tokenizer, bible_pairs):
    """Pointers and counters live on the host too: a step reads back only whether its keys were finite."""
    model = tiny_dual_momentum(queue_size=6)
    model.train()
    model(**batch_of(tokenizer, bible_pairs)).loss.backward()
    model.momentum_update()
    for offset in (4, 8):  # the queue wraps around in the second of these steps
        with DeviceReads() as reads:
            out = model(**batch_of(tokenizer, bible_pairs, offset=offset), example_ids=torch.arange(4) + offset)
            out.loss.backward()
            model.momentum_update()
        assert len(reads.places) == 1, reads.places
    assert int(model.queue_x.ptr) == 12 % 6 and len(model.queue_x) == 6 and int(model.momentum_updates) == 3
    keys = model.queue_x.keys.clone()
    model(**batch_of(tokenizer, bible_pairs, offset=12))
    assert int(model.queue_x.ptr) == 4
    model.discard_momentum_step()  # a skipped step: its keys leave, the pointer goes back, on the host too
    assert int(model.queue_x.ptr) == 0 and torch.equal(model.queue_x.keys, keys)
    model(**batch_of(tokenizer, bible_pairs, offset=16))
    assert int(model.queue_x.ptr) == 4 and torch.equal(model.queue_x.keys[4:], keys[4:])
