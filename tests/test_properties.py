"""Property-based tests: the memory queue and the meaning ids driven through random sequences against plain-Python
references (``hypothesis``)."""

from __future__ import annotations

import datasets
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_xlsr.data.multilingual import shared_meanings
from hf_xlsr.modeling.queue import MemoryQueue


class ReferenceQueue:
    """The queue as a list: every key ever written, in order; slot s holds the latest of them whose position is s
    modulo the size. A rollback returns to the last commit, or empties the queue when the keys kept since then
    outnumber its slots."""

    def __init__(self, size: int):
        self.size, self.written, self.committed, self.since_commit = size, [], [], 0

    def enqueue(self, rows):
        self.written += rows
        self.since_commit += min(len(rows), self.size)  # of a batch longer than the queue, the newest stay

    def commit(self):
        self.committed, self.since_commit = list(self.written), 0

    def rollback(self) -> bool:
        undone = self.since_commit <= self.size
        self.written = list(self.committed) if undone else []
        self.committed, self.since_commit = list(self.written), 0
        return undone

    def slots(self) -> dict[int, tuple[float, int]]:
        return {position % self.size: row for position, row in enumerate(self.written)}

    @property
    def ptr(self) -> int:
        return len(self.written) % self.size


operations = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue"), st.integers(0, 12), st.booleans()),
        st.tuples(st.just("commit")),
        st.tuples(st.just("rollback")),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 7), steps=operations)
def test_the_queue_is_the_reference_after_any_enqueue_commit_rollback_and_wrap_around(size, steps):
    queue, reference, counter = MemoryQueue(size, 2), ReferenceQueue(size), 0
    for step in steps:
        if step[0] == "enqueue":
            _, n, with_ids = step
            values = [float(counter + j) for j in range(n)]
            counter += n
            ids = [int(v) * 10 if with_ids else -1 for v in values]
            keys = torch.tensor([[v, -v] for v in values]).reshape(n, 2)
            queue.enqueue(keys, torch.tensor(ids) if with_ids else None)
            reference.enqueue(list(zip(values, ids, strict=True)))
        elif step[0] == "commit":
            queue.commit()
            reference.commit()
        else:
            assert queue.rollback() == reference.rollback()
        slots = reference.slots()
        keys, ids = queue.negatives()
        assert len(queue) == len(slots) == min(size, len(reference.written))
        assert int(queue.ptr) == reference.ptr
        for slot, (value, meaning) in slots.items():
            assert keys[slot].tolist() == [value, -value] and int(ids[slot]) == meaning, (slot, steps)


def reference_meanings(parts: dict[str, list[tuple[str, str, int | None]]]) -> dict[tuple[str, int], int]:
    """Rows joined through shared sentences (same language, same text) or shared ids, by a breadth-first search
    over a plain graph: ``{(pair, row): component}``."""
    rows = [(name, i) for name, part in parts.items() for i in range(len(part))]
    keys = {}
    for name, part in parts.items():
        first, second = name.split("-")
        for i, (a, b, own) in enumerate(part):
            keys[(name, i)] = {("text", first, a), ("text", second, b)} | ({("id", own)} if own is not None else set())
    component, label = {}, 0
    for row in rows:
        if row in component:
            continue
        frontier = [row]
        component[row] = label
        while frontier:
            current = frontier.pop()
            for other in rows:
                if other not in component and keys[current] & keys[other]:
                    component[other] = label
                    frontier.append(other)
        label += 1
    return component


sentence = st.sampled_from(["a", "b", "c", "d", "e"])
pair_rows = st.lists(st.tuples(sentence, sentence, st.one_of(st.none(), st.integers(0, 3))), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(en_fr=pair_rows, en_de=pair_rows, fr_de=pair_rows, ids_given=st.booleans())
def test_two_rows_share_a_meaning_id_exactly_when_a_chain_of_shared_sentences_or_ids_joins_them(
    en_fr, en_de, fr_de, ids_given
):
    parts = {"en-fr": en_fr, "en-de": en_de, "fr-de": fr_de}
    if not ids_given:
        parts = {name: [(a, b, None) for a, b, _ in rows] for name, rows in parts.items()}
    datasets_ = {}
    for name, rows in parts.items():
        first, second = name.split("-")
        columns = {first: [a for a, _, _ in rows], second: [b for _, b, _ in rows]}
        if ids_given:  # -1: this row's meaning is not known (it joins others through its sentences only)
            columns["example_id"] = [-1 if own is None else own for _, _, own in rows]
        datasets_[name] = datasets.Dataset.from_dict(columns)
    numbered = shared_meanings(datasets_, dict.fromkeys(parts, "user" if ids_given else None))
    expected = reference_meanings(parts)
    got = {(name, i): numbered[name]["example_id"][i] for name in parts for i in range(len(parts[name]))}
    for row in got:
        for other in got:
            assert (got[row] == got[other]) == (expected[row] == expected[other]), (row, other, parts)


@settings(max_examples=100, deadline=None)
@given(ids=st.lists(st.one_of(st.just(-1), st.integers(0, 2**62)), min_size=1, max_size=6), dim=st.integers(1, 5))
def test_keys_and_64_bit_meaning_ids_cross_the_gather_packed_in_one_float32_row(ids, dim):
    """The keys of both sides, each row's id (its 64 bits as two float32 columns) and the finiteness flag travel in
    one tensor; what enters the queues is exactly what went in, ids to the last bit."""
    from hf_xlsr.modeling.momentum import MomentumContrast

    contrast = MomentumContrast({"encoder": torch.nn.Linear(2, 2)}, queue_size=8, dim=dim).train()
    keys_x, keys_y = torch.randn(len(ids), dim), torch.randn(len(ids), dim)
    with torch.enable_grad():
        assert contrast.enqueue(keys_x, keys_y, torch.tensor(ids))
    for queue, keys in ((contrast.queue_x, keys_x), (contrast.queue_y, keys_y)):
        queued, queued_ids = queue.negatives()
        assert torch.equal(queued, keys) and queued_ids.tolist() == ids
