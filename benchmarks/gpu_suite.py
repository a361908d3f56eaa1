"""Every GPU figure in two commands: run it first whenever a GPU is at hand (about 11 minutes on one H100, more
than one 10-minute call holds, so in two calls with ``--parts``)::

    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts cuda_tests training_step cached_memory queue_floor \\
        --out a.json
    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts encoding demo queue_grid --out b.json
    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts languages_grid --out c.json       # resumable: again
    HF_HUB_OFFLINE=1 python benchmarks/gpu_suite.py --parts languages_118 --corpus gpu_corpus.jsonl --out d.json

Its parts, in this order, and what each measures are on the report's GPU page (docs/benchmarks/gpu.md); each is
timed, one that the time left cannot hold is skipped with a note, and the JSON and Markdown reports are written after
every part (a call cut short keeps the parts it finished).

``--dry-run`` runs every part at toy size on the CPU (the test suite runs it): it proves the code, not the figures.

Every part needs hf_xlsr's ``corpora`` extra and transformers 5.20 or later; on a GPU machine without a network,
``tools/gpu_kit.py`` brings them. ``--report a.json b.json --out gpu_suite.json`` joins two calls' files into one,
with its Markdown table beside it. The parts' code: ``gpu_steps.py`` (2), ``gpu_encoding.py`` (4, 5),
``gpu_grid.py`` (6), ``gpu_languages.py`` (7, 8), here (1, 3).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch
from common import interleaved
from gpu_encoding import demo, encoding
from gpu_grid import GRID_ARMS, queue_grid
from gpu_languages import languages_118, languages_grid
from gpu_steps import cached_memory, synchronize, training_step
from queue_arms import ARMS
from report.gpu import markdown

ROOT = Path(__file__).resolve().parents[1]
# seconds each part took on one H100 (2026-11-26; the demo not yet run there; training_step and cached_memory on
# one H200, 2026-11-27; queue_grid the time it is given); a part the budget cannot hold after the later parts'
# estimates is skipped
ESTIMATES = {"cuda_tests": 25, "training_step": 265, "cached_memory": 20, "queue_floor": 15, "encoding": 155,
             "demo": 60, "queue_grid": 300, "languages_grid": 300, "languages_118": 540}  # fmt: skip


class Clock:
    """The suite's time budget: each part gets what is left, less what the later parts are expected to need."""

    def __init__(self, budget: float):
        self.start, self.budget = time.perf_counter(), budget

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)


def cuda_tests(args, device: torch.device, seconds: float) -> dict:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_XLSR_TEST_DEVICE": device.type}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "cuda",
            "-n",
            "0",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_cuda.py",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=max(10, seconds),
    )
    counts = {name: int(n) for n, name in re.findall(r"(\d+) (passed|failed|skipped|error)", result.stdout)}
    return {"returncode": result.returncode, **counts, "tail": result.stdout.strip().splitlines()[-1:]}


def unit_rows(n: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=-1)


