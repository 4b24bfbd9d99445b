"""Table 4's atomic costs measured per (cp, oop) cell on the compiled extents (coalescing
paper, Sections 6.1 and 7.2): the costs as functions of cp and oop, not constants.  The one
home of that measurement; :mod:`workbench.coalesce.cost` is the model alone.

**What is timed, and why so.**  The paper times each atomic operation "1000 times" and
averages it over the stream's tuples (Section 7.3), in C++.  A compiled push costs well
under a microsecond here, while one Python call of ``push`` or ``push_batch`` costs tens of
microseconds, so a per-push timer would measure the interpreter.  Each cell instead streams
:func:`~workbench.experiments.workloads.coalescing_rows` (Section 7.1's generator at the
cell's cp and oop) through an eager and a lazy extent by ``push_batch`` in batches of random
sizes, timing every batch and reading from the extent's counters what the batch did (its
inserts, merges, splits, detaches and deletes).  Eq. 3 says a batch costs the sum of its
operations' costs; the least-squares fit of

    seconds(batch) = C_call + C_insert inserts + C_merge merges + C_split splits
                     + C_detach detaches + C_delete deletes

to the batches gives Table 4's update costs for the cell (``C_call``: the Python call of
``push_batch``, validation and dispatch, fitted and reported apart, never part of an atomic
cost).  In a full tuple window every accepted arrival is an insert or a merge and expires exactly
one tuple (a detach or a delete), so arrivals and expiries move together and no fit could
tell them apart; a fresh extent's filling arrivals, which expire nothing, also pay for its
arrays' growth.  The cell's stream therefore runs through a *time* window of ``window`` mean
gaps, its timestamps re-spaced by a monotone warp (:func:`warped`) whose rate swings, so that
the window expires fewer tuples than arrive while the rate rises and more while it falls
(between about 0.6 and 1.6 windows held): every tuple keeps its place in timestamp order, so
the stream's cp and oop are the cell's, and the batches' arrivals and expiries vary apart.
(Table 4's operations are the same in a tuple and a time window; only which tuple expires
when differs.  The model's w is the window's mean occupancy, ``window`` tuples.)  The first
``PERIOD_WINDOWS`` windows run untimed (the arrays grow to their largest).  The
fit drops the batches with the largest 5 % of residuals (a descheduled batch) and refits;
each cost carries its standard error (``<name>_se``, from the refit's residuals), the spread
the tables print.  The lazy extent's batches are fitted the same way (``lazy_insert``,
``lazy_delete``: what Eq. 4's C_insert + C_delete stand for in the lazy extent).

Scans have no compiled path (``view`` builds the window's Python objects): each extent is
scanned after every few batches, at every occupancy the swing gives, and the scans' seconds
are fitted against what they read (``C_read``: seconds per stored eager tuple, Eq. 5;
the lazy extent's seconds per raw tuple less C_read, per coalescing tuple, is
``C_coalesce``, Eq. 6, zero where a lazy scan reads a raw tuple faster than an eager one reads
a coalesced one).

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
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import AtomicCosts, CostGrid
from workbench.coalesce.window import Readings
from workbench.experiments.workloads import coalescing_rows

__all__ = [
    "ATOMIC",
    "EQ3_TERMS",
    "MECHANISMS",
    "Fit",
    "Mechanism",
    "cost_grid_of",
    "fit_costs",
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
_COUNTERS = ("inserts", "merges", "splits", "detaches", "deletes")
"""The extent counters of :data:`EQ3_TERMS`, in that order."""
TRIM = 0.05
"""Share of batches with the largest residuals dropped before the refit."""
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


@dataclass(frozen=True)
class Fit:
    """A least-squares fit: each term's cost and standard error (NaN where no observation
    exercised the term), the intercept's, and which observations the refit kept."""

    cost: np.ndarray
    se: np.ndarray
    intercept: float
    intercept_se: float
    inliers: np.ndarray

    @property
    def kept(self) -> int:
        """How many observations the refit kept."""
        return int(self.inliers.sum())


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordinary least squares: coefficients, their standard errors and the residuals."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ beta
    dof = max(len(y) - x.shape[1], 1)
    variance = float(residual @ residual) / dof
    covariance = variance * np.linalg.pinv(x.T @ x)
    return beta, np.sqrt(np.maximum(np.diag(covariance), 0.0)), residual


