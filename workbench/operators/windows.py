"""A multi-way window join's configuration (W-join paper, Sections 2 and 5): its window
constraints, delays, predicate and strategy, its batch of tuples, one validated tuple and its
counters.

Window constraints (Section 2 "W-join forms"):

The constraints form a graph over the m joined streams: an edge (i, j) with window w_ij
requires ``|ts_i - ts_j| <= w_ij``.  Forms: uniform clique (every pair, one window),
non-uniform clique (every pair, own windows), path and graph (some pairs unconstrained).
A missing constraint is bounded by the shortest path between its streams (triangle
inequality), computed once at query installation (Section 5.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from workbench.protocol import OperatorConfig
from workbench.records import Columns, Counters

__all__ = [
    "FEWConfig",
    "Form",
    "Mechanism",
    "Predicate",
    "Strategy",
    "WJoinConfig",
    "WJoinCounters",
    "WTuple",
    "WTuples",
    "WindowConstraints",
]

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

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WindowConstraints):
            return NotImplemented
        return np.array_equal(self.windows, other.windows)

    def __hash__(self) -> int:
        return hash(self.windows.tobytes())

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


Strategy = Literal["uniform", "gca", "lca", "modified"]
"""How windows are evaluated: one uniform window, GCA or LCA filter-and-refine, or modified
BEW (each pair's own bound)."""
Implementation = Literal["nested", "hash"]
Mechanism = Literal["fast", "paper"]
"""How BEW and FEW find, test and expire the tuples they buffer.  ``fast``: BEW binary-searches
each stream's time-ordered buffer for its period and expires what no future arrival can join
after every tuple; FEW opens each buffered tuple's period in turn once nothing older can come.
``paper``: BEW tests every buffered tuple against its period and drops a tuple only when its
search meets it too old for any arrival given each stream's newest timestamp (Section 3.1); FEW
shares one period across arrivals, joins the tuples inside it blindly and trims its buffers
when a tuple outside it restarts mode 1 (Section 3.2).  Same results, in both engines (the
compiled kernel runs both)."""
Predicate = Literal["equal"] | Callable[[tuple[Hashable, ...]], bool]


class WTuple(NamedTuple):
    """One tuple as the W-join's validation leaves it (the record its hooks pass on): stream
    index, tuple id, join value, valid-time timestamp and arrival time.

    >>> WTuple(2, 3, "car", 109.0, 109.5).time
    109.0
    """

    stream: int
    id: int
    value: Hashable
    ts: float
    arrival: float

    @property
    def time(self) -> float:
        """The tuple's own time, its delay's origin: ``ts``."""
        return self.ts


@dataclass(frozen=True, eq=False)
class WTuples(Columns):
    """A batch of tuples of the m streams in arrival order: stream index, tuple id, join
    value (the key), valid-time timestamp and arrival time.

    >>> batch = WTuples(np.array([0, 1]), np.array([1, 2]), np.array(["car", "car"]),
    ...                 np.array([100.0, 104.0]), np.array([100.0, 104.0]))
    >>> list(batch.rows())[1]
    (1, 2, 'car', 104.0, 104.0)
    """

    stream: np.ndarray
    id: np.ndarray
    value: np.ndarray
    ts: np.ndarray
    arrival: np.ndarray

    def __post_init__(self) -> None:
        self._coerce(stream=np.int64, id=np.int64, ts=np.float64, arrival=np.float64)


@dataclass(frozen=True, kw_only=True)
class WJoinConfig(OperatorConfig):
    """A multi-way join's configuration: window constraints, each stream's delay bound D_s,
    the predicate (equality of the key, or a function of the m values), the window strategy
    (Section 5.1), the implementation (nested loop or hash), the mechanism (:data:`Mechanism`:
    today's fast one or the paper's) and the bad-record policy.

    >>> WJoinConfig(constraints=WindowConstraints.uniform(2, 5.0), max_delay=[1, 2]).max_delay
    (1.0, 2.0)
    """

    constraints: WindowConstraints
    max_delay: tuple[float, ...]
    predicate: Predicate = "equal"
    strategy: Strategy = "uniform"
    implementation: Implementation = "nested"
    mechanism: Mechanism = "fast"

    def __post_init__(self) -> None:
        m = self.constraints.m
        delays = tuple(float(x) for x in self.max_delay)
        if len(delays) != m or not all(math.isfinite(x) and x >= 0 for x in delays):
            raise ValueError(f"max_delay = {self.max_delay!r} needs {m} finite delays >= 0")
        object.__setattr__(self, "max_delay", delays)
        if self.strategy not in ("uniform", "gca", "lca", "modified"):
            raise ValueError(f"strategy = {self.strategy!r} is not uniform, gca, lca, modified")
        if self.implementation not in ("nested", "hash"):
            raise ValueError(f"implementation = {self.implementation!r} is not nested or hash")
        if self.mechanism not in ("fast", "paper"):
            raise ValueError(f"mechanism = {self.mechanism!r} is not fast or paper")
        if self.implementation == "hash" and self.predicate != "equal":
            raise ValueError("implementation = 'hash' needs the equality predicate")
        if self.predicate != "equal" and not callable(self.predicate):
            raise ValueError(f"predicate = {self.predicate!r} is not 'equal' nor callable")
        super().__post_init__()
        form = self.constraints.form
        if self.strategy == "uniform" and form != "uniform clique":
            raise ValueError(
                f"strategy = 'uniform' needs a uniform clique, the constraints form a {form}"
            )


@dataclass(frozen=True, kw_only=True)
class FEWConfig(WJoinConfig):
    """FEW-join's configuration: a multi-way join's, without the modified-BEW strategy."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.strategy == "modified":
            raise ValueError("strategy = 'modified' is the modified BEW-join; FEW uses gca or lca")


@dataclass
class WJoinCounters(Counters):
    """The shared counters plus a multi-way join's work (W-join Sections 3.1-3.2): window and
    predicate comparisons, tuples dropped from the buffers, buffered tuples visited inside
    and outside the period being built, and the most tuples buffered at once."""

    comparisons: int = 0
    dropped: int = 0
    visited_inside: int = 0
    """Buffered tuples the search visited that lay inside the period (candidates)."""
    visited_outside: int = 0
    """Buffered tuples the search visited that lay outside the period: the work the paper
    blames for BEW's cost (Section 3.1's discussion)."""
    peak_buffered: int = 0
    """The most tuples buffered at once over all streams, after any tuple."""
