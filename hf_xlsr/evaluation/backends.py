# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Where encoding runs: the ``backend`` of `as_encoder` and of ``hf-xlsr encode``,
``mine`` and ``evaluate``.

=============  ========================================================================================================
``torch``      the model in PyTorch: float32, or bfloat16 autocast on a GPU that supports it
``bf16``       the model in PyTorch in bfloat16 (CPUs with AVX-512 BF16 or AMX, GPUs): the commands load its
               weights in bfloat16 (`loading.load_for_evaluation`); a float32 model runs under bfloat16 autocast
``onnx``       the model's sentence graph exported to ONNX (``torch.onnx.export``) and run by ONNX Runtime
``onnx-int8``  that graph with its weights quantised to int8, per output channel, by ONNX Runtime's dynamic
               quantisation (as sentence-transformers' ``export_dynamic_quantized_onnx_model`` does through optimum),
               except the products that narrow the width, which stay float32 (`narrowing_products`)
``openvino``   that graph compiled by OpenVINO for the CPU (which infers in bfloat16 where the CPU has it)
``openvino-``  that graph quantised to int8 by NNCF's post-training static quantisation (weights and activations,
``int8``       calibrated on up to `CALIBRATION` sentences of the first call, spread over their lengths), as
               sentence-transformers' ``export_static_quantized_openvino_model`` does through optimum-intel
=============  ========================================================================================================

The sentence graph is one language's path from ``(input_ids, attention_mask)`` to the L2-normalised vector: an
hf_xlsr model's ``get_sentence_embeddings``, or a ``SentenceTransformer``'s modules (an export's route for the
language). It is exported once per route into a temporary folder, loaded by the runtime, and the folder removed.
The ONNX backends need ``pip install "hf_xlsr[onnx]"``; the OpenVINO ones ``pip install "hf_xlsr[openvino]"``.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

BACKENDS = ("torch", "bf16", "onnx", "onnx-int8", "openvino", "openvino-int8")
_NEEDS = {"onnx": ["onnxruntime", "onnxscript"], "onnx-int8": ["onnxruntime", "onnxscript"]}
_NEEDS["openvino"] = [*_NEEDS["onnx"], "openvino"]
_NEEDS["openvino-int8"] = [*_NEEDS["openvino"], "nncf"]
CALIBRATION = 300  # sentences that calibrate openvino-int8, as many as optimum-intel's default

Runner = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (input_ids, attention_mask) -> float32 vectors


def check_backend(backend: str) -> None:
    """Refuse, before any work, a backend that is not one of `BACKENDS` or whose runtime is not installed."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: not one of {', '.join(BACKENDS)}")
    import importlib.util

    missing = [name for name in _NEEDS.get(backend, []) if importlib.util.find_spec(name) is None]
    if missing:
        extra = "onnx" if backend.startswith("onnx") else "openvino"
        raise ValueError(
            f'backend {backend!r} needs {" and ".join(missing)}: pip install "hf_xlsr[{extra}]" (from a '
            f'clone: pip install ".[{extra}]")'
        )


class SentenceGraph(torch.nn.Module):
    """``(input_ids, attention_mask) -> L2-normalised float32 vectors`` of ``model`` for ``language``: an hf_xlsr
    model's ``get_sentence_embeddings`` or a ``SentenceTransformer``'s forward (routed by ``task=language`` when
    the model routes)."""

    def __init__(self, model: torch.nn.Module, language: str, routed: bool = False):
        super().__init__()
        self.model, self.language, self.routed = model, language, routed

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if hasattr(self.model, "get_sentence_embeddings"):
            vectors = self.model.get_sentence_embeddings(input_ids, attention_mask, language=self.language)
        else:
            features = {"input_ids": input_ids, "attention_mask": attention_mask}
            vectors = self.model(features, **({"task": self.language} if self.routed else {}))["sentence_embedding"]
        return F.normalize(vectors.float(), dim=-1)


@contextlib.contextmanager
def _quiet(logger_name: str):
    """Raise ``logger_name``'s level to ERROR for the block."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _threads() -> int:
    return torch.get_num_threads()  # every backend uses the threads torch was given, so comparisons are fair


def _torch_runner(graph: SentenceGraph, bfloat16: bool) -> Runner:
    device = next(graph.parameters()).device

    @torch.inference_mode()
    def run(input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bfloat16):
            vectors = graph(torch.from_numpy(input_ids).to(device), torch.from_numpy(attention_mask).to(device))
        return vectors.float().cpu().numpy()

    return run


