"""Benchmarks: commands that print figures (``workbench bench ...``), never timed tests.

Each ``bench_*`` function only formats: the workloads, the timing harness and the analyses
are :mod:`workbench.experiments`'s, shared with the notebooks and the dashboard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from workbench.coalesce import Equivalence, Window
from workbench.coalesce.cost import Weights, measure_atomic_costs
from workbench.data.replica import SOURCE_LABEL, simulate_deployment
from workbench.experiments import (
    CAPACITY_WORKLOAD,
    EXAMPLE5,
    INTERVAL_QUERY,
    PAPER_LIKE_COSTS,
    RESPONSE_WORKLOAD,
    VARIANTS_WORKLOAD,
    Example5Workload,
    IntervalWorkload,
    coalesce_rates,
    coalescing_rows,
    cost_surface,
    deployment_coalescing,
    interval_runs,
    max_sustainable,
    ptjoin_runs,
    rates_grid,
    stime_timings,
    table5_cps,
    table5_selection,
    wjoin_capacity_sweep,
    wjoin_response,
    wjoin_variants,
)
from workbench.operators.wjoin import BEWJoin, FEWJoin
from workbench.paper_examples import Example5Setting

__all__ = ["bench_coalesce", "bench_interval", "bench_ptjoin", "bench_stime", "bench_wjoin"]


COLUMNS = {
    "events": ("events", ",.0f"),
    "seconds": ("seconds", ".2f"),
    "events_per_s": ("events/s", ",.0f"),
    "response_ms": ("mean response ms", ",.2f"),
    "results": ("results", ",.0f"),
    "prob_evals": ("prob evals/event", ".1f"),
    "stime_lookups": ("stime lookups/event", ".1f"),
    "reuses": ("reuses/event", ".1f"),
    "exact_evals": ("rational evals", ",.0f"),
}
"""How each figure of :func:`~workbench.experiments.join_summary` is titled and formatted."""


def format_table(rows: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> str:
    """Rows of figures under right-aligned titles (:data:`COLUMNS`), one column per key.

    >>> print(format_table({"tight": {"results": 1234}}, ["results"]))
                          results
      tight                 1,234
    """
    cols = [(k, *COLUMNS[k], max(len(COLUMNS[k][0]), 11) + 2) for k in keys]
    lines = [f"  {'':14s}" + "".join(f"{title:>{w}s}" for _, title, _, w in cols)]
    for name, r in rows.items():
        cells = "".join(f"{format(r[k], fmt):>{w}s}" for k, _, fmt, w in cols)
        lines.append(f"  {name:14s}{cells}")
    return "\n".join(lines)


def bench_stime(sample: int = 200, seed: int = 0, **setting: float) -> str:
    """The vectorised stime table against the scalar binary search (PTJoin Section 3.1) on
    Example 5's random templates (``setting``: fields of
    :class:`~workbench.paper_examples.Example5Setting`); the figures come from one run, so
    the ratios compare like with like."""
    w = Example5Setting(**setting)
    t = stime_timings(w, sample, seed)
    pairs, t_table = t["pairs"], t["table_s"]
    return "\n".join(
        [
            f"stime tables: {w.templates} x {w.templates} random templates, {w.buckets} buckets, "
            f"lengths <= {w.max_length:g} ms, delta = {w.delta:g} (seed {seed})",
            f"  vectorised table, one delta:         {t_table:8.3f} s  "
            f"{pairs / t_table:12,.0f} pairs/s  (best of 2 after a cold run of "
            f"{t['cold_s']:.3f} s)",
            f"  StimeTable.build (delta, 1 - delta): {t['build_s']:8.3f} s  "
            f"{2 * pairs / t['build_s']:12,.0f} pairs/s",
            f"  scalar stime (rationals), {sample} pairs:     {t['scalar_s']:8.3f} s  "
            f"{sample / t['scalar_s']:12,.0f} pairs/s",
            "  speed-up of the table over the scalar loop: "
            f"{(t['scalar_s'] / sample) / (t_table / pairs):,.0f}x",
            f"  max |table - scalar| on the sample: {t['max_error_ms']:.2e} ms",
        ]
    )


def bench_ptjoin(
    naive_prefix: int = 4_000, templates: int = EXAMPLE5.templates, **streams: float
) -> str:
    """PTJoin naive / loose / tight against the deterministic band join (PTJoin Section 3) on
    Example 5's setting with ``templates`` templates per stream (``streams``: the other fields
    of :class:`~workbench.experiments.Example5Workload`)."""
    w = Example5Workload(replace(EXAMPLE5, templates=templates), **streams)
    x = w.setting
    install_s, r = ptjoin_runs(w, naive_prefix)
    keys = ["events", "seconds", "events_per_s", "results", "prob_evals", "stime_lookups"]
    keys.append("exact_evals")
    tests_loose = r["loose"]["prob_evals"]
    tests_tight = r["tight"]["prob_evals"] + r["tight"]["stime_lookups"]
    return "\n".join(
        [
            f"PTJoin: {w.events_per_stream:,} events per stream, {x.templates} templates x "
            f"{x.buckets} buckets (len <= {x.max_length:g} ms), mean inter-arrival "
            f"{w.mean_interarrival:g} ms, D = {w.max_delay:g} ms (out of order), d = {x.d:g} ms, "
            f"delta = {x.delta:g} (seed {w.seed})",
            f"  query installation (two stime tables): {install_s:.2f} s",
            format_table(r, keys),
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


def bench_interval(**workload: Any) -> str:
    """The five interval timing correlation algorithms at a low and a high arrival rate
    (interval timing paper, Section 4.2; ``workload``: fields of
    :class:`~workbench.experiments.IntervalWorkload`)."""
    w, q = IntervalWorkload(**workload), INTERVAL_QUERY
    out = [
        f"Interval timing correlation: {w.events_per_stream:,} events per stream, {w.templates} "
        f"interval lengths <= {w.max_length:g} ms, d = {q.d:g} ms, ct = {q.ct:g}, D = "
        f"{w.max_delay:g} ms; lazy re-evaluates at {q.max_pending} unprocessed tuples or every "
        f"{q.max_wait:g} ms (seed {w.seed})"
    ]
    keys = ["events_per_s", "response_ms", "results", "prob_evals", "reuses"]
    for rate, runs in interval_runs(w, q).items():
        out.append(
            f"  mean inter-arrival {rate:g} ms per stream ({2000.0 / rate:,.0f} events/s in):"
        )
        out.append(format_table(runs, keys))
    return "\n".join(out)


def _sweep_line(m: int, name: str, sweep: pd.DataFrame, max_rate: float) -> str:
    """One join's capacity sweep: its maximum sustainable rate and every rate:capacity."""
    cells = [
        f"{r / 1000:g}k:{c / 1000:.1f}k"
        for r, c in zip(sweep["rate"], sweep["capacity"], strict=True)
    ]
    best = max_sustainable(sweep)
    top = f"{best:,.0f}/s" if best else "none"
    if best * 2 > max_rate:
        top = f">= {top}"
    return f"    {m}-way {name:8s} max sustainable {top:>12s}   (rate:capacity) {'  '.join(cells)}"


