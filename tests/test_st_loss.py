"""MomentumQueueLoss with SentenceTransformerTrainer: keys from the momentum copy, one EMA per optimizer step, the
queue and momentum model in checkpoints, two processes, and the model card."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import tiny_encoder_config
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from test_multiprocess import ROOT, launch_two_processes
from test_trainer import StopAt
from transformers import BertConfig, BertModel

from hf_xlsr.data import load_bible
from hf_xlsr.losses import MomentumQueueLoss


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory, tokenizer) -> str:
    """A tiny BERT with the real MiniLM tokenizer, saved once."""
    folder = tmp_path_factory.mktemp("tiny_encoder")
    torch.manual_seed(0)
    config = BertConfig(**{k: v for k, v in tiny_encoder_config().items() if k != "model_type"})
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def pairs():
    rows = load_bible(["en", "fr"], split="train").select(range(64))
    return rows.rename_columns({"en": "anchor", "fr": "positive"}).select_columns(["anchor", "positive"])


def sentence_model(encoder_dir) -> SentenceTransformer:
    torch.manual_seed(0)
    modules = [Transformer(encoder_dir, max_seq_length=32), Pooling(32, "mean")]
    return SentenceTransformer(modules=modules, device="cpu")


def trainer_for(model, loss, pairs, output_dir, callbacks=None, **arguments):
    defaults = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=4,
        max_steps=6,
        learning_rate=1e-3,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    args = SentenceTransformerTrainingArguments(**{**defaults, **arguments})
    callbacks = [loss.callback] if callbacks is None else callbacks
    return SentenceTransformerTrainer(model=model, args=args, train_dataset=pairs, loss=loss, callbacks=callbacks)


def test_the_momentum_copy_owns_its_weights_and_shares_the_tokenizer(encoder_dir):
    """The copy holds weights of its own (the EMA moves them apart from the live ones) but not a second tokenizer:
    it is handed token ids, and a multilingual tokenizer is hundreds of MB of Python objects."""
    model = sentence_model(encoder_dir)
    copy = MomentumQueueLoss(model, queue_size=8).momentum_contrast.momentum["encoder"]
    assert copy[0].processor is model[0].processor
    live = dict(model.named_parameters())
    for name, tensor in copy.named_buffers():
        if name in live:
            assert tensor.data_ptr() != live[name].data_ptr(), name
    assert {name for name, _ in copy.named_buffers()} >= set(live)


def test_the_loss_takes_its_positives_and_negatives_from_the_momentum_copy(encoder_dir, pairs):
    """After EMA steps, the loss equals Eq. 2-3 written out with the momentum copy's keys and the queue."""
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=10, momentum=0.5, temperature=0.1)
    trainer_for(model, loss, pairs, "unused", max_steps=3, learning_rate=5e-2).train()
    assert int(loss.momentum_contrast.momentum_updates) == 3
    batch = [model.tokenize(list(pairs[column][40:44])) for column in ("anchor", "positive")]
    model.eval()
    with torch.no_grad():
        value = loss(batch).item()
        live = [torch.nn.functional.normalize(model(dict(b))["sentence_embedding"].double(), dim=-1) for b in batch]
        momentum = loss.momentum_contrast.momentum["encoder"]
        keys = [torch.nn.functional.normalize(momentum(dict(b))["sentence_embedding"].double(), dim=-1) for b in batch]
    assert (live[1] - keys[1]).abs().max() > 1e-3  # the momentum copy lags behind by now
    queues = [q.negatives()[0].double() for q in (loss.momentum_contrast.queue_x, loss.momentum_contrast.queue_y)]

    def direction(queries, own_keys, queue):
        total = 0.0
        for i in range(4):
            logits = [float(queries[i] @ k) / 0.1 for k in own_keys] + [float(queries[i] @ k) / 0.1 for k in queue]
            top = max(logits)
            total -= logits[i] - top - math.log(sum(math.exp(t - top) for t in logits))
        return total / 4

    expected = (direction(live[0], keys[1], queues[1]) + direction(live[1], keys[0], queues[0])) / 2  # as MNRL
    assert value == pytest.approx(expected, rel=1e-5)


