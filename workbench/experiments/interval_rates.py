"""The interval timing correlation against the arrival rate, run at each rate (interval timing
paper, Section 4.2: the lazy correlation "is preferable over the eager correlation when the
arrival rates of data streams are so high that it is hard to handle the incoming every tuple
instantly", and "the benefit of the lazy algorithm comes at the expense of the longer
response time").

**A run per rate.**  For every arrival rate of a :class:`RateGrid` the paper's workload
(:class:`~workbench.experiments.workloads.IntervalWorkload`: uniform intervals up to 2 ms,
delays up to D = 5 ms, d = 2.5 ms, ct = 0.8, Lazy re-evaluating at 500 unprocessed tuples or
every second) is generated *at that rate*: Poisson detections at ``rate / 2`` events/s per
stream, while every time parameter (interval lengths, D, d, the lazy wait) stays in
milliseconds.  So at a higher rate the buffers hold more tuples, each event has more
partners and Lazy's blocks of 500 tuples span less time, as they would on a faster stream;
no replay is compressed.  Each rate draws from the same seed, so every rate has the same
interval lengths.  Each of Simple, SSort, Eager, Lazy and LazyWithLookup (Algorithms 1-7)
runs the rate's events in both engines through the one harness
(:func:`~workbench.experiments.harness.profile_join`): the python reference one ``push`` per
event, the compiled kernels ``push_batch`` of :data:`~workbench.experiments.harness.COMPILED_BATCH`
events (:func:`~workbench.experiments.harness.engine_calls`), after a warm-up call.

**What is measured**, per rate, algorithm and engine:

- every call's service time on this thread's CPU clock (``time.thread_time``: other work on a
  shared machine is left out), so the run's *busy* time is CPU time;
- ``throughput``: events per busy CPU second over the calls that arrive at least one buffer
  window (D + d + the longest interval) after the first (the buffers full; the harness's
  :meth:`~workbench.experiments.harness.JoinProfile.capacity`), and ``load`` = rate /
  throughput, the busy CPU seconds per second of stream; the algorithm *keeps up* when
  ``load <= 1`` (busy time within stream time); the maximum sustainable rate
  (:func:`max_sustainable_rates`) is the highest rate of the grid kept up, with every lower
  one;
- response time per event on a simulated clock that advances with the measured busy time:
  one first-come-first-served server takes the calls of *this rate's own run* at their
  arrivals (:func:`~workbench.experiments.harness.fcfs_finish`: call k starts at
  ``max(arrival_k, finish_{k-1})`` and lasts its measured service time); an event's response
  time is the finish of the call that emitted the results it completes (the pairs whose later
  arrival it is) minus its arrival (:func:`event_response_ms`); events that complete no pair
  have none, and the set of such events is the same for every algorithm;
- the work behind the time: probability evaluations and look-up reuses per event, events per
  emitting call (Lazy's block size in the reference), results and an order-free checksum of
  them (every algorithm must give the same result at every rate).

An algorithm that falls behind at a rate is not run at the higher ones (its queue, and so its
response time, would only grow with the run's length).  Results per event grow with the rate
(partners within a fixed window of time), so a run above the first rate is shortened to keep
about ``max_results`` pairs, estimated from the previous rate's results per event times the
rate's ratio.  :func:`~workbench.experiments.interval_verdicts.rate_verdicts` turns the
table into the "Reproduced?" rows of notebook 03, every figure from the runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.events import Events, result_checksum
from workbench.experiments.harness import (
    COMPILED_BATCH,
    ENGINES,
    Clock,
    JoinProfile,
    profile_join,
    warm_up,
)
from workbench.experiments.scale import sized
from workbench.experiments.workloads import INTERVAL_QUERY, IntervalQuery, IntervalWorkload
from workbench.operators import StreamSpec, TwoStreamJoin, interval

__all__ = [
    "ALGORITHMS",
    "CI_RATES",
    "LAZY_ALGORITHMS",
    "PAPER_RATES",
    "RateGrid",
    "event_response_ms",
    "interval_rate_runs",
    "max_sustainable_rates",
    "measure_rate",
    "rate_grid",
]

ALGORITHMS: dict[str, type[TwoStreamJoin]] = {
    "Simple": interval.SimpleCorrelation,
    "SSort": interval.SSortCorrelation,
    "Eager": interval.EagerCorrelation,
    "Lazy": interval.LazyCorrelation,
    "LazyWithLookup": interval.LazyLookupCorrelation,
}
"""The five interval timing correlation algorithms (Algorithms 1, 1 sorted, 2-3, 4-5, 6-7)."""
LAZY_ALGORITHMS = frozenset({"Lazy", "LazyWithLookup"})
"""The algorithms that re-evaluate in blocks and take the query's lazy thresholds."""

