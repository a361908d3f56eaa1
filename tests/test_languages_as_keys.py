"""Languages as keys: what a user types, reads in a log or finds on disk names languages (or the source and target of
a pair), never the paper's sides x and y; and what hf_xlsr 0.2.0 wrote with sides still loads, with one warning per
old name that says what to write instead."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from conftest import MINILM, tiny_dual_momentum
from transformers import Trainer, TrainingArguments

from hf_xlsr import DualMomentumModel
from hf_xlsr.evaluation.loading import load_trained_model
from hf_xlsr.export import base_model_reference, export_sentence_transformers
from hf_xlsr.tokenization import LanguageTokenizers, load_tokenizers, save_tokenizers
from hf_xlsr.trainers import BitextCollator, ConfigFileError, XlsrTrainer, XlsrTrainingArguments, parse_run_arguments
from hf_xlsr_cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "tests" / "fixtures" / "v0_2_0"  # written by hf_xlsr 0.2.0 (tests/fixtures/make_v0_2_0.py)

# The identifiers of the paper's sides as 0.2.0 exposed them.
SIDES = re.compile(
    r"\b(encoder|tokenizer)_[xy]\b|\b[xy]_column\b|tokenizers\[[\"'][xy][\"']\]|language=[\"'][xy][\"']"
    r"|\b[xy]_(input_ids|attention_mask|token_type_ids|mlm_labels)\b|\b(loss|accuracy)_(xy|yx)\b|\bembeddings_[xy]\b"
)


def public_text() -> dict[str, str]:
    """README, the docs site, the example run configurations and scripts, and every command's --help."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.yaml")),
             *sorted((ROOT / "examples").glob("*.py"))]  # fmt: skip
    texts = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in files}
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, command in commands.items():
        texts[f"hf-xlsr {name} --help"] = command.format_help()
    from transformers import HfArgumentParser

    from hf_xlsr.trainers.arguments import ARGUMENT_CLASSES

    texts["hf-xlsr train --help"] = HfArgumentParser(ARGUMENT_CLASSES).format_help()
    return texts


def test_readme_docs_run_configurations_and_help_name_no_side():
    found = {where: match.group(0) for where, text in public_text().items() if (match := SIDES.search(text))}
    assert not found, found


# a docstring that names an argument by a side the signature does not have: ``x_*``, ``x_input_ids``
DOCUMENTED_SIDES = re.compile(r"\b[xy]_\*|" + SIDES.pattern)


def test_docstrings_of_the_public_api_name_the_arguments_the_signatures_take():
    """The paper's x and y may name the two sides inside an equation; an argument is documented by its own name."""
    found = {}
    for where, thing in public_callables().items():
        forward = getattr(thing, "forward", None)
        for name, documented in ((where, thing), (f"{where}.forward", forward)):
            text = re.sub(r"0\.2\.0's ``\w+``", "", inspect.getdoc(documented) or "")  # the earlier names, named
            match = DOCUMENTED_SIDES.search(text) if documented else None
            if match and not name.startswith(PAPER_NOTATION):
                found[name] = match.group(0)
    assert not found, found


def public_callables():
    """Every class and function the package exports, with the public methods of its classes."""
    import hf_xlsr.losses  # the losses for SentenceTransformerTrainer (imports sentence-transformers)
    import hf_xlsr.modeling.functional  # rendered in the API page

    modules = [hf_xlsr, hf_xlsr.data, hf_xlsr.evaluation, hf_xlsr.trainers, hf_xlsr.tokenization, hf_xlsr.export,
               hf_xlsr.hub, hf_xlsr.losses, hf_xlsr.modeling.functional]  # fmt: skip
    seen = {}
    for module in modules:
        for name in getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]):
            thing = getattr(module, name)
            if inspect.isclass(thing) or inspect.isfunction(thing):
                seen[f"{module.__name__}.{name}"] = thing
    for where, thing in list(seen.items()):
        if inspect.isclass(thing) and thing.__module__.startswith("hf_xlsr"):
            for name, member in vars(thing).items():
                if (not name.startswith("_") or name == "__init__") and callable(member):
                    seen[f"{where}.{name}"] = member
    return seen


# MoCo-BERT's configuration and model keep the paper's encoder_x / encoder_y (Eq. 1-3), the x and y languages'
# encoders: the sub-configurations a checkpoint's config.json stores and the module names of its state dict.
PAPER_NOTATION = ("hf_xlsr.DualMomentumConfig", "hf_xlsr.DualMomentumModel")


