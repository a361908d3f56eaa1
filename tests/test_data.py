"""Parallel-corpus loading: bad files name file and line; the offline corpora split by book and topic."""

from __future__ import annotations

import datasets
import pytest
from conftest import batch_of  # noqa: F401  (conftest sets HF_HUB_OFFLINE before datasets is used)

from hf_xlsr.data import (
    BOOK_GROUPS,
    HELDOUT_BOOKS,
    HSK_HELDOUT_TOPICS,
    BitextFormatError,
    load_bible,
    load_bitext,
    load_hsk,
    unique_pairs,
)
from hf_xlsr.trainers import BitextCollator


def write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "name, content",
    [
        ("pairs.tsv", b"\nHello.\tBonjour.\n \t \n\nThanks.\tMerci.\n\n"),
        ("pairs.jsonl", b'{"en": "Hello.", "fr": "Bonjour."}\n\n  \n{"en": "Thanks.", "fr": "Merci."}\n\n'),
    ],
    ids=["tsv", "jsonl"],
)
def test_blank_lines_are_skipped_and_counted_as_pandas_and_datasets_skip_them(tmp_path, name, content, caplog):
    path = write(tmp_path / name, content)
    with caplog.at_level("INFO", logger="hf_xlsr.data.bitext"):
        dataset = load_bitext(path, ["en", "fr"])
    assert dataset["en"] == ["Hello.", "Thanks."] and dataset["fr"] == ["Bonjour.", "Merci."]
    blank = 4 if name.endswith(".tsv") else 3
    assert f"{name}: skipped {blank} blank lines" in caplog.text


def test_a_bad_line_after_blank_lines_is_named_by_its_own_number(tmp_path):
    path = write(tmp_path / "pairs.tsv", b"Hello.\tBonjour.\n\n\nThanks. Merci.\n")
    with pytest.raises(BitextFormatError, match=r"pairs\.tsv:4: expected 2 tab-separated columns"):
        load_bitext(path, ["en", "fr"])


def test_tsv_loads_columns(tmp_path):
    path = write(tmp_path / "pairs.tsv", b"Hello.\tBonjour.\r\nThank you.\tMerci.\n")
    dataset = load_bitext(path, ["en", "fr"])
    assert dataset.column_names == ["en", "fr"]
    assert dataset["fr"] == ["Bonjour.", "Merci."]


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b"Hello.\tBonjour.\nThanks.\tMerci.\textra\n",
            r"pairs\.tsv:2: expected 2 tab-separated columns \(en, fr\), found 3",
        ),
        (b"Hello.\tBonjour.\nThanks. Merci.\n", r"pairs\.tsv:2: expected 2 tab-separated columns \(en, fr\), found 1"),
        (b"Hello.\tBonjour.\nCaf\xe9.\tCaf\xc3\xa9.\n", r"pairs\.tsv:2: invalid UTF-8 \(byte 0xe9 at column 4\)"),
        (b"Hello.\t \n", r"pairs\.tsv:1: column 'fr' is empty"),
        (b"", r"pairs\.tsv: no sentence pairs"),
    ],
)
def test_bad_tsv_names_file_and_line(tmp_path, content, message):
    path = write(tmp_path / "pairs.tsv", content)
    with pytest.raises(BitextFormatError, match=message):
        load_bitext(path, ["en", "fr"])


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"en": "Hi", "fr": "Salut"}\n{"en": "Yes"}\n', r"pairs\.jsonl:2: missing field 'fr'"),
        (b'{"en": "Hi", "fr": "Salut"}\n{"en": "Yes", "fr": \n', r"pairs\.jsonl:2: invalid JSON"),
        (b'{"en": "Hi", "fr": "Salut"}\n["Yes", "Oui"]\n', r"pairs\.jsonl:2: expected a JSON object, found list"),
        (b'{"en": "Hi", "fr": 3}\n', r"pairs\.jsonl:1: field 'fr' must be a non-empty string"),
        (b'{"en": "Hi", "fr": "Salut"}\n\xff\n', r"pairs\.jsonl:2: invalid UTF-8"),
    ],
)
def test_bad_jsonl_names_file_and_line(tmp_path, content, message):
    path = write(tmp_path / "pairs.jsonl", content)
    with pytest.raises(BitextFormatError, match=message):
        load_bitext(path, ["en", "fr"])


def test_jsonl_keeps_extra_shared_fields(tmp_path):
    path = write(
        tmp_path / "pairs.jsonl",
        b'{"en": "Hi", "fr": "Salut", "premise": "A", "hypothesis": "B", "label": 1}\n'
        b'{"en": "Yes", "fr": "Oui", "premise": "C", "hypothesis": "D", "label": 0}\n',
    )
    dataset = load_bitext(path, ["en", "fr"])
    assert dataset.column_names == ["en", "fr", "hypothesis", "label", "premise"]


