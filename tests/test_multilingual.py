"""Many languages in one run: language pairs and their data with one id per meaning, the sampler over pairs, a
sentence never its own negative in any language, one-line errors before training, and N-language evaluation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter

import datasets
import numpy as np
import pytest
import torch
import yaml
from conftest import MINILM, tiny_dual_momentum, tiny_encoder_config
from test_multiprocess import ROOT

from hf_xlsr import DualMomentumConfig
from hf_xlsr.data import BitextFormatError, load_bible, resolve_reference
from hf_xlsr.data.multilingual import (
    LanguagePairSampler,
    load_multiway,
    load_pair_datasets,
    pair_name,
    resolve_language_pairs,
    sampling_weights,
    stack_pairs,
)
from hf_xlsr.modeling.functional import in_batch_alignment_loss
from hf_xlsr_cli import main


def test_pairs_are_english_centric_by_default_and_checked_when_named():
    assert resolve_language_pairs(["en", "fr", "de"]) == [("en", "fr"), ("en", "de")]
    assert resolve_language_pairs(["en", "fr", "de"], ["en-fr", ["de", "fr"]]) == [("en", "fr"), ("de", "fr")]
    for pairs, message in (
        (["en-xx"], "language pair en-xx names 'xx', which is not one of the languages"),
        (["en-fr", "fr-en"], "language pair fr-en is named twice"),
        (["en-fr"], "language 'de' is in no language pair"),
        (["en-en"], "name two different languages"),
    ):
        with pytest.raises(ValueError, match=message):
            resolve_language_pairs(["en", "fr", "de"], pairs)
    with pytest.raises(ValueError, match="at least two languages"):
        resolve_language_pairs(["en"])


def test_bible_pairs_share_one_id_per_verse_across_languages():
    parts = load_pair_datasets("bible", resolve_language_pairs(["en", "fr", "de", "zh"]), "train")
    assert list(parts) == ["en-fr", "en-de", "en-zh"]
    first = {name: dict(zip(part["example_id"], part["en"], strict=True)) for name, part in parts.items()}
    shared = set(first["en-fr"]) & set(first["en-zh"])
    assert len(shared) > 20_000
    genesis = parts["en-fr"]["example_id"][0]  # Genesis 1:1, the same meaning in every pair
    assert parts["en-zh"]["example_id"][0] == genesis and first["en-fr"][genesis] == first["en-zh"][genesis]
    assert all(first["en-fr"][verse] == first["en-zh"][verse] for verse in shared)
    stacked = stack_pairs(parts)
    assert stacked.column_names[:6] == ["source", "target", "example_id", "source_language", "target_language", "pair"]
    assert len(stacked) == sum(len(part) for part in parts.values())
    row = stacked[len(parts["en-fr"])]  # the first row of en-de
    assert (row["source_language"], row["target_language"], row["pair"]) == ("en", "de", 1)


def test_a_multiway_file_with_empty_cells_and_per_pair_files(tmp_path):
    multiway = tmp_path / "three.tsv"
    multiway.write_text("Hello.\tBonjour.\tHallo.\nYes.\t\tJa.\nNo.\tNon.\t\n", encoding="utf-8")
    parts = load_pair_datasets(str(multiway), [("en", "fr"), ("en", "de")])
    assert parts["en-fr"]["fr"] == ["Bonjour.", "Non."] and parts["en-fr"]["example_id"] == [0, 1]
    assert parts["en-de"]["de"] == ["Hallo.", "Ja."] and parts["en-de"]["example_id"] == [0, 2]  # line = meaning
    rows = load_multiway(str(multiway), ["en", "fr", "de"])
    assert rows["en"] == ["Hello."]  # held-out sets keep the lines with every language
    (tmp_path / "en_fr.tsv").write_text("Hello.\tBonjour.\n", encoding="utf-8")
    (tmp_path / "en_de.jsonl").write_text('{"en": "Yes.", "de": "Ja."}\n', encoding="utf-8")
    parts = load_pair_datasets(
        {"en-fr": str(tmp_path / "en_fr.tsv"), "en-de": str(tmp_path / "en_de.jsonl")}, [("en", "fr"), ("en", "de")]
    )
    assert parts["en-de"]["de"] == ["Ja."] and parts["en-fr"]["example_id"] != parts["en-de"]["example_id"]
    dataset_dict = datasets.DatasetDict({"en-fr": datasets.Dataset.from_dict({"en": ["a b c"], "fr": ["d e f"]})})
    assert load_pair_datasets(dataset_dict, [("en", "fr")])["en-fr"]["example_id"] == [0]


def test_codes_with_hyphens_name_their_pairs_and_stack(tmp_path):
    """The catalogues' codes hold hyphens (zh-hans, pt-br, cbk-zam): a pair's name reads back as its two codes
    against the languages it is made of, from the user's list of pairs to the stacked training rows."""
    from hf_xlsr.data.multilingual import pair_of

    assert pair_of("en-zh-hans", ["en", "zh-hans"]) == ("en", "zh-hans")
    assert pair_of("pt-br-cbk-zam#1", ["cbk-zam", "pt-br", "en"]) == ("pt-br", "cbk-zam")
    with pytest.raises(ValueError, match="'en-fr': no way to read it as two of the languages"):
        pair_of("en-fr", ["en", "de"])
    with pytest.raises(ValueError, match="more than one way"):
        pair_of("a-b-c", ["a", "b-c", "a-b", "c"])
    languages = ["en", "zh-hans", "pt-br"]
    assert resolve_language_pairs(languages, ["en-zh-hans", "pt-br-zh-hans"]) == [
        ("en", "zh-hans"),
        ("pt-br", "zh-hans"),
    ]
    multiway = tmp_path / "catalogue.jsonl"
    lines = [{"en": "Save", "zh-hans": "保存", "pt-br": "Salvar"}, {"en": "Open the file", "zh-hans": "打开文件"}]
    multiway.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    parts = load_pair_datasets(str(multiway), resolve_language_pairs(languages))
    assert parts["en-zh-hans"]["zh-hans"] == ["保存", "打开文件"] and parts["en-pt-br"]["pt-br"] == ["Salvar"]
    stacked = stack_pairs(parts)
    assert stacked["target_language"] == ["zh-hans", "zh-hans", "pt-br"] and stacked["target"][2] == "Salvar"
    assert stacked["example_id"][0] == stacked["example_id"][2]  # one line, one meaning