def bench_wjoin(max_rate: float = 64_000.0, seed: int = 0) -> str:
    """BEW vs FEW (nested and hash), GCA vs LCA, conservative vs modified BEW (W-join paper,
    Sections 3-5 and its performance study).

    For each join the aggregate arrival rate doubles from 250 tuples/s until the measured
    capacity (tuples/s of processing, after one window of warm-up) no longer covers it.
    """
    ways, w, m, rates = (
        (2, 3, 4, 5),
        CAPACITY_WORKLOAD,
        3,
        (250.0, 1000.0, 4000.0, 16000.0, 32000.0),
    )
    rng = np.random.default_rng(seed)
    lines = [
        f"W-join: {len(ways)} uniform clique sizes, window {w.window_ms:g} ms, synthetic integer "
        f"streams (keys 0..{w.keys - 1}, equality), exponential gaps, {w.windows:g} windows "
        f"of stream time per run (seed {seed})",
        "  capacity (tuples/s processed in steady state) at doubling aggregate arrival rates;",
        "  max sustainable = the highest rate whose capacity still covers it",
    ]
    for impl in ("nested", "hash"):
        lines.append(f"  {impl}:")
        for ways_m in ways:
            for cls in (BEWJoin, FEWJoin):
                sweep = wjoin_capacity_sweep(cls, ways_m, impl, rng, w, max_rate=max_rate)
                lines.append(_sweep_line(ways_m, cls.__name__, sweep, max_rate))
    r = RESPONSE_WORKLOAD
    lines.append(
        f"  hash, {m}-way, keys 0..{r.keys - 1}, {r.windows:g} windows per "
        "run: mean response time in ms (arrival of a result's last tuple to its output)"
    )
    lines.append("  " + " " * 10 + "".join(f"{rate:>11,.0f}/s" for rate in rates))
    response = wjoin_response(rates, rng, m, r)
    for name, frame in response.groupby("algorithm", sort=False):
        lines.append(f"  {name:10s}" + "".join(f"{c:13,.1f}" for c in frame["response_ms"]))
    v, rate = VARIANTS_WORKLOAD, 2000.0
    short, long_ = v.window_ms / 5, v.window_ms
    lines.append(
        f"  4-way non-uniform clique ({short:g} ms, {long_:g} ms between S3 and S1, S2) and "
        f"4-way path ({short:g} ms per edge), nested loop, {rate:,.0f} tuples/s, keys "
        f"0..{v.keys - 1}:"
    )
    for row in wjoin_variants(rng, rate, v).itertuples():
        lines.append(
            f"    {row.form:12s} {row.algorithm:8s} {row.strategy:18s} capacity "
            f"{row.capacity:9,.0f}/s  comparisons/tuple {row.comparisons:8.1f}  "
            f"results {row.results:,}"
        )
    return "\n".join(lines)


