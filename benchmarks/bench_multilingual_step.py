"""The cost of a training step on many languages against a bilingual step of the same batch.

One ``DualMomentumModel`` (one encoder, MiniLM-L6, a 4,096-key queue) trains on two streams of batches of 16 pairs,
alternating step by step so that the machine's noise falls on both alike: en-fr pairs, and all 21 English-centric
Bible pairs mixed (``LanguagePairSampler``, meaning ids, the 22 languages' texts). Each step is the whole of it: the
sampler's draw, the collator's tokenisation, forward, backward, AdamW and the EMA update. Sentences are cut at
``--max-length`` tokens: Bible verses fill 32 tokens in every language, so both streams compute on batches of one
shape and the ratio measures what many languages add, not what longer sentences cost.

    HF_HUB_OFFLINE=1 python benchmarks/bench_multilingual_step.py --threads 1 \\
        --out benchmarks/results/multilingual_step.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
from common import ENCODERS, machine

LANGUAGES = "en fr de es it pt ru uk pl ro tr ar fa hi bn id vi tl sw ja ko zh".split()


def stream(languages, tokenizer, args):
    """An endless iterator of collated batches of the English-centric pairs of ``languages``."""
    from torch.utils.data import DataLoader

    from hf_xlsr.data.multilingual import LanguagePairSampler, load_pair_datasets, resolve_language_pairs, stack_pairs
    from hf_xlsr.trainers import BitextCollator

    rows = stack_pairs(load_pair_datasets("bible", resolve_language_pairs(languages), "train"))
    sampler = LanguagePairSampler(rows["pair"], args.batch_size, alpha=0.5, batches="mixed", seed=0)
    collator = BitextCollator(tokenizer, max_length=args.max_length)
    loader = DataLoader(rows, batch_size=args.batch_size, sampler=sampler, collate_fn=collator, drop_last=True)
    while True:
        yield from loader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per stream")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from transformers import AutoTokenizer

    from hf_xlsr import DualMomentumModel
    from hf_xlsr.data import resolve_reference

    path = resolve_reference(ENCODERS["minilm"])
    tokenizer = AutoTokenizer.from_pretrained(path)
    torch.manual_seed(0)
    model = DualMomentumModel.from_encoders(
        path, shared_encoder=True, languages=LANGUAGES, queue_size=4096, momentum=0.99
    )
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    streams = {"bilingual (en-fr)": stream(["en", "fr"], tokenizer, args),
               "22 languages": stream(LANGUAGES, tokenizer, args)}  # fmt: skip
    seconds: dict[str, list[float]] = {name: [] for name in streams}
    shapes: dict[str, set] = {name: set() for name in streams}
    for step in range(args.steps + 2):  # the first two steps of each stream warm up
        for name, batches in streams.items():
            start = time.perf_counter()
            batch = next(batches)
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            model.momentum_update()
            if step >= 2:
                seconds[name].append(time.perf_counter() - start)
                shapes[name].add(tuple(batch["source_input_ids"].shape) + tuple(batch["target_input_ids"].shape))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    baseline = medians["bilingual (en-fr)"]
    rows = {
        name: {"seconds_per_step": m, "ratio_to_bilingual": m / baseline, "batch_shapes": sorted(shapes[name])}
        for name, m in medians.items()
    }
    for name, row in rows.items():
        print(f"{name:<20}{row['seconds_per_step']:8.3f} s / step{row['ratio_to_bilingual']:7.3f} x bilingual")
    with open(args.out, "w") as handle:
        json.dump(
            {
                "machine": machine(),
                "date": time.strftime("%Y-%m-%d"),
                "command": " ".join(sys.argv),
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "steps": args.steps,
                "rows": rows,
            },
            handle,
            indent=2,
        )


if __name__ == "__main__":
    main()