def test_one_ema_per_optimizer_step_under_gradient_accumulation(encoder_dir, pairs, tmp_path):
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=10, momentum=0.9)
    before = [b.clone() for b in loss.momentum_contrast.momentum["encoder"].buffers()]
    trainer_for(model, loss, pairs, tmp_path, max_steps=3, gradient_accumulation_steps=2).train()
    contrast = loss.momentum_contrast
    assert int(contrast.momentum_updates) == 3 and int(contrast.enqueues) == 6  # 3 EMA, 6 micro-batches queued
    assert int(contrast.queue_x.ptr) == (6 * 4) % 10 and int(contrast.queue_x.filled) == 10
    after = list(loss.momentum_contrast.momentum["encoder"].buffers())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_training_without_the_callback_is_refused(encoder_dir, pairs, tmp_path):
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=10)
    with pytest.raises(RuntimeError, match="the momentum encoder has never been updated"):
        trainer_for(model, loss, pairs, tmp_path, callbacks=[]).train()


def test_resume_restores_queue_pointer_and_momentum_model_exactly(encoder_dir, pairs, tmp_path):
    """6 steps straight == 3 steps, checkpoint, a new model, loss and trainer resumed, 3 more steps. The queue holds
    10 keys and a step brings 4: the pointer at the checkpoint is 2, not where a fresh queue starts."""
    straight_model = sentence_model(encoder_dir)
    straight = MomentumQueueLoss(straight_model, queue_size=10, momentum=0.9)
    trainer_for(straight_model, straight, pairs, tmp_path / "straight").train()

    model = sentence_model(encoder_dir)
    first = MomentumQueueLoss(model, queue_size=10, momentum=0.9)
    interrupted = trainer_for(model, first, pairs, tmp_path / "split", save_strategy="steps", save_steps=3)
    interrupted.add_callback(StopAt(3))
    interrupted.train()
    assert int(first.momentum_contrast.queue_x.ptr) == 2
    model = sentence_model(encoder_dir)
    resumed = MomentumQueueLoss(model, queue_size=10, momentum=0.9)
    trainer_for(model, resumed, pairs, tmp_path / "split", save_strategy="steps", save_steps=3).train(
        resume_from_checkpoint=str(tmp_path / "split" / "checkpoint-3")
    )
    a, b = straight.momentum_contrast.state_dict(), resumed.momentum_contrast.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert int(b["queue_x.ptr"]) == 24 % 10 and int(b["momentum_updates"]) == 6
    for (name, p), q in zip(straight_model.named_parameters(), model.parameters(), strict=True):
        assert torch.equal(p, q), name


def test_resuming_without_the_saved_queue_names_the_missing_file(encoder_dir, pairs, tmp_path):
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=10)
    trainer = trainer_for(model, loss, pairs, tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
    trainer.train()
    (tmp_path / "checkpoint-2" / "momentum_queue_loss.safetensors").unlink()
    fresh = MomentumQueueLoss(sentence_model(encoder_dir), queue_size=10)
    with pytest.raises(FileNotFoundError, match=r"checkpoint-2/momentum_queue_loss\.safetensors: training resumes"):
        trainer_for(fresh.model, fresh, pairs, tmp_path, max_steps=4).train(resume_from_checkpoint=True)


def test_two_processes_hold_the_same_queue_of_both_processes_keys(encoder_dir, tmp_path):
    result = launch_two_processes(ROOT / "tests" / "scripts" / "train_st_loss.py", encoder_dir, str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rank0, rank1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert int(rank0["world_size"]) == 2
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    assert int(rank0["queue_x.filled"]) == 24 and int(rank0["momentum_updates"]) == 3  # 3 steps x 4 x 2


def test_the_model_card_names_the_loss_and_cites_the_paper(encoder_dir, pairs, tmp_path):
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=10)
    assert loss.get_config_dict() == {
        "queue_size": 10,
        "momentum": 0.999,
        "temperature": 0.05,
        "symmetric": True,
        "in_batch_negatives": True,
        "queue_dtype": "auto",
    }
    trainer_for(model, loss, pairs, tmp_path, max_steps=1).train()
    model.save(str(tmp_path / "saved"))
    card = (tmp_path / "saved" / "README.md").read_text()
    assert "MomentumQueueLoss" in card and "Aligning Cross-lingual Sentence Representations" in card
    assert '"queue_size": 10' in card


def test_the_readme_script_trains(tmp_path):
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "train_sentence_transformers.py"),
            "--max-steps",
            "2",
            "--output-dir",
            str(tmp_path / "run"),
            "--eval-pairs",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'eval_retrieval_accuracy'" in result.stdout  # hf_xlsr's evaluator under SentenceTransformerTrainer
    model = SentenceTransformer(str(tmp_path / "run" / "final"))
    assert model.encode(["Au commencement"]).shape == (1, 384)
    card = (tmp_path / "run" / "final" / "README.md").read_text()
    assert "retrieval_accuracy" in card  # the evaluator's figures reach sentence-transformers' model card