MIN_EVENTS_PER_STREAM = 1_000
"""The shortest run a results budget may leave (events per stream)."""


@dataclass(frozen=True)
class RateGrid:
    """The arrival rates to run (events/s in, both streams together), the events per stream
    of each run, the results budget that shortens the runs at high rates, the workload's seed
    and the rows per call of the compiled engine.

    >>> g = RateGrid(rates=(1000.0, 4000.0), events_per_stream=50)
    >>> streams, events = g.streams(4000.0)
    >>> len(events), g.mean_interarrival(4000.0)
    (100, 0.5)
    """

    rates: tuple[float, ...]
    events_per_stream: int
    max_results: int = 16_000_000
    seed: int = 0
    compiled_batch: int = COMPILED_BATCH

    def __post_init__(self) -> None:
        if not self.rates or not all(r > 0 for r in self.rates):
            raise ValueError(f"rates = {self.rates!r} must be positive events/s (at least one)")
        if self.events_per_stream < 1:
            raise ValueError(f"events_per_stream = {self.events_per_stream!r} must be >= 1")
        if self.max_results < 1:
            raise ValueError(f"max_results = {self.max_results!r} must be >= 1")
        if self.compiled_batch < 1:
            raise ValueError(f"compiled_batch = {self.compiled_batch!r} must be >= 1")

    @staticmethod
    def mean_interarrival(rate: float) -> float:
        """The mean gap (ms) between detections of one stream at ``rate`` events/s in."""
        return 2000.0 / rate

    def workload(self, events_per_stream: int | None = None) -> IntervalWorkload:
        """The interval paper's workload with this grid's seed (``events_per_stream``: the
        grid's unless given)."""
        n = self.events_per_stream if events_per_stream is None else events_per_stream
        return IntervalWorkload(events_per_stream=n, seed=self.seed)

    def streams(
        self, rate: float, events_per_stream: int | None = None
    ) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
        """The workload generated at ``rate`` events/s in (both streams): the same interval
        lengths at every rate (one seed), detections ``rate / 2`` per second per stream."""
        w = self.workload(events_per_stream)
        return w.streams(np.random.default_rng(self.seed), self.mean_interarrival(rate))

    def events_at(self, rate: float, results_per_event: float) -> int:
        """Events per stream of the run at ``rate``: the grid's, or fewer so that about
        ``max_results`` pairs come out when each event completes ``results_per_event``
        (estimated; 0: no estimate), never below :data:`MIN_EVENTS_PER_STREAM`."""
        if results_per_event <= 0:
            return self.events_per_stream
        budget = int(self.max_results / (2 * results_per_event))
        return min(self.events_per_stream, max(MIN_EVENTS_PER_STREAM, budget))


