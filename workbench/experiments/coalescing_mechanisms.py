"""The eager extent's two mechanisms side by side (coalescing paper, Sections 4.2.2 and 7.2):
ours (``fast``: linked tuples, binary-searched vectors) and the paper's array (``paper``:
Algorithm 2 with linear scans and shifts), on Section 7.1's stream
(:func:`~workbench.experiments.coalescing_stream.coalescing_rows`), compiled.

Both give the same view and count the same atomic operations; what differs is measured here:
pushes per second, the array's work per push (elements scanned and shifted) and its
allocated bytes, and the split fraction against the two models of it: ``oop x cp x (1 -
cp)`` (a late arrival cuts a run only inside one, see the generator) and Eq. 3's ``oop x (1 -
cp)`` (Algorithm 2, Line 18 calls splitTuple on every late arrival that does not merge).

**Which split figure is right.**  :func:`split_paths` follows a stream arrival by arrival
(an oracle in plain Python: each group's timestamps kept sorted, no window) and counts both:
``line18``, the late arrivals that coalesce with neither neighbour (Algorithm 2 sends them to
Line 18, and Eq. 3 charges each ``C_insert + C_split``), and ``cuts``, those whose two
neighbours hold one value, the runs a split really cuts (the counter both extents keep; a
test checks it is the oracle's).  On Section 7.1's generator ``line18`` is ``oop x (1 -
cp)`` within a few thousandths, and ``cuts`` is at most ``oop x cp x (1 - cp)``: a late
arrival lands inside a run when its two neighbours are equal, probability cp by Table 4's
definition of cp_i, independently of its lateness (Eq. 3 multiplies ``oop_i`` and ``cp_i``).
No generator can give cuts at ``oop x (1 - cp)`` over the grid: a run's inner gap (two
neighbours in one run) is made only by a merge (each merge makes one) and every cut removes
one, so ``cuts <= merges``, about ``cp`` per arrival, below ``oop x (1 - cp)`` wherever
``cp < oop x (1 - cp)`` (all of cp = 0, and cp 0.1-0.4 at oop 1); elsewhere only a generator
that chose a late tuple's place by the values around it (inside a run) could, which Eq. 3's
independent ``oop_i`` and ``cp_i`` exclude.  So Eq. 3's ``C_split`` term counts Line 18's
calls, most of them on a target that is a single reading (Function 3 then has no timestamp
to move), and the split counter counts the cuts.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, Readings, Window
from workbench.coalesce.window import Mechanism
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.experiments.harness import timed, warm_up
from workbench.experiments.scale import sized

__all__ = ["MECHANISMS", "mechanism_rates", "mechanism_work", "split_paths"]

MECHANISMS: tuple[Mechanism, ...] = ("fast", "paper")
"""The eager extent's mechanisms, ours first."""


def split_paths(rows: Iterable[tuple[float, object, object]]) -> dict[str, int]:
    """How many of the ``(ts, value, group)`` arrivals (no window) take each of Algorithm 2's
    paths (module docstring): ``arrivals``, ``late`` (below the largest timestamp so far,
    Line 9), ``merges`` (equal to a neighbour of its group in timestamp order; placed after
    equal timestamps, as the extents place it), ``line18`` (late and equal to neither
    neighbour) and ``cuts`` (its two neighbours equal, itself different: splitTuple cuts a
    run).

    >>> split_paths([(1.0, 5, "a"), (3.0, 5, "a"), (2.0, 7, "a"), (2.5, 5, "a")])
    {'arrivals': 4, 'late': 2, 'merges': 2, 'line18': 1, 'cuts': 1}
    """
    keys: dict[object, list[float]] = {}
    values: dict[object, list[object]] = {}
    count = dict.fromkeys(("arrivals", "late", "merges", "line18", "cuts"), 0)
    latest = float("-inf")
    for ts, value, group in rows:
        ks, vs = keys.setdefault(group, []), values.setdefault(group, [])
        at = bisect.bisect_right(ks, ts)
        before = vs[at - 1] if at > 0 else None
        after = vs[at] if at < len(vs) else None
        merges = value in (before, after)
        late = ts < latest
        count["arrivals"] += 1
        count["late"] += late
        count["merges"] += merges
        count["line18"] += late and not merges
        count["cuts"] += at > 0 and after is not None and before == after != value
        ks.insert(at, ts)
        vs.insert(at, value)
        latest = max(latest, ts)
    return count


