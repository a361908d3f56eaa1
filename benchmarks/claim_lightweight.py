"""The lightweight dual transformer's claims (Mao et al., Tables 5, 6 and 7), from scratch, with the official
recipe's optimiser and schedule, at a budget where the full model passes 60% held-out en-fr retrieval.

Every arm trains the same architecture (2 layers; ``--width``, with the feed-forward twice as wide) over the same
Unigram vocabulary learned from the training verses, on the same data in the same order, with the official code's
optimiser (Adam with amsgrad, lr 1e-3, L2 1e-5) and schedule (linear warm-up, then the learning rate times 0.1
from a quarter of the run, as the official ``MultiStepLR`` does at epoch 3 of 12). Arms differ in their losses:

* Table 6, generative task alone: ``mlm``, ``smlm``, ``xtr``, ``mlm_xtr``, ``ugt``;
* Table 7: ``ugt+align`` and ``ugt+align+sim`` (the full model; ``ugt`` is shared with Table 6).

``--sim-weight W`` changes only L_sim's weight in Eq. 7 (the paper's is 2), to ask whether its scale is what costs.

Scores on held-out books: retrieval accuracy both ways on 1,000 en-fr pairs, and the zero-shot probe (book genre,
a logistic regression on standardised vectors trained on 3,000 English verses, tested on 1,000 French ones).
Table 5 (time and memory by depth) is ``--layers-table``: seconds per step and peak memory for 1-6 layers.
``--softmax-diagonal DIR`` reads a saved model (``--save-dir``) and prints, for held-out batches, the diagonal mass of
each language's in-batch softmax of raw inner products (the matrices L_sim compares): 1 where L_sim's minimum is the
trivial one, every sentence most similar to itself by far.

    HF_HUB_OFFLINE=1 python benchmarks/claim_lightweight.py --out benchmarks/results/claim_lightweight.json
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from common import Results, machine

ARMS = {
    "mlm": {"generative_task": "mlm", "use_align": False, "use_sim": False},
    "smlm": {"generative_task": "smlm", "use_align": False, "use_sim": False},
    "xtr": {"generative_task": "xtr", "use_align": False, "use_sim": False},
    "mlm_xtr": {"generative_task": "mlm_xtr", "use_align": False, "use_sim": False},
    "ugt": {"generative_task": "ugt", "use_align": False, "use_sim": False},
    "ugt+align": {"generative_task": "ugt", "use_align": True, "use_sim": False},
    "ugt+align+sim": {"generative_task": "ugt", "use_align": True, "use_sim": True},
}


def official_optimiser(model, steps: int):
    """The official code's Adam (amsgrad, lr 1e-3, L2 weight decay 1e-5), warm-up, then x 0.1 at a quarter."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5, amsgrad=True)
    warmup, drop = max(1, steps // 12), steps // 4

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * (0.1 if step >= drop else 1.0)

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_arm(fields: dict, tokenizer, train, args, seed: int):
    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.trainers import PairMaskingCollator, XlsrTrainer, XlsrTrainingArguments

    torch.manual_seed(seed)
    model = LightweightDualTransformer.from_tokenizer(
        tokenizer, languages=["en", "fr"], hidden_size=args.width, intermediate_size=2 * args.width,
        num_attention_heads=8 if args.width >= 256 else 4, **fields,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as output_dir:
        training_args = XlsrTrainingArguments(
            output_dir=output_dir, per_device_train_batch_size=args.batch_size, max_steps=args.steps,
            max_grad_norm=0.0, seed=seed, save_strategy="no", report_to="none", disable_tqdm=True,
            logging_steps=50, use_cpu=not torch.cuda.is_available(),
        )  # fmt: skip
        collator = PairMaskingCollator(tokenizer, ["en", "fr"], args.max_length, task=fields["generative_task"])
        trainer = XlsrTrainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                              tokenizers=tokenizer,
                              optimizers=official_optimiser(model, args.steps))  # fmt: skip
        trainer.train()
    return model


def layers_table(args) -> None:
    """Table 5: seconds per step and peak resident memory for 1, 2, 3, 4 and 6 layers (each in this process, in
    increasing order, so the peak of a deeper model is never hidden by a shallower one's)."""
    import resource

    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.data import load_bible
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
    from hf_xlsr.trainers import PairMaskingCollator

    train = load_bible(["en", "fr"], split="train")
    tokenizer = train_unigram_tokenizer(list(train["en"]) + list(train["fr"]), args.vocab_size)
    batch = PairMaskingCollator(tokenizer, ["en", "fr"], args.max_length)([train[i] for i in range(args.batch_size)])
    print(f"{'layers':>6}{'s / step':>10}{'peak RSS MB':>13}{'parameters':>12}")
    for layers in (1, 2, 3, 4, 6):
        model = LightweightDualTransformer.from_tokenizer(tokenizer, num_hidden_layers=layers, hidden_size=512,
                                                          intermediate_size=1024)  # fmt: skip
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True)
        times = []
        for _ in range(4):
            start = time.perf_counter()
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            times.append(time.perf_counter() - start)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{layers:>6}{sorted(times)[1]:>10.2f}{peak:>13.0f}{sum(p.numel() for p in model.parameters()):>12,}")