CI_RATES = RateGrid(rates=(1_000.0, 10_000.0, 50_000.0, 250_000.0), events_per_stream=2_000)
"""CI's grid: four rates, 2,000 events per stream (notebook 03 under nbmake, the tests)."""
PAPER_RATES = RateGrid(
    rates=(1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6), events_per_stream=100_000
)
"""The papers' sizes: the interval paper gives no rates or stream lengths, only the lazy
thresholds (500 tuples or one second) and "high" rates, so: 1,000 to 1,000,000 events/s in
1-2-5 steps (past the compiled kernels' sustainable rates), 100,000 events per stream (the
benchmark's workload), at most about 16 million pairs per run."""


def rate_grid() -> RateGrid:
    """The grid in force: :data:`PAPER_RATES` when ``WORKBENCH_SCALE=paper``, else
    :data:`CI_RATES` (:func:`~workbench.experiments.scale.sized`)."""
    return sized(ci=CI_RATES, paper=PAPER_RATES)


def event_response_ms(profile: JoinProfile, events: Events) -> np.ndarray:
    """Each event's response time (ms) on the profile's simulated clock: the finish of the
    call that emitted the last of the pairs whose later arrival it is, minus its arrival
    (events in arrival order, as the harness replays them); events that complete no pair are
    left out.

    >>> ev = Events([0, 1, 1], [0, 0, 1], [0, 0, 0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    >>> p = JoinProfile(np.array([0.0, 1.0, 2.0, 2.0]), np.array([1e-3, 1e-3, 1e-3, 0.0]),
    ...                 np.array([0, 0, 2, 0]), np.array([[0, 0], [0, 1]]), np.zeros(2), None)
    >>> p.finish_ms().tolist()   # one block: both pairs come out of call 2, at 3 ms
    [1.0, 2.0, 3.0, 3.0]
    >>> event_response_ms(p, ev).tolist()   # b0 (arrived at 1 ms), b1 (at 2 ms)
    [2.0, 1.0]
    """
    if not profile.results:
        return np.zeros(0)
    rows = np.empty_like(profile.ids)
    for s in (0, 1):
        mine = np.flatnonzero(events.stream == s)
        row_of = np.full(int(events.id[mine].max(initial=-1)) + 1, -1, dtype=np.int64)
        row_of[events.id[mine]] = mine
        rows[:, s] = row_of[profile.ids[:, s]]
    later = rows.max(axis=1)  # rows are in arrival order
    finish = np.full(len(events), -np.inf)
    np.maximum.at(finish, later, np.repeat(profile.finish_ms(), profile.emitted))
    done = np.isfinite(finish)
    return finish[done] - events.arrival[done]


def measure_rate(
    op: TwoStreamJoin,
    events: Events,
    rate: float,
    batch: int,
    warm_ms: float,
    clock: Clock = time.thread_time,
) -> dict[str, float | int | bool]:
    """One timed run of ``events`` (generated at ``rate`` events/s) through ``op``, ``batch``
    events per call, after a warm-up run of a fresh copy over the first events (the kernels
    compiled or loaded, the reference's first calls paid): the measures of the module
    docstring.

    >>> g = RateGrid(rates=(2000.0,), events_per_stream=200)
    >>> streams, events = g.streams(2000.0)
    >>> op = interval.EagerCorrelation(streams=streams, **INTERVAL_QUERY.eager())
    >>> m = measure_rate(op, events, 2000.0, batch=1, warm_ms=10.0)
    >>> m["events"], bool(m["throughput"] > 0), bool(m["response_ms"] >= 0)
    (400, True, True)
    """
    warm_up(op, events)
    p = profile_join(op, events, clock=clock, batch=batch)
    n = p.events
    throughput = p.capacity(warm_ms)
    response = event_response_ms(p, events)
    c = p.counters
    return {
        "events": n,
        "stream_s": float(events.arrival[-1] - events.arrival[0]) / 1000.0 if n else 0.0,
        "busy_s": p.seconds,
        "throughput": throughput,
        "load": rate / throughput,
        "keeps_up": bool(rate <= throughput),
        "response_ms": float(response.mean()) if len(response) else 0.0,
        "response_p95_ms": float(np.percentile(response, 95)) if len(response) else 0.0,
        "cpu_us": 1e6 / throughput,
        "prob_evals": c.prob_evals / n,
        "reuses": c.lookup_reuses / n,
        "events_per_emit": n / max(int(np.count_nonzero(p.emitted)), 1),
        "batch": batch,
        "results": p.results,
        "checksum": result_checksum(p.ids),
    }


