"""LoRA (peft) on the encoders: only adapters train, momentum copies share the frozen base weights, checkpoints and
resumes keep that, adapters save and load on their own, and exports carry the adapters merged into the weights."""

from __future__ import annotations

import pytest
import torch
from conftest import batch_of, tiny_dual_momentum
from safetensors import safe_open
from sentence_transformers import SentenceTransformer
from test_queue_extension import build
from test_trainer import StopAt, make_trainer
from transformers import AutoModel

from hf_xlsr import DualMomentumModel
from hf_xlsr.export import export_sentence_transformers
from hf_xlsr.modeling.ema import momentum_pairs
from hf_xlsr.modeling.pooling import l2_normalize, pool

LORA = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0}


def adapter_names(module):
    return [name for name, _ in module.named_parameters() if "lora_" in name]


def test_only_adapters_train_and_momentum_encoders_share_the_base():
    model = tiny_dual_momentum(lora=LORA)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in name or ".lora_B." in name for name in trainable)
    for query, key in [(model.encoder_x, model.momentum_encoder_x), (model.encoder_y, model.momentum_encoder_y)]:
        keys = {name: k for name, k, _ in momentum_pairs(key, query)}
        for name, q in query.named_parameters():
            if "lora_" in name:  # a copy of the adapter, frozen
                assert torch.equal(q, keys[name]) and q.data_ptr() != keys[name].data_ptr()
                assert q.requires_grad and not keys[name].requires_grad
            else:  # the very tensor of the frozen base: no memory for a second copy
                assert keys[name] is q and not q.requires_grad
    own = [k for _, k, q in momentum_pairs(model.momentum_encoder_x, model.encoder_x) if k is not q]
    assert len(own) == len(adapter_names(model.encoder_x))


def test_ema_moves_only_adapter_weights_by_the_formula():
    model = tiny_dual_momentum(lora=LORA)
    with torch.no_grad():
        for name, p in model.encoder_x.named_parameters():
            if "lora_" in name:
                p.add_(torch.randn_like(p))  # as an optimizer step would
    before = {n: k.double().clone() for n, k, _ in momentum_pairs(model.momentum_encoder_x, model.encoder_x)}
    query = {n: p.detach().double().clone() for n, p in model.encoder_x.named_parameters()}
    model.momentum_update(0.9)
    for name, key, live in momentum_pairs(model.momentum_encoder_x, model.encoder_x):
        if "lora_" in name:
            expected = 0.9 * before[name] + 0.1 * query[name]
            assert torch.allclose(key.double(), expected, atol=1e-6), name
        else:
            assert key is live


def test_a_new_adapter_leaves_the_pretrained_encoder_unchanged(minilm_path, tokenizer, bible_pairs):
    batch = batch_of(tokenizer, bible_pairs)
    model = DualMomentumModel.from_encoders(minilm_path, queue_size=8, languages=["en", "fr"], lora=LORA).eval()
    plain = AutoModel.from_pretrained(minilm_path).eval()
    with torch.no_grad():
        hidden = plain(
            input_ids=batch["source_input_ids"], attention_mask=batch["source_attention_mask"]
        ).last_hidden_state
        expected = l2_normalize(pool(hidden, batch["source_attention_mask"], "mean"))
        actual = model.get_sentence_embeddings(
            batch["source_input_ids"], batch["source_attention_mask"], language="en"
        )
    assert torch.allclose(actual, expected, atol=1e-6)  # B = 0 at the start: post_init did not redraw it


