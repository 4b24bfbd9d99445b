"""The cost model and the optimal eager/lazy selection (coalescing paper, Section 6).

Memory (Eq. 1-2), update (Eq. 3-4) and scan (Eq. 5-6) costs of a tuple-based window of w
tuples after k arrivals, for a coalescing probability cp and an out-of-order probability oop
(constant over the stream, as in the paper's experiments), normalised (Eq. 7-8), weighted
(Eq. 9-10, :meth:`Weights.total`; in Eq. 10 the lazy queries share one lazy extent), and the
0-1 selection of Theorem 1.

The atomic costs of Table 4 are either constants (:class:`AtomicCosts`) or functions of
(cp, oop) (:data:`AtomicCostsAt`, e.g. a :class:`CostGrid` measured per cell as Section 7.2
describes them: C_merge growing with cp x oop, C_split with oop / cp); every equation reads
them at the (cp, oop) it is evaluated for (:func:`atomic_at`).

Choices the text leaves open: Eq. 4 and Eq. 6 are summed over arrivals like Eq. 3; the lazy
scan reads the window's ``min(k, w)`` tuples; ``M_max`` is the uncoalesced lazy extent,
``U_max`` the eager update cost at cp = 1 with the same oop, and ``S_max`` the lazy scan at
cp = 1 (:func:`maxima`; a normalised cost may exceed 1 where an item costs more than at
cp = 1, e.g. eager updates that split).  The lazy extent's own memory and update cost is
paid once, and only when at least one query is lazy; the selection keeps that term (the
paper's simplification drops it), so it is exact against brute force over every subset.
The queries normalise it differently (U_max at their own oop; costs that vary with
(cp, oop) read at their own cp and oop), so it is priced at the largest of the queries'
figures: one cost whichever queries are lazy, as Theorem 1 needs.

The atomic costs themselves are measured by :mod:`workbench.experiments.atomic_costs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass

import numpy as np

__all__ = [
    "TIMESTAMP_BYTES",
    "TUPLE_BYTES",
    "Atomic",
    "AtomicCosts",
    "AtomicCostsAt",
    "CostGrid",
    "Costs",
    "Dcq",
    "Maxima",
    "Selection",
    "Weights",
    "atomic_at",
    "cost_grid",
    "costs",
    "maxima",
    "objective",
    "select",
    "select_costs",
    "total_cost",
]

TUPLE_BYTES = (20.0, 32.0)
"""(r_eager, r_lazy) of Table 4 in bytes: the eager extent keeps the query's attribute, its
group and a timestamp (Section 7.1: 4-byte attributes, 8-byte timestamps); the lazy one every
attribute of the stream."""
TIMESTAMP_BYTES = 8.0
"""m of Table 4: the timestamp size (Section 7.1)."""


@dataclass(frozen=True)
class AtomicCosts:
    """Per-operation costs (Table 4), e.g. seconds measured on this implementation."""

    read: float
    insert: float
    delete: float
    attach: float
    detach: float
    merge: float
    split: float
    coalesce: float


AtomicCostsAt = Callable[[float, float], AtomicCosts]
"""Table 4's atomic costs as a function of (cp, oop) (Section 7.2)."""
Atomic = AtomicCosts | AtomicCostsAt
"""Atomic costs the model accepts: constants, or a function of (cp, oop)."""


def atomic_at(atomic: Atomic, cp: float, oop: float) -> AtomicCosts:
    """The atomic costs at (cp, oop): constants as they are, a function evaluated there.

    >>> c = AtomicCosts(*[1.0] * 8)
    >>> atomic_at(c, 0.5, 0.5) is c, atomic_at(lambda cp, oop: c, 0.5, 0.5) is c
    (True, True)
    """
    return atomic if isinstance(atomic, AtomicCosts) else atomic(cp, oop)


def _bracket(axis: np.ndarray, x: float) -> tuple[int, int, float]:
    """The grid points either side of ``x`` on ``axis`` and ``x``'s share of the way between
    them (clamped to the axis' ends)."""
    x = min(max(x, axis[0]), axis[-1])
    hi = min(int(np.searchsorted(axis, x, side="right")), len(axis) - 1)
    lo = max(hi - 1, 0)
    span = axis[hi] - axis[lo]
    return lo, hi, float((x - axis[lo]) / span) if span > 0 else 0.0