def test_public_signatures_take_languages_not_sides():
    side = re.compile(r"(^|_)[xy]($|_)")
    found = []
    for where, thing in public_callables().items():
        try:
            parameters = inspect.signature(thing).parameters.values()
        except (TypeError, ValueError):
            continue
        for parameter in parameters:
            if side.search(parameter.name) and not where.startswith(PAPER_NOTATION):
                found.append(f"{where}({parameter.name})")
            if parameter.default in ("x", "y"):
                found.append(f"{where}({parameter.name}={parameter.default!r})")
    assert not found, found


def test_the_training_log_names_directions_by_meaning(tmp_path, tokenizer, bible_pairs):
    model = tiny_dual_momentum(queue_size=8)
    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=4,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
    )
    trainer = XlsrTrainer(
        model=model,
        args=args,
        train_dataset=bible_pairs.select_columns(["en", "fr"]),
        data_collator=BitextCollator(tokenizer, languages=["en", "fr"], max_length=16),
        tokenizers=tokenizer,
    )
    trainer.train()
    keys = {key for entry in trainer.state.log_history for key in entry}
    assert {"loss_source_to_target", "loss_target_to_source", "accuracy_source_to_target"} <= keys, keys
    assert not [key for key in keys if re.search(r"(^|_)(xy|yx|[xy])($|_)", key)], keys


def old_checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    shutil.copytree(OLD / "checkpoint", folder)
    return folder


def test_a_checkpoint_written_by_0_2_0_loads_with_one_warning_per_old_name(tmp_path):
    folder = old_checkpoint(tmp_path)
    with pytest.warns(FutureWarning) as caught:
        model, tokenizers = load_trained_model(folder)
    messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert len(messages) == 3, messages
    assert messages[0] == (
        "DualMomentumConfig: learning_rate, train_batch_size, warmup_steps, num_train_epochs, "
        "lr_scheduler_type, max_grad_norm, weight_decay ignored: training settings belong to the "
        "training arguments (XlsrTrainingArguments.from_paper gives the paper's)"
    )
    assert "nli_language: 'y'" in messages[1] and "write nli_language: fr" in messages[1]
    assert "tokenizer_x/ and tokenizer_y/" in messages[2] and "tokenizer_en/ and tokenizer_fr/" in messages[2]
    assert model.config.nli_language == "fr" and list(tokenizers) == ["en", "fr"]
    # tokenizer_x/ was the first language's: its vocabulary is English, tokenizer_y/'s French
    assert tokenizers["en"].convert_tokens_to_ids(["cat", "chat"]) == [5, 1]
    assert tokenizers["fr"].convert_tokens_to_ids(["cat", "chat"]) == [1, 5]
    # each language encodes with its own encoder; a model with one encoder per language needs the language
    features = tokenizers["fr"](["le chat dort ."], return_tensors="pt")
    with torch.no_grad():
        french = model.get_sentence_embeddings(features["input_ids"], features["attention_mask"], language="fr")
        states = model.encoder_y(**features).last_hidden_state
    assert torch.allclose(french, torch.nn.functional.normalize(states.mean(1), dim=-1), atol=1e-6)
    with pytest.raises(ValueError, match="one encoder for each of en, fr: name the language"):
        model.get_sentence_embeddings(features["input_ids"], features["attention_mask"])
    # saved again, it is written the new way and loads without a warning
    model.save_pretrained(tmp_path / "new")
    save_tokenizers(tokenizers, tmp_path / "new")
    assert "learning_rate" not in json.loads((tmp_path / "new" / "config.json").read_text())
    assert sorted(p.name for p in (tmp_path / "new").glob("tokenizer_*")) == ["tokenizer_en", "tokenizer_fr"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        again = load_tokenizers(tmp_path / "new")
        assert DualMomentumModel.from_pretrained(tmp_path / "new").config.nli_language == "fr"
    assert again["fr"].convert_tokens_to_ids("chat") == 5


def test_a_checkpoint_written_by_0_2_0_exports_and_names_its_start(tmp_path):
    folder = old_checkpoint(tmp_path)
    with pytest.warns(FutureWarning):
        model, tokenizers = load_trained_model(folder)
    run_info = json.loads((folder / "run_info.json").read_text())  # names encoder_x
    assert base_model_reference(model, run_info)[0] == "sentence-transformers/all-MiniLM-L6-v2"
    export = export_sentence_transformers(model, tokenizers, tmp_path / "export", 16, run_info)
    from sentence_transformers import SentenceTransformer

    exported = SentenceTransformer(str(export), device="cpu")
    features = tokenizers["fr"](["le chat dort ."], return_tensors="pt")
    with torch.no_grad():
        expected = model.get_sentence_embeddings(features["input_ids"], features["attention_mask"], language="fr")
    assert torch.allclose(
        exported.encode(["le chat dort ."], task="fr", convert_to_tensor=True), expected[0], atol=1e-5
    )


def test_a_run_configuration_written_for_0_2_0_parses_with_a_warning_naming_the_new_fields(tmp_path):
    config = tmp_path / "run.yaml"
    shutil.copy(OLD / "run.yaml", config)
    with pytest.warns(FutureWarning) as caught:
        model_args, data_args, _ = parse_run_arguments(config, ["--output_dir", str(tmp_path / "run")])
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, FutureWarning))
    assert len(messages) == 3, messages
    assert "encoder_x / encoder_y is hf_xlsr 0.2.0's name; write encoder: package:" in messages[0]
    assert "model_type 'dual_momentum' is hf_xlsr 0.2.0's name; write 'xlsr_dual_momentum'" in messages[1]
    assert "tokenizer_x is hf_xlsr 0.2.0's name; write tokenizer: package:" in messages[2]
    assert model_args.encoder == model_args.tokenizer == MINILM and model_args.encoders is None
    assert model_args.model_type == "xlsr_dual_momentum"
    # two different encoders become one per language, keyed by the run's languages, also on the command line
    values = yaml.safe_load(config.read_text())
    values.update(encoder_y=str(tmp_path / "french"), languages=["fr", "en"])
    (tmp_path / "french").mkdir()
    (tmp_path / "french" / "config.json").write_text("{}")
    config.write_text(yaml.safe_dump(values))
    with pytest.warns(FutureWarning, match=r"write encoders: \{fr: \.\.\., en: \.\.\.\}"):
        model_args, _, _ = parse_run_arguments(config, ["--output_dir", str(tmp_path / "run")])
    assert model_args.encoders == {"fr": MINILM, "en": str(tmp_path / "french")}
    with pytest.warns(FutureWarning, match="tokenizer_x is hf_xlsr 0.2.0's name"):
        model_args, _, _ = parse_run_arguments(
            None, ["--tokenizer_x", MINILM, "--encoder", MINILM, "--output_dir", str(tmp_path / "run")]
        )
    assert model_args.tokenizer == MINILM