def export_onnx(graph: SentenceGraph, example: tuple[np.ndarray, np.ndarray], path: Path) -> None:
    """Write ``graph`` to ``path`` as ONNX (weights beside it in ``path.data``), batch and length dynamic."""
    dynamic = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length")}
    device = next(graph.parameters()).device
    inputs = tuple(torch.from_numpy(array).to(device) for array in example)
    was_training = graph.training
    graph.eval()
    # the exporter logs every optional operator library it does not find, prints its progress, warns of torch's own
    # pytree deprecations and that the two inputs share their axes (as they should)
    with _quiet("torch.onnx"), contextlib.redirect_stdout(None), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message="# The axis name")
        torch.onnx.export(
            graph,
            inputs,
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_shapes=(dynamic, dynamic),
            dynamo=True,
            verbose=False,
        )
    graph.train(was_training)


def narrowing_products(path: Path) -> list[str]:
    """The MatMul nodes of the ONNX graph at ``path`` whose constant weight has more rows than columns: the products
    that narrow the width, in a transformer the feed-forward output projections. Their input is the activation's
    output, whose outliers one int8 scale per tensor (dynamic quantisation) cannot resolve, so ``onnx-int8`` keeps
    them in float32: on the 22-language e5-small model int8 then loses 0.12 points of held-out retrieval instead of
    0.31, at 1.38x ``SentenceTransformer.encode``'s speed instead of 1.83x (benchmark report, "Encoding backends")."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {tensor.name: tuple(tensor.dims) for tensor in graph.initializer}
    narrowing = []
    for node in graph.node:
        shape = shapes.get(node.input[1]) if node.op_type == "MatMul" else None
        if shape is not None and len(shape) == 2 and shape[0] > shape[1]:
            narrowing.append(node.name)
    return narrowing


def quantize_int8(path: Path, quantized: Path) -> None:
    """Write ``path``'s graph to ``quantized`` with int8 weights (per output channel, dynamic int8 activations),
    the `narrowing_products` left in float32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet(""):  # its advice to pre-process, whose shape inference fails on these graphs
        quantize_dynamic(
            path, quantized, per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=narrowing_products(path)
        )


def _onnx_runner(path: Path) -> Runner:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = _threads()
    available = onnxruntime.get_available_providers()
    providers = [name for name in ("CUDAExecutionProvider", "CPUExecutionProvider") if name in available]
    session = onnxruntime.InferenceSession(str(path), options, providers=providers)
    return lambda input_ids, attention_mask: session.run(
        None, {"input_ids": input_ids, "attention_mask": attention_mask}
    )[0]


def quantize_openvino(path: Path, calibration: list[tuple[np.ndarray, np.ndarray]]):
    """``path``'s graph read by OpenVINO and quantised to int8 by NNCF (weights and activations, the ranges
    calibrated on the tokenised batches of ``calibration``), with NNCF's preset for transformers."""
    import nncf
    import openvino

    model = openvino.Core().read_model(str(path))
    batches = nncf.Dataset([{"input_ids": ids, "attention_mask": mask} for ids, mask in calibration])
    nncf.set_log_level(logging.ERROR)
    with contextlib.redirect_stdout(None):  # its progress bars
        return nncf.quantize(model, batches, model_type=nncf.ModelType.TRANSFORMER, subset_size=CALIBRATION)


def _openvino_runner(model) -> Runner:
    import openvino

    compiled = openvino.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": _threads()})
    return lambda input_ids, attention_mask: np.asarray(
        compiled({"input_ids": input_ids, "attention_mask": attention_mask})[0], dtype=np.float32
    )


def compile_graph(
    graph: SentenceGraph,
    backend: str,
    example: tuple[np.ndarray, np.ndarray],
    calibration: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> Runner:
    """A `Runner` of ``graph`` on ``backend``; ``example`` is one tokenised batch (int64 arrays) to trace
    the export with, ``calibration`` the tokenised batches that calibrate ``openvino-int8`` (``[example]`` when
    absent)."""
    check_backend(backend)
    if backend in ("torch", "bf16"):
        device = next(graph.parameters()).device
        auto = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return _torch_runner(graph, bfloat16=backend == "bf16" or auto)
    with tempfile.TemporaryDirectory(prefix="hf_xlsr-onnx-") as folder:
        path = Path(folder) / "model.onnx"
        export_onnx(graph, example, path)
        if backend == "onnx-int8":
            quantized = Path(folder) / "model_qint8.onnx"
            quantize_int8(path, quantized)
            path = quantized
        if backend == "openvino-int8":
            return _openvino_runner(quantize_openvino(path, calibration or [example]))
        return _openvino_runner(str(path)) if backend == "openvino" else _onnx_runner(path)
