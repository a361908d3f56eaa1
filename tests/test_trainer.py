"""XlsrTrainer: EMA timing under gradient accumulation, exact resume, logging, checkpoints, evaluation."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import run_config, tiny_dual_momentum
from transformers import TrainerCallback

from hf_xlsr.evaluation import RetrievalEvaluator
from hf_xlsr.tokenization import load_tokenizers
from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments
from hf_xlsr_cli import main


def make_trainer(tmp_path, tokenizer, pairs, model=None, evaluators=(), **arguments):
    defaults = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        max_steps=6,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    defaults.update(arguments)
    return XlsrTrainer(
        model=model or tiny_dual_momentum(queue_size=12),
        args=XlsrTrainingArguments(**defaults),
        train_dataset=pairs,
        data_collator=BitextCollator(tokenizer, languages=["en", "fr"], max_length=32),
        tokenizers=tokenizer,
        evaluators=list(evaluators),
    )


def test_one_ema_update_per_optimizer_step_under_gradient_accumulation(tmp_path, tokenizer, bible_pairs):
    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, gradient_accumulation_steps=2, max_steps=3)
    trainer.train()
    model = trainer.model
    assert trainer.state.global_step == 3
    assert int(model.momentum_updates) == 3  # one per optimizer step, not per micro-batch
    assert (
        int(model.queue_x.filled) == 12 and int(model.queue_x.ptr) == (3 * 2 * 4) % 12
    )  # one enqueue per micro-batch


def test_loss_parts_and_queue_statistics_are_logged(tmp_path, tokenizer, bible_pairs):
    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=4, logging_steps=2)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2
    for key in (
        "loss_source_to_target",
        "loss_target_to_source",
        "accuracy_source_to_target",
        "accuracy_target_to_source",
        "positive_similarity",
        "queue_fill",
    ):
        assert key in logs[-1], key
    assert "negative_similarity" in logs[-1]
    assert logs[-1]["queue_fill"] == pytest.approx((12 / 12 + 12 / 12) / 2)  # steps 3 and 4: queue full
    assert logs[0]["queue_fill"] == pytest.approx((4 / 12 + 8 / 12) / 2)  # averaged over steps 1 and 2


def test_resume_continues_exactly(tmp_path, tokenizer, bible_pairs):
    """6 steps straight == 3 steps, checkpoint, resume in a new trainer, 3 more steps. The queue holds 10 keys and
    a step brings 4, so the pointer at the checkpoint (2) is not where a fresh queue starts (0)."""
    straight = make_trainer(
        tmp_path / "straight", tokenizer, bible_pairs, max_steps=6, model=tiny_dual_momentum(queue_size=10)
    )
    straight.train()

    first = make_trainer(
        tmp_path / "split",
        tokenizer,
        bible_pairs,
        max_steps=6,
        save_strategy="steps",
        save_steps=3,
        model=tiny_dual_momentum(queue_size=10),
    )
    # stop after the checkpoint of step 3, as an interrupted run would
    first.add_callback(StopAt(3))
    first.train()
    checkpoint = tmp_path / "split" / "checkpoint-3"
    assert (checkpoint / "model.safetensors").is_file()
    assert not any(name.startswith(".") for name in os.listdir(tmp_path / "split"))  # staging folder cleaned up
    resumed = make_trainer(
        tmp_path / "split",
        tokenizer,
        bible_pairs,
        model=tiny_dual_momentum(queue_size=10),
        max_steps=6,
        save_strategy="steps",
        save_steps=3,
    )
    assert int(first.model.queue_x.ptr) == 12 % 10 and int(resumed.model.queue_x.ptr) == 0
    resumed.train(resume_from_checkpoint=str(checkpoint))

    a, b = straight.model.state_dict(), resumed.model.state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name  # queues, pointers, fill counts, momentum and query weights
    assert int(b["momentum_contrast.momentum_updates"]) == 6 and int(b["momentum_contrast.queue_x.ptr"]) == 24 % 10
    losses_straight = [e["loss"] for e in straight.state.log_history if "loss" in e]
    losses_resumed = [e["loss"] for e in first.state.log_history if "loss" in e][:3] + [
        e["loss"] for e in resumed.state.log_history if "loss" in e
    ][-3:]
    assert losses_straight == losses_resumed
    assert len(losses_straight) == 6 and losses_straight[0] == 0.0  # first step: empty queue, loss log(1) = 0


class StopAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = True
        return control


def test_checkpoint_holds_model_state_and_tokenizers(tmp_path, tokenizer, bible_pairs):
    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=2, save_strategy="steps", save_steps=2)
    trainer.train()
    checkpoint = tmp_path / "checkpoint-2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2"]
    for name in ("model.safetensors", "config.json", "optimizer.pt", "scheduler.pt", "trainer_state.json"):
        assert (checkpoint / name).is_file(), name
    assert load_tokenizers(checkpoint)["fr"]("bonjour")["input_ids"] == tokenizer("bonjour")["input_ids"]


def test_retrieval_evaluator_runs_as_trainer_evaluation(tmp_path, tokenizer, bible_pairs, heldout_pairs):
    evaluator = RetrievalEvaluator.from_dataset(heldout_pairs, ["en", "fr"], max_pairs=40)
    trainer = make_trainer(
        tmp_path, tokenizer, bible_pairs, evaluators=[evaluator], max_steps=2, eval_strategy="steps", eval_steps=2
    )
    trainer.train()
    evaluations = [e for e in trainer.state.log_history if "eval_retrieval_accuracy" in e]
    assert len(evaluations) == 1
    metrics = trainer.evaluate()
    standalone = evaluator(trainer.model, tokenizers=tokenizer)
    assert metrics["eval_retrieval_en2fr_accuracy"] == standalone["retrieval_en2fr_accuracy"]
    assert 0.0 <= metrics["eval_retrieval_accuracy"] <= 1.0


class NanGradientsAt(TrainerCallback):
    """Make the backward pass of one optimizer step produce NaN gradients, as an overflow would."""

    def __init__(self, step):
        self.step, self.handles = step, []

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step + 1 == self.step:
            self.handles = [p.register_hook(lambda g: g * float("nan")) for p in model.parameters() if p.requires_grad]

    def on_step_end(self, args, state, control, **kwargs):
        for handle in self.handles:
            handle.remove()
        self.handles = []


@pytest.mark.parametrize("max_grad_norm", [0.0, 1.0], ids=["no_clipping", "clipping"])
def test_a_step_with_non_finite_gradients_leaves_no_trace_in_queue_or_momentum_encoder(
    tmp_path, tokenizer, bible_pairs, caplog, monkeypatch, max_grad_norm
):
    """Step 3's gradients are NaN: its keys leave the queue again and no EMA runs; the optimizer step makes the
    query weights NaN, so steps 4-5 have a NaN loss, queue nothing and update nothing either. The callback reads the
    norm the Trainer computed (for clipping, or to log it), never computing it again."""
    monkeypatch.setattr("hf_xlsr.trainers.callbacks.get_total_norm", None)  # calling it would raise
    trainer = make_trainer(
        tmp_path,
        tokenizer,
        bible_pairs,
        max_steps=5,
        max_grad_norm=max_grad_norm,
        model=tiny_dual_momentum(queue_size=10),
    )
    trainer.add_callback(NanGradientsAt(3))
    with caplog.at_level("WARNING"):
        trainer.train()
    model = trainer.model
    assert int(model.momentum_updates) == 2 and int(model.queue_x.ptr) == 8 and int(model.queue_x.filled) == 8
    assert all(torch.isfinite(b).all() for b in model.momentum_encoder_x.buffers())
    assert torch.isfinite(model.queue_x.keys).all() and torch.isfinite(model.queue_y.keys).all()
    assert not torch.isfinite(next(model.encoder_x.parameters())).all()  # the query encoder did diverge
    assert "optimizer step 3 had non-finite gradients: no EMA update, its keys leave the queues" in caplog.text
    assert "optimizer step 4: the loss or the momentum keys are not finite; nothing was queued" in caplog.text
    assert int(model.momentum_contrast.skipped_steps) == 3


def test_a_plain_trainer_that_never_runs_the_ema_is_warned(tmp_path, tokenizer, bible_pairs):
    """transformers.Trainer knows nothing of the momentum encoder: the model warns once the queue fills with keys
    of a frozen copy. XlsrTrainer, even accumulating gradients, does not warn: its callback runs the EMA."""
    from transformers import Trainer, TrainingArguments

    collator = BitextCollator(tokenizer, languages=["en", "fr"], max_length=32)
    args = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=3,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        remove_unused_columns=False,
    )
    plain = Trainer(
        model=tiny_dual_momentum(), args=TrainingArguments(**args), train_dataset=bible_pairs, data_collator=collator
    )
    with pytest.warns(UserWarning, match="the momentum encoder has never been updated"):
        plain.train()
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*momentum encoder has never been updated.*")
        make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=3, gradient_accumulation_steps=2).train()


def test_training_rows_are_numbered_for_the_queue_and_a_queue_as_large_as_an_epoch_is_flagged(
    tmp_path, tokenizer, bible_pairs, caplog
):
    small = bible_pairs.select(range(40))
    with caplog.at_level("WARNING"):
        trainer = make_trainer(tmp_path, tokenizer, small, model=tiny_dual_momentum(queue_size=48), max_steps=12)
    assert "the queue holds 48 keys but an epoch has only 40 training pairs" in caplog.text
    assert trainer.train_dataset["example_id"] == list(range(40))
    trainer.train()  # 12 steps of 4: every pair seen once, then again with its own keys queued
    queued = trainer.model.queue_x.ids[: int(trainer.model.queue_x.filled)].tolist()
    assert len(queued) == 48 and set(queued) == set(range(40))  # every key carries its row's number


def test_report_to_tensorboard_writes_every_loss_part(tmp_path, tokenizer, bible_pairs):
    """``report_to: tensorboard`` logs through transformers' TensorBoard callback: the loss, its parts and the queue's
    statistics land in event files under ``output_dir/runs``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trainer = make_trainer(tmp_path, tokenizer, bible_pairs, max_steps=3, report_to="tensorboard")
    trainer.train()
    logs = tmp_path / "runs"
    events = EventAccumulator(str(next(logs.rglob("events.out.tfevents.*")).parent))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {
        "train/loss",
        "train/loss_source_to_target",
        "train/loss_target_to_source",
        "train/accuracy_source_to_target",
        "train/queue_fill",
    } <= tags, tags
    assert [event.step for event in events.Scalars("train/queue_fill")] == [1, 2, 3]


