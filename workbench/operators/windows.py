"""Window constraints of a multi-way window join (W-join paper, Section 2 "W-join forms").

The constraints form a graph over the m joined streams: an edge (i, j) with window w_ij
requires ``|ts_i - ts_j| <= w_ij``.  Forms: uniform clique (every pair, one window),
non-uniform clique (every pair, own windows), path and graph (some pairs unconstrained).
A missing constraint is bounded by the shortest path between its streams (triangle
inequality), computed once at query installation (Section 5.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = ["Form", "WindowConstraints"]

Form = Literal["uniform clique", "non-uniform clique", "path", "graph"]


@dataclass(frozen=True, eq=False)
class WindowConstraints:
    """Symmetric window matrix; ``inf`` marks a missing constraint, the diagonal is ignored.

    >>> wc = WindowConstraints.path([5.0, 3.0])        # S0 -5- S1 -3- S2
    >>> wc.form, float(wc.closure()[0, 2])
    ('path', 8.0)
    >>> WindowConstraints.uniform(3, 10.0).form
    'uniform clique'
    """

    windows: np.ndarray
    _closure: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        w = np.array(self.windows, dtype=np.float64)
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise ValueError(f"windows must be a square matrix, got shape {w.shape}")
        m = w.shape[0]
        if not 2 <= m <= 6:
            raise ValueError(f"windows joins m = {m} streams; W-join here takes 2 to 6")
        np.fill_diagonal(w, 0.0)
        if not np.array_equal(w, w.T):
            i, j = np.argwhere(w != w.T)[0]
            raise ValueError(
                f"windows[{i}][{j}] = {float(w[i, j])!r} differs from "
                f"windows[{j}][{i}] = {float(w[j, i])!r}"
            )
        bad = np.argwhere(np.isnan(w) | (w < 0))
        if bad.size:
            i, j = bad[0]
            raise ValueError(f"windows[{i}][{j}] = {float(w[i, j])!r} must be a window >= 0 or inf")
        closure = w.copy()
        for k in range(m):  # Floyd-Warshall: the shortest-path bound of every pair
            closure = np.minimum(closure, closure[:, k : k + 1] + closure[k : k + 1, :])
        if np.isinf(closure).any():
            i, j = np.argwhere(np.isinf(closure))[0]
            raise ValueError(
                f"streams {i} and {j} are not connected by window constraints: "
                "the join would never let a tuple expire"
            )
        w.flags.writeable = False
        closure.flags.writeable = False
        object.__setattr__(self, "windows", w)
        object.__setattr__(self, "_closure", closure)

    @classmethod
    def uniform(cls, m: int, window: float) -> WindowConstraints:
        """The uniform clique: one window for every pair of the m streams."""
        return cls(np.full((m, m), float(window)))

    @classmethod
    def path(cls, windows: list[float]) -> WindowConstraints:
        """A path S0 - S1 - ... with ``windows[i]`` between S_i and S_i+1."""
        m = len(windows) + 1
        w = np.full((m, m), np.inf)
        for i, x in enumerate(windows):
            w[i, i + 1] = w[i + 1, i] = x
        return cls(w)

    @classmethod
    def graph(cls, m: int, edges: dict[tuple[int, int], float]) -> WindowConstraints:
        """Windows on the given edges only."""
        w = np.full((m, m), np.inf)
        for (i, j), x in edges.items():
            w[i, j] = w[j, i] = x
        return cls(w)

    @property
    def m(self) -> int:
        """Number of joined streams."""
        return int(self.windows.shape[0])

    @property
    def form(self) -> Form:
        """Which W-join form the constraints take."""
        off = self.windows[~np.eye(self.m, dtype=bool)]
        if np.isfinite(off).all():
            return "uniform clique" if np.all(off == off[0]) else "non-uniform clique"
        degrees = np.isfinite(self.windows).sum(axis=1) - 1
        edges = int(degrees.sum()) // 2
        if edges == self.m - 1 and degrees.max() <= 2:
            return "path"
        return "graph"

    def closure(self) -> np.ndarray:
        """Every pair's bound: the window, or the shortest path where the window is missing."""
        return self._closure

    def satisfied(self, ts: np.ndarray) -> bool:
        """Whether one timestamp per stream meets every (original) window constraint."""
        gaps = np.abs(ts[:, None] - ts[None, :])
        return bool(np.all(gaps <= self.windows))