def embed(model, texts):
    return [model.tokenize(list(column)) for column in texts]


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("columns", [2, 3])
def test_mnrl_is_this_loss_with_an_empty_queue_and_live_keys(encoder_dir, pairs, symmetric, columns):
    """Before the first optimizer step the momentum copy is the model itself: in eval mode (no dropout) and with an
    empty queue, the loss is MultipleNegativesRankingLoss's value, one direction or the mean of both."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=16, temperature=0.05, symmetric=symmetric)
    both = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    mnrl = MultipleNegativesRankingLoss(model, scale=20.0, **(both if symmetric else {}))
    texts = [pairs["anchor"][:6], pairs["positive"][:6], pairs["positive"][20:26]][:columns]
    features = embed(model, texts)
    model.eval()
    value = loss(features).item()
    assert value == pytest.approx(mnrl(embed(model, texts), None).item(), rel=1e-6)
    assert value > 0.1


def test_without_symmetry_the_anchors_get_no_momentum_forward_and_no_queue(encoder_dir, pairs):
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=16, symmetric=False)
    assert loss.momentum_contrast.queue_x is None and loss.momentum_contrast.queue_y is not None
    seen = []
    loss.momentum_contrast.momentum["encoder"].register_forward_hook(lambda m, args, out: seen.append(args))
    loss.train()
    loss(embed(model, [pairs["anchor"][:4], pairs["positive"][:4]]))
    assert len(seen) == 1  # the positives' keys only
    assert len(loss.momentum_contrast.queue_y) == 4
    assert not any("queue_x" in name for name in loss.momentum_contrast.state_dict())


def unit_rows(tensor):
    return torch.nn.functional.normalize(tensor.double(), dim=-1)


def test_hard_negatives_count_without_in_batch_negatives(encoder_dir, pairs):
    """in_batch_negatives=False keeps a row's own hard negative (and the queue) but not the other rows' keys:
    the loss is Eq. 2 with the row's hard negative added, and changes with the hard negative passed."""
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=16, temperature=0.1, symmetric=False, in_batch_negatives=False)
    model.eval()
    anchors, positives = pairs["anchor"][:4], pairs["positive"][:4]
    values = []
    for negatives in (pairs["positive"][30:34], pairs["positive"][40:44]):
        with torch.no_grad():
            value = loss(embed(model, [anchors, positives, negatives])).item()
            a, p, n = (
                unit_rows(model.encode(list(t), convert_to_tensor=True)) for t in (anchors, positives, negatives)
            )
        expected = 0.0
        for i in range(4):  # own positive and own hard negative only; the queue is still empty
            logits = torch.stack([a[i] @ p[i], a[i] @ n[i]]) / 0.1
            expected -= float(torch.log_softmax(logits, dim=0)[0]) / 4
        assert value == pytest.approx(expected, rel=1e-5)
        values.append(value)
    assert abs(values[0] - values[1]) > 1e-3