def test_checkpoint_keeps_adapters_sharing_and_frozen_flags(tmp_path, tokenizer, bible_pairs):
    model = tiny_dual_momentum(lora=LORA)
    model.train()
    model(**batch_of(tokenizer, bible_pairs))  # fill the queue a little
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn_like(p))
    model.momentum_update(0.5)
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as handle:
        saved = set(handle.keys())
    assert not any(name.startswith("momentum_contrast.momentum.encoder") and "lora_" not in name for name in saved)
    assert any(name.startswith("momentum_contrast.momentum.encoder_x") and "lora_" in name for name in saved)

    loaded = DualMomentumModel.from_pretrained(tmp_path)
    flags = {n: p.requires_grad for n, p in model.named_parameters(remove_duplicate=False)}
    assert {n: p.requires_grad for n, p in loaded.named_parameters(remove_duplicate=False)} == flags
    for name, p in loaded.encoder_y.named_parameters():
        if "lora_" not in name:
            assert loaded.momentum_encoder_y.get_parameter(name) is p
    reference, state = model.state_dict(), loaded.state_dict()
    assert reference.keys() == state.keys()
    assert all(torch.equal(reference[n], state[n]) for n in reference)
    loaded.train()
    torch.manual_seed(1)
    a = model(**batch_of(tokenizer, bible_pairs, offset=4)).loss
    torch.manual_seed(1)
    b = loaded(**batch_of(tokenizer, bible_pairs, offset=4)).loss
    assert torch.equal(a, b)


def test_from_pretrained_keeps_full_momentum_encoders_frozen(tmp_path):
    tiny_dual_momentum().save_pretrained(tmp_path)
    loaded = DualMomentumModel.from_pretrained(tmp_path)
    assert not list(loaded.momentum_encoder_x.parameters())  # its weights are float32 buffers
    assert all(p.requires_grad for p in loaded.encoder_x.parameters())


def test_resume_with_adapters_continues_exactly(tmp_path, tokenizer, bible_pairs):
    def model():
        return tiny_dual_momentum(queue_size=12, lora=LORA)

    straight = make_trainer(tmp_path / "straight", tokenizer, bible_pairs, model=model(), max_steps=4)
    straight.train()
    first = make_trainer(
        tmp_path / "split", tokenizer, bible_pairs, model=model(), max_steps=4, save_strategy="steps", save_steps=2
    )
    first.add_callback(StopAt(2))
    first.train()
    resumed = make_trainer(
        tmp_path / "split", tokenizer, bible_pairs, model=model(), max_steps=4, save_strategy="steps", save_steps=2
    )
    resumed.train(resume_from_checkpoint=str(tmp_path / "split" / "checkpoint-2"))
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert resumed.model.momentum_encoder_x.get_parameter(
        "embeddings.word_embeddings.weight"
    ) is resumed.model.encoder_x.get_parameter("embeddings.word_embeddings.weight")