def test_a_ten_step_run_warms_up_for_a_tenth_of_itself_not_the_papers_400_steps(tmp_path, capsys, caplog):
    """max_steps 10 and no warm-up given: the paper's 400 warm-up steps would train at 1e-7 to 9e-7; the run warms
    up for 1 step and follows the cosine decay from the paper's peak, 4e-5 (Table 9), and the log says so. The first
    log line holds no queue statistic, for the queue holds no key yet (no NaN, no accuracy of 1)."""
    import json
    import logging
    import math

    config = run_config(tmp_path / "run.yaml", max_steps=10, logging_steps=1, max_train_pairs=48, max_eval_pairs=0)
    with caplog.at_level(logging.INFO, logger="hf_xlsr"):
        assert main(["train", str(config)]) == 0
    history = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())["training_log"]
    logged = [(entry["step"], entry["learning_rate"]) for entry in history if "learning_rate" in entry]
    assert [step for step, _ in logged] == list(range(1, 11))
    for step, rate in logged:  # step k trains at the rate of k - 1 steps done: 1 warm-up step, then cosine decay
        done = step - 1
        expected = 0.0 if done < 1 else 4e-5 * 0.5 * (1 + math.cos(math.pi * (done - 1) / 9))
        assert rate == pytest.approx(expected, rel=1e-6, abs=1e-12), (step, rate)
    assert min(rate for step, rate in logged if step > 1) > 1e-6  # not the 1e-7 to 9e-7 of 400 warm-up steps
    assert "warm-up: 1 of this run's 10 steps (10%), not the paper's 400" in caplog.text
    assert "learning_rate=4e-05" in caplog.text and "warmup_steps=400" not in caplog.text  # one warm-up figure