def interval_rate_runs(
    grid: RateGrid,
    query: IntervalQuery = INTERVAL_QUERY,
    engines: Sequence[str] = ENGINES,
    clock: Clock = time.thread_time,
    progress: bool = True,
) -> pd.DataFrame:
    """Every algorithm in every engine at every rate of ``grid`` (module docstring), with a
    progress bar (tqdm) over the grid: one row per run, rates ascending, with the columns of
    :func:`measure_rate` and ``same_results`` (the rate's runs all gave the same pairs).

    >>> t = interval_rate_runs(RateGrid((1000.0, 8000.0), 150), progress=False)
    >>> sorted(t["algorithm"].unique()) == sorted(ALGORITHMS), bool(t["same_results"].all())
    (True, True)
    """
    w = grid.workload()
    window = query.d + w.max_delay + w.max_length  # a tuple's stay in the buffers, at most
    behind: set[tuple[str, str]] = set()
    rows, per_event_and_rate = [], 0.0
    todo = [(r, a, e) for r in sorted(grid.rates) for a in ALGORITHMS for e in engines]
    with tqdm(total=len(todo), desc="interval rates", disable=not progress) as bar:
        for rate in sorted(grid.rates):
            n = grid.events_at(rate, per_event_and_rate * rate)
            streams, events = grid.streams(rate, n)
            for name, cls in ALGORITHMS.items():
                extra = query.lazy() if name in LAZY_ALGORITHMS else {}
                for engine in engines:
                    bar.set_description(f"interval rates: {rate:,.0f}/s {name} · {engine}")
                    if (name, engine) not in behind:
                        op = cls(streams=streams, **query.eager(), **extra, engine=engine)
                        batch = 1 if engine == "python" else grid.compiled_batch
                        m = measure_rate(op, events, rate, batch, window, clock)
                        rows.append({"rate": rate, "algorithm": name, "engine": engine, **m})
                        if not m["keeps_up"]:
                            behind.add((name, engine))
                    bar.update()
            last = rows[-1] if rows and rows[-1]["rate"] == rate else None
            if last is not None and last["events"]:  # every run of a rate: the same pairs
                per_event_and_rate = last["results"] / last["events"] / rate
    table = pd.DataFrame(rows)
    if len(table):
        same = table.groupby("rate")[["results", "checksum"]].nunique().max(axis=1) == 1
        table["same_results"] = table["rate"].map(same)
    return table


def max_sustainable_rates(table: pd.DataFrame) -> pd.DataFrame:
    """The highest rate of the grid each algorithm kept up with in each engine, every lower
    rate kept up too (0: none), by algorithm (rows) and engine (columns).

    >>> t = pd.DataFrame({"rate": [1.0, 2.0, 1.0], "algorithm": ["Eager"] * 2 + ["Lazy"],
    ...                   "engine": ["python"] * 3, "keeps_up": [True, False, False]})
    >>> max_sustainable_rates(t)["python"].to_dict()
    {'Eager': 1.0, 'Lazy': 0.0}
    """
    out: dict[str, dict[str, float]] = {}
    for (name, engine), runs in table.groupby(["algorithm", "engine"], sort=False):
        runs = runs.sort_values("rate")
        kept = runs["keeps_up"].to_numpy(dtype=bool).cumprod().astype(bool)
        out.setdefault(engine, {})[name] = float(runs["rate"][kept].max()) if kept.any() else 0.0
    frame = pd.DataFrame(out)
    return frame.reindex([a for a in ALGORITHMS if a in frame.index])
