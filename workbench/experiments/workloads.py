"""The experiments' workloads: what the benchmarks, notebooks and tests replay.

- :class:`Example5Workload`: PTJoin Example 5's setting (500 random templates of 10 buckets
  per stream, d = 1500 ms, delta = 0.8) with Poisson streams delayed up to D, out of order;
- :class:`IntervalWorkload` and :class:`IntervalQuery`: uniform-interval streams of the
  interval timing paper (Section 4: lengths of a few ms, a low and a high arrival rate) and
  its correlation;
- :class:`WJoinWorkload`: synthetic integer streams with exponential gaps (W-join paper,
  performance study), at equal or Figure 4's unequal rates, with a key range that holds the
  results per tuple constant as the rate grows, and delayed out-of-order arrivals;
  :class:`RetailWorkload`: a synthetic stand-in for its Wal-Mart sales;
- :func:`deployment_replay`: the (simulated) Intel Lab's west and east halves as two
  out-of-order streams, folded to higher rates.

The coalescing paper's generator (Section 7.1) is
:func:`workbench.experiments.coalescing_stream.coalescing_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.data.replay import learn_templates
from workbench.data.replica import simulate_deployment
from workbench.data.streams import replayed_streams
from workbench.data.synthetic import synthetic_events
from workbench.events import Events
from workbench.operators import StreamSpec
from workbench.paper_examples import Example5Setting
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "EXAMPLE5",
    "INTERVAL_QUERY",
    "WEST_EAST",
    "DeploymentReplay",
    "Example5Workload",
    "IntervalQuery",
    "IntervalWorkload",
    "RetailWorkload",
    "WJoinWorkload",
    "as_intervals",
    "deployment_replay",
]

WEST_EAST = (tuple(range(1, 28)), tuple(range(28, 55)))
"""The lab's west (motes 1-27) and east (motes 28-54) halves: the deployment's two streams."""


EXAMPLE5 = Example5Setting()
"""PTJoin Example 5 as the paper states it: 500 templates of 10 buckets, d = 1500, delta = 0.8."""


@dataclass(frozen=True)
class Example5Workload:
    """Example 5's setting as a benchmark workload (PTJoin Section 3, Figure 3): Poisson
    detections every ``mean_interarrival`` ms per stream, network delays up to ``max_delay``
    ms (out of order), ``events_per_stream`` events each.

    >>> small = Example5Workload(Example5Setting(templates=4), events_per_stream=50)
    >>> streams, events = small.build()
    >>> len(events), streams[0].max_delay, len(streams[1].templates)
    (100, 500.0, 4)
    """

    setting: Example5Setting = EXAMPLE5
    events_per_stream: int = 100_000
    mean_interarrival: float = 10.0
    max_delay: float = 500.0
    seed: int = 0

    def build(self) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
        """The two streams' specifications and the events, in arrival order (seeded)."""
        rng = np.random.default_rng(self.seed)
        ha, hb = self.setting.template_sets(rng)
        n = self.setting.templates
        events = synthetic_events(
            rng,
            self.events_per_stream,
            (n, n),
            self.mean_interarrival,
            (self.max_delay, self.max_delay),
        )
        return (StreamSpec(ha, self.max_delay), StreamSpec(hb, self.max_delay)), events


@dataclass(frozen=True)
class IntervalQuery:
    """An interval timing correlation (Sections 4.1-4.2 of that paper): mutual deadline ``d``
    (ms) and confidence threshold ``ct``; the lazy algorithms re-evaluate at ``max_pending``
    unprocessed tuples or after ``max_wait`` ms of stream time.

    >>> IntervalQuery().lazy()
    {'max_pending': 500, 'max_wait': 1000.0}
    """

    d: float = 2.5
    ct: float = 0.8
    max_pending: int = 500
    max_wait: float = 1000.0

    def eager(self) -> dict[str, float]:
        """The keyword arguments of an eager algorithm (Simple, SSort, Eager)."""
        return {"d": self.d, "threshold": self.ct}

    def lazy(self) -> dict[str, float]:
        """The lazy algorithms' extra keyword arguments (Lazy, LazyWithLookup)."""
        return {"max_pending": self.max_pending, "max_wait": self.max_wait}


INTERVAL_QUERY = IntervalQuery()
"""The interval benchmark's correlation: d = 2.5 ms, ct = 0.8; lazy at 500 tuples or 1 s."""


