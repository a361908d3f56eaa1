"""``benchmarks/bench_queue.py``: each configuration scores its queue in the blocks its row names."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import pytest
import torch

from hf_xlsr.modeling import functional

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setattr(functional, "QUEUE_BLOCK_SIZE", functional.QUEUE_BLOCK_SIZE)  # put back after the bench
    import bench_queue

    return bench_queue


@pytest.mark.parametrize("block", [512, 1536])
def test_a_blocked_row_scores_the_queue_in_its_own_blocks(bench, monkeypatch, block):
    """A queue of 3,000 keys scored in blocks of 512 or 1,536 (the last one shorter): every gradient product of the
    queue has the row's block width or the remainder, whatever the library's default block."""
    widths = []
    product = functional.float32_product

    def spy(a, b):
        if b.shape[1] == bench.D:  # the queries' gradient, (n x block) @ (block x d)
            widths.append(b.shape[0])
        return product(a, b)

    monkeypatch.setattr(functional, "float32_product", spy)
    result = bench.one_configuration("blocked", 3000, 4, "float32", 2, block)
    assert set(widths) == {block, 3000 % block}
    assert result["ratio_to_floor"] > 0 and result["floor_width"] in (1024, 2048, 4096, 8192)


def test_the_floor_counts_both_products_of_both_directions(bench):
    """4 B K d multiply-adds: the logits and the queries' gradient, for each of the two queues."""
    result = bench.one_configuration("blocked", 16_384, 4, "float32", 1, 0)
    assert result["floor_multiply_adds"] == 2 * 2 * 4 * 16_384 * bench.D


def test_the_table_names_the_block_of_each_blocked_row(bench):
    from report.cost import queue_cost_rows

    row = {"K": 409_600, "queue_dtype": "float32", "added_seconds": 0.5, "ratio_to_floor": 1.6,
           "ratio_to_issue_floor": 0.8, "added_rss_mb": 1.0, "queue_mb": 600.0}  # fmt: skip
    rows = [{**row, "implementation": "blocked", "block_size": 8192},
            {**row, "implementation": "materialised", "block_size": 0}]  # fmt: skip
    lines = queue_cost_rows({"rows": rows}).splitlines()
    assert lines[2].startswith("| 409,600 | float32 | blocked | 8,192 | 0.5000 | 1.60 | 0.80 |")
    assert lines[3].startswith("| 409,600 | float32 | materialised |  | 0.5000 |")


def test_the_floor_is_the_width_that_ran_fastest_over_the_repeats_and_every_ratio_is_against_it(bench, monkeypatch):
    """Every width's products are timed in each repeat beside the steps, and the floor is the width whose median is
    lowest: here 2,048 (20 ms against 60, 40 and 80: long beside a sleep's overshoot on a busy machine), whatever
    width runs first or fastest once. The ratio is the queue's added time over that width's."""
    pauses = {1024: 0.06, 2048: 0.02, 4096: 0.04, 8192: 0.08}
    calls = {width: 0 for width in pauses}

    def run(width, pairs):
        calls[width] += 1
        time.sleep(0.0 if calls[width] == 1 else pauses[width])  # the warm-up: every width as fast

    def fake_floors(batch, size):
        return {width: functools.partial(run, width, pairs=round(2 * size / width)) for width in pauses}

    monkeypatch.setattr(bench, "floor_products", fake_floors)
    result = bench.one_configuration("blocked", 4096, 4, "float32", 5, 0)
    assert result["floor_width"] == 2048 and all(count == 6 for count in calls.values())
    assert 0.02 <= result["floor_seconds"] < 0.04
    assert result["floor_multiply_adds"] == 2 * 2 * 4 * 4096 * bench.D
    assert result["ratio_to_floor"] == pytest.approx(result["added_seconds"] / result["floor_seconds"], rel=0.5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_stored_products_read_every_key_of_both_queues_once_in_the_rows_blocks(bench, monkeypatch, dtype):
    """A row of 3,000 keys in blocks of 512: the products over the stored queues convert and multiply every key of
    each of the two queues once, in blocks of 512 and the remainder, and the row reports its ratio to them."""
    blocks = []  # (the queue's storage, first key, keys) of each block the stored products convert
    to_float = torch.Tensor.float

    def spy(tensor, *args, **kwargs):
        if tensor.dim() == 2 and tensor.shape[0] > 4:  # a block of keys (the queries have 4 rows)
            offset = tensor.storage_offset() // tensor.shape[1]
            blocks.append((tensor.untyped_storage().data_ptr(), offset, tensor.shape[0]))
        return to_float(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "float", spy)
    result = bench.one_configuration("blocked", 3000, 4, dtype, 2, 512)
    queues = {storage for storage, _, _ in blocks}
    assert len(queues) == 2
    for storage in queues:  # warm-up and two repeats: three passes over each queue, each in the row's blocks
        mine = sorted((offset, keys) for s, offset, keys in blocks if s == storage)
        assert mine == sorted([(start, min(512, 3000 - start)) for start in range(0, 3000, 512)] * 3)
    assert "ratio_to_stored" in result and result["stored_seconds"] > 0  # its value: the test below, on a fake clock


def test_the_third_ratio_is_the_added_time_over_the_stored_products_time(bench, monkeypatch):
    """On a clock that only the fakes move: a direction of the loss takes 10 ms with the queue and 1 ms without it,
    the stored products 50 ms and every floor width 20 ms. The row's stored seconds are the 50 ms, its third ratio
    is its added time (two directions of 9 ms) over them, and its first ratio that time over the floor's."""
    import types

    clock = [0.0]
    real_info_nce = functional.info_nce

    def timed_info_nce(*args, **kwargs):
        clock[0] += 0.010 if len(args) > 3 else 0.001  # a fourth argument: the queues
        return real_info_nce(*args, **kwargs)

    def fake_stored(queries, queues, weights):
        clock[0] += 0.05

    def pause(pairs):
        clock[0] += 0.02

    def fake_floors(batch, size):
        return {w: functools.partial(pause, pairs=round(2 * size / w)) for w in (1024, 2048, 4096, 8192)}

    monkeypatch.setattr(functional, "info_nce", timed_info_nce)
    monkeypatch.setattr(sys.modules["common"], "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(bench, "stored_products", fake_stored)
    monkeypatch.setattr(bench, "floor_products", fake_floors)
    result = bench.one_configuration("blocked", 4096, 4, "float32", 5, 0)
    assert result["stored_seconds"] == pytest.approx(0.05)
    assert result["added_seconds"] == pytest.approx(0.018)
    assert result["ratio_to_stored"] == pytest.approx(0.018 / 0.05)
    assert result["ratio_to_floor"] == pytest.approx(0.018 / 0.02)