def _table5_lines(selection: pd.DataFrame) -> list[str]:
    return [
        f"    {r.case}: cp reached {r.cp}; eager on {r.eager or 'none'} "
        f"({'matches' if r.matches else 'differs from'} the paper: {r.paper or 'none'})"
        for r in selection.itertuples()
    ]


def bench_coalesce(
    tuples: int = 200_000,
    grid_tuples: int = 200_000,
    deployment_readings: int = 2_300_000,
    seed: int = 0,
) -> str:
    """Eager vs lazy coalescing (coalescing paper, Section 7): throughput over cp x oop,
    Figure 3's surfaces, Table 5 and the deployment."""
    window_tuples = 1000
    rng = np.random.default_rng(seed)
    window, eq = Window("tuples", window_tuples), Equivalence()
    lines = [
        f"Coalescing: synthetic streams (3 time-varying, 3 time-invariant attributes with "
        f"3/5/7 groups), coalescing a1 grouped by g1, tuple-based window of {window_tuples:,}"
    ]
    r = coalesce_rates(coalescing_rows(rng, tuples, cp=0.5, oop=0.1), window, eq)
    lines.append(
        f"  cp = 0.5, oop = 0.1, {tuples:,} tuples: eager update {r['eager_update']:,.0f} "
        f"tuples/s (goal >= 300,000), lazy update {r['lazy_update']:,.0f}; scan eager "
        f"{r['eager_scan']:,.0f}, lazy {r['lazy_scan']:,.0f} window tuples/s"
    )
    grid = [round(0.1 * i, 1) for i in range(11)]
    rates = rates_grid(rng, grid, grid_tuples, window, eq)
    header = "  oop\\cp " + "".join(f"{cp:>11}" for cp in grid)
    for what in ("update", "scan"):
        lines.append(
            f"  {what} throughput, eager / lazy (k tuples/s), {grid_tuples:,} tuples per cell"
        )
        lines.append(header)
        for oop, frame in rates.groupby("oop", sort=False):
            cells = [
                f"{e / 1000:5.0f}/{lz / 1000:<5.0f}"
                for e, lz in zip(frame[f"eager_{what}"], frame[f"lazy_{what}"], strict=True)
            ]
            lines.append(f"  {oop:5.1f}  " + "".join(f"{c:>11}" for c in cells))
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
    run = deployment_coalescing(deployment_readings, seed)
    lines.append(
        f"  deployment ({SOURCE_LABEL}, {run['readings']:,} readings, {run['days']:.1f} days, "
        f"made in {run['simulated_s']:.1f} s): eager temperature coalescing per mote (0.5 C "
        f"quanta, 24 h time window) in {run['seconds']:.1f} s = {run['readings_per_s']:,.0f} "
        f"readings/s (goal < 20 s); {run['stored']:,} coalesced tuples hold the last day's "
        f"{run['window']:,} readings"
    )
    return "\n".join(lines)