@dataclass(frozen=True)
class CostGrid:
    """Table 4's atomic costs measured at every (cp, oop) of a grid, bilinear between grid
    points and clamped outside it: an :data:`AtomicCostsAt` (Section 7.2's costs as functions).

    ``costs`` holds one :class:`AtomicCosts` per cell, rows by ``oop``, columns by ``cp``
    (both increasing).

    >>> lo, hi = AtomicCosts(*[1.0] * 8), AtomicCosts(*[3.0] * 8)
    >>> grid = CostGrid((0.0, 1.0), (0.0, 1.0), ((lo, hi), (lo, hi)))
    >>> grid(0.25, 0.9).split, grid(2.0, 0.0).merge
    (1.5, 3.0)
    """

    cp: tuple[float, ...]
    oop: tuple[float, ...]
    costs: tuple[tuple[AtomicCosts, ...], ...]

    def __post_init__(self) -> None:
        table = np.array([[astuple(c) for c in row] for row in self.costs], dtype=float)
        if table.shape[:2] != (len(self.oop), len(self.cp)):
            raise ValueError(f"costs has shape {table.shape[:2]}, expected (len(oop), len(cp))")
        for name in ("cp", "oop"):
            axis = np.asarray(getattr(self, name), dtype=float)
            if len(axis) == 0 or np.any(np.diff(axis) <= 0):
                raise ValueError(f"{name} = {getattr(self, name)!r} must increase")
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            raise ValueError("every atomic cost of the grid must be finite and non-negative")
        object.__setattr__(self, "_table", table)

    def __call__(self, cp: float, oop: float) -> AtomicCosts:
        c0, c1, u = _bracket(np.asarray(self.cp), cp)
        r0, r1, v = _bracket(np.asarray(self.oop), oop)
        t = self._table
        low = t[r0, c0] + u * (t[r0, c1] - t[r0, c0])  # equal ends give the end exactly
        high = t[r1, c0] + u * (t[r1, c1] - t[r1, c0])
        return AtomicCosts(*(low + v * (high - low)).tolist())


@dataclass(frozen=True)
class Costs:
    """A scheme's normalised memory, update and scan cost (Eq. 7-8)."""

    memory: float
    update: float
    scan: float


@dataclass(frozen=True)
class Weights:
    """The weights (lambda_mu, lambda_nu, lambda_sigma) of memory, update and scan.

    >>> Weights(1, 1, 2).total(Costs(memory=0.5, update=0.25, scan=0.125))
    1.0
    """

    memory: float = 1.0
    update: float = 1.0
    scan: float = 1.0

    def total(self, cost: Costs) -> float:
        """The weighted cost of one scheme (Eq. 9-10): memory, update and scan, weighted."""
        return self.memory * cost.memory + self.update * cost.update + self.scan * cost.scan


