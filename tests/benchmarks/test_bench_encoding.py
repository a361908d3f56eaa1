"""``benchmarks/bench_encoding.py --peer-python``: sentence-transformers' arms that live in another environment,
asked for vectors by ``peer_encoder.py``'s protocol."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.slow  # a benchmark's harness, in a process of its own
def test_a_peer_process_answers_each_request_with_its_own_vectors(tmp_path, minilm_path, monkeypatch):
    """The OpenVINO arms need an environment this one cannot be; the protocol is checked here with a stand-in arm,
    a ``SentenceTransformer`` served by ``peer_encoder.serve`` in a process of its own that also prints lines of
    its own, against the same model encoding in this process."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from bench_encoding import PeerProcess
    from sentence_transformers import SentenceTransformer

    script = tmp_path / "stand_in.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(BENCHMARKS)!r})\n"
        "from peer_encoder import serve\nfrom sentence_transformers import SentenceTransformer\n"
        "print('a line of some library')\n"
        "serve({'stand-in': SentenceTransformer(sys.argv[1], device='cpu')})\n"
    )
    peer = PeerProcess(sys.executable, minilm_path, 1, ["calibration"], script=str(script))
    assert peer.arms == ["stand-in"]
    encode = peer.encoder("stand-in")
    reference = SentenceTransformer(minilm_path, device="cpu")
    for texts in (
        ["In the beginning God created the heaven and the earth.", "Jesus wept."],
        ["The Lord is my shepherd; I shall not want.", "Love is patient.", "Amen."],
    ):
        vectors = encode(texts, "en")
        expected = reference.encode(texts, normalize_embeddings=True)
        assert vectors.shape == expected.shape and np.abs(vectors - expected).max() < 1e-5
    peer.process.stdin.close()
    assert peer.process.wait(timeout=60) == 0
