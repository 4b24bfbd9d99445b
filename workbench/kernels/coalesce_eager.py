"""The eager extent's compiled kernel (coalescing paper, Section 4.2.2, Algorithm 2 and its
time-based variant, on coalesced tuples with timestamp vectors as Appendix A keeps them), over
the bundles of :mod:`workbench.kernels.coalesce`.

One helper per step of the paper: :func:`_locate` (the target), :func:`_merge` (mergeTuples),
:func:`_split` (splitTuple), :func:`_add` (addTuple), :func:`_bridge` (an arrival that joins two
coalesced tuples), :func:`_detach` and :func:`_delete` (the expiry's two cases); the Python
reference (:class:`~workbench.coalesce.extent.EagerExtent`) names the helper each of its methods
mirrors, and both take their room rules from :mod:`workbench.kernels.coalesce_room`.

The kernel judges value equivalence on float64 copies of the values with the rules of
:data:`~workbench.coalesce.equivalence.KINDS`, operation for operation (IEEE subtraction,
product, division and floor, as Python's float arithmetic does): the caller passes it only
values whose float64 copy Python judges alike (see ``EagerState._exact_number``), so every
verdict equals the Python one and no decision needs an exact fallback.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.kernels.coalesce import (
    COMPACT,
    DELETES,
    DETACHES,
    END,
    HEAD,
    INSERTS,
    MERGES,
    N_FREE,
    NEED,
    ROW,
    SEQ,
    SPLITS,
    TOP,
    _accept,
    _expired,
    _late,
    same,
)
from workbench.kernels.coalesce_room import compacts, kept_room, moved_room, row_need

__all__ = ["eager_push"]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _value_at(tuples, pool, params, c, e):
    """The value entry ``e`` of tuple ``c`` is judged by (``EagerState._entry_value``)."""
    return pool.number[e] if params.per_entry else tuples.number[c]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _joins(tuples, pool, params, c, e, v):
    """Whether value ``v`` coalesces right after entry ``e`` of tuple ``c`` (Section 3)."""
    a = _value_at(tuples, pool, params, c, e)
    return same(params.kind, params.tolerance, params.quantum, a, v)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _joined_by(tuples, pool, params, c, e, v):
    """Whether entry ``e`` of tuple ``c`` coalesces right after value ``v`` (Section 3)."""
    b = _value_at(tuples, pool, params, c, e)
    return same(params.kind, params.tolerance, params.quantum, v, b)


@njit(cache=True, nogil=True, _nrt=False)
def _after_equal(ts, first, n, x):
    """How many of the ``n`` sorted timestamps from ``first`` are ``<= x`` (binary search)."""
    if ts[first + n - 1] <= x:  # in order: after the whole vector
        return n
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ts[first + mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _locate(tuples, groups, pool, g, x):
    """Algorithm 2, Lines 14 and 24: where timestamp ``x`` lands among group ``g``'s coalesced
    tuples: the tuple ``c`` whose vector it lands in or after (-1: before all), its place ``p``
    there (after its equal timestamps) and the group's next tuple ``right``.  Mirrored by
    ``EagerExtent._locate``."""
    c = groups.tail[g]
    while c >= 0 and pool.ts[tuples.start[c]] > x:
        c = tuples.prev[c]
    if c < 0:
        return c, 0, groups.head[g]
    return c, _after_equal(pool.ts, tuples.start[c], tuples.length[c], x), tuples.next[c]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _copy_entries(pool, per_entry, dst, src, n):
    """Move ``n`` pool entries from ``src`` to ``dst`` (overlapping ranges allowed).  Mirrored
    by ``EagerExtent._move``."""
    step, first = (1, 0) if dst < src else (-1, n - 1)
    for j in range(n):
        k = first + step * j
        pool.ts[dst + k] = pool.ts[src + k]
        pool.seq[dst + k] = pool.seq[src + k]
        if per_entry:
            pool.number[dst + k] = pool.number[src + k]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _room(tuples, pool, params, pos, c, need):
    """Room for ``need`` entries in ``c``'s vector: grown in place when it ends the pool's
    used part, else moved to its end with ``moved_room`` (the caller left ``row_need``).
    Mirrored by ``EagerExtent._room``."""
    if tuples.cap[c] >= need:
        return
    if tuples.start[c] + tuples.cap[c] == pos[TOP]:
        pos[TOP] = tuples.start[c] + need
        tuples.cap[c] = need
        return
    cap = moved_room(tuples.length[c], need)
    _copy_entries(pool, params.per_entry, pos[TOP], tuples.start[c], tuples.length[c])
    tuples.start[c] = pos[TOP]
    tuples.cap[c] = cap
    pos[TOP] += cap


@njit(cache=True, nogil=True)
def _compact(tuples, pool, params, pos):
    """Move every live vector to the front of the pool with the room ``kept_room`` leaves it
    (pool entries left behind by detaches, splits and moves are reclaimed), in pool order:
    each vector's first entry marks its tuple.  Mirrored by ``EagerState._repool``."""
    owner = np.full(pos[TOP], -1, dtype=np.int64)
    for c in range(tuples.code.shape[0]):
        if tuples.code[c] >= 0:
            owner[tuples.start[c]] = c
    top = 0
    for c in owner:
        if c >= 0:
            _copy_entries(pool, params.per_entry, top, tuples.start[c], tuples.length[c])
            tuples.start[c] = top
            tuples.cap[c] = kept_room(tuples.length[c], tuples.cap[c])
            top += tuples.cap[c]
    pos[TOP] = top


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _has_room(tuples, pool, pos, c, p, right):
    """Whether the row whose target is ``(c, p, right)`` fits (``coalesce_room``): two free
    tuples and ``row_need`` free pool entries at its top.  Else ``pos[NEED]`` says what to do:
    -1, compact the pool first (``compacts``); else the entries the row needs (the caller grows
    the arrays).  Mirrored by ``EagerExtent._has_room``."""
    need = row_need(c, p, right, tuples.start, tuples.length, tuples.cap, pos[TOP])
    if compacts(pool.ts.shape[0], pos[TOP], pos[END] - pos[HEAD], need):
        pos[NEED] = COMPACT
        return False
    if pos[N_FREE] < 2 or pool.ts.shape[0] - pos[TOP] < need:
        pos[NEED] = need
        return False
    return True


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _new_tuple(tuples, groups, pos, g, left, right, cap):
    """A free coalesced tuple for group ``g`` with an empty vector (room for ``cap``), linked
    between the group's tuples ``left`` and ``right`` (Function 1, Line 9).  Mirrored by
    ``EagerExtent._new_tuple``."""
    pos[N_FREE] -= 1
    c = tuples.free[pos[N_FREE]]
    tuples.start[c] = pos[TOP]
    tuples.length[c] = 0
    tuples.cap[c] = cap
    pos[TOP] += cap
    tuples.code[c] = g
    tuples.prev[c] = left
    tuples.next[c] = right
    if left >= 0:
        tuples.next[left] = c
    else:
        groups.head[g] = c
    if right >= 0:
        tuples.prev[right] = c
    else:
        groups.tail[g] = c
    return c


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _free_tuple(tuples, groups, pos, c):
    """Unlink a coalesced tuple from its group and free it.  Mirrored by
    ``EagerExtent._free_tuple``."""
    g, left, right = tuples.code[c], tuples.prev[c], tuples.next[c]
    if left >= 0:
        tuples.next[left] = right
    else:
        groups.head[g] = right
    if right >= 0:
        tuples.prev[right] = left
    else:
        groups.tail[g] = left
    tuples.code[c] = -1
    tuples.free[pos[N_FREE]] = c
    pos[N_FREE] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _insert_entry(tuples, pool, params, pos, c, p, x, s, v):
    """Insert key ``(x, s)`` (value ``v``) at position ``p`` of ``c``'s vector in sorted order
    (Function 2, Line 1): the later entries move up one.  Mirrored by
    ``EagerExtent._insert_entry``."""
    _room(tuples, pool, params, pos, c, tuples.length[c] + 1)
    at = tuples.start[c] + p
    _copy_entries(pool, params.per_entry, at + 1, at, tuples.length[c] - p)
    pool.ts[at] = x
    pool.seq[at] = s
    if params.per_entry:
        pool.number[at] = v
    tuples.length[c] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _merge(tuples, pool, params, pos, counts, c, p, x, s, v):
    """mergeTuples (Function 2; Algorithm 2, Lines 16 and 26): the arrival's key joins ``c``'s
    vector at position ``p``."""
    counts[MERGES] += 1
    _insert_entry(tuples, pool, params, pos, c, p, x, s, v)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _bridge(tuples, groups, pool, params, pos, c, right):
    """The arrival, merged at the end of ``c``, also coalesces with ``right``, the group's next
    tuple: ``right``'s vector is appended to ``c``'s and ``right`` freed (mergeTuples of each of
    its timestamps)."""
    k = tuples.length[right]
    _room(tuples, pool, params, pos, c, tuples.length[c] + k)
    dst = tuples.start[c] + tuples.length[c]
    _copy_entries(pool, params.per_entry, dst, tuples.start[right], k)
    tuples.length[c] += k
    _free_tuple(tuples, groups, pos, right)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _split(tuples, groups, pool, params, pos, counts, c, p):
    """splitTuple (Function 3; Algorithm 2, Line 18): the entries of ``c``'s vector from ``p``
    on move to a copy of ``c`` linked after it; the copy."""
    counts[SPLITS] += 1
    rest = tuples.length[c] - p
    c2 = _new_tuple(tuples, groups, pos, tuples.code[c], c, tuples.next[c], rest)
    _copy_entries(pool, params.per_entry, tuples.start[c2], tuples.start[c] + p, rest)
    tuples.length[c2] = rest
    tuples.length[c] = p
    tuples.number[c2] = tuples.number[c]
    tuples.kind[c2] = tuples.kind[c]
    return c2


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _add(tuples, groups, pool, params, pos, counts, g, left, right, x, s, v, kind):
    """addTuple (Function 1; Algorithm 2, Lines 19 and 28): the arrival starts a coalesced
    tuple of its own between its group's tuples ``left`` and ``right``."""
    counts[INSERTS] += 1
    c = _new_tuple(tuples, groups, pos, g, left, right, 1)
    _insert_entry(tuples, pool, params, pos, c, 0, x, s, v)
    tuples.number[c] = v
    tuples.kind[c] = kind


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _arrive(tuples, groups, pool, params, pos, counts, g, c, p, right, x, v, kind):
    """Algorithm 2, Lines 13-30 for an arrival in the window at ``x`` (value ``v``) whose
    target is ``(c, p, right)`` (:func:`_locate`): inside ``c``'s vector, a merge when it
    coalesces with both neighbours, else a split and then a merge with one side or an add; at
    the end of ``c`` or before ``right``, a merge with either (bridging both when it coalesces
    with both), else an add.  Mirrored by ``EagerExtent._insert``."""
    s = pos[SEQ] - 1
    if c >= 0 and p < tuples.length[c]:  # Line 14: inside c, between its entries p - 1 and p
        e = tuples.start[c] + p
        join_a = _joins(tuples, pool, params, c, e - 1, v)
        join_b = _joined_by(tuples, pool, params, c, e, v)
        if join_a and join_b:
            _merge(tuples, pool, params, pos, counts, c, p, x, s, v)
            return
        right = _split(tuples, groups, pool, params, pos, counts, c, p)
    else:  # Line 24: at the end of c (or before all of the group's tuples)
        join_a = c >= 0 and _joins(
            tuples, pool, params, c, tuples.start[c] + tuples.length[c] - 1, v
        )
        join_b = right >= 0 and _joined_by(tuples, pool, params, right, tuples.start[right], v)
    if join_a:
        _merge(tuples, pool, params, pos, counts, c, tuples.length[c], x, s, v)
        if join_b:
            _bridge(tuples, groups, pool, params, pos, c, right)
    elif join_b:
        _merge(tuples, pool, params, pos, counts, right, 0, x, s, v)
    else:
        _add(tuples, groups, pool, params, pos, counts, g, c, right, x, s, v, kind)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _detach(tuples, counts, c):
    """Algorithm 2, Lines 2-3: the oldest timestamp leaves ``c``'s vector (its first entry)."""
    counts[DETACHES] += 1
    tuples.start[c] += 1
    tuples.length[c] -= 1
    tuples.cap[c] -= 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _delete(tuples, groups, pos, counts, c):
    """Algorithm 2, Lines 5-7: ``c``, holding only the oldest timestamp, leaves the window."""
    counts[DELETES] += 1
    _free_tuple(tuples, groups, pos, c)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _expire_eager(order, tuples, groups, params, pos, clock, counts):
    """Algorithm 2, Lines 1-8 and the time-based variant's loop: the oldest raw tuple is the
    first timestamp of its group's first coalesced tuple, detached from the vector, or the tuple
    deleted with it.  Mirrored by ``EagerExtent._remove_oldest``."""
    while _expired(order, params, pos, clock):
        c = groups.head[order.ref[pos[HEAD]]]
        pos[HEAD] += 1
        if tuples.length[c] > 1:
            _detach(tuples, counts, c)
        else:
            _delete(tuples, groups, pos, counts, c)