def fit_costs(counts: np.ndarray, seconds: np.ndarray, trim: float = TRIM) -> Fit:
    """Per-operation costs such that each batch's seconds are an intercept (the batch's call)
    plus its operations' counts times their costs: least squares, refitted without the
    ``trim`` share of batches with the largest residuals (module docstring).

    The estimator's oracle: known costs come back from exact synthetic times.

    >>> rng = np.random.default_rng(0)
    >>> counts = rng.integers(0, 100, (50, 3)).astype(float)
    >>> counts[:, 2] = 0  # never exercised
    >>> fit = fit_costs(counts, 5.0 + counts @ [2.0, 3.0, 7.0])
    >>> np.round(fit.cost, 6).tolist(), round(fit.intercept, 6)
    ([2.0, 3.0, nan], 5.0)
    """
    counts = np.asarray(counts, dtype=float)
    seconds = np.asarray(seconds, dtype=float)
    if counts.ndim != 2 or len(counts) != len(seconds):
        raise ValueError(f"counts of shape {counts.shape} do not match {len(seconds)} seconds")
    seen = counts.any(axis=0)
    x = np.column_stack([np.ones(len(seconds)), counts[:, seen]])
    if len(seconds) < x.shape[1]:
        raise ValueError(f"{len(seconds)} batches cannot fit {x.shape[1]} costs")
    beta, se, residual = _ols(x, seconds)
    drop = int(trim * len(seconds))
    kept = np.ones(len(seconds), dtype=bool)
    if drop and len(seconds) - drop >= x.shape[1] + 1:
        kept[np.argsort(np.abs(residual))[len(seconds) - drop :]] = False
        beta, se, _ = _ols(x[kept], seconds[kept])
    cost, error = np.full(len(seen), np.nan), np.full(len(seen), np.nan)
    cost[seen], error[seen] = beta[1:], se[1:]
    return Fit(cost, error, float(beta[0]), float(se[0]), kept)


def _counts(extent: EagerExtent | LazyExtent) -> np.ndarray:
    c = extent.counters
    return np.array([getattr(c, name) for name in _COUNTERS], dtype=np.int64)


def _scan(extent: EagerExtent | LazyExtent) -> float:
    start = time.perf_counter_ns()
    extent.view()
    return (time.perf_counter_ns() - start) / 1e9


@dataclass
class _Run:
    """One extent's timed batches (seconds, counter increments), its timed scans (seconds,
    raw tuples, stored tuples) and the extent at the end."""

    seconds: list[float]
    counts: list[np.ndarray]
    scans: list[tuple[float, int, int]]
    extent: EagerExtent | LazyExtent


def _stored(extent: EagerExtent | LazyExtent) -> int:
    return extent.stored if isinstance(extent, EagerExtent) else len(extent)


SWING = 0.6
"""Amplitude of the time warp's gaps (``1 +- SWING`` times the generator's): the window's
occupancy swings between about 0.6 and 1.6 windows."""
PERIOD_WINDOWS = 4
"""Period of the time warp, in windows of tuples."""


def warped(ts: np.ndarray, window: int) -> np.ndarray:
    """The timestamps re-spaced, in timestamp order, by gaps ``1 + SWING sin(2 pi i / P)``
    times the generator's (``P = PERIOD_WINDOWS window``): a monotone map, so every tuple
    keeps its place in timestamp order (its group's run, hence cp, and whether it is out of
    order, oop), while the rate swings and a time window of ``window`` mean gaps expires
    fewer tuples than arrive while the rate rises, more while it falls (module docstring).

    >>> ts = np.array([3.0, 1.0, 2.0, 4.0])
    >>> new = warped(ts, window=2)
    >>> np.argsort(new).tolist() == np.argsort(ts).tolist(), float(new[1])
    (True, 1.0)
    """
    order = np.argsort(ts, kind="stable")
    gaps = np.diff(ts[order], prepend=ts[order][0] - 1.0)
    scale = 1.0 + SWING * np.sin(2 * np.pi * np.arange(len(ts)) / (PERIOD_WINDOWS * window))
    out = np.empty_like(ts)
    out[order] = ts[order][0] - 1.0 + np.cumsum(gaps * scale)
    return out