@dataclass(frozen=True)
class IntervalWorkload:
    """Streams of the interval timing paper's model (Section 4.1): uniform intervals of
    ``templates`` lengths up to ``max_length`` ms (shared by both streams), delays up to
    ``max_delay`` ms, one run at each mean inter-arrival time (ms per stream) of ``rates``.

    >>> w = IntervalWorkload(events_per_stream=20)
    >>> streams, events = w.streams(np.random.default_rng(0), 1.0)
    >>> len(events), streams[0].templates[0].n_buckets
    (40, 1)
    """

    events_per_stream: int = 100_000
    templates: int = 20
    max_length: float = 2.0
    max_delay: float = 5.0
    rates: tuple[float, ...] = (1.0, 0.02)
    seed: int = 0

    def streams(
        self, rng: np.random.Generator, mean_interarrival: float
    ) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
        """Random interval lengths (shared by both streams) and Poisson events at one rate."""
        lengths = rng.uniform(self.max_length / 10, self.max_length, self.templates)
        a, b = (
            TemplateSet(name, tuple(HistogramTimestamp.uniform(0, x) for x in lengths))
            for name in "AB"
        )
        events = synthetic_events(
            rng,
            self.events_per_stream,
            (self.templates, self.templates),
            mean_interarrival,
            (self.max_delay, self.max_delay),
        )
        return (StreamSpec(a, self.max_delay), StreamSpec(b, self.max_delay)), events


@dataclass(frozen=True)
class WJoinWorkload:
    """Synthetic integer streams of the W-join performance study (Section 4.1: "a sequence of
    integers whose inter-arrival times follow an exponential distribution"): equality joins
    over keys ``0..keys-1``, ``windows`` windows of ``window_ms`` of stream time per run (at
    most ``max_tuples`` tuples: a shorter run at high rates).

    The paper's settings beside its equal-rate default:

    - **unequal rates** (Section 3.1's Figure 4 discussion): the last ``slow_streams``
      streams arrive ``slow_factor`` times as often as the others (:meth:`stream_rates`);
    - **results per tuple held constant**: with ``results_per_tuple`` set, the key range
      grows with rate x window (:meth:`key_range`) so that each tuple completes that many
      results on average whatever the rate (a fixed range lets results, not tuples, dominate
      the work at high rates);
    - **delayed tuples** (Section 2.1's transaction-time arrivals): with ``max_delay_ms`` D
      > 0 each tuple arrives ``ts + U(0, D)``, so the rows come out of timestamp order (the
      joins then run with ``max_delay = D``).

    >>> rows = WJoinWorkload(window_ms=10.0, keys=5, windows=1.0).streams(
    ...     np.random.default_rng(0), 3, 3000.0)
    >>> list(rows.columns), len(rows), bool(rows["arrival"].is_monotonic_increasing)
    (['stream', 'id', 'value', 'ts', 'arrival'], 30, True)
    >>> fig4 = WJoinWorkload(window_ms=1000.0, slow_streams=2, slow_factor=0.1)
    >>> fig4.stream_rates(4, 2200.0).round(6).tolist()
    [1000.0, 1000.0, 100.0, 100.0]
    >>> scaled = WJoinWorkload(window_ms=100.0, results_per_tuple=1.0)
    >>> scaled.key_range(3, 3000.0), scaled.key_range(3, 30000.0)   # 100 and 1,000 per window
    (100, 1000)
    """

    window_ms: float = 500.0
    keys: int = 10_000
    windows: float = 3.0
    slow_streams: int = 0
    slow_factor: float = 0.1
    results_per_tuple: float | None = None
    max_delay_ms: float = 0.0
    max_tuples: int | None = None

    def __post_init__(self) -> None:
        for name in ("window_ms", "windows", "slow_factor"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} = {value!r} must be a positive number")
        if self.keys < 1:
            raise ValueError(f"keys = {self.keys!r} must be at least 1")
        if self.slow_streams < 0:
            raise ValueError(f"slow_streams = {self.slow_streams!r} must be >= 0")
        if self.results_per_tuple is not None and not self.results_per_tuple > 0:
            raise ValueError(f"results_per_tuple = {self.results_per_tuple!r} must be > 0")
        if not (np.isfinite(self.max_delay_ms) and self.max_delay_ms >= 0):
            raise ValueError(f"max_delay_ms = {self.max_delay_ms!r} must be >= 0")
        if self.max_tuples is not None and self.max_tuples < 1:
            raise ValueError(f"max_tuples = {self.max_tuples!r} must be at least 1")

    def stream_rates(self, m: int, rate: float) -> np.ndarray:
        """Each stream's rate (tuples/s) at aggregate ``rate``: equal, but the last
        ``slow_streams`` at ``slow_factor`` times the others' (Figure 4)."""
        if self.slow_streams >= m:
            raise ValueError(f"slow_streams = {self.slow_streams!r} leaves no fast stream of {m}")
        weight = np.where(np.arange(m) < m - self.slow_streams, 1.0, self.slow_factor)
        return rate * weight / weight.sum()

    def key_range(self, m: int, rate: float) -> int:
        """The keys drawn from at aggregate ``rate``: ``keys``, or with ``results_per_tuple``
        set the range K that gives each tuple that many results on average.

        A tuple of stream s completes, in an m-way uniform clique, the combinations of one
        tuple per other stream from the window before it with its key: on average
        ``prod_j(r_j W) / K^(m-1)``; over every arrival, ``(W/K)^(m-1) m prod(r) / sum(r)``
        (r_j in tuples per ms).  Solved for K, rounded, at least 1."""
        if self.results_per_tuple is None:
            return self.keys
        r = self.stream_rates(m, rate) / 1000.0
        mean = self.window_ms ** (m - 1) * m * np.prod(r) / r.sum()
        return max(1, round(float((mean / self.results_per_tuple) ** (1.0 / (m - 1)))))

    def expected_results_per_tuple(self, m: int, rate: float) -> float:
        """Results per tuple the key range gives on average (:meth:`key_range`'s formula),
        away from the streams' start."""
        r = self.stream_rates(m, rate) / 1000.0
        w_over_k = self.window_ms / self.key_range(m, rate)
        return float(w_over_k ** (m - 1) * m * np.prod(r) / r.sum())

    def span_ms(self, rate: float) -> float:
        """Stream time per run: ``windows`` windows, shortened to ``max_tuples`` tuples."""
        span = self.windows * self.window_ms
        if self.max_tuples is not None:
            span = min(span, 1000.0 * self.max_tuples / rate)
        return span

    def streams(self, rng: np.random.Generator, m: int, rate: float) -> pd.DataFrame:
        """m streams at aggregate ``rate`` tuples/s, as tuples (``stream``, ``id``,
        ``value``, ``ts``, ``arrival``) in arrival order; ids are unique over all streams,
        times in ms; every tuple arrives at its timestamp, or up to ``max_delay_ms`` later."""
        keys, span = self.key_range(m, rate), self.span_ms(rate)
        stamps, values = [], []
        for r in self.stream_rates(m, rate):
            gap_ms = 1000.0 / r
            count = max(1, int(span / gap_ms))
            stamps.append(np.cumsum(rng.exponential(gap_ms, count)))
            values.append(rng.integers(0, keys, count))
        delays = None
        if self.max_delay_ms > 0:
            delays = [rng.uniform(0.0, self.max_delay_ms, len(ts)) for ts in stamps]
        return _wjoin_rows(stamps, values, delays)


