"""Table 4's atomic costs measured per (cp, oop) cell from real runs of the extents
(coalescing paper, Sections 6.1 and 7.2): the costs as functions of cp and oop, not constants.

Each cell streams :func:`~workbench.experiments.workloads.coalescing_rows` (Section 7.1's
generator, at the cell's cp and oop) through an eager and a lazy extent, one timed ``push``
per tuple, and reads what each push did from the extent's counters.  Eq. 3 prices an eager
arrival as C_insert (in order, no merge), C_merge (any merge), C_insert + C_split (out of
order, no merge), plus C_detach or C_delete for the tuple it expires; the cell's costs are the
least-squares fit of that sum to the pushes' times (the median time of each kind of push,
weighted by how often it occurred; the window's filling pushes expire nothing, which tells the
arrival costs from the expiry costs).  Scans (Eq. 5-6) are timed after the stream, less the
scan of an empty extent: C_read is the eager scan's time per stored tuple (Eq. 5: the paper's
C_read grows with the timestamp vector), C_coalesce the lazy scan's time per raw tuple above
C_read, per coalescing tuple (Eq. 6; zero where a lazy scan reads a raw tuple faster than the
eager scan reads a coalesced one).  A cost the cell never exercised (C_merge at cp = 0,
C_split at oop = 0, ...) is left NaN, and :func:`cost_grid_of` takes it from the nearest cell
that did.  Everything is in seconds and includes the Python call of ``push`` (Table 4's note:
"extra costs for setting up and following up").

The cells also keep the runs' own totals (update seconds of each scheme, scan seconds, stored
tuples): :mod:`workbench.experiments.cost_surfaces` draws Figures 3 and 4 from them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import fields

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.coalesce.cost import AtomicCosts, CostGrid
from workbench.experiments.workloads import coalescing_rows

__all__ = ["ATOMIC", "EQ3_TERMS", "cost_grid_of", "measure_cell", "measure_cells"]

ATOMIC = tuple(f.name for f in fields(AtomicCosts))
"""Table 4's atomic operations, in :class:`~workbench.coalesce.cost.AtomicCosts`' order."""
EQ3_TERMS = ("insert", "merge", "split", "detach", "delete")
"""The atomic costs of an eager update (Eq. 3), fitted to the timed pushes."""
_COUNTED = ("merges", "out_of_order", "detaches", "deletes", "inserts")


def _timed_pushes(
    extent: EagerExtent | LazyExtent, rows: Sequence[tuple[float, int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Each push's seconds and what it did: counter increments, columns as ``_COUNTED``."""
    push, clock = extent.push, time.perf_counter_ns
    seconds = np.empty(len(rows))
    counts = np.empty((len(rows) + 1, len(_COUNTED)), dtype=np.int64)
    c = extent.counters
    counts[0] = [getattr(c, name) for name in _COUNTED]
    for i, row in enumerate(rows):
        start = clock()
        push(*row)
        seconds[i] = (clock() - start) / 1e9
        c = extent.counters
        counts[i + 1] = [getattr(c, name) for name in _COUNTED]
    return seconds, np.diff(counts, axis=0)


