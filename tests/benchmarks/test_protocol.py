"""``benchmarks/protocol.py``: tune and test rows share no verse, a choice is handed tune scores alone, and every arm
goes through the same grid, stage by stage, resumed from its results."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import protocol  # noqa: E402


class HiddenTestScores(Mapping):
    """A run whose test figures cannot be read: reading ``bible`` (the test score) or its curve fails the test."""

    def __init__(self, **values):
        self.values = values

    def __getitem__(self, key):
        assert key not in ("bible", "curve"), f"the chooser read {key!r}, a test figure"
        return self.values[key]

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


def run(arm, seed, rate, temperature, tune, test):
    return HiddenTestScores(
        arm=arm, seed=seed, base_learning_rate=rate, temperature=temperature, tune=tune, bible=test, curve=[]
    )


@pytest.mark.parametrize("whole", [False, True])
def test_tune_and_test_rows_are_disjoint_and_test_takes_the_rest_when_whole(whole):
    rows = protocol.split_rows(5801, 1000, whole)
    assert not set(rows["tune"]) & set(rows["test"])
    assert rows["tune"] == list(range(1000, 2000))
    assert len(rows["test"]) == (4801 if whole else 1000)
    with pytest.raises(ValueError, match="cannot give 1000 tuning rows"):
        protocol.split_rows(1500, 1000)


def test_the_benchmarks_tune_and_test_verses_share_no_sentence():
    """The real evaluators of the queue-against-batches benchmark: no English or French verse of ``tune`` is among
    the scored ones, whole or not."""
    import queue_arms

    for whole in (False, True):
        evaluators = queue_arms.evaluators(["en", "fr"], 1000, whole=whole)
        for language in ("en", "fr"):
            tune, test = (set(evaluators[name].sentences[language]) for name in ("tune", "bible"))
            assert len(tune) == 1000 and len(test) == (4801 if whole else 1000) and not tune & test


def test_the_pick_reads_tune_alone_at_the_pick_seed():
    runs = [run("mnrl_B", 0, 1e-4, 0.04, tune=0.80, test=0.99),  # the best test score: not the pick
            run("mnrl_B", 0, 2e-4, 0.04, tune=0.85, test=0.70),
            run("mnrl_B", 1, 4e-4, 0.04, tune=0.95, test=0.90),  # another seed: never picks
            run("mql_K256B", 0, 5e-5, 0.05, tune=0.90, test=0.10)]  # fmt: skip
    chosen = protocol.pick(runs, "mnrl_B")
    assert (chosen["base_learning_rate"], chosen["temperature"], chosen["tune"]) == (2e-4, 0.04, 0.85)
    assert set(chosen) == set(protocol.CHOOSER_FIELDS) - {"queue_size", "momentum"}  # the runs have no queue
    assert protocol.pick(runs, "dmm_K256B") is None


def test_every_arm_goes_rates_then_temperatures_then_seeds():
    arm = "cmnrl_8B_sqrtlr"
    assert protocol.next_jobs([], arm) == [f"{arm}:0:{r:g}:0.04" for r in protocol.LEARNING_RATES]
    runs = [
        run(arm, 0, r, 0.04, tune, 0.0) for r, tune in zip(protocol.LEARNING_RATES, (0.5, 0.7, 0.6, 0.1), strict=True)
    ]
    assert protocol.next_jobs(runs, arm) == [f"{arm}:0:0.0001:0.05"]  # the other temperature at the best rate
    runs.append(run(arm, 0, 1e-4, 0.05, 0.75, 0.0))
    assert protocol.next_jobs(runs, arm) == [f"{arm}:1:0.0001:0.05", f"{arm}:2:0.0001:0.05"]
    runs += [run(arm, seed, 1e-4, 0.05, 0.0, 0.0) for seed in (1, 2)]
    assert protocol.next_jobs(runs, arm) == []
    assert protocol.next_jobs(runs, "mnrl_B") == [f"mnrl_B:0:{r:g}:0.04" for r in protocol.LEARNING_RATES]


def test_the_grid_table_row_holds_the_grid_the_pick_and_every_seeds_test_score():
    arm = "mql_K256B"
    runs = [
        {"arm": arm, "seed": 0, "base_learning_rate": r, "temperature": 0.04, "tune": t, "bible": b}
        for r, t, b in zip(protocol.LEARNING_RATES, (0.5, 0.9, 0.6, 0.1), (0.4, 0.8, 0.95, 0.1), strict=True)
    ]
    runs.append({"arm": arm, "seed": 0, "base_learning_rate": 1e-4, "temperature": 0.05, "tune": 0.7, "bible": 0.9})
    runs += [
        {"arm": arm, "seed": s, "base_learning_rate": 1e-4, "temperature": 0.04, "tune": 0.0, "bible": 0.7 + s / 100}
        for s in (1, 2)
    ]
    (row,) = protocol.grid_rows(runs, [arm])
    assert row["pick"] == (1e-4, 0.04, None, None) and row["pick_tune"] == 0.9 and row["complete"]
    assert row["test"] == [0.8, 0.71, 0.72] and len(row["grid"]) == 5


def test_a_best_rate_at_an_end_runs_the_rate_beyond_it_up_to_two_steps():
    """An arm best at 5e-5 runs 2.5e-5, then 1.25e-5 while each is best, and no lower (two steps); one best at 4e-4
    runs 8e-4, and, that one worse, goes on to the other temperature at 4e-4; the table shows the rates beyond, and
    names the arm still best at the last rate allowed."""
    low, high = "mnrl_B", "mql_K256B"
    runs = [run(low, 0, r, 0.04, t, 0.0) for r, t in zip(protocol.LEARNING_RATES, (0.9, 0.8, 0.7, 0.6), strict=True)]
    runs += [run(high, 0, r, 0.04, t, 0.0) for r, t in zip(protocol.LEARNING_RATES, (0.1, 0.2, 0.3, 0.4), strict=True)]
    assert protocol.next_jobs(runs, low) == [f"{low}:0:2.5e-05:0.04"]
    assert protocol.next_jobs(runs, high) == [f"{high}:0:0.0008:0.04"]
    runs += [run(low, 0, 2.5e-5, 0.04, 0.91, 0.0), run(high, 0, 8e-4, 0.04, 0.35, 0.0)]
    assert protocol.next_jobs(runs, low) == [f"{low}:0:1.25e-05:0.04"]
    assert protocol.next_jobs(runs, high) == [f"{high}:0:0.0004:0.05"]
    runs.append(run(low, 0, 1.25e-5, 0.04, 0.92, 0.0))
    assert protocol.next_jobs(runs, low) == [f"{low}:0:1.25e-05:0.05"]
    text = protocol.grid_table([dict(r.values) for r in runs], [low, high], {}, [high])  # the table shows test
    assert f"| {low} | 90.0 | 80.0 | 70.0 | 60.0 | 1.25e-05: 92.0, 2.5e-05: 91.0 | — |" in text
    assert f"| {high} | 10.0 | 20.0 | 30.0 | 40.0 | 0.0008: 35.0 | — |" in text
    (line,) = [line for line in text.splitlines() if "an end of the rates run" in line]
    assert line.endswith(f": {low} (1.25e-05, the lowest).")


def test_an_arm_trained_from_scratch_runs_its_own_rates_and_the_table_shows_them():
    """An arm with its own rates (``ArmGrid.learning_rates``, a model trained from scratch) runs them, goes beyond
    them by their own ends (twice the highest, two steps at most), and its table's columns are those rates."""
    arm, rates = "lightweight", (2.5e-4, 5e-4, 1e-3, 2e-3)
    grid = protocol.ArmGrid(paper_temperature=0.0, learning_rates=rates)
    assert protocol.next_jobs([], arm, grid) == [f"{arm}:0:{r:g}:0.04" for r in rates]
    runs = [run(arm, 0, r, 0.04, t, 0.0) for r, t in zip(rates, (0.1, 0.2, 0.3, 0.4), strict=True)]
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:0:0.004:0.04"]
    runs += [run(arm, 0, 4e-3, 0.04, 0.5, 0.0), run(arm, 0, 8e-3, 0.04, 0.6, 0.0)]
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:0:0.008:0.05", f"{arm}:0:0.008:0"]  # no 1.6e-2
    text = protocol.grid_table([dict(r.values) for r in runs], [arm], {}, [arm], grids={arm: grid})
    assert "| arm | lr 0.00025 | lr 0.0005 | lr 0.001 | lr 0.002 | lr beyond |" in text
    assert f"| {arm} | 10.0 | 20.0 | 30.0 | 40.0 | 0.004: 50.0, 0.008: 60.0 |" in text
    assert f"{arm} (0.008, the highest)" in text


