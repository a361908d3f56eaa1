# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""``XlsrTrainer``: the ``transformers.Trainer`` for every hf_xlsr model.

It extends the Trainer through its public hooks and callbacks:

* ``compute_loss`` keeps each scalar field of the model output (loss parts, accuracies, queue statistics) and
  ``log`` reports their means (over the logging interval and over processes) next to the loss;
* ``evaluation_loop`` adds the metrics of ``evaluators`` (e.g. `RetrievalEvaluator`)
  to the evaluation metrics, so early stopping and best-model selection can use them;
* ``create_scheduler`` fits the paper's warm-up to the run;
* a `MomentumCallback` runs the EMA update once per optimizer step for models
  that have momentum encoders. Their queues and momentum encoders are model state, saved with every checkpoint
  and restored by ``resume_from_checkpoint``.

Where transformers has no public hook, it overrides a private method, and ``tests/test_trainer.py`` pins the
transformers behaviour each relies on (``test_the_private_methods_overridden_keep_their_transformers_contract``):

* ``_get_train_sampler``: several language pairs are drawn by `LanguagePairSampler` (no hook chooses the sampler);
* ``_get_grad_norm``: the norm the Trainer computes for clipping is handed to the EMA callback, which skips a step
  whose gradients are not finite (callbacks see no gradient norm before ``on_optimizer_step``);
* ``_save``: the tokenizers are written with the model, into a folder renamed into place;
* ``_save_checkpoint`` and ``_get_output_dir``: ``checkpoint-N`` is written to a hidden staging folder and renamed
  into place, so that an interrupted save never leaves a ``checkpoint-N`` folder behind (the Trainer writes into its
  final name).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import datasets
import torch
from accelerate.utils import broadcast_object_list
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase, Trainer, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

from ..data.multilingual import LANGUAGE_BATCHES, LANGUAGE_SAMPLING_ALPHA, LanguagePairSampler
from ..evaluation.encoders import as_encoder
from ..modeling.common import TrainingDeclarations
from ..modeling.momentum import MomentumMixin
from ..registry import paper_recipe
from ..tokenization import save_tokenizers, tokenizers_by_language
from ..utils import atomic_directory
from .callbacks import (
    MOMENTUM_SCHEDULES,
    EncoderFreezeCallback,
    MomentumCallback,
    PreemptionCallback,
    RunLengthCallback,
    StageCallback,
)
from .checkpoints import check_checkpoint, last_whole_checkpoint
from .checks import ConfigFileError

logger = logging.getLogger(__name__)

_NO_EVAL_DATASET = "evaluators only"
WARMUP_SHARE = 0.1  # the share of a run that warms up when the paper's warm-up steps would take more of it
LOGGING_STEPS_CAP = 500  # TrainingArguments' logging_steps: the interval of a long run's logs
STAGING_FOLDER = ".partial-checkpoints"


