"""Model cards and Hub pushes: the exact folders that would be uploaded, the calls made to huggingface_hub, and a
pushed checkpoint loading through ``trust_remote_code`` in a process where hf_xlsr cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import yaml
from conftest import batch_of, tiny_dual_momentum
from huggingface_hub import HfApi, ModelCard

from hf_xlsr.hub import prepare_upload, push_to_hub, push_trained_model

RESULTS = {
    "retrieval": {"retrieval_en2fr_accuracy": 0.71, "retrieval_fr2en_accuracy": 0.69},
    "probe": {"probe_en2fr_accuracy": 0.5},
}
RUN = {"training": {"learning_rate": 1e-4, "max_steps": 120}, "evaluation_data": "bible (heldout), 1000 pairs"}


def files_of(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_the_upload_folder_of_a_dual_encoder(tmp_path, tokenizer):
    model = tiny_dual_momentum()
    folder = prepare_upload(model, tokenizer, "me/moco", tmp_path, RESULTS, RUN)
    route = ["config.json", "model.safetensors", "sentence_bert_config.json", "tokenizer.json",
             "tokenizer_config.json"]  # fmt: skip
    expected = sorted(
        [
            "1_Normalize/config.json",
            "README.md",
            "config_sentence_transformers.json",
            "modules.json",
            "mteb_model_meta.json",
            "hf_xlsr_export.json",
            "router_config.json",
            "en_1_Pooling/config.json",
            "fr_1_Pooling/config.json",
            *(f"{lang}_0_Transformer/{name}" for lang in ("en", "fr") for name in route),
        ]
    )
    assert files_of(folder) == expected  # the export, its card and metadata, nothing of the training state
    assert json.loads((folder / "mteb_model_meta.json").read_text())["name"] == "me/moco"
    card = ModelCard.load(folder / "README.md")
    assert card.data.language == ["en", "fr"] and card.data.library_name == "sentence-transformers"
    assert "dual_momentum" in card.data.tags
    index = card.data.to_dict()["model-index"][0]["results"]
    values = {(r["task"]["type"], r["metrics"][0]["type"], r["metrics"][0]["value"]) for r in index}
    assert ("sentence-similarity", "retrieval_en2fr_accuracy", 0.71) in values
    assert ("text-classification", "probe_en2fr_accuracy", 0.5) in values
    text = card.text
    assert 'SentenceTransformer("me/moco")' in text and 'task="fr")' in text and 'task="en")' in text
    assert "| retrieval | retrieval_en2fr_accuracy | 0.7100 |" in text
    assert "| learning_rate | 0.0001 |" in text and "| queue size K | 16 |" in text
    assert "Aligning Cross-lingual Sentence Representations with Dual Momentum Contrast" in text
    assert 'mteb.get_tasks(tasks=["Tatoeba"], languages=["fra"])' in text and "load_mteb_model" in text
    assert 'subfolder="en_0_Transformer"' in text


@pytest.fixture
def hub_stand_in(monkeypatch):
    """The Hub cannot be reached from the tests: HfApi's calls are stood in for, online mode, a token."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_stand_in")
    monkeypatch.setattr(HfApi, "whoami", lambda self, **kwargs: {"name": "me"})


def test_push_calls_huggingface_hub_once_per_repository(tmp_path, tokenizer, monkeypatch, hub_stand_in):
    calls = []

    def create_repo(self, repo_id, **kwargs):
        calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, repo_id, folder_path, **kwargs):
        calls.append(("upload_folder", repo_id, files_of(Path(folder_path)), kwargs))
        return f"https://huggingface.co/{repo_id}/commit/0"

    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    model = tiny_dual_momentum(shared_encoder=True)
    urls = push_to_hub(model, tokenizer, "me/shared", RESULTS, RUN, include_checkpoint=True, private=True)
    assert urls == ["https://huggingface.co/me/shared/commit/0"]
    assert [c[:2] for c in calls] == [("create_repo", "me/shared"), ("upload_folder", "me/shared")]
    assert calls[0][2] == {"private": True, "exist_ok": True}
    uploaded = calls[1][2]
    assert "README.md" in uploaded and "modules.json" in uploaded
    for name in (
        "checkpoint/config.json",
        "checkpoint/model.safetensors",
        "checkpoint/modeling_dual_momentum.py",
        "checkpoint/configuration_dual_momentum.py",
        "checkpoint/queue.py",
        "checkpoint/momentum.py",
        "checkpoint/ema.py",
        "checkpoint/distributed.py",
        "checkpoint/functional.py",
        "checkpoint/pooling.py",
        "checkpoint/tokenizer.json",
    ):
        assert name in uploaded, name


