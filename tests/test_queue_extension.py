"""The queue extension of the lightweight model (L_align), CMLM (L_br) and HICTL (L_S): MoCo-consistent (every key
from the momentum encoder, cosine / temperature), with the same EMA callback, checkpoints and multi-process
gathering as the dual momentum model."""

from __future__ import annotations

import math

import pytest
import torch
import yaml
from conftest import MINILM, tiny_encoder_config
from test_multiprocess import ROOT, launch_two_processes

from hf_xlsr import CmlmConfig, CmlmModel, HictlConfig, HictlForPreTraining, LightweightDualTransformer
from hf_xlsr.data import load_bible, load_bible_adjacent
from hf_xlsr.modeling.ema import momentum_pairs
from hf_xlsr.trainers import CmlmCollator, HictlCollator, PairMaskingCollator, XlsrTrainer, XlsrTrainingArguments
from hf_xlsr.trainers.callbacks import MomentumCallback


def build(kind, tokenizer, lora=None, **config):
    """A tiny model of ``kind`` with a queue of 16 (and LoRA adapters with ``lora``), its collator, 64 training rows
    and the name of its key module."""
    torch.manual_seed(0)
    if kind == "lightweight":
        model = LightweightDualTransformer.from_tokenizer(
            tokenizer, hidden_size=32, intermediate_size=64, num_attention_heads=2, queue_size=16, lora=lora, **config
        )
        rows = load_bible(["en", "fr"], split="train").select(range(64))
        return model, PairMaskingCollator(tokenizer, ["en", "fr"], 32), rows, "encoder"
    if kind == "cmlm":
        model = CmlmModel(
            CmlmConfig(encoder=tiny_encoder_config(), num_projections=2, schedule="s1", queue_size=16, **config),
            lora=lora,
        )
        rows = load_bible_adjacent(["en", "fr"], split="train").select(range(64))
        return model, CmlmCollator(tokenizer, ["en", "fr"], max_length=32), rows, "encoder"
    model = HictlForPreTraining(
        HictlConfig(encoder=tiny_encoder_config(), num_negatives=16, queue_size=16, **config), lora=lora
    )
    model.use_tokenizer(tokenizer)
    rows = load_bible(["en", "fr"], split="train").select(range(64))
    return model, HictlCollator(tokenizer, ["en", "fr"], 32), rows, "encoder"


@pytest.mark.parametrize("kind", ["lightweight", "cmlm", "hictl"])
def test_queue_negatives_for_every_model(kind, tokenizer, tmp_path):
    model, collator, rows, name = build(kind, tokenizer)
    live, key = model._key_modules()[name], model.momentum_contrast.momentum[name]
    for n, b, a in momentum_pairs(key, live):
        assert torch.equal(a, b) and a.data_ptr() != b.data_ptr() and not b.requires_grad, n
    batch = collator([rows[i] for i in range(4)])
    model.eval()
    model(**batch)
    assert int(model.momentum_contrast.queue_x.filled) == 0  # no enqueue in eval
    model.train()
    first = model(**batch)
    assert int(model.momentum_contrast.queue_x.filled) == 4 and int(model.momentum_contrast.queue_y.filled) == 4
    second = model(**batch)  # the same batch, now with its own keys queued as negatives: a harder loss
    assert getattr(second, CONTRASTIVE[kind]) > getattr(first, CONTRASTIVE[kind])

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=1e-3,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    before = {n: b.clone() for n, b, _ in momentum_pairs(key, live)}
    trainer = XlsrTrainer(model=model, args=args, train_dataset=rows, data_collator=collator, tokenizers=tokenizer)
    assert any(isinstance(c, MomentumCallback) for c in trainer.callback_handler.callbacks)
    trainer.train()
    assert int(model.momentum_contrast.queue_x.filled) == 16  # 8 earlier + 3 x 4, capped at the queue size
    moved = [n for n, b, _ in momentum_pairs(key, live) if not torch.equal(b, before[n])]
    assert moved  # the EMA moved the key encoder
    model.save_pretrained(tmp_path / "saved")
    loaded = type(model).from_pretrained(tmp_path / "saved")
    assert torch.equal(loaded.momentum_contrast.queue_y.keys, model.momentum_contrast.queue_y.keys)
    loaded_key = loaded.momentum_contrast.momentum[name]
    for (n, a, _), (_, b, _) in zip(momentum_pairs(key, live), momentum_pairs(loaded_key, live), strict=True):
        assert torch.equal(a, b), n