@njit(cache=True, nogil=True)
def eager_push(arrivals, order, tuples, groups, pool, params, pos, clock, counts, late):
    """tupleBasedEagerUpdate (Algorithm 2) and its time-based variant over the batch's rows
    from ``pos[ROW]`` on, in order, on coalesced tuples with timestamp vectors (Appendix A):
    the window rule (Line 11; a too-late row is marked in ``late``), the target (Lines 14, 24),
    room, the key order, merge, split or add (Lines 13-30), then the expiry (Lines 1-8).

    Before each row it makes room (:mod:`~workbench.kernels.coalesce_room`, :func:`_has_room`):
    it compacts the pool when ``compacts`` says so, and stops at a row short of free tuples or
    pool entries (``pos[ROW]`` left there, the entries it needs in ``pos[NEED]``); the caller
    grows the arrays and calls it again.  The caller leaves the key order room for the batch.
    """
    while not _eager_rows(arrivals, order, tuples, groups, pool, params, pos, clock, counts, late):
        if pos[NEED] != COMPACT:
            return
        _compact(tuples, pool, params, pos)


@njit(cache=True, nogil=True, _nrt=False)
def _eager_rows(arrivals, order, tuples, groups, pool, params, pos, clock, counts, late):
    """The rows of :func:`eager_push` until the batch's end (True) or a row short of room
    (False, ``pos[NEED]`` says why), compiled without reference counting (the bundles' arrays
    are read without a count each)."""
    n = arrivals.ts.shape[0]
    while pos[ROW] < n:
        i = pos[ROW]
        x = arrivals.ts[i]
        if _late(order, params, pos, clock, x):
            pos[SEQ] += 1
            late[i] = True
            pos[ROW] += 1
            continue
        g = arrivals.code[i]
        c, p, right = _locate(tuples, groups, pool, g, x)
        if not _has_room(tuples, pool, pos, c, p, right):
            return False
        pos[ROW] += 1
        _accept(order, pos, clock, counts, x, g)
        v, kind = arrivals.number[i], arrivals.kind[i]
        _arrive(tuples, groups, pool, params, pos, counts, g, c, p, right, x, v, kind)
        _expire_eager(order, tuples, groups, params, pos, clock, counts)
    return True
