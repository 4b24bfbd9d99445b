"""Analyses of the multi-way window joins (W-join paper, Sections 3-5, its performance study
being Section 4) beside the paper-settings experiments of
:mod:`~workbench.experiments.wjoin_paper` (Figures 4, 6, 7, both mechanisms): the measures of
one timed run (:func:`wjoin_measures`, which those experiments use too), execution time
against output tuples on a retail-like workload (Figure 8's experiment, on a synthetic
stand-in) and GCA vs LCA and conservative vs modified BEW across window sizes (Section 5),
all replayed through the one harness.

Our copy of the paper lost its figure numbers; they are counted here in the order the
figures appear: 1-5 illustrate the forms and algorithms, 6 is the maximum throughput
((a) hash, (b) nested loop), 7 the response time, 8 the execution time against output
tuples on the Wal-Mart data, 9 the variations' approaches (LCA, graph and path joins).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from workbench.experiments.harness import (
    Clock,
    JoinProfile,
    engine_calls,
    profile_wjoin,
    warm_up,
    wtuples,
)
from workbench.experiments.workloads import RetailWorkload, WJoinWorkload
from workbench.operators import WindowConstraints
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiWayJoin
from workbench.protocol import Engine

__all__ = [
    "RETAIL_WORKLOAD",
    "VARIANTS_WORKLOAD",
    "wjoin_measures",
    "wjoin_retail",
    "wjoin_variants",
    "wjoin_window_sweep",
]


VARIANTS_WORKLOAD = WJoinWorkload(keys=200)
"""GCA vs LCA and modified BEW: keys 0..199, three windows per run."""
RETAIL_WORKLOAD = RetailWorkload()
"""The retail stand-in: 4 stores, 1,000 sales an hour each, 4 hours from 10:00, 1-hour window."""


def wjoin_measures(
    op: MultiWayJoin,
    rows: pd.DataFrame,
    warm_ms: float = 0.0,
    clock: Clock = time.perf_counter,
    batch: int = 1,
) -> dict[str, float]:
    """One timed replay of tuples (times in ms, ``batch`` per call) through a BEW or FEW join
    (W-join performance study): ``capacity`` (tuples per busy second after ``warm_ms`` of
    stream time: buffers in steady state), ``busy_s`` (every call's service time, the flush
    included), mean ``response_ms``, ``results``, and per tuple
    ``results_per_tuple``, ``comparisons``, ``visited_inside`` and ``visited_outside`` (buffered
    tuples the search met inside and outside the period: Section 3.1's Figure 4 discussion),
    with ``peak_buffered`` (the most tuples held at once; the operator's counters, 0 where a
    mechanism does not count them).  The mean response splits into ``wait_ms`` (from the
    arrival of a result's last tuple to the arrival of the call that emitted it: the join held
    it, waiting for a period or for every stream), ``queue_ms`` (that call waiting behind
    earlier calls on the one server) and ``service_ms`` (that call's own service time);
    ``held_share`` is the share of results that waited, ``max_call_ms`` the longest call.

    >>> rows = WJoinWorkload(200.0, 3, 1.0).streams(np.random.default_rng(0), 2, 1000.0)
    >>> op = BEWJoin(constraints=WindowConstraints.uniform(2, 50.0), max_delay=[0.0, 0.0])
    >>> m = wjoin_measures(op, rows)
    >>> sorted(m)[:4], m["results"] > 0
    (['busy_s', 'capacity', 'comparisons', 'held_share'], True)
    """
    p = profile_wjoin(op, rows, clock=clock, batch=batch)
    n, c = max(len(rows), 1), p.counters
    return {
        "capacity": p.capacity(warm_ms),
        "busy_s": p.seconds,
        "response_ms": p.mean_response_ms(),
        **_response_parts(p),
        "results": p.results,
        "results_per_tuple": p.results / n,
        "comparisons": c.comparisons / n,
        "visited_inside": c.visited_inside / n,
        "visited_outside": c.visited_outside / n,
        "peak_buffered": c.peak_buffered,
    }


def _response_parts(p: JoinProfile) -> dict[str, float]:
    """The mean response split by where a result waited: ``wait_ms`` (held by the join),
    ``queue_ms`` (its emitting call behind earlier calls), ``service_ms`` (that call's own
    service time); their sum is ``mean_response_ms``.  ``held_share``: results that waited;
    ``max_call_ms``: the longest call."""
    service_ms = 1000.0 * p.service_s
    finish = p.finish_ms()
    wait = np.repeat(p.arrival_ms, p.emitted) - p.last_ms
    queue = np.repeat(finish - service_ms - p.arrival_ms, p.emitted)
    service = np.repeat(service_ms, p.emitted)
    parts = {"wait_ms": wait, "queue_ms": queue, "service_ms": service}
    figures = {k: float(v.mean()) if p.results else 0.0 for k, v in parts.items()}
    figures["held_share"] = float((wait > 0).mean()) if p.results else 0.0
    figures["max_call_ms"] = float(service_ms.max(initial=0.0))
    return figures


def wjoin_variants(
    rng: np.random.Generator,
    rate: float = 2000.0,
    workload: WJoinWorkload = VARIANTS_WORKLOAD,
    clock: Clock = time.perf_counter,
) -> pd.DataFrame:
    """GCA vs LCA on a 4-way non-uniform clique and conservative vs modified BEW on a 4-way
    path (nested loop; W-join Section 5): capacity, comparisons per tuple and results, one
    stream for all.

    >>> small = WJoinWorkload(window_ms=100.0, keys=5, windows=2.0)
    >>> v = wjoin_variants(np.random.default_rng(0), 500.0, small)
    >>> v["results"].tolist(), v["comparisons"].round(2).tolist()
    ([39, 39, 39, 39, 60, 60], [12.64, 5.75, 7.95, 4.39, 19.93, 5.66])
    """
    short, long_ = workload.window_ms / 5, workload.window_ms
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
    stream = workload.streams(rng, 4, rate)
    rows = []
    for form, wc, cls, strategy in cases:
        op = cls(constraints=wc, max_delay=[0.0] * 4, strategy=strategy)
        r = wjoin_measures(op, stream, warm_ms=workload.window_ms, clock=clock)
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


def wjoin_window_sweep(
    rng: np.random.Generator,
    windows_ms: Sequence[float] = (25.0, 50.0, 100.0, 200.0, 400.0),
    rate: float = 2000.0,
    workload: WJoinWorkload = VARIANTS_WORKLOAD,
    clock: Clock = time.perf_counter,
) -> pd.DataFrame:
    """GCA vs LCA and conservative vs modified BEW (:func:`wjoin_variants`, W-join Section
    5) at each window size: the cases' windows scale with ``window_ms`` (the non-uniform
    clique's short windows are a fifth of it), every run covers the same stream time (three
    of the largest windows).  Columns: ``window_ms`` and :func:`wjoin_variants`'s.

    >>> small = WJoinWorkload(window_ms=100.0, keys=5, windows=2.0)
    >>> w = wjoin_window_sweep(np.random.default_rng(0), (50.0, 100.0), 500.0, small)
    >>> w.groupby("window_ms")["strategy"].count().tolist()
    [6, 6]
    """
    span_ms = 3.0 * max(windows_ms)
    parts = [
        wjoin_variants(
            rng, rate, replace(workload, window_ms=w, windows=span_ms / w), clock
        ).assign(window_ms=w)
        for w in windows_ms
    ]
    frame = pd.concat(parts, ignore_index=True)
    return frame[["window_ms", *frame.columns[:-1]]]


def wjoin_retail(
    rng: np.random.Generator,
    workload: RetailWorkload = RETAIL_WORKLOAD,
    engine: Engine = "python",
    points: int = 20,
    clock: Clock = time.perf_counter,
) -> pd.DataFrame:
    """Execution time against output tuples on the retail stand-in (W-join Section 4.4,
    Figure 8's experiment; :class:`~workbench.experiments.workloads.RetailWorkload` replaces
    the Wal-Mart logs): the stores' uniform clique, equality on the item, one ``window_ms``
    window, hash BEW and FEW.  One timed replay per algorithm; after each of ``points``
    stretches of it, the output tuples so far and the busy seconds so far (the paper runs
    increasing input sizes; the prefixes of one run give the same curve without re-running
    them).  The compiled engine runs micro-batches of at most a ``points``-th of the stream.

    >>> small = RetailWorkload(sales_per_hour=150.0, hours=1.0)
    >>> r = wjoin_retail(np.random.default_rng(0), small, points=4)
    >>> r.groupby("algorithm")["output tuples"].last().tolist()
    [6, 6]
    """
    rows = workload.streams(rng)
    tuples = wtuples(rows)
    wc = WindowConstraints.uniform(workload.stores, workload.window_ms)
    parts = []
    for cls in (BEWJoin, FEWJoin):
        op = cls(constraints=wc, max_delay=[0.0] * wc.m, implementation="hash", engine=engine)
        batch = max(1, min(engine_calls(op), len(rows) // points))
        if batch > 1:
            warm_up(op, tuples)
        p = profile_wjoin(op, rows, clock=clock, batch=batch)
        ends = np.unique(np.linspace(0, len(p.service_s) - 1, points + 1).round().astype(int))
        parts.append(
            pd.DataFrame(
                {
                    "algorithm": cls.__name__,
                    "input tuples": np.cumsum(p.rows)[ends],
                    "output tuples": np.cumsum(p.emitted)[ends],
                    "seconds": np.cumsum(p.service_s)[ends],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)