def test_one_encoder_per_language_from_a_run_configuration(tmp_path, capsys):
    """encoders: {en: ..., fr: ...} builds a model whose languages have the encoders named for them, and the run's
    checkpoint keeps a tokenizer per language when they differ."""
    values = {"model_type": "xlsr_dual_momentum", "encoders": {"en": MINILM, "fr": MINILM}, "languages": ["en", "fr"],
              "tokenizers": {"en": MINILM, "fr": str(OLD / "checkpoint" / "tokenizer_y")},
              "model_config": {"queue_size": 8}, "max_train_pairs": 8, "max_eval_pairs": 0, "max_steps": 1,
              "per_device_train_batch_size": 4, "max_length": 16, "output_dir": str(tmp_path / "run"),
              "save_strategy": "no", "report_to": "none"}  # fmt: skip
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(values))
    assert main(["train", str(config)]) == 0
    tokenizers = load_tokenizers(tmp_path / "run")
    assert tokenizers["fr"].convert_tokens_to_ids("chat") == 5 and tokenizers["en"].convert_tokens_to_ids("cat") != 1
    values["encoders"] = {"en": MINILM, "de": MINILM}
    config.write_text(yaml.safe_dump(values))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_code:
        main(["train", str(config)])
    assert exit_code.value.code == 2
    assert "encoders: 'de' is not one of the run's languages (en, fr)" in capsys.readouterr().err


def test_the_collator_tokenizes_each_language_with_its_own_tokenizer(tmp_path):
    with pytest.warns(FutureWarning):
        tokenizers = load_tokenizers(OLD / "checkpoint")
    rows = [{"fr": "le chat dort .", "en": "the cat sleeps ."}]
    batch = BitextCollator(tokenizers, languages=["fr", "en"])(rows)
    assert batch["source_input_ids"].tolist() == batch["target_input_ids"].tolist() == [[4, 5, 6, 7]]
    row = {"source": "le chat", "target": "the cat", "source_language": "fr"}
    stacked = [{**row, "target_language": "en"}, {**row, "target_language": "de"}]
    with pytest.raises(ValueError, match=r"one target_language per batch, found \['de', 'en'\]"):
        BitextCollator(tokenizers)(stacked)
    assert BitextCollator(tokenizers)(stacked[:1])["target_input_ids"].tolist() == [[4, 5]]
    # a plain Trainer saves the collator's tokenizer with its checkpoints: one folder per language
    model = tiny_dual_momentum(
        encoder_x={
            "model_type": "bert",
            "vocab_size": 16,
            "hidden_size": 8,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 16,
        }
    )
    collator = BitextCollator(tokenizers, languages=["en", "fr"])
    assert isinstance(collator.tokenizer, LanguageTokenizers)
    trainer = Trainer(
        model=model,
        args=TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True),
        data_collator=collator,
    )
    trainer.save_model(str(tmp_path / "saved"))
    assert load_tokenizers(tmp_path / "saved")["fr"].convert_tokens_to_ids("chat") == 5


