"""The cost of a memory queue in the loss, against its arithmetic floor and against scoring it in one piece.

Both directions of MoCo-BERT's loss with a queue of K keys, each configuration in a fresh process: the seconds and
memory the queue adds to a step (``blocked``: hf_xlsr's ``info_nce``; ``materialised``: the queue scored in one piece,
B x K logits kept for backward), against the floor's products (``floor_products``) and the stored queues' own
products (``stored_products``), timed interleaved. What each ratio means: the report's cost page
(docs/benchmarks/cost.md).

    python benchmarks/bench_queue.py --out benchmarks/results/queue.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F
from common import interleaved, memory_mb, reset_peak

from hf_xlsr.modeling.functional import QUEUE_BLOCK_SIZE

D = 384


def materialised(q, k, queue, tau):
    """The former implementation: a float32 copy of the queue, logits of the whole queue kept for backward."""
    scores = q.float() @ k.float().T
    negatives = q.float() @ queue.float().T
    logits = torch.cat([scores, negatives], dim=1) / tau
    return F.cross_entropy(logits, torch.arange(len(q)))


FLOOR_WIDTHS = (1024, 2048, 4096, 8192)  # block widths at which the floor's products are timed


def products(q: torch.Tensor, keys: torch.Tensor, weights: torch.Tensor, pairs: int) -> None:
    """``pairs`` times the floor's two products: (B x d) @ (d x w), the logits; (B x w) @ (w x d), the gradient."""
    for _ in range(pairs):
        q @ keys.T
        weights @ keys


def stored_products(queries: torch.Tensor, queues: list[torch.Tensor], weights: torch.Tensor) -> None:
    """The floor's two products over each queue itself, in blocks of ``weights``' width as a scorer reads them (a
    float16 block converted to float32 once; a no-op for float32): what scoring the stored queues costs at the
    least at that width, before any of the softmax's own operations."""
    width = weights.shape[1]
    for queue in queues:
        for start in range(0, len(queue), width):
            block = queue[start : start + width].float()
            queries @ block.T
            weights[:, : len(block)] @ block


def floor_products(batch: int, size: int) -> dict[int, functools.partial]:
    """For each width w of `FLOOR_WIDTHS`, the floor's float32 products at that block width, 2 ``size`` / w pairs of
    them (both directions)."""
    return {
        width: functools.partial(
            products,
            torch.randn(batch, D),
            torch.randn(width, D),
            torch.randn(batch, width),
            pairs=round(2 * size / width),
        )
        for width in FLOOR_WIDTHS
    }


