"""The pair of arms trained from scratch in `multilingual_grid.py`, the claim of the lightweight dual transformer's
paper (Mao et al., 2021): ``lightweight`` (`LightweightDualTransformer`, UGT + L_align + L_sim, through
``hf-xlsr train``) against ``lightweight_mnrl``, the same untrained 2-layer model (width 512, the paper's size)
trained by sentence-transformers' MultipleNegativesRankingLoss at the same batch. Both read one Unigram vocabulary of
`VOCAB_SIZE` pieces, learned once from the run's training pairs (each sentence once) as ``hf-xlsr train`` learns one
when it is given none, and saved beside the models. Their steps are far cheaper than a pretrained encoder's, so they
run at their own budget (``--steps``, ``--batch-size``) and rates (`RATES`, around the paper's 1e-3), into a
results file of their own:

    HF_HUB_OFFLINE=1 python benchmarks/multilingual_grid.py --threads 1 --grid lightweight lightweight_mnrl \\
        --steps 1000 --batch-size 128 --checkpoint-steps 100 --models runs/multilingual_grid \\
        --out benchmarks/results/multilingual_scratch.json
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

ARMS = ("lightweight", "lightweight_mnrl")
RATES = (2.5e-4, 5e-4, 1e-3, 2e-3)  # the paper's Adam rate, 1e-3 (its Section 4.1), inside
VOCAB_SIZE = 50000  # the paper's


def vocabulary(args, pairs: Callable) -> str:
    """The folder of the arms' shared tokenizer (``{models}/tokenizer_{languages}_{size}``), learned on the first
    call from each sentence of the training pairs (``pairs()``: rows ``source``, ``target``) once; a second process
    waits for the first one's."""
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
    from hf_xlsr.utils import atomic_directory

    folder = Path(args.models) / f"tokenizer_{len(args.languages)}_languages_{VOCAB_SIZE}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "tokenizer.json").is_file():
            rows = pairs()
            texts = dict.fromkeys(text for column in ("source", "target") for text in rows[column] if text)
            with atomic_directory(folder) as staging:
                train_unigram_tokenizer(texts, VOCAB_SIZE).save_pretrained(staging)
    return str(folder)


def untrained_model(args, seed: int, tokenizer: str):
    """``lightweight_mnrl``'s start: an untrained `LightweightDualTransformer` at ``seed`` over ``tokenizer`` (a
    folder, `vocabulary`), as the sentence-transformers model its export is (its encoder, mean pooling,
    normalisation)."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.export import export_sentence_transformers

    tokenizer = AutoTokenizer.from_pretrained(tokenizer)
    torch.manual_seed(seed)
    model = LightweightDualTransformer.from_tokenizer(tokenizer, languages=list(args.languages))
    with tempfile.TemporaryDirectory() as folder:
        export_sentence_transformers(model, tokenizer, f"{folder}/start", max_seq_length=args.max_length)
        return SentenceTransformer(f"{folder}/start", device="cpu")