def test_the_verdict_reads_the_arms_done_and_says_the_rest_cannot_show_yet():
    """MNRL and the queue have their whole protocol; CachedMNRL has one point: the verdict is over the two done, by
    the test means at their picks (0.65 and 0.81 over 3 seeds, spreads 0.01), and says one arm is missing."""

    def arm_runs(arm, tunes, pick_tests):
        runs = [
            {"arm": arm, "seed": 0, "base_learning_rate": rate, "temperature": 0.04, "tune": tune, "bible": 0.0}
            for rate, tune in zip(protocol.LEARNING_RATES, tunes, strict=True)
        ]
        runs.append(
            {"arm": arm, "seed": 0, "base_learning_rate": 2e-4, "temperature": 0.05, "tune": 0.1, "bible": 0.0}
        )
        runs[2]["bible"] = pick_tests[0]
        runs += [
            {
                "arm": arm,
                "seed": seed,
                "base_learning_rate": 2e-4,
                "temperature": 0.04,
                "tune": 0.0,
                "bible": pick_tests[seed],
            }
            for seed in (1, 2)
        ]
        return runs

    runs = arm_runs("mnrl_B", (0.5, 0.6, 0.7, 0.6), (0.64, 0.65, 0.66))
    runs += arm_runs("mql_K256B", (0.5, 0.6, 0.9, 0.6), (0.80, 0.81, 0.82))
    runs.append(
        {"arm": "cmnrl_8B", "seed": 0, "base_learning_rate": 5e-5, "temperature": 0.04, "tune": 0.99, "bible": 0.99}
    )
    labels = {"mnrl_B": "MNRL", "mql_K256B": "queue", "cmnrl_8B": "CachedMNRL"}
    text = protocol.grid_table(runs, ["mnrl_B", "mql_K256B", "cmnrl_8B"], labels, ["mql_K256B"])
    assert "| queue | 50.0 | 60.0 | 90.0 | 60.0 | 10.0 | 0.0002, 0.04 | 90.0 | 81.0 ± 1.0 | 3 |" in text
    assert text.splitlines()[-2] == (
        "- each side's best on tune among the 2 arms done (MNRL; queue), each at its "
        "pick: queue against MNRL: +16.0 points on test, the larger seed spread 1.0: "
        "holds."
    )
    assert text.splitlines()[-1].startswith("- 1 of 3 arms without their whole grid")
    # the cost of the two arms the verdict names: 0.9 / 0.1 s per pair is 0.90x, 900 / 600 MB 1.50x; a faster queue
    # is read at its whole budget, a slower one cannot be read at the peer's time from runs scored at their end
    cost = {"mql_K256B": {"seconds_per_pair": 0.09, "held_mb": 900.0},
            "mnrl_B": {"seconds_per_pair": 0.1, "held_mb": 600.0}}  # fmt: skip
    line = protocol.grid_table(runs, ["mnrl_B", "mql_K256B", "cmnrl_8B"], labels, ["mql_K256B"], cost).splitlines()
    assert line[-2] == (
        "- 0.90× the peer's seconds per training pair and 1.50× the memory it holds (900 MB against "
        "600 MB, everything each holds); at equal time: holds, read at its whole budget."
    )
    cost["mql_K256B"]["seconds_per_pair"] = 0.12
    line = protocol.grid_table(runs, ["mnrl_B", "mql_K256B", "cmnrl_8B"], labels, ["mql_K256B"], cost).splitlines()
    assert line[-2].startswith("- 1.20× the peer's") and line[-2].endswith(
        "cannot show: the runs are scored at their end only."
    )
    # a lead within the larger seed spread does not hold: the queue at 0.70 ± 0.10 against MNRL at 0.65 ± 0.01
    close = [run for run in runs if run["arm"] != "mql_K256B"] + arm_runs(
        "mql_K256B", (0.5, 0.6, 0.9, 0.6), (0.60, 0.70, 0.80)
    )
    line = protocol.grid_table(close, ["mnrl_B", "mql_K256B"], labels, ["mql_K256B"]).splitlines()[-1]
    assert line.endswith("queue against MNRL: +5.0 points on test, the larger seed spread 10.0: does not hold.")