@dataclass
class XlsrTrainingArguments(TrainingArguments):
    """``TrainingArguments`` plus the hf_xlsr options. `from_paper` fills in the paper's recipe."""

    momentum_schedule: str = field(
        default="constant",
        metadata={"help": f"momentum coefficient over training: one of {MOMENTUM_SCHEDULES}"},
    )
    language_sampling_alpha: float = field(
        default=LANGUAGE_SAMPLING_ALPHA,
        metadata={
            "help": "language pairs are drawn with p proportional to size^alpha: 1 in proportion to their "
            "sizes, 0 uniformly"
        },
    )
    language_batches: str = field(
        default=LANGUAGE_BATCHES[0],
        metadata={"help": f"one of {LANGUAGE_BATCHES}: batches that mix the language pairs, or of one pair each"},
    )
    eval_batch_size_for_encoding: int = field(
        default=64, metadata={"help": "batch size with which evaluators encode sentences"}
    )
    eval_max_length: int | None = field(
        default=None,
        metadata={
            "help": "truncation length for evaluators' encoding; None: the run's max_length (hf-xlsr train, "
            "which also writes it into the export), else 128"
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "start a new run in an output_dir that holds another run's model or checkpoints, "
            "replacing its checkpoints and export (without it such a run is refused before training)"
        },
    )
    push_export_to_hub: bool = field(
        default=False,
        metadata={"help": "after training, push the sentence-transformers export and its card to hub_model_id"},
    )
    push_checkpoint_to_hub: bool = field(
        default=False, metadata={"help": "with push_export_to_hub, also push the full training checkpoint"}
    )
    # sized to the run: a 30-step run logs every 3 steps, a long one every 500 (TrainingArguments' fixed 500 shows
    # a short run's loss only at its end)
    logging_steps: float | None = field(
        default=None,
        metadata={
            "help": f"optimizer steps between two logs; default: a tenth of the run's steps, at most "
            f"{LOGGING_STEPS_CAP}"
        },
    )
    save_total_limit: int | None = field(
        default=2, metadata={"help": "checkpoints kept in output_dir, the oldest deleted first (None: all)"}
    )
    save_final_checkpoint: bool = field(
        default=False,
        metadata={
            "help": "also write a checkpoint at the last step, off a save_steps boundary (transformers 5 does; "
            "the trained model is what save_model writes to output_dir)"
        },
    )

    # the schedule of models that train in stages, and GradCache: None leaves what the model asks for
    second_stage_step: int | None = field(
        default=None,
        metadata={
            "help": "xlsr_cmlm's two-stage schedules (cmlm->br, cmlm->cmlm+br): the optimizer step the second stage "
            "starts at (default: the paper's 1,500,000)"
        },
    )
    encoder_frozen_steps: int | None = field(
        default=None,
        metadata={
            "help": "optimizer steps at the start that train with the encoder frozen: xlsr_cmlm's warm-up of a new "
            "masked-LM head (default: 300 where the encoder has no masked-LM head, else 0), the first stage of "
            "xlsr_hictl_translation's fine-tuning (default: 0)"
        },
    )
    mini_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "xlsr_dual_momentum: embed each batch in passes of this many rows (GradCache), at one pass's "
            "activation memory with the whole batch's loss and gradients (default: the batch in one pass)"
        },
    )

    def __post_init__(self):
        for name, least in (("second_stage_step", 0), ("encoder_frozen_steps", 0), ("mini_batch_size", 1)):
            if getattr(self, name) is not None and getattr(self, name) < least:
                raise ConfigFileError(f"{name} must be at least {least}, got {getattr(self, name)}")
        self.logging_sized = self.logging_steps is None
        if self.logging_sized:
            self.logging_steps = LOGGING_STEPS_CAP  # until the run's length is known (RunLengthCallback)
        super().__post_init__()
        if self.dataloader_pin_memory and (self.use_cpu or not torch.cuda.is_available()):
            self.dataloader_pin_memory = False  # pinned memory serves copies to a GPU; without one torch warns

    @classmethod
    def from_paper(cls, model, **arguments) -> XlsrTrainingArguments:
        """Arguments for training ``model`` (a model, its configuration or its ``model_type``) by its paper's recipe
        (its model type's entry in `hf_xlsr.model_types`, e.g. MoCo-BERT's Table 9): the ``arguments`` given here,
        then the paper's values, then ``TrainingArguments``' own defaults. The paper's total batch is shared over
        ``WORLD_SIZE`` processes. ``XlsrTrainingArguments(...)`` itself applies no paper value.

        Example:

        ```python
        >>> args = XlsrTrainingArguments.from_paper("xlsr_dual_momentum", output_dir="run", learning_rate=1e-4)
        >>> args.learning_rate, args.warmup_steps, args.per_device_train_batch_size
        (0.0001, 400, 1024)
        ```
        """
        model_type = model if isinstance(model, str) else getattr(model, "config", model).model_type
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        paper = paper_recipe(model_type, set(arguments), world_size)
        made = cls(**{**paper, **arguments})
        made.paper_values = frozenset(paper)
        return made