def test_a_push_refused_mid_upload_says_what_was_sent_and_that_nothing_was_committed(
    tmp_path, tokenizer, monkeypatch, hub_stand_in
):
    """The upload is one commit: refused, the Hub records none of it, and the one line says so with what was sent."""
    from hf_xlsr.hub import PushError

    sent = []

    def upload_folder(self, repo_id, folder_path, **kwargs):
        sent.extend(files_of(Path(folder_path)))
        raise OSError("413 Request Entity Too Large")

    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kwargs: None)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    with pytest.raises(PushError) as error:
        push_to_hub(tiny_dual_momentum(shared_encoder=True), tokenizer, "me/shared", RESULTS, RUN)
    message = str(error.value)
    assert message.startswith("me/shared: the push failed (413 Request Entity Too Large); ") and "\n" not in message
    assert f"; {len(sent)} files (" in message
    assert message.endswith(
        "MB) were sent as one commit, which the Hub did not record: the repository holds what it held before"
    )


def test_push_of_a_trained_folder_reads_its_results(tmp_path, tokenizer, monkeypatch, hub_stand_in):
    uploads = {}
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kwargs: None)

    def upload_folder(self, repo_id, folder_path, **kwargs):
        uploads[repo_id] = (Path(folder_path) / "README.md").read_text()

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    model = tiny_dual_momentum()
    model.save_pretrained(tmp_path / "trained")
    tokenizer.save_pretrained(tmp_path / "trained")
    (tmp_path / "trained" / "evaluation.json").write_text(json.dumps(RESULTS))
    (tmp_path / "trained" / "hf_xlsr_run.json").write_text(json.dumps(RUN))
    push_trained_model(tmp_path / "trained", "me/run")
    assert set(uploads) == {"me/run"}  # one repository, routed by language
    header = yaml.safe_load(uploads["me/run"].split("---")[1])
    assert header["model-index"][0]["results"][0]["metrics"][0]["value"] == 0.71


