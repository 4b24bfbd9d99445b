"""Benchmarks: commands that print figures (``workbench bench ...``), never timed tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from workbench.data.synthetic import synthetic_events
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
)
from workbench.stime import StimeTable, stime, stime_table
from workbench.timestamps import HistogramTimestamp, TemplateSet, random_templates

__all__ = ["bench_interval", "bench_ptjoin", "bench_stime"]


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
