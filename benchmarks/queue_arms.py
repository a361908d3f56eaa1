"""The arms of ``bench_queue_vs_batch.py``: what each is (``ARMS``, its learning-rate rule: ``spec``), the pairs it
trains on, the held-out sets that score it, and the trainer that runs it (``build``), each from the same start.

``ARMS`` says what each arm is and ``LABELS`` names it: MNRL at batch B, CachedMNRL at 8B or 32B in mini-batches of
B, ``MomentumQueueLoss`` and ``DualMomentumModel`` (under ``XlsrTrainer``) at batch B with queues of 32B or 256B keys
at momentum 0.99, and the cached queue at 8B; `queue_grid` is a queue's step under the protocol (its K and momentum).

With ``--languages`` naming more than two languages (the Bible's 22: ``en fr de ... zh``) the pairs are
English-centric, the first language with each other one, stacked and drawn from all of them; every row carries its
verse as the id of its meaning, which ``MomentumQueueLoss`` gets as ``label`` and ``DualMomentumModel`` as
``example_id``, so no translation of a verse in any language is its negative, and sentence-transformers' arms draw
their batches with its ``NO_DUPLICATES`` sampler (the one it recommends for in-batch negatives), so no batch holds a
sentence twice. The figure is then each language against the first, both ways, averaged
(``retrieval_zero_shot_accuracy``, the pairs of two other languages, is kept beside it).

An arm name may end in ``_sqrtlr``: the learning rate times sqrt(batch / B), the usual rule for Adam at a larger
batch (``_klr``: times batch / B).
"""

from __future__ import annotations

import math

import torch
from protocol import ArmGrid, split_rows

BATCH = 8  # B
TEMPERATURE = 0.04
MOMENTUM = 0.99  # the queue's momentum at which its rates and temperatures run (MoCo-BERT's)
ARMS = {
    "mnrl_B": {"loss": "mnrl", "batch": 1},
    "cmnrl_8B": {"loss": "cmnrl", "batch": 8},
    "cmnrl_32B": {"loss": "cmnrl", "batch": 32},
    "mql_K32B": {"loss": "mql", "batch": 1, "queue": 32},
    "mql_K256B": {"loss": "mql", "batch": 1, "queue": 256},
    "cmql_8B_K256B": {"loss": "cmql", "batch": 8, "queue": 256},
    "dmm_K32B": {"loss": "dmm", "batch": 1, "queue": 32},
    "dmm_K256B": {"loss": "dmm", "batch": 1, "queue": 256},
}
LABELS = {
    "mnrl_B": "MNRL, batch B",
    "cmnrl_8B": "CachedMNRL, batch 8B",
    "cmnrl_32B": "CachedMNRL, batch 32B",
    "mql_K32B": "MomentumQueueLoss, K = 32B",
    "mql_K256B": "MomentumQueueLoss, K = 256B",
    "cmql_8B_K256B": "CachedMomentumQueueLoss, batch 8B, K = 256B",
    "dmm_K32B": "DualMomentumModel, K = 32B",
    "dmm_K256B": "DualMomentumModel, K = 256B",
}
HF_XLSR = ("mql", "cmql", "dmm")
# an arm's suffix: its rate x f(k) for a batch k times B
LEARNING_RATE_RULES = {"": lambda k: 1.0, "_sqrtlr": math.sqrt, "_klr": float}


def spec(arm: str) -> dict:
    """An arm's settings: its base arm's, and ``lr_factor``, the learning rate's multiple for a batch k times B
    (``LEARNING_RATE_RULES``: ``_sqrtlr`` sqrt(k), ``_klr`` k, no suffix 1), and ``rate``, how the report names
    it."""
    suffix = next((s for s in LEARNING_RATE_RULES if s and arm.endswith(s)), "")
    base = arm.removesuffix(suffix) if suffix else arm
    if base not in ARMS:
        raise SystemExit(
            f"unknown arm {arm!r}: one of {', '.join(ARMS)}, optionally followed by one of "
            f"{', '.join(filter(None, LEARNING_RATE_RULES))}"
        )
    k = ARMS[base]["batch"]
    factor = LEARNING_RATE_RULES[suffix](k)
    rate = {"": "", "_sqrtlr": f" (lr × √{k})", "_klr": f" (lr × {k})"}[suffix] if factor != 1 else ""
    return {**ARMS[base], "base": base, "rate": rate, "lr_factor": factor}


