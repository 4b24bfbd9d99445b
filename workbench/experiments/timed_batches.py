"""One extent's stream timed batch by batch, and the time warp that lets a fit tell arrivals
from expiries (coalescing paper, Section 7.2's cells, measured by
:mod:`~workbench.experiments.atomic_costs`).

**Batches.**  A compiled push costs well under a microsecond, one Python call of
``push_batch`` tens of microseconds, so a per-push timer would measure the interpreter: a
stream goes through the extent in batches of random sizes, each batch timed, the extent's
counters read after it (what the batch did: inserts, merges, splits, detaches, deletes).
The first tuples run untimed (the arrays grow to their largest).

**The warp.**  In a full tuple window every accepted arrival expires exactly one tuple, so
arrivals and expiries move together and no fit could tell them apart.  The stream therefore
runs through a *time* window, its timestamps re-spaced by a monotone warp (:func:`warped`)
whose rate swings, so that the window expires fewer tuples than arrive while the rate rises
and more while it falls (between about 0.6 and 1.6 windows held): every tuple keeps its
place in timestamp order, so the stream's cp and oop are unchanged.

**Scans.**  Scans have no compiled path (``view`` builds the window's Python objects): the
extent is scanned :data:`SCANS` times, evenly spread over the batches, at every occupancy the
swing gives.  A fixed number, not one per so many batches: a scan reads the whole window,
which held the whole stream at oop = 1 with the generator before 2026-11-28 (no arrival in
order, so the largest timestamp never moved), where one scan per 16 batches made three
quarters of a 200,000-tuple cell's time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from workbench.coalesce import EagerExtent, LazyExtent
from workbench.coalesce.window import Readings
from workbench.experiments.batch_fit import Fit, fit_costs

__all__ = [
    "COUNTERS",
    "PERIOD_WINDOWS",
    "SCANS",
    "SWING",
    "TimedRun",
    "scan_fit",
    "timed_run",
    "update_seconds",
    "warped",
]

COUNTERS = ("inserts", "merges", "splits", "detaches", "deletes")
"""The extent counters each timed batch reads, in Eq. 3's order."""
SWING = 0.6
"""Amplitude of the time warp's gaps (``1 +- SWING`` times the generator's): the window's
occupancy swings between about 0.6 and 1.6 windows."""
PERIOD_WINDOWS = 4
"""Period of the time warp, in windows of tuples."""
SCANS = 32
"""Timed scans per run, evenly spread over its batches (fewer in a run of fewer batches)."""

Extent = EagerExtent | LazyExtent


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


def _counts(extent: Extent) -> np.ndarray:
    c = extent.counters
    return np.array([getattr(c, name) for name in COUNTERS], dtype=np.int64)


def _stored(extent: Extent) -> int:
    return extent.stored if isinstance(extent, EagerExtent) else len(extent)


def _scan(extent: Extent) -> tuple[float, int, int]:
    """One timed scan: seconds, raw tuples in the window, stored tuples."""
    start = time.perf_counter_ns()
    extent.view()
    return (time.perf_counter_ns() - start) / 1e9, len(extent), _stored(extent)


@dataclass
class TimedRun:
    """One extent's timed batches (seconds, counter increments in :data:`COUNTERS`' order),
    its timed scans (seconds, raw tuples, stored tuples) and the extent at the end."""

    seconds: list[float]
    counts: list[np.ndarray]
    scans: list[tuple[float, int, int]]
    extent: Extent

    def scan_table(self) -> np.ndarray:
        """The scans as rows of (seconds, raw tuples, stored tuples)."""
        return np.array(self.scans, dtype=float).reshape(-1, 3)


def timed_run(
    extent: Extent, readings: Readings, warm: int, sizes: np.ndarray, scans: int = SCANS
) -> TimedRun:
    """Push ``readings`` into ``extent``: the first ``warm`` untimed (the window grows to its
    largest), then in batches of ``sizes`` (cycled), timing each batch, and ``scans`` timed
    scans evenly spread over the batches (module docstring).

    >>> from workbench.coalesce import Window
    >>> r = Readings(np.arange(40.0), np.zeros(40, dtype=np.int64), np.zeros(40, dtype=np.int64))
    >>> run = timed_run(EagerExtent(Window("tuples", 8)), r, 8, np.array([4]), scans=2)
    >>> len(run.seconds), len(run.scans), int(np.sum(run.counts, axis=0)[1])  # 32 merges
    (8, 2, 32)
    """
    extent.push_batch(readings[:warm])
    batches = (len(readings) - warm) / float(np.mean(sizes))  # about as many
    every = max(1, int(batches) // max(scans, 1))
    run = TimedRun([], [], [], extent)
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
        if b % every == 0 and len(run.scans) < scans:
            run.scans.append(_scan(extent))
    return run


def update_seconds(run: TimedRun, fit: Fit) -> float:
    """The run's update seconds: its batches' seconds less the fitted per-call seconds, over
    the batches the fit kept (a descheduled batch's wait is no update cost), scaled to all
    the tuples the batches pushed."""
    counts = np.array(run.counts)
    arrivals = counts[:, 0] + counts[:, 1]  # inserts and merges: every accepted arrival
    kept = fit.inliers
    seconds = np.array(run.seconds)[kept].sum() - fit.intercept * kept.sum()
    return float(seconds * arrivals.sum() / max(arrivals[kept].sum(), 1))


def scan_fit(run: TimedRun, column: int) -> tuple[float, float]:
    """Seconds per tuple read (the slope over the scans' ``column``: 1 raw, 2 stored) and
    its standard error."""
    table = run.scan_table()
    fit = fit_costs(table[:, column : column + 1], table[:, 0])
    return float(fit.cost[0]), float(fit.se[0])
