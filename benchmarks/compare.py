"""Two arms of a results file, paired by seed: the per-seed differences, their mean and spread, and a paired t-test.

This is how the report's paired figures are computed from the committed JSON, e.g. mixed batches against batches
of one language pair:

    python benchmarks/compare.py benchmarks/results/multilingual_sampling.json alpha0.5 alpha0.5_one_pair \\
        --metric trained

Only seeds that both arms ran are paired; a difference is in points (percent) of ``--metric``.
"""

from __future__ import annotations

import argparse
import json

from common import mean_and_spread
from scipy.stats import ttest_rel


def paired(
    runs: list[dict], arm: str, baseline: str, metric: str, baseline_metric: str | None = None
) -> dict[int, tuple[float, float]]:
    """``{seed: (arm's metric, baseline's metric)}`` over the seeds both arms ran; ``baseline_metric``: another figure
    of the baseline (of the same arm: one figure against another, run by run)."""
    sides = ((arm, metric), (baseline, baseline_metric or metric))
    by_side: list[dict[int, float]] = [{}, {}]
    for run in runs:
        for values, (name, key) in zip(by_side, sides, strict=True):
            if run["arm"] == name and key in run:
                values[run["seed"]] = run[key]
    for values, (name, key) in zip(by_side, sides, strict=True):
        if not values:
            known = sorted({run["arm"] for run in runs})
            raise SystemExit(f"compare.py: no run of arm {name!r} with metric {key!r}; arms in the file: {known}")
    seeds = sorted(by_side[0].keys() & by_side[1].keys())
    return {seed: (by_side[0][seed], by_side[1][seed]) for seed in seeds}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results JSON written by a benchmark script")
    parser.add_argument("arm")
    parser.add_argument("baseline")
    parser.add_argument("--metric", default="bible", help="a key of the runs (default: mean held-out Bible accuracy)")
    args = parser.parse_args(argv)

    with open(args.results) as file:
        runs = json.load(file)["runs"]
    pairs = paired(runs, args.arm, args.baseline, args.metric)
    if len(pairs) < 2:
        raise SystemExit(
            f"compare.py: {args.arm!r} and {args.baseline!r} share {len(pairs)} seed(s); a paired test needs 2"
        )
    print(f"{'seed':>4} {args.arm[:30]:>30} {args.baseline[:30]:>30} {'difference':>11}")
    for seed, (a, b) in pairs.items():
        print(f"{seed:>4} {100 * a:>30.2f} {100 * b:>30.2f} {100 * (a - b):>+11.2f}")
    mean, spread, n = mean_and_spread([100 * (a - b) for a, b in pairs.values()])
    test = ttest_rel([a for a, _ in pairs.values()], [b for _, b in pairs.values()])
    print(
        f"paired difference {mean:+.2f} ± {spread:.2f} points over {n} seeds; "
        f"t = {test.statistic:.2f}, {n - 1} df, two-sided p = {test.pvalue:.3f}"
    )


if __name__ == "__main__":
    main()