def test_trained_adapters_save_load_and_export_merged(tmp_path, minilm_path, tokenizer, bible_pairs):
    model = DualMomentumModel.from_encoders(minilm_path, queue_size=16, languages=["en", "fr"], lora=LORA)
    base = {n: p.detach().clone() for n, p in model.encoder_x.named_parameters() if "lora_" not in n}
    make_trainer(tmp_path / "run", tokenizer, bible_pairs, model=model, max_steps=3).train()
    assert all(torch.equal(p, base[n]) for n, p in model.encoder_x.named_parameters() if "lora_" not in n)
    assert any(p.abs().sum() > 0 for n, p in model.encoder_x.named_parameters() if "lora_B" in n)
    model.eval()
    sentences = list(bible_pairs.select(range(20, 28))["fr"])
    features = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        expected = model.get_sentence_embeddings(features["input_ids"], features["attention_mask"], language="fr")

    folders = model.save_adapters(tmp_path / "adapters")
    assert folders == {"encoder_x": tmp_path / "adapters" / "en", "encoder_y": tmp_path / "adapters" / "fr"}
    files = sorted(p.name for p in folders["encoder_y"].iterdir())
    assert files == ["adapter_config.json", "adapter_model.safetensors"]
    with torch.no_grad():  # transformers' own PEFT loading: the base weights from the adapter's base model path
        plain = AutoModel.from_pretrained(folders["encoder_y"]).eval()
        hidden = plain(**features).last_hidden_state
    assert torch.allclose(l2_normalize(pool(hidden, features["attention_mask"], "mean")), expected, atol=1e-5)

    fresh = DualMomentumModel.from_encoders(minilm_path, queue_size=16, languages=["en", "fr"], lora=LORA)
    fresh.load_adapters(tmp_path / "adapters")
    fresh.eval()
    with torch.no_grad():
        again = fresh.get_sentence_embeddings(features["input_ids"], features["attention_mask"], language="fr")
        momentum = fresh.momentum_keys(features["input_ids"], features["attention_mask"], side="y")
    assert torch.allclose(again, expected, atol=1e-6) and torch.allclose(momentum, expected, atol=1e-6)

    exported = export_sentence_transformers(model, tokenizer, tmp_path / "export")
    files = {p.name for p in exported.rglob("*")}
    assert "adapter_config.json" not in files
    with safe_open(exported / "fr_0_Transformer" / "model.safetensors", "pt") as handle:
        assert not any("lora" in name for name in handle.keys())
    st = SentenceTransformer(str(exported), device="cpu")
    assert torch.allclose(st.encode(sentences, convert_to_tensor=True, task="fr"), expected, atol=1e-5)
    assert any(".lora_A." in n for n, _ in model.encoder_y.named_parameters())  # the live model is not merged