def test_the_first_log_line_of_a_queue_holds_no_statistic_of_an_empty_queue(tmp_path, tokenizer, bible_pairs):
    """MoCo-BERT's first step has no negative (the queue is empty, by design): its log line holds no accuracy and no
    negative similarity (no NaN, no accuracy of 1); from the second step on they are there."""
    import math

    args = XlsrTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=4,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = XlsrTrainer(
        model=tiny_dual_momentum(),
        args=args,
        train_dataset=bible_pairs.select(range(12)),
        data_collator=BitextCollator(tokenizer, languages=["en", "fr"], max_length=24),
        tokenizers=tokenizer,
    )
    trainer.train()
    history = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert history[0]["step"] == 1 and history[0]["loss"] == 0.0
    assert not {"negative_similarity", "accuracy_source_to_target", "accuracy_target_to_source"} & set(history[0]), (
        history[0]
    )
    assert all(not (isinstance(v, float) and math.isnan(v)) for entry in history for v in entry.values())
    assert "negative_similarity" in history[1] and 0 <= history[1]["accuracy_source_to_target"] <= 1


def test_a_warm_up_the_run_sets_is_kept(tmp_path):
    import json

    config = run_config(tmp_path / "run.yaml", max_steps=4, logging_steps=1, warmup_steps=3, max_eval_pairs=0)
    assert main(["train", str(config)]) == 0
    history = json.loads((tmp_path / "run" / "hf_xlsr_run.json").read_text())["training_log"]
    rates = [entry["learning_rate"] for entry in history if "learning_rate" in entry]
    assert rates[:3] == pytest.approx([0.0, 4e-5 / 3, 8e-5 / 3], rel=1e-6)


def test_the_private_methods_overridden_keep_their_transformers_contract():
    """`XlsrTrainer` overrides five private methods of ``transformers.Trainer`` (its module docstring says why); each
    must still exist with the parameters it is called with, and the checkpoint save must still find its folder
    through ``_get_output_dir`` and write through ``_save``, which the staging folder and the tokenizers rely on."""
    import inspect

    from transformers import Trainer

    expected = {"_get_train_sampler": ["self", "train_dataset"], "_get_grad_norm": ["self", "model", "grad_norm"],
                "_save": ["self", "output_dir", "state_dict"], "_get_output_dir": ["self", "trial"],
                "_save_checkpoint": ["self", "model", "trial"]}  # fmt: skip
    for name, parameters in expected.items():
        assert list(inspect.signature(getattr(Trainer, name)).parameters)[: len(parameters)] == parameters, name
    saving = inspect.getsource(Trainer._save_checkpoint)
    assert "self._get_output_dir(" in saving and "self.save_model(" in saving
    assert "self._save(" in inspect.getsource(Trainer.save_model)
    trainer = inspect.getsource(Trainer)  # the training loop asks for the norm, the data loader for the sampler
    assert "self._get_grad_norm(model, grad_norm=" in trainer and "sampler_fn=self._get_train_sampler" in trainer
