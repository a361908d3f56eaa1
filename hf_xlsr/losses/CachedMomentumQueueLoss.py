# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""`CachedMomentumQueueLoss`: `MomentumQueueLoss` computed with GradCache (Gao et al., 2021)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.gradcache import CachedLossMixin, _create_minibatch, _minibatch_ranges
from torch import Tensor

from ..modeling.pooling import l2_normalize
from .MomentumQueueLoss import MomentumQueueLoss, meaning_ids


class CachedMomentumQueueLoss(CachedLossMixin, MomentumQueueLoss):
    def __init__(
        self,
        model: SentenceTransformer,
        queue_size: int = 16384,
        momentum: float = 0.999,
        temperature: float = 0.05,
        symmetric: bool = True,
        in_batch_negatives: bool = True,
        queue_dtype: str = "auto",
        mini_batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> None:
        """
        `MomentumQueueLoss` computed with GradCache (Gao et al., 2021), as `CachedMultipleNegativesRankingLoss`
        computes MultipleNegativesRankingLoss: a large batch *and* a queue of past keys, in the memory of a
        ``mini_batch_size`` batch. The loss, every parameter's gradient and the queues after a step are those of
        `MomentumQueueLoss` on the same batch and queue.

        A step runs, all in mini-batches of ``mini_batch_size`` rows:

        1. the momentum keys of every column, without gradient;
        2. the live embeddings of the anchors (and of the positives when ``symmetric``), without gradient, the
           random state of each mini-batch saved;
        3. the loss of each mini-batch of query rows against all the batch's keys and the queues, back-propagated
           to the embeddings (whose gradients are kept); no batch x batch or batch x queue-block matrix is held;
        4. the batch's keys enter the queues, once;
        5. in the backward pass, each mini-batch embedded again with gradient (the same dropout masks) and its kept
           gradient carried into the model. Under DDP and gradient accumulation this is sentence-transformers' own
           backward hook (``no_sync`` until the last mini-batch).

        Args:
            model: SentenceTransformer model
            queue_size: K, the number of past keys kept per queue (see `MomentumQueueLoss`).
            momentum: m of the EMA.
            temperature: tau; scores are cosine / tau.
            symmetric: also score each positive against the anchors' keys and their queue.
            in_batch_negatives: the other rows' keys are negatives too.
            queue_dtype: storage of the queued keys (``"auto"``: bfloat16 on a GPU, float32 on the CPU).
            mini_batch_size: rows embedded, and rows of the loss scored, at once: what bounds the memory.
            show_progress_bar: a progress bar over the mini-batches of each pass.

        References:
            - Wang, Zhao and Liu, Aligning Cross-lingual Sentence Representations with Dual Momentum Contrast, EMNLP
              2021: https://aclanthology.org/2021.emnlp-main.309
            - Gao, Zhang, Han and Callan, Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup,
              RepL4NLP 2021: https://arxiv.org/abs/2101.06983

        Requirements:
            1. (anchor, positive) pairs, or (anchor, positive, negative_1, ..., negative_n) n-tuples
            2. ``callbacks=[loss.callback]`` in the trainer

        Inputs:
            | Inputs                                          | Labels                         |
            |-------------------------------------------------|--------------------------------|
            | (anchor, positive) pairs                        | none, or a meaning id per row  |
            | (anchor, positive, negative_1, ..., negative_n) | none, or a meaning id per row  |

        Relations:
            - `MomentumQueueLoss` is the same loss in one pass (faster, memory growing with the batch).
            - `CachedMultipleNegativesRankingLoss` is this loss with an empty queue and live keys.

        Example:
            ```python
            loss = CachedMomentumQueueLoss(model, queue_size=65536, mini_batch_size=64)
            trainer = SentenceTransformerTrainer(
                model=model, train_dataset=train_dataset, loss=loss, callbacks=[loss.callback]
            )
            ```
        """
        super().__init__(model, queue_size, momentum, temperature, symmetric, in_batch_negatives, queue_dtype)
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be at least 1, got {mini_batch_size}")
        self.mini_batch_size, self.show_progress_bar = mini_batch_size, show_progress_bar
        self._step = None  # the batch's keys and ids, between forward and calculate_loss

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = self._columns(sentence_features)
        n = len(features[0]["input_ids"])
        ids = meaning_ids(labels, n)

        def keys_of(feature: dict[str, Tensor]) -> Tensor:
            ranges = _minibatch_ranges(feature, self.mini_batch_size)
            return torch.cat([self.momentum_keys(_create_minibatch(feature, b, e)) for b, e in ranges])

        candidates, anchor_keys = self._batch_keys(features, keys_of)
        self._step = (candidates, anchor_keys, ids, n)
        try:
            loss = self.forward_cached(features[: 2 if self.symmetric else 1])
        finally:
            self._step = None
        self.momentum_contrast.enqueue(anchor_keys, candidates[:n], ids, loss)
        return loss

    def calculate_loss(self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False):
        """The loss of the batch from the mini-batches of live embeddings ``reps`` (one list per query column),
        one mini-batch of rows at a time; with ``with_backward`` each part is back-propagated to its embeddings
        at once and the detached total returned."""
        candidates, anchor_keys, ids, n = self._step
        total, start = 0.0, 0
        for chunks in zip(*reps, strict=True):
            queries = [l2_normalize(chunk) for chunk in chunks]
            part = self._loss_of_rows(queries, candidates, anchor_keys, ids, n, start) * (len(chunks[0]) / n)
            if with_backward:
                part.backward()
                part = part.detach()
            total, start = total + part, start + len(chunks[0])
        return total

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "mini_batch_size": self.mini_batch_size}