def test_dataset_sources_are_checked(tmp_path):
    dataset = datasets.Dataset.from_dict({"translation": [{"en": "Hi", "fr": "Salut"}]})
    flat = load_bitext(dataset, ["translation.en", "translation.fr"])
    assert flat["translation.fr"] == ["Salut"]
    with pytest.raises(BitextFormatError, match="no column 'de'"):
        load_bitext(datasets.Dataset.from_dict({"en": ["a"], "fr": ["b"]}), ["en", "de"])
    with pytest.raises(FileNotFoundError, match="missing.tsv: no such file"):
        load_bitext(tmp_path / "missing.tsv", ["en", "fr"])
    with pytest.raises(BitextFormatError, match="unknown file type '.csv'"):
        load_bitext(write(tmp_path / "pairs.csv", b"a,b\n"), ["en", "fr"])


def test_bible_split_is_by_book_and_disjoint():
    train = load_bible(["en", "fr"], split="train")
    heldout = load_bible(["en", "fr"], split="heldout")
    assert set(heldout["book"]) == set(HELDOUT_BOOKS)
    assert not set(train["book"]) & set(HELDOUT_BOOKS)
    assert len(train) + len(heldout) < len(load_bible(["en", "fr"]))  # held-out verses repeated in training go
    assert len(train) > 20000 and len(heldout) > 5000
    assert not set(train["en"]) & set(unique_pairs(heldout, ["en", "fr"])["en"])
    first = heldout[0]
    assert (first["book"], first["chapter"], first["verse"]) == (6, 1, 1)
    assert first["fr"].startswith("Après la mort de Moïse")
    assert first["group"] == BOOK_GROUPS[6] == "history"


def test_bible_translations_and_cleaning():
    pairs = load_bible(["en", "en_kjv"], translations={"en_kjv": "k"})
    assert pairs[0]["en_kjv"] == "In the beginning God created the heaven and the earth."
    assert not any("`" in t or "[" in t for t in pairs["en"][:5000])
    assert min(len(t) for t in load_bible(["en", "en_bbe"], translations={"en_bbe": "3"})["en_bbe"]) >= 3
    with pytest.raises(ValueError, match="the Bible has no language 'xx'"):
        load_bible(["en", "xx"])


def test_hsk_split_by_topic():
    train, heldout = load_hsk("train"), load_hsk("heldout")
    assert set(heldout["topic"]) == set(HSK_HELDOUT_TOPICS)
    assert not set(train["topic"]) & set(HSK_HELDOUT_TOPICS)
    assert len(train) + len(heldout) == 4354
    assert heldout.column_names == ["en", "zh", "level", "topic"]


def test_collator_tokenizes_each_side_and_nli_columns(tokenizer):
    rows = [
        {"en": "Hello.", "fr": "Bonjour.", "premise": "A man sings.", "hypothesis": "A person sings.", "label": 0},
        {"en": "Good night.", "fr": "Bonne nuit.", "premise": "A dog.", "hypothesis": "A cat.", "label": 2},
    ]
    batch = BitextCollator(tokenizer, languages=["en", "fr"])(rows)
    assert batch["source_input_ids"].shape[0] == 2 and batch["target_attention_mask"].shape[0] == 2
    assert tokenizer.decode(batch["target_input_ids"][0], skip_special_tokens=True) == "bonjour."
    assert batch["nli_labels"].tolist() == [0, 2]
    assert "premise_input_ids" in batch and "hypothesis_attention_mask" in batch
    with pytest.raises(KeyError, match="batch has no column 'de'"):
        BitextCollator(tokenizer, languages=["en", "de"])(rows)


def test_lists_of_translations_give_every_combination_with_one_id_per_verse():
    from hf_xlsr.data import load_bible

    single = load_bible(["en", "fr"], {"en": "4", "fr": "l"}, split="heldout")
    combined = load_bible(["en", "fr"], {"en": ["4", "k"], "fr": ["l", "o"]}, split="heldout")
    assert abs(len(combined) - 4 * len(single)) < 0.05 * len(single)  # a few verses lack a text in one translation
    first = combined.filter(lambda row: (row["book"], row["chapter"], row["verse"]) == (6, 1, 1))
    assert len(first) == 4 and len(set(first["example_id"])) == 1  # Joshua 1:1 in 4 combinations, one id
    assert len(set(first["en"])) == 2 and len(set(first["fr"])) == 2
