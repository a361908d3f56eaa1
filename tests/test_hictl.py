"""HICTL: the two contrastive losses against float64 references, negative sampling outside the bag of words,
perturbations, logit fusion, two-stage fine-tuning, generate(), save/load, export and the classification path."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import tiny_encoder_config
from transformers import AutoModelForSequenceClassification, EncoderDecoderModel

from hf_xlsr import HictlConfig, HictlForPreTraining, HictlForTranslation
from hf_xlsr.data import load_bible
from hf_xlsr.evaluation import as_encoder
from hf_xlsr.evaluation.translation import chrf, translate
from hf_xlsr.export import export_sentence_transformers
from hf_xlsr.modeling.losses import sample_word_negatives, sentence_contrastive_loss, word_contrastive_loss
from hf_xlsr.trainers import HictlCollator, XlsrTrainer, XlsrTrainingArguments
from hf_xlsr.trainers.collators import reorder_words


def tiny_hictl(tokenizer, **fields) -> HictlForPreTraining:
    torch.manual_seed(0)
    fields = {"encoder": tiny_encoder_config(), "num_negatives": 32, "language_x": "en", "language_y": "fr", **fields}
    return HictlForPreTraining(HictlConfig(**fields)).use_tokenizer(tokenizer)


@pytest.fixture(scope="module")
def pairs():
    return load_bible(["en", "fr"], split="train").select(range(64))


def reference_sentence_loss(rx, ry, tau):
    def cos(a, b):
        return sum(p * q for p, q in zip(a, b, strict=True)) / math.sqrt(sum(p * p for p in a) * sum(q * q for q in b))

    n, total = len(rx), 0.0
    for i in range(n):
        for query, positive in ((rx[i], ry[i]), (ry[i], rx[i])):
            negatives = [ry[j] for j in range(n) if j != i] + [rx[j] for j in range(n) if j != i]
            assert len(negatives) == 2 * n - 2
            pos = math.exp(cos(query, positive) / tau)
            total -= math.log(pos / (pos + sum(math.exp(cos(query, k) / tau) for k in negatives)))
    return total / n


@pytest.mark.parametrize("tau", [1.0, 0.1])
def test_sentence_level_loss_with_exactly_2n_minus_2_negatives(tau):
    torch.manual_seed(1)
    rx, ry = torch.randn(5, 6), torch.randn(5, 6)
    expected = reference_sentence_loss(rx.double().tolist(), ry.double().tolist(), tau)
    assert sentence_contrastive_loss(rx, ry, tau).item() == pytest.approx(expected, rel=1e-5)


def test_word_level_loss_against_float64_reference():
    torch.manual_seed(2)
    scores = torch.randn(3, 20)
    bag = torch.zeros(3, 20, dtype=torch.bool)
    bag[0, [1, 4]] = bag[1, [2]] = bag[2, [5, 6, 7]] = True
    negatives = torch.tensor([[0, 3, 9], [0, 1, 3], [1, 2, 3]])
    s = scores.double().tolist()
    expected = 0.0
    for i in range(3):
        positives = bag[i].nonzero().flatten().tolist()
        denominator_negatives = sum(math.exp(s[i][j]) for j in negatives[i].tolist())
        expected += -sum(
            math.log(math.exp(s[i][t]) / (math.exp(s[i][t]) + denominator_negatives)) for t in positives
        ) / len(positives)
    assert word_contrastive_loss(scores, bag, negatives).item() == pytest.approx(expected / 3, rel=1e-5)


def test_sampled_negatives_never_come_from_the_bag_of_words():
    torch.manual_seed(3)
    scores = torch.randn(50, 400) * 3
    in_bag = torch.rand(50, 400) < 0.3
    in_bag[:, :5] = True  # e.g. special tokens
    negatives = sample_word_negatives(scores, in_bag, 64)
    assert negatives.shape == (50, 64)
    assert not in_bag.gather(1, negatives).any()
    assert all(len(set(row)) == 64 for row in negatives.tolist())  # without replacement
    with pytest.raises(ValueError, match="cannot sample"):
        sample_word_negatives(scores, torch.ones(50, 400, dtype=torch.bool).index_fill(1, torch.arange(10), False), 64)


def test_model_negatives_avoid_the_pairs_words_and_special_tokens(tokenizer, pairs):
    model = tiny_hictl(tokenizer, num_negatives=200)
    batch = HictlCollator(tokenizer, "en", "fr", 32)([pairs[i] for i in range(8)])
    original = torch.where(batch["pair_labels"] >= 0, batch["pair_labels"], batch["pair_input_ids"])
    captured = {}
    real = sample_word_negatives

    def spy(scores, excluded, m, generator=None):
        captured["negatives"] = real(scores, excluded, m, generator)
        return captured["negatives"]

    import hf_xlsr.modeling.modeling_hictl as module

    module.sample_word_negatives, saved = spy, module.sample_word_negatives
    try:
        model(**batch)
    finally:
        module.sample_word_negatives = saved
    special = set(tokenizer.all_special_ids)
    for row, negatives in enumerate(captured["negatives"].tolist()):
        words = set(original[row][batch["pair_attention_mask"][row].bool()].tolist())
        assert not set(negatives) & (words | special)


def test_reordering_keeps_the_words():
    import random

    text = "In the beginning God created the heavens and the earth."
    for perturbation in ("shuffle", "local_shuffle", "reverse"):
        reordered = reorder_words(text, perturbation, 3, random.Random(0))
        assert sorted(reordered.split()) == sorted(text.split()) and reordered != text
    local = reorder_words(text, "local_shuffle", 3, random.Random(0)).split()
    assert sorted(local[:3]) == sorted(text.split()[:3])  # words move only within their window


def test_monolingual_rows_pair_a_sentence_with_its_reordering(tokenizer, pairs):
    torch.manual_seed(4)
    rows = [{"en": pairs[i]["en"]} for i in range(4)]  # no translation: monolingual
    batch = HictlCollator(tokenizer, "en", "fr", 48)(rows)
    for i in range(4):
        x = tokenizer.decode(batch["x_input_ids"][i], skip_special_tokens=True).split()
        y = tokenizer.decode(batch["y_input_ids"][i], skip_special_tokens=True).split()
        assert sorted(x) == sorted(y)


def test_losses_are_reported_and_summed(tokenizer, pairs):
    model = tiny_hictl(tokenizer)
    out = model(**HictlCollator(tokenizer, "en", "fr", 32)([pairs[i] for i in range(8)]))
    assert out.loss.item() == pytest.approx((out.loss_lm + out.loss_sentence + out.loss_word).item(), rel=1e-6)
    no_word = tiny_hictl(tokenizer, use_word_level=False)(
        **HictlCollator(tokenizer, "en", "fr", 32)([pairs[i] for i in range(8)])
    )
    assert no_word.loss_word is None


def test_logit_fusion_adds_exactly_the_similarity_term(tokenizer, pairs):
    model = HictlForTranslation.from_hictl(
        tiny_hictl(tokenizer), tokenizer, decoder_layers=2, fusion_temperature=0.5
    ).eval()
    source = tokenizer(list(pairs["en"][:3]), padding=True, return_tensors="pt")
    target = tokenizer(list(pairs["fr"][:3]), padding=True, return_tensors="pt")
    fused = model(**source, decoder_input_ids=target["input_ids"]).logits
    plain = EncoderDecoderModel.forward(model, **source, decoder_input_ids=target["input_ids"]).logits
    cls = model.encoder(**source).last_hidden_state[:, 0]
    embeddings = model.encoder.get_input_embeddings().weight
    similarity = torch.nn.functional.cosine_similarity(cls[:, None, :], embeddings[None], dim=-1) / 0.5
    assert torch.allclose(fused - plain, similarity[:, None, :].expand_as(fused), atol=1e-5)
    assert len(model.decoder.base_model.encoder.layer) == 2


def test_two_stage_fine_tuning_and_generate(tmp_path, tokenizer, pairs):
    from transformers import TrainerCallback

    model = HictlForTranslation.from_hictl(tiny_hictl(tokenizer), tokenizer, decoder_layers=1, encoder_frozen_steps=2)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    after_stage_one = {}

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step == 2:
                after_stage_one.update({k: v.clone() for k, v in model.state_dict().items()})

    def collate(rows):
        source = tokenizer([r["en"] for r in rows], padding=True, truncation=True, max_length=32, return_tensors="pt")
        target = tokenizer([r["fr"] for r in rows], padding=True, truncation=True, max_length=32, return_tensors="pt")
        return {**source, "labels": target["input_ids"].masked_fill(target["attention_mask"] == 0, -100)}

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=8, learning_rate=1e-3, max_steps=4, save_strategy="no",
        report_to="none", use_cpu=True, disable_tqdm=True,
    )  # fmt: skip
    XlsrTrainer(model=model, args=args, train_dataset=pairs, data_collator=collate, callbacks=[Snapshot()]).train()
    end = model.state_dict()

    def changed(a, b, prefix):
        return any(not torch.equal(a[k], b[k]) for k in a if k.startswith(prefix))

    assert not changed(start, after_stage_one, "encoder.")  # steps 1-2: the encoder is frozen ...
    assert changed(start, after_stage_one, "decoder.")  # ... and the decoder learns
    assert changed(after_stage_one, end, "encoder.")  # steps 3-4: everything trains
    outputs = translate(model, tokenizer, list(pairs["en"][:2]), max_new_tokens=6)
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)


def test_save_load_export_and_classification_path(tmp_path, tokenizer, pairs):
    model = tiny_hictl(tokenizer, projection_size=16).eval()
    model.save_pretrained(tmp_path / "hictl")
    loaded = HictlForPreTraining.from_pretrained(tmp_path / "hictl")
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert loaded.config.special_token_ids == sorted(tokenizer.all_special_ids)
    folders = export_sentence_transformers(model, {"x": tokenizer, "y": tokenizer}, tmp_path / "export")
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folders["x"]))
    assert [type(m).__name__ for m in st] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert st[1].pooling_mode == "cls" and st.get_embedding_dimension() == 16
    texts = list(pairs["fr"][:4])
    np.testing.assert_allclose(
        st.encode(texts), as_encoder(model, {"x": tokenizer, "y": tokenizer})(texts, "fr"), atol=1e-5
    )

    model.save_encoder(tmp_path / "encoder", tokenizer)
    classifier = AutoModelForSequenceClassification.from_pretrained(tmp_path / "encoder", num_labels=3)
    for name, value in model.encoder.state_dict().items():
        assert torch.equal(classifier.base_model.state_dict()[name], value), name
    single = tokenizer(list(pairs["en"][:2]), padding=True, return_tensors="pt")
    pair = tokenizer(list(pairs["en"][:2]), list(pairs["fr"][:2]), padding=True, return_tensors="pt")
    for inputs in (single, pair):
        out = classifier(**inputs, labels=torch.tensor([0, 2]))
        assert out.logits.shape == (2, 3) and torch.isfinite(out.loss)


def test_chrf_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    hypotheses = ["Au commencement Dieu créa le ciel", "la terre était vide", "Il dit"]
    references = ["Au commencement, Dieu créa les cieux et la terre.", "La terre était informe et vide", "Et Dieu dit"]
    assert chrf(hypotheses, references) == pytest.approx(
        sacrebleu.corpus_chrf(hypotheses, [references]).score, abs=1e-6
    )