def one_configuration(implementation: str, size: int, batch: int, dtype: str, repeats: int, block: int) -> dict:
    """Time a step of both directions with a queue of ``size`` keys (``blocked``: scored ``block`` keys at a time),
    the same step without a queue, and the floor's products, interleaved repeat by repeat in this process, so that
    the machine's noise hits the three alike."""
    from hf_xlsr.modeling import functional
    from hf_xlsr.modeling.functional import info_nce

    functional.QUEUE_BLOCK_SIZE = block or functional.QUEUE_BLOCK_SIZE

    torch.manual_seed(0)
    sides = []  # both directions of the loss: each side's queries against the other side's keys and queue
    for _ in range(2):
        queue = F.normalize(torch.randn(size, D), dim=-1).to(getattr(torch, dtype))
        sides.append((torch.randn(batch, D), F.normalize(torch.randn(batch, D), dim=-1), queue))

    def step(with_queue: bool = True):
        for base, keys, queue in sides:
            q = F.normalize(base.clone().requires_grad_(), dim=-1)
            if not with_queue:
                loss = info_nce(q, keys, 0.04).loss
            elif implementation == "materialised":
                loss = materialised(q, keys, queue, 0.04)
            else:
                loss = info_nce(q, keys, 0.04, [(queue, None)]).loss
            loss.backward()

    floors = floor_products(batch, size)
    stored_width = functional.QUEUE_BLOCK_SIZE if implementation == "blocked" else size  # materialised: one piece
    stored = functools.partial(
        stored_products, torch.randn(batch, D), [queue for _, _, queue in sides], torch.randn(batch, stored_width)
    )
    step(False)
    reset_peak()
    before = memory_mb("VmRSS")
    step()  # warm-up, and the memory the step adds
    added_rss = memory_mb("VmHWM") - before
    runs = {"queue": step, "no queue": lambda: step(False), "stored": stored,
            **{f"floor {w}": run for w, run in floors.items()}}  # fmt: skip
    for run in runs.values():
        run()  # warm-up
    times, _ = interleaved(runs, repeats, palindromic=False)
    # the floor: the width whose products ran fastest over the repeats, so that no choice of block makes it easier
    width = min(FLOOR_WIDTHS, key=lambda w: statistics.median(times[f"floor {w}"]))
    floor_times = times[f"floor {width}"]
    multiply_adds = floors[width].keywords["pairs"] * 2 * batch * D * width
    added = [a - b for a, b in zip(times["queue"], times["no queue"], strict=True)]
    ratios = [a / f for a, f in zip(added, floor_times, strict=True)]
    stored_ratios = [a / f for a, f in zip(added, times["stored"], strict=True)]
    return {
        "seconds": statistics.median(times["queue"]),
        "no_queue_seconds": statistics.median(times["no queue"]),
        "added_seconds": statistics.median(added),
        "floor_seconds": statistics.median(floor_times),
        "ratio_to_floor": statistics.median(ratios),
        "ratio_to_issue_floor": statistics.median(ratios) / 2,
        "stored_seconds": statistics.median(times["stored"]),
        "ratio_to_stored": statistics.median(stored_ratios),
        "added_rss_mb": added_rss,
        "floor_width": width,
        "floor_multiply_adds": multiply_adds,
        "matmul_rate_gmacs": multiply_adds / statistics.median(floor_times) / 1e9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 409600])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--block-sizes",
        type=int,
        nargs="+",
        default=[QUEUE_BLOCK_SIZE],
        help="keys the blocked queue scores at once (default: QUEUE_BLOCK_SIZE)",
    )
    parser.add_argument("--out")
    parser.add_argument(
        "--one", nargs=5, metavar=("IMPLEMENTATION", "SIZE", "DTYPE", "REPEATS", "BLOCK"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        implementation, size, dtype, repeats, block = args.one
        print(json.dumps(one_configuration(implementation, int(size), args.batch, dtype, int(repeats), int(block))))
        return

    def run(implementation: str, size: int, dtype: str, block: int) -> dict:
        command = [sys.executable, __file__, "--batch", str(args.batch), "--threads", str(args.threads),
                   "--one", implementation, str(size), dtype, str(args.repeats), str(block)]  # fmt: skip
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return json.loads(output.strip().splitlines()[-1])

    rows = []
    print(
        f"batch {args.batch}, d {D}, {args.threads} threads; each ratio the median of {args.repeats} interleaved "
        "repeats"
    )
    print(
        f"{'K':>8} {'queue':>8} {'implementation':>13} {'block':>6} {'ms added':>9} {'x floor':>8} "
        f"{'x 4BKd floor':>14} {'x its products':>15} {'MB added':>9}"
    )
    for size in args.sizes:
        for dtype in ("float32", "float16"):
            for implementation, block in [("blocked", block) for block in args.block_sizes] + [("materialised", 0)]:
                row = {"K": size, "queue_dtype": dtype, "implementation": implementation, "block_size": block,
                       "batch": args.batch, **run(implementation, size, dtype, block),
                       "queue_mb": size * D * (4 if dtype == "float32" else 2) / 2**20}  # fmt: skip
                rows.append(row)
                print(
                    f"{size:>8} {dtype:>8} {implementation:>13} {block:>6} {row['added_seconds'] * 1e3:>9.1f} "
                    f"{row['ratio_to_floor']:>8.2f} {row['ratio_to_issue_floor']:>14.2f} "
                    f"{row['ratio_to_stored']:>15.2f} {row['added_rss_mb']:>9.1f}",
                    flush=True,
                )
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