def queue_floor(args, device: torch.device, seconds: float) -> dict:
    """The time the queue adds to a step, both directions (each query side against the other side's queue, forward
    and backward), against its floor: the matrix products of the same shapes that scoring a bfloat16 queue needs
    (the logits, and the queries' gradient through them), bfloat16 inputs accumulating in float32."""
    from hf_xlsr.modeling.functional import float32_product, info_nce

    batch, dim = (8, 32) if args.dry_run else (256, 384)
    sizes = [256] if args.dry_run else [65_536, 409_600]
    repeats = 3 if args.dry_run else 20
    rows = []
    for size in sizes:
        generator = torch.Generator().manual_seed(0)
        queues = [unit_rows(size, dim, generator).to(device, torch.bfloat16) for _ in range(2)]
        keys = [unit_rows(batch, dim, generator).to(device) for _ in range(2)]
        bases = [torch.randn(batch, dim, generator=generator).to(device) for _ in range(2)]

        def loss_step(with_queue: bool, bases=bases, keys=keys, queues=queues):
            for base, key, queue in zip(bases, keys, queues, strict=True):
                q = torch.nn.functional.normalize(base.clone().requires_grad_(), dim=-1)
                info_nce(q, key, 0.04, [(queue, None)] if with_queue else []).loss.backward()

        def floor_step(bases=bases, queues=queues):
            for base, queue in zip(bases, queues, strict=True):
                logits = float32_product(base, queue.T)
                float32_product(logits, queue)

        arms = {"with_queue": lambda: loss_step(True), "without": lambda: loss_step(False), "floor": floor_step}
        for arm in arms.values():  # warm-up
            arm()
        times, _ = interleaved(arms, repeats, sync=lambda: synchronize(device))  # the drift hits every arm alike
        with_queue, without, floor = (statistics.median(times[arm]) for arm in arms)
        rows.append(
            {
                "queue_size": size,
                "batch": batch,
                "dim": dim,
                "directions": 2,
                "queue_dtype": "bfloat16",
                "added_seconds": with_queue - without,
                "floor_seconds": floor,
                "times_floor": (with_queue - without) / floor,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows}


PARTS = {"cuda_tests": cuda_tests, "training_step": training_step, "cached_memory": cached_memory,
         "queue_floor": queue_floor, "encoding": encoding, "demo": demo, "queue_grid": queue_grid,
         "languages_grid": languages_grid, "languages_118": languages_118}  # fmt: skip


LANGUAGES = ("languages_grid", "languages_118")  # the parts that take calls of their own: their own data and time


def join(reports: list[dict]) -> dict:
    """One report of several calls' reports on one device: each part as the last call that ran it (done or failed)
    left it, else as skipped; each part keeps the command and date of the call it comes from (``queue_grid``'s last
    call holds every run of its results file). A joined report joins again: its parts keep their own commands and
    dates."""
    devices = {report["device"] for report in reports}
    if len(devices) > 1:
        raise SystemExit(f"the reports come from different devices: {', '.join(sorted(devices))}")
    joined = {key: value for key, value in reports[0].items() if key not in ("parts", "command", "date")}
    joined["date"] = ", ".join(dict.fromkeys(report["date"] for report in reports))
    joined["parts"] = {}
    for report in reports:
        for name, part in report["parts"].items():
            # a call's report names its command once; a joined report names each part's
            part = {"command": report.get("command"), "date": report["date"], **part}
            if not part["status"].startswith("skipped") or name not in joined["parts"]:
                joined["parts"][name] = part
    joined["parts"] = {name: joined["parts"][name] for name in PARTS if name in joined["parts"]}
    return joined


def write(report: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", nargs="+", type=Path, help="join these calls' JSON files into --out; run nothing")
    parser.add_argument("--dry-run", action="store_true", help="every part at toy size, on the CPU")
    parser.add_argument("--budget", type=float, default=540, help="seconds for the parts asked for")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=list(PARTS),
        default=[p for p in PARTS if p not in LANGUAGES],
        help="default: all but the languages parts, which run on calls of their own",
    )
    parser.add_argument("--grid-arms", nargs="+", choices=list(ARMS), default=GRID_ARMS, help="queue_grid's arms")
    parser.add_argument("--grid-pairs", type=int, default=2**14, help="queue_grid: training pairs per run")
    parser.add_argument("--grid-out", help="queue_grid's results file, resumable (default: --out's name + _grid)")
    parser.add_argument(
        "--languages-arms", nargs="+", help="languages_grid's arms (default: every arm of multilingual_grid.py)"
    )
    parser.add_argument(
        "--languages-out", help="languages_grid's results file, resumable (default: --out's name + _languages)"
    )
    parser.add_argument(
        "--languages-models",
        help="where the languages parts save their models and checkpoints (default: --out's name + _models)",
    )
    parser.add_argument("--corpus", help="languages_118: a draw of the catalogue corpus (gpu_languages.py --draw)")
    parser.add_argument(
        "--tatoeba-dir", default=str(ROOT.parent / "shared" / "tatoeba"), help="languages_118: Tatoeba's test sets"
    )
    parser.add_argument("--out", required=True, help="JSON file; the Markdown table goes beside it (.md)")
    args = parser.parse_args()
    if args.report:
        write(join([json.loads(path.read_text()) for path in args.report]), Path(args.out))
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        parser.error("no CUDA device: run on a GPU machine, or use --dry-run")
    device = torch.device("cpu" if args.dry_run else "cuda")
    name = "CPU (dry run)" if args.dry_run else torch.cuda.get_device_name(device)
    report = {"device": name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dry_run": args.dry_run,
              "torch": torch.__version__, "command": " ".join(sys.argv), "parts": {}}  # fmt: skip
    clock = Clock(args.budget)
    for index, part in enumerate(args.parts):
        later = sum(ESTIMATES[p] for p in args.parts[index + 1 :]) if not args.dry_run else 0
        allowed = clock.left() - later
        if allowed < (5 if args.dry_run else ESTIMATES[part] / 3):
            report["parts"][part] = {"status": f"skipped: {clock.left():.0f} s left of the budget"}
        else:
            began = time.perf_counter()
            print(f"== {part} ({allowed:.0f} s)", flush=True)
            try:
                report["parts"][part] = {"status": "done", **PARTS[part](args, device, allowed)}
            except Exception as error:  # a failed part is a result too: the next parts still run
                report["parts"][part] = {"status": f"failed: {type(error).__name__}: {error}",
                                         "traceback": traceback.format_exc()[-2000:]}  # fmt: skip
            report["parts"][part]["seconds"] = time.perf_counter() - began
        write(report, Path(args.out))  # after each part: a call cut short keeps the parts it finished
    return (
        0
        if all(p["status"] in ("done",) or p["status"].startswith("skipped") for p in report["parts"].values())
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
