"""The queue of momentum keys as a reusable part: extra negatives for L_align (lightweight), L_br (CMLM) and L_S
(HICTL), with the same EMA callback, checkpoints and multi-process gathering as the dual momentum model."""

from __future__ import annotations

import math

import pytest
import torch
import yaml
from conftest import MINILM, tiny_encoder_config
from test_multiprocess import ROOT, launch_two_processes

from hf_xlsr import CmlmConfig, CmlmModel, HictlConfig, HictlForPreTraining, LightweightDualTransformer
from hf_xlsr.data import load_bible, load_bible_adjacent
from hf_xlsr.modeling.losses import additive_margin_retrieval_loss, in_batch_alignment_loss, sentence_contrastive_loss
from hf_xlsr.trainers import CmlmCollator, HictlCollator, PairMaskingCollator, XlsrTrainer, XlsrTrainingArguments
from hf_xlsr.trainers.callbacks import MomentumCallback


def dot(a, b):
    return sum(p * q for p, q in zip(a, b, strict=True))


def reference_ranking(queries, keys, extra, margin=0.0, cosine=False, tau=1.0):
    """-mean_i log softmax over [keys..., extra...] at key i (margin off the positive), in float64."""
    score = (lambda a, b: dot(a, b) / math.sqrt(dot(a, a) * dot(b, b)) / tau) if cosine else dot
    total = 0.0
    for i, q in enumerate(queries):
        logits = [score(q, k) - (margin if j == i else 0.0) for j, k in enumerate(keys)] + [score(q, e) for e in extra]
        total -= logits[i] - math.log(sum(math.exp(v) for v in logits))
    return total / len(queries)


def test_losses_with_queue_negatives_match_float64_references():
    torch.manual_seed(0)
    u, v, qu, qv = torch.randn(4, 5), torch.randn(4, 5), torch.randn(6, 5), torch.randn(7, 5)
    U, V, QU, QV = (t.double().tolist() for t in (u, v, qu, qv))
    expected = reference_ranking(U, V, QV) + reference_ranking(V, U, QU)
    assert in_batch_alignment_loss(u, v, qu, qv).item() == pytest.approx(expected, rel=1e-5)
    expected = reference_ranking(U, V, QV, margin=0.3) + reference_ranking(V, U, QU, margin=0.3)
    assert additive_margin_retrieval_loss(u, v, 0.3, qu, qv).item() == pytest.approx(expected, rel=1e-5)
    queue = torch.cat([qu, qv])
    expected = 0.0
    for i in range(4):  # L_S: the 2n - 2 batch negatives plus every queued key, cosine / tau
        negatives_x = [V[j] for j in range(4) if j != i] + [U[j] for j in range(4) if j != i] + queue.double().tolist()
        expected += reference_ranking([U[i]], [V[i]], negatives_x, cosine=True, tau=0.5)
        negatives_y = [U[j] for j in range(4) if j != i] + [V[j] for j in range(4) if j != i] + queue.double().tolist()
        expected += reference_ranking([V[i]], [U[i]], negatives_y, cosine=True, tau=0.5)
    assert sentence_contrastive_loss(u, v, 0.5, queue).item() == pytest.approx(expected / 4, rel=1e-5)


def build(kind, tokenizer, **config):
    torch.manual_seed(0)
    if kind == "lightweight":
        model = LightweightDualTransformer.from_tokenizer(tokenizer, hidden_size=32, intermediate_size=64,
                                                          num_attention_heads=2, queue_size=16, **config)  # fmt: skip
        rows = load_bible(["en", "fr"], split="train").select(range(64))
        return model, PairMaskingCollator(tokenizer, "en", "fr", 32), rows, "encoder"
    if kind == "cmlm":
        model = CmlmModel(CmlmConfig(encoder=tiny_encoder_config(), num_projections=2, schedule="s1", queue_size=16,
                                     **config))  # fmt: skip
        rows = load_bible_adjacent(["en", "fr"], split="train").select(range(64))
        return model, CmlmCollator(tokenizer, "en", "fr", max_length=32), rows, "encoder"
    model = HictlForPreTraining(HictlConfig(encoder=tiny_encoder_config(), num_negatives=16, queue_size=16, **config))
    model.use_tokenizer(tokenizer)
    rows = load_bible(["en", "fr"], split="train").select(range(64))
    return model, HictlCollator(tokenizer, "en", "fr", 32), rows, "encoder"


@pytest.mark.parametrize("kind", ["lightweight", "cmlm", "hictl"])
def test_queue_negatives_for_every_model(kind, tokenizer, tmp_path):
    model, collator, rows, name = build(kind, tokenizer)
    live, key = model._key_modules()[name], model.momentum_contrast.momentum[name]
    for (n, a), (_, b) in zip(live.named_parameters(), key.named_parameters(), strict=True):
        assert torch.equal(a, b) and a.data_ptr() != b.data_ptr() and not b.requires_grad, n
    batch = collator([rows[i] for i in range(4)])
    model.eval()
    model(**batch)
    assert int(model.momentum_contrast.queue_x.filled) == 0  # no enqueue in eval
    model.train()
    first = model(**batch)
    assert int(model.momentum_contrast.queue_x.filled) == 4 and int(model.momentum_contrast.queue_y.filled) == 4
    second = model(**batch)  # the same batch, now with its own keys queued as negatives: a harder loss
    contrastive = {"lightweight": "loss_align", "cmlm": "loss_br", "hictl": "loss_sentence"}[kind]
    assert getattr(second, contrastive) > getattr(first, contrastive)

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=3, learning_rate=1e-3, save_strategy="no",
        report_to="none", use_cpu=True, disable_tqdm=True,
    )  # fmt: skip
    before = {n: p.detach().clone() for n, p in key.named_parameters()}
    trainer = XlsrTrainer(model=model, args=args, train_dataset=rows, data_collator=collator,
                          tokenizers={"x": tokenizer, "y": tokenizer})  # fmt: skip
    assert any(isinstance(c, MomentumCallback) for c in trainer.callback_handler.callbacks)
    trainer.train()
    assert int(model.momentum_contrast.queue_x.filled) == 16  # 8 earlier + 3 x 4, capped at the queue size
    moved = [n for n, p in key.named_parameters() if not torch.equal(p, before[n])]
    assert moved  # the EMA moved the key encoder
    model.save_pretrained(tmp_path / "saved")
    loaded = type(model).from_pretrained(tmp_path / "saved")
    assert torch.equal(loaded.momentum_contrast.queue_y.keys, model.momentum_contrast.queue_y.keys)
    for (n, a), (_, b) in zip(
        key.named_parameters(), loaded.momentum_contrast.momentum[name].named_parameters(), strict=True
    ):
        assert torch.equal(a, b), n


def test_without_a_queue_nothing_is_added(tokenizer):
    model = LightweightDualTransformer.from_tokenizer(
        tokenizer, hidden_size=32, intermediate_size=64, num_attention_heads=2
    )
    assert not hasattr(model, "momentum_contrast") and model.momentum_coefficient is None
    assert not any("momentum" in name for name in model.state_dict())


@pytest.mark.parametrize("model_type", ["lightweight", "cmlm", "hictl"])
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
        config["tokenizer_x"] = MINILM
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    script = ROOT / "tests" / "scripts" / "train_and_dump_state.py"
    result = launch_two_processes(script, str(tmp_path / "config.yaml"), str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert any(name.startswith("momentum_contrast.momentum.") for name in rank0)
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    assert int(rank0["momentum_contrast.queue_x.filled"]) == 24  # 3 steps x 4 pairs x 2 processes
