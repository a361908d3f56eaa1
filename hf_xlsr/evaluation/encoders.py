"""One interface for every model an evaluator can score: ``encoder(sentences, language) -> float32 array``.

:func:`as_encoder` turns an hf_xlsr model (with its tokenizers), a ``SentenceTransformer`` (an hf_xlsr export of a
dual encoder routes by language: ``encode(texts, task=language)``), a mapping from language code to
``SentenceTransformer``, or a callable into such an encoder. Returned vectors are L2-normalised rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Router
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

Encoder = Callable[[Sequence[str], str], np.ndarray]


PRECISIONS = ("auto", "float32", "bfloat16")


class ModelEncoder:
    """Encode with an hf_xlsr model's ``get_sentence_embeddings``: sentences sorted by length so that each batch pads
    little, no autograd, and with ``precision="auto"`` bfloat16 autocast on a GPU that has it (float32 elsewhere,
    where the vectors equal ``SentenceTransformer.encode``'s)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizers: Mapping[str, PreTrainedTokenizerBase],
        batch_size: int = 64,
        max_length: int = 128,
        show_progress: bool = False,
        precision: str = "auto",
    ):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.model, self.tokenizers, self.batch_size, self.max_length = model, tokenizers, batch_size, max_length
        self.show_progress, self.precision = show_progress, precision

    def _autocast(self, device: torch.device):
        bfloat16 = self.precision == "bfloat16" or (
            self.precision == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported()
        )
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bfloat16)

    @torch.inference_mode()
    def __call__(self, sentences: Sequence[str], language: str) -> np.ndarray:
        model = self.model
        side = model.language_side(language)
        tokenizer = self.tokenizers[side]
        max_length = min(self.max_length, model.max_tokens(side) or self.max_length)  # what the positions take
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        order = np.argsort([-len(s) for s in sentences], kind="stable")
        vectors = np.empty((len(sentences), model.sentence_embedding_dimension), dtype=np.float32)
        starts = range(0, len(sentences), self.batch_size)
        for start in tqdm(starts, desc=f"encoding {language}", disable=not self.show_progress, unit="batch"):
            rows = order[start : start + self.batch_size]
            inputs = tokenizer(
                [sentences[i] for i in rows],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            ).to(device)
            with self._autocast(device):
                embeddings = model.get_sentence_embeddings(
                    inputs["input_ids"], inputs["attention_mask"], inputs.get("token_type_ids"), language=side
                )
            vectors[rows] = embeddings.float().cpu().numpy()
        model.train(was_training)
        return vectors


class Evaluator:
    """Base of the evaluators: ``evaluator(model, tokenizers=None) -> {metric: value}``.

    ``model`` is anything :func:`as_encoder` takes; subclasses implement :meth:`evaluate` on the encoder and
    prefix their metric names with ``self.name``.
    """

    name: str = ""

    def __call__(
        self, model: object, tokenizers=None, batch_size: int = 64, max_length: int = 128
    ) -> dict[str, float]:
        return self.evaluate(as_encoder(model, tokenizers, batch_size, max_length))

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        raise NotImplementedError

    def prefixed(self, metrics: dict[str, float]) -> dict[str, float]:
        prefix = f"{self.name}_" if self.name else ""
        return {f"{prefix}{key}": value for key, value in metrics.items()}


def language_routes(model: SentenceTransformer) -> list[str]:
    """The routes of a ``SentenceTransformer`` whose first module is a ``Router`` (an hf_xlsr dual-encoder export
    routes by language code); [] for a plain one."""
    first = model[0] if len(model) else None
    return list(first.sub_modules) if isinstance(first, Router) else []


def as_encoder(
    model: object,
    tokenizers: Mapping[str, PreTrainedTokenizerBase] | None = None,
    batch_size: int = 64,
    max_length: int = 128,
    show_progress: bool = False,
    precision: str = "auto",
) -> Encoder:
    """Wrap ``model`` as an :data:`Encoder` (see the module docstring for what ``model`` may be); ``precision``
    applies to hf_xlsr models (:class:`ModelEncoder`)."""
    if isinstance(model, SentenceTransformer):
        routed = language_routes(model)

        def encode(sentences: Sequence[str], language: str) -> np.ndarray:
            if routed and language not in routed:
                raise KeyError(f"the model routes languages {routed}, not {language!r}")
            return model.encode(
                list(sentences), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=show_progress, **({"task": language} if routed else {}),
            ).astype(np.float32)  # fmt: skip

        return encode
    if isinstance(model, Mapping):
        encoders = {
            language: as_encoder(m, tokenizers, batch_size, max_length, show_progress) for language, m in model.items()
        }

        def by_language(sentences: Sequence[str], language: str) -> np.ndarray:
            if language not in encoders:
                raise KeyError(f"no model for language {language!r} (have {sorted(encoders)})")
            return encoders[language](sentences, language)

        return by_language
    if hasattr(model, "get_sentence_embeddings"):
        if tokenizers is None:
            raise ValueError(
                "an hf_xlsr model needs its tokenizers to encode text: pass tokenizers={'x': ..., 'y': ...}"
            )
        return ModelEncoder(model, tokenizers, batch_size, max_length, show_progress, precision)
    if callable(model):
        return model
    raise TypeError(f"cannot encode text with a {type(model).__name__}")
