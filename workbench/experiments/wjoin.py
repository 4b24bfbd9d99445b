"""Analyses of the multi-way window joins (W-join paper, Sections 3-5 and its performance
study): capacity against the aggregate arrival rate, response time, GCA vs LCA and
conservative vs modified BEW, all replayed through the one harness.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.experiments.harness import (
    Clock,
    engine_calls,
    profile_wjoin,
    warm_up,
    wtuples,
)
from workbench.experiments.workloads import WJoinWorkload
from workbench.operators import WindowConstraints
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiWayJoin
from workbench.protocol import Engine

__all__ = [
    "CAPACITY_WORKLOAD",
    "RESPONSE_WORKLOAD",
    "VARIANTS_WORKLOAD",
    "max_sustainable",
    "wjoin_capacity_sweep",
    "wjoin_measures",
    "wjoin_response",
    "wjoin_variants",
]


CAPACITY_WORKLOAD = WJoinWorkload()
"""Capacity sweeps: window 500 ms, keys 0..9999, three windows of stream time per run."""
RESPONSE_WORKLOAD = WJoinWorkload(keys=1000, windows=12.0)
"""Response times: fewer keys (more results), twelve windows per run."""
VARIANTS_WORKLOAD = WJoinWorkload(keys=200)
"""GCA vs LCA and modified BEW: keys 0..199, three windows per run."""


def wjoin_measures(
    op: MultiWayJoin,
    rows: pd.DataFrame,
    warm_ms: float = 0.0,
    clock: Clock = time.perf_counter,
    batch: int = 1,
) -> dict[str, float]:
    """One timed replay of tuples (times in ms, ``batch`` per call) through a BEW or FEW join
    (W-join performance study): ``capacity`` (tuples per busy second after ``warm_ms`` of
    stream time: buffers in steady state), mean ``response_ms``, ``results`` and
    ``comparisons`` per tuple.

    >>> rows = WJoinWorkload(200.0, 3, 1.0).streams(np.random.default_rng(0), 2, 1000.0)
    >>> op = BEWJoin(constraints=WindowConstraints.uniform(2, 50.0), max_delay=[0.0, 0.0])
    >>> m = wjoin_measures(op, rows)
    >>> sorted(m), m["results"] > 0
    (['capacity', 'comparisons', 'response_ms', 'results'], True)
    """
    p = profile_wjoin(op, rows, clock=clock, batch=batch)
    return {
        "capacity": p.capacity(warm_ms),
        "response_ms": p.mean_response_ms(),
        "results": p.results,
        "comparisons": p.counters.comparisons / max(len(rows), 1),
    }


def wjoin_capacity_sweep(
    cls: type[MultiWayJoin],
    m: int,
    implementation: str,
    rng: np.random.Generator,
    workload: WJoinWorkload = CAPACITY_WORKLOAD,
    start_rate: float = 250.0,
    max_rate: float = 64_000.0,
    engine: Engine = "python",
) -> pd.DataFrame:
    """Capacity of an m-way uniform-clique join at doubling aggregate arrival rates (W-join
    performance study, maximum throughput), run by ``engine`` with its calls
    (:func:`~workbench.experiments.harness.engine_calls`).

    The rate doubles from ``start_rate`` until the measured capacity (tuples/s of processing,
    after one window of warm-up) no longer covers it (that rate is the last row) or
    ``max_rate`` is passed.  Columns: ``rate``, ``capacity``, ``throughput`` (what the join
    sustains: the rate while it keeps up, its capacity beyond).

    >>> small = WJoinWorkload(window_ms=100.0, keys=10, windows=2.0)
    >>> s = wjoin_capacity_sweep(BEWJoin, 2, "hash", np.random.default_rng(0), small, 250.0, 500.0)
    >>> list(s.columns), s["rate"].iloc[0]
    (['rate', 'capacity', 'throughput'], np.float64(250.0))
    """
    wc = WindowConstraints.uniform(m, workload.window_ms)
    rows, rate = [], start_rate
    while rate <= max_rate:
        stream = workload.streams(rng, m, rate)
        op = cls(constraints=wc, max_delay=[0.0] * m, implementation=implementation, engine=engine)
        batch = engine_calls(op)
        if batch > 1:
            warm_up(op, wtuples(stream))
        cap = wjoin_measures(op, stream, warm_ms=workload.window_ms, batch=batch)["capacity"]
        rows.append({"rate": rate, "capacity": cap, "throughput": min(rate, cap)})
        if cap < rate:
            break
        rate *= 2
    return pd.DataFrame(rows)


def max_sustainable(sweep: pd.DataFrame) -> float:
    """The highest rate of a capacity sweep whose capacity still covers it (0 if none).

    >>> max_sustainable(pd.DataFrame({"rate": [250.0, 500.0], "capacity": [900.0, 400.0]}))
    250.0
    """
    sustained = sweep["rate"][sweep["capacity"] >= sweep["rate"]]
    return float(sustained.max()) if len(sustained) else 0.0


def wjoin_response(
    rates: Sequence[float],
    rng: np.random.Generator,
    m: int = 3,
    workload: WJoinWorkload = RESPONSE_WORKLOAD,
    engine: Engine = "python",
) -> pd.DataFrame:
    """Mean response time (arrival of a result's last tuple to its output, waiting included)
    of hash BEW and FEW on an m-way uniform clique at each aggregate arrival rate, run by
    ``engine`` one tuple per call (W-join performance study, response time).

    >>> small = WJoinWorkload(window_ms=100.0, keys=10, windows=2.0)
    >>> r = wjoin_response([1000.0], np.random.default_rng(0), 2, small)
    >>> r["algorithm"].tolist(), bool((r["response_ms"] >= 0).all())
    (['BEWJoin', 'FEWJoin'], True)
    """
    wc = WindowConstraints.uniform(m, workload.window_ms)
    rows = []
    for cls in (BEWJoin, FEWJoin):
        for rate in rates:
            stream = workload.streams(rng, m, rate)
            op = cls(constraints=wc, max_delay=[0.0] * m, implementation="hash", engine=engine)
            warm_up(op, wtuples(stream))
            r = wjoin_measures(op, stream)
            rows.append({"algorithm": cls.__name__, "rate": rate, "response_ms": r["response_ms"]})
    return pd.DataFrame(rows)


def wjoin_variants(
    rng: np.random.Generator, rate: float = 2000.0, workload: WJoinWorkload = VARIANTS_WORKLOAD
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
        r = wjoin_measures(op, stream, warm_ms=workload.window_ms)
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