CONTRASTIVE = {"lightweight": "loss_align", "cmlm": "loss_br", "hictl": "loss_sentence"}


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def queries_and_keys(kind, model, batch):
    """The live queries and the momentum keys of a batch, computed by hand from the two encoders."""
    live, key = model._key_modules(), model.momentum_contrast.momentum
    vectors = {}
    for side in ("x", "y"):
        prefix = {"x": "source", "y": "target"}[side]  # the paper's x and y sentences
        ids, mask = batch[f"{prefix}_input_ids"], batch[f"{prefix}_attention_mask"]
        for name, modules in (("query", live), ("key", key)):
            states = modules["encoder"](input_ids=ids, attention_mask=mask).last_hidden_state.double()
            weights = mask.unsqueeze(-1).double()
            vector = (states * weights).sum(1) / weights.sum(1)  # mean pooling (HICTL's too, in these tests)
            if kind == "hictl":
                projection = modules["projection"]
                vector = vector @ projection.weight.double().T + projection.bias.double()
            vectors[f"{name}_{side}"] = torch.nn.functional.normalize(vector, dim=-1)
    return vectors


def reference_queue_loss(kind, v, queue_x, queue_y, tau, margin, ids=None, queue_ids=None):
    """L(x -> y) + L(y -> x) written out: cosine / tau, the positive and every negative from the momentum keys;
    queued keys whose id is the query's own example id are left out."""
    n, total = len(v["query_x"]), 0.0
    for q_side, k_side in (("x", "y"), ("y", "x")):
        queue = {"x": queue_x, "y": queue_y}
        for i in range(n):
            q = v[f"query_{q_side}"][i]

            def queued(side, i=i, queue=queue):
                return [key for j, key in enumerate(queue[side]) if ids is None or queue_ids[j] != ids[i]]

            positive = (float(q @ v[f"key_{k_side}"][i]) - margin) / tau
            negatives = [v[f"key_{k_side}"][j] for j in range(n) if j != i]
            if kind == "hictl":  # the other 2n - 2 sentences of both languages and both queues
                negatives += [v[f"key_{q_side}"][j] for j in range(n) if j != i]
                negatives += queued("x") + queued("y")
            else:
                negatives += queued(k_side)
            logits = [positive] + [float(q @ k.double()) / tau for k in negatives]
            top = max(logits)
            total -= positive - top - math.log(sum(math.exp(t - top) for t in logits))
    return total / n


@pytest.mark.parametrize("kind", ["lightweight", "cmlm", "hictl"])
def test_queued_loss_takes_every_key_from_the_momentum_encoder(kind, tokenizer):
    """After EMA steps have moved the momentum encoder away from the live one, the model's contrastive loss is
    the one whose positive, in-batch and queued keys all come from the momentum encoder."""
    extra = {"pooling": "mean"} if kind == "hictl" else {}  # an untrained [CLS] is the same for every sentence
    model, collator, rows, _ = build(kind, tokenizer, queue_momentum=0.5, queue_temperature=0.1, **extra)
    without_dropout(model).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for start in (0, 4, 8):
        model(**collator([rows[i] for i in range(start, start + 4)])).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        model.momentum_update()
    batch = collator([rows[i] for i in range(12, 16)])
    model.eval()
    with torch.no_grad():
        out = model(**batch)
        vectors = queries_and_keys(kind, model, batch)
    assert (vectors["query_y"] - vectors["key_y"]).abs().max() > 1e-3  # the encoders differ by now
    queue_x, queue_y = (q.negatives()[0].double() for q in model.momentum_contrast.queues())
    margin = model.config.br_margin if kind == "cmlm" else 0.0
    expected = reference_queue_loss(kind, vectors, queue_x, queue_y, 0.1, margin)
    assert getattr(out, CONTRASTIVE[kind]).item() == pytest.approx(expected, rel=1e-4)
    live_positives = {**vectors, "key_x": vectors["query_x"], "key_y": vectors["query_y"]}
    assert abs(reference_queue_loss(kind, live_positives, queue_x, queue_y, 0.1, margin) - expected) > 1e-3