def _timed_run(
    extent: EagerExtent | LazyExtent,
    readings: Readings,
    warm: int,
    sizes: np.ndarray,
    scan_every: int,
) -> _Run:
    """Push ``readings`` into ``extent``: the first ``warm`` untimed (the window grows to its
    largest), then in batches of ``sizes`` (cycled), timing each batch and every
    ``scan_every``-th batch's scan."""
    extent.push_batch(readings[:warm])
    run = _Run([], [], [], extent)
    lo, b, before = warm, 0, _counts(extent)
    while lo < len(readings):
        hi = min(lo + int(sizes[b % len(sizes)]), len(readings))
        batch = readings[lo:hi]
        began = time.perf_counter_ns()
        extent.push_batch(batch)
        run.seconds.append((time.perf_counter_ns() - began) / 1e9)
        after = _counts(extent)
        run.counts.append(after - before)
        before, lo, b = after, hi, b + 1
        if b % scan_every == 0:
            run.scans.append((_scan(extent), len(extent), _stored(extent)))
    return run


def _update_seconds(run: _Run, fit: Fit) -> float:
    """The run's update seconds: its batches' seconds less the fitted per-call seconds, over
    the batches the fit kept (a descheduled batch's wait is no update cost), scaled to all
    the tuples the batches pushed."""
    counts = np.array(run.counts)
    arrivals = counts[:, 0] + counts[:, 1]  # inserts and merges: every accepted arrival
    kept = fit.inliers
    seconds = np.array(run.seconds)[kept].sum() - fit.intercept * kept.sum()
    return float(seconds * arrivals.sum() / max(arrivals[kept].sum(), 1))


def _scan_fit(scans: list[tuple[float, int, int]], column: int) -> tuple[float, float]:
    """Seconds per tuple read (the slope over the scans' ``column``: 1 raw, 2 stored) and
    its standard error."""
    table = np.array(scans, dtype=float)
    fit = fit_costs(table[:, column : column + 1], table[:, 0])
    return float(fit.cost[0]), float(fit.se[0])


