"""The window rule of the coalescing paper (Section 2.1) stated directly, for the extent,
adaptive-coalescing and conformance tests; one equivalence of each kind; rows as batches for
the engine comparisons."""

from __future__ import annotations

import numpy as np

from workbench.coalesce import Equivalence, Readings, Window

EQUIVALENCES = [
    Equivalence("equal"),
    Equivalence("quantized", quantum=2.0),
    Equivalence("absolute", tolerance=1.0),
    Equivalence("relative", tolerance=0.2),
    Equivalence("increasing"),
]
"""One equivalence of each kind, for the extents' oracle tests."""


def flat(view):
    """A coalesced view as plain tuples, arrival numbers included."""
    return [(c.ts, c.seq, c.te, c.group, c.value, c.count) for c in view]


class WindowOracle:
    """The window rule stated directly: accepted tuples, top-w or within T of the newest."""

    def __init__(self, window: Window) -> None:
        self.window, self.accepted, self.seq = window, [], 0

    def push(self, ts, value, group):
        key = (float(ts), self.seq)
        self.seq += 1
        keys = sorted((a[0], a[1]) for a in self.inside())
        if self.window.kind == "tuples":
            late = len(keys) >= self.window.size and key < keys[0]
        else:
            t_max = max([k[0] for k in keys] + [key[0]]) if keys else key[0]
            late = key[0] < t_max - self.window.size
        if not late:
            self.accepted.append((key[0], key[1], group, value))
        return not late

    def inside(self):
        rows = sorted(self.accepted, key=lambda r: (r[0], r[1]))
        if not rows:
            return []
        if self.window.kind == "tuples":
            return rows[-int(self.window.size) :]
        t_max = max(r[0] for r in rows)
        return [r for r in rows if r[0] >= t_max - self.window.size]


def column(items: list) -> np.ndarray:
    """A batch column as NumPy makes it from the items, or an object array when NumPy would
    not make a flat one (tuples, mixed types)."""
    try:
        col = np.array(items)
    except ValueError:
        col = None
    if col is None or col.ndim != 1 or len(col) != len(items):
        col = np.empty(len(items), dtype=object)
        for k, item in enumerate(items):
            col[k] = item
    return col


def readings(rows: list[tuple]) -> Readings:
    """Rows ``(ts, value, group)`` as one batch (:func:`column` for each column)."""
    ts, values, groups = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
    return Readings(np.array(ts, dtype=np.float64), column(values), column(groups))