def softmax_diagonal(args) -> None:
    """Mean diagonal of ``softmax(U U^T)`` and ``softmax(V V^T)`` over three held-out batches of ``--batch-size``
    verse pairs, with U, V the raw mean-pooled vectors that Eq. 6 uses, and the self and other inner products."""
    from hf_xlsr import LightweightDualTransformer
    from hf_xlsr.data import load_bible
    from hf_xlsr.tokenization import load_tokenizers

    model = LightweightDualTransformer.from_pretrained(args.softmax_diagonal).eval()
    tokenizer = next(iter(load_tokenizers(args.softmax_diagonal).values()))
    heldout = load_bible(["en", "fr"], split="heldout").shuffle(seed=0)
    for batch in range(3):
        rows = heldout.select(range(batch * args.batch_size, (batch + 1) * args.batch_size))
        line = f"held-out batch {batch} of {args.batch_size}:"
        for language in ("en", "fr"):
            encoded = tokenizer(list(rows[language]), padding=True, truncation=True, max_length=args.max_length,
                                return_tensors="pt")  # fmt: skip
            with torch.no_grad():  # the model's own encoding, as its forward computes Eq. 6's inputs
                vectors = model._encode(encoded["input_ids"], encoded["attention_mask"])[1].double()
            products = vectors @ vectors.T
            other = products[~torch.eye(len(products), dtype=torch.bool)]
            diagonal = torch.softmax(products, dim=-1).diagonal().mean()
            line += (f"  {language}: softmax diagonal {diagonal:.4f}, self {products.diagonal().mean():.1f}, "
                     f"other mean {other.mean():.1f} max {other.max():.1f}")  # fmt: skip
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--sim-weight",
        type=float,
        help="L_sim's weight in Eq. 7 for the arms that use it (default: the paper's 2); the arm is recorded as "
        "'ARM@sim_weight=W'",
    )
    parser.add_argument("--layers-table", action="store_true")
    parser.add_argument("--softmax-diagonal", metavar="DIR", help="a model saved by --save-dir; see above")
    parser.add_argument(
        "--save-dir",
        default="runs/claim_lightweight_full",
        help="where the full model (ugt+align+sim) of the first seed is saved, with its tokenizer",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.layers_table:
        layers_table(args)
        return
    if args.softmax_diagonal:
        softmax_diagonal(args)
        return

    from hf_xlsr.data import load_bible
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer
    from hf_xlsr.evaluation import LinearProbeEvaluator, RetrievalEvaluator
    from hf_xlsr.tokenization import save_tokenizers

    train, heldout = load_bible(["en", "fr"], split="train"), load_bible(["en", "fr"], split="heldout")
    tokenizer = train_unigram_tokenizer(list(train["en"]) + list(train["fr"]), args.vocab_size)
    tokenizers = tokenizer
    retrieval = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=0)
    probe = LinearProbeEvaluator.from_bible("en", ["en", "fr"], max_train=3000, max_test=1000, seed=0)
    setup = {"script": "benchmarks/claim_lightweight.py", "width": args.width, "steps": args.steps,
             "batch_size": args.batch_size, "vocab_size": args.vocab_size,
             "epochs": args.steps * args.batch_size / len(train), "machine": machine()}  # fmt: skip
    results = Results(args.out, setup)
    for seed in args.seeds:
        for arm in args.arms:
            fields = dict(ARMS[arm])
            if args.sim_weight is not None and fields["use_sim"]:
                fields["sim_weight"] = args.sim_weight
                arm = f"{arm}@sim_weight={args.sim_weight:g}"
            if results.done(arm, seed):
                continue
            start = time.time()
            model = train_arm(fields, tokenizer, train, args, seed)
            seconds = time.time() - start
            found = retrieval(model, tokenizers=tokenizers)
            genre = probe(model, tokenizers=tokenizers)
            run = {"arm": arm, "seed": seed, "train_seconds": round(seconds),
                   "bible_en2fr": found["retrieval_en2fr_accuracy"], "bible_fr2en": found["retrieval_fr2en_accuracy"],
                   "bible": found["retrieval_accuracy"], "probe_en2en": genre["probe_en2en_accuracy"],
                   "probe_en2fr": genre["probe_en2fr_accuracy"]}  # fmt: skip
            results.add(run)
            print(run, flush=True)
            if arm == "ugt+align+sim" and seed == args.seeds[0] and args.save_dir:
                model.save_pretrained(args.save_dir)
                save_tokenizers(tokenizer, args.save_dir)


if __name__ == "__main__":
    main()