def test_an_arm_with_a_queue_steps_through_its_sizes_then_its_momenta_at_the_best_rate_and_temperature():
    """After its rates and temperatures (run at its queue, 1,024 at 0.99), the queue's arm runs its other sizes at the
    best (rate, T) on tune, then the other momentum at the best size, then its seeds at the best point of all; the
    records' queue fields tell the points apart, and a run without them is not at the queue."""
    arm, grid = "hf_xlsr", protocol.ArmGrid(queue=(1024, 0.99), queue_sizes=(256, 1024, 4096))

    def queued(seed, rate, temperature, size, momentum, tune):
        return {**run(arm, seed, rate, temperature, tune, 0.0).values, "queue_size": size, "momentum": momentum}

    assert protocol.next_jobs([], arm, grid) == [f"{arm}:0:{r:g}:0.04:1024:0.99" for r in protocol.LEARNING_RATES]
    runs = [
        queued(0, r, 0.04, 1024, 0.99, t) for r, t in zip(protocol.LEARNING_RATES, (0.5, 0.8, 0.6, 0.1), strict=True)
    ]
    runs.append(run(arm, 0, 2e-4, 0.04, 0.99, 0.0))  # no queue fields: another point, never the best at the queue
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:0:0.0001:0.05:1024:0.99"]
    runs.append(queued(0, 1e-4, 0.05, 1024, 0.99, 0.7))
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:0:0.0001:0.04:256:0.99", f"{arm}:0:0.0001:0.04:4096:0.99"]
    runs += [queued(0, 1e-4, 0.04, 256, 0.99, 0.6), queued(0, 1e-4, 0.04, 4096, 0.99, 0.85)]
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:0:0.0001:0.04:4096:0.999"]
    runs.append(queued(0, 1e-4, 0.04, 4096, 0.999, 0.82))
    del runs[4]  # the run without queue fields leaves: the best point is the largest queue at 0.99
    assert protocol.next_jobs(runs, arm, grid) == [f"{arm}:{seed}:0.0001:0.04:4096:0.99" for seed in (1, 2)]
    row = protocol.grid_rows(runs, [arm], {arm: grid})[0]
    assert row["pick"] == (1e-4, 0.04, 4096, 0.99) and not row["complete"]
    assert row["queue"] == {(256, 0.99): 0.6, (1024, 0.99): 0.8, (4096, 0.99): 0.85, (4096, 0.999): 0.82}
    assert row["grid"] == {
        (1e-4, 0.04): 0.8,
        (5e-5, 0.04): 0.5,
        (2e-4, 0.04): 0.6,
        (4e-4, 0.04): 0.1,
        (1e-4, 0.05): 0.7,
    }
