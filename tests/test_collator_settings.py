"""Collator settings belong to the collator: a run sets them beside model_config (``--mlm_probability``), each
model type's collator takes its own, a saved configuration holds none of them, and a configuration an earlier
version saved with them still loads, with one warning per field."""

from __future__ import annotations

import json
import warnings

import pytest
from conftest import MINILM, run_config, tiny_encoder_config

from hf_xlsr import CmlmConfig, DualMomentumConfig, HictlConfig, LightweightDualTransformerConfig
from hf_xlsr.modeling.configuration_dual_momentum import FORMER_COLLATOR_FIELDS
from hf_xlsr.trainers import ConfigFileError, parse_run_arguments, run_training

RUNS = {
    "xlsr_lightweight": (
        {"model_config": {"vocab_size": 600, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                          "generative_task": "mlm"}, "tokenizer": None},
        {"mlm_probability": 0.25},
    ),
    "xlsr_cmlm": (
        {"model_config": {"encoder": tiny_encoder_config(), "num_projections": 2, "schedule": "cmlm"}},
        {"mlm_probability": 0.25, "mask_replace_prob": 0.5, "random_replace_prob": 0.25, "swap_probability": 1.0},
    ),
    "xlsr_hictl": (
        {"model_config": {"encoder": tiny_encoder_config(), "num_negatives": 8}},
        {"mlm_probability": 0.25, "monolingual_probability": 0.5, "perturbation": "reverse", "perturbation_window": 2},
    ),
}  # fmt: skip


@pytest.mark.parametrize("model_type", sorted(RUNS))
def test_a_runs_collator_settings_reach_its_collator_and_stay_out_of_its_config(model_type, tmp_path):
    run, settings = RUNS[model_type]
    config = run_config(tmp_path / "run.yaml", model_type=model_type, **run)
    given = [text for name, value in settings.items() for text in (f"--{name}", str(value))]
    trainer, _ = run_training(*parse_run_arguments(config, given))
    assert {name: getattr(trainer.data_collator, name) for name in settings} == settings
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["model_type"] == model_type and not set(saved) & set(FORMER_COLLATOR_FIELDS)
    record = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())  # what the model card shows
    assert "mlm_probability=0.25" in record["training"]["collator"]


@pytest.mark.parametrize(
    "config_class", [DualMomentumConfig, LightweightDualTransformerConfig, CmlmConfig, HictlConfig]
)
def test_a_configuration_an_earlier_version_saved_loads_with_one_warning_per_collator_field(config_class, tmp_path):
    encoder = {"encoder_x": tiny_encoder_config()} if config_class is DualMomentumConfig else {}
    encoder |= {"encoder": tiny_encoder_config()} if config_class in (CmlmConfig, HictlConfig) else {}
    config_class(languages=["en", "fr"], **encoder).save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert not set(saved) & set(FORMER_COLLATOR_FIELDS)
    saved.update(mlm_probability=0.3, swap_probability=0.5, perturbation="shuffle")
    (tmp_path / "config.json").write_text(json.dumps(saved))
    with pytest.warns(FutureWarning) as caught:
        loaded = config_class.from_pretrained(tmp_path)
    moved = [str(w.message) for w in caught if "setting of the data collator" in str(w.message)]
    assert len(moved) == 3 and "mlm_probability 0.3 ignored" in moved[0] and "--perturbation" in moved[2]
    assert not set(loaded.to_dict()) & set(FORMER_COLLATOR_FIELDS)


def test_a_collator_setting_is_checked_where_it_was_given_before_anything_loads(tmp_path):
    config = run_config(
        tmp_path / "run.yaml",
        model_type="xlsr_cmlm",
        tokenizer=MINILM,
        swap_probability=1.5,
        model_config={"encoder": tiny_encoder_config()},
    )
    with pytest.raises(ConfigFileError, match=rf"^{config}: swap_probability must lie in \[0, 1\], got 1.5$"):
        parse_run_arguments(config)
    with pytest.raises(ConfigFileError, match=r"^the command line: mlm_probability must lie in \(0, 1\), got 1.0$"):
        parse_run_arguments(config, ["--swap_probability", "0.5", "--mlm_probability", "1"])
    with pytest.raises(ConfigFileError, match=r"mask_replace_prob \+ random_replace_prob must not exceed 1"):
        parse_run_arguments(config, ["--swap_probability", "0.5", "--mask_replace_prob", "0.95"])
    with pytest.raises(ConfigFileError, match=r"^the command line: perturbation must be one of shuffle, "):
        parse_run_arguments(config, ["--swap_probability", "0.5", "--perturbation", "rotate"])
    other = run_config(tmp_path / "other.yaml", swap_probability=0.5)  # xlsr_dual_momentum's collator takes none
    with pytest.raises(ConfigFileError, match=rf"^{other}: swap_probability is no setting of xlsr_dual_momentum's "):
        parse_run_arguments(other)
    moved = run_config(tmp_path / "moved.yaml", model_type="xlsr_cmlm", model_config={"mlm_probability": 0.2})
    with pytest.raises(ConfigFileError, match="mlm_probability is a run field, not a field of CmlmConfig: set it"):
        parse_run_arguments(moved)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, data_args, _ = parse_run_arguments(config, ["--swap_probability", "0"])
    assert data_args.swap_probability == 0.0 and data_args.mlm_probability is None  # unset: the collator's default


def test_a_schedule_setting_is_checked_where_it_was_given_before_anything_loads(tmp_path):
    """``second_stage_step``, ``encoder_frozen_steps`` and ``mini_batch_size`` are training arguments: a run of a
    type that cannot follow one, a value out of range, or one written into ``model_config`` is one line naming
    where it was given."""
    cmlm = {"model_type": "xlsr_cmlm", "tokenizer": MINILM, "model_config": {"encoder": tiny_encoder_config()}}
    config = run_config(tmp_path / "run.yaml", **cmlm, second_stage_step=5, encoder_frozen_steps=2)
    _, _, training_args = parse_run_arguments(config)
    assert (training_args.second_stage_step, training_args.encoder_frozen_steps) == (5, 2)
    with pytest.raises(
        ConfigFileError,
        match=r"^the command line: mini_batch_size: xlsr_cmlm does not take it \(it takes second_stage_step, "
        r"encoder_frozen_steps\)$",
    ):
        parse_run_arguments(config, ["--mini_batch_size", "4"])
    with pytest.raises(ConfigFileError, match=r"^the command line: encoder_frozen_steps must be at least 0, got -1$"):
        parse_run_arguments(config, ["--encoder_frozen_steps", "-1"])
    other = run_config(tmp_path / "other.yaml", second_stage_step=5)  # xlsr_dual_momentum trains in one stage
    with pytest.raises(
        ConfigFileError,
        match=rf"^{other}: second_stage_step: xlsr_dual_momentum does not take it \(it takes mini_batch_size\)$",
    ):
        parse_run_arguments(other)
    moved = run_config(tmp_path / "moved.yaml", **{**cmlm, "model_config": {"second_stage_step": 5}})
    with pytest.raises(ConfigFileError, match="second_stage_step is a training argument, not a field of CmlmConfig"):
        parse_run_arguments(moved)
    assert parse_run_arguments(run_config(tmp_path / "dm.yaml", mini_batch_size=4))[2].mini_batch_size == 4