def test_bad_multilingual_data_fails_naming_the_pair_file_or_language(tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    pairs = [("en", "fr"), ("en", "de")]
    with pytest.raises(BitextFormatError, match=f"{empty}: no sentence pairs"):
        load_pair_datasets({"en-fr": str(empty), "en-de": "bible"}, pairs)
    with pytest.raises(BitextFormatError, match="no data for the language pair en-de"):
        load_pair_datasets({"en-fr": "bible"}, pairs)
    with pytest.raises(BitextFormatError, match="train data names the pair 'en-xx'"):
        load_pair_datasets({"en-fr": "bible", "en-de": "bible", "en-xx": "bible"}, pairs)
    multiway = tmp_path / "no_german.tsv"
    multiway.write_text("Hello.\tBonjour.\t\n", encoding="utf-8")
    with pytest.raises(BitextFormatError, match=f"{multiway}: no line has both en and de"):
        load_pair_datasets(str(multiway), pairs)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_pairs_are_drawn_with_probability_proportional_to_size_to_the_alpha(alpha):
    sizes = [4000, 1000, 250]
    pairs = [p for p, n in enumerate(sizes) for _ in range(n)]
    sampler = LanguagePairSampler(pairs, batch_size=8, alpha=alpha, batches="mixed", seed=3)
    drawn = Counter(pairs[i] for i in sampler)
    expected = [n**alpha / sum(m**alpha for m in sizes) for n in sizes]  # written out from the definition
    assert sampling_weights(sizes, alpha) == pytest.approx(expected)
    for pair, share in enumerate(expected):  # 5,250 draws: within 4 standard deviations of the expectation
        sd = math.sqrt(share * (1 - share) / len(pairs))
        assert abs(drawn[pair] / len(pairs) - share) < 4 * sd, (alpha, pair, drawn)
    assert len(list(sampler)) == len(sampler) == len(pairs)


def test_one_pair_batches_and_mixed_batches():
    pairs = [p for p, n in enumerate([40, 40, 40]) for _ in range(n)]
    one = list(LanguagePairSampler(pairs, batch_size=8, alpha=1.0, batches="one_pair", seed=0))
    batches = [one[i : i + 8] for i in range(0, len(one), 8)]
    assert all(len({pairs[i] for i in batch}) == 1 for batch in batches)
    assert len({pairs[batch[0]] for batch in batches}) == 3
    mixed = list(LanguagePairSampler(pairs, batch_size=8, alpha=1.0, batches="mixed", seed=0))
    assert sum(len({pairs[i] for i in mixed[i : i + 8]}) > 1 for i in range(0, len(mixed), 8)) > 10
    sampler = LanguagePairSampler(pairs, batch_size=8, batches="mixed", seed=0)
    assert list(sampler) == mixed  # deterministic ...
    sampler.set_epoch(1)
    assert list(sampler) != mixed  # ... and another order each epoch
    with pytest.raises(ValueError, match="language_batches must be one of"):
        LanguagePairSampler(pairs, 8, batches="interleaved")


def test_a_querys_translation_in_a_third_language_is_never_its_negative(tokenizer):
    """A queue holding the German key of verse A; then an en-fr batch whose first row is verse A and an en-de row of
    verse A: neither the queued German key nor the in-batch German key may count as a negative of A's query."""
    model = tiny_dual_momentum(shared_encoder=True, queue_size=8, languages=["en", "fr", "de"], temperature=0.1)
    verses = load_bible(["en", "fr", "de"], split="train").select(range(3))
    ids = torch.tensor([101, 102, 103])
    german = {"source": list(verses["en"]), "target": list(verses["de"])}
    model.train()
    model(**encode(tokenizer, german), example_ids=ids)  # queue_y: de keys of verses A, B, C
    model.eval()
    batch = {"source": [verses["en"][0], verses["en"][1]], "target": [verses["fr"][0], verses["fr"][1]]}
    with torch.no_grad():
        out = model(**encode(tokenizer, batch), example_ids=ids[:2])
        queries = model.get_sentence_embeddings(**inputs(tokenizer, batch["source"])).double()
        keys = model.momentum_keys(**inputs(tokenizer, batch["target"]), side="y").double()
    queued, queued_ids = (t.clone() for t in model.queue_y.negatives())
    assert queued_ids.tolist() == [101, 102, 103]
    expected = 0.0
    for i in range(2):  # Eq. 2: the positive and the queue, less the keys of the query's own meaning
        logits = [queries[i] @ keys[i]] + [
            queries[i] @ k for k, m in zip(queued.double(), queued_ids, strict=True) if int(m) != int(ids[i])
        ]
        expected -= float(torch.log_softmax(torch.stack(logits) / 0.1, dim=0)[0]) / 2
    assert out.loss_source_to_target.item() == pytest.approx(expected, rel=1e-5)
    # in the batch: rows 0 and 1 both hold verse A (en-fr and en-de); row 1's German key is not row 0's negative
    u, v = torch.randn(3, 8, dtype=torch.float64), torch.randn(3, 8, dtype=torch.float64)
    same = torch.tensor([5, 5, 9])
    scores = u @ v.T
    reference = 0.0
    for direction in (scores, scores.T):
        for i in range(3):
            kept = [direction[i, i]] + [direction[i, j] for j in range(3) if j != i and same[j] != same[i]]
            reference -= float(torch.log_softmax(torch.stack(kept), dim=0)[0]) / 3
    assert in_batch_alignment_loss(u, v, same).item() == pytest.approx(reference, rel=1e-6)


def inputs(tokenizer, texts):
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


def encode(tokenizer, batch):
    return {
        f"{side}_{key}": value
        for side in ("source", "target")
        for key, value in inputs(tokenizer, batch[side]).items()
    }


def test_per_language_encoders_take_two_languages_only():
    with pytest.raises(Exception, match="one query encoder per language takes exactly two languages, got 3"):
        DualMomentumConfig(encoder_x=tiny_encoder_config(), languages=["en", "fr", "de"])
    DualMomentumConfig(encoder_x=tiny_encoder_config(), languages=["en", "fr", "de"], shared_encoder=True)


def run_file(tmp_path, **values):
    values = {"model_type": "xlsr_dual_momentum", "tokenizer": MINILM, "train_data": "bible",
              "languages": ["en", "fr"], "model_config": {"encoder_x": tiny_encoder_config(), "queue_size": 16},
              "max_train_pairs": 40, "max_eval_pairs": 20, "max_length": 24, "per_device_train_batch_size": 4,
              "max_steps": 1, "output_dir": str(tmp_path / "run"), "report_to": "none", **values}  # fmt: skip
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"languages": ["en", "fr", "de"], "language_pairs": [["en", "xx"]]},
            "language pair en-xx names 'xx', which is not one of the languages",
        ),
        ({"languages": ["en", "fr", "de"], "language_pairs": ["en-fr"]}, "language 'de' is in no language pair"),
        ({"languages": ["en", "fr", "de"]}, "one query encoder per language takes exactly two languages, got 3"),
        ({"languages": ["en", "fr"], "train_data": {"en-fr": "EMPTY"}}, "EMPTY: no sentence pairs"),
        (
            {
                "languages": ["en", "fr", "de"],
                "train_data": {"en-fr": "bible"},
                "model_config": {"encoder_x": tiny_encoder_config(), "shared_encoder": True},
            },
            "no data for the language pair en-de",
        ),
    ],
    ids=["unknown_language", "language_without_pair", "per_language_encoders", "empty_pair_file", "no_data"],
)
def test_bad_multilingual_runs_fail_in_one_line_before_training(tmp_path, capsys, values, message):
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    if isinstance(values.get("train_data"), dict):
        values["train_data"] = {k: str(empty) if v == "EMPTY" else v for k, v in values["train_data"].items()}
        message = message.replace("EMPTY", str(empty))
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(run_file(tmp_path, **values))])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("hf-xlsr train: error:") and message in error, error
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_evaluate_scores_every_pair_of_many_languages_with_a_table_and_a_heat_map(tmp_path, capsys):
    output = tmp_path / "results.json"
    command = ["evaluate", "--model", resolve_reference(MINILM), "--tasks", "retrieval", "--languages", "en", "fr",
               "de", "es", "--max-pairs", "60", "--output", str(output), "--output-dir", str(tmp_path)]  # fmt: skip
    assert main(command) == 0
    results = json.loads(output.read_text())["retrieval"]
    directions = [key for key in results if key.endswith("_accuracy") and "2" in key]
    assert len(directions) == 12  # every ordered pair of four languages
    others = ("fr", "de", "es")
    trained = [results[f"retrieval_{a}2{b}_accuracy"] for o in others for a, b in (("en", o), (o, "en"))]
    zero_shot = [results[f"retrieval_{a}2{b}_accuracy"] for a in others for b in others if a != b]
    assert results["retrieval_trained_accuracy"] == pytest.approx(np.mean(trained))
    assert results["retrieval_zero_shot_accuracy"] == pytest.approx(np.mean(zero_shot))
    assert results["retrieval_accuracy"] == pytest.approx(np.mean(trained + zero_shot))  # every direction
    assert results["sample"] == "60 unique rows, drawn with seed 0"
    printed = capsys.readouterr().out
    assert "| language | en → language | language → en | mean |" in printed and "| de |" in printed
    assert "pairs never trained" in printed
    assert (tmp_path / "retrieval.png").stat().st_size > 10_000


