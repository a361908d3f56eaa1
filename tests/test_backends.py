"""Encoding backends (``--backend`` of ``hf-xlsr encode``, ``mine`` and ``evaluate``): each gives the vectors of
the PyTorch path within its precision, on a real encoder and real verses, and leaves nothing behind."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
import torch
from conftest import MINILM
from sentence_transformers import SentenceTransformer

from hf_xlsr.data import load_bible, resolve_reference
from hf_xlsr.evaluation import RetrievalEvaluator, as_encoder
from hf_xlsr.evaluation.backends import BACKENDS, SentenceGraph, export_onnx, quantize_int8
from hf_xlsr.evaluation.loading import load_for_evaluation
from hf_xlsr_cli import BACKENDS as CLI_BACKENDS
from hf_xlsr_cli import main

# largest difference from float32 PyTorch: exact graph for onnx; bfloat16 arithmetic (OpenVINO infers in bfloat16 on
# a CPU that has it) and int8 weights by their precision
TOLERANCE = {"torch": 1e-6, "onnx": 1e-5, "bf16": 0.01, "openvino": 0.01, "onnx-int8": 0.08, "openvino-int8": 0.08}
# mean cosine to the float32 vectors, 0.999 where not named: int8 gives 0.995 on these verses (0.990 with the
# feed-forward output projections quantised too), NNCF's static int8 0.996
MEAN_COSINE = {"onnx-int8": 0.993, "openvino-int8": 0.993}


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformer(resolve_reference(MINILM), device="cpu")


@pytest.fixture(scope="module")
def verses():
    return load_bible(["en", "fr"], split="heldout").select(range(0, 2000, 20))  # 100 held-out pairs


@pytest.fixture(scope="module")
def reference(minilm, verses):
    """float32 PyTorch: the French vectors and the held-out retrieval accuracy."""
    encoder = as_encoder(minilm)
    return encoder(verses["fr"], "fr"), RetrievalEvaluator.from_dataset(verses, ["en", "fr"])(encoder)


def openvino_capabilities() -> list[str]:
    import openvino

    return openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def test_the_command_line_offers_the_librarys_backends():
    assert CLI_BACKENDS == BACKENDS


@pytest.mark.parametrize("backend", ["bf16", "onnx", "onnx-int8", "openvino", "openvino-int8"])
def test_each_backend_gives_the_float32_vectors_within_its_precision(
    backend, minilm, verses, reference, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the exported graphs go to a temporary folder, never the working directory
    expected, exact = reference
    encoder = as_encoder(minilm, backend=backend, batch_size=16)
    vectors = encoder(verses["fr"], "fr")
    assert vectors.dtype == np.float32 and vectors.shape == expected.shape
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    difference = float(np.abs(vectors - expected).max())
    assert difference <= TOLERANCE[backend], difference
    cosine = float(np.mean(np.sum(vectors * expected, axis=1)))
    assert cosine >= MEAN_COSINE.get(backend, 0.999), cosine
    # lower precision changes the vectors (a backend that ignored its precision would not); OpenVINO infers in
    # bfloat16 only on a CPU that has it, and in float32 elsewhere
    lower = backend != "onnx" and (backend != "openvino" or "BF16" in openvino_capabilities())
    if lower:
        assert difference > TOLERANCE["onnx"]
    if backend.endswith("int8"):  # and int8 more than bfloat16
        assert difference > TOLERANCE["bf16"]
    approximate = RetrievalEvaluator.from_dataset(verses, ["en", "fr"])(encoder)
    assert abs(approximate["retrieval_accuracy"] - exact["retrieval_accuracy"]) <= 0.03
    assert list(tmp_path.iterdir()) == []


def test_int8_keeps_the_products_that_narrow_the_width_in_float32(minilm, verses, tmp_path):
    """MiniLM-L6's 36 weighted products: its 6 feed-forward output projections (1,536 -> 384), whose inputs carry the
    GELU's outliers, stay float32; the other 30 run on int8. (Quantising those 6 too lowers the mean cosine of the
    int8 vectors to the float32 ones from 0.995 to 0.990: ``MEAN_COSINE`` in the test above.)"""
    features = minilm.preprocess(verses["fr"][:2])
    example = (features["input_ids"].numpy(), features["attention_mask"].numpy())
    export_onnx(SentenceGraph(minilm, "fr"), example, tmp_path / "model.onnx")
    quantize_int8(tmp_path / "model.onnx", tmp_path / "int8.onnx")
    graph = onnx.load(str(tmp_path / "int8.onnx"), load_external_data=False).graph
    shapes = {tensor.name: tuple(tensor.dims) for tensor in graph.initializer}
    float_products = [
        shapes[node.input[1]] for node in graph.node if node.op_type == "MatMul" and node.input[1] in shapes
    ]
    assert float_products == [(1536, 384)] * 6
    assert Counter(node.op_type for node in graph.node)["MatMulInteger"] == 30


def test_openvino_int8_is_calibrated_on_sentences_spread_over_the_lengths_of_the_first_call(minilm, verses):
    """Static int8 fixes each activation's range from the calibration sentences: `CALIBRATION` of the first call's,
    from its shortest to its longest, not its first or its longest alone."""
    from hf_xlsr.evaluation.backends import CALIBRATION

    sentences = [" ".join(["word"] * n) for n in range(1, 251)] * 4  # lengths 1 to 250 words, four of each
    np.random.default_rng(0).shuffle(sentences)
    encoder = as_encoder(minilm, backend="openvino-int8", batch_size=64)
    batches = encoder._calibration(sentences, "en")
    assert [len(ids) for ids, _ in batches] == [64] * (CALIBRATION // 64) + [CALIBRATION % 64]
    words = [int(row.sum()) - 2 for _, mask in batches for row in mask]  # tokens less [CLS] and [SEP]
    assert min(words) == 1 and max(words) == 250 and len(set(words)) >= 240  # every length, near enough
    few = encoder._calibration(["Amen.", "Jesus wept."], "en")
    assert [len(ids) for ids, _ in few] == [2]


def test_encode_and_mine_run_on_onnx_with_the_pytorch_results(tmp_path, verses, capsys):
    model = resolve_reference(MINILM)
    source, target = tmp_path / "en.txt", tmp_path / "fr.txt"
    source.write_text("\n".join(verses["en"][:60]) + "\n", encoding="utf-8")
    target.write_text("\n".join(verses["fr"][:60]) + "\n", encoding="utf-8")
    outputs = {}
    for backend in ("torch", "onnx"):
        vectors = tmp_path / f"{backend}.npy"
        assert (
            main(["encode", "--model", model, "--input", str(target), "--output", str(vectors), "--backend", backend])
            == 0
        )
        pairs = tmp_path / f"{backend}.tsv"
        assert (
            main(
                [
                    "mine",
                    "--model",
                    model,
                    "--source",
                    str(source),
                    "--target",
                    str(target),
                    "--output",
                    str(pairs),
                    "--all-pairs",
                    "--backend",
                    backend,
                ]
            )
            == 0
        )
        outputs[backend] = np.load(vectors), [line.split("\t") for line in pairs.read_text().splitlines()]
    np.testing.assert_allclose(outputs["onnx"][0], outputs["torch"][0], atol=1e-5)
    torch_pairs, onnx_pairs = outputs["torch"][1], outputs["onnx"][1]
    assert len(torch_pairs) == len(onnx_pairs) > 40
    assert [row[1:] for row in onnx_pairs] == [row[1:] for row in torch_pairs]  # the same pairs, in the same order
    np.testing.assert_allclose([float(r[0]) for r in onnx_pairs], [float(r[0]) for r in torch_pairs], atol=2e-4)


def test_an_unknown_backend_is_refused_in_one_line(tmp_path, minilm, capsys):
    with pytest.raises(
        ValueError, match="backend 'tensorrt': not one of torch, bf16, onnx, onnx-int8, openvino, openvino-int8"
    ):
        as_encoder(minilm, backend="tensorrt")
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "encode",
                "--model",
                resolve_reference(MINILM),
                "--input",
                "x.txt",
                "--output",
                "x.npy",
                "--backend",
                "tensorrt",
            ]
        )
    assert exit_info.value.code == 2 and "invalid choice: 'tensorrt'" in capsys.readouterr().err


def saved_model(kind: str, folder, tokenizer) -> str:
    """A model folder of each kind a user can point ``--backend bf16`` at: a sentence-transformers folder, and a
    saved model of each hf_xlsr type (tiny, random weights, MiniLM's tokenizer)."""
    from conftest import tiny_dual_momentum, tiny_encoder_config

    from hf_xlsr import CmlmConfig, CmlmModel, HictlConfig, HictlForPreTraining, LightweightDualTransformer

    if kind == "sentence-transformers":
        return resolve_reference(MINILM)
    torch.manual_seed(0)
    encoder, languages = tiny_encoder_config(), ["en", "fr"]
    model = {
        "dual_momentum": lambda: tiny_dual_momentum(),
        "dual_momentum_per_language": lambda: tiny_dual_momentum(encoder_y=tiny_encoder_config()),
        "cmlm": lambda: CmlmModel(CmlmConfig(encoder=encoder, num_projections=2, languages=languages)),
        "hictl": lambda: HictlForPreTraining(HictlConfig(encoder=encoder, languages=languages)),
        "lightweight": lambda: LightweightDualTransformer.from_tokenizer(
            tokenizer, hidden_size=32, intermediate_size=64, num_attention_heads=2, languages=languages
        ),
    }[kind]()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


KINDS = ["sentence-transformers", "dual_momentum", "dual_momentum_per_language", "cmlm", "hictl", "lightweight"]


@pytest.mark.parametrize("kind", KINDS)
def test_bf16_loads_every_kind_of_model_in_bfloat16_and_encodes_as_float32_does(kind, tmp_path, tokenizer, verses):
    """``--backend bf16`` loads the weights in bfloat16 (as sentence-transformers' ``model_kwargs={"dtype": ...}``
    does), so autocast keeps no bfloat16 copy beside float32 weights; the vectors stay those of float32 within
    bfloat16's precision."""
    folder = saved_model(kind, tmp_path / kind, tokenizer)
    model, tokenizers = load_for_evaluation(folder, "bf16")
    floats = {p.dtype for p in model.parameters() if p.is_floating_point()}
    assert floats == {torch.bfloat16}
    sentences = verses["fr"][:40]
    vectors = as_encoder(model, tokenizers, backend="bf16", batch_size=16)(sentences, "fr")
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = as_encoder(*load_for_evaluation(folder), batch_size=16)(sentences, "fr")  # float32, as saved
    assert float(np.mean(np.sum(vectors * expected, axis=1))) >= 0.99
    assert {p.dtype for p in load_for_evaluation(folder)[0].parameters()} == {torch.float32}


def test_the_encode_command_loads_bfloat16_weights_for_bf16(tmp_path, verses, monkeypatch):
    from hf_xlsr.evaluation import loading

    loaded = []
    load = loading.load_for_evaluation
    monkeypatch.setattr(loading, "load_for_evaluation", lambda *args: loaded.append(load(*args)) or loaded[-1])
    target = tmp_path / "fr.txt"
    target.write_text("\n".join(verses["fr"][:30]) + "\n", encoding="utf-8")
    outputs = {}
    for backend in ("torch", "bf16"):
        outputs[backend] = tmp_path / f"{backend}.npy"
        assert (
            main(
                [
                    "encode",
                    "--model",
                    resolve_reference(MINILM),
                    "--input",
                    str(target),
                    "--output",
                    str(outputs[backend]),
                    "--backend",
                    backend,
                ]
            )
            == 0
        )
    assert [next(model.parameters()).dtype for model, _ in loaded] == [torch.float32, torch.bfloat16]
    difference = np.abs(np.load(outputs["bf16"]) - np.load(outputs["torch"])).max()
    assert TOLERANCE["onnx"] < difference <= 2 * TOLERANCE["bf16"], difference
