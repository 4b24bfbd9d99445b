"""Table 4's atomic costs measured per (cp, oop) cell on the compiled extents (coalescing
paper, Sections 6.1 and 7.2): the costs as functions of cp and oop, not constants.  The one
home of that measurement; :mod:`workbench.coalesce.cost` is the model alone.

**What is timed, and why so.**  The paper times each atomic operation "1000 times" and
averages it over the stream's tuples (Section 7.3), in C++.  Each cell here streams
:func:`~workbench.experiments.coalescing_stream.coalescing_rows` (Section 7.1's generator at the
cell's cp and oop: 200,000 tuples at the papers' sizes) through a compiled eager and a
compiled lazy extent in timed batches of random sizes, through a time window whose rate
swings so that arrivals and expiries vary apart
(:mod:`~workbench.experiments.timed_batches` says why and how).  Eq. 3 says a batch costs the
sum of its operations' costs; the least-squares fit
(:func:`~workbench.experiments.batch_fit.fit_costs`) of

    seconds(batch) = C_call + C_insert inserts + C_merge merges + C_split splits
                     + C_detach detaches + C_delete deletes

to the batches gives Table 4's update costs for the cell (``C_call``: the Python call of
``push_batch``, validation and dispatch, fitted and reported apart, never part of an atomic
cost), each with its standard error (``<name>_se``).  (Table 4's operations are the same in
a tuple and a time window; only which tuple expires when differs.  The model's w is the
window's mean occupancy, ``window`` tuples.)  The lazy extent's batches are fitted the same
way (``lazy_insert``, ``lazy_delete``: what Eq. 4's C_insert + C_delete stand for in the
lazy extent).  The timed scans are fitted against what they read (``C_read``: seconds per
stored eager tuple, Eq. 5; the lazy extent's seconds per raw tuple less C_read, per
coalescing tuple, is ``C_coalesce``, Eq. 6, zero where a lazy scan reads a raw tuple faster
than an eager one reads a coalesced one).

A cost the cell never exercised (C_merge at cp = 0, C_split where no split ran, ...) is NaN,
and :func:`cost_grid_of` takes it from the nearest cell that exercised it (0 if none did: the
model then charges nothing for it, as the runs did).  ``mechanism`` picks the extents' data
structure: ``"fast"`` (ours: linked tuples, binary-searched vectors) or ``"paper"`` (the
paper's array extent, Algorithm 2 literally), when the extents accept it
(:func:`mechanisms_available`).

The cells also keep the runs' own totals (update seconds less the fitted per-call cost,
without the batches the fit dropped, scaled to the whole stream; a scan's seconds and the
stored tuples per raw tuple, scaled to a window of ``window`` raw tuples, medians over the
scans): :mod:`workbench.experiments.cost_surfaces` draws Figures 3
and 4 from them.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import fields
from typing import Literal

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import AtomicCosts, CostGrid
from workbench.coalesce.window import Readings
from workbench.experiments.batch_fit import fit_costs
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.experiments.timed_batches import (
    PERIOD_WINDOWS,
    SCANS,
    TimedRun,
    scan_fit,
    timed_run,
    update_seconds,
    warped,
)

__all__ = [
    "ATOMIC",
    "EQ3_TERMS",
    "MECHANISMS",
    "Mechanism",
    "cost_grid_of",
    "make_extent",
    "measure_cell",
    "measure_cells",
    "mechanisms_available",
    "table4_summary",
]

Mechanism = Literal["fast", "paper"]
MECHANISMS: tuple[Mechanism, ...] = ("fast", "paper")
"""The extents' data structures: ours, and the paper's array extent."""
ATOMIC = tuple(f.name for f in fields(AtomicCosts))
"""Table 4's atomic operations, in :class:`~workbench.coalesce.cost.AtomicCosts`' order."""
EQ3_TERMS = ("insert", "merge", "split", "detach", "delete")
"""The atomic costs of an eager update (Eq. 3), fitted to the timed batches."""
MIN_BATCHES = 64
"""Batches a cell times at least: a shorter run takes smaller batches."""


def make_extent(
    scheme: Literal["eager", "lazy"],
    window: float,
    mechanism: Mechanism = "fast",
    kind: Literal["tuples", "time"] = "tuples",
) -> EagerExtent | LazyExtent:
    """A compiled extent of ``scheme`` over a window of ``kind``; ``mechanism`` is passed to
    the constructor only when it is ``"paper"`` (ours is the default), and to the lazy
    extent only if its configuration has a ``mechanism`` (the paper's array is an eager
    extent's structure; a lazy extent that has one array of raw tuples only keeps it).

    >>> type(make_extent("eager", 10)).__name__
    'EagerExtent'
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism = {mechanism!r} must be one of {MECHANISMS}")
    if scheme not in ("eager", "lazy"):
        raise ValueError(f"scheme = {scheme!r} must be 'eager' or 'lazy'")
    extent = EagerExtent if scheme == "eager" else LazyExtent
    takes = scheme == "eager" or "mechanism" in {f.name for f in fields(extent.config_type)}
    extra = {"mechanism": mechanism} if mechanism == "paper" and takes else {}
    return extent(Window(kind, window), Equivalence(), engine="compiled", **extra)


def mechanisms_available() -> tuple[Mechanism, ...]:
    """The mechanisms the extents accept: ``("fast",)``, and ``"paper"`` once the eager
    extent takes ``mechanism="paper"`` (the paper's array extent exists).

    >>> mechanisms_available()[0]
    'fast'
    """
    try:
        make_extent("eager", 2, "paper")
        make_extent("lazy", 2, "paper")
    except (TypeError, ValueError):
        return ("fast",)
    return MECHANISMS


def _stream(rng: np.random.Generator, cp: float, oop: float, tuples: int, window: int) -> Readings:
    """Section 7.1's stream for the cell, its timestamps warped (module docstring)."""
    rows = coalescing_rows(rng, tuples, cp=cp, oop=oop)
    ts, value, group = (np.array(col) for col in zip(*rows, strict=True))
    return Readings(warped(ts, window), value, group)


def _batch_sizes(
    rng: np.random.Generator, tuples: int, warm: int, batch: tuple[int, int]
) -> np.ndarray:
    """Batch sizes drawn from ``batch`` (inclusive), scaled down in a run too short for
    :data:`MIN_BATCHES` of them."""
    lo, hi = batch
    if not 1 <= lo <= hi:
        raise ValueError(f"batch = {batch!r} must be sizes 1 <= low <= high")
    shrink = (tuples - warm) / MIN_BATCHES / ((lo + hi) / 2)
    if shrink < 1:  # a short run: smaller batches, so that enough are timed
        lo, hi = max(1, int(lo * shrink)), max(2, int(hi * shrink))
    return rng.integers(lo, hi + 1, max(16, 4 * tuples // lo))


def _runs(
    readings: Readings, window: int, mechanism: Mechanism, warm: int, sizes: np.ndarray
) -> dict[str, TimedRun]:
    """The stream through a fresh eager and a fresh lazy extent, garbage collection off (a
    collection inside a timed batch is not the operation's cost)."""
    runs = {}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for scheme in ("eager", "lazy"):
            extent = make_extent(scheme, window, mechanism, kind="time")
            runs[scheme] = timed_run(extent, readings, warm, sizes, SCANS)
    finally:
        if enabled:
            gc.enable()
    return runs


def _table4(eager: TimedRun, lazy: TimedRun, cp: float) -> dict[str, float]:
    """Table 4's costs from the two runs (``cp``: the measured one), with their standard
    errors (``<name>_se``), the lazy extent's own and the fitted per-call seconds (module
    docstring)."""
    fit = fit_costs(np.array(eager.counts), np.array(eager.seconds))
    lazy_fit = fit_costs(np.array(lazy.counts)[:, [0, 4]], np.array(lazy.seconds))
    pairs = dict(zip(EQ3_TERMS, zip(fit.cost.tolist(), fit.se.tolist(), strict=True), strict=True))
    pairs["attach"] = pairs["merge"]  # mergeTuples attaches the timestamp: C_merge stands for it
    pairs["read"] = scan_fit(eager, 2)
    per_raw, per_raw_se = scan_fit(lazy, 1)
    read, read_se = pairs["read"]
    pairs["coalesce"] = (np.nan, np.nan)
    if cp > 0:  # Eq. 6: per raw tuple cp (C_coalesce + C_read) + (1 - cp) C_read
        pairs["coalesce"] = (
            max(per_raw - read, 0.0) / cp,
            float(np.hypot(per_raw_se, read_se)) / cp,
        )
    return {
        **{name: pairs[name][0] for name in ATOMIC},
        **{f"{name}_se": pairs[name][1] for name in ATOMIC},
        "lazy_insert": float(lazy_fit.cost[0]),
        "lazy_delete": float(lazy_fit.cost[1]),
        "lazy_insert_se": float(lazy_fit.se[0]),
        "lazy_delete_se": float(lazy_fit.se[1]),
        "call_s": fit.intercept,
        "eager_update_s": update_seconds(eager, fit),
        "lazy_update_s": update_seconds(lazy, lazy_fit),
    }


def _totals(eager: TimedRun, lazy: TimedRun, window: int) -> dict[str, float]:
    """The runs' own figures: the stream's measured cp, oop and splits per arrival, the
    medians of the scans scaled to ``window`` raw tuples, and the most tuples a scan met."""
    total = np.array(eager.counts).sum(axis=0)  # the timed batches' operations
    arrivals = max(int(total[0] + total[1]), 1)
    scans, lazy_scans = eager.scan_table(), lazy.scan_table()  # seconds, raw, stored
    return {
        "cp_measured": float(total[1] / arrivals),
        "oop_measured": float(eager.extent.counters.oop),
        "split_rate": float(total[2] / arrivals),
        "eager_scan_s": window * float(np.median(scans[:, 0] / scans[:, 1])),
        "lazy_scan_s": window * float(np.median(lazy_scans[:, 0] / lazy_scans[:, 1])),
        "eager_stored": window * float(np.median(scans[:, 2] / scans[:, 1])),
        "held_max": int(scans[:, 1].max()),
    }


def measure_cell(
    rng: np.random.Generator,
    cp: float,
    oop: float,
    tuples: int,
    window: int,
    mechanism: Mechanism = "fast",
    batch: tuple[int, int] = (16, 256),
) -> dict[str, float]:
    """One cell's run (module docstring): target ``cp`` and ``oop``, the run's
    ``cp_measured``, ``oop_measured`` and ``split_rate`` (splits per arrival: the runs a late
    arrival cuts, see :func:`~workbench.experiments.coalescing_stream.coalescing_rows`), Table 4's
    costs in seconds with their standard errors (``<name>_se``; NaN where not exercised),
    the lazy extent's own ``lazy_insert`` and ``lazy_delete``, the fitted per-call seconds
    ``call_s``, and the run's totals ``eager_update_s``, ``lazy_update_s`` (the batches less
    the fitted per-call seconds, the descheduled ones left out and the rest scaled to all the
    tuples), ``eager_scan_s``, ``lazy_scan_s`` (a scan of ``window`` raw tuples),
    ``eager_stored`` (coalesced tuples per ``window`` raw ones), ``held_max`` (the most raw
    tuples a scan met: about 1.6 windows), ``window_tuples``,
    ``tuples`` (pushed timed) and ``batches`` (timed).  Batch sizes are drawn from ``batch``
    (inclusive; scaled down in a run too short for :data:`MIN_BATCHES` of them).

    >>> cell = measure_cell(np.random.default_rng(0), 0.5, 0.5, tuples=3000, window=100)
    >>> cell["window_tuples"], 0.3 < cell["cp_measured"] < 0.7, cell["mechanism"]
    (100, True, 'fast')
    """
    if tuples <= window:
        raise ValueError(f"tuples = {tuples!r} must exceed window = {window!r} to expire any")
    readings = _stream(rng, cp, oop, tuples, window)
    warm = min(PERIOD_WINDOWS * window, tuples // 4)
    sizes = _batch_sizes(rng, tuples, warm, batch)
    runs = _runs(readings, window, mechanism, warm, sizes)
    eager, lazy = runs["eager"], runs["lazy"]
    totals = _totals(eager, lazy, window)
    return {
        "mechanism": mechanism,
        "oop": oop,
        "cp": cp,
        **_table4(eager, lazy, totals["cp_measured"]),
        **totals,
        "window_tuples": window,
        "tuples": len(readings) - warm,
        "batches": len(eager.seconds),
    }


def measure_cells(
    rng: np.random.Generator,
    grid: Sequence[float],
    tuples: int,
    window: int,
    mechanism: Mechanism = "fast",
    progress: bool = False,
    **options: object,
) -> pd.DataFrame:
    """:func:`measure_cell` at every (oop, cp) of ``grid`` x ``grid``, a fresh stream of
    ``tuples`` tuples each, tuple-based window of ``window`` (rows oop-major, as
    :func:`~workbench.experiments.coalescing.rates_grid`); ``progress`` shows a tqdm bar;
    ``options`` go to :func:`measure_cell`.

    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=2000, window=100)
    >>> cells[["oop", "cp"]].values.tolist(), cells["merge"].isna().tolist()  # cp 0: none
    ([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [True, False, True, False])
    """
    points = [(oop, cp) for oop in grid for cp in grid]
    if progress:
        from tqdm.auto import tqdm

        points = tqdm(points, desc=f"Table 4 cells ({mechanism})", leave=False)
    return pd.DataFrame(
        [measure_cell(rng, cp, oop, tuples, window, mechanism, **options) for oop, cp in points]
    )


def cost_grid_of(cells: pd.DataFrame) -> CostGrid:
    """The measured cells as Table 4's costs over (cp, oop): a
    :class:`~workbench.coalesce.cost.CostGrid` the cost model reads at any (cp, oop).

    A cost a cell did not exercise is the nearest exercising cell's (in cp and oop; the
    smaller cp, then oop, on a tie): the model weighs it by zero there (Eq. 3: C_merge by
    cp, C_split by oop), but U_max and interpolation read it.  A cost no cell exercised is 0
    (the runs never paid it), and a fitted cost below 0 (noise around a cost the timer
    cannot tell from nothing) is 0.

    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=2000, window=100)
    >>> grid = cost_grid_of(cells)
    >>> bool(grid(0.0, 0.0).merge == max(cells.loc[1, "merge"], 0.0))  # from (cp 1, oop 0)
    True
    """
    cp = np.array(sorted(cells["cp"].unique()), dtype=float)
    oop = np.array(sorted(cells["oop"].unique()), dtype=float)
    table = cells.set_index(["oop", "cp"]).sort_index()
    if len(table) != len(cp) * len(oop):
        raise ValueError(f"cells cover {len(table)} of the {len(cp) * len(oop)} (cp, oop) cells")
    points = [(c, o) for o, c in table.index]  # (cp, oop) per cell, oop-major
    filled = {}
    for name in ATOMIC:
        values = table[name].to_numpy(dtype=float)
        seen = [i for i in range(len(values)) if np.isfinite(values[i])]
        if not seen:
            filled[name] = [0.0] * len(values)
            continue

        def nearest(i: int, seen: list[int] = seen) -> int:
            (c, o) = points[i]
            return min(
                seen, key=lambda j: (abs(points[j][0] - c) + abs(points[j][1] - o), points[j])
            )

        filled[name] = [
            max(v if np.isfinite(v) else values[nearest(i)], 0.0) for i, v in enumerate(values)
        ]
    costs = [AtomicCosts(*(float(filled[name][i]) for name in ATOMIC)) for i in range(len(points))]
    rows = tuple(tuple(costs[r * len(cp) : (r + 1) * len(cp)]) for r in range(len(oop)))
    return CostGrid(tuple(cp.tolist()), tuple(oop.tolist()), rows)


def table4_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Table 4 as measured over the cells, in nanoseconds: per atomic cost (rows, Eq. 3's
    and the scans' plus the lazy extent's own) its ``median``, ``min`` and ``max`` over the
    cells that exercised it, the ``median se`` (the spread of one cell's estimate) and the
    ``cells`` that exercised it.

    >>> cells = pd.DataFrame({"insert": [1e-7, 3e-7], "insert_se": [1e-8, 1e-8]})
    >>> table4_summary(cells).loc["insert"].tolist()
    [200.0, 100.0, 300.0, 10.0, 2.0]
    """
    names = ("insert", "merge", "split", "detach", "delete", "read", "coalesce")
    names += ("lazy_insert", "lazy_delete")
    rows = {}
    for name in (n for n in names if n in cells):
        v, se = cells[name].dropna() * 1e9, cells[f"{name}_se"].dropna() * 1e9
        rows[name] = {
            "median": v.median() if len(v) else np.nan,
            "min": v.min() if len(v) else np.nan,
            "max": v.max() if len(v) else np.nan,
            "median se": se.median() if len(se) else np.nan,
            "cells": len(v),
        }
    return pd.DataFrame.from_dict(rows, orient="index")