def test_labels_are_meaning_ids_that_mask_translations_in_the_batch_and_the_queue(encoder_dir, pairs):
    """Rows 0 and 2 translate one meaning (label 7): neither is the other's negative, in the batch or, once queued,
    in the queue; the other rows are negatives as usual."""
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=16, temperature=0.1, symmetric=False)
    anchors, positives = pairs["anchor"][:4], pairs["positive"][:4]
    labels = torch.tensor([7, 1, 7, 3])
    model.eval()
    with torch.no_grad():
        value = loss(embed(model, [anchors, positives]), labels).item()
        a, p = (unit_rows(model.encode(list(t), convert_to_tensor=True)) for t in (anchors, positives))

    def expected(queue):
        total = 0.0
        for i in range(4):
            keys = [p[i]] + [p[j] for j in range(4) if j != i and labels[j] != labels[i]]
            keys += [k for k, label in queue if label != labels[i]]
            total -= float(torch.log_softmax(torch.stack([a[i] @ k for k in keys]) / 0.1, dim=0)[0]) / 4
        return total

    assert value == pytest.approx(expected([]), rel=1e-5)
    loss.train()
    loss(embed(model, [anchors, positives]), labels)  # queues these four keys with their labels
    loss.eval()
    with torch.no_grad():
        value = loss(embed(model, [anchors, positives]), labels).item()
    assert value == pytest.approx(expected(list(zip(p, labels.tolist(), strict=True))), rel=1e-5)
    with pytest.raises(ValueError, match="one integer meaning id per row"):
        loss(embed(model, [anchors, positives]), torch.tensor([0.5, 0.1, 0.2, 0.3]))


@pytest.mark.parametrize("in_batch_negatives", [True, False])
def test_labels_keep_every_hard_negative(encoder_dir, pairs, in_batch_negatives):
    """Triplets with meaning ids: each row's hard negative stays a negative of its own anchor (and, with in-batch
    negatives, of every anchor). Reference: the loss written out in float64 from the model's embeddings."""
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(
        model, queue_size=16, temperature=0.1, symmetric=False, in_batch_negatives=in_batch_negatives
    )
    anchors, positives, negatives = pairs["anchor"][:4], pairs["positive"][:4], pairs["positive"][30:34]
    labels = torch.tensor([0, 1, 2, 3])
    model.eval()
    with torch.no_grad():
        with_labels = loss(embed(model, [anchors, positives, negatives]), labels).item()
        without = loss(embed(model, [anchors, positives, negatives])).item()
        a, p, n = (unit_rows(model.encode(list(t), convert_to_tensor=True)) for t in (anchors, positives, negatives))
    expected = 0.0
    for i in range(4):
        keys = [p[i], n[i]] + (
            [p[j] for j in range(4) if j != i] + [n[j] for j in range(4) if j != i] if in_batch_negatives else []
        )
        expected -= float(torch.log_softmax(torch.stack([a[i] @ k for k in keys]) / 0.1, dim=0)[0]) / 4
    assert with_labels == pytest.approx(expected, rel=1e-6)
    assert without == pytest.approx(expected, rel=1e-6)


def test_under_bf16_training_the_momentum_forward_runs_in_bf16_as_the_live_one(encoder_dir, pairs, tmp_path):
    """SentenceTransformerTrainer(bf16=True) autocasts the live model's forward; the loss's momentum copy is outside
    it, and the loss's callback gives it the same precision."""
    model = sentence_model(encoder_dir)
    loss = MomentumQueueLoss(model, queue_size=16)
    seen = {"live": set(), "momentum": set()}
    hooks = []
    for name, module in (("live", model), ("momentum", loss.momentum_contrast.momentum["encoder"])):
        for layer in module.modules():
            if isinstance(layer, torch.nn.Linear):
                hooks.append(layer.register_forward_hook(lambda _, __, out, name=name: seen[name].add(out.dtype)))
    trainer_for(model, loss, pairs, tmp_path, max_steps=2, bf16=True).train()
    for hook in hooks:
        hook.remove()
    assert seen == {"live": {torch.bfloat16}, "momentum": {torch.bfloat16}}
    assert int(loss.momentum_contrast.momentum_updates) == 2
