"""What the evaluators and the export need from every hf_xlsr model, whatever its paper."""

from __future__ import annotations


class SentenceEncoderMixin:
    """Two language sides, ``x`` and ``y``, named by ``config.language_x`` / ``config.language_y``.

    A model provides ``query_encoder(side)`` (the transformer kept after training),
    ``get_sentence_embeddings(input_ids, attention_mask, token_type_ids, language)`` and
    ``sentence_embedding_dimension``; ``hf_xlsr.export`` and ``hf_xlsr.evaluation`` rely on nothing else.
    """

    def language_side(self, language: str) -> str:
        """'x' or 'y' for a side name or a language code of the config."""
        if language in ("x", "y"):
            return language
        if language == self.config.language_x:
            return "x"
        if language == self.config.language_y:
            return "y"
        raise ValueError(
            f"unknown language {language!r}: use 'x', 'y', {self.config.language_x!r} or {self.config.language_y!r}"
        )
