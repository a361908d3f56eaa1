"""The tuning protocol of every benchmark that chooses a setting, written once (the report's first page says it in
words, docs/benchmarks/index.md): tune and test rows that share no verse (`split_rows`); the same grid of learning
rates and temperatures for every arm at seed 0 (`LEARNING_RATES`, `EXTENSIONS`, `TEMPERATURES`); the
pick on tune scores alone (`pick`, handed `tune_view`); seeds 1 and 2 at the pick, the figure their mean on test.
An arm with a queue then takes one coordinate step more before its seeds (`ArmGrid`): its queue sizes at the best rate
and temperature, then the other momentum at the best size.

`next_jobs` says what an arm still has to run, so that a grid resumes from its results file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

LEARNING_RATES = (5e-5, 1e-4, 2e-4, 4e-4)
EXTENSIONS = 2  # rates run beyond each end of LEARNING_RATES, at most, while the best rate lies at that end
TEMPERATURES = (0.04, 0.05)  # scale 25 (MoCo-BERT's temperature), 20 (MultipleNegativesRankingLoss's default)
PICK_SEED = 0
SEEDS = (0, 1, 2)
MOMENTA = (0.99, 0.999)  # the queue step's momenta: MoCo-BERT's 0.99 first
CHOOSER_FIELDS = ("arm", "seed", "base_learning_rate", "temperature", "queue_size", "momentum", "tune")  # all it reads


@dataclass(frozen=True)
class ArmGrid:
    """What an arm runs beyond the rates and temperatures every arm runs: its paper's temperature where it lies
    outside `TEMPERATURES`; for an arm with a queue, the queue step's ``queue_sizes`` and ``momenta``, and the
    ``queue`` (size, momentum) at which the rates and temperatures run; ``learning_rates``, the grid's rates, for a
    model trained from scratch (`LEARNING_RATES` are a pretrained start's)."""

    paper_temperature: float | None = None
    learning_rates: tuple[float, ...] = LEARNING_RATES
    queue: tuple[int, float] | None = None
    queue_sizes: tuple[int, ...] = ()
    momenta: tuple[float, ...] = MOMENTA

    @property
    def temperatures(self) -> tuple[float, ...]:
        value = self.paper_temperature
        return TEMPERATURES if value is None or value in TEMPERATURES else (*TEMPERATURES, value)


NO_EXTRA = ArmGrid()


def split_rows(total: int, size: int, whole: bool = False) -> dict[str, list[int]]:
    """Rows of a held-out set of ``total`` rows drawn in one order: ``tune`` the ``size`` rows after the first
    ``size``; ``test`` the first ``size`` rows, or with ``whole`` every row but the tuning ones."""
    if total < 2 * size:
        raise ValueError(f"{total} held-out rows cannot give {size} tuning rows and {size} test rows")
    tune = list(range(size, 2 * size))
    test = [*range(size), *range(2 * size, total)] if whole else list(range(size))
    return {"tune": tune, "test": test}


def tune_view(runs: Iterable[Mapping]) -> list[dict]:
    """What a choice is handed of each run: its arm, seed, rate, temperature and ``tune`` score, nothing of test."""
    return [{name: run[name] for name in CHOOSER_FIELDS if name in run} for run in runs if "tune" in run]


def pick(runs: Iterable[Mapping], arm: str) -> dict | None:
    """The grid point of ``arm`` with the best ``tune`` score at `PICK_SEED` (the first on a tie), from
    `tune_view` alone; None before any such run."""
    points = [run for run in tune_view(runs) if run["arm"] == arm and run["seed"] == PICK_SEED]
    return max(points, key=lambda run: run["tune"], default=None)


def point(run: Mapping) -> tuple:
    """A run's grid point: its rate and temperature, then its queue size and momentum (None without a queue)."""
    return run["base_learning_rate"], run["temperature"], run.get("queue_size"), run.get("momentum")


def job(
    arm: str, seed: int, rate: float, temperature: float, queue_size: int | None = None, momentum: float | None = None
) -> str:
    """``ARM:SEED:RATE:TEMPERATURE``, and ``:QUEUE_SIZE:MOMENTUM`` for an arm with a queue."""
    base = f"{arm}:{seed}:{rate:g}:{temperature:g}"
    return base if queue_size is None else f"{base}:{queue_size}:{momentum:g}"


def next_rate_beyond(rates: set[float], best: float, grid_rates: tuple[float, ...] = LEARNING_RATES) -> float | None:
    """The rate to run next where the best of ``rates`` (at the first temperature) is the lowest or the highest run:
    half or twice it, at most `EXTENSIONS` steps beyond ``grid_rates``; None where the best lies inside."""
    if best == min(rates) and best > min(grid_rates) / 2**EXTENSIONS:
        return best / 2
    if best == max(rates) and best < max(grid_rates) * 2**EXTENSIONS:
        return best * 2
    return None


def next_jobs(runs: Iterable[Mapping], arm: str, grid: ArmGrid = NO_EXTRA) -> list[str]:
    """The jobs ``arm`` still has to run under the protocol, in order, as `job` names them: the rates at the first
    temperature, and one rate beyond at a time while the best is the lowest or the highest run
    (`next_rate_beyond`), then the other temperatures (with the paper's, ``grid.temperatures``) at the best of those;
    for an arm with a queue (``grid.queue``, at which those run), its ``queue_sizes`` at the best rate and
    temperature, then its other ``momenta`` at the best size; then the other seeds at the pick; empty when the arm is
    done. Each stage waits for the one before it."""
    runs = [run for run in tune_view(runs) if run["arm"] == arm]
    size, momentum = grid.queue or (None, None)
    done = {(run["seed"], *point(run)) for run in runs}
    first = TEMPERATURES[0]
    rates = [
        job(arm, PICK_SEED, rate, first, size, momentum)
        for rate in grid.learning_rates
        if (PICK_SEED, rate, first, size, momentum) not in done
    ]
    if rates:
        return rates
    at_queue = [run for run in runs if run["seed"] == PICK_SEED and point(run)[2:] == (size, momentum)]
    at_first = [run for run in at_queue if run["temperature"] == first]
    best_rate = point(pick(at_first, arm))[0]
    beyond = next_rate_beyond({point(run)[0] for run in at_first}, best_rate, grid.learning_rates)
    if beyond is not None:
        return [job(arm, PICK_SEED, beyond, first, size, momentum)]
    temperatures = [
        job(arm, PICK_SEED, best_rate, t, size, momentum)
        for t in grid.temperatures[1:]
        if (PICK_SEED, best_rate, t, size, momentum) not in done
    ]
    if temperatures:
        return temperatures
    if grid.queue:
        rate, temperature = point(pick(at_queue, arm))[:2]
        sizes = [
            job(arm, PICK_SEED, rate, temperature, k, momentum)
            for k in grid.queue_sizes
            if (PICK_SEED, rate, temperature, k, momentum) not in done
        ]
        if sizes:
            return sizes
        at_sizes = [
            run
            for run in runs
            if run["seed"] == PICK_SEED and point(run)[:2] == (rate, temperature) and point(run)[3] == momentum
        ]
        best_size = point(pick(at_sizes, arm))[2]
        momenta = [
            job(arm, PICK_SEED, rate, temperature, best_size, m)
            for m in grid.momenta
            if (PICK_SEED, rate, temperature, best_size, m) not in done
        ]
        if momenta:
            return momenta
    chosen = point(pick(runs, arm))
    return [job(arm, seed, *chosen) for seed in SEEDS if (seed, *chosen) not in done]


def run_grid(
    runs: Callable[[], list],
    arms: Iterable[str],
    run_job: Callable[[str], None],
    grids: Mapping[str, ArmGrid] | None = None,
    claim: Callable[[str], bool] | None = None,
    wait: float = 60.0,
) -> None:
    """Each of ``arms`` under the protocol, one job at a time: the first arm with a job still to run runs its stage's
    next one, and the next stage waits for the one before it, as the runs so far (``runs()``, read again after every
    job) decide; ``grids``: what an arm runs beyond the shared grid (`ArmGrid`).
    With ``claim`` (True where this process takes the job, False where another one runs it), several processes share
    the jobs: one whose arm has no free job left takes a later arm's, and one with none free anywhere waits ``wait``
    seconds before it reads the runs again. A job still to run after this process ran it is an error."""
    import time

    arms, previous = list(arms), None
    while True:
        mine, left = None, False
        for arm in arms:
            pending = next_jobs(runs(), arm, (grids or {}).get(arm, NO_EXTRA))
            left = left or bool(pending)
            mine = next((job for job in pending if claim is None or claim(job)), None)
            if mine is not None:
                break
        if not left:
            return
        if mine is None:
            time.sleep(wait)
            continue
        if mine == previous:
            raise SystemExit(f"{previous}: run, yet still to run")
        previous = mine
        run_job(mine)


def at_pick(runs: list[Mapping], arm: str) -> list[Mapping]:
    """The runs of ``arm`` scored on test (``bible``) at its pick, one a seed: what the arm's reported figures read."""
    chosen = pick(runs, arm)
    return [run for run in runs if run["arm"] == arm and chosen and "bible" in run and point(run) == point(chosen)]


def grid_rows(runs: list[Mapping], arms: Iterable[str], grids: Mapping[str, ArmGrid] | None = None) -> list[dict]:
    """For each arm: its seed-0 grid of rates and temperatures (``{(rate, temperature): tune}``, at its ``queue``
    where it has one), its queue step (``{(queue size, momentum): tune}`` at the best rate and temperature), its pick
    and the tune score that chose it, and the ``test`` scores (``bible``) of every seed at the pick; ``complete``
    once its grid (with what ``grids`` adds) and its seeds have run."""
    rows = []
    for arm in arms:
        extra = (grids or {}).get(arm, NO_EXTRA)
        base = extra.queue or (None, None)
        chosen = pick(runs, arm)
        seed0 = [run for run in tune_view(runs) if run["arm"] == arm and run["seed"] == PICK_SEED]
        grid = {point(run)[:2]: run["tune"] for run in seed0 if point(run)[2:] == base}
        at_base = pick([run for run in seed0 if point(run)[2:] == base], arm)
        best = point(at_base)[:2] if at_base else None
        queue = {point(run)[2:]: run["tune"] for run in seed0 if extra.queue and point(run)[:2] == best}
        tests = [run["bible"] for run in at_pick(runs, arm)]
        rows.append(
            {
                "arm": arm,
                "grid": grid,
                "queue": queue,
                "pick": point(chosen) if chosen else None,
                "pick_tune": chosen["tune"] if chosen else None,
                "test": tests,
                "complete": not next_jobs(runs, arm, (grids or {}).get(arm, NO_EXTRA)) and len(tests) >= len(SEEDS),
            }
        )
    return rows


def grid_verdict(rows: list[dict], hf_xlsr: Iterable[str]) -> tuple[dict, dict, float, float, bool] | None:
    """``(ours, peer, difference, spread, holds)`` of `grid_rows`' arms that are complete: the best arm of each side
    on tune (``hf_xlsr``: ours), the difference of their test means, the larger seed spread, and whether ours leads
    by more than it; None before each side has a complete arm."""
    from statistics import fmean, stdev

    done = [row for row in rows if row["complete"]]
    ours_side = [row for row in done if row["arm"] in set(hf_xlsr)]
    peer_side = [row for row in done if row["arm"] not in set(hf_xlsr)]
    if not (ours_side and peer_side):
        return None
    ours = max(ours_side, key=lambda row: row["pick_tune"])
    peer = max(peer_side, key=lambda row: row["pick_tune"])
    difference = fmean(ours["test"]) - fmean(peer["test"])
    spread = max(stdev(ours["test"]), stdev(peer["test"]))
    return ours, peer, difference, spread, difference > spread


def grid_table(
    runs: list[Mapping],
    arms: Iterable[str],
    labels: Mapping[str, str],
    hf_xlsr: Iterable[str],
    cost: Mapping[str, Mapping] | None = None,
    grids: Mapping[str, ArmGrid] | None = None,
) -> str:
    """The report's table of a grid: each arm's tune score at every rate (first temperature) and at the other
    temperature(s) at its best rate, its pick and the tune score that chose it, and its test score over the seeds at
    the pick (with a column of the rates run beyond the grid's own, where any arm has one); the arms picked at the
    lowest or the highest rate that `next_rate_beyond` allows (a better rate may lie beyond); then the verdict of
    the best arm of each side (``hf_xlsr``: ours), each chosen on tune at seed 0, compared by test mean: "holds"
    where ours leads by more than the larger seed spread at 3 seeds each. With ``cost`` (an arm's timed
    ``seconds_per_pair`` and the memory it holds, ``held_mb``, which the rate and temperature do not change), the
    two arms' ratios, and the verdict at equal time: ours read at its whole budget where it takes
    no more time per pair than the peer (the runs are scored at their end only), else "cannot show"."""
    from statistics import fmean, stdev

    arms = list(arms)
    rows = grid_rows(list(runs), arms, grids)
    first = TEMPERATURES[0]
    others = tuple(dict.fromkeys(t for arm in arms for t in (grids or {}).get(arm, NO_EXTRA).temperatures[1:]))
    grid_rates = tuple(sorted({r for arm in arms for r in (grids or {}).get(arm, NO_EXTRA).learning_rates}))
    beyond = {row["arm"]: sorted(r for r, t in row["grid"] if t == first and r not in grid_rates) for row in rows}
    queues = any(len(row["queue"]) > 1 for row in rows)
    header = ["arm", *(f"lr {rate:g}" for rate in grid_rates), *(["lr beyond"] if any(beyond.values()) else []),
              *(f"T {t:g} at its best lr" for t in others), *(["queue K, m at its best lr, T"] if queues else []),
              "pick (lr, T)", "tune at the pick", "test (%)", "seeds"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    edges = []
    for row in rows:
        grid = row["grid"]
        best_rate = max((r for r, t in grid if t == first), key=lambda r: grid[(r, first)], default=None)
        cells = [f"{100 * grid[(rate, first)]:.1f}" if (rate, first) in grid else "—" for rate in grid_rates]
        if any(beyond.values()):
            cells.append(", ".join(f"{rate:g}: {100 * grid[(rate, first)]:.1f}" for rate in beyond[row["arm"]]) or "—")
        rates = {r for r, t in grid if t == first}
        ended = rates >= set(grid_rates) and best_rate in (min(rates), max(rates))  # at an end of a whole grid
        if ended and next_rate_beyond(rates, best_rate, grid_rates) is None:
            end = "lowest" if best_rate == min(rates) else "highest"
            edges.append(f"{labels.get(row['arm'], row['arm'])} ({best_rate:g}, the {end})")
        cells += [f"{100 * grid[(best_rate, t)]:.1f}" if (best_rate, t) in grid else "—" for t in others]
        if queues:
            cells.append(
                "; ".join(f"{k}, {m:g}: {100 * tune:.1f}" for (k, m), tune in sorted(row["queue"].items())) or "—"
            )
        tests = row["test"]
        test = (
            "—"
            if not tests
            else f"{100 * fmean(tests):.1f}" + (f" ± {100 * stdev(tests):.1f}" if len(tests) > 1 else "")
        )
        chosen = (
            "—"
            if row["pick"] is None
            else f"{row['pick'][0]:g}, {row['pick'][1]:g}"
            + (f" (K {row['pick'][2]}, m {row['pick'][3]:g})" if row["pick"][2] is not None else "")
        )
        tune = "—" if row["pick_tune"] is None else f"{100 * row['pick_tune']:.1f}"
        lines.append(
            f"| {labels.get(row['arm'], row['arm'])} | "
            + " | ".join(cells)
            + f" | {chosen} | {tune} | {test} | {len(tests)} |"
        )
    done = [row for row in rows if row["complete"]]
    lines.append("")
    if edges:
        lines.append(
            f"- picked at an end of the rates run ({2**EXTENSIONS}× beyond the grid's own): {'; '.join(edges)}."
        )
    if verdict := grid_verdict(rows, hf_xlsr):
        ours, peer, difference, spread, holds = verdict
        among = (
            "every arm"
            if len(done) == len(rows)
            else f"the {len(done)} arms done ({'; '.join(labels.get(row['arm'], row['arm']) for row in done)})"
        )
        lines.append(
            f"- each side's best on tune among {among}, each at its pick: {labels.get(ours['arm'], ours['arm'])}"
            f" against {labels.get(peer['arm'], peer['arm'])}: {100 * difference:+.1f} points on test, the "
            f"larger seed spread {100 * spread:.1f}: {'holds' if holds else 'does not hold'}."
        )
        if cost and ours["arm"] in cost and peer["arm"] in cost:
            ours_cost, peer_cost = cost[ours["arm"]], cost[peer["arm"]]
            time = ours_cost["seconds_per_pair"] / peer_cost["seconds_per_pair"]
            memory = ours_cost["held_mb"] / peer_cost["held_mb"]
            at_equal_time = (
                ("holds" if holds else "does not hold") + ", read at its whole budget"
                if time <= 1
                else "cannot show: the runs are scored at their end only"
            )
            lines.append(
                f"- {time:.2f}× the peer's seconds per training pair and {memory:.2f}× the memory it holds "
                f"({ours_cost['held_mb']:.0f} MB against {peer_cost['held_mb']:.0f} MB, everything each "
                f"holds); at equal time: {at_equal_time}."
            )
    if len(done) < len(rows):
        lines.append(
            f"- {len(rows) - len(done)} of {len(rows)} arms without their whole grid and 3 seeds at their "
            "pick: the verdict over every arm cannot show before they have them."
        )
    return "\n".join(lines) + "\n"