def test_the_multilingual_sentence_transformers_example_trains(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "train_sentence_transformers_multilingual.py"),
            "--model",
            MINILM,
            "--languages",
            "en",
            "fr",
            "de",
            "--max-steps",
            "3",
            "--output-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "run" / "final" / "modules.json").is_file()


def test_a_pivot_sentence_shared_by_two_pair_files_is_one_meaning(tmp_path):
    """ "Hello world." in en_fr.tsv and en_de.tsv is one meaning (one id), so the queue and the batch never take "Hallo
    Welt." as a negative of "Hello world." or of "Bonjour le monde." (the masking by id is tested above); meanings
    also join through a chain of files (Merci = Danke = Thank you); other rows stay apart."""
    (tmp_path / "en_fr.tsv").write_text("Hello world.\tBonjour le monde.\nGood night.\tBonne nuit.\n", "utf-8")
    (tmp_path / "en_de.tsv").write_text("Thank you.\tDanke.\nHello world.\tHallo Welt.\n", "utf-8")
    (tmp_path / "fr_de.tsv").write_text("Bonne nuit.\tGute Nacht.\nMerci.\tDanke.\n", "utf-8")
    pairs = [("en", "fr"), ("en", "de"), ("fr", "de")]
    parts = load_pair_datasets({pair_name(p): str(tmp_path / f"{p[0]}_{p[1]}.tsv") for p in pairs}, pairs)
    ids = {name: part["example_id"] for name, part in parts.items()}
    assert ids["en-fr"][0] == ids["en-de"][1]  # Hello world. = Bonjour le monde. = Hallo Welt.
    assert ids["en-fr"][1] == ids["fr-de"][0]  # Bonne nuit. = Gute Nacht.
    assert ids["en-de"][0] == ids["fr-de"][1]  # Danke. = Thank you. = Merci.
    assert len({ids["en-fr"][0], ids["en-fr"][1], ids["en-de"][0]}) == 3
    stacked = stack_pairs(parts)  # what XlsrTrainer trains on, and the queue keeps with its keys
    hello = {
        (row["target_language"], row["example_id"])
        for row in stacked
        if "Hello world." in (row["source"], row["target"])
    }
    assert len({meaning for _, meaning in hello}) == 1 and {language for language, _ in hello} == {"fr", "de"}
    bible = load_pair_datasets({"en-fr": "bible", "en-de": str(tmp_path / "en_de.tsv")}, [("en", "fr"), ("en", "de")])
    assert len(set(bible["en-de"]["example_id"]) & set(bible["en-fr"]["example_id"])) == 0  # no sentence shared