def _fit(terms: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Per-term costs such that each push's time is its terms' sum (NaN: never exercised).

    Pushes doing the same terms are one equation, their median time (robust to a descheduled
    push), weighted by the square root of their number."""
    kinds, which = np.unique(terms, axis=0, return_inverse=True)
    medians = np.array([np.median(seconds[which == k]) for k in range(len(kinds))])
    weight = np.sqrt(np.bincount(which, minlength=len(kinds)))
    seen = kinds.any(axis=0)
    fit = np.full(terms.shape[1], np.nan)
    solution = np.linalg.lstsq(kinds[:, seen] * weight[:, None], medians * weight, rcond=None)[0]
    fit[seen] = np.maximum(solution, 0.0)
    return fit


def _scan_seconds(extent: EagerExtent | LazyExtent, repeats: int = 3) -> float:
    """The fastest of ``repeats`` scans (``view``) of the extent."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter_ns()
        extent.view()
        best = min(best, (time.perf_counter_ns() - start) / 1e9)
    return float(best)


def _per_tuple_read(extent: EagerExtent | LazyExtent, scan_s: float, tuples: int) -> float:
    """A scan's seconds per tuple read: beyond the scan of an empty extent of the same kind
    (setting the scan up reads no tuple), over the ``tuples`` it reads."""
    empty = type(extent)(extent.window, extent.equivalence, engine="python")
    return max(scan_s - _scan_seconds(empty), 0.0) / max(tuples, 1)


def measure_cell(
    rng: np.random.Generator, cp: float, oop: float, tuples: int, window: int
) -> dict[str, float]:
    """One cell's run (module docstring): target ``cp`` and ``oop``, the run's
    ``cp_measured`` and ``oop_measured`` (the eager extent's counters), Table 4's costs
    (seconds, NaN where not exercised), and the run's totals ``eager_update_s``,
    ``lazy_update_s`` (all pushes), ``eager_scan_s``, ``lazy_scan_s`` (one scan of the final
    window), ``eager_stored`` (coalesced tuples), ``window_tuples`` (raw tuples in the window)
    and ``tuples`` (pushed).

    >>> cell = measure_cell(np.random.default_rng(0), 0.5, 0.5, tuples=400, window=100)
    >>> cell["window_tuples"], 0.3 < cell["cp_measured"] < 0.7, cell["merge"] > 0
    (100, True, True)
    """
    if tuples <= window:
        raise ValueError(f"tuples = {tuples!r} must exceed window = {window!r} to expire any")
    rows = coalescing_rows(rng, tuples, cp=cp, oop=oop)
    eager = EagerExtent(Window("tuples", window), Equivalence(), engine="python")
    lazy = LazyExtent(Window("tuples", window), Equivalence(), engine="python")
    eager_s, done = _timed_pushes(eager, rows)
    lazy_s, _ = _timed_pushes(lazy, rows)
    merges, late, detaches, deletes, inserts = done.T
    kept = (merges + inserts) > 0  # a tuple too late for the window costs no Eq. 3 term
    added = inserts * (1 - merges)  # addTuple, in or out of order
    terms = np.column_stack([added, merges, added * (late > 0), detaches, deletes])
    insert, merge, split, detach, delete = _fit(terms[kept], eager_s[kept]).tolist()
    eager_scan, lazy_scan = _scan_seconds(eager), _scan_seconds(lazy)
    counters = eager.counters
    read = _per_tuple_read(eager, eager_scan, eager.stored)  # Eq. 5: a coalesced tuple
    above = max(_per_tuple_read(lazy, lazy_scan, len(lazy)) - read, 0.0)
    coalesce = above / counters.cp if counters.cp > 0 else float("nan")  # Eq. 6
    costs = {
        "read": read,
        "insert": insert,
        "delete": delete,
        "attach": merge,  # mergeTuples attaches the timestamp: C_merge stands for it
        "detach": detach,
        "merge": merge,
        "split": split,
        "coalesce": coalesce,
    }
    return {
        "oop": oop,
        "cp": cp,
        "cp_measured": counters.cp,
        "oop_measured": counters.oop,
        **costs,
        "eager_update_s": float(eager_s.sum()),
        "lazy_update_s": float(lazy_s.sum()),
        "eager_scan_s": eager_scan,
        "lazy_scan_s": lazy_scan,
        "eager_stored": eager.stored,
        "window_tuples": len(lazy),
        "tuples": tuples,
    }


def measure_cells(
    rng: np.random.Generator, grid: Sequence[float], tuples: int, window: int
) -> pd.DataFrame:
    """:func:`measure_cell` at every (oop, cp) of ``grid`` x ``grid``, a fresh stream of
    ``tuples`` tuples each, tuple-based window of ``window`` (rows oop-major, as
    :func:`~workbench.experiments.coalescing.rates_grid`).

    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=300, window=100)
    >>> cells[["oop", "cp"]].values.tolist(), cells["merge"].isna().tolist()  # cp 0: none
    ([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [True, False, True, False])
    """
    return pd.DataFrame([measure_cell(rng, cp, oop, tuples, window) for oop in grid for cp in grid])


def cost_grid_of(cells: pd.DataFrame) -> CostGrid:
    """The measured cells as Table 4's costs over (cp, oop): a
    :class:`~workbench.coalesce.cost.CostGrid` the cost model reads at any (cp, oop).

    A cost a cell did not exercise is the nearest exercising cell's (in cp and oop; the
    smaller cp, then oop, on a tie): the model weighs it by zero there (Eq. 3: C_merge by
    cp, C_split by oop), but U_max and interpolation read it.

    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=300, window=100)
    >>> grid = cost_grid_of(cells)
    >>> bool(grid(0.0, 0.0).merge == cells.loc[1, "merge"])  # from (cp 1, oop 0)
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
            raise ValueError(f"no cell exercised {name!r}: measure a grid with more cells")

        def nearest(i: int, seen: list[int] = seen) -> int:
            (c, o) = points[i]
            return min(
                seen, key=lambda j: (abs(points[j][0] - c) + abs(points[j][1] - o), points[j])
            )

        filled[name] = [v if np.isfinite(v) else values[nearest(i)] for i, v in enumerate(values)]
    costs = [AtomicCosts(*(float(filled[name][i]) for name in ATOMIC)) for i in range(len(points))]
    rows = tuple(tuple(costs[r * len(cp) : (r + 1) * len(cp)]) for r in range(len(oop)))
    return CostGrid(tuple(cp.tolist()), tuple(oop.tolist()), rows)
