"""CMLM's claims (Yang et al., Sections 2, 4.2 and 5.2) in miniature: from one random tiny BERT.

Part A, conditional MLM against MLM (3 seeds): the same tiny BERT (4 layers, width 128), the same Unigram vocabulary
learned from the training verses, the same batches of adjacent Bible verses (en and fr rows), the same masked
tokens of the second verse and the same steps; ``cmlm`` also reads the first verse and prepends its projected vector
(N = 15), ``mlm`` does not. Scored on mean-pooled vectors: the zero-shot book-genre probe (trained on English
verses, tested on English and French ones) and adjacent-verse retrieval (given a held-out verse, find the next one
among 1,000); and, for ``cmlm``, its loss on held-out pairs with the true first verse against a first verse from
another row (direct evidence that the prefix is used).

Part B, the schedules (each seed): CMLM for ``--stage-one`` steps (the loss curve is recorded, to show whether
it reached its plateau), then the second stage for ``--stage-two`` steps, labelled by what they do: ``cmlm+br``
(both from the start), ``cmlm->br`` and ``cmlm->cmlm+br``; bitext retrieval on the rows' en-fr translations. The
control ``br`` trains BR alone from the random start for ``--stage-two`` steps (what the CMLM stage adds).
With ``--per-stage-lr`` the two-stage arms of a seed share one CMLM stage (its own warm-up and linear decay over
``--stage-one`` steps) and each second stage is a new run with its own warm-up and decay over ``--stage-two``.
Scored by held-out en-fr retrieval and, for principal-component removal (Section 5.2), by the language-bias
measure: in a pool of held-out en and fr verses, the share of each query's nearest neighbour that is in its own
language, before and after removing each language's first principal component.

    HF_HUB_OFFLINE=1 python benchmarks/claim_cmlm.py --out benchmarks/results/claim_cmlm.json
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time

import numpy as np
import torch
from common import Results, machine
from transformers.modeling_outputs import MaskedLMOutput

SCHEDULES = ["cmlm+br", "cmlm->br", "cmlm->cmlm+br"]
CONTROLS = ["br"]  # BR alone from the random start for --stage-two steps: the second stage without the CMLM stage


class MaskedLanguageModelling(torch.nn.Module):
    """The ``mlm`` arm: the CMLM model's masked LM on the same masked second verses, without the first verse."""

    def __init__(self, cmlm):
        super().__init__()
        self.cmlm = cmlm

    def forward(self, second_input_ids, second_attention_mask, second_labels, **unused) -> MaskedLMOutput:
        from hf_xlsr.modeling.common import masked_lm_head
        from hf_xlsr.modeling.functional import masked_token_loss

        states = self.cmlm.encoder(input_ids=second_input_ids, attention_mask=second_attention_mask).last_hidden_state
        return MaskedLMOutput(loss=masked_token_loss(states, second_labels, masked_lm_head(self.cmlm.masked_lm))[0])


def tiny_cmlm(tokenizer, seed: int, **fields):
    from hf_xlsr import CmlmConfig, CmlmModel

    torch.manual_seed(seed)
    encoder = {"model_type": "bert", "vocab_size": len(tokenizer), "hidden_size": 128, "num_hidden_layers": 4,
               "num_attention_heads": 4, "intermediate_size": 512, "max_position_embeddings": 160,
               "pad_token_id": tokenizer.pad_token_id}  # fmt: skip
    return CmlmModel(CmlmConfig(encoder=encoder, languages=["en", "fr"], **fields))


def train(model, tokenizer, rows, steps: int, args, seed: int, second_stage_step: int | None = None) -> list[dict]:
    from hf_xlsr.trainers import CmlmCollator, XlsrTrainer, XlsrTrainingArguments

    collator = CmlmCollator(tokenizer, ["en", "fr"], max_length=args.max_length)
    if second_stage_step is not None:
        model.config.second_stage_step = second_stage_step
    with tempfile.TemporaryDirectory() as output_dir:
        arguments = XlsrTrainingArguments(
            output_dir=output_dir, per_device_train_batch_size=args.batch_size, max_steps=steps, learning_rate=5e-4,
            warmup_steps=steps // 20, lr_scheduler_type="linear", weight_decay=0.01, seed=seed, logging_steps=50,
            save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=not torch.cuda.is_available(),
        )  # fmt: skip
        trainer = XlsrTrainer(model=model, args=arguments, train_dataset=rows, data_collator=collator,
                              tokenizers=tokenizer)  # fmt: skip
        trainer.train()
    return [{k: v for k, v in e.items() if k in ("step", "loss", "loss_cmlm", "loss_br")}
            for e in trainer.state.log_history if "loss" in e]  # fmt: skip


