"""Benchmarks: commands that print figures (``workbench bench ...``), never timed tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import (
    AtomicCosts,
    Dcq,
    Weights,
    costs,
    measure_atomic_costs,
    select,
)
from workbench.data.replica import SOURCE_LABEL, simulate_deployment
from workbench.data.synthetic import coalescing_stream, synthetic_events
from workbench.events import Events
from workbench.operators import (
    BandJoin,
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

__all__ = ["bench_coalesce", "bench_interval", "bench_ptjoin", "bench_stime", "bench_wjoin"]


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
            f"  scalar binary search, {sample} pairs:     {t_scalar:8.3f} s  "
            f"{sample / t_scalar:12,.0f} pairs/s",
            "  speed-up of the table over the scalar loop: "
            f"{per_pair_scalar / per_pair_table:,.0f}x",
            f"  max |table - scalar| on the sample: {err:.2e} ms",
        ]
    )


def _drive(op: TwoStreamJoin, events: Events) -> dict[str, float]:
    """Push every event (then flush), timing each call; simulate a single-server queue.

    Each call's measured service time is replayed against the events' arrival times: the
    server starts a call at ``max(arrival, previous finish)``.  A pair's response time is the
    finish of the call that emitted it minus the arrival of its later event.
    """
    arrival_of = [np.full(int(events.id.max()) + 1, np.nan) for _ in (0, 1)]
    for s in (0, 1):
        mine = events.stream == s
        arrival_of[s][events.id[mine]] = events.arrival[mine]
    finish, busy, results, response_sum = -np.inf, 0.0, 0, 0.0
    clock = time.perf_counter
    arrivals = events.arrival.tolist()
    rows = list(events.rows())
    for k in range(len(rows) + 1):
        start = clock()
        m = op.push(*rows[k]) if k < len(rows) else op.flush()
        service = clock() - start
        busy += service
        now = arrivals[min(k, len(rows) - 1)]
        finish = max(now, finish) + 1000.0 * service  # stream time is in ms
        if len(m):
            later = np.maximum(arrival_of[0][m.a_ids], arrival_of[1][m.b_ids])
            results += len(m)
            response_sum += float((finish - later).sum())
    c = op.counters
    n = len(events)
    return {
        "events": n,
        "seconds": busy,
        "events_per_s": n / busy,
        "results": results,
        "prob_evals": c.prob_evals / n,
        "stime_lookups": c.stime_lookups / n,
        "reuses": c.lookup_reuses / n,
        "response_ms": response_sum / max(results, 1),
        "late": c.late_events,
    }


def _table(rows: list[tuple[str, dict[str, float]]], columns: list[tuple[str, str, str]]) -> str:
    widths = [max(len(title), 11) + 2 for title, _, _ in columns]
    cols = list(zip(columns, widths, strict=True))
    lines = [f"  {'':14s}" + "".join(f"{title:>{w}s}" for (title, _, _), w in cols)]
    for name, r in rows:
        cells = "".join(f"{format(r[key], fmt):>{w}s}" for (_, key, fmt), w in cols)
        lines.append(f"  {name:14s}{cells}")
    return "\n".join(lines)


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
    rng = np.random.default_rng(seed)
    ha = random_templates(rng, templates, buckets, max_length, name="A")
    hb = random_templates(rng, templates, buckets, max_length, name="B")
    streams = (StreamSpec(ha, max_delay), StreamSpec(hb, max_delay))
    events = synthetic_events(
        rng, events_per_stream, (templates, templates), mean_interarrival, (max_delay, max_delay)
    )
    prefix = events.head(naive_prefix)
    tight_op, t_install = _timed(lambda: PTJoin(streams=streams, d=d, threshold=delta))
    runs = [
        (
            "naive (prefix)",
            _drive(PTJoin(streams=streams, d=d, threshold=delta, mode="naive"), prefix),
        ),
        ("tight (prefix)", _drive(tight_op, prefix)),
        ("loose", _drive(PTJoin(streams=streams, d=d, threshold=delta, mode="loose"), events)),
        ("tight", _drive(PTJoin(streams=streams, d=d, threshold=delta), events)),
        ("band floor", _drive(BandJoin(streams=streams, d=d, threshold=delta), events)),
    ]
    r = dict(runs)
    columns = [
        ("events", "events", ",.0f"),
        ("seconds", "seconds", ".2f"),
        ("events/s", "events_per_s", ",.0f"),
        ("results", "results", ",.0f"),
        ("exact evals/event", "prob_evals", ".1f"),
        ("stime lookups/event", "stime_lookups", ".1f"),
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
            f"  pair tests per event, loose (exact) / tight (exact + stime): "
            f"{tests_loose:.1f} / {tests_tight:.1f} = {tests_loose / max(tests_tight, 1e-9):.1f}x"
            "  (goal >= 20x)",
            f"  exact probability evaluations per event, loose / tight: "
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
        runs = [
            ("Simple", _drive(SimpleCorrelation(**kw), events)),
            ("SSort", _drive(SSortCorrelation(**kw), events)),
            ("Eager", _drive(EagerCorrelation(**kw), events)),
            ("Lazy", _drive(LazyCorrelation(**lazy_kw), events)),
            ("LazyWithLookup", _drive(LazyLookupCorrelation(**lazy_kw), events)),
        ]
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
    duration = windows_per_run * window_ms
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
            wc = WindowConstraints.uniform(m, window_ms)
            for cls in (BEWJoin, FEWJoin):
                rate, cells, best = start_rate, [], None
                while rate <= max_rate:
                    rows = _wjoin_streams(rng, m, rate, duration, keys)
                    op = cls(constraints=wc, max_delay=[0.0] * m, implementation=impl)
                    cap = _drive_wjoin(op, rows, warm_ms=window_ms)["capacity"]
                    cells.append(f"{rate / 1000:g}k:{cap / 1000:.1f}k")
                    if cap < rate:
                        break
                    best = rate
                    rate *= 2
                top = "none" if best is None else f"{best:,.0f}/s"
                if best is not None and best * 2 > max_rate:
                    top = f">= {best:,.0f}/s"
                lines.append(
                    f"    {m}-way {cls.__name__:8s} max sustainable {top:>12s}   "
                    f"(rate:capacity) {'  '.join(cells)}"
                )
    m, rates, response_keys = 3, (250.0, 1000.0, 4000.0, 16000.0, 32000.0), 1000
    wc = WindowConstraints.uniform(m, window_ms)
    lines.append(
        f"  hash, {m}-way, keys 0..{response_keys - 1}, {4 * windows_per_run:g} windows per "
        "run: mean response time in ms (arrival of a result's last tuple to its output)"
    )
    lines.append("  " + " " * 10 + "".join(f"{r:>11,.0f}/s" for r in rates))
    for cls in (BEWJoin, FEWJoin):
        cells = []
        for rate in rates:
            rows = _wjoin_streams(rng, m, rate, 4 * duration, response_keys)
            op = cls(constraints=wc, max_delay=[0.0] * m, implementation="hash")
            cells.append(_drive_wjoin(op, rows)["response_ms"])
        lines.append(f"  {cls.__name__:10s}" + "".join(f"{c:13,.1f}" for c in cells))
    rate, short, long_ = 2000.0, window_ms / 5, window_ms
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
    lines.append(
        f"  4-way non-uniform clique ({short:g} ms, {long_:g} ms between S3 and S1, S2) and "
        f"4-way path ({short:g} ms per edge), nested loop, {rate:,.0f} tuples/s, keys 0..199:"
    )
    rows = _wjoin_streams(rng, 4, rate, duration, 200)
    for form, wc, cls, strategy in cases:
        r = _drive_wjoin(
            cls(constraints=wc, max_delay=[0.0] * 4, strategy=strategy), rows, warm_ms=window_ms
        )
        label = "conservative (gca)" if form == "path" and strategy == "gca" else strategy
        lines.append(
            f"    {form:12s} {cls.__name__:8s} {label:18s} capacity {r['capacity']:9,.0f}/s  "
            f"comparisons/tuple {r['comparisons']:8.1f}  results {r['results']:,}"
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
    k = 10 * window_tuples
    for weights in (Weights(1, 1, 1), Weights(1, 50, 1), Weights(1, 100, 1)):
        lines.append(
            f"  Figure 3, weights <{weights.memory:g},{weights.update:g},{weights.scan:g}>: "
            "cheaper scheme (E eager, L lazy), rows oop 0..1, columns cp 0..1"
        )
        for oop in grid:
            marks = ""
            for cp in grid:
                e, lazy = costs(Dcq("q", cp, oop), k, window_tuples, atomic)
                ce = weights.memory * e.memory + weights.update * e.update + weights.scan * e.scan
                cl = (
                    weights.memory * lazy.memory
                    + weights.update * lazy.update
                    + weights.scan * lazy.scan
                )
                marks += "E" if ce <= cl else "L"
            lines.append(f"    oop {oop:3.1f}  {' '.join(marks)}")
    lines.append(
        "  Table 5 on the deployment (three days of readings, weights <1,1,2>, window "
        "10,000 tuples), with the measured atomic costs:"
    )
    three_days = simulate_deployment(days=3.0, seed=seed)
    lines += table5(three_days, atomic)
    lines.append("  ... and with paper-like costs (coalescing during a scan costs a read):")
    lines += table5(three_days, AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1))
    days = deployment_readings / (54 * 86400 / 31.0 * 0.5)
    start = time.perf_counter()
    table = simulate_deployment(days=days, seed=seed)
    simulated = time.perf_counter() - start
    table = table.head(deployment_readings)
    extent = EagerExtent(Window("time", 24 * 3600.0), Equivalence("quantized", quantum=0.5))
    seconds = (table["time"].astype("int64") // 10**3).to_numpy() / 1e6
    data = list(
        zip(seconds.tolist(), table["temperature"].tolist(), table["mote"].tolist(), strict=True)
    )
    start = time.perf_counter()
    push = extent.push
    for ts, value, mote in data:
        push(ts, value, mote)
    took = time.perf_counter() - start
    lines.append(
        f"  deployment ({SOURCE_LABEL}, {len(data):,} readings, {days:.1f} days, made in "
        f"{simulated:.1f} s): eager temperature coalescing per mote (0.5 C quanta, 24 h time "
        f"window) in {took:.1f} s = {len(data) / took:,.0f} readings/s (goal < 20 s); "
        f"{extent.stored:,} coalesced tuples hold the last day's {len(extent):,} readings"
    )
    return "\n".join(lines)


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


def _quantum_for(table: pd.DataFrame, values: tuple, groups: tuple, target: float) -> tuple:
    lo, hi = 1e-4, 1e3
    for _ in range(40):  # bisection in log space: cp grows with the quantum
        mid = float(np.sqrt(lo * hi))
        if _cp(table, values, groups, mid) < target:
            lo = mid
        else:
            hi = mid
    return hi, _cp(table, values, groups, hi)


def table5(readings: pd.DataFrame, atomic: AtomicCosts, window: int = 10_000) -> list[str]:
    """The paper's Table 5 on deployment readings: quanta chosen to reach each target cp."""
    table = readings.dropna(subset=["humidity", "temperature", "voltage", "light"]).copy()
    table["light_band"] = (table["light"] // 100).astype(int)  # a few constant light levels
    lines = []
    for case, (targets, paper) in _TABLE5_CASES.items():
        reached, dcqs = [], []
        for (name, values, groups), target in zip(_TABLE5_DCQS, targets, strict=True):
            _, cp = _quantum_for(table, values, groups, target)
            reached.append(cp)
            dcqs.append(Dcq(name, cp, 0.0))  # the file is in time order: oop = 0
        chosen = select(dcqs, len(table), window, atomic, Weights(1, 1, 2)).eager
        verdict = "matches" if chosen == paper else "differs from"
        lines.append(
            f"    {case}: cp reached {', '.join(f'{c:.2f}' for c in reached)}; eager on "
            f"{sorted(chosen) or 'none'} ({verdict} the paper: {sorted(paper) or 'none'})"
        )
    return lines