def _wjoin_rows(
    stamps: list[np.ndarray], values: list[np.ndarray], delays: list[np.ndarray] | None = None
) -> pd.DataFrame:
    """Each stream's timestamps and values as multi-way join tuples (``stream``, ``id``,
    ``value``, ``ts``, ``arrival``) in arrival order: ids numbered stream after stream, every
    tuple arriving at its timestamp (valid time, W-join Section 2.1) or ``delays`` later."""
    parts, first = [], 0
    for s, (ts, value) in enumerate(zip(stamps, values, strict=True)):
        ids = first + np.arange(len(ts))
        first += len(ts)
        arrival = ts if delays is None else ts + delays[s]
        parts.append(
            pd.DataFrame({"stream": s, "id": ids, "value": value, "ts": ts, "arrival": arrival})
        )
    rows = pd.concat(parts, ignore_index=True)
    return rows.sort_values(["arrival", "stream", "id"], kind="stable", ignore_index=True)


@dataclass(frozen=True)
class RetailWorkload:
    """A synthetic stand-in for the W-join paper's real data (performance study, "output
    execution time on real time series data"): the Wal-Mart sales logs are not public, so
    this generates streams of the shape the paper describes, and only that shape.

    What the paper says: one stream per store; a tuple is an item sold in a customer
    transaction (item number, description, unit price, quantity, date and time), stamped
    with the transaction's time (valid time); the query is Section 2's uniform clique over
    department stores ("sales of the same item in every store within one hour"), an
    equality join on the item number with a one-hour window, hash implementation.  What it
    does not say, and is assumed here: the rates, the item numbers' distribution and the
    day's profile.  Each store sells ``sales_per_hour`` items an hour on average, as a
    Poisson process whose rate follows a shopping day (a lunchtime bump at 12:00 and a
    higher evening peak at 17:30 over a floor, stores open 8:00-22:00), from ``start_hour``
    for ``hours``; item numbers 0..``items - 1`` are Zipf-distributed (rank r sold with
    probability proportional to ``1 / (r + 1) ** skew``: a few best sellers, a long tail),
    the same ranking in every store.  Times are in ms.

    >>> rows = RetailWorkload(sales_per_hour=100.0, hours=2.0).streams(np.random.default_rng(0))
    >>> sorted(rows["stream"].unique().tolist()), bool(rows["ts"].is_monotonic_increasing)
    ([0, 1, 2, 3], True)
    >>> bool(rows["ts"].min() >= 10 * 3.6e6), bool(rows["ts"].max() <= 12 * 3.6e6)
    (True, True)
    """

    stores: int = 4
    sales_per_hour: float = 1000.0
    items: int = 20_000
    skew: float = 0.6
    start_hour: float = 10.0
    hours: float = 4.0
    window_ms: float = 3_600_000.0

    def profile(self, hour: np.ndarray) -> np.ndarray:
        """The shopping day's relative sales rate at each hour (0 while the store is shut)."""
        bumps = 0.6 * np.exp(-(((hour - 12.0) / 1.2) ** 2)) + np.exp(-(((hour - 17.5) / 2.0) ** 2))
        return np.where((hour >= 8.0) & (hour < 22.0), 0.3 + bumps, 0.0)

    def streams(self, rng: np.random.Generator) -> pd.DataFrame:
        """One stream of sold items per store, as multi-way join tuples in arrival order."""
        grid = np.linspace(self.start_hour, self.start_hour + self.hours, 1025)
        weight = self.profile(grid)
        # sales_per_hour is the open day's mean: the replayed hours' share follows the profile
        day_mean = float(self.profile(np.linspace(8.0, 22.0, 1025)).mean())
        cdf = np.concatenate([[0.0], np.cumsum((weight[1:] + weight[:-1]) / 2)])
        expected = self.sales_per_hour * cdf[-1] * (grid[1] - grid[0]) / day_mean
        popularity = 1.0 / np.arange(1, self.items + 1) ** self.skew
        popularity /= popularity.sum()
        stamps, values = [], []
        for _ in range(self.stores):
            n = int(rng.poisson(expected))
            # times by inverting the day's cumulative profile: a Poisson process of that rate
            hour = np.interp(np.sort(rng.uniform(0.0, cdf[-1], n)), cdf, grid)
            stamps.append(hour * 3_600_000.0)
            values.append(rng.choice(self.items, size=n, p=popularity))
        return _wjoin_rows(stamps, values)