@dataclass(frozen=True)
class Dcq:
    """A distinct coalescing query: its coalescing probability and out-of-order probability."""

    name: str
    cp: float
    oop: float

    def __post_init__(self) -> None:
        for field_name in ("cp", "oop"):
            value = getattr(self, field_name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{field_name} = {value!r} of {self.name!r} must lie in [0, 1]")


def _memory_eager(cp: float, k: int, w: int, m: float, r_eager: float) -> float:
    return min(k, w) * (cp * m + (1 - cp) * r_eager)  # Eq. 1 with constant cp


def _update_eager(cp: float, oop: float, k: int, w: int, c: AtomicCosts) -> float:
    per_arrival = (
        (1 - oop) * (1 - cp) * c.insert
        + (1 - oop) * cp * c.merge
        + oop * (1 - cp) * (c.insert + c.split)
        + oop * cp * c.merge
    )
    per_expiry = cp * c.detach + (1 - cp) * c.delete
    return k * per_arrival + max(k - w, 0) * per_expiry  # Eq. 3


def _update_lazy(k: int, w: int, c: AtomicCosts) -> float:
    return k * c.insert + max(k - w, 0) * c.delete  # Eq. 4, summed


def _scan_lazy(cp: float, k: int, w: int, c: AtomicCosts) -> float:
    return min(k, w) * (cp * (c.coalesce + c.read) + (1 - cp) * c.read)  # Eq. 6


@dataclass(frozen=True)
class Maxima:
    """Section 6.2's normalisers: ``memory`` M_max, the window extent's size when no
    coalescing is done; ``update`` U_max, its update time when all tuples are coalesced;
    ``scan`` S_max, its scan time when all tuples are coalesced during the scan."""

    memory: float
    update: float
    scan: float


def maxima(
    oop: float,
    k: int,
    w: int,
    atomic: Atomic,
    r_lazy: float = TUPLE_BYTES[1],
) -> Maxima:
    """Section 6.2's M_max, U_max and S_max for a query of out-of-order probability ``oop``
    after ``k`` arrivals into a window of ``w`` tuples: M_max = min(k, w) r_lazy (Eq. 2, the
    raw tuples stored uncoalesced), U_max = Eq. 3 at cp = 1 (every arrival merges, every
    expiry detaches: k C_merge + max(k - w, 0) C_detach), S_max = Eq. 6 at cp = 1
    (min(k, w) (C_coalesce + C_read)); atomic costs that vary are read at (1, oop).  A zero
    maximum is taken as 1 (nothing to normalise).

    >>> c = AtomicCosts(read=1, insert=9, delete=9, attach=9, detach=3, merge=2, split=9,
    ...                 coalesce=4)
    >>> maxima(0.5, k=100, w=10, atomic=c)
    Maxima(memory=320.0, update=470.0, scan=50.0)
    """
    full = atomic_at(atomic, 1.0, oop)
    return Maxima(
        min(k, w) * r_lazy or 1.0,
        _update_eager(1.0, oop, k, w, full) or 1.0,
        _scan_lazy(1.0, k, w, full) or 1.0,
    )


def costs(
    query: Dcq,
    k: int,
    w: int,
    atomic: Atomic,
    tuple_bytes: tuple[float, float] = TUPLE_BYTES,
    timestamp_bytes: float = TIMESTAMP_BYTES,
) -> tuple[Costs, Costs]:
    """Normalised (memory, update, scan) of eager and of lazy coalescing for one query (Eq. 7-8).

    ``tuple_bytes`` = (r_eager, r_lazy): the eager extent keeps only the query's attributes.
    Atomic costs that are functions of (cp, oop) are read at the query's (cp, oop); each item
    is divided by Section 6.2's maximum (:func:`maxima`).

    >>> c = AtomicCosts(1, 1, 1, 1, 1, 1, 1, 1)
    >>> eager, lazy = costs(Dcq("q", cp=0.0, oop=0.0), k=100, w=10, atomic=c)
    >>> round(eager.memory, 3), lazy.memory
    (0.625, 1.0)
    """
    if not (k >= 1 and w >= 1):
        raise ValueError(f"k = {k!r} and w = {w!r} must be at least 1")
    r_eager, r_lazy = tuple_bytes
    here = atomic_at(atomic, query.cp, query.oop)
    top = maxima(query.oop, k, w, atomic, r_lazy)
    memory_eager = _memory_eager(query.cp, k, w, timestamp_bytes, r_eager)
    eager = Costs(
        memory_eager / top.memory,
        _update_eager(query.cp, query.oop, k, w, here) / top.update,
        here.read * memory_eager / r_eager / top.scan,  # Eq. 5
    )
    lazy = Costs(
        min(k, w) * r_lazy / top.memory,
        _update_lazy(k, w, here) / top.update,
        _scan_lazy(query.cp, k, w, here) / top.scan,
    )
    return eager, lazy


def cost_grid(
    grid: Sequence[float], k: int, w: int, atomic: Atomic, weights: Weights = Weights()
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted eager and lazy cost of one query over cp x oop, oop by row (Eq. 9-10; the
    paper's Figures 3 and 4).

    >>> eager, lazy = cost_grid([0.0, 1.0], k=100, w=10, atomic=AtomicCosts(*[1.0] * 8))
    >>> (eager < lazy).tolist()  # lazy wins only on uncoalesced, out-of-order streams
    [[True, True], [False, True]]
    """
    eager = np.empty((len(grid), len(grid)))
    lazy = np.empty_like(eager)
    for r, oop in enumerate(grid):
        for c, cp in enumerate(grid):
            e, z = costs(Dcq("cell", cp, oop), k, w, atomic)
            eager[r, c], lazy[r, c] = weights.total(e), weights.total(z)
    return eager, lazy


@dataclass(frozen=True)
class Selection:
    """Which queries are coalesced eagerly, and the total weighted cost."""

    eager: frozenset[str]
    cost: float


def objective(
    table: dict[str, tuple[Costs, Costs]],
    eager: set[str] | frozenset[str],
    weights: Weights = Weights(),
) -> float:
    """The objective of the optimal selection problem (Section 6.2) when the queries named in
    ``eager`` are coalesced eagerly, from each query's normalised (eager, lazy) costs: Eq. 9
    for each eager query, Eq. 10 for the lazy ones sharing one lazy extent (its memory and
    update priced once, at the largest of the queries' figures; nothing when none is lazy).

    >>> table = {"a": (Costs(0, 1, 0), Costs(0, 0.5, 2)), "b": (Costs(0, 1, 0), Costs(0, 0.25, 0))}
    >>> objective(table, {"a"}), objective(table, set()), objective(table, {"a", "b"})
    (1.5, 2.5, 2.0)
    """
    unknown = set(eager) - set(table)
    if unknown:
        raise ValueError(f"eager = {sorted(eager)!r} names no query {sorted(unknown)!r}")
    total = 0.0
    lazy_names = [name for name in table if name not in eager]
    for name in eager:
        total += weights.total(table[name][0])
    if lazy_names:  # one lazy extent serves every lazy query (Eq. 10), priced as one
        total += max(
            weights.memory * z.memory + weights.update * z.update for _, z in table.values()
        )
        total += sum(weights.scan * table[name][1].scan for name in lazy_names)
    return total


def _table(
    queries: Sequence[Dcq], k: int, w: int, atomic: Atomic
) -> dict[str, tuple[Costs, Costs]]:
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise ValueError(f"query names {names!r} must be distinct")
    return {q.name: costs(q, k, w, atomic) for q in queries}


def total_cost(
    queries: Sequence[Dcq],
    eager: set[str] | frozenset[str],
    k: int,
    w: int,
    atomic: Atomic,
    weights: Weights = Weights(),
) -> float:
    """The total weighted cost (Eq. 9 for each eager query, Eq. 10 for the lazy ones sharing
    one lazy extent) when the queries named in ``eager`` are coalesced eagerly: the bars of
    Figure 5 for all lazy (``set()``), all eager and the optimal selection.

    >>> c = AtomicCosts(*[1.0] * 8)
    >>> qs = [Dcq("a", cp=0.9, oop=0.0), Dcq("b", cp=0.1, oop=0.0)]
    >>> [round(total_cost(qs, eager, 100, 10, c), 2) for eager in (set(), {"a", "b"}, {"a"})]
    [3.5, 3.58, 4.07]
    """
    return objective(_table(queries, k, w, atomic), frozenset(eager), weights)


def select(
    queries: Sequence[Dcq], k: int, w: int, atomic: Atomic, weights: Weights = Weights()
) -> Selection:
    """The optimal eager/lazy selection (Theorem 1) in O(n), from the model's costs
    (:func:`select_costs`).

    >>> c = AtomicCosts(1, 1, 1, 1, 1, 1, 1, 1)
    >>> qs = [Dcq("hot", cp=0.9, oop=0.0)] + [Dcq(f"cold{i}", cp=0.05, oop=0.0) for i in range(4)]
    >>> sorted(select(qs, k=1000, w=100, atomic=c, weights=Weights(1, 1, 2)).eager)
    ['hot']
    """
    return select_costs(_table(queries, k, w, atomic), weights)


def select_costs(table: dict[str, tuple[Costs, Costs]], weights: Weights = Weights()) -> Selection:
    """Theorem 1's selection from each query's normalised (eager, lazy) costs, modelled or
    measured: each query goes eager iff its eager cost beats its lazy scan cost (``c_j < 0``);
    the shared lazy extent's cost is then weighed against making every query eager.

    >>> table = {"a": (Costs(0, 1, 0), Costs(0, 0.5, 2)), "b": (Costs(0, 1, 0), Costs(0, 0.25, 0))}
    >>> select_costs(table)
    Selection(eager=frozenset({'a'}), cost=1.5)
    """
    if not table:
        return Selection(frozenset(), 0.0)

    def own(name: str) -> float:
        e, lazy = table[name]
        return weights.total(e) - weights.scan * lazy.scan  # c_j of Theorem 1

    c = {name: own(name) for name in table}
    candidates = [frozenset(table)]  # all eager: no lazy extent at all
    some_lazy = frozenset(name for name, value in c.items() if value < 0)
    if some_lazy == frozenset(table):  # at least one must be lazy: the one that loses least
        some_lazy = some_lazy - {max(c, key=c.get)}
    candidates.append(some_lazy)
    best = min(candidates, key=lambda s: objective(table, s, weights))
    return Selection(best, objective(table, best, weights))
