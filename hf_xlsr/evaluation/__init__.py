"""Evaluation: retrieval (Tatoeba-style), and the encoder interface every evaluator shares."""

from .encoders import Encoder, ModelEncoder, as_encoder
from .retrieval import RetrievalEvaluator, nearest_neighbours, retrieval_accuracy

__all__ = ["Encoder", "ModelEncoder", "RetrievalEvaluator", "as_encoder", "nearest_neighbours", "retrieval_accuracy"]