def test_a_shared_encoder_needs_no_language_and_a_mapping_of_one_tokenizer_is_one_tokenizer(tokenizer):
    model = tiny_dual_momentum(shared_encoder=True, languages=["en", "fr", "de"]).eval()
    features = tokenizer(["Hallo Welt."], return_tensors="pt")
    with torch.no_grad():
        plain = model.get_sentence_embeddings(features["input_ids"], features["attention_mask"])
        named = model.get_sentence_embeddings(features["input_ids"], features["attention_mask"], language="ja")
    assert torch.equal(plain, named)  # any language, even one it was not trained on: the one encoder
    collator = BitextCollator({"en": tokenizer, "fr": tokenizer, "de": tokenizer})
    assert collator.tokenizer is tokenizer
    rows = [
        {"source": "a", "target": "b", "source_language": "en", "target_language": language}
        for language in ("fr", "de")
    ]
    assert collator(rows)["target_input_ids"].shape[0] == 2


def test_a_mapping_of_encoders_must_name_the_models_languages(minilm_path):
    with pytest.raises(ValueError, match="encoders names en, de, languages en, fr"):
        DualMomentumModel.from_encoders({"en": minilm_path, "de": minilm_path}, languages=["en", "fr"])
    with pytest.raises(ValueError, match="shared_encoder=True trains one encoder"):
        DualMomentumModel.from_encoders({"en": minilm_path, "fr": minilm_path}, shared_encoder=True)


def test_an_encoders_value_that_is_not_a_mapping_is_one_line(tmp_path):
    with pytest.raises(ConfigFileError, match="encoders: expected a mapping from language code to a model"):
        parse_run_arguments(None, ["--encoders", MINILM, "--output_dir", str(tmp_path)])


def test_the_losses_import_from_0_2_0s_module_one_loss_per_file():
    """``from hf_xlsr.losses import MomentumQueueLoss`` (0.2.0's import) is the package of the losses again, with no
    warning; each loss lives in a module of its own name, as in ``sentence_transformers.losses``."""
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueCallback, MomentumQueueLoss\n"
        "print(MomentumQueueLoss.__module__, CachedMomentumQueueLoss.__module__,"
        " MomentumQueueCallback.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [
        "hf_xlsr.losses.MomentumQueueLoss",
        "hf_xlsr.losses.CachedMomentumQueueLoss",
        "hf_xlsr.losses.MomentumQueueCallback",
    ]


def test_adapters_saved_by_0_2_0_load_with_a_warning(tmp_path):
    lora = {"r": 4, "lora_alpha": 8, "target_modules": ["query", "value"]}
    model = tiny_dual_momentum(lora=lora)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_()  # adapters that change the encoders
    folders = model.save_adapters(tmp_path / "adapters")
    assert folders == {"encoder_x": tmp_path / "adapters" / "en", "encoder_y": tmp_path / "adapters" / "fr"}
    for name, folder in folders.items():  # 0.2.0 named the folders after the modules
        folder.rename(tmp_path / "adapters" / name)
    fresh = tiny_dual_momentum(lora=lora)
    with pytest.warns(FutureWarning, match="hf_xlsr 0.2.0's adapter folder"):
        fresh.load_adapters(tmp_path / "adapters")
    state, loaded = model.state_dict(), fresh.state_dict()
    live = [name for name in state if "lora_" in name and not name.startswith("momentum_contrast")]
    assert live and all(torch.equal(state[name], loaded[name]) for name in live)


def test_on_the_command_line_a_deprecation_is_one_line_without_its_source(tmp_path):
    """``hf-xlsr train`` on a 0.2.0 run file: each FutureWarning is one line, without the line that raised it."""
    config = tmp_path / "run.yaml"
    shutil.copy(OLD / "run.yaml", config)
    command = [sys.executable, "-c", "import sys; from hf_xlsr_cli import main; "
               "sys.exit(main(['train', sys.argv[1], '--output_dir', sys.argv[2], '--max_steps', 'ten']))",
               str(config), str(tmp_path / "run")]  # fmt: skip
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)
    notices = [line for line in result.stderr.splitlines() if "0.2.0's name" in line]
    assert len(notices) == 3 and all(line.startswith("FutureWarning: ") for line in notices), result.stderr
    assert "read_config_file" not in result.stderr and "warnings.warn" not in result.stderr