def mechanism_work(
    batch: Readings, window: Window, equivalence: Equivalence, repeats: int = 1
) -> pd.DataFrame:
    """``batch`` through the eager extent by each mechanism, compiled (after a warm-up on a
    fresh copy; the best of ``repeats`` fresh runs timed): one row per mechanism, columns
    ``mechanism``, ``pushes_per_s``,
    ``scanned_per_push`` and ``shifted_per_push`` (the array's work; 0 for ours, which does
    not count it), ``splits`` and ``stored`` (coalesced tuples at the end).

    >>> batch = Readings(np.array([1.0, 3.0, 2.0]), np.array([5, 5, 7]), np.array([0, 0, 0]))
    >>> t = mechanism_work(batch, Window("tuples", 10), Equivalence())
    >>> t[["mechanism", "splits", "stored"]].values.tolist()
    [['fast', 1, 3], ['paper', 1, 3]]
    """
    rows, n = [], max(len(batch), 1)
    for mechanism in MECHANISMS:
        extent = EagerExtent(window, equivalence, mechanism=mechanism)
        warm_up(extent, batch)
        seconds = float("inf")
        for _ in range(repeats):
            extent = extent.clone()
            seconds = min(seconds, timed(lambda e=extent: e.push_batch(batch))[1])
        c = extent.counters
        rows.append(
            {
                "mechanism": mechanism,
                "pushes_per_s": len(batch) / max(seconds, 1e-9),
                "scanned_per_push": getattr(c, "scanned", 0) / n,
                "shifted_per_push": getattr(c, "shifted", 0) / n,
                "splits": c.splits,
                "stored": extent.stored,
            }
        )
    return pd.DataFrame(rows)


def mechanism_rates(
    cells: Sequence[tuple[float, float]] = ((0.5, 0.5), (0.9, 0.1)),
    windows: Sequence[int] = (1000, 5000),
    tuples: int | None = None,
    seed: int = 0,
    repeats: int = 3,
) -> pd.DataFrame:
    """:func:`mechanism_work` (best of ``repeats``) of each ``(cp, oop)`` cell's stream of
    ``tuples`` tuples (default ``sized(ci=20_000, paper=200_000)``: Section 7.1's size at
    paper scale), pushed in one batch through a tuple-based window of each size: its columns
    and ``cp``, ``oop``,
    ``window``, ``split_fraction``, ``model_splits`` (``oop x cp x (1 - cp)``) and
    ``eq3_splits`` (``oop x (1 - cp)``).

    >>> t = mechanism_rates(cells=[(0.5, 0.5)], windows=[50], tuples=500)
    >>> t.mechanism.tolist(), bool(t.stored.nunique() == 1 and t.splits.nunique() == 1)
    (['fast', 'paper'], True)
    """
    n = sized(ci=20_000, paper=200_000) if tuples is None else tuples
    tables = []
    for cp, oop in cells:
        stream = coalescing_rows(np.random.default_rng(seed), n, cp=cp, oop=oop)
        batch = Readings(*(np.array(col) for col in zip(*stream, strict=True)))
        for size in windows:
            table = mechanism_work(batch, Window("tuples", size), Equivalence(), repeats)
            table.insert(0, "window", size)
            table.insert(0, "oop", oop)
            table.insert(0, "cp", cp)
            table["split_fraction"] = table.splits / n
            table["model_splits"] = oop * cp * (1 - cp)
            table["eq3_splits"] = oop * (1 - cp)
            tables.append(table)
    return pd.concat(tables, ignore_index=True)