class XlsrTrainer(Trainer):
    """Trainer for hf_xlsr models.

    Args beyond ``Trainer``'s:
        tokenizers: one tokenizer for every language, or ``{language: tokenizer}`` (a model with one encoder per
            language); saved with every checkpoint and used by evaluators. Defaults to ``processing_class``.
        evaluators: callables ``evaluator(encoder) -> dict[str, float]`` run at every evaluation.
    """

    def __init__(
        self,
        model=None,
        args: TrainingArguments | None = None,
        *,
        tokenizers: PreTrainedTokenizerBase | Mapping[str, PreTrainedTokenizerBase] | None = None,
        evaluators: Sequence[Callable[..., dict[str, float]]] | None = None,
        eval_dataset=None,
        **kwargs,
    ):
        self.evaluators = list(evaluators or [])
        if args is not None and args.remove_unused_columns:
            # Collators tokenise raw text columns, which Trainer would otherwise drop.
            args.remove_unused_columns = False
        declared = model if isinstance(model, TrainingDeclarations) else TrainingDeclarations()
        refused = settings_not_taken(declared, args, type(model).__name__)
        if refused:
            raise ValueError(refused[0])
        if getattr(args, "mini_batch_size", None) is not None:
            model.mini_batch_size = args.mini_batch_size
        schedule = schedule_steps(declared, args)
        if args is not None and args.ddp_find_unused_parameters is None and schedule["encoder_frozen_steps"]:
            args.ddp_find_unused_parameters = True  # a frozen encoder has no gradients for DDP to reduce
        if args is not None and declared.uses_gradcache:
            # GradCache's loss reaches the weights only through its backward hook, which DDP's search for unused
            # parameters cannot see from the forward's output: every weight gets its gradient in that hook instead
            if args.ddp_find_unused_parameters:
                raise ValueError(
                    "mini_batch_size trains under DDP with ddp_find_unused_parameters=False (every "
                    "weight gets its gradient in GradCache's backward hook)"
                )
            args.ddp_find_unused_parameters = False
        contrast = model.momentum_contrast if isinstance(model, MomentumMixin) else None
        if contrast is not None and isinstance(kwargs.get("train_dataset"), datasets.Dataset):
            kwargs["train_dataset"] = number_examples(kwargs["train_dataset"], contrast.queue_size)
        placeholder = eval_dataset is None and self.evaluators
        super().__init__(
            model=model, args=args, eval_dataset=_NO_EVAL_DATASET if placeholder else eval_dataset, **kwargs
        )
        if placeholder:
            self.eval_dataset = None
        tokenizers = self.processing_class if tokenizers is None else tokenizers
        languages = getattr(getattr(self.model, "config", None), "languages", None) or []
        self.tokenizers = tokenizers_by_language(tokenizers, languages) if tokenizers is not None else {}
        self._momentum_callback = None
        if isinstance(self.model, MomentumMixin) and self.model.momentum_coefficient is not None:  # an EMA to run
            self.refuse_sharded_parameters()
            self._momentum_callback = MomentumCallback(getattr(self.args, "momentum_schedule", "constant"))
            self.add_callback(self._momentum_callback)
        self.add_callback(RunLengthCallback(LOGGING_STEPS_CAP))
        self.preemption = PreemptionCallback()  # after RunLengthCallback: a signal's checkpoint is always saved
        self.add_callback(self.preemption)
        if schedule["second_stage_step"] is not None:
            self.add_callback(StageCallback(schedule["second_stage_step"]))
        if schedule["encoder_frozen_steps"]:
            self.add_callback(EncoderFreezeCallback(schedule["encoder_frozen_steps"]))
        self._output_parts: dict[str, list[torch.Tensor]] = defaultdict(list)
        self._staging_dir: str | None = None

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        """``Trainer.train``. ``resume_from_checkpoint=True`` takes the newest *whole* checkpoint of ``output_dir``
        (`last_whole_checkpoint`: one left half-written is skipped with a warning), and the checkpoint is checked
        against the model (`check_checkpoint`) before anything trains."""
        with_optimizer = not self.args.save_only_model
        if resume_from_checkpoint is True:
            resume_from_checkpoint = last_whole_checkpoint(self.args.output_dir, with_optimizer)
        if resume_from_checkpoint:
            check_checkpoint(
                resume_from_checkpoint, self.accelerator.unwrap_model(self.model), with_optimizer, self.args.max_steps
            )
            logger.info("resuming from %s", resume_from_checkpoint)
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    def refuse_sharded_parameters(self) -> None:
        """The EMA update reads and writes whole parameters on every process; FSDP and DeepSpeed ZeRO-3 shard them.
        Data parallelism (DDP) and DeepSpeed ZeRO-1/2 (optimizer and gradient sharding) keep them whole."""
        zero3 = self.is_deepspeed_enabled and self.accelerator.state.deepspeed_plugin.zero_stage == 3
        if self.is_fsdp_enabled or zero3:
            engine = "FSDP" if self.is_fsdp_enabled else "DeepSpeed ZeRO-3"
            raise ValueError(
                f"{type(self.model).__name__} keeps a momentum (EMA) copy of its encoders, which needs whole "
                f"parameters on every process, but {engine} shards them. Train with DDP or DeepSpeed ZeRO-2 (see "
                "examples/accelerate/), or set queue_size: 0 for models whose queue is optional."
            )

    def _get_grad_norm(self, model, grad_norm=None):
        """The Trainer's norm of the step's gradients (computed for clipping), handed to ``MomentumCallback``,
        which skips the EMA of a step whose gradients are not finite without computing the norm again."""
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        if self._momentum_callback is not None:
            self._momentum_callback.gradient_norm = grad_norm
        return grad_norm

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """The paper's warm-up fits the paper's run: where it came from the paper's recipe (the run set no
        ``warmup_steps``) and would take more than `WARMUP_SHARE` of this run, the run warms up for that share
        of its own steps instead, and says so."""
        paper = getattr(self.args, "paper_values", frozenset())
        warmup = self.args.warmup_steps
        if "warmup_steps" in paper and warmup >= 1 and warmup > WARMUP_SHARE * num_training_steps:
            fitted = max(1, round(WARMUP_SHARE * num_training_steps))
            logger.info(
                "warm-up: %d of this run's %d steps (%.0f%%), not the paper's %d, which are for a run of "
                "its own length; set warmup_steps to choose",
                fitted,
                num_training_steps,
                100 * WARMUP_SHARE,
                warmup,
            )
            self.args.warmup_steps = fitted
        elif "warmup_steps" in paper:
            logger.info("warm-up: the paper's %s of this run's %d steps", warmup, num_training_steps)
        steps = self.args.get_warmup_steps(num_training_steps)
        if "warmup_steps" not in paper and steps >= num_training_steps / 2:  # the run's own setting
            logger.warning(
                "warmup_steps %d of this run's %d steps: %s; lower warmup_steps to train at the full rate",
                steps,
                num_training_steps,
                "the whole run is warm-up"
                if steps >= num_training_steps
                else "the learning rate peaks after half the run",
            )
        return super().create_scheduler(num_training_steps, optimizer)

    # ------------------------------------------------------------------------------------------------------------
    # Loss and logging

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        if model.training:
            for name, value in outputs.items():
                if name != "loss" and torch.is_tensor(value) and value.ndim == 0:
                    self._output_parts[name].append(value.detach().float())
        return (outputs.loss, outputs) if return_outputs else outputs.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._output_parts:
            names = sorted(self._output_parts)
            means = torch.stack([torch.stack(self._output_parts[name]).nanmean() for name in names])
            means = self.accelerator.reduce(means.to(self.args.device), reduction="mean")
            # a statistic with nothing to measure yet (the queue statistics before the queue holds a key) is absent
            logs.update(
                {
                    name: round(value, 4)
                    for name, value in zip(names, means.tolist(), strict=True)
                    if not math.isnan(value)
                }
            )
            self._output_parts.clear()
        super().log(logs, start_time)

    # ------------------------------------------------------------------------------------------------------------
    # Evaluation

    def _get_train_sampler(self, train_dataset=None):
        """Rows of several language pairs (``stack_pairs``' ``pair`` column) are drawn by
        `LanguagePairSampler`: each pair with probability proportional to its
        size^``language_sampling_alpha``, in batches that mix the pairs or of one pair each (``language_batches``)."""
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        columns = getattr(dataset, "column_names", None) or []
        pairs = dataset["pair"][:] if "pair" in columns else []  # a list: rows read one by one cost far more
        if len(set(pairs)) < 2:
            return super()._get_train_sampler(train_dataset)
        args = self.args
        alpha = getattr(args, "language_sampling_alpha", LANGUAGE_SAMPLING_ALPHA)
        sampler = LanguagePairSampler(
            pairs,
            args.per_device_train_batch_size,
            alpha,
            getattr(args, "language_batches", LANGUAGE_BATCHES[0]),
            seed=args.seed,
        )
        if self.is_world_process_zero() and {"source_language", "target_language"} <= set(columns):
            first = {pair: row for row, pair in reversed(list(enumerate(pairs)))}  # each pair's first row
            names = {
                pair: f"{dataset[row]['source_language']}-{dataset[row]['target_language']}"
                for pair, row in first.items()
            }
            logger.info(
                "language pairs drawn with p proportional to size^%g: %s",
                alpha,
                ", ".join(
                    f"{names[pair]} {100 * float(weight):.1f}% ({len(sampler.rows[pair])} pairs)"
                    for pair, weight in zip(sampler.order, sampler.weights, strict=True)
                ),
            )
        return sampler

    def get_eval_dataloader(self, eval_dataset=None) -> DataLoader:
        if eval_dataset is None and self.eval_dataset is None and self.evaluators:
            return DataLoader([])
        return super().get_eval_dataloader(eval_dataset)

    def run_evaluators(self) -> dict[str, float]:
        """Run every evaluator on the main process with the unwrapped model; all processes get the metrics."""
        metrics: dict[str, float] = {}
        if self.is_world_process_zero():
            encoder = as_encoder(
                self.accelerator.unwrap_model(self.model),
                self.tokenizers,
                batch_size=getattr(self.args, "eval_batch_size_for_encoding", 64),
                max_length=getattr(self.args, "eval_max_length", None) or 128,
                show_progress=not self.args.disable_tqdm,  # an evaluation of minutes is never silent
            )
            for evaluator in self.evaluators:
                metrics.update(evaluator(encoder))
        return broadcast_object_list([metrics])[0]

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix="eval"
    ):
        output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys, metric_key_prefix)
        if not self.evaluators:
            return output
        if isinstance(self.eval_dataset, dict) and metric_key_prefix != f"eval_{next(iter(self.eval_dataset))}":
            return output  # with several eval datasets, run the evaluators once
        for name, value in self.run_evaluators().items():
            output.metrics[f"eval_{name}"] = value
        return output

    # ------------------------------------------------------------------------------------------------------------
    # Saving and publishing

    def push_export_to_hub(
        self,
        repo_id: str | None = None,
        results: dict | None = None,
        run_info: dict | None = None,
        include_checkpoint: bool | None = None,
    ) -> list[str]:
        """Push the sentence-transformers export with its model card (``hf_xlsr.hub.push_to_hub``)."""
        from ..hub import push_to_hub

        repo_id = repo_id or self.args.hub_model_id
        if not repo_id:
            raise ValueError("push_export_to_hub needs a repository id: set hub_model_id or pass repo_id")
        if include_checkpoint is None:
            include_checkpoint = getattr(self.args, "push_checkpoint_to_hub", False)
        return push_to_hub(
            self.accelerator.unwrap_model(self.model),
            self.tokenizers,
            repo_id,
            results=results,
            run_info=run_info,
            include_checkpoint=include_checkpoint,
            private=self.args.hub_private_repo,
            token=self.args.hub_token,
        )

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        output_dir = output_dir or self.args.output_dir
        with atomic_directory(output_dir, merge=True) as staging:
            super()._save(str(staging), state_dict)
            save_tokenizers(self.tokenizers, staging)

    def _get_output_dir(self, trial) -> str:
        return self._staging_dir or super()._get_output_dir(trial)

    def _save_checkpoint(self, model, trial) -> None:
        """Write ``checkpoint-N`` into a hidden staging folder, then rename it into the run folder."""
        run_dir = self._get_output_dir(trial)
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        self._staging_dir = os.path.join(run_dir, STAGING_FOLDER)
        try:
            super()._save_checkpoint(model, trial)
        finally:
            staged, self._staging_dir = os.path.join(run_dir, STAGING_FOLDER, name), None
        self.accelerator.wait_for_everyone()
        if self.args.should_save:
            final = os.path.join(run_dir, name)
            if os.path.isdir(final):
                shutil.rmtree(final)
            os.replace(staged, final)
            shutil.rmtree(os.path.join(run_dir, STAGING_FOLDER), ignore_errors=True)
            if self.state.best_model_checkpoint == staged:
                self.state.best_model_checkpoint = final
                self.state.save_to_json(os.path.join(final, "trainer_state.json"))
            if self.args.save_total_limit is not None:
                rotate_checkpoints(
                    output_dir=run_dir,
                    save_total_limit=self.args.save_total_limit,
                    best_model_checkpoint=self.state.best_model_checkpoint,
                    use_mtime=False,
                )
        self.accelerator.wait_for_everyone()


