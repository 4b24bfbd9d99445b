"""Compiled kernels of the coalescing window extents (coalescing paper, Sections 4.2.1-4.2.2,
Algorithms 1 and 2 and their time-based variants) over the extents' own state.

Shared arguments: ``ts``/``slot`` the window's raw tuples in key order (timestamp, storage
slot), live in ``[head, end)``; ``arrival`` the arrival number per slot; ``free[:n_free]``
the free slots, a stack (the caller made room for as many tuples as the window can hold
during the batch; a freed slot's arrival number becomes -1); ``seq`` the next arrival
number, ``t_max`` the largest timestamp accepted; ``by_tuples`` and ``size`` the window;
``counts`` accumulates ``[out_of_order, inserts, deletes, merges, splits, detaches]``.  Each
kernel returns the slot of each row (-1: too late) and the scalars it moved.

The eager kernel judges value equivalence on float64 copies of the values with the rules of
:data:`~workbench.coalesce.equivalence.KINDS`, operation for operation (IEEE subtraction,
product, division and floor, as Python's float arithmetic does): the caller passes it only
values whose float64 copy Python judges alike (see ``EagerExtent._exact_number``), so every
verdict equals the Python one and no decision needs an exact fallback.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["KIND_CODES", "eager_push", "lazy_push", "same"]

KIND_CODES = {"equal": 0, "absolute": 1, "relative": 2, "increasing": 3, "quantized": 4}
"""The equivalence kinds as the eager kernel numbers them."""
OUT_OF_ORDER, INSERTS, DELETES, MERGES, SPLITS, DETACHES = range(6)  # the slots of ``counts``


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


@njit(cache=True, nogil=True)
def _late(ts, head, end, t_max, by_tuples, size, x):
    """Whether a tuple at ``x`` is too late for the window (Algorithm 1, Line 6): older than
    the oldest of a full tuple window (a tie arrived later, so it is younger), or than
    ``t_max - T``."""
    if by_tuples:
        return end - head >= size and x < ts[head]
    return x < t_max - size


@njit(cache=True, nogil=True)
def _place(ts, slot, head, end, x, new_slot):
    """Insert timestamp ``x`` (slot ``new_slot``) after the equal timestamps of ``[head,
    end)``: ties keep arrival order (addTuple; Algorithm 1, Lines 9-15).  The window moves to
    the front of its arrays when it reaches their end; the new ``head, end``."""
    if end == ts.shape[0]:
        for k in range(end - head):
            ts[k] = ts[head + k]
            slot[k] = slot[head + k]
        head, end = 0, end - head
    pos = end
    while pos > head and ts[pos - 1] > x:  # few: arrivals are nearly in timestamp order
        ts[pos] = ts[pos - 1]
        slot[pos] = slot[pos - 1]
        pos -= 1
    ts[pos] = x
    slot[pos] = new_slot
    return head, end + 1


@njit(cache=True, nogil=True)
def _arrive(x, ts, slot, free, head, end, n_free, t_max, by_tuples, size, counts):
    """One arrival at ``x`` (Algorithms 1-2, Lines 1-15): too late (slot -1), or placed in a
    free slot in key order, counted out of order when below ``t_max``; the slot and the
    moved ``head, end, n_free, t_max``."""
    if _late(ts, head, end, t_max, by_tuples, size, x):
        return -1, head, end, n_free, t_max
    if x < t_max:
        counts[OUT_OF_ORDER] += 1
    else:
        t_max = x
    n_free -= 1
    s = free[n_free]
    head, end = _place(ts, slot, head, end, x, s)
    return s, head, end, n_free, t_max


@njit(cache=True, nogil=True)
def lazy_push(
    batch_ts, ts, slot, arrival, free, head, end, n_free, seq, t_max, by_tuples, size, counts
):
    """tupleBasedLazyUpdate (Algorithm 1) and its time-based variant over a batch, in order."""
    n = batch_ts.shape[0]
    placed = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        seq += 1
        s, head, end, n_free, t_max = _arrive(
            batch_ts[i], ts, slot, free, head, end, n_free, t_max, by_tuples, size, counts
        )
        if s < 0:
            continue
        placed[i] = s
        arrival[s] = seq - 1
        counts[INSERTS] += 1
        bound = t_max - size
        while head < end and (end - head > size if by_tuples else ts[head] < bound):
            arrival[slot[head]] = -1
            free[n_free] = slot[head]
            n_free += 1
            head += 1
            counts[DELETES] += 1
    return placed, head, end, n_free, seq, t_max


@njit(cache=True, nogil=True)
def eager_push(
    batch_ts,
    ts,
    slot,
    arrival,
    free,
    head,
    end,
    n_free,
    seq,
    t_max,
    by_tuples,
    size,
    counts,
    batch_value,
    batch_code,
    key_ts,
    code,
    value,
    starts,
    prev,
    nxt,
    tail,
    kind,
    tolerance,
    quantum,
):
    """tupleBasedEagerUpdate (Algorithm 2) and its time-based variant over a batch, in order.

    Per slot: ``key_ts``, group ``code``, float64 ``value``, ``starts`` (the tuple starts a
    coalesced tuple; the others are its timestamp vector), ``prev``/``nxt`` the group's
    neighbours in key order; ``tail`` the last slot per group code (-1: empty).
    """
    n = batch_ts.shape[0]
    placed = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        x = batch_ts[i]
        seq += 1
        s, head, end, n_free, t_max = _arrive(
            x, ts, slot, free, head, end, n_free, t_max, by_tuples, size, counts
        )
        if s < 0:
            continue
        placed[i] = s
        g = batch_code[i]
        v = batch_value[i]
        arrival[s] = seq - 1
        key_ts[s] = x
        code[s] = g
        value[s] = v
        # the group's neighbours: a before x, b after it (a tie arrived earlier: before)
        a = tail[g]
        b = -1
        while a >= 0 and key_ts[a] > x:
            b = a
            a = prev[a]
        join_a = a >= 0 and same(kind, tolerance, quantum, value[a], v)
        join_b = b >= 0 and same(kind, tolerance, quantum, v, value[b])
        if b >= 0 and not starts[b] and not (join_a and join_b):
            counts[SPLITS] += 1  # splitTuple: x cuts a coalesced tuple in two
        if join_a or join_b:
            counts[MERGES] += 1  # mergeTuples (one merge bridges two tuples)
        else:
            counts[INSERTS] += 1  # addTuple
        starts[s] = not join_a
        prev[s] = a
        nxt[s] = b
        if a >= 0:
            nxt[a] = s
        if b >= 0:
            prev[b] = s
            starts[b] = not join_b
        else:
            tail[g] = s
        # expire the oldest tuples (Algorithm 2, Lines 1-8): detach or delete each
        bound = t_max - size
        while head < end and (end - head > size if by_tuples else ts[head] < bound):
            old = slot[head]
            arrival[old] = -1
            free[n_free] = old
            n_free += 1
            head += 1
            after = nxt[old]
            if after >= 0 and not starts[after]:
                counts[DETACHES] += 1
            else:
                counts[DELETES] += 1
            if after >= 0:
                prev[after] = -1
                starts[after] = True
            else:
                tail[code[old]] = -1
    return placed, head, end, n_free, seq, t_max
