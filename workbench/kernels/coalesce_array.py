"""The coalescing paper's eager window extent on an array, compiled (Section 4.2.2,
Algorithm 2 and its time-based variant; addTuple, mergeTuples, splitTuple: Appendix A; "we
implement a window extent as an array data structure", Section 7.2).

The extent is one array of coalesced tuples in timestamp order (key ``(t_s, arrival)``),
live in ``[HEAD, END)``; each tuple owns a timestamp vector, its slice ``[start, start +
length)`` of a pool (room ``cap``).  Every step is the paper's: a new arrival's target is
found by a linear scan of the window from its latest tuple (Algorithm 2, Lines 14 and 24),
its place in the target's vector by a linear scan of the vector from its end (Function 2,
Line 1); a tuple inserted in the middle shifts the tuples after it up one (Function 1, Line 9;
Function 3, Line 5), a merge shifts the vector's later entries up one (Function 2, Line 1);
the oldest timestamp is detached from the first tuple's vector, or the first tuple deleted
(Algorithm 2, Lines 1-8), in constant time as Section 7.2 says of ``C_detach`` and
``C_delete``.  ``counts`` records the atomic operations (the vocabulary of
:class:`~workbench.coalesce.window.ExtentCounters`) and the work: tuples and vector entries
read by the scans (``SCANNED``), array elements moved (``SHIFTED``).

Where the text is silent the extent does what gives the coalesced view of the window
(:func:`~workbench.coalesce.scan.recoalesce`): a late arrival equivalent to its group's next
tuple joins it at its front (and bridges two tuples when equivalent to both); a split only
cuts a vector where the arrival lands inside it; after a detach the first tuple moves up to
its place by its new ``t_s`` (with several groups the window's next-oldest timestamp may be
another tuple's), so that the array stays in timestamp order.

Kernels take typed bundles (as :func:`~workbench.kernels.ptjoin.ptjoin_batch` does):
:class:`~workbench.kernels.coalesce.Arrivals` (the batch), :class:`Tuples` and
:class:`Vectors` (the state), :class:`~workbench.kernels.coalesce.Params` (window and
equivalence; both bundles shared with the fast kernels), ``pos`` (the cursors, slots below),
``clock`` (``[t_max]``), ``counts`` and ``late`` (outputs).  The reference
(:class:`~workbench.coalesce.array_extent.ArrayExtent`'s ``push``) performs the same steps
with the same counts; each of its methods names the helper here that it mirrors.  The helpers
are inlined into :func:`push_batch` (``inline="always"``), so the bundles are not copied at
every call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from workbench.kernels.coalesce import same
from workbench.kernels.coalesce_room import (
    GROWTH,
    MIN_ROOM,
    SHRINK_BELOW,
    SPARE_TUPLES,
    array_row_need,
)

__all__ = [
    "POS",
    "Tuples",
    "Vectors",
    "push_batch",
    "room_ok",
]

OUT_OF_ORDER, INSERTS, DELETES, MERGES, SPLITS, DETACHES, SCANNED, SHIFTED = range(8)
"""The slots of ``counts``: the extents' counters in the order ``WindowExtent._add_counts``
takes them, then the array's work."""

HEAD, END, TOP, SEQ, RAW, LONGEST, ROW = range(7)
POS = ("head", "end", "top", "seq", "raw", "longest", "row")
"""The slots of ``pos``: the live tuples ``[HEAD, END)``, the pool's first unused entry, the
next arrival number, the raw tuples held, a bound on the longest vector, the next batch row."""


class Tuples(NamedTuple):
    """The coalesced tuples' array: starting and ending instants, group code, value (once,
    with its type), and the vector's place in the pool (start, length, room)."""

    t_s: np.ndarray
    t_e: np.ndarray
    code: np.ndarray
    number: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    length: np.ndarray
    cap: np.ndarray


