"""Compiled kernels of the coalescing window extents (coalescing paper, Sections 4.2.1-4.2.2,
Algorithms 1 and 2 and their time-based variants) over the extents' own state.

The kernels take typed bundles (named tuples of arrays, as
:func:`~workbench.kernels.ptjoin.ptjoin_batch` and :mod:`workbench.kernels.interval` do): the
batch (:class:`Arrivals`, or its timestamps alone for the lazy kernel), the window's raw tuples
in key order (:class:`Order`), the lazy extent's slots (:class:`Slots`) or the eager extent's
coalesced tuples, groups and vector pool (:class:`Linked`, :class:`Groups`, :class:`Pool`), the
window and the equivalence (:class:`Params`), the cursors ``pos`` (int64, slots :data:`POS`)
and ``clock`` (``[t_max]``), and the outputs: ``counts`` accumulates ``[out_of_order, inserts,
deletes, merges, splits, detaches]``, ``late`` marks the rows too late.  The key order's live
range is ``[pos[HEAD], pos[END])``; the free slots (lazy) or free coalesced tuples (eager) are a
stack ``free[:pos[N_FREE]]`` (a freed slot's arrival number becomes -1).

One helper per step of the paper that both extents take: :func:`_late` (the window rule),
:func:`_place` (a key in order), :func:`_accept` and :func:`_expired` (the window's expiry
test); the eager extent's own steps are in :mod:`workbench.kernels.coalesce_eager`.  The helpers
are inlined into the kernels (``inline="always"``), so the bundles are not copied at every
call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = [
    "KIND_CODES",
    "POS",
    "Arrivals",
    "Groups",
    "Linked",
    "Order",
    "Params",
    "Pool",
    "Slots",
    "lazy_push",
    "same",
]

KIND_CODES = {"equal": 0, "absolute": 1, "relative": 2, "increasing": 3, "quantized": 4}
"""The equivalence kinds as the kernels number them."""
OUT_OF_ORDER, INSERTS, DELETES, MERGES, SPLITS, DETACHES = range(6)  # the slots of ``counts``

HEAD, END, SEQ, N_FREE, TOP, NEED, ROW = range(7)
POS = ("head", "end", "seq", "n_free", "top", "need", "row")
"""The slots of ``pos``: the key order's live range ``[HEAD, END)``, the next arrival number,
the free slots or coalesced tuples, the pool's first unused entry, the pool entries the row the
eager kernel stopped at needs, the next batch row (eager)."""
COMPACT = -1
"""``pos[NEED]`` when a row finds the pool to compact first."""


class Arrivals(NamedTuple):
    """A batch in arrival order: timestamps, values as float64, group codes, value types (the
    index of each value's type in the extent's ``NUMBER_TYPES``), all arrays."""

    ts: np.ndarray
    number: np.ndarray
    code: np.ndarray
    kind: np.ndarray


class Params(NamedTuple):
    """The window (tuple-based or time-based, its size) and the value equivalence (its code
    in :data:`KIND_CODES`, tolerance, quantum, and whether each vector entry keeps its own value:
    the kinds that are not transitive)."""

    by_tuples: bool
    size: float
    kind: int
    tolerance: float
    quantum: float
    per_entry: bool


class Order(NamedTuple):
    """The window's raw tuples in key order (:class:`~workbench.coalesce.order.KeyOrder`): each
    one's timestamp and what it refers to (the lazy extent's slot, the eager extent's group)."""

    ts: np.ndarray
    ref: np.ndarray


class Slots(NamedTuple):
    """The lazy extent's slots: each slot's arrival number (-1: free) and the free-slot stack."""

    arrival: np.ndarray
    free: np.ndarray


class Linked(NamedTuple):
    """The eager extent's coalesced tuples (Appendix A): tuple ``c``'s vector is entries
    ``[start[c], start[c] + length[c])`` of the :class:`Pool` (room ``cap[c]``) in key order,
    ``prev``/``next`` link a group's tuples in key order, ``code`` is the group (-1: a free
    tuple), ``number``/``kind`` the tuple's one value and its type (the transitive kinds), and
    ``free`` the stack of free tuples."""

    start: np.ndarray
    length: np.ndarray
    cap: np.ndarray
    prev: np.ndarray
    next: np.ndarray
    code: np.ndarray
    number: np.ndarray
    kind: np.ndarray
    free: np.ndarray


class Groups(NamedTuple):
    """Each group's first and last coalesced tuple in key order (-1: none), by group code."""

    head: np.ndarray
    tail: np.ndarray


class Pool(NamedTuple):
    """The timestamp vectors' pool: each entry's timestamp and arrival number, and (only when
    ``Params.per_entry``) its raw value; sized by :mod:`workbench.kernels.coalesce_room`."""

    ts: np.ndarray
    seq: np.ndarray
    number: np.ndarray