def test_one_default_sampling_temperature_whatever_the_arguments(tmp_path, tokenizer):
    """XlsrTrainingArguments, a plain TrainingArguments handed to XlsrTrainer, and LanguagePairSampler itself draw
    the pairs with the same default alpha (0.5), whose weights are size^0.5."""
    from transformers import TrainingArguments

    from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

    parts = {"en-fr": datasets.Dataset.from_dict({"en": ["a"] * 400, "fr": ["b"] * 400, "example_id": range(400)}),
             "en-de": datasets.Dataset.from_dict({"en": ["c"] * 100, "de": ["d"] * 100,
                                                  "example_id": range(400, 500)})}  # fmt: skip
    stacked = stack_pairs(parts)
    expected = torch.tensor([400**0.5, 100**0.5]) / (400**0.5 + 100**0.5)
    assert torch.allclose(LanguagePairSampler(stacked["pair"], batch_size=4).weights, expected.float())
    for arguments in (XlsrTrainingArguments, TrainingArguments):
        args = arguments(output_dir=str(tmp_path), report_to="none", use_cpu=True, remove_unused_columns=False)
        trainer = XlsrTrainer(
            model=tiny_dual_momentum(), args=args, train_dataset=stacked, data_collator=BitextCollator(tokenizer)
        )
        assert torch.allclose(trainer._get_train_sampler().weights, expected.float()), arguments