class Vectors(NamedTuple):
    """The pool of timestamp vectors: each entry's timestamp and arrival number, and for the
    equivalences judged entry by entry (``Params.per_entry``) its value and type."""

    ts: np.ndarray
    seq: np.ndarray
    number: np.ndarray
    kind: np.ndarray


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def room_ok(tuples, vectors, pos):
    """Whether the next arrival may run (:mod:`~workbench.kernels.coalesce_room`'s rules):
    ``SPARE_TUPLES`` free tuple slots and ``array_row_need`` free pool entries, with neither the
    array nor the pool used to less than ``1 / SHRINK_BELOW`` (the caller's ``_make_room``
    grows or shrinks them, then compacts)."""
    room, live = tuples.t_s.shape[0], pos[END] - pos[HEAD]
    if pos[END] + SPARE_TUPLES > room or (
        room > MIN_ROOM and SHRINK_BELOW * (live + SPARE_TUPLES) < room
    ):
        return False
    room, need = vectors.ts.shape[0], array_row_need(pos[LONGEST])
    return not (
        room - pos[TOP] < need or (room > MIN_ROOM and SHRINK_BELOW * (pos[RAW] + need) < room)
    )


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _value(t, e, tuples, vectors, params):
    """The value entry ``e`` of tuple ``t`` is judged by."""
    return vectors.number[e] if params.per_entry else tuples.number[t]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _before(tuples, vectors, i, j):
    """Whether tuple ``i``'s first key ``(t_s, arrival)`` is below tuple ``j``'s."""
    a, b = tuples.t_s[i], tuples.t_s[j]
    return a < b or (a == b and vectors.seq[tuples.start[i]] < vectors.seq[tuples.start[j]])


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _move_tuple(tuples, dst, src):
    """Copy tuple ``src`` to index ``dst`` of the array (every column)."""
    tuples.t_s[dst] = tuples.t_s[src]
    tuples.t_e[dst] = tuples.t_e[src]
    tuples.code[dst] = tuples.code[src]
    tuples.number[dst] = tuples.number[src]
    tuples.kind[dst] = tuples.kind[src]
    tuples.start[dst] = tuples.start[src]
    tuples.length[dst] = tuples.length[src]
    tuples.cap[dst] = tuples.cap[src]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _move_entry(vectors, dst, src, per_entry):
    """Copy pool entry ``src`` to ``dst``."""
    vectors.ts[dst] = vectors.ts[src]
    vectors.seq[dst] = vectors.seq[src]
    if per_entry:
        vectors.number[dst] = vectors.number[src]
        vectors.kind[dst] = vectors.kind[src]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _open(tuples, pos, counts, k):
    """Room at index ``k`` of the tuple array: the tuples from ``k`` on shift up one
    (Function 1, Line 9; Function 3, Line 5)."""
    for i in range(pos[END], k, -1):
        _move_tuple(tuples, i, i - 1)
    counts[SHIFTED] += pos[END] - k
    pos[END] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _close(tuples, pos, counts, k):
    """Take tuple ``k`` out of the array: the tuples after it shift down one."""
    for i in range(k, pos[END] - 1):
        _move_tuple(tuples, i, i + 1)
    counts[SHIFTED] += pos[END] - 1 - k
    pos[END] -= 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def find_target(tuples, pos, counts, g, x):
    """Algorithm 2, Lines 14 and 24: scan the window from its latest tuple for group ``g``'s
    last tuple starting at or before ``x`` (``c``, -1: none) and the group's tuple after it
    (``right``, -1: none); ``ins``, where a tuple starting at ``x`` goes (after the tuples
    starting at or before ``x``: the arrival is the newest)."""
    ins, c, right = pos[HEAD], -1, -1
    k = pos[END] - 1
    found = False
    while k >= pos[HEAD]:
        counts[SCANNED] += 1
        if tuples.t_s[k] <= x:
            if not found:
                ins, found = k + 1, True
            if tuples.code[k] == g:
                c = k
                break
        elif tuples.code[k] == g:
            right = k
        k -= 1
    return ins, c, right


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def find_entry(tuples, vectors, counts, c, x):
    """Function 2, Line 1: scan ``c``'s vector from its end for ``x``'s place, after the
    timestamps at or before it (an in-order arrival reads one entry)."""
    first, p = tuples.start[c], tuples.length[c]
    while p > 0:
        counts[SCANNED] += 1
        if vectors.ts[first + p - 1] <= x:
            break
        p -= 1
    return p


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _grow(tuples, vectors, params, pos, counts, c, need):
    """Room for ``need`` entries in ``c``'s vector: a vector that is full moves to the pool's
    end with ``GROWTH`` times the room (the entries copied), as a growing array does."""
    if tuples.cap[c] >= need:
        return
    n, src, dst = tuples.length[c], tuples.start[c], pos[TOP]
    for k in range(n):
        _move_entry(vectors, dst + k, src + k, params.per_entry)
    counts[SHIFTED] += n
    tuples.start[c], tuples.cap[c] = dst, GROWTH * need
    pos[TOP] += GROWTH * need


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def merge(tuples, vectors, params, pos, counts, c, p, x, s, number, kind):
    """mergeTuples (Function 2): insert ``(x, s)`` at position ``p`` of ``c``'s vector, the
    later entries shifting up one (Line 1); ``t_e`` follows a new last timestamp (Lines
    2-3)."""
    _grow(tuples, vectors, params, pos, counts, c, tuples.length[c] + 1)
    first, n = tuples.start[c], tuples.length[c]
    for e in range(first + n, first + p, -1):
        _move_entry(vectors, e, e - 1, params.per_entry)
    counts[SHIFTED] += n - p
    vectors.ts[first + p], vectors.seq[first + p] = x, s
    if params.per_entry:
        vectors.number[first + p], vectors.kind[first + p] = number, kind
    tuples.length[c] = n + 1
    pos[LONGEST] = max(pos[LONGEST], n + 1)
    if tuples.t_e[c] < x:
        tuples.t_e[c] = x
    counts[MERGES] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def merge_front(tuples, vectors, params, pos, counts, r, ins, x, s, number, kind):
    """mergeTuples at the front of tuple ``r`` (the arrival precedes its group's next tuple
    and is equivalent to it): ``r`` now starts at ``x`` and moves down to ``ins``, the
    tuples between shifting up one; the index ``r`` now has."""
    merge(tuples, vectors, params, pos, counts, r, 0, x, s, number, kind)
    tuples.t_s[r] = x
    if r > ins:
        end = pos[END]
        _move_tuple(tuples, end, r)  # the spare slot at END holds it meanwhile
        for i in range(r, ins, -1):
            _move_tuple(tuples, i, i - 1)
        _move_tuple(tuples, ins, end)
        counts[SHIFTED] += r - ins
    return ins


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def absorb(tuples, vectors, params, pos, counts, c, r):
    """The arrival joined ``c`` and is equivalent to ``r``, the group's next tuple: ``r``'s
    vector is appended to ``c``'s (mergeTuples of each of its timestamps) and ``r`` leaves
    the array."""
    n, k = tuples.length[c], tuples.length[r]
    _grow(tuples, vectors, params, pos, counts, c, n + k)
    first, src = tuples.start[c], tuples.start[r]
    for e in range(k):
        _move_entry(vectors, first + n + e, src + e, params.per_entry)
    counts[SHIFTED] += k
    tuples.length[c] = n + k
    pos[LONGEST] = max(pos[LONGEST], n + k)
    tuples.t_e[c] = tuples.t_e[r]
    _close(tuples, pos, counts, r)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def split(tuples, vectors, params, pos, counts, c, p):
    """splitTuple (Function 3): a copy ``c2`` of ``c`` takes the entries from ``p`` on
    (Lines 1-4) and is added after ``c`` at its place by its first key (Line 5: the tuples
    after it shift up one); ``c`` is returned (Line 6) and ``c2``'s index."""
    first, n = tuples.start[c], tuples.length[c]
    rest, dst = n - p, pos[TOP]
    for k in range(rest):
        _move_entry(vectors, dst + k, first + p + k, params.per_entry)
    counts[SHIFTED] += rest
    pos[TOP] += rest
    end = pos[END]  # c2 is built in the spare slot at END, then moved to its place
    _move_tuple(tuples, end, c)
    tuples.t_s[end], tuples.start[end] = vectors.ts[dst], dst
    tuples.length[end] = tuples.cap[end] = rest
    tuples.length[c] = p
    tuples.t_e[c] = vectors.ts[dst]
    k = c + 1
    while k < end:
        counts[SCANNED] += 1
        if _before(tuples, vectors, end, k):
            break
        k += 1
    _move_tuple(tuples, end + 1, end)
    _open(tuples, pos, counts, k)
    _move_tuple(tuples, k, end + 1)
    counts[SPLITS] += 1
    return c, k


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def add(tuples, vectors, params, pos, counts, ins, c, right, x, s, g, number, kind):
    """addTuple (Function 1): a tuple of its own for the arrival at index ``ins`` (the
    tuples after it shift up one, Line 9), valid until its group's next tuple (Lines 5-7);
    its group's previous tuple now ends at ``x`` (Line 3)."""
    t_e = tuples.t_s[right] if right >= 0 else x
    if c >= 0:
        tuples.t_e[c] = x
    _open(tuples, pos, counts, ins)
    at = pos[TOP]
    pos[TOP] += 1
    tuples.t_s[ins], tuples.t_e[ins], tuples.code[ins] = x, t_e, g
    tuples.number[ins], tuples.kind[ins] = number, kind
    tuples.start[ins], tuples.length[ins], tuples.cap[ins] = at, 1, 1
    vectors.ts[at], vectors.seq[at] = x, s
    if params.per_entry:
        vectors.number[at], vectors.kind[at] = number, kind
    pos[LONGEST] = max(pos[LONGEST], 1)
    counts[INSERTS] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def detach(tuples, vectors, pos, counts):
    """Algorithm 2, Lines 2-3: the oldest timestamp leaves the first tuple's vector, which
    then starts at its next one; the tuple moves up to its place by that key (the tuples it
    passes shift down one)."""
    h = pos[HEAD]
    tuples.start[h] += 1
    tuples.length[h] -= 1
    tuples.cap[h] -= 1
    tuples.t_s[h] = vectors.ts[tuples.start[h]]
    end = pos[END]
    _move_tuple(tuples, end, h)  # held in the spare slot at END while the others pass
    k = h + 1
    while k < end:
        counts[SCANNED] += 1
        if _before(tuples, vectors, end, k):
            break
        _move_tuple(tuples, k - 1, k)
        counts[SHIFTED] += 1
        k += 1
    _move_tuple(tuples, k - 1, end)
    counts[DETACHES] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def delete(pos, counts):
    """Algorithm 2, Lines 5-7: the first tuple, holding only the oldest timestamp, leaves."""
    pos[HEAD] += 1
    counts[DELETES] += 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def expire(tuples, vectors, params, pos, clock, counts):
    """Algorithm 2, Lines 1-8 (and the time-based variant's loop): the oldest raw tuples
    leave the window, each a detach or a delete."""
    bound = clock[0] - params.size
    while pos[RAW] > 0 and (
        pos[RAW] > params.size if params.by_tuples else tuples.t_s[pos[HEAD]] < bound
    ):
        if tuples.length[pos[HEAD]] > 1:
            detach(tuples, vectors, pos, counts)
        else:
            delete(pos, counts)
        pos[RAW] -= 1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def too_late(tuples, params, pos, clock, x):
    """Algorithm 2, Line 11 (the window rule): older than the oldest of a full tuple window
    (a tie arrived later, so it is younger), or than ``t_max - T``."""
    if params.by_tuples:
        return pos[RAW] >= params.size and x < tuples.t_s[pos[HEAD]]
    return x < clock[0] - params.size


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def arrive(tuples, vectors, params, pos, counts, x, s, g, number, kind):
    """Lines 9-31 of Algorithm 2 for an arrival in the window: find its target, then merge,
    split and add, or add."""
    ins, c, right = find_target(tuples, pos, counts, g, x)
    p = find_entry(tuples, vectors, counts, c, x) if c >= 0 else 0
    if c >= 0 and p < tuples.length[c]:  # inside c's vector, between entries p - 1 and p
        e = tuples.start[c] + p
        join_a = same(params.kind, params.tolerance, params.quantum,
                      _value(c, e - 1, tuples, vectors, params), number)  # fmt: skip
        join_b = same(params.kind, params.tolerance, params.quantum,
                      number, _value(c, e, tuples, vectors, params))  # fmt: skip
        if join_a and join_b:
            merge(tuples, vectors, params, pos, counts, c, p, x, s, number, kind)
            return
        c, right = split(tuples, vectors, params, pos, counts, c, p)  # c2 lands at or after ins
    else:
        join_a = c >= 0 and same(params.kind, params.tolerance, params.quantum,
                                 _value(c, tuples.start[c] + tuples.length[c] - 1, tuples,
                                        vectors, params), number)  # fmt: skip
        join_b = right >= 0 and same(params.kind, params.tolerance, params.quantum, number,
                                     _value(right, tuples.start[right], tuples, vectors,
                                            params))  # fmt: skip
    if join_a:
        merge(tuples, vectors, params, pos, counts, c, tuples.length[c], x, s, number, kind)
        if join_b:
            absorb(tuples, vectors, params, pos, counts, c, right)
    elif join_b:
        right = merge_front(tuples, vectors, params, pos, counts, right, ins, x, s, number, kind)
        if c >= 0:
            tuples.t_e[c] = x
    else:
        add(tuples, vectors, params, pos, counts, ins, c, right, x, s, g, number, kind)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def push_batch(arrivals, tuples, vectors, params, pos, clock, counts, late):
    """tupleBasedEagerUpdate (Algorithm 2) and its time-based variant over the batch from
    row ``pos[ROW]``, in order; too-late rows are marked in ``late``.  Stops before an
    arrival in the window when not :func:`room_ok` (the caller makes room and calls again,
    as the reference makes room before each arrival it stores)."""
    n = arrivals.ts.shape[0]
    while pos[ROW] < n:
        i = pos[ROW]
        x = arrivals.ts[i]
        if too_late(tuples, params, pos, clock, x):
            late[i] = True
            pos[ROW] += 1
            pos[SEQ] += 1
            continue
        if not room_ok(tuples, vectors, pos):
            return
        pos[ROW] += 1
        s = pos[SEQ]
        pos[SEQ] += 1
        if x < clock[0]:
            counts[OUT_OF_ORDER] += 1
        else:
            clock[0] = x
        arrive(tuples, vectors, params, pos, counts, x, s, arrivals.code[i],
               arrivals.number[i], arrivals.kind[i])  # fmt: skip
        pos[RAW] += 1
        expire(tuples, vectors, params, pos, clock, counts)
