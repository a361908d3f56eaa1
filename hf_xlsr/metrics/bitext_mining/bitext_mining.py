# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""BUCC-style bitext mining precision, recall and F1 as an ``evaluate`` metric, loadable offline:

    import evaluate
    from hf_xlsr.evaluation import metric_path
    metric = evaluate.load(metric_path("bitext_mining"))
    metric.compute(predictions=mined_target_of_each_source, references=gold_target_of_each_source)

One entry per source sentence: the index of the target sentence it was mined with (``predictions``) and of its
gold translation (``references``), -1 where there is none. Precision is over the mined pairs, recall over the
gold pairs (``hf_xlsr.evaluation.mining.precision_recall_f1``). ``mining_predictions`` turns mined pairs into
this form.
"""

import datasets
import evaluate
import numpy as np

from hf_xlsr.evaluation.mining import MinedPairs, precision_recall_f1

_CITATION = """@inproceedings{zweigenbaum2018overview,
  title={Overview of the Third BUCC Shared Task: Spotting Parallel Sentences in Comparable Corpora},
  author={Zweigenbaum, Pierre and Sharoff, Serge and Rapp, Reinhard}, booktitle={BUCC}, year={2018}}"""


class BitextMining(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description="predictions / references: target index per source sentence, -1 for none",
            features=datasets.Features(
                {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
            ),
        )

    def _compute(self, predictions, references):
        predictions, references = np.asarray(predictions), np.asarray(references)
        sources = np.flatnonzero(predictions >= 0)
        mined = MinedPairs(sources, predictions[sources], np.zeros(len(sources)))
        gold = {(int(s), int(t)) for s, t in enumerate(references) if t >= 0}
        return precision_recall_f1(mined, gold)
