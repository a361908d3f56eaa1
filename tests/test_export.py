"""Export to sentence-transformers: stock modules, same embeddings, no training-only state."""

from __future__ import annotations

import json

import numpy as np
import torch
from conftest import tiny_dual_momentum
from safetensors import safe_open
from sentence_transformers import SentenceTransformer

from hf_xlsr.evaluation import as_encoder
from hf_xlsr.export import export_sentence_transformers


def test_export_loads_in_sentence_transformers_with_the_same_embeddings(tmp_path, tokenizer, heldout_pairs):
    model = tiny_dual_momentum(pooling="mean")
    with torch.no_grad():  # make the two languages' encoders differ, as after training
        for p in model.encoder_y.parameters():
            p.mul_(1.1)
    folders = export_sentence_transformers(model, {"x": tokenizer, "y": tokenizer}, tmp_path / "export")
    assert folders == {"x": tmp_path / "export" / "en", "y": tmp_path / "export" / "fr"}
    encode = as_encoder(model, {"x": tokenizer, "y": tokenizer})
    for side, language in (("x", "en"), ("y", "fr")):
        modules = json.loads((folders[side] / "modules.json").read_text())
        assert all(m["type"].startswith("sentence_transformers.") for m in modules)
        st = SentenceTransformer(str(folders[side]), trust_remote_code=False)
        sentences = list(heldout_pairs[language][:8])
        np.testing.assert_allclose(st.encode(sentences), encode(sentences, language), atol=1e-5)
        with safe_open(folders[side] / "model.safetensors", "pt") as handle:
            names = list(handle.keys())
        assert not any("momentum" in n or "queue" in n for n in names)
    assert not (tmp_path / "export" / "en" / "tokenizer_x").exists()
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["en", "fr"]  # no staging folders left


def test_export_of_shared_encoder_is_one_folder_with_max_pooling(tmp_path, tokenizer):
    model = tiny_dual_momentum(shared_encoder=True, pooling="max")
    folders = export_sentence_transformers(model, {"x": tokenizer, "y": tokenizer}, tmp_path)
    assert folders == {"x": tmp_path}
    pooling = json.loads((tmp_path / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] == "max"
    st = SentenceTransformer(str(tmp_path))
    expected = as_encoder(model, {"x": tokenizer, "y": tokenizer})(["Bonjour le monde"], "fr")
    np.testing.assert_allclose(st.encode(["Bonjour le monde"]), expected, atol=1e-5)
