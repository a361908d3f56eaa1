"""sentence-transformers' OpenVINO backend, float32 and static int8, in a process of its own for ``bench_encoding.py``.

sentence-transformers' ``backend="openvino"`` needs ``optimum-intel`` 2, which runs on transformers below 5.6, and
hf_xlsr needs transformers 5.20 or later: the two cannot share an environment. This script imports neither hf_xlsr
nor the benchmarks' other modules, and runs in an environment of its own, made for instance with

    python -m venv peer && peer/bin/pip install torch==2.13.0 "sentence-transformers[openvino]==6.2.0" datasets
    peer/bin/pip uninstall -y torchvision  # PyPI's build does not match a CPU torch; transformers then skips it

``bench_encoding.py --peer-python peer/bin/python`` starts it as ``peer_encoder.py MODEL THREADS CALIBRATION`` and
then writes one line of JSON per request on its stdin, ``{"arm": ..., "texts": file, "out": file}``; the script
encodes the sentences of that JSON file (a list) with that arm, writes the vectors to ``out`` (``.npy``, float32,
normalised) and answers one line. Before its first answer it prepares its arms (``ARMS``; the report's encoding page
says what each is), outside any clock; both run on THREADS threads, cut sentences at 128 tokens and
encode in batches of 32, as the benchmark's other arms do.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ARMS = ("sentence-transformers openvino", "sentence-transformers openvino int8")


def prepare(model: str, threads: int, calibration: Path, folder: Path) -> dict:
    import torch
    from optimum.intel import OVQuantizationConfig
    from sentence_transformers import SentenceTransformer, export_static_quantized_openvino_model

    torch.set_num_threads(threads)
    config = {"ov_config": {"INFERENCE_NUM_THREADS": str(threads)}}
    copy = folder / "model"  # the quantised graph is written beside the model's files: a copy, not the original
    shutil.copytree(model, copy)
    exported = SentenceTransformer(str(copy), device="cpu", backend="openvino", model_kwargs=config)
    data = folder / "calibration"
    data.mkdir()
    sentences = calibration.read_text(encoding="utf-8").splitlines()
    (data / "train.jsonl").write_text("".join(json.dumps({"sentence": s}) + "\n" for s in sentences), encoding="utf-8")
    export_static_quantized_openvino_model(
        exported,
        OVQuantizationConfig(num_samples=len(sentences)),
        str(copy),
        dataset_name=str(data),
        dataset_config_name="default",
        dataset_split="train",
        column_name="sentence",
    )
    quantised = {**config, "file_name": "openvino/openvino_model_qint8_quantized.xml"}
    int8 = SentenceTransformer(str(copy), device="cpu", backend="openvino", model_kwargs=quantised)
    full = SentenceTransformer(str(copy), device="cpu", backend="openvino", model_kwargs=config)  # quantising
    # changes the exported model it is given, so the float32 arm is exported again
    arms = dict(zip(ARMS, (full, int8), strict=True))
    for encoder in arms.values():
        encoder.max_seq_length = 128
        encoder.encode(sentences[:8], batch_size=32)  # the graph compiles once, before any clock
    return arms


def serve(arms: dict) -> None:
    """Say which arms are ready, then answer each request of stdin until it closes."""
    print(json.dumps({"ready": list(arms)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        texts = json.loads(Path(request["texts"]).read_text(encoding="utf-8"))
        vectors = arms[request["arm"]].encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        np.save(request["out"], vectors.astype(np.float32))
        print(json.dumps({"done": request["out"]}), flush=True)


def main() -> None:
    model, threads, calibration = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    with tempfile.TemporaryDirectory() as folder:
        serve(prepare(model, threads, calibration, Path(folder)))


if __name__ == "__main__":
    main()