def measure_cell(
    rng: np.random.Generator,
    cp: float,
    oop: float,
    tuples: int,
    window: int,
    mechanism: Mechanism = "fast",
    batch: tuple[int, int] = (16, 256),
    scan_every: int = 16,
) -> dict[str, float]:
    """One cell's run (module docstring): target ``cp`` and ``oop``, the run's
    ``cp_measured``, ``oop_measured`` and ``split_rate`` (splits per arrival; Eq. 3 expects
    about oop x (1 - cp)), Table 4's costs in seconds with their standard errors
    (``<name>_se``; NaN where not exercised), the lazy extent's own ``lazy_insert`` and
    ``lazy_delete``, the fitted per-call seconds ``call_s``, and the run's totals
    ``eager_update_s``, ``lazy_update_s`` (the batches less the fitted per-call seconds, the
    descheduled ones left out and the rest scaled to all the tuples),
    ``eager_scan_s``, ``lazy_scan_s`` (a scan of the final window), ``eager_stored``
    (coalesced tuples), ``window_tuples`` (raw tuples in the window), ``tuples`` (pushed) and
    ``batches`` (timed).  Batch sizes are drawn from ``batch`` (inclusive; scaled down in a
    run too short for :data:`MIN_BATCHES` of them); every
    ``scan_every``-th batch is followed by a timed scan (more often in a short run).

    >>> cell = measure_cell(np.random.default_rng(0), 0.5, 0.5, tuples=3000, window=100)
    >>> cell["window_tuples"], 0.3 < cell["cp_measured"] < 0.7, cell["mechanism"]
    (100, True, 'fast')
    """
    if tuples <= window:
        raise ValueError(f"tuples = {tuples!r} must exceed window = {window!r} to expire any")
    lo, hi = batch
    if not 1 <= lo <= hi:
        raise ValueError(f"batch = {batch!r} must be sizes 1 <= low <= high")
    rows = coalescing_rows(rng, tuples, cp=cp, oop=oop)
    ts, value, group = (np.array(col) for col in zip(*rows, strict=True))
    readings = Readings(warped(ts, window), value, group)
    warm = min(PERIOD_WINDOWS * window, tuples // 4)
    shrink = (tuples - warm) / MIN_BATCHES / ((lo + hi) / 2)
    if shrink < 1:  # a short run: smaller batches, so that enough are timed
        lo, hi = max(1, int(lo * shrink)), max(2, int(hi * shrink))
    sizes = rng.integers(lo, hi + 1, max(16, 4 * tuples // lo))
    batches = 2 * (tuples - warm) // (lo + hi)
    scan_every = max(1, min(scan_every, batches // 32))  # at least 32 scans when it can
    runs = {}
    enabled = gc.isenabled()
    gc.disable()  # a collection inside a timed batch is not the operation's cost
    try:
        for scheme in ("eager", "lazy"):
            extent = make_extent(scheme, window, mechanism, kind="time")
            runs[scheme] = _timed_run(extent, readings, warm, sizes, scan_every)
    finally:
        if enabled:
            gc.enable()
    eager, lazy = runs["eager"], runs["lazy"]
    fit = fit_costs(np.array(eager.counts), np.array(eager.seconds))
    lazy_counts = np.array(lazy.counts)[:, [0, 4]]  # inserts, deletes
    lazy_fit = fit_costs(lazy_counts, np.array(lazy.seconds))
    update = dict(zip(EQ3_TERMS, fit.cost.tolist(), strict=True))
    update_se = dict(zip(EQ3_TERMS, fit.se.tolist(), strict=True))
    read, read_se = _scan_fit(eager.scans, 2)
    per_raw, per_raw_se = _scan_fit(lazy.scans, 1)
    total = np.array(eager.counts).sum(axis=0)  # the timed batches' operations
    arrivals = max(int(total[0] + total[1]), 1)
    cp_measured = float(total[1] / arrivals)
    counters = eager.extent.counters
    coalesce, coalesce_se = np.nan, np.nan
    if cp_measured > 0:  # Eq. 6: per raw tuple cp (C_coalesce + C_read) + (1 - cp) C_read
        coalesce = max(per_raw - read, 0.0) / cp_measured
        coalesce_se = float(np.hypot(per_raw_se, read_se)) / cp_measured
    costs = {
        "read": read,
        "insert": update["insert"],
        "delete": update["delete"],
        "attach": update["merge"],  # mergeTuples attaches the timestamp: C_merge stands for it
        "detach": update["detach"],
        "merge": update["merge"],
        "split": update["split"],
        "coalesce": coalesce,
    }
    spread = {
        "read": read_se,
        "insert": update_se["insert"],
        "delete": update_se["delete"],
        "attach": update_se["merge"],
        "detach": update_se["detach"],
        "merge": update_se["merge"],
        "split": update_se["split"],
        "coalesce": coalesce_se,
    }
    scans = np.array(eager.scans, dtype=float)  # per scan: seconds, raw tuples, stored
    lazy_scans = np.array(lazy.scans, dtype=float)
    return {
        "mechanism": mechanism,
        "oop": oop,
        "cp": cp,
        "cp_measured": cp_measured,
        "oop_measured": float(counters.oop),
        "split_rate": float(total[2] / arrivals),
        **costs,
        **{f"{name}_se": value for name, value in spread.items()},
        "lazy_insert": float(lazy_fit.cost[0]),
        "lazy_delete": float(lazy_fit.cost[1]),
        "lazy_insert_se": float(lazy_fit.se[0]),
        "lazy_delete_se": float(lazy_fit.se[1]),
        "call_s": fit.intercept,
        "eager_update_s": _update_seconds(eager, fit),
        "lazy_update_s": _update_seconds(lazy, lazy_fit),
        "eager_scan_s": window * float(np.median(scans[:, 0] / scans[:, 1])),
        "lazy_scan_s": window * float(np.median(lazy_scans[:, 0] / lazy_scans[:, 1])),
        "eager_stored": window * float(np.median(scans[:, 2] / scans[:, 1])),
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
