# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Tatoeba-style retrieval accuracy as an ``evaluate`` metric, loadable offline:

    import evaluate
    from hf_xlsr.evaluation import metric_path
    metric = evaluate.load(metric_path("retrieval_accuracy"))
    metric.compute(predictions=source_embeddings, references=target_embeddings)

Row i of ``predictions`` (source-language sentence vectors) translates row i of ``references`` (target-language
vectors). The result holds the accuracy of source->target nearest-neighbour retrieval by cosine, of
target->source, and their mean (computed with faiss by ``hf_xlsr.evaluation.retrieval_accuracy``).
"""

import datasets
import evaluate
import numpy as np

from hf_xlsr.evaluation.retrieval import retrieval_accuracy

_CITATION = """@article{artetxe2019massively,
  title={Massively Multilingual Sentence Embeddings for Zero-Shot Cross-Lingual Transfer and Beyond},
  author={Artetxe, Mikel and Schwenk, Holger}, journal={TACL}, volume={7}, pages={597--610}, year={2019}}"""


class RetrievalAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description="predictions: source sentence vectors; references: the aligned target vectors",
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("float32")),
                    "references": datasets.Sequence(datasets.Value("float32")),
                }
            ),
        )

    def _compute(self, predictions, references):
        forward, backward = retrieval_accuracy(np.asarray(predictions), np.asarray(references))
        return {
            "source2target_accuracy": forward,
            "target2source_accuracy": backward,
            "accuracy": (forward + backward) / 2,
        }
