"""CmlmModel: projections and their concatenation, masking statistics, the additive-margin loss, schedules, that
the first sentence is used and trained, the warm-up of a new head, NLI, principal-component removal, save/load and
export."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from conftest import tiny_encoder_config
from transformers import TrainerCallback, TrainerControl, TrainerState

from hf_xlsr import CmlmConfig, CmlmModel
from hf_xlsr.data import load_bible, load_bible_adjacent
from hf_xlsr.evaluation import as_encoder
from hf_xlsr.evaluation.pcr import fit_language_components
from hf_xlsr.export import export_sentence_transformers
from hf_xlsr.modeling.functional import additive_margin_retrieval_loss
from hf_xlsr.modeling.modeling_cmlm import NEW_HEAD_WARMUP_STEPS
from hf_xlsr.registry import paper_recipe
from hf_xlsr.trainers import CmlmCollator, StageCallback, XlsrTrainer, XlsrTrainingArguments


def tiny_cmlm(**fields) -> CmlmModel:
    torch.manual_seed(0)
    fields = {"encoder": tiny_encoder_config(), "num_projections": 4, "languages": ["en", "fr"], **fields}
    return CmlmModel(CmlmConfig(**fields))


@pytest.fixture(scope="module")
def adjacent():
    return load_bible_adjacent(["en", "fr"], split="train")


def test_config_defaults_are_the_papers():
    config = CmlmConfig()
    assert (config.num_projections, config.br_margin, config.br_weight) == (15, 0.3, 0.2)
    assert config.schedule == "cmlm->cmlm+br" and CmlmModel.second_stage_step == 1_500_000  # Section 4.4
    assert config.projection_multiplier == 2
    # the collator holds the masking: 80 of 256 tokens, 80/10/10, the adjacent sentences swapped half the time
    collator = {field.name: field.default for field in dataclasses.fields(CmlmCollator)}
    assert collator["mlm_probability"] == pytest.approx(80 / 256) and collator["swap_probability"] == 0.5
    assert (collator["mask_replace_prob"], collator["random_replace_prob"]) == (0.8, 0.1)
    recipe = paper_recipe(config.model_type)  # Section 3: batch 2048, 1e-3, 10k warm-up steps, then linear decay
    assert (recipe["per_device_train_batch_size"], recipe["learning_rate"], recipe["warmup_steps"]) == (
        2048,
        1e-3,
        10000,
    )
    assert "max_length" not in config.to_dict()  # the run's max_length truncates; the configuration holds none


def test_adjacent_pairs_are_consecutive_verses(adjacent):
    verses = load_bible(["en", "fr"], split="train")
    english = list(verses["en"])
    row = adjacent[0]
    assert row["language"] == "en" and english.index(row["second"]) == english.index(row["first"]) + 1
    assert adjacent[1]["language"] == "fr" and adjacent[0]["en"] == english[0]
    assert len(adjacent) < len(verses)  # the last verse of each chapter starts no pair


def test_projections_and_their_concatenation_before_the_second_sentence(tokenizer, adjacent):
    model = tiny_cmlm().eval()
    v = torch.randn(3, 32)
    projected = model.project(v)
    assert projected.shape == (3, 4, 32)
    assert torch.equal(projected[:, 0], v)  # the identity projection comes first
    first = model.projections[0]
    assert [type(m).__name__ for m in first] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    assert (first[0].in_features, first[0].out_features, first[2].out_features, first[4].out_features) == (
        32,
        64,
        64,
        32,
    )

    batch = CmlmCollator(tokenizer, ["en", "fr"], max_length=32, swap_probability=0.0)([adjacent[i] for i in range(3)])
    seen = {}
    hook = model.encoder.register_forward_pre_hook(  # the pass over the second sentence, with its prefix
        lambda module, args, kwargs: seen.update(kwargs) if "inputs_embeds" in kwargs else None, with_kwargs=True
    )
    model(
        first_input_ids=batch["first_input_ids"],
        first_attention_mask=batch["first_attention_mask"],
        second_input_ids=batch["second_input_ids"],
        second_attention_mask=batch["second_attention_mask"],
        second_labels=batch["second_labels"],
    )
    hook.remove()
    expected_prefix = model.project(model.sentence_vector(batch["first_input_ids"], batch["first_attention_mask"]))
    tokens = model.masked_lm.get_input_embeddings()(batch["second_input_ids"])
    assert torch.allclose(seen["inputs_embeds"][:, :4], expected_prefix, atol=1e-6)
    assert torch.equal(seen["inputs_embeds"][:, 4:], tokens)
    assert seen["attention_mask"][:, :4].eq(1).all()


def test_masking_statistics_over_many_draws(tokenizer, adjacent):
    torch.manual_seed(1)
    collator = CmlmCollator(tokenizer, ["en", "fr"], max_length=64)
    masked = content = as_mask = random = kept = swapped = rows = 0
    for start in range(0, 2000, 100):
        features = [adjacent[i] for i in range(start, start + 100)]
        batch = collator(features)
        labels = batch["second_labels"]
        is_masked = labels != -100
        masked += int(is_masked.sum())
        content += int((batch["second_attention_mask"].bool()).sum()) - 2 * len(features)
        ids = batch["second_input_ids"][is_masked]
        originals = labels[is_masked]
        as_mask += int((ids == tokenizer.mask_token_id).sum())
        kept += int((ids == originals).sum())
        random += int(((ids != tokenizer.mask_token_id) & (ids != originals)).sum())
        first_texts = tokenizer.batch_decode(batch["first_input_ids"], skip_special_tokens=True)
        unswapped = [tokenizer(f["first"], truncation=True, max_length=64)["input_ids"] for f in features]
        unswapped = tokenizer.batch_decode(unswapped, skip_special_tokens=True)
        swapped += sum(a != b for a, b in zip(first_texts, unswapped, strict=True))
        rows += len(features)
    assert masked / content == pytest.approx(0.3125, abs=0.01)
    assert as_mask / masked == pytest.approx(0.8, abs=0.02)
    assert random / masked == pytest.approx(0.1, abs=0.02)
    assert kept / masked == pytest.approx(0.1, abs=0.02)
    assert swapped / rows == pytest.approx(0.5, abs=0.05)


def reference_margin_loss(s, t, m, temperature=0.0):
    """Section 4.2 in plain Python: phi the inner product, or with a temperature the cosine, each logit (the
    positive's less m) divided by it."""
    if temperature:
        s, t = ([[x / math.sqrt(sum(y * y for y in row)) for x in row] for row in rows] for rows in (s, t))
    scale = temperature or 1.0

    def direction(a, b):
        total = 0.0
        for i in range(len(a)):
            scores = [sum(x * y for x, y in zip(a[i], b[j], strict=True)) for j in range(len(b))]
            positive = math.exp((scores[i] - m) / scale)
            others = sum(math.exp(scores[j] / scale) for j in range(len(b)) if j != i)
            total -= math.log(positive / (positive + others))
        return total / len(a)

    return direction(s, t) + direction(t, s)


def test_additive_margin_loss_matches_float64_reference():
    torch.manual_seed(2)
    s, t = torch.randn(5, 4), torch.randn(5, 4)
    expected = reference_margin_loss(s.double().tolist(), t.double().tolist(), 0.3)
    assert additive_margin_retrieval_loss(s, t, 0.3).item() == pytest.approx(expected, rel=1e-5)
    assert additive_margin_retrieval_loss(s, t, 0.3) > additive_margin_retrieval_loss(s, t, 0.0)
    scaled = reference_margin_loss(s.double().tolist(), t.double().tolist(), 0.3, temperature=0.05)
    assert additive_margin_retrieval_loss(s, t, 0.3, temperature=0.05).item() == pytest.approx(scaled, rel=1e-5)
    assert abs(scaled - expected) > 1.0  # the two scorings differ: a test of one cannot pass for the other


def test_the_bitext_loss_of_a_cmlm_model_takes_its_configured_temperature():
    """``br_temperature`` reaches the model's L_br: the model's loss part against the float64 reference on its own
    sentence vectors, at 0 (the paper's inner product) and at 0.05 (cosine / temperature)."""
    from conftest import tiny_encoder_config

    from hf_xlsr import CmlmConfig, CmlmModel

    torch.manual_seed(0)
    ids = torch.randint(5, 100, (4, 6))
    mask = torch.ones_like(ids)
    for temperature in (0.0, 0.05):
        config = CmlmConfig(
            encoder=tiny_encoder_config(vocab_size=120),
            languages=["en", "fr"],
            schedule="br",
            br_temperature=temperature,
        )
        model = CmlmModel(config).eval()
        out = model(
            source_input_ids=ids, source_attention_mask=mask, target_input_ids=ids.flip(0), target_attention_mask=mask
        )
        with torch.no_grad():
            u, v = model.sentence_vector(ids, mask), model.sentence_vector(ids.flip(0), mask)
        expected = reference_margin_loss(u.double().tolist(), v.double().tolist(), 0.3, temperature)
        assert out.loss_br.item() == pytest.approx(expected, rel=1e-4), temperature


@pytest.mark.parametrize(
    "schedule, alias, first, second",
    [
        ("cmlm+br", "s1", (True, True), (True, True)),
        ("cmlm->br", "s2", (True, False), (False, True)),
        ("cmlm->cmlm+br", "s3", (True, False), (True, True)),
        ("cmlm", None, (True, False), (True, False)),
        ("br", None, (False, True), (False, True)),
    ],
)
def test_schedules_switch_losses_at_the_second_stage(schedule, alias, first, second, tokenizer, adjacent):
    """Each schedule by its descriptive name, and Section 4.2's S1 / S2 / S3 as aliases of the same thing."""
    if alias is not None:
        assert CmlmConfig(schedule=alias).schedule == schedule
    model = tiny_cmlm(schedule=schedule)
    assert model.config.stage_losses(1) == first and model.config.stage_losses(2) == second
    batch = CmlmCollator(tokenizer, ["en", "fr"], max_length=32)([adjacent[i] for i in range(4)])
    callback, state = StageCallback(10), TrainerState()
    for step, expected in ((9, first), (10, second)):
        state.global_step = step
        callback.on_step_begin(None, state, TrainerControl(), model=model)
        out = model(**batch)
        assert ((out.loss_cmlm is not None), (out.loss_br is not None)) == expected
        if expected == (True, True):
            assert out.loss.item() == pytest.approx((out.loss_cmlm + 0.2 * out.loss_br).item(), rel=1e-6)
        elif expected == (False, True):
            assert out.loss.item() == pytest.approx(out.loss_br.item(), rel=1e-6)  # BR alone, weight 1


def test_the_trainer_switches_stages_of_the_models_that_declare_them(tmp_path, tokenizer):
    """``XlsrTrainer`` reads what a model declares (`TrainingDeclarations`): CMLM's schedule gets the StageCallback,
    at the training arguments' ``second_stage_step``, else at the paper's step; a model without stages (any
    ``transformers`` model) gets none, and refuses a second stage."""
    from transformers import BertConfig, BertForMaskedLM

    def stage_steps(trainer):
        callbacks = trainer.callback_handler.callbacks
        return [callback.second_stage_step for callback in callbacks if isinstance(callback, StageCallback)]

    args = XlsrTrainingArguments(output_dir=str(tmp_path), report_to="none", second_stage_step=10)
    default = XlsrTrainingArguments(output_dir=str(tmp_path), report_to="none")
    assert stage_steps(XlsrTrainer(model=tiny_cmlm(schedule="cmlm->br"), args=args, tokenizers=tokenizer)) == [10]
    assert stage_steps(XlsrTrainer(model=tiny_cmlm(), args=default, tokenizers=tokenizer)) == [1_500_000]
    plain = BertForMaskedLM(
        BertConfig(vocab_size=99, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    )
    assert stage_steps(XlsrTrainer(model=plain, args=default, tokenizers=tokenizer)) == []
    with pytest.raises(ValueError, match="second_stage_step: BertForMaskedLM does not take it"):
        XlsrTrainer(model=plain, args=args, tokenizers=tokenizer)
    with pytest.raises(ValueError, match="second_stage_step must be at least 0, got -1"):
        XlsrTrainingArguments(output_dir=str(tmp_path), second_stage_step=-1)


def test_schedule_settings_are_training_arguments_and_old_configs_load_with_a_warning(tmp_path):
    """A saved CMLM configuration holds neither step; one an earlier version saved loads with one warning per
    field, naming the training argument that holds it now."""
    model = tiny_cmlm()
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert not {"second_stage_step", "head_warmup_steps", "encoder_frozen_steps"} & set(saved)
    (tmp_path / "config.json").write_text(json.dumps({**saved, "second_stage_step": 7, "head_warmup_steps": 3}))
    with pytest.warns(FutureWarning) as caught:
        config = CmlmConfig.from_pretrained(tmp_path)
    messages = [str(warning.message) for warning in caught if "ignored" in str(warning.message)]
    assert len(messages) == 2
    assert "second_stage_step 7 ignored: it is a training argument now" in messages[0]
    assert "head_warmup_steps 3 ignored" in messages[1] and "--encoder_frozen_steps" in messages[1]
    assert not {"second_stage_step", "head_warmup_steps"} & set(config.to_dict())


def test_masked_token_loss_scores_only_masked_positions_as_full_scoring_would():
    """The head on the masked positions only: the loss written out in float64 over every position's logits."""
    from hf_xlsr.modeling.common import masked_lm_head
    from hf_xlsr.modeling.functional import masked_token_loss

    model = tiny_cmlm()
    torch.manual_seed(4)
    states = torch.randn(3, 7, 32)
    labels = torch.full((3, 7), -100)
    labels[0, 2], labels[1, 0], labels[1, 5], labels[2, 6] = 11, 2000, 7, 30000
    head = masked_lm_head(model.masked_lm)
    assert head is model.masked_lm.cls
    loss, accuracy = masked_token_loss(states, labels, head)
    with torch.no_grad():
        logits = head(states).double()
    expected = [-torch.log_softmax(logits[i, j], dim=-1)[labels[i, j]].item() for i, j in labels.ne(-100).nonzero()]
    assert loss.item() == pytest.approx(sum(expected) / 4, rel=1e-5)
    assert 0.0 <= accuracy.item() <= 1.0


def test_the_first_sentences_encoder_gets_the_cmlm_gradient(tokenizer, adjacent):
    """v is not a constant: L_CMLM back-propagates through the projections into the encoder's pass over s1."""
    model = tiny_cmlm(schedule="cmlm")
    batch = CmlmCollator(tokenizer, ["en", "fr"], max_length=32)([adjacent[i] for i in range(4)])
    first_pass = []

    def keep(module, args, kwargs, output):
        if kwargs.get("input_ids") is batch["first_input_ids"]:  # the encoder's pass over s1
            output.last_hidden_state.retain_grad()
            first_pass.append(output.last_hidden_state)

    handle = model.encoder.register_forward_hook(keep, with_kwargs=True)
    try:
        model(**batch).loss.backward()
    finally:
        handle.remove()
    assert len(first_pass) == 1
    gradient = first_pass[0].grad
    assert gradient is not None and gradient[batch["first_attention_mask"].bool()].abs().sum() > 0


def test_cmlm_uses_the_first_sentence(small_tokenizer, adjacent):
    """Train a tiny CMLM to rebuild each of 32 verses from its own vector (``second`` = ``first``): its loss with
    the true first sentence is then lower than with the first sentence of another row, under every masking. With 80%
    of the second sentence masked, its visible tokens cannot stand in for the prefix (the gap is about 2.7 nats)."""
    rows = [{"first": adjacent[i]["first"], "second": adjacent[i]["first"]} for i in range(32)]
    collate = CmlmCollator(small_tokenizer, ["en", "fr"], max_length=32, swap_probability=0.0, mlm_probability=0.8)
    encoder = {**tiny_encoder_config(vocab_size=len(small_tokenizer), hidden_size=64), "intermediate_size": 128,
               "pad_token_id": small_tokenizer.pad_token_id}  # fmt: skip
    model = tiny_cmlm(encoder=encoder, num_projections=2, schedule="cmlm")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(300):
        torch.manual_seed(100 + step)
        model(**collate([rows[(8 * step + i) % 32] for i in range(8)])).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    shift = torch.roll(torch.arange(32), 1)
    for seed in range(4):
        torch.manual_seed(seed)
        batch = collate(rows)
        shuffled = {**batch, "first_input_ids": batch["first_input_ids"][shift],
                    "first_attention_mask": batch["first_attention_mask"][shift]}  # fmt: skip
        with torch.no_grad():
            true, other = model(**batch).loss_cmlm.item(), model(**shuffled).loss_cmlm.item()
        assert other > true + 1.0, (seed, true, other)


def test_a_new_masked_lm_head_trains_alone_first(tmp_path, tokenizer, adjacent, minilm_path, caplog):
    """MiniLM ships no masked-LM head: from_encoder asks for a warm-up in which the encoder is frozen (the training
    argument ``encoder_frozen_steps`` overrides it), and XlsrTrainer freezes it for exactly those optimizer
    steps."""
    from hf_xlsr.trainers.trainer import schedule_steps

    with caplog.at_level("WARNING"):
        model = CmlmModel.from_encoder(minilm_path, languages=["en", "fr"])
    assert model.encoder_frozen_steps == NEW_HEAD_WARMUP_STEPS and tiny_cmlm().encoder_frozen_steps == 0
    assert "has no masked-LM head" in caplog.text and "encoder_frozen_steps" in caplog.text
    unset, set_to_5 = (XlsrTrainingArguments(output_dir=str(tmp_path), encoder_frozen_steps=n) for n in (None, 5))
    assert schedule_steps(model, unset)["encoder_frozen_steps"] == NEW_HEAD_WARMUP_STEPS
    assert schedule_steps(model, set_to_5)["encoder_frozen_steps"] == 5
    model = tiny_cmlm(schedule="cmlm+br")
    start = {k: v.clone() for k, v in model.state_dict().items()}
    after_warmup = {}

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step == 2:
                after_warmup.update({k: v.clone() for k, v in model.state_dict().items()})

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        encoder_frozen_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        max_steps=4,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    XlsrTrainer(
        model=model,
        args=args,
        train_dataset=adjacent.select(range(32)),
        callbacks=[Snapshot()],
        data_collator=CmlmCollator(tokenizer, ["en", "fr"], max_length=32),
    ).train()
    end = model.state_dict()

    def changed(a, b, prefix):
        return any(not torch.equal(a[k], b[k]) for k in a if k.startswith(prefix))

    assert not changed(start, after_warmup, "masked_lm.bert.")  # steps 1-2: the encoder is frozen ...
    assert changed(start, after_warmup, "masked_lm.cls.") and changed(start, after_warmup, "projections.")
    assert changed(after_warmup, end, "masked_lm.bert.")  # ... steps 3-4: it trains


def test_cross_lingual_nli_head(tokenizer):
    model = tiny_cmlm(nli_head=True).eval()
    premise = tokenizer(["A man plays a guitar.", "A dog runs."], padding=True, return_tensors="pt")
    hypothesis = tokenizer(["Quelqu'un fait de la musique.", "Un chat dort."], padding=True, return_tensors="pt")
    labels = torch.tensor([0, 2])
    out = model(
        premise_input_ids=premise["input_ids"],
        premise_attention_mask=premise["attention_mask"],
        hypothesis_input_ids=hypothesis["input_ids"],
        hypothesis_attention_mask=hypothesis["attention_mask"],
        nli_labels=labels,
    )
    u = model.sentence_vector(premise["input_ids"], premise["attention_mask"])
    v = model.sentence_vector(hypothesis["input_ids"], hypothesis["attention_mask"])
    logits = model.nli_classifier(torch.cat([u, v, (u - v).abs(), u * v], dim=-1)).double()
    expected = -torch.log_softmax(logits, dim=-1)[torch.arange(2), labels].mean()
    assert out.loss_nli.item() == pytest.approx(expected.item(), rel=1e-5)
    assert model.nli_classifier.in_features == 4 * 32


def test_pcr_removes_each_languages_top_component_and_exports_it(tmp_path, tokenizer, heldout_pairs):
    model = tiny_cmlm(pcr_components=1).eval()
    tokenizers = tokenizer
    english, french = list(heldout_pairs["en"][:60]), list(heldout_pairs["fr"][:60])
    raw = as_encoder(model, tokenizers)
    raw_en = raw(english, "en")
    fit_language_components(model, tokenizers, {"en": english, "fr": french})
    assert model.language_specific_heads
    _, _, vt = np.linalg.svd(raw_en.astype(np.float64), full_matrices=False)
    assert abs(float(np.dot(vt[0], model.pcr[0, 0].numpy()))) == pytest.approx(1.0, abs=1e-5)
    cleaned = as_encoder(model, tokenizers)(english, "en")
    expected = raw_en - np.outer(raw_en @ vt[0], vt[0])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(cleaned, expected, atol=1e-5)

    model.save_pretrained(tmp_path / "model")
    loaded = CmlmModel.from_pretrained(tmp_path / "model")
    assert torch.equal(loaded.pcr, model.pcr) and loaded.language_specific_heads
    folder = export_sentence_transformers(model, tokenizers, tmp_path / "export")
    from sentence_transformers import SentenceTransformer

    exported = SentenceTransformer(str(folder))  # PCR differs per language: a route each
    assert [type(m).__name__ for m in exported] == ["Router", "Normalize"]
    assert [type(m).__name__ for m in exported[0].sub_modules["fr"]] == ["Transformer", "Pooling", "Dense"]
    assert exported[0].sub_modules["fr"][0] is exported[0].sub_modules["en"][0]  # one encoder, saved once
    for language, texts in (("en", english[:5]), ("fr", french[:5])):
        np.testing.assert_allclose(
            exported.encode(texts, task=language), as_encoder(model, tokenizers)(texts, language), atol=1e-5
        )


def test_save_load_round_trip_keeps_the_tied_head(tmp_path):
    model = tiny_cmlm(schedule="s1")
    model.save_pretrained(tmp_path)
    loaded = CmlmModel.from_pretrained(tmp_path)
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    head, embeddings = loaded.masked_lm.cls.predictions.decoder.weight, loaded.masked_lm.get_input_embeddings().weight
    assert head.data_ptr() == embeddings.data_ptr()
