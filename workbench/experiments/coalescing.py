"""Analyses of eager and lazy coalescing (coalescing paper, Sections 6-7): update and scan
throughput over cp x oop, the cost surfaces of Figures 3 and 4, Table 5's optimal selection
on the deployment, and eager coalescing of the whole deployment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import AtomicCosts, Dcq, Weights, cost_grid, select
from workbench.coalesce.window import Readings, WindowExtent
from workbench.data.replica import simulate_deployment
from workbench.experiments.harness import engine_calls, timed, warm_up
from workbench.experiments.workloads import coalescing_rows
from workbench.protocol import Engine

__all__ = [
    "selection_table",
    "PAPER_LIKE_COSTS",
    "TABLE5_CASES",
    "TABLE5_DCQS",
    "coalesce_deployment",
    "coalesce_rates",
    "cost_surface",
    "deployment_coalescing",
    "rates_grid",
    "table5_cps",
    "table5_selection",
]

PAPER_LIKE_COSTS = AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1)
"""Atomic costs in the paper's proportions: coalescing during a scan costs a read."""

TABLE5_DCQS = [
    ("Q1", ("humidity",), ("epoch",)),
    ("Q2", ("temperature",), ("mote",)),
    ("Q3", ("voltage",), ("light_band",)),
    ("Q4", ("humidity", "temperature"), ("epoch", "mote")),
    ("Q5", ("temperature", "voltage"), ("mote", "light_band")),
    ("Q6", ("humidity", "temperature", "voltage"), ("epoch", "mote", "light_band")),
]
"""Table 5's six distinct coalescing queries: name, coalesced values, grouping attributes."""
TABLE5_CASES = {
    "Case 1": ([0.1] * 6, set()),
    "Case 2": ([0.8] * 6, {"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"}),
    "Case 3": ([0.5] * 3 + [0.1] * 3, {"Q1", "Q2", "Q3"}),
    "Case 4": ([0.8] * 3 + [0.1] * 3, {"Q1", "Q2", "Q3"}),
}
"""The paper's Table 5: each case's target cps (Q1..Q6) and its optimal eager selection."""


def _pushed(extent: WindowExtent, readings: Readings) -> float:
    """Seconds to push ``readings`` into ``extent`` with its engine's calls (one push per
    tuple for the reference, micro-batches for the kernel, warmed up first)."""
    batch = engine_calls(extent)
    if batch == 1:
        push = extent.push
        rows = list(readings.rows())
        start = time.perf_counter()
        for row in rows:
            push(*row)
        return time.perf_counter() - start
    warm_up(extent, readings)
    start = time.perf_counter()
    for lo in range(0, len(readings), batch):
        extent.push_batch(readings[lo : lo + batch])
    return time.perf_counter() - start


def coalesce_rates(
    rows: Sequence[tuple[float, int, int]],
    window: Window,
    equivalence: Equivalence,
    engine: Engine = "python",
) -> dict[str, float]:
    """Update and scan throughput (tuples/s) of eager and lazy extents on one stream, run by
    ``engine`` (coalescing paper, Section 7.2): keys ``eager_update``, ``eager_scan``,
    ``lazy_update``, ``lazy_scan``.

    >>> r = coalesce_rates([(1.0, 5, 0), (2.0, 5, 0)], Window("tuples", 10), Equivalence())
    >>> sorted(r)
    ['eager_scan', 'eager_update', 'lazy_scan', 'lazy_update']
    """
    readings = Readings(*(np.array(col) for col in zip(*rows, strict=True)))
    out = {}
    for name, extent_cls in (("eager", EagerExtent), ("lazy", LazyExtent)):
        extent = extent_cls(window, equivalence, engine=engine)
        out[f"{name}_update"] = len(rows) / _pushed(extent, readings)
        scans = 20
        start = time.perf_counter()
        for _ in range(scans):
            extent.view()
        out[f"{name}_scan"] = scans * len(extent) / (time.perf_counter() - start)
    return out


def rates_grid(
    rng: np.random.Generator,
    grid: Sequence[float],
    tuples: int,
    window: Window,
    equivalence: Equivalence,
    engine: Engine = "python",
) -> pd.DataFrame:
    """:func:`coalesce_rates` (by ``engine``) of a fresh stream of ``tuples`` tuples at every
    (oop, cp) of the grid (Section 7.2, rows oop-major): columns ``oop``, ``cp`` and the four
    rates.

    >>> rng, window = np.random.default_rng(0), Window("tuples", 10)
    >>> g = rates_grid(rng, [0.0, 1.0], 50, window, Equivalence())
    >>> g[["oop", "cp"]].values.tolist()
    [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    """
    rows = []
    for oop in grid:
        for cp in grid:
            stream = coalescing_rows(rng, tuples, cp=cp, oop=oop)
            rates = coalesce_rates(stream, window, equivalence, engine)
            rows.append({"oop": oop, "cp": cp, **rates})
    return pd.DataFrame(rows)