@njit(cache=True, nogil=True)
def same(kind, tolerance, quantum, a, b):
    """Whether value ``b`` right after ``a`` coalesces: the rules of ``KINDS`` (Section 3)."""
    if kind == 0:
        return a == b
    if kind == 1:
        return abs(a - b) <= tolerance
    if kind == 2:
        return abs(a - b) <= tolerance * max(abs(a), abs(b))
    if kind == 3:
        return b >= a
    return np.floor(a / quantum) == np.floor(b / quantum)


# -- both extents: the window rule and the key order (Algorithms 1-2) -------------------------


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _late(order, params, pos, clock, x):
    """Whether a tuple at ``x`` is too late for the window (Algorithm 1, Line 6; Algorithm 2,
    Line 11): older than the oldest of a full tuple window (a tie arrived later, so it is
    younger), or than ``t_max - T``.  Mirrored by ``WindowExtent._admit``."""
    if params.by_tuples:
        return pos[END] - pos[HEAD] >= params.size and x < order.ts[pos[HEAD]]
    return x < clock[0] - params.size


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _place(order, pos, x, ref):
    """Insert timestamp ``x`` (referring to ``ref``) after the equal timestamps of the key
    order: ties keep arrival order (Algorithm 1, Lines 9-15).  The window moves to the front of
    its arrays when it reaches their end.  Mirrored by ``KeyOrder._place``."""
    head, end = pos[HEAD], pos[END]
    if end == order.ts.shape[0]:
        for k in range(end - head):
            order.ts[k] = order.ts[head + k]
            order.ref[k] = order.ref[head + k]
        head, end = 0, end - head
    at = end
    while at > head and order.ts[at - 1] > x:  # few: arrivals are nearly in timestamp order
        order.ts[at] = order.ts[at - 1]
        order.ref[at] = order.ref[at - 1]
        at -= 1
    order.ts[at] = x
    order.ref[at] = ref
    pos[HEAD], pos[END] = head, end + 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _accept(order, pos, clock, counts, x, ref):
    """An arrival in the window: numbered, counted out of order when below ``t_max`` (else the
    new ``t_max``), placed in key order (Algorithm 1, Lines 4-15; ``WindowExtent._update``)."""
    pos[SEQ] += 1
    if x < clock[0]:
        counts[OUT_OF_ORDER] += 1
    else:
        clock[0] = x
    _place(order, pos, x, ref)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _expired(order, params, pos, clock):
    """Whether the window's oldest raw tuple has left it (Algorithm 1, Lines 1-3; Algorithm 2,
    Lines 1-8; their time-based variants' loop condition)."""
    if pos[HEAD] == pos[END]:
        return False
    if params.by_tuples:
        return pos[END] - pos[HEAD] > params.size
    return order.ts[pos[HEAD]] < clock[0] - params.size


# -- lazy coalescing: raw tuples in key order (Algorithm 1) ------------------------------------


@njit(cache=True, nogil=True)
def lazy_push(ts, order, slots, params, pos, clock, counts):
    """tupleBasedLazyUpdate (Algorithm 1) and its time-based variant over a batch's
    timestamps ``ts``, in order: a too-late row is skipped (numbered, slot -1), the others take
    a free slot and their place in key order, then the oldest leave (their slot freed).  Returns
    each row's slot.  Mirrored by ``LazyExtent._insert`` and ``_remove_oldest``."""
    placed = np.full(ts.shape[0], -1, dtype=np.int64)
    _lazy_rows(ts, order, slots, params, pos, clock, counts, placed)
    return placed


@njit(cache=True, nogil=True, _nrt=False)
def _lazy_rows(ts, order, slots, params, pos, clock, counts, placed):
    """The rows of :func:`lazy_push`, compiled without reference counting (the bundles' arrays
    are read without a count each)."""
    for i in range(ts.shape[0]):
        x = ts[i]
        if _late(order, params, pos, clock, x):
            pos[SEQ] += 1
            continue
        pos[N_FREE] -= 1
        s = slots.free[pos[N_FREE]]
        slots.arrival[s] = pos[SEQ]
        _accept(order, pos, clock, counts, x, s)
        placed[i] = s
        counts[INSERTS] += 1
        while _expired(order, params, pos, clock):
            s = order.ref[pos[HEAD]]
            slots.arrival[s] = -1
            slots.free[pos[N_FREE]] = s
            pos[N_FREE] += 1
            pos[HEAD] += 1
            counts[DELETES] += 1


# -- eager coalescing: coalesced tuples with timestamp vectors (Appendix A) -------------------
