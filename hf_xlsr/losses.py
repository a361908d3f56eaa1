"""Losses for ``sentence_transformers.SentenceTransformerTrainer``: hf_xlsr's momentum queue where
sentence-transformers users train.

:class:`MomentumQueueLoss` brings MoCo-BERT's mechanism (Wang et al., 2021) to any ``SentenceTransformer``: keys from
an EMA copy of the model, a queue of past keys as extra negatives, the EMA once per optimizer step. It reuses the
parts of :mod:`hf_xlsr.modeling.queue` (the momentum copy, the queues and their undo record, the gather across
processes) and :func:`hf_xlsr.modeling.losses.info_nce` (the queue scored in blocks).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

import torch
from safetensors.torch import load_model, save_model
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import TrainerControl, TrainerState, TrainingArguments

from .modeling.losses import info_nce
from .modeling.pooling import l2_normalize
from .modeling.queue import MomentumContrast
from .trainers.callbacks import MomentumCallback

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "momentum_queue_loss.safetensors"

MOCO_BERT_CITATION = """
@inproceedings{wang-etal-2021-aligning,
    title = "Aligning Cross-lingual Sentence Representations with Dual Momentum Contrast",
    author = "Wang, Liang and Zhao, Wei and Liu, Jingming",
    booktitle = "Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing",
    year = "2021",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2021.emnlp-main.309",
    pages = "3807--3815",
}
"""


class MomentumQueueLoss(nn.Module):
    def __init__(
        self,
        model: SentenceTransformer,
        queue_size: int = 16384,
        momentum: float = 0.999,
        temperature: float = 0.05,
        symmetric: bool = True,
        in_batch_negatives: bool = True,
        queue_dtype: str = "float32",
    ) -> None:
        """
        Given (anchor, positive) pairs, or (anchor, positive, negative_1, ..., negative_n) tuples, this loss is
        InfoNCE whose keys come from a momentum (EMA) copy of the model, with a first-in-first-out queue of the keys
        of recent batches as extra negatives: the number of negatives no longer depends on the batch size, and no
        second forward pass is needed, as it is for GradCache (:class:`CachedMultipleNegativesRankingLoss`).

        For each anchor, the positive is the momentum copy's embedding of its positive; the negatives are the
        momentum embeddings of the other positives and of the hard negatives in the batch (``in_batch_negatives``)
        and every positive key in the queue. With ``symmetric=True`` the positives are queries too, against the
        anchors' keys and a second queue (MoCo-BERT's Eq. 3, for translation pairs). All embeddings are
        L2-normalised and scored by cosine / ``temperature``. After each optimizer step the momentum copy moves
        ``theta_k <- momentum * theta_k + (1 - momentum) * theta``, in float32.

        The EMA runs in a callback, ``loss.callback``, which must be given to the trainer:
        ``SentenceTransformerTrainer(..., loss=loss, callbacks=[loss.callback])``. Training without it raises an
        error as soon as a second batch is queued with the momentum copy never updated. The callback also writes
        the momentum copy and the queues into every checkpoint (``momentum_queue_loss.safetensors``) and reads them
        back when training resumes from a checkpoint in ``output_dir``; a step whose gradients are not finite, or
        that fp16 skipped, updates nothing and takes its keys back out of the queues. Under several processes the
        keys of every process enter the queue, so all processes hold the same one.

        Args:
            model: SentenceTransformer model
            queue_size: K, the number of past keys kept per queue. Keep it below the number of training pairs: a
                queue longer than an epoch holds each anchor's own positive among its negatives.
            momentum: m of the EMA. 1 / (1 - m) is the number of steps the momentum copy lags behind; keep it well
                below the length of training (0.999 lags 1,000 steps).
            temperature: tau; scores are cosine / tau (``scale = 1 / temperature`` of MultipleNegativesRankingLoss).
            symmetric: also score each positive against the anchors' keys and their queue.
            in_batch_negatives: the batch's other (momentum) keys are negatives too; False is MoCo-BERT's Eq. 2, where
                the queue alone holds the negatives.
            queue_dtype: storage of the queued keys, ``"float32"`` or ``"float16"`` / ``"bfloat16"`` (half the
                memory; scores are still computed in float32).

        References:
            - Wang, Zhao and Liu, Aligning Cross-lingual Sentence Representations with Dual Momentum Contrast, EMNLP
              2021: https://aclanthology.org/2021.emnlp-main.309
            - He et al., Momentum Contrast for Unsupervised Visual Representation Learning, CVPR 2020:
              https://arxiv.org/abs/1911.05722

        Requirements:
            1. (anchor, positive) pairs, or (anchor, positive, negative_1, ..., negative_n) n-tuples
            2. ``callbacks=[loss.callback]`` in the trainer (or ``loss.momentum_update()`` after every
               ``optimizer.step()`` in a loop of your own)

        Inputs:
            +-------------------------------------------------+--------+
            | Inputs                                          | Labels |
            +=================================================+========+
            | (anchor, positive) pairs                        | none   |
            +-------------------------------------------------+--------+
            | (anchor, positive, negative_1, ..., negative_n) | none   |
            +-------------------------------------------------+--------+

        Recommendations:
            - Small batches gain the most: the queue holds the negatives a large batch would otherwise bring.
            - Choose ``momentum`` so that 1 / (1 - momentum) is at most a fifth of the training steps, and
              ``queue_size`` so that the queue is full for most of training and shorter than an epoch.

        Relations:
            - :class:`MultipleNegativesRankingLoss` is this loss with ``queue_size`` 0 and live keys: its negatives
              are the batch alone.
            - :class:`CachedMultipleNegativesRankingLoss` reaches many negatives through a large batch computed in
              chunks, at the price of a second forward pass; its negatives are fresh, the queue's are up to
              ``queue_size / batch`` steps old.
            - :class:`hf_xlsr.DualMomentumModel` is the same mechanism as a ``transformers`` model with one encoder
              per language.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from hf_xlsr.losses import MomentumQueueLoss

                model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")
                train_dataset = Dataset.from_dict({
                    "anchor": ["It's nice weather outside today.", "He drove to work."],
                    "positive": ["It's so sunny.", "He took the car to the office."],
                })
                loss = MomentumQueueLoss(model, queue_size=4096)
                trainer = SentenceTransformerTrainer(
                    model=model, train_dataset=train_dataset, loss=loss, callbacks=[loss.callback]
                )
                trainer.train()
        """
        super().__init__()
        if queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, got {queue_size}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must lie in [0, 1], got {momentum}")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.model = model
        self.queue_size, self.momentum, self.temperature = queue_size, momentum, temperature
        self.symmetric, self.in_batch_negatives, self.queue_dtype = symmetric, in_batch_negatives, queue_dtype
        dimension = model.get_embedding_dimension()
        # "encoder", not "model": SentenceTransformerTrainer replaces every child named "model" by the live model.
        self.momentum_contrast = MomentumContrast({"encoder": model}, queue_size, dimension,
                                                  getattr(torch, queue_dtype), strict=True)  # fmt: skip
        self.callback = MomentumQueueCallback(self)

    @property
    def momentum_coefficient(self) -> float:
        return self.momentum

    @torch.no_grad()
    def momentum_update(self, momentum: float | None = None) -> None:
        """The EMA of the momentum copy, once after every optimizer step (the callback calls it)."""
        self.momentum_contrast.update({"encoder": self.model}, self.momentum if momentum is None else momentum)

    @torch.no_grad()
    def discard_momentum_step(self) -> None:
        """A skipped optimizer step: no EMA, and its keys leave the queues."""
        self.momentum_contrast.discard_step()

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = list(sentence_features)
        if len(features) < 2:
            raise ValueError(f"MomentumQueueLoss needs (anchor, positive, ...) columns, got {len(features)} column(s)")
        with torch.no_grad():  # keys: the momentum copy, without dropout, no gradient
            encoder = self.momentum_contrast.momentum["encoder"]
            keys = [l2_normalize(encoder(dict(f))["sentence_embedding"]) for f in features]
        queries = [l2_normalize(self.model(features[0])["sentence_embedding"])]
        if self.symmetric:
            queries.append(l2_normalize(self.model(features[1])["sentence_embedding"]))
        queue_anchors, queue_positives = self.momentum_contrast.queue_x, self.momentum_contrast.queue_y
        options = {"in_batch_negatives": self.in_batch_negatives}
        # anchors -> the positives' keys and the hard negatives' keys, then the positives' queue
        loss = info_nce(queries[0], torch.cat(keys[1:]), self.temperature, [queue_positives.negatives()], **options)
        loss_value = loss.loss
        if self.symmetric:  # positives -> the anchors' keys, then the anchors' queue
            backward = info_nce(queries[1], keys[0], self.temperature, [queue_anchors.negatives()], **options)
            loss_value = loss_value + backward.loss
        self.momentum_contrast.enqueue(keys[0], keys[1], loss=loss_value)
        return loss_value

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "queue_size": self.queue_size,
            "momentum": self.momentum,
            "temperature": self.temperature,
            "symmetric": self.symmetric,
            "in_batch_negatives": self.in_batch_negatives,
            "queue_dtype": self.queue_dtype,
        }

    @property
    def citation(self) -> str:
        return MOCO_BERT_CITATION


class MomentumQueueCallback(MomentumCallback):
    """``MomentumQueueLoss.callback``: the EMA once per optimizer step, and the loss's state in checkpoints.

    ``on_save`` writes the momentum copy, the queues and their counters into the checkpoint just saved;
    ``on_train_begin`` of a resumed run reads them back from ``output_dir/checkpoint-<step>``.
    """

    def __init__(self, loss: MomentumQueueLoss):
        super().__init__(target=loss)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        if state.global_step == 0:
            return
        path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", CHECKPOINT_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{path}: training resumes at step {state.global_step}, but MomentumQueueLoss finds no saved queue "
                "and momentum model there. It restores them from checkpoints of args.output_dir written with "
                "callbacks=[loss.callback]."
            )
        load_model(self.target.momentum_contrast, path, device=str(next(self.target.parameters()).device))
        logger.info("restored the momentum model and queues from %s", path)

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs):
        if args.should_save:
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            save_model(self.target.momentum_contrast, os.path.join(folder, CHECKPOINT_FILE))
