"""Analyses of eager and lazy coalescing (coalescing paper, Sections 6-7): update and scan
throughput over cp x oop, the model's cost surfaces of Figures 3 and 4, and eager coalescing
of the whole deployment.  Atomic costs measured per (cp, oop):
:mod:`~workbench.experiments.atomic_costs`; the surfaces from measured runs:
:mod:`~workbench.experiments.cost_surfaces`; Tables 5 and 6 and Figure 5:
:mod:`~workbench.experiments.coalescing_selection`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import Atomic, AtomicCosts, Weights, cost_grid
from workbench.coalesce.window import Readings, WindowExtent
from workbench.data.replica import simulate_deployment
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.experiments.harness import engine_calls, timed, warm_up
from workbench.protocol import Engine

__all__ = [
    "PAPER_LIKE_COSTS",
    "coalesce_deployment",
    "coalesce_rates",
    "cost_surface",
    "deployment_coalescing",
    "rates_grid",
]

PAPER_LIKE_COSTS = AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1)
"""WHAT-IF, assumed costs, not evidence: constant atomic costs in proportions guessed from
the paper (coalescing during a scan costs a read), the dashboard's starting custom costs and
the surfaces' what-if source; the measured costs are
:mod:`~workbench.experiments.atomic_costs`'."""


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
    atomic: Atomic,
    weights: Weights,
    grid: Sequence[float],
    k: int = 10_000,
    w: int = 1000,
) -> pd.DataFrame:
    """Weighted normalised cost of eager and lazy coalescing of one query over cp x oop by
    the model (Eq. 1-10; the paper's Figures 3 and 4), its atomic costs constants or measured
    functions of (cp, oop): columns ``oop``, ``cp``, ``eager``, ``lazy``.

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
