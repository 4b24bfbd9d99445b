"""Benchmarks: commands that print figures (``workbench bench ...``), never timed tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import (
    AtomicCosts,
    Dcq,
    Weights,
    cost_grid,
    measure_atomic_costs,
    select,
)
from workbench.data.replay import learn_templates, readings_to_events
from workbench.data.replica import SOURCE_LABEL, simulate_deployment
from workbench.data.synthetic import coalescing_stream, synthetic_events
from workbench.events import Events, sort_pairs
from workbench.operators import (
    BandJoin,
    Counters,
    EagerCorrelation,
    LazyCorrelation,
    LazyLookupCorrelation,
    PTJoin,
    SimpleCorrelation,
    SSortCorrelation,
    StreamSpec,
    TwoStreamJoin,
    WindowConstraints,
)
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiWayJoin
from workbench.stime import StimeTable, stime, stime_table
from workbench.timestamps import HistogramTimestamp, TemplateSet, random_templates

__all__ = [
    "PAPER_LIKE_COSTS",
    "DeploymentReplay",
    "JoinProfile",
    "bench_coalesce",
    "bench_interval",
    "bench_ptjoin",
    "bench_stime",
    "bench_wjoin",
    "coalesce_deployment",
    "cost_surface",
    "deployment_replay",
    "join_table",
    "profile_join",
    "response_curves",
    "table5_cps",
    "table5_selection",
    "wjoin_capacity_sweep",
    "example5_workload",
    "wjoin_response",
    "wjoin_variants",
]


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_stime(
    templates: int = 500,
    buckets: int = 10,
    max_length: float = 1000.0,
    delta: float = 0.8,
    sample: int = 200,
    seed: int = 0,
) -> str:
    """Time the vectorised stime table against the scalar binary search (PTJoin Example 5 scale).

    Returns the report; the figures come from one run, so the ratios compare like with like.
    """
    rng = np.random.default_rng(seed)
    ha = random_templates(rng, templates, buckets, max_length, name="A")
    hb = random_templates(rng, templates, buckets, max_length, name="B")
    pairs = templates * templates
    table, t_cold = _timed(lambda: stime_table(ha, hb, delta))
    t_table = min(_timed(lambda: stime_table(ha, hb, delta))[1] for _ in range(2))
    _, t_build = _timed(lambda: StimeTable.build(ha, hb, delta))
    u = rng.integers(0, templates, size=sample)
    v = rng.integers(0, templates, size=sample)
    scalar, t_scalar = _timed(
        lambda: np.array([stime(ha[i], hb[j], delta) for i, j in zip(u, v, strict=True)])
    )
    per_pair_scalar = t_scalar / sample
    per_pair_table = t_table / pairs
    err = float(np.abs(np.asarray(table)[u, v] - np.asarray(scalar)).max())
    return "\n".join(
        [
            f"stime tables: {templates} x {templates} random templates, {buckets} buckets, "
            f"lengths <= {max_length:g} ms, delta = {delta:g} (seed {seed})",
            f"  vectorised table, one delta:         {t_table:8.3f} s  "
            f"{pairs / t_table:12,.0f} pairs/s  (best of 2 after a cold run of {t_cold:.3f} s)",
            f"  StimeTable.build (delta, 1 - delta): {t_build:8.3f} s  "
            f"{2 * pairs / t_build:12,.0f} pairs/s",
            f"  scalar stime (rationals), {sample} pairs:     {t_scalar:8.3f} s  "
            f"{sample / t_scalar:12,.0f} pairs/s",
            "  speed-up of the table over the scalar loop: "
            f"{per_pair_scalar / per_pair_table:,.0f}x",
            f"  max |table - scalar| on the sample: {err:.2e} ms",
        ]
    )


@dataclass(frozen=True)
class JoinProfile:
    """One operator's replay of an event log: what every call cost and what it emitted.

    Call k is the push of event k (the last call is the flush).  ``service_s`` is its measured
    service time, ``results`` how many pairs it emitted and ``later_ms`` the sum, over those
    pairs, of the arrival time of the pair's later event.  ``pairs`` holds every emitted
    ``(a_id, b_id)``, sorted, so profiles of different operators can be compared.
    """

    arrival_ms: np.ndarray
    service_s: np.ndarray
    results: np.ndarray
    later_ms: np.ndarray
    pairs: np.ndarray
    counters: Counters

    def response_ms(self, speed: float = 1.0) -> float:
        """Mean response time of a pair with arrivals ``speed`` times faster (one FCFS server).

        The server starts call k at ``max(arrival_k, finish_{k-1})``; a pair's response time
        is the finish of the call that emitted it minus the arrival of its later event.
        ``speed`` compresses the arrival times and keeps the measured service times: exact when
        every time parameter of the join (templates, d, D, lazy waits) is compressed alike,
        since the operator then makes the same decisions with the same work.
        """
        service_ms = 1000.0 * self.service_s
        done = np.cumsum(service_ms)
        finish = done + np.maximum.accumulate(self.arrival_ms / speed - (done - service_ms))
        total = float(self.results.sum())
        waited = float((self.results * finish).sum() - self.later_ms.sum() / speed)
        return waited / max(total, 1.0)

    def summary(self, speed: float = 1.0) -> dict[str, float]:
        """Throughput, results, work per event and mean response time of the replay."""
        c = self.counters
        n = len(self.arrival_ms) - 1
        busy = float(self.service_s.sum())
        return {
            "events": n,
            "seconds": busy,
            "events_per_s": n / busy,
            "results": int(self.results.sum()),
            "prob_evals": c.prob_evals / n,
            "stime_lookups": c.stime_lookups / n,
            "reuses": c.lookup_reuses / n,
            "exact_evals": c.exact_evals,
            "response_ms": self.response_ms(speed),
            "late": c.late_events,
        }


def profile_join(op: TwoStreamJoin, events: Events) -> JoinProfile:
    """Push every event (then flush), timing each call (see :class:`JoinProfile`)."""
    arrival_of = [np.full(int(events.id.max()) + 1, np.nan) for _ in (0, 1)]
    for s in (0, 1):
        mine = events.stream == s
        arrival_of[s][events.id[mine]] = events.arrival[mine]
    clock = time.perf_counter
    rows = list(events.rows())
    n = len(rows)
    service, results, later = np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)
    a_parts, b_parts = [], []
    for k in range(n + 1):
        start = clock()
        m = op.push(*rows[k]) if k < n else op.flush()
        service[k] = clock() - start
        if len(m):
            results[k] = len(m)
            later[k] = float(np.maximum(arrival_of[0][m.a_ids], arrival_of[1][m.b_ids]).sum())
            a_parts.append(m.a_ids)
            b_parts.append(m.b_ids)
    pairs = np.stack(
        (
            np.concatenate([*a_parts, np.zeros(0, np.int64)]),
            np.concatenate([*b_parts, np.zeros(0, np.int64)]),
        ),
        axis=1,
    )
    pairs = sort_pairs(pairs)
    arrivals = np.append(events.arrival, events.arrival[-1] if n else 0.0)
    return JoinProfile(arrivals, service, results, later, pairs, op.counters)


def join_table(profiles: Mapping[str, JoinProfile]) -> pd.DataFrame:
    """One row per operator: throughput, results, work per event, mean response time, and
    whether its pairs equal the first operator's."""
    first = next(iter(profiles.values())).pairs
    rows = {
        name: {**p.summary(), "same_pairs": bool(np.array_equal(p.pairs, first))}
        for name, p in profiles.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def response_curves(
    profiles: Mapping[str, JoinProfile], base_rate: float, speeds: Sequence[float]
) -> pd.DataFrame:
    """Throughput and mean response time of each operator at ``base_rate * speed`` events/s.

    Throughput is what one server sustains: the arrival rate while the operator keeps up,
    its capacity (events per busy second) beyond.
    """
    rows = []
    for name, p in profiles.items():
        capacity = p.summary()["events_per_s"]
        for speed in speeds:
            rate = base_rate * speed
            rows.append(
                {
                    "algorithm": name,
                    "arrival_rate": rate,
                    "throughput": min(rate, capacity),
                    "response_ms": p.response_ms(speed),
                }
            )
    return pd.DataFrame(rows)


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
    (28-54) streams, with per-mote templates learned from the readings.

    ``folds`` > 1 overlays that many consecutive ``hours``-long stretches onto one: a lab with
    ``folds`` times the motes, so ``folds`` times the arrival rate at the same timing.
    """
    if folds < 1:
        raise ValueError(f"folds = {folds!r} must be at least 1")
    readings = simulate_deployment(days=hours * folds / 24.0, seed=seed)
    templates = learn_templates(readings)
    span = pd.Timedelta(hours=hours)
    layer = (readings["time"] - readings["time"].min()) // span
    folded = readings[layer < folds].assign(time=readings["time"] - layer * span)
    streams = [[m for m in motes if m in templates] for motes in (range(1, 28), range(28, 55))]
    events, sets, _ = readings_to_events(folded, streams, templates, max_delay, seed=seed)
    uniform = [
        TemplateSet(s.name, tuple(HistogramTimestamp.uniform(0.0, t.length) for t in s))
        for s in sets
    ]
    return DeploymentReplay(
        events,
        (StreamSpec(sets[0], max_delay[0]), StreamSpec(sets[1], max_delay[1])),
        (StreamSpec(uniform[0], max_delay[0]), StreamSpec(uniform[1], max_delay[1])),
        len(events) / (hours * 3600.0),
    )


def _table(rows: list[tuple[str, dict[str, float]]], columns: list[tuple[str, str, str]]) -> str:
    widths = [max(len(title), 11) + 2 for title, _, _ in columns]
    cols = list(zip(columns, widths, strict=True))
    lines = [f"  {'':14s}" + "".join(f"{title:>{w}s}" for (title, _, _), w in cols)]
    for name, r in rows:
        cells = "".join(f"{format(r[key], fmt):>{w}s}" for (_, key, fmt), w in cols)
        lines.append(f"  {name:14s}{cells}")
    return "\n".join(lines)


def example5_workload(
    events_per_stream: int = 100_000,
    templates: int = 500,
    buckets: int = 10,
    max_length: float = 1000.0,
    mean_interarrival: float = 10.0,
    max_delay: float = 500.0,
    seed: int = 0,
) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
    """The PTJoin benchmarks' workload (Example 5 scale): random templates per stream and
    Poisson streams delayed up to D, out of order."""
    rng = np.random.default_rng(seed)
    ha = random_templates(rng, templates, buckets, max_length, name="A")
    hb = random_templates(rng, templates, buckets, max_length, name="B")
    events = synthetic_events(
        rng, events_per_stream, (templates, templates), mean_interarrival, (max_delay, max_delay)
    )
    return (StreamSpec(ha, max_delay), StreamSpec(hb, max_delay)), events


def bench_ptjoin(
    events_per_stream: int = 100_000,
    naive_prefix: int = 4_000,
    templates: int = 500,
    buckets: int = 10,
    max_length: float = 1000.0,
    mean_interarrival: float = 10.0,
    max_delay: float = 500.0,
    d: float = 1500.0,
    delta: float = 0.8,
    seed: int = 0,
) -> str:
    """PTJoin naive / loose / tight against the deterministic band join (PTJoin Section 3)."""
    streams, events = example5_workload(
        events_per_stream, templates, buckets, max_length, mean_interarrival, max_delay, seed
    )
    prefix = events.head(naive_prefix)
    tight_op, t_install = _timed(lambda: PTJoin(streams=streams, d=d, threshold=delta))
    naive = PTJoin(streams=streams, d=d, threshold=delta, mode="naive")
    loose = PTJoin(streams=streams, d=d, threshold=delta, mode="loose")
    runs = [
        ("naive (prefix)", profile_join(naive, prefix).summary()),
        ("tight (prefix)", profile_join(tight_op, prefix).summary()),
        ("loose", profile_join(loose, events).summary()),
        ("tight", profile_join(PTJoin(streams=streams, d=d, threshold=delta), events).summary()),
        (
            "band floor",
            profile_join(BandJoin(streams=streams, d=d, threshold=delta), events).summary(),
        ),
    ]
    r = dict(runs)
    columns = [
        ("events", "events", ",.0f"),
        ("seconds", "seconds", ".2f"),
        ("events/s", "events_per_s", ",.0f"),
        ("results", "results", ",.0f"),
        ("prob evals/event", "prob_evals", ".1f"),
        ("stime lookups/event", "stime_lookups", ".1f"),
        ("rational evals", "exact_evals", ",.0f"),
    ]
    tests_loose = r["loose"]["prob_evals"]
    tests_tight = r["tight"]["prob_evals"] + r["tight"]["stime_lookups"]
    return "\n".join(
        [
            f"PTJoin: {events_per_stream:,} events per stream, {templates} templates x "
            f"{buckets} buckets (len <= {max_length:g} ms), mean inter-arrival "
            f"{mean_interarrival:g} ms, D = {max_delay:g} ms (out of order), d = {d:g} ms, "
            f"delta = {delta:g} (seed {seed})",
            f"  query installation (two stime tables): {t_install:.2f} s",
            _table(runs, columns),
            f"  tight / naive events/s on the same prefix: "
            f"{r['tight (prefix)']['events_per_s'] / r['naive (prefix)']['events_per_s']:.1f}x"
            "  (goal >= 50x)",
            f"  band floor / tight events/s: "
            f"{r['band floor']['events_per_s'] / r['tight']['events_per_s']:.2f}x  (goal <= 3x)",
            f"  pair tests per event, loose (probability) / tight (probability + stime): "
            f"{tests_loose:.1f} / {tests_tight:.1f} = {tests_loose / max(tests_tight, 1e-9):.1f}x"
            "  (goal >= 20x)",
            f"  certified probability evaluations per event, loose / tight: "
            f"{tests_loose:.1f} / {r['tight']['prob_evals']:.1f}",
        ]
    )


def bench_interval(
    events_per_stream: int = 100_000,
    templates: int = 20,
    max_length: float = 2.0,
    d: float = 2.5,
    ct: float = 0.8,
    max_delay: float = 5.0,
    rates: tuple[float, float] = (1.0, 0.02),
    max_pending: int = 500,
    max_wait: float = 1000.0,
    seed: int = 0,
) -> str:
    """The five interval timing correlation algorithms at a low and a high arrival rate."""
    rng = np.random.default_rng(seed)
    out = [
        f"Interval timing correlation: {events_per_stream:,} events per stream, {templates} "
        f"interval lengths <= {max_length:g} ms, d = {d:g} ms, ct = {ct:g}, D = {max_delay:g} "
        f"ms; lazy re-evaluates at {max_pending} unprocessed tuples or every {max_wait:g} ms "
        f"(seed {seed})"
    ]
    columns = [
        ("events/s", "events_per_s", ",.0f"),
        ("mean response ms", "response_ms", ",.2f"),
        ("results", "results", ",.0f"),
        ("prob evals/event", "prob_evals", ".1f"),
        ("reuses/event", "reuses", ".1f"),
    ]
    for rate in rates:
        lengths = rng.uniform(max_length / 10, max_length, templates)
        sets = [
            TemplateSet(name, tuple(HistogramTimestamp.uniform(0, x) for x in lengths))
            for name in "AB"
        ]
        streams = (StreamSpec(sets[0], max_delay), StreamSpec(sets[1], max_delay))
        events = synthetic_events(
            rng, events_per_stream, (templates, templates), rate, (max_delay, max_delay)
        )
        kw = {"streams": streams, "d": d, "threshold": ct}
        lazy_kw = {**kw, "max_pending": max_pending, "max_wait": max_wait}
        profiles = {
            "Simple": profile_join(SimpleCorrelation(**kw), events),
            "SSort": profile_join(SSortCorrelation(**kw), events),
            "Eager": profile_join(EagerCorrelation(**kw), events),
            "Lazy": profile_join(LazyCorrelation(**lazy_kw), events),
            "LazyWithLookup": profile_join(LazyLookupCorrelation(**lazy_kw), events),
        }
        runs = [(name, p.summary()) for name, p in profiles.items()]
        total_rate = 2000.0 / rate
        out.append(f"  mean inter-arrival {rate:g} ms per stream ({total_rate:,.0f} events/s in):")
        out.append(_table(runs, columns))
    return "\n".join(out)


def _wjoin_streams(
    rng: np.random.Generator, m: int, rate: float, duration_ms: float, keys: int
) -> list[tuple[float, int, int, int, float]]:
    """m synchronous integer streams with exponential gaps at aggregate ``rate`` tuples/s."""
    gap_ms = 1000.0 * m / rate
    per_stream = max(1, int(duration_ms / gap_ms))
    rows = []
    for s in range(m):
        ts = np.cumsum(rng.exponential(gap_ms, per_stream))
        values = rng.integers(0, keys, per_stream)
        rows.extend(
            (float(t), s, s * per_stream + k, int(v), float(t))
            for k, (t, v) in enumerate(zip(ts, values, strict=True))
        )
    rows.sort()
    return rows


def _drive_wjoin(
    op: MultiWayJoin, rows: list[tuple[float, int, int, int, float]], warm_ms: float = 0.0
) -> dict[str, float]:
    """Time every push; replay service times against arrivals (one server, FCFS).

    Capacity counts only tuples after ``warm_ms`` of stream time (buffers in steady state).
    """
    arrival_of = {row[2]: row[0] for row in rows}
    clock = time.perf_counter
    finish, busy, steady, results, response_sum = -np.inf, 0.0, 0, 0, 0.0
    t0 = rows[0][0] if rows else 0.0
    for k in range(len(rows) + 1):
        start = clock()
        if k < len(rows):
            arrival, s, i, v, ts = rows[k]
            out = op.push(s, i, v, ts, arrival)
        else:
            out = op.flush()
        service = clock() - start
        if k < len(rows) and rows[k][0] - t0 >= warm_ms:
            busy += service
            steady += 1
        finish = max(rows[min(k, len(rows) - 1)][0], finish) + 1000.0 * service
        if len(out):
            later = np.array([max(arrival_of[i] for i in row) for row in out.ids.tolist()])
            results += len(out)
            response_sum += float((finish - later).sum())
    return {
        "capacity": steady / busy if busy else float("inf"),
        "response_ms": response_sum / max(results, 1),
        "results": results,
        "comparisons": op.counters.comparisons / max(len(rows), 1),
    }


def wjoin_capacity_sweep(
    cls: type[MultiWayJoin],
    m: int,
    implementation: str,
    rng: np.random.Generator,
    window_ms: float = 500.0,
    keys: int = 10_000,
    start_rate: float = 250.0,
    max_rate: float = 64_000.0,
    windows_per_run: float = 3.0,
) -> pd.DataFrame:
    """Capacity of an m-way uniform-clique join at doubling aggregate arrival rates.

    The rate doubles from ``start_rate`` until the measured capacity (tuples/s of processing,
    after one window of warm-up) no longer covers it (that rate is the last row) or
    ``max_rate`` is passed.  Columns: ``rate``, ``capacity``, ``throughput`` (what the join
    sustains: the rate while it keeps up, its capacity beyond).
    """
    wc = WindowConstraints.uniform(m, window_ms)
    rows, rate = [], start_rate
    while rate <= max_rate:
        stream = _wjoin_streams(rng, m, rate, windows_per_run * window_ms, keys)
        op = cls(constraints=wc, max_delay=[0.0] * m, implementation=implementation)
        cap = _drive_wjoin(op, stream, warm_ms=window_ms)["capacity"]
        rows.append({"rate": rate, "capacity": cap, "throughput": min(rate, cap)})
        if cap < rate:
            break
        rate *= 2
    return pd.DataFrame(rows)


def wjoin_response(
    rates: Sequence[float],
    rng: np.random.Generator,
    m: int = 3,
    window_ms: float = 500.0,
    keys: int = 1000,
    windows: float = 12.0,
) -> pd.DataFrame:
    """Mean response time (arrival of a result's last tuple to its output) of hash BEW and FEW
    on an m-way uniform clique at each aggregate arrival rate."""
    wc = WindowConstraints.uniform(m, window_ms)
    rows = []
    for cls in (BEWJoin, FEWJoin):
        for rate in rates:
            stream = _wjoin_streams(rng, m, rate, windows * window_ms, keys)
            op = cls(constraints=wc, max_delay=[0.0] * m, implementation="hash")
            r = _drive_wjoin(op, stream)
            rows.append({"algorithm": cls.__name__, "rate": rate, "response_ms": r["response_ms"]})
    return pd.DataFrame(rows)


def wjoin_variants(
    rng: np.random.Generator,
    rate: float = 2000.0,
    window_ms: float = 500.0,
    windows: float = 3.0,
    keys: int = 200,
) -> pd.DataFrame:
    """GCA vs LCA on a 4-way non-uniform clique and conservative vs modified BEW on a 4-way
    path (nested loop): capacity, comparisons per tuple and results, one stream for all."""
    short, long_ = window_ms / 5, window_ms
    # S0 is close to every stream; S3 may lag S1 and S2 by the long window
    nonuniform = np.full((4, 4), short)
    nonuniform[3, 1:3] = nonuniform[1:3, 3] = long_
    cases = [
        ("non-uniform", WindowConstraints(nonuniform), FEWJoin, "gca"),
        ("non-uniform", WindowConstraints(nonuniform), FEWJoin, "lca"),
        ("non-uniform", WindowConstraints(nonuniform), BEWJoin, "gca"),
        ("non-uniform", WindowConstraints(nonuniform), BEWJoin, "lca"),
        ("path", WindowConstraints.path([short] * 3), BEWJoin, "gca"),
        ("path", WindowConstraints.path([short] * 3), BEWJoin, "modified"),
    ]
    stream = _wjoin_streams(rng, 4, rate, windows * window_ms, keys)
    rows = []
    for form, wc, cls, strategy in cases:
        op = cls(constraints=wc, max_delay=[0.0] * 4, strategy=strategy)
        r = _drive_wjoin(op, stream, warm_ms=window_ms)
        rows.append(
            {
                "form": form,
                "algorithm": cls.__name__,
                "strategy": "conservative (gca)"
                if form == "path" and strategy == "gca"
                else strategy,
                "capacity": r["capacity"],
                "comparisons": r["comparisons"],
                "results": r["results"],
            }
        )
    return pd.DataFrame(rows)


def bench_wjoin(
    ways: tuple[int, ...] = (2, 3, 4, 5),
    window_ms: float = 500.0,
    keys: int = 10_000,
    start_rate: float = 250.0,
    max_rate: float = 64_000.0,
    windows_per_run: float = 3.0,
    seed: int = 0,
) -> str:
    """BEW vs FEW (nested and hash), GCA vs LCA, conservative vs modified BEW (W-join paper).

    For each join the aggregate arrival rate doubles from ``start_rate`` until the measured
    capacity (tuples/s of processing, after one window of warm-up) no longer covers it.
    """
    rng = np.random.default_rng(seed)
    lines = [
        f"W-join: {len(ways)} uniform clique sizes, window {window_ms:g} ms, synthetic integer "
        f"streams (keys 0..{keys - 1}, equality), exponential gaps, {windows_per_run:g} windows "
        f"of stream time per run (seed {seed})",
        "  capacity (tuples/s processed in steady state) at doubling aggregate arrival rates;",
        "  max sustainable = the highest rate whose capacity still covers it",
    ]
    for impl in ("nested", "hash"):
        lines.append(f"  {impl}:")
        for m in ways:
            for cls in (BEWJoin, FEWJoin):
                sweep = wjoin_capacity_sweep(
                    cls, m, impl, rng, window_ms, keys, start_rate, max_rate, windows_per_run
                )
                cells = [
                    f"{r / 1000:g}k:{c / 1000:.1f}k"
                    for r, c in zip(sweep["rate"], sweep["capacity"], strict=True)
                ]
                sustained = sweep["rate"][sweep["capacity"] >= sweep["rate"]]
                best = float(sustained.max()) if len(sustained) else None
                top = "none" if best is None else f"{best:,.0f}/s"
                if best is not None and best * 2 > max_rate:
                    top = f">= {best:,.0f}/s"
                lines.append(
                    f"    {m}-way {cls.__name__:8s} max sustainable {top:>12s}   "
                    f"(rate:capacity) {'  '.join(cells)}"
                )
    m, rates, response_keys = 3, (250.0, 1000.0, 4000.0, 16000.0, 32000.0), 1000
    lines.append(
        f"  hash, {m}-way, keys 0..{response_keys - 1}, {4 * windows_per_run:g} windows per "
        "run: mean response time in ms (arrival of a result's last tuple to its output)"
    )
    lines.append("  " + " " * 10 + "".join(f"{r:>11,.0f}/s" for r in rates))
    response = wjoin_response(rates, rng, m, window_ms, response_keys, 4 * windows_per_run)
    for name, frame in response.groupby("algorithm", sort=False):
        lines.append(f"  {name:10s}" + "".join(f"{c:13,.1f}" for c in frame["response_ms"]))
    rate, short, long_ = 2000.0, window_ms / 5, window_ms
    lines.append(
        f"  4-way non-uniform clique ({short:g} ms, {long_:g} ms between S3 and S1, S2) and "
        f"4-way path ({short:g} ms per edge), nested loop, {rate:,.0f} tuples/s, keys 0..199:"
    )
    for r in wjoin_variants(rng, rate, window_ms, windows_per_run).itertuples():
        lines.append(
            f"    {r.form:12s} {r.algorithm:8s} {r.strategy:18s} capacity {r.capacity:9,.0f}/s  "
            f"comparisons/tuple {r.comparisons:8.1f}  results {r.results:,}"
        )
    return "\n".join(lines)


def _coalesce_rates(
    rows: list[tuple[float, int, int]], window: Window, equivalence: Equivalence
) -> tuple[float, float, float, float]:
    """Update and scan throughput (tuples/s) of eager and lazy extents on one stream."""
    out = []
    for extent_cls in (EagerExtent, LazyExtent):
        extent = extent_cls(window, equivalence)
        push = extent.push
        start = time.perf_counter()
        for ts, value, group in rows:
            push(ts, value, group)
        update = len(rows) / (time.perf_counter() - start)
        scans = 20
        start = time.perf_counter()
        for _ in range(scans):
            extent.view()
        scan = scans * len(extent) / (time.perf_counter() - start)
        out += [update, scan]
    return out[0], out[1], out[2], out[3]


def bench_coalesce(
    tuples: int = 200_000,
    grid_tuples: int = 200_000,
    window_tuples: int = 1000,
    deployment_readings: int = 2_300_000,
    seed: int = 0,
) -> str:
    """Eager vs lazy coalescing: throughput over cp x oop, Figure 3's surfaces, the deployment."""
    rng = np.random.default_rng(seed)
    window = Window("tuples", window_tuples)
    eq = Equivalence()
    lines = [
        f"Coalescing: synthetic streams (3 time-varying, 3 time-invariant attributes with "
        f"3/5/7 groups), coalescing a1 grouped by g1, tuple-based window of {window_tuples:,}"
    ]
    s = coalescing_stream(rng, tuples, cp=0.5, oop=0.1)
    rows = list(zip(s["ts"].tolist(), s["a1"].tolist(), s["g1"].tolist(), strict=True))
    eu, es, lu, ls = _coalesce_rates(rows, window, eq)
    lines.append(
        f"  cp = 0.5, oop = 0.1, {tuples:,} tuples: eager update {eu:,.0f} tuples/s "
        f"(goal >= 300,000), lazy update {lu:,.0f}; scan eager {es:,.0f}, lazy {ls:,.0f} "
        "window tuples/s"
    )
    grid = [round(0.1 * i, 1) for i in range(11)]
    update_rows, scan_rows = [], []
    for oop in grid:
        updates, scans = [], []
        for cp in grid:
            s = coalescing_stream(rng, grid_tuples, cp=cp, oop=oop)
            rows = list(zip(s["ts"].tolist(), s["a1"].tolist(), s["g1"].tolist(), strict=True))
            eu, es, lu, ls = _coalesce_rates(rows, window, eq)
            updates.append(f"{eu / 1000:5.0f}/{lu / 1000:<5.0f}")
            scans.append(f"{es / 1000:5.0f}/{ls / 1000:<5.0f}")
        update_rows.append(f"  {oop:5.1f}  " + "".join(f"{c:>11}" for c in updates))
        scan_rows.append(f"  {oop:5.1f}  " + "".join(f"{c:>11}" for c in scans))
    header = "  oop\\cp " + "".join(f"{cp:>11}" for cp in grid)
    for what, table_rows in (("update", update_rows), ("scan", scan_rows)):
        lines.append(
            f"  {what} throughput, eager / lazy (k tuples/s), {grid_tuples:,} tuples per cell"
        )
        lines.append(header)
        lines.extend(table_rows)
    atomic = measure_atomic_costs()
    lines.append(
        "  measured atomic costs (us): "
        + ", ".join(f"{k} {1e6 * v:.2f}" for k, v in vars(atomic).items())
    )
    for weights in (Weights(1, 1, 1), Weights(1, 50, 1), Weights(1, 100, 1)):
        lines.append(
            f"  Figure 3, weights <{weights.memory:g},{weights.update:g},{weights.scan:g}>: "
            "cheaper scheme (E eager, L lazy), rows oop 0..1, columns cp 0..1"
        )
        surface = cost_surface(atomic, weights, grid, 10 * window_tuples, window_tuples)
        for oop, frame in surface.groupby("oop", sort=False):
            marks = " ".join(
                "E" if e <= lz else "L" for e, lz in zip(frame["eager"], frame["lazy"], strict=True)
            )
            lines.append(f"    oop {oop:3.1f}  {marks}")
    lines.append(
        "  Table 5 on the deployment (three days of readings, weights <1,1,2>, window "
        "10,000 tuples), with the measured atomic costs:"
    )
    cps = table5_cps(simulate_deployment(days=3.0, seed=seed))
    lines += _table5_lines(table5_selection(cps, atomic))
    lines.append("  ... and with paper-like costs (coalescing during a scan costs a read):")
    lines += _table5_lines(table5_selection(cps, PAPER_LIKE_COSTS))
    days = deployment_readings / (54 * 86400 / 31.0 * 0.5)
    start = time.perf_counter()
    table = simulate_deployment(days=days, seed=seed)
    simulated = time.perf_counter() - start
    table = table.head(deployment_readings)
    run = coalesce_deployment(table, schemes=("eager",)).loc["eager"]
    lines.append(
        f"  deployment ({SOURCE_LABEL}, {run['readings']:,} readings, {days:.1f} days, made in "
        f"{simulated:.1f} s): eager temperature coalescing per mote (0.5 C quanta, 24 h time "
        f"window) in {run['seconds']:.1f} s = {run['readings_per_s']:,.0f} readings/s (goal < "
        f"20 s); {run['stored']:,} coalesced tuples hold the last day's {run['window']:,} "
        "readings"
    )
    return "\n".join(lines)


PAPER_LIKE_COSTS = AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1)
"""Atomic costs in the paper's proportions: coalescing during a scan costs a read."""


def cost_surface(
    atomic: AtomicCosts,
    weights: Weights,
    grid: Sequence[float],
    k: int = 10_000,
    w: int = 1000,
) -> pd.DataFrame:
    """Weighted normalised cost of eager and lazy coalescing of one query over cp x oop
    (the paper's Figures 3 and 4): columns ``oop``, ``cp``, ``eager``, ``lazy``."""
    eager, lazy = cost_grid(grid, k, w, atomic, weights)
    oop, cp = np.meshgrid(grid, grid, indexing="ij")
    return pd.DataFrame(
        {"oop": oop.ravel(), "cp": cp.ravel(), "eager": eager.ravel(), "lazy": lazy.ravel()}
    )


def coalesce_deployment(
    readings: pd.DataFrame,
    quantum: float = 0.5,
    window_s: float = 24 * 3600.0,
    schemes: Sequence[str] = ("eager", "lazy"),
) -> pd.DataFrame:
    """Coalesce every mote's temperature (quantised, time-based window) eagerly and lazily.

    One row per scheme: ``readings`` pushed, ``seconds`` and ``readings_per_s`` of the pushes,
    ``stored`` tuples held (raw for lazy, coalesced for eager), ``window`` raw readings in the
    final window, ``view`` coalesced tuples in its view, ``same_view`` whether the view equals
    the first scheme's.
    """
    seconds = (readings["time"].astype("int64") // 10**3).to_numpy() / 1e6
    data = list(
        zip(
            seconds.tolist(),
            readings["temperature"].tolist(),
            readings["mote"].tolist(),
            strict=True,
        )
    )
    kinds = {"eager": EagerExtent, "lazy": LazyExtent}
    rows, first = {}, None
    for scheme in schemes:
        extent = kinds[scheme](Window("time", window_s), Equivalence("quantized", quantum=quantum))
        push = extent.push
        start = time.perf_counter()
        for ts, value, mote in data:
            push(ts, value, mote)
        took = time.perf_counter() - start
        view = [(c.ts, c.te, c.group, c.value, c.count) for c in extent.view()]
        first = view if first is None else first
        rows[scheme] = {
            "readings": len(data),
            "seconds": took,
            "readings_per_s": len(data) / took,
            "stored": extent.stored if isinstance(extent, EagerExtent) else len(extent),
            "window": len(extent),
            "view": len(view),
            "same_view": view == first,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


_TABLE5_DCQS = [
    ("Q1", ("humidity",), ("epoch",)),
    ("Q2", ("temperature",), ("mote",)),
    ("Q3", ("voltage",), ("light_band",)),
    ("Q4", ("humidity", "temperature"), ("epoch", "mote")),
    ("Q5", ("temperature", "voltage"), ("mote", "light_band")),
    ("Q6", ("humidity", "temperature", "voltage"), ("epoch", "mote", "light_band")),
]
_TABLE5_CASES = {  # the paper's Table 5: target cps and its optimal selection
    "Case 1": ([0.1] * 6, set()),
    "Case 2": ([0.8] * 6, {"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"}),
    "Case 3": ([0.5] * 3 + [0.1] * 3, {"Q1", "Q2", "Q3"}),
    "Case 4": ([0.8] * 3 + [0.1] * 3, {"Q1", "Q2", "Q3"}),
}


def _cp(table: pd.DataFrame, values: tuple[str, ...], groups: tuple[str, ...], q: float) -> float:
    """Share of readings that coalesce with their group's previous reading, values in q-bands
    of each attribute's standard deviation."""
    bands = pd.DataFrame({v: np.floor(table[v] / (q * table[v].std())) for v in values})
    previous = bands.groupby([table[g] for g in groups], sort=False).shift(1)
    return float((bands == previous).all(axis=1).mean())


def _quantum_for(
    table: pd.DataFrame, values: tuple, groups: tuple, target: float, iterations: int
) -> tuple:
    lo, hi = 1e-4, 1e3
    for _ in range(iterations):  # bisection in log space: cp grows with the quantum
        mid = float(np.sqrt(lo * hi))
        if _cp(table, values, groups, mid) < target:
            lo = mid
        else:
            hi = mid
    return hi, _cp(table, values, groups, hi)


def table5_cps(readings: pd.DataFrame, iterations: int = 40) -> pd.DataFrame:
    """The coalescing probability each of Table 5's queries reaches on deployment readings.

    For every case and query, the quantum (in standard deviations of each attribute) is found
    by ``iterations`` bisection steps to reach the case's target cp.  Columns: ``case``,
    ``query``, ``target``, ``cp``, ``tuples`` (readings with every measure present).
    """
    table = readings.dropna(subset=["humidity", "temperature", "voltage", "light"]).copy()
    table["light_band"] = (table["light"] // 100).astype(int)  # a few constant light levels
    reached: dict[tuple, float] = {}  # the same query and target give the same cp
    rows = []
    for case, (targets, _) in _TABLE5_CASES.items():
        for (name, values, groups), target in zip(_TABLE5_DCQS, targets, strict=True):
            if (name, target) not in reached:
                reached[name, target] = _quantum_for(table, values, groups, target, iterations)[1]
            rows.append(
                {
                    "case": case,
                    "query": name,
                    "target": target,
                    "cp": reached[name, target],
                    "tuples": len(table),
                }
            )
    return pd.DataFrame(rows)


def table5_selection(cps: pd.DataFrame, atomic: AtomicCosts, window: int = 10_000) -> pd.DataFrame:
    """Theorem 1's selection for each Table 5 case (weights <1,1,2>, in-order data: oop 0),
    beside the paper's: columns ``case``, ``cp``, ``eager``, ``paper``, ``matches``."""
    rows = []
    for case, frame in cps.groupby("case", sort=False):
        dcqs = [Dcq(q, cp, 0.0) for q, cp in zip(frame["query"], frame["cp"], strict=True)]
        tuples = int(frame["tuples"].iloc[0])
        chosen = sorted(select(dcqs, tuples, window, atomic, Weights(1, 1, 2)).eager)
        paper = sorted(_TABLE5_CASES[case][1])
        rows.append(
            {
                "case": case,
                "cp": ", ".join(f"{c:.2f}" for c in frame["cp"]),
                "eager": chosen,
                "paper": paper,
                "matches": chosen == paper,
            }
        )
    return pd.DataFrame(rows)


def _table5_lines(selection: pd.DataFrame) -> list[str]:
    return [
        f"    {r.case}: cp reached {r.cp}; eager on {r.eager or 'none'} "
        f"({'matches' if r.matches else 'differs from'} the paper: {r.paper or 'none'})"
        for r in selection.itertuples()
    ]
