# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""`MomentumQueueLoss`: MoCo-BERT's momentum queue for ``sentence_transformers.SentenceTransformerTrainer``.

It brings the mechanism of Wang et al. (2021) to any ``SentenceTransformer``: keys from an EMA copy of the model, a
queue of past keys as extra negatives, the EMA once per optimizer step (`MomentumQueueCallback`). It reuses the parts
of `hf_xlsr.modeling.momentum` (the momentum copy, the queues and their undo record, the gather across processes)
and `hf_xlsr.modeling.functional.info_nce` (the queue scored in blocks).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from accelerate.utils import extract_model_from_parallel
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from ..modeling.functional import info_nce
from ..modeling.momentum import MomentumContrast, MomentumMixin
from ..modeling.pooling import l2_normalize
from .MomentumQueueCallback import MomentumQueueCallback

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


class MomentumQueueLoss(MomentumMixin, nn.Module):
    def __init__(
        self,
        model: SentenceTransformer,
        queue_size: int = 16384,
        momentum: float = 0.999,
        temperature: float = 0.05,
        symmetric: bool = True,
        in_batch_negatives: bool = True,
        queue_dtype: str = "auto",
    ) -> None:
        """
        Given (anchor, positive) pairs, or (anchor, positive, negative_1, ..., negative_n) tuples, this loss is
        InfoNCE whose keys come from a momentum (EMA) copy of the model, with a first-in-first-out queue of the keys
        of recent batches as extra negatives: the number of negatives no longer depends on the batch size, and no
        second forward pass is needed, as it is for GradCache (`CachedMultipleNegativesRankingLoss`).

        For each anchor, the positive is the momentum copy's embedding of its positive; the negatives are the
        momentum embeddings of its own hard negatives, of the other rows' positives and hard negatives
        (``in_batch_negatives``), and every positive key in the queue. With ``symmetric=True`` the positives are
        queries too, against the anchors' keys and a second queue of them (MoCo-BERT's Eq. 3, for translation
        pairs), and the loss is the mean of the two directions. All embeddings are L2-normalised and scored by
        cosine / ``temperature``. After each optimizer step the momentum copy moves
        ``theta_k <- momentum * theta_k + (1 - momentum) * theta``, in float32.

        Rows that translate one meaning (multi-way data: the same verse paired with several languages) must never be
        each other's negatives: give the dataset an integer ``label`` column holding one id per meaning
        (sentence-transformers hands it to the loss as ``labels``), and the keys of a query's own meaning, in the
        batch or in the queue, in any language, are left out of its negatives. Without labels every row is a
        meaning of its own.

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
                queue longer than an epoch holds each anchor's own positive among its negatives, unless ``label``
                gives meaning ids.
            momentum: m of the EMA. 1 / (1 - m) is the number of steps the momentum copy lags behind; keep it well
                below the length of training (0.999 lags 1,000 steps).
            temperature: tau; scores are cosine / tau (``scale = 1 / temperature`` of MultipleNegativesRankingLoss).
            symmetric: also score each positive against the anchors' keys and their queue, and average the two
                directions. Without it the anchors need no keys: their momentum forward and their queue are skipped.
            in_batch_negatives: the other rows' keys are negatives too; False is MoCo-BERT's Eq. 2, where the queue
                (and a row's own hard negatives) holds the negatives.
            queue_dtype: storage of the queued keys: ``"auto"`` (bfloat16 on a GPU, float32 on the CPU),
                ``"float32"``, ``"float16"`` or ``"bfloat16"`` (half the memory; on a GPU scored by products in that
                dtype that accumulate in float32, so the scores are still float32).

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
            | Inputs                                          | Labels                         |
            |-------------------------------------------------|--------------------------------|
            | (anchor, positive) pairs                        | none, or a meaning id per row  |
            | (anchor, positive, negative_1, ..., negative_n) | none, or a meaning id per row  |

        Recommendations:
            - Small batches gain the most: the queue holds the negatives a large batch would otherwise bring.
            - Choose ``momentum`` so that 1 / (1 - momentum) is at most a fifth of the training steps, and
              ``queue_size`` so that the queue is full for most of training and shorter than an epoch.

        Relations:
            - `MultipleNegativesRankingLoss` with ``scale = 1 / temperature`` is this loss with an empty
              queue and live keys: its default ``directions=("query_to_doc",)`` for ``symmetric=False``, and
              ``directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"`` for
              ``symmetric=True``. Both give this loss's value before the first optimizer step, when the momentum
              copy is the model itself (in eval mode, or without dropout).
            - `CachedMultipleNegativesRankingLoss` reaches many negatives through a large batch computed in
              chunks, at the price of a second forward pass; its negatives are fresh, the queue's are up to
              ``queue_size / batch`` steps old.
            - `hf_xlsr.DualMomentumModel` is the same mechanism as a ``transformers`` model.

        Example:
            ```python
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
            ```
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
        sides = ("x", "y") if symmetric else ("y",)  # x: the anchors' keys, y: the positives'
        # "encoder", not "model": SentenceTransformerTrainer replaces every child named "model" by the live model.
        self.momentum_contrast = MomentumContrast(
            self._key_modules(), queue_size, dimension, queue_dtype, strict=True, sides=sides
        )
        self.callback = MomentumQueueCallback(self)

    @property
    def momentum_coefficient(self) -> float:
        return self.momentum

    def _key_modules(self) -> dict[str, nn.Module]:
        """The model the momentum copy follows; under DDP, SentenceTransformerTrainer hands the loss the wrapped model,
        whose parameters carry a ``module.`` prefix."""
        return {"encoder": extract_model_from_parallel(self.model)}

    def _key_vector(self, modules, features: dict[str, Tensor]) -> Tensor:
        return modules["encoder"](dict(features))["sentence_embedding"]

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = self._columns(sentence_features)
        n = len(features[0]["input_ids"])
        ids = meaning_ids(labels, n)
        live = {"encoder": self.model}  # as the trainer wrapped it: DDP synchronises the gradients of its forward
        queries = [l2_normalize(self._key_vector(live, f)) for f in features[: 2 if self.symmetric else 1]]
        candidates, anchor_keys = self._batch_keys(features, self.momentum_keys)
        loss = self._loss_of_rows(queries, candidates, anchor_keys, ids, n)
        self.momentum_contrast.enqueue(anchor_keys, candidates[:n], ids, loss)
        return loss

    def _columns(self, sentence_features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
        features = list(sentence_features)
        if len(features) < 2:
            raise ValueError(
                f"{type(self).__name__} needs (anchor, positive, ...) columns, got {len(features)} column(s)"
            )
        return features

    def _batch_keys(self, features: list[dict[str, Tensor]], keys_of) -> tuple[Tensor, Tensor | None]:
        """The momentum keys of the positives then of each hard-negative column (the anchors' candidates), and of
        the anchors when the loss is symmetric (else None); ``keys_of(features)`` embeds one column."""
        candidates = torch.cat([keys_of(f) for f in features[1:]])
        return candidates, keys_of(features[0]) if self.symmetric else None

    def _loss_of_rows(
        self,
        queries: list[Tensor],
        candidates: Tensor,
        anchor_keys: Tensor | None,
        ids: Tensor | None,
        n: int,
        start: int = 0,
    ) -> Tensor:
        """The loss of the rows ``start, start + 1, ...`` of a batch of ``n`` rows, whose live, L2-normalised
        embeddings are ``queries`` (the anchors', and the positives' when symmetric), against the whole batch's
        momentum keys and the queues: the mean over those rows of each direction, the two directions averaged."""
        rows, columns = len(queries[0]), len(candidates) // n
        exclude = None
        if not self.in_batch_negatives:  # a row's own keys only: its positive and its hard negatives
            own = (
                torch.arange(start, start + rows, device=candidates.device)[:, None]
                == torch.arange(n, device=candidates.device)[None, :]
            )
            exclude = ~own.repeat(1, columns)
        contrast = self.momentum_contrast
        row_ids = None if ids is None else ids[start : start + rows]
        options = {"query_ids": row_ids, "key_ids": None if ids is None else candidate_ids(ids, columns)}
        loss = info_nce(
            queries[0],
            candidates,
            self.temperature,
            [contrast.queue_y.negatives()],
            exclude=exclude,
            offset=start,
            **options,
        ).loss
        if self.symmetric:  # positives -> the anchors' keys and their queue; the mean of both directions, as MNRL's
            options = {"exclude": None if exclude is None else exclude[:, :n], "query_ids": row_ids, "key_ids": ids}
            backward = info_nce(
                queries[1], anchor_keys, self.temperature, [contrast.queue_x.negatives()], offset=start, **options
            )
            loss = (loss + backward.loss) / 2
        return loss

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


def candidate_ids(ids: Tensor, columns: int) -> Tensor:
    """The meaning ids of the candidate keys, the positives' then each hard-negative column's: a positive carries
    its row's meaning; a hard negative none (-1), so that it stays a negative of its own row's anchor, and of every
    other anchor."""
    return torch.cat([ids, ids.new_full((len(ids) * (columns - 1),), -1)])


def meaning_ids(labels: Tensor | None, rows: int) -> Tensor | None:
    """The ``label`` column as one integer meaning id per row, or None without labels."""
    if labels is None:
        return None
    if labels.shape != (rows,) or labels.is_floating_point():
        raise ValueError(
            f"MomentumQueueLoss reads the label column as one integer meaning id per row (rows that translate one "
            f"meaning share it); got labels of dtype {labels.dtype} and shape {tuple(labels.shape)} for {rows} rows"
        )
    return labels.long()