HIDE_HF_XLSR = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "hf_xlsr" or name.startswith("hf_xlsr."):
                raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)")

    sys.meta_path.insert(0, Blocker())
    import torch
    from transformers import AutoModel

    try:
        import hf_xlsr  # noqa: F401
        raise SystemExit("hf_xlsr should not be importable here")
    except ModuleNotFoundError:
        pass
    model = AutoModel.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    inputs = json.loads(sys.argv[2])
    with torch.no_grad():
        out = model(**{k: torch.tensor(v) for k, v in inputs.items()})
    print(json.dumps({"class": type(model).__module__ + "." + type(model).__name__,
                      "loss": out.loss.item(), "x": out.source_embeddings.tolist()}))
    """
)


def test_pushed_checkpoint_loads_with_remote_code_where_hf_xlsr_is_absent(tmp_path, tokenizer, bible_pairs):
    model = tiny_dual_momentum()
    model.train()
    model(**batch_of(tokenizer, bible_pairs))  # non-empty queues: part of what must survive
    folder = prepare_upload(model, tokenizer, "me/moco", tmp_path, include_checkpoint=True)
    checkpoint = folder / "checkpoint"
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["auto_map"] == {
        "AutoConfig": "configuration_dual_momentum.DualMomentumConfig",
        "AutoModel": "modeling_dual_momentum.DualMomentumModel",
    }
    batch = batch_of(tokenizer, bible_pairs, offset=4)
    model.eval()
    with torch.no_grad():
        expected = model(**batch)
    script = tmp_path / "load.py"
    script.write_text(HIDE_HF_XLSR)
    inputs = json.dumps({k: v.tolist() for k, v in batch.items()})
    result = subprocess.run(
        [sys.executable, str(script), str(checkpoint), inputs],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["class"].startswith("transformers_modules.") and loaded["class"].endswith("DualMomentumModel")
    torch.testing.assert_close(torch.tensor(loaded["x"]), expected.source_embeddings, atol=1e-5, rtol=1e-5)
    assert abs(loaded["loss"] - expected.loss.item()) < 1e-4


def test_cards_of_every_model_family_render(tmp_path, tokenizer, heldout_pairs):
    from conftest import tiny_encoder_config

    from hf_xlsr import CmlmConfig, CmlmModel, LightweightDualTransformer
    from hf_xlsr.evaluation.pcr import fit_language_components

    tokenizers = tokenizer
    lightweight = LightweightDualTransformer.from_tokenizer(
        tokenizer, hidden_size=32, intermediate_size=64, num_attention_heads=2, languages=["en", "fr"]
    )
    folder = prepare_upload(lightweight, tokenizers, "me/light", tmp_path / "light", RESULTS, RUN)
    assert not (folder / "router_config.json").exists()  # one shared encoder, a plain folder
    text = ModelCard.load(folder / "README.md").text
    assert "One encoder embeds every one of its 2 languages (en, fr)" in text and "Lightweight Cross-Lingual" in text
    assert "| generative task | ugt |" in text

    cmlm = CmlmModel(
        CmlmConfig(encoder=tiny_encoder_config(), num_projections=3, pcr_components=1, languages=["en", "fr"])
    )
    fit_language_components(
        cmlm, tokenizers, {"en": list(heldout_pairs["en"][:40]), "fr": list(heldout_pairs["fr"][:40])}
    )
    folder = prepare_upload(cmlm, tokenizers, "me/cmlm", tmp_path / "cmlm", RESULTS, RUN)
    assert (folder / "router_config.json").is_file()  # PCR differs per language: a route each
    card = ModelCard.load(folder / "README.md")
    assert "Router(en | fr: Transformer → Pooling → Dense) → Normalize" in card.text
    assert "Conditional Masked Language Model" in card.text
    assert (folder / "fr_2_Dense" / "config.json").is_file()
    assert "| schedule | cmlm->cmlm+br |" in card.text  # a run record without the step: none printed
    staged = {**RUN, "training": {**RUN["training"], "second_stage_step": 60}}
    folder = prepare_upload(cmlm, tokenizers, "me/cmlm", tmp_path / "cmlm_staged", RESULTS, staged)
    assert "| schedule | cmlm->cmlm+br (second stage from step 60) |" in ModelCard.load(folder / "README.md").text

    from hf_xlsr import HictlConfig, HictlForPreTraining

    hictl = HictlForPreTraining(HictlConfig(encoder=tiny_encoder_config(), languages=["en", "fr"]))
    folder = prepare_upload(hictl, tokenizers, "me/hictl", tmp_path / "hictl", RESULTS, RUN)
    card = ModelCard.load(folder / "README.md")  # its export projects after pooling (Eq. 1's linear map)
    assert "Transformer → Pooling → Dense → Normalize" in card.text and "hictl" in card.data.tags


def test_the_card_of_a_real_run_tells_the_truth_about_it(tmp_path, tokenizer):
    """A short run of hf-xlsr train, its checkpoint pushed with the card: one encoder shared by three languages,
    steps (not epochs), the translations and their licences, the pairs' sizes, the start (a Hub id, not "Unknown"),
    the length it trained at, who measured the figures, the framework versions, the training log."""
    from conftest import MINILM

    from hf_xlsr.hub import EVALUATION, RUN_INFO, read_json
    from hf_xlsr.trainers import parse_run_arguments, run_training

    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model_type": "xlsr_dual_momentum",
                "encoder": MINILM,
                "train_data": "bible",
                "languages": ["en", "fr", "de"],
                "model_config": {"shared_encoder": True, "queue_size": 16},
                "max_train_pairs": 80,
                "max_eval_pairs": 30,
                "max_length": 24,
                "per_device_train_batch_size": 4,
                "max_steps": 3,
                "logging_steps": 1,
                "report_to": "none",
                "save_strategy": "no",
                "output_dir": str(tmp_path / "run"),
                "disable_tqdm": True,
            }
        )
    )
    trainer, metrics = run_training(*parse_run_arguments(config))
    run_info = read_json(tmp_path / "run" / RUN_INFO)
    results = {"retrieval": {k.removeprefix("eval_"): v for k, v in metrics.items() if "retrieval" in k}}
    folder = prepare_upload(trainer.model, trainer.tokenizers, "me/moco3", tmp_path / "hub", results, run_info)
    card = ModelCard.load(folder / "README.md")
    text = card.text
    assert (
        card.data.language == ["en", "fr", "de"] and card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    )
    assert "one query encoder shared by every language" in text and "one query encoder per" not in text
    assert "One encoder embeds every one of its 3 languages (en, fr, de)" in text
    assert "| max_steps | 3 |" in text and "num_train_epochs" not in text and "| optimizer_steps | 3 |" in text
    assert "World English Bible (public domain)" in text and "Louis Segond 1910 (public domain)" in text
    assert "Elberfelder (public domain)" in text and "| en-fr | 80 |" in text and "| en-de | 80 |" in text
    assert "It cuts sentences at 24 tokens." in text
    assert json.loads((folder / "mteb_model_meta.json").read_text())["max_tokens"] == 24
    assert "Measured by the final evaluation of hf-xlsr train (RetrievalEvaluator), on bible (heldout), 30 " in text
    assert "| retrieval | retrieval_de2fr_accuracy |" in text  # a pair never trained directly
    assert f"- transformers: {run_info['framework_versions']['transformers']}" in text
    assert "| 3 | " in text.split("### Training log")[1]  # the loss at every logged step
    assert "Bible verses, an old and religious register" in text
    elsewhere = prepare_upload(
        trainer.model,
        trainer.tokenizers,
        "me/moco3",
        tmp_path / "hub2",
        results,
        run_info,
        max_seq_length=16,
        evaluated_by="benchmarks/multilingual_grid.py",
    )
    text = ModelCard.load(elsewhere / "README.md").text
    assert "It cuts sentences at 16 tokens (it was trained at 24)." in text
    assert "Measured by benchmarks/multilingual_grid.py, on bible (heldout)" in text
    assert not (tmp_path / "run" / EVALUATION).exists()