def schedule_steps(model: TrainingDeclarations, args) -> dict[str, int | None]:
    """``second_stage_step`` and ``encoder_frozen_steps`` of a run: each as the training arguments set it, else as
    ``model`` asks for (`TrainingDeclarations`)."""
    steps = {}
    for name in ("second_stage_step", "encoder_frozen_steps"):
        given = getattr(args, name, None)
        steps[name] = getattr(model, name) if given is None else given
    return steps


def settings_not_taken(declared: TrainingDeclarations | type, args, name: str) -> list[str]:
    """One line for each schedule or GradCache setting of ``args`` that the model ``name`` (what ``declared``, the
    model or its class, declares) cannot follow: a second stage for a model that trains in one, a frozen encoder for
    one that cannot freeze it alone, mini-batches for one without a GradCache forward."""
    takes = {"second_stage_step": declared.second_stage_step is not None,
             "encoder_frozen_steps": hasattr(declared, "set_encoder_frozen"),
             "mini_batch_size": declared.supports_gradcache}  # fmt: skip
    taken = ", ".join(setting for setting, ok in takes.items() if ok) or f"none of {', '.join(takes)}"
    return [
        f"{setting}: {name} does not take it (it takes {taken})"
        for setting, ok in takes.items()
        if not ok and getattr(args, setting, None) not in (None, 0)
    ]


def number_examples(dataset: datasets.Dataset, queue_size: int) -> datasets.Dataset:
    """The training rows numbered in an ``example_id`` column, which collators pass to the model, so that a queued
    key of a query's own example (its translation, queued an epoch ago) is never one of its negatives."""
    if queue_size >= len(dataset):
        logger.warning(
            "the queue holds %d keys but an epoch has only %d training pairs: every query would meet its own "
            "translation among the queued negatives of the next epoch; keys of a query's own example are left out "
            "(by example_id), but a queue this large mostly repeats keys. Use a smaller queue_size or more data.",
            queue_size,
            len(dataset),
        )
    if "example_id" in dataset.column_names:
        return dataset
    return dataset.add_column("example_id", list(range(len(dataset))))