@pytest.mark.parametrize("kind", ["lightweight", "cmlm", "hictl"])
def test_queued_keys_of_the_querys_own_example_are_not_its_negatives(kind, tokenizer):
    """The same batch twice: queued with its example ids, a pair's own keys (its translation among them) are left
    out of its negatives; the other pairs' keys stay."""
    extra = {"pooling": "mean"} if kind == "hictl" else {}
    model, collator, rows, _ = build(kind, tokenizer, queue_temperature=0.1, **extra)
    without_dropout(model).train()
    batch = collator([{**rows[i], "example_id": 100 + i} for i in range(4)])
    assert batch["example_ids"].tolist() == [100, 101, 102, 103]
    model(**batch)  # queues the batch's keys with their ids
    masked = getattr(model(**batch), CONTRASTIVE[kind])
    model.eval()
    with torch.no_grad():
        vectors = queries_and_keys(kind, model, batch)
    contrast = model.momentum_contrast
    queue_x, queue_y = contrast.queue_x.keys[:4].double(), contrast.queue_y.keys[:4].double()
    margin = model.config.br_margin if kind == "cmlm" else 0.0
    ids, queued_ids = [100, 101, 102, 103], contrast.queue_x.ids[:4].tolist()
    expected = reference_queue_loss(kind, vectors, queue_x, queue_y, 0.1, margin, ids, queued_ids)
    assert masked.item() == pytest.approx(expected, rel=1e-4)
    with_own = reference_queue_loss(kind, vectors, queue_x, queue_y, 0.1, margin)
    assert with_own > expected + 0.1


def test_without_a_queue_nothing_is_added(tokenizer):
    model = LightweightDualTransformer.from_tokenizer(
        tokenizer, hidden_size=32, intermediate_size=64, num_attention_heads=2
    )
    assert model.momentum_contrast is None and model.momentum_coefficient is None
    assert not any("momentum" in name for name in model.state_dict())


# lightweight by default; CMLM and HICTL, the same mechanism through their own models, with `pytest -m slow`
@pytest.mark.parametrize(
    "model_type",
    ["lightweight", pytest.param("cmlm", marks=pytest.mark.slow), pytest.param("hictl", marks=pytest.mark.slow)],
)
def test_two_processes_gather_every_models_keys(model_type, tmp_path):
    model_config = {
        "lightweight": {"vocab_size": 600, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2},
        "cmlm": {"encoder": tiny_encoder_config(), "num_projections": 2, "schedule": "s1"},
        "hictl": {"encoder": tiny_encoder_config(), "num_negatives": 16},
    }[model_type]
    config = {"model_type": model_type, "model_config": {**model_config, "queue_size": 64}, "train_data": "bible",
              "languages": ["en", "fr"], "max_train_pairs": 200, "max_eval_pairs": 20, "max_length": 24,
              "per_device_train_batch_size": 4, "max_steps": 3, "learning_rate": 1e-3, "disable_tqdm": True,
              "output_dir": str(tmp_path / "run"), "save_strategy": "no", "report_to": "none"}  # fmt: skip
    if model_type != "lightweight":
        config["tokenizer"] = MINILM
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    script = ROOT / "tests" / "scripts" / "train_and_dump_state.py"
    result = launch_two_processes(script, str(tmp_path / "config.yaml"), str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert any(name.startswith("momentum_contrast.momentum.") for name in rank0)
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    assert int(rank0["momentum_contrast.queue_x.filled"]) == 24  # 3 steps x 4 pairs x 2 processes
    assert int(rank0["momentum_contrast.momentum_updates"]) == 3