def queue_grid(arm: str) -> ArmGrid | None:
    """An arm's queue step under the protocol (`protocol.ArmGrid`): its rates and temperatures at its own queue (K =
    256B, momentum `MOMENTUM`), then K at a quarter, itself and four times it (64B, 256B, 1,024B: 16x), then the
    other momentum; None for an arm without a queue."""
    size = BATCH * spec(arm).get("queue", 0)
    return ArmGrid(queue=(size, MOMENTUM), queue_sizes=(size // 4, size, size * 4)) if size else None


class EncoderCounter:
    """Counts the sentences every encoder forward sees: with gradients (the trainable encoder) or without."""

    def __init__(self):
        self.trainable = self.extra = 0
        self.active = True
        self.handle = torch.nn.modules.module.register_module_forward_hook(self.hook)

    def hook(self, module, inputs, output):
        if not self.active or type(module).__name__ != "BertEmbeddings":
            return
        rows = len(output)  # (sentences, tokens, width)
        if torch.is_grad_enabled() and any(p.requires_grad for p in module.parameters()):
            self.trainable += rows
        else:
            self.extra += rows


def evaluators(languages: list[str], size: int = 1000, whole: bool = False) -> dict:
    """``bible``: the ``size`` held-out verses every figure of the report uses (in every language), or with
    ``whole`` every held-out verse but the tuning ones (a test that does not saturate: 4,801 en-fr pairs); ``tune``:
    the ``size`` verses after the first ``size`` of the same draw, on which a tuning choice is made."""
    from hf_xlsr.data import load_bible
    from hf_xlsr.data.bitext import unique_pairs
    from hf_xlsr.evaluation import RetrievalEvaluator

    heldout = unique_pairs(load_bible(languages, split="heldout"), languages).shuffle(seed=0)
    rows = split_rows(len(heldout), size, whole)
    return {
        name: RetrievalEvaluator({lang: heldout.select(rows[part])[lang] for lang in languages}, deduplicate=False)
        for name, part in (("bible", "test"), ("tune", "tune"))
    }


def accuracy(metrics: dict) -> float:
    """The reported figure: retrieval both ways between the two languages, or with more languages the mean over each
    language against the first (the pairs trained on; ``retrieval_zero_shot_accuracy`` holds the others)."""
    return metrics.get("retrieval_trained_accuracy", metrics["retrieval_accuracy"])


def training_pairs(languages: list[str], seed: int, pairs: int):
    """A seed's draw of ``pairs`` training pairs, each seen once. Two languages: rows of their two columns. More:
    English-centric pairs of the first language with each other one, stacked (``source``, ``target``, their
    languages and ``example_id``, the verse: one id per meaning, across languages), drawn from all of them."""
    from hf_xlsr.data import load_bible

    if len(languages) == 2:
        return load_bible(languages, split="train").shuffle(seed=seed).select(range(pairs))
    from hf_xlsr.data.multilingual import load_pair_datasets, resolve_language_pairs, stack_pairs

    stacked = stack_pairs(load_pair_datasets("bible", resolve_language_pairs(languages), "train"))
    return stacked.shuffle(seed=seed).select(range(pairs))


def training_arguments(
    steps: int, batch: int, learning_rate: float, output_dir: str, seed: int, bf16: bool = False
) -> dict:
    return dict(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=batch,
        learning_rate=learning_rate,
        bf16=bf16,
        warmup_steps=max(1, steps // 10),
        lr_scheduler_type="cosine",
        weight_decay=1e-4,
        max_grad_norm=10.0,
        seed=seed,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        logging_steps=max(1, steps // 8),
        use_cpu=not torch.cuda.is_available(),
        dataloader_pin_memory=False,
    )


def build(
    arm: str,
    path: str,
    train,
    languages: list[str],
    steps: int,
    learning_rate: float,
    output_dir: str,
    seed: int,
    max_length: int,
    base: int = BATCH,
    bf16: bool = False,
    temperature: float = TEMPERATURE,
    queue_size: int | None = None,
    momentum: float = MOMENTUM,
):
    """``(trainer, score)``: the arm's trainer and a function scoring its model on an evaluator; ``base`` is B;
    ``bf16`` trains in mixed precision; ``queue_size`` (None: the arm's own, K x B) and ``momentum`` are a queue's.
    Rows with an ``example_id`` (the meaning: a verse) give the queue's arms their ``label`` and sentence-transformers'
    arms its ``NO_DUPLICATES`` batches, so that no copy of a pair's own translation is its negative when the pairs
    repeat or span several languages."""
    from transformers import TrainerCallback  # noqa: F401  (imported before sentence-transformers' trainer)

    s = spec(arm)
    batch = base * s["batch"]
    learning_rate *= s["lr_factor"]
    queue_size = queue_size or base * s.get("queue", 0)
    torch.manual_seed(seed)
    many = len(languages) > 2
    ids = "example_id" in train.column_names
    columns = ["source", "target"] if many else languages
    if s["loss"] == "dmm":
        from transformers import AutoTokenizer

        from hf_xlsr import DualMomentumModel
        from hf_xlsr.trainers import BitextCollator, XlsrTrainer, XlsrTrainingArguments

        model = DualMomentumModel.from_encoders(
            path,
            shared_encoder=True,
            languages=languages,
            queue_size=queue_size,
            momentum=momentum,
            temperature=temperature,
        )
        tokenizers = AutoTokenizer.from_pretrained(path)
        collator = BitextCollator(tokenizers, languages=None if many else languages, max_length=max_length)
        args = XlsrTrainingArguments(**training_arguments(steps, batch, learning_rate, output_dir, seed, bf16))
        # with many languages the rows keep their languages and meaning ids: no translation of a verse is a negative
        kept = [*columns, "source_language", "target_language", "example_id"] if many else columns
        trainer = XlsrTrainer(
            model=model,
            args=args,
            train_dataset=train.select_columns(kept),
            data_collator=collator,
            tokenizers=tokenizers,
        )
        return trainer, lambda evaluator: evaluator(model, tokenizers=tokenizers)

    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    from hf_xlsr.losses import CachedMomentumQueueLoss, MomentumQueueLoss

    model = SentenceTransformer(path, device="cpu")
    model[0].max_seq_length = max_length
    both = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    data = train.select_columns(columns)
    callbacks = []
    extra = {}
    if ids:  # a verse in several pairs: sentence-transformers' sampler for in-batch negatives keeps it once a batch
        from sentence_transformers.base.sampler import BatchSamplers

        extra["batch_sampler"] = BatchSamplers.NO_DUPLICATES
    if s["loss"] == "mnrl":
        loss = losses.MultipleNegativesRankingLoss(model, scale=1 / temperature, **both)
    elif s["loss"] == "cmnrl":
        loss = losses.CachedMultipleNegativesRankingLoss(model, scale=1 / temperature, mini_batch_size=base, **both)
    else:
        options = {"queue_size": queue_size, "momentum": momentum, "temperature": temperature}
        loss = (
            MomentumQueueLoss(model, **options)
            if s["loss"] == "mql"
            else CachedMomentumQueueLoss(model, mini_batch_size=base, **options)
        )
        callbacks = [loss.callback]
    if ids and s["loss"] in ("mql", "cmql"):  # no queued copy of a query's verse is a negative
        data = data.add_column("label", train["example_id"])
    args = SentenceTransformerTrainingArguments(
        **training_arguments(steps, batch, learning_rate, output_dir, seed, bf16), **extra
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss, callbacks=callbacks)

    def score(evaluator):
        model[0].max_seq_length = 128  # score with the truncation hf_xlsr's encoder uses
        try:
            return evaluator(model)
        finally:
            model[0].max_seq_length = max_length

    return trainer, score


def meaning_verses():
    """The Bible's en-fr training verses, each its own meaning id (``example_id``): the GPU runs' pairs."""
    from hf_xlsr.data import load_bible

    verses = load_bible(["en", "fr"], split="train").select_columns(["en", "fr"])
    return verses.add_column("example_id", list(range(len(verses))))


def datasets_repeat(dataset, n: int):
    """The first ``n`` rows of ``dataset`` repeated as often as it takes (the budget is pairs, not epochs)."""
    import datasets

    copies = -(-n // len(dataset))
    return datasets.concatenate_datasets([dataset] * copies).select(range(n))
