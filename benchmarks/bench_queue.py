"""The cost of a memory queue in the loss, against its arithmetic floor and against scoring it in one piece.

For both directions of MoCo-BERT's loss (each a batch of B queries, d = 384, against a queue of K keys), each
configuration runs in a fresh process and reports the seconds of forward + backward and the resident memory the
step added:

* ``no queue``: the loss on the batch alone (the part every configuration shares);
* ``blocked``: hf_xlsr's ``info_nce``, the queue scored in blocks of 8,192 keys with an online log-sum-exp whose
  gradient for the queries is accumulated in the same pass (nothing of size B x K is kept);
* ``materialised``: the queue scored in one piece, as hf_xlsr did before: a float32 copy of the queue, the B x K
  logits concatenated to the batch's and ``cross_entropy``, autograd keeping the logits for the backward pass.

The floor is the arithmetic the queue needs, 2 B K d multiply-adds per direction (its logits, and the gradient of
the queries through them), twice, at the machine's own float32 matmul rate measured in the same run on matrices of
the same shapes (the median of 200 timings). A stricter floor counts the backward twice over (4 B K d per
direction); both ratios are printed.
Times are medians of ``--repeats`` steps.

    python benchmarks/bench_queue.py --out benchmarks/results/queue.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from common import memory_mb, reset_peak

D = 384


def materialised(q, k, queue, tau):
    """The former implementation: a float32 copy of the queue, logits of the whole queue kept for backward."""
    scores = q.float() @ k.float().T
    negatives = q.float() @ queue.float().T
    logits = torch.cat([scores, negatives], dim=1) / tau
    return F.cross_entropy(logits, torch.arange(len(q)))


def one_configuration(implementation: str, size: int, batch: int, dtype: str, repeats: int) -> dict:
    from hf_xlsr.modeling.losses import info_nce

    torch.manual_seed(0)
    sides = []  # both directions of the loss: each side's queries against the other side's keys and queue
    for _ in range(2):
        queue = F.normalize(torch.randn(size, D), dim=-1).to(getattr(torch, dtype)) if size else None
        sides.append((torch.randn(batch, D), F.normalize(torch.randn(batch, D), dim=-1), queue))
    reset_peak()
    before = memory_mb("VmRSS")

    def step():
        for base, keys, queue in sides:
            q = F.normalize(base.clone().requires_grad_(), dim=-1)
            if implementation == "materialised":
                loss = materialised(q, keys, queue, 0.04)
            else:
                loss = info_nce(q, keys, 0.04, [(queue, None)] if queue is not None else []).loss
            loss.backward()

    step()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"seconds": sorted(times)[len(times) // 2], "added_rss_mb": memory_mb("VmHWM") - before}


def matmul_rate(batch: int, repeats: int = 200) -> float:
    """Multiply-adds per second of this machine's float32 matmuls of the queue's two shapes, (B x d) @ (d x 8192)
    for the logits and (B x 8192) @ (8192 x d) for the queries' gradient; the median of ``repeats``."""
    q, keys, weights = torch.randn(batch, D), torch.randn(8192, D), torch.randn(batch, 8192)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        q @ keys.T
        weights @ keys
        times.append(time.perf_counter() - start)
    return 2 * batch * D * 8192 / sorted(times)[len(times) // 2]


def report(results: dict) -> str:
    """The Markdown table of a results file: each configuration's added seconds against the two floors, and its
    added memory."""
    lines = ["| K | queue dtype | implementation | added s | × 2BKd floor | × 4BKd floor | added RSS (MB) "
             "| queue (MB) |", "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in results["rows"]:
        lines.append(f"| {row['K']:,} | {row['queue_dtype']} | {row['implementation']} | {row['added_seconds']:.4f} | "
                     f"{row['ratio_to_floor']:.2f} | {row['ratio_to_issue_floor']:.2f} | {row['added_rss_mb']:.0f} | "
                     f"{row['queue_mb']:,.0f} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 409600])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out")
    parser.add_argument(
        "--one", nargs=4, metavar=("IMPLEMENTATION", "SIZE", "DTYPE", "REPEATS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        implementation, size, dtype, repeats = args.one
        print(json.dumps(one_configuration(implementation, int(size), args.batch, dtype, int(repeats))))
        return

    def run(implementation: str, size: int, dtype: str = "float32") -> dict:
        command = [sys.executable, __file__, "--batch", str(args.batch), "--threads", str(args.threads),
                   "--one", implementation, str(size), dtype, str(args.repeats)]  # fmt: skip
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return json.loads(output.strip().splitlines()[-1])

    baseline = run("blocked", 0)
    rate = matmul_rate(args.batch)
    rows = []
    print(f"batch {args.batch}, d {D}, {args.threads} threads; no queue: {baseline['seconds'] * 1e3:.2f} ms")
    print(f"{'K':>8} {'queue':>8} {'implementation':>13} {'ms added':>9} {'x floor':>8} {'x 4BKd floor':>14} "
          f"{'MB added':>9}")  # fmt: skip
    for size in args.sizes:
        floor = 2 * 2 * args.batch * size * D / rate  # both directions
        for dtype in ("float32", "float16"):
            for implementation in ("blocked", "materialised"):
                result = run(implementation, size, dtype)
                added = result["seconds"] - baseline["seconds"]
                row = {"K": size, "queue_dtype": dtype, "implementation": implementation, "batch": args.batch,
                       "seconds": result["seconds"], "added_seconds": added, "floor_seconds": floor,
                       "ratio_to_floor": added / floor, "ratio_to_issue_floor": added / (2 * floor),
                       "added_rss_mb": result["added_rss_mb"], "queue_mb": size * D * (4 if dtype == "float32" else 2)
                       / 2**20, "matmul_rate_gmacs": rate / 1e9}  # fmt: skip
                rows.append(row)
                print(f"{size:>8} {dtype:>8} {implementation:>13} {added * 1e3:>9.1f} {row['ratio_to_floor']:>8.2f} "
                      f"{row['ratio_to_issue_floor']:>14.2f} {result['added_rss_mb']:>9.1f}", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"arguments": vars(args), "baseline": baseline, "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