@dataclass(frozen=True)
class DeploymentReplay:
    """The (simulated) lab's readings as two out-of-order event streams (west, east motes).

    ``histograms`` carry every mote's learned timing template (PTJoin); ``intervals`` the same
    supports as uniform intervals (the interval timing paper's model).  ``rate`` is the
    arrival rate in events per second of lab time.
    """

    events: Events
    histograms: tuple[StreamSpec, StreamSpec]
    intervals: tuple[StreamSpec, StreamSpec]
    rate: float


def deployment_replay(
    hours: float = 1.0,
    folds: int = 1,
    max_delay: tuple[float, float] = (400.0, 600.0),
    seed: int = 0,
) -> DeploymentReplay:
    """``hours`` of the simulated deployment replayed as the west (motes 1-27) and east
    (28-54) streams, with per-mote templates learned from the readings (PTJoin Example 3).

    ``folds`` > 1 overlays that many consecutive ``hours``-long stretches onto one: a lab with
    ``folds`` times the motes, so ``folds`` times the arrival rate at the same timing.

    >>> rep = deployment_replay(hours=0.05, folds=2)
    >>> [s.max_delay for s in rep.histograms], bool(rep.rate > 0)
    ([400.0, 600.0], True)
    """
    if folds < 1:
        raise ValueError(f"folds = {folds!r} must be at least 1")
    readings = simulate_deployment(days=hours * folds / 24.0, seed=seed)
    templates = learn_templates(readings)  # before folding: folds shift times off schedule
    span = pd.Timedelta(hours=hours)
    layer = (readings["time"] - readings["time"].min()) // span
    folded = readings[layer < folds].assign(time=readings["time"] - layer * span)
    replayed = replayed_streams(
        folded, days=None, max_delay_ms=max_delay, split=WEST_EAST, templates=templates, seed=seed
    )
    a, b = replayed.specs()
    rate = len(replayed.events) / (hours * 3600.0)
    return DeploymentReplay(replayed.events, (a, b), (as_intervals(a), as_intervals(b)), rate)


def as_intervals(spec: StreamSpec) -> StreamSpec:
    """The same template supports as uniform intervals: the interval timing paper's model
    (Section 4.1) of the same stream.

    >>> from workbench.paper_examples import example3_templates
    >>> as_intervals(StreamSpec(example3_templates(), 50.0)).templates[0].buckets()
    [(0.0, 40.0, 1.0)]
    """
    return StreamSpec(spec.templates.intervals(), spec.max_delay)