@torch.no_grad()
def prefix_evidence(model, tokenizer, heldout, args) -> dict:
    """Mean CMLM loss on held-out adjacent pairs, with the true first verse and with the next row's, over 4
    maskings."""
    from hf_xlsr.trainers import CmlmCollator

    collate = CmlmCollator(tokenizer, ["en", "fr"], max_length=args.max_length, swap_probability=0.0)
    model.eval()
    true, shuffled = [], []
    rows = [heldout[i] for i in range(512)]
    for seed in range(4):
        for start in range(0, len(rows), 64):
            torch.manual_seed(seed * 1000 + start)
            batch = {k: v for k, v in collate(rows[start : start + 64]).items() if not k.startswith(("x_", "y_"))}
            shift = torch.roll(torch.arange(len(batch["first_input_ids"])), 1)
            other = {**batch, "first_input_ids": batch["first_input_ids"][shift],
                     "first_attention_mask": batch["first_attention_mask"][shift]}  # fmt: skip
            true.append(model(**batch).loss_cmlm.item())
            shuffled.append(model(**other).loss_cmlm.item())
    return {"cmlm_loss_true_first": float(np.mean(true)), "cmlm_loss_shuffled_first": float(np.mean(shuffled))}


def scores(model, tokenizer, heldout_adjacent, args) -> dict:
    from hf_xlsr.evaluation import LinearProbeEvaluator, RetrievalEvaluator, as_encoder

    tokenizers = tokenizer
    probe = LinearProbeEvaluator.from_bible("en", ["en", "fr"], max_train=3000, max_test=1000, seed=0)
    probe = probe(model, tokenizers=tokenizers)
    english = heldout_adjacent.filter(lambda row: row["language"] == "en")
    adjacent = RetrievalEvaluator.from_dataset(english, ["first", "second"], max_pairs=1000, seed=0, name="adjacent")
    encode = as_encoder(model, tokenizers)
    found = adjacent(lambda texts, _: encode(texts, "x"))  # both columns are English verses
    return {"probe_en2en": probe["probe_en2en_accuracy"], "probe_en2fr": probe["probe_en2fr_accuracy"],
            "adjacent_retrieval": found["adjacent_accuracy"]}  # fmt: skip


def part_a(args, tokenizer, rows, heldout_adjacent, results) -> None:
    for seed in args.seeds:
        for arm in ("mlm", "cmlm"):
            if results.done(arm, seed):
                continue
            model = tiny_cmlm(tokenizer, seed, schedule="cmlm", num_projections=15)
            start = time.time()
            curve = train(MaskedLanguageModelling(model) if arm == "mlm" else model, tokenizer, rows, args.steps,
                          args, seed)  # fmt: skip
            run = {"arm": arm, "seed": seed, "train_seconds": round(time.time() - start), "loss_curve": curve,
                   **scores(model, tokenizer, heldout_adjacent, args)}  # fmt: skip
            if arm == "cmlm":
                run.update(prefix_evidence(model, tokenizer, heldout_adjacent, args))
            results.add(run)
            print({k: v for k, v in run.items() if k != "loss_curve"}, flush=True)