def cost_surface(
    atomic: AtomicCosts,
    weights: Weights,
    grid: Sequence[float],
    k: int = 10_000,
    w: int = 1000,
) -> pd.DataFrame:
    """Weighted normalised cost of eager and lazy coalescing of one query over cp x oop
    (the paper's Figures 3 and 4): columns ``oop``, ``cp``, ``eager``, ``lazy``.

    >>> s = cost_surface(PAPER_LIKE_COSTS, Weights(1, 1, 1), [0.0, 1.0])
    >>> list(s.columns), len(s)
    (['oop', 'cp', 'eager', 'lazy'], 4)
    """
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
    engine: Engine = "python",
) -> pd.DataFrame:
    """Coalesce every mote's temperature (quantised, time-based window) eagerly and lazily,
    run by ``engine`` (coalescing paper, Section 7.3).

    One row per scheme: ``readings`` pushed, ``seconds`` and ``readings_per_s`` of the pushes,
    ``stored`` tuples held (raw for lazy, coalesced for eager), ``window`` raw readings in the
    final window, ``view`` coalesced tuples in its view, ``same_view`` whether the view equals
    the first scheme's.

    >>> c = coalesce_deployment(simulate_deployment(days=0.05, seed=0), window_s=3600.0)
    >>> c["stored"].tolist(), c["same_view"].tolist()
    ([710, 3404], [True, True])
    """
    seconds = (readings["time"].astype("int64") // 10**3).to_numpy() / 1e6
    data = Readings(seconds, readings["temperature"].to_numpy(), readings["mote"].to_numpy())
    kinds = {"eager": EagerExtent, "lazy": LazyExtent}
    rows, first = {}, None
    for scheme in schemes:
        extent = kinds[scheme](
            Window("time", window_s), Equivalence("quantized", quantum=quantum), engine=engine
        )
        took = _pushed(extent, data)
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


def deployment_coalescing(
    readings: int, seed: int = 0, engine: Engine = "python"
) -> dict[str, float]:
    """Simulate about ``readings`` readings of the deployment (timed) and coalesce them
    eagerly by ``engine`` (Section 7.3 at the deployment's scale): :func:`coalesce_deployment`'s
    eager row with ``days`` simulated and ``simulated_s``, the seconds the simulation took.

    >>> d = deployment_coalescing(2000)
    >>> d["readings"], d["stored"], d["same_view"]
    (2000, 381, True)
    """
    days = readings / (54 * 86400 / 31.0 * 0.5)
    table, simulated_s = timed(lambda: simulate_deployment(days=days, seed=seed))
    run = coalesce_deployment(table.head(readings), schemes=("eager",), engine=engine)
    run = run.loc["eager"]
    return {**run.to_dict(), "days": days, "simulated_s": simulated_s}


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

    >>> cps = table5_cps(simulate_deployment(days=0.05, seed=0), iterations=3)
    >>> len(cps), cps["query"].nunique(), cps["case"].iloc[-1]
    (24, 6, 'Case 4')
    """
    table = readings.dropna(subset=["humidity", "temperature", "voltage", "light"]).copy()
    table["light_band"] = (table["light"] // 100).astype(int)  # a few constant light levels
    reached: dict[tuple, float] = {}  # the same query and target give the same cp
    rows = []
    for case, (targets, _) in TABLE5_CASES.items():
        for (name, values, groups), target in zip(TABLE5_DCQS, targets, strict=True):
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
    beside the paper's: columns ``case``, ``cp``, ``eager``, ``paper``, ``matches``.

    >>> cps = table5_cps(simulate_deployment(days=0.05, seed=0), iterations=3)
    >>> table5_selection(cps, PAPER_LIKE_COSTS)[["case", "paper"]].values.tolist()[1]
    ['Case 2', ['Q1', 'Q2', 'Q3', 'Q4', 'Q5', 'Q6']]
    """
    rows = []
    for case, frame in cps.groupby("case", sort=False):
        dcqs = [Dcq(q, cp, 0.0) for q, cp in zip(frame["query"], frame["cp"], strict=True)]
        tuples = int(frame["tuples"].iloc[0])
        chosen = sorted(select(dcqs, tuples, window, atomic, Weights(1, 1, 2)).eager)
        paper = sorted(TABLE5_CASES[case][1])
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


def selection_table(
    estimates: dict[str, tuple[float, float]],
    served: dict[str, str],
    k: int,
    window: int,
    atomic: AtomicCosts,
    weights: Weights,
) -> pd.DataFrame:
    """Every query's (cp, oop) estimate (3 decimals), its optimal scheme by Theorem 1 over
    ``k`` arrivals and a ``window``-tuple extent, and the scheme it is served with.

    >>> atomic = AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1)
    >>> table = selection_table({"t": (0.9, 0.0)}, {"t": "lazy"}, 1000, 100, atomic,
    ...                         Weights(1, 1, 2))
    >>> table[["query", "optimal", "scheme"]].values.tolist()
    [['t', 'eager', 'lazy']]
    """
    dcqs = [Dcq(name, cp, oop) for name, (cp, oop) in estimates.items()]
    chosen = select(dcqs, k, window, atomic, weights)
    return pd.DataFrame(
        {
            "query": list(estimates),
            "cp": [round(cp, 3) for cp, _ in estimates.values()],
            "oop": [round(oop, 3) for _, oop in estimates.values()],
            "optimal": ["eager" if n in chosen.eager else "lazy" for n in estimates],
            "scheme": [served[n] for n in estimates],
        }
    )