@pytest.mark.parametrize("kind", ["lightweight", "cmlm", "hictl"])
def test_adapters_on_the_other_models(kind, tokenizer, tmp_path):
    model, collator, rows, name = build(kind, tokenizer, lora=LORA)
    encoder = model._key_modules()[name]
    assert adapter_names(encoder)
    assert not any(p.requires_grad for n, p in encoder.named_parameters() if "lora_" not in n)
    key = model.momentum_contrast.momentum[name]
    assert all(key.get_parameter(n) is p for n, p in encoder.named_parameters() if "lora_" not in n)
    model.train()
    model(**collator([rows[i] for i in range(4)])).loss.backward()
    assert all(p.grad is None for n, p in encoder.named_parameters() if "lora_" not in n)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in encoder.named_parameters() if "lora_B" in n)
    model.save_pretrained(tmp_path / "saved")
    loaded = type(model).from_pretrained(tmp_path / "saved")
    flags = {n: p.requires_grad for n, p in model.named_parameters(remove_duplicate=False)}
    assert {n: p.requires_grad for n, p in loaded.named_parameters(remove_duplicate=False)} == flags
    reference, state = model.state_dict(), loaded.state_dict()
    assert all(torch.equal(reference[n], state[n]) for n in reference)
    folders = loaded.save_adapters(tmp_path / "adapters")
    assert folders == {"encoder" if kind == "lightweight" else "masked_lm": tmp_path / "adapters"}
    assert (tmp_path / "adapters" / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize(
    ("lora", "message"),
    [
        ({"rank": 8}, "lora is not a valid peft.LoraConfig"),
        ([8], "lora"),
        ({"r": 4, "modules_to_save": ["pooler"]}, "modules_to_save"),
    ],
)
def test_bad_lora_settings_are_refused(lora, message):
    with pytest.raises(ValueError, match=message):
        tiny_dual_momentum(lora=lora)


def test_missing_target_module_names_it():
    with pytest.raises(ValueError, match="nonexistent"):
        tiny_dual_momentum(lora={"r": 4, "target_modules": ["nonexistent"]})


def test_adapters_need_lora(tmp_path):
    with pytest.raises(ValueError, match="built without lora"):
        tiny_dual_momentum().save_adapters(tmp_path)
    model = tiny_dual_momentum(lora=LORA)
    with pytest.raises(FileNotFoundError, match="nowhere/en/adapter_config.json"):
        model.load_adapters(tmp_path / "nowhere")


def test_a_checkpoint_and_a_different_lora_setting_are_refused(tmp_path):
    tiny_dual_momentum().save_pretrained(tmp_path / "full")
    with pytest.raises(ValueError, match="saved without LoRA adapters"):
        DualMomentumModel.from_pretrained(tmp_path / "full", lora=LORA)
    tiny_dual_momentum(lora=LORA).save_pretrained(tmp_path / "lora")
    with pytest.raises(ValueError, match="holds LoRA adapters"):
        DualMomentumModel.from_pretrained(tmp_path / "lora", lora=None)
    model, info = DualMomentumModel.from_pretrained(tmp_path / "lora", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]


def test_adapter_settings_live_in_peft_files_not_in_the_config(tmp_path):
    """``save_pretrained`` writes the adapters, with their settings, in peft's format under ``adapters/``; the
    configuration holds no ``lora``; ``from_pretrained`` rebuilds the adapters from those files, and a checkpoint of
    an earlier version (``lora`` in ``config.json``, no ``adapters/``) still loads, with one warning."""
    import json
    import shutil
    import warnings

    model = tiny_dual_momentum(lora={**LORA, "target_modules": ["query", "value"]})
    with torch.no_grad():  # adapters that differ from their start, so that a load that drops them shows
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_()
    model.save_pretrained(tmp_path / "saved")
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert "lora" not in saved
    settings = json.loads((tmp_path / "saved" / "adapters" / "fr" / "adapter_config.json").read_text())
    assert (settings["r"], settings["lora_alpha"], sorted(settings["target_modules"])) == (4, 8, ["query", "value"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        loaded = DualMomentumModel.from_pretrained(tmp_path / "saved")
    assert loaded.lora["r"] == 4 and sorted(loaded.lora["target_modules"]) == ["query", "value"]
    expected = model.state_dict()
    assert all(torch.equal(tensor, expected[name]) for name, tensor in loaded.state_dict().items())

    shutil.rmtree(tmp_path / "saved" / "adapters")  # as an earlier version saved it
    (tmp_path / "saved" / "config.json").write_text(
        json.dumps({**saved, "lora": {**LORA, "target_modules": ["query", "value"]}})
    )
    with pytest.warns(FutureWarning, match="lora is no configuration field now: adapter settings live in"):
        old = DualMomentumModel.from_pretrained(tmp_path / "saved")
    assert "lora" not in old.config.to_dict()
    assert all(torch.equal(tensor, expected[name]) for name, tensor in old.state_dict().items())


def test_a_runs_lora_is_a_run_field_checked_before_anything_loads(tmp_path):
    """``lora`` sits beside ``model_config`` (a mapping in YAML, JSON on the command line); bad settings, or lora
    written into ``model_config``, are one line naming where, before any model loads."""
    from conftest import run_config

    from hf_xlsr.trainers import ConfigFileError, parse_run_arguments

    config = run_config(tmp_path / "run.yaml", lora={"r": 4, "lora_alpha": 8})
    assert parse_run_arguments(config)[0].lora == {"r": 4, "lora_alpha": 8}
    model_args = parse_run_arguments(config, ["--lora", '{"r": 2}'])[0]
    assert model_args.lora == {"r": 2}
    bad = run_config(tmp_path / "bad.yaml", lora={"rank": 8})
    with pytest.raises(ConfigFileError, match=rf"^{bad}: lora is not a valid peft.LoraConfig: "):
        parse_run_arguments(bad)
    with pytest.raises(
        ConfigFileError, match=r"^the command line: lora: expected a mapping of peft.LoraConfig fields"
    ):
        parse_run_arguments(config, ["--lora", "r=8"])
    moved = run_config(tmp_path / "moved.yaml", model_config={"lora": {"r": 4}})
    with pytest.raises(ConfigFileError, match="lora is a run field, not a field of DualMomentumConfig: set it beside"):
        parse_run_arguments(moved)
