"""The registry of model types: a type added by one `register_model_type` call trains through ``hf-xlsr train``'s
pipeline with its paper's recipe, loads through the Auto classes and gets its model card; an earlier version's
name of a type still loads, with a warning naming today's."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from conftest import MINILM, run_config, tiny_encoder_config
from huggingface_hub import ModelCard
from transformers import AutoConfig, AutoModel

from hf_xlsr import DualMomentumConfig, DualMomentumModel, ModelType, register_model_type
from hf_xlsr.hub import RUN_INFO, prepare_upload, read_json
from hf_xlsr.registry import get_model_type, paper_recipe
from hf_xlsr.trainers import XlsrTrainingArguments, parse_run_arguments, run_training
from hf_xlsr.trainers.checkpoints import CheckpointError
from hf_xlsr.trainers.run_folder import RUN_SETTINGS, check_same_run


class ToyConfig(DualMomentumConfig):
    model_type = "toy_dual"


class ToyModel(DualMomentumModel):
    config_class = ToyConfig


def build_toy(model_args, data_args, training_args, train_dataset):
    from transformers import AutoTokenizer

    from hf_xlsr.references import resolve_reference

    torch.manual_seed(0)
    fields = {"languages": list(data_args.languages), **model_args.model_config}
    tokenizer = AutoTokenizer.from_pretrained(resolve_reference(MINILM))
    return ToyModel(ToyConfig(**fields)), dict.fromkeys(fields["languages"], tokenizer)


TOY = ModelType(
    name="toy_dual",
    config_class=ToyConfig,
    model_class=ToyModel,
    build=build_toy,
    collator="hf_xlsr.trainers.builders:bitext_collator",  # a reference, imported when the run starts
    paper_recipe={"learning_rate": 3e-4, "warmup_steps": 0, "train_batch_size": 4},
    card="dual_momentum",
)


def test_a_type_added_by_one_entry_trains_loads_and_gets_its_card(tmp_path):
    register_model_type(TOY)
    config = run_config(
        tmp_path / "run.yaml",
        model_type="toy_dual",
        tokenizer=None,
        per_device_train_batch_size=None,
        max_steps=2,
        model_config={"encoder_x": tiny_encoder_config(), "queue_size": 16, "shared_encoder": True},
    )
    model_args, data_args, training_args = parse_run_arguments(config)
    assert training_args.learning_rate == 3e-4 and training_args.per_device_train_batch_size == 4  # its recipe
    trainer, _ = run_training(model_args, data_args, training_args)
    assert type(trainer.model) is ToyModel and trainer.state.global_step == 2
    folder = tmp_path / "run"
    assert json.loads((folder / "config.json").read_text())["model_type"] == "toy_dual"
    assert type(AutoConfig.from_pretrained(folder)) is ToyConfig
    assert type(AutoModel.from_pretrained(folder)) is ToyModel
    assert XlsrTrainingArguments.from_paper(trainer.model, output_dir=str(tmp_path)).learning_rate == 3e-4
    upload = prepare_upload(
        trainer.model, trainer.tokenizers, "me/toy", tmp_path / "hub", None, read_json(folder / RUN_INFO)
    )
    assert "dual_momentum" in ModelCard.load(upload / "README.md").data.tags


def test_the_package_types_hold_their_papers_recipes():
    assert paper_recipe("xlsr_hictl") == {
        "learning_rate": 2.5e-5,
        "lr_scheduler_type": "linear",
        "per_device_train_batch_size": 1024,
    }
    assert get_model_type("xlsr_lightweight").part("build").__name__ == "build_lightweight"
    assert get_model_type("xlsr_hictl_translation").build is None  # loads only


def test_a_name_is_one_types_and_the_configuration_says_it():
    with pytest.raises(ValueError, match="the name 'dual_momentum' is 'xlsr_dual_momentum''s"):
        register_model_type(
            ModelType(
                "toy_other",
                type("C", (DualMomentumConfig,), {"model_type": "toy_other"}),
                ToyModel,
                old_names=("dual_momentum",),
            )
        )
    with pytest.raises(ValueError, match="its configuration's model_type is 'xlsr_dual_momentum'"):
        register_model_type(ModelType("toy_mismatch", DualMomentumConfig, DualMomentumModel))
    with pytest.raises(ValueError, match=r"^run.yaml: unknown model_type 'bert' \(one of xlsr_dual_momentum, "):
        get_model_type("bert", "run.yaml")


@pytest.mark.parametrize("where", ["file", "command line"])
def test_an_earlier_name_loads_with_a_warning_naming_todays(tmp_path, where):
    config = run_config(tmp_path / "run.yaml", model_type="dual_momentum" if where == "file" else "xlsr_hictl")
    overrides = ["--model_type", "dual_momentum"] if where == "command line" else []
    with pytest.warns(FutureWarning) as caught:
        model_args, _, training_args = parse_run_arguments(config, overrides)
    source = str(config) if where == "file" else "the command line"
    assert [str(w.message) for w in caught if "0.2.0's name" in str(w.message)] == [
        f"{source}: model_type 'dual_momentum' is hf_xlsr 0.2.0's name; write 'xlsr_dual_momentum'"
    ]
    assert model_args.model_type == "xlsr_dual_momentum"


def test_a_run_an_earlier_version_started_resumes_under_todays_name(tmp_path):
    def saved(model_type):
        (tmp_path / RUN_SETTINGS).write_text(json.dumps({"model_type": model_type, "seed": 1}))

    saved("dual_momentum")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # quietly: the run did not name it, its folder did
        check_same_run(tmp_path, {"model_type": "xlsr_dual_momentum", "seed": 1})
    saved("hictl")
    with pytest.raises(CheckpointError, match="model_type 'xlsr_hictl', not 'xlsr_dual_momentum'"):
        check_same_run(tmp_path, {"model_type": "xlsr_dual_momentum", "seed": 1})


MOVED_OUT = {"mlm_probability", "mask_replace_prob", "random_replace_prob", "swap_probability", "perturbation",
             "perturbation_window", "second_stage_step", "head_warmup_steps", "encoder_frozen_steps",
             "mini_batch_size", "lora"}  # fmt: skip


def test_a_saved_configuration_of_every_model_type_holds_no_collator_schedule_or_adapter_setting(tmp_path):
    """What ``from_pretrained`` needs to rebuild and run a model stays in its ``config.json``; the settings of a run
    (its collator, its schedule, GradCache, LoRA) are not there, for every registered type."""
    from hf_xlsr.registry import MODEL_TYPES

    encoder = tiny_encoder_config()
    fields = {"xlsr_dual_momentum": {"encoder_x": encoder}, "xlsr_cmlm": {"encoder": encoder},
              "xlsr_hictl": {"encoder": encoder}, "xlsr_lightweight": {},
              "xlsr_hictl_translation": {"encoder": encoder, "decoder": {**encoder, "is_decoder": True}}}  # fmt: skip
    packaged = {
        name: entry for name, entry in MODEL_TYPES.items() if entry.model_class.__module__.startswith("hf_xlsr")
    }
    assert set(fields) == set(packaged)  # every type the package registers (a test may have added a toy one)
    for name, entry in packaged.items():
        entry.config_class(**fields[name]).save_pretrained(tmp_path / name)
        saved = json.loads((tmp_path / name / "config.json").read_text())
        assert not MOVED_OUT & set(saved), (name, MOVED_OUT & set(saved))


def test_a_run_started_with_settings_in_model_config_resumes_where_they_live_now(tmp_path):
    """A run folder whose settings an earlier version wrote, with the collator's, the schedule's and LoRA's settings
    in ``model_config``, resumes under today's fields (``head_warmup_steps`` as ``encoder_frozen_steps``); a value
    that differs is still told."""
    moved_out = {"second_stage_step": 400, "head_warmup_steps": 80, "mlm_probability": 0.2, "lora": {"r": 4}}
    earlier = {"model_type": "cmlm", "model_config": {"schedule": "s3", **moved_out}, "training": {"seed": 1}}
    (tmp_path / RUN_SETTINGS).write_text(json.dumps(earlier))
    today = {"model_type": "xlsr_cmlm", "model_config": {"schedule": "s3"},
             "training": {"seed": 1, "second_stage_step": 400, "encoder_frozen_steps": 80, "mini_batch_size": None},
             "collator": {"mlm_probability": 0.2, "swap_probability": None}, "lora": {"r": 4}}  # fmt: skip
    check_same_run(tmp_path, today)
    moved = {**today, "training": {**today["training"], "second_stage_step": 500}}
    with pytest.raises(CheckpointError, match="training.second_stage_step 400, not 500"):
        check_same_run(tmp_path, moved)
    with pytest.raises(CheckpointError, match="lora.r 4, not 8"):
        check_same_run(tmp_path, {**today, "lora": {"r": 8}})


def test_a_runs_settings_hold_its_collator_schedule_and_lora(tmp_path):
    """What makes a run this run includes the settings that left the model configuration, so that a resume with
    another second stage, collator or adapter is told."""
    from hf_xlsr.trainers.run_folder import run_settings

    cmlm = {"model_type": "xlsr_cmlm", "model_config": {"encoder": tiny_encoder_config()}}
    moved = {"second_stage_step": 5, "encoder_frozen_steps": 2, "mlm_probability": 0.2, "lora": {"r": 4}}
    config = run_config(tmp_path / "run.yaml", **cmlm, **moved)
    settings = run_settings(*parse_run_arguments(config), fingerprint="rows")
    assert (settings["training"]["second_stage_step"], settings["training"]["encoder_frozen_steps"]) == (5, 2)
    assert settings["collator"]["mlm_probability"] == 0.2 and settings["lora"] == {"r": 4}