def part_b(args, tokenizer, rows, heldout_adjacent, results) -> None:
    from hf_xlsr.data import load_bible
    from hf_xlsr.evaluation import RetrievalEvaluator
    from hf_xlsr.evaluation.analysis import language_bias
    from hf_xlsr.evaluation.pcr import fit_language_components

    heldout = load_bible(["en", "fr"], split="heldout")
    retrieval = RetrievalEvaluator.from_dataset(heldout, ["en", "fr"], max_pairs=1000, seed=0)
    pool = heldout.shuffle(seed=0).select(range(500))
    train_sample = load_bible(["en", "fr"], split="train").shuffle(seed=0).select(range(5000))
    tokenizers = tokenizer
    for seed in args.seeds:
        stage_one = None  # with --per-stage-lr, the two-stage arms of a seed share one CMLM stage
        for schedule in args.schedules:
            shares_stage_one = args.per_stage_lr and "->" in schedule
            arm = f"schedule {schedule}"
            if schedule == "br":
                arm += f" {args.stage_two}"
            elif shares_stage_one:
                arm += f" per-stage lr {args.stage_one}+{args.stage_two}"
            if results.done(arm, seed):
                continue
            start = time.time()
            if shares_stage_one:
                if stage_one is None:
                    stage_one = tiny_cmlm(tokenizer, seed, schedule="cmlm", num_projections=15, pcr_components=1)
                    stage_one_curve = train(stage_one, tokenizer, rows, args.stage_one, args, seed)
                model = copy.deepcopy(stage_one)
                model.config.schedule = schedule.split("->")[1]
                curve = stage_one_curve + [
                    {**e, "step": e["step"] + args.stage_one}
                    for e in train(model, tokenizer, rows, args.stage_two, args, seed + 100)
                ]
            else:
                model = tiny_cmlm(tokenizer, seed, schedule=schedule, num_projections=15, pcr_components=1)
                steps = args.stage_two if schedule == "br" else args.stage_one + args.stage_two
                curve = train(model, tokenizer, rows, steps, args, seed, args.stage_one)
            found = retrieval(model, tokenizers=tokenizers)
            sentences = {"en": list(pool["en"]), "fr": list(pool["fr"])}
            before = language_bias(model, sentences, k=1, tokenizers=tokenizers)
            fit_language_components(model, tokenizers, {"en": train_sample["en"], "fr": train_sample["fr"]})
            found_pcr = retrieval(model, tokenizers=tokenizers)
            after = language_bias(model, sentences, k=1, tokenizers=tokenizers)
            run = {"arm": arm, "seed": seed, "train_seconds": round(time.time() - start), "loss_curve": curve,
                   "bible_en2fr": found["retrieval_en2fr_accuracy"], "bible_fr2en": found["retrieval_fr2en_accuracy"],
                   "bible": found["retrieval_accuracy"], "bible_with_pcr": found_pcr["retrieval_accuracy"],
                   "own_language_top1_before_pcr": (before["en"]["en"] + before["fr"]["fr"]) / 2,
                   "own_language_top1_after_pcr": (after["en"]["en"] + after["fr"]["fr"]) / 2}  # fmt: skip
            results.add(run)
            print({k: v for k, v in run.items() if k != "loss_curve"}, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--stage-one", type=int, default=2000)
    parser.add_argument("--stage-two", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--parts", nargs="+", default=["a", "b"])
    parser.add_argument(
        "--schedules", nargs="+", default=SCHEDULES, choices=SCHEDULES + CONTROLS, help="part B's arms to run"
    )
    parser.add_argument(
        "--per-stage-lr",
        action="store_true",
        help="part B's two-stage arms: one CMLM stage per seed (its own warm-up and decay), then each "
        "second stage as a new run with its own warm-up and decay",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from hf_xlsr.data import load_bible, load_bible_adjacent
    from hf_xlsr.data.tokenizer_training import train_unigram_tokenizer

    train_verses = load_bible(["en", "fr"], split="train")
    tokenizer = train_unigram_tokenizer(list(train_verses["en"]) + list(train_verses["fr"]), args.vocab_size)
    rows = load_bible_adjacent(["en", "fr"], split="train")
    heldout_adjacent = load_bible_adjacent(["en", "fr"], split="heldout").shuffle(seed=0)
    setup = {"script": "benchmarks/claim_cmlm.py", "steps": args.steps, "stage_one": args.stage_one,
             "stage_two": args.stage_two, "batch_size": args.batch_size, "vocab_size": args.vocab_size,
             "machine": machine()}  # fmt: skip
    results = Results(args.out, setup)
    if "a" in args.parts:
        part_a(args, tokenizer, rows, heldout_adjacent, results)
    if "b" in args.parts:
        part_b(args, tokenizer, rows, heldout_adjacent, results)


if __name__ == "__main__":
    main()
