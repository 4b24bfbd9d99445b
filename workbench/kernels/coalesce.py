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

from workbench.kernels.coalesce_room import compacts, kept_room, moved_room, row_need

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


# -- eager coalescing: coalesced tuples with timestamp vectors (Appendix A) -------------------
#
# A coalesced tuple ``c`` holds its raw tuples' keys in a vector: entries ``[c_start[c],
# c_start[c] + c_len[c])`` of the pool ``v_ts``/``v_seq`` (room for ``c_cap[c]``), in key
# order; ``c_prev``/``c_next`` link a group's coalesced tuples in key order, ``g_head``/
# ``g_tail`` are each group's first and last (-1: none), ``c_code`` the group (-1: a free
# tuple).  Runs of the transitive kinds are judged on the tuple's one value ``c_number`` (and
# ``c_type`` the type it came as: a batch's ``batch_type``); the other kinds keep each raw
# value in ``v_number`` beside its timestamp (``per_entry``).  ``pos`` holds ``[head, end, seq,
# n_free_c, v_top, need]``: the key order's live range, the next arrival number, the free
# tuples on ``c_free``, the pool's first unused entry, and the pool entries the row the kernel
# stopped at needs.  The arrays are sized by :mod:`workbench.kernels.coalesce_room`.

HEAD, END, SEQ, N_FREE_C, V_TOP, NEED = range(6)  # the slots of ``pos``


@njit(cache=True, nogil=True, _nrt=False)
def _value_at(e, c, per_entry, v_number, c_number):
    """The value entry ``e`` of tuple ``c`` is judged by."""
    return v_number[e] if per_entry else c_number[c]


@njit(cache=True, nogil=True, _nrt=False)
def _after_equal(v_ts, first, n, x):
    """How many of the ``n`` sorted timestamps from ``first`` are ``<= x`` (binary search)."""
    if v_ts[first + n - 1] <= x:  # in order: after the whole vector
        return n
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if v_ts[first + mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, _nrt=False)
def _locate(g, x, c_start, c_len, c_prev, c_next, g_head, g_tail, v_ts):
    """Where timestamp ``x`` lands among group ``g``'s coalesced tuples: the tuple ``c`` whose
    vector it lands in or after (-1: before all), its place ``p`` there (after its equal
    timestamps) and the group's next tuple ``right``."""
    c = g_tail[g]
    while c >= 0 and v_ts[c_start[c]] > x:
        c = c_prev[c]
    if c < 0:
        return c, 0, g_head[g]
    return c, _after_equal(v_ts, c_start[c], c_len[c], x), c_next[c]


@njit(cache=True, nogil=True, _nrt=False)
def _copy_entries(dst, src, n, v_ts, v_seq, v_number, per_entry):
    """Move ``n`` pool entries from ``src`` to ``dst`` (overlapping ranges allowed)."""
    if dst < src:
        for k in range(n):
            v_ts[dst + k] = v_ts[src + k]
            v_seq[dst + k] = v_seq[src + k]
            if per_entry:
                v_number[dst + k] = v_number[src + k]
    else:
        for k in range(n - 1, -1, -1):
            v_ts[dst + k] = v_ts[src + k]
            v_seq[dst + k] = v_seq[src + k]
            if per_entry:
                v_number[dst + k] = v_number[src + k]


@njit(cache=True, nogil=True, _nrt=False)
def _room(c, need, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos):
    """Room for ``need`` entries in ``c``'s vector: grown in place when it ends the pool's
    used part, else moved to its end with ``moved_room`` (the caller left
    ``row_need``)."""
    if c_cap[c] >= need:
        return
    if c_start[c] + c_cap[c] == pos[V_TOP]:
        pos[V_TOP] = c_start[c] + need
        c_cap[c] = need
        return
    cap = moved_room(c_len[c], need)
    _copy_entries(pos[V_TOP], c_start[c], c_len[c], v_ts, v_seq, v_number, per_entry)
    c_start[c] = pos[V_TOP]
    c_cap[c] = cap
    pos[V_TOP] += cap


@njit(cache=True, nogil=True)
def _compact(c_start, c_len, c_cap, c_code, v_ts, v_seq, v_number, per_entry, pos):
    """Move every live vector to the front of the pool with the room ``kept_room`` leaves it
    (pool entries left behind by detaches, splits and moves are reclaimed), in pool order:
    each vector's first entry marks its tuple."""
    owner = np.full(pos[V_TOP], -1, dtype=np.int64)
    for c in range(c_code.shape[0]):
        if c_code[c] >= 0:
            owner[c_start[c]] = c
    top = 0
    for c in owner:
        if c >= 0:
            _copy_entries(top, c_start[c], c_len[c], v_ts, v_seq, v_number, per_entry)
            c_start[c] = top
            c_cap[c] = kept_room(c_len[c], c_cap[c])
            top += c_cap[c]
    pos[V_TOP] = top


@njit(cache=True, nogil=True, _nrt=False)
def _new_tuple(
    g, left, right, cap, c_start, c_len, c_cap, c_prev, c_next, c_code, c_free, g_head, g_tail, pos
):
    """addTuple (Function 1): a coalesced tuple of group ``g`` with an empty vector (room for
    ``cap``), linked between the group's tuples ``left`` and ``right``."""
    pos[N_FREE_C] -= 1
    c = c_free[pos[N_FREE_C]]
    c_start[c] = pos[V_TOP]
    c_len[c] = 0
    c_cap[c] = cap
    pos[V_TOP] += cap
    c_code[c] = g
    c_prev[c] = left
    c_next[c] = right
    if left >= 0:
        c_next[left] = c
    else:
        g_head[g] = c
    if right >= 0:
        c_prev[right] = c
    else:
        g_tail[g] = c
    return c


@njit(cache=True, nogil=True, _nrt=False)
def _free_tuple(c, c_prev, c_next, c_code, c_free, g_head, g_tail, pos):
    """Unlink a coalesced tuple from its group and free it."""
    g, left, right = c_code[c], c_prev[c], c_next[c]
    if left >= 0:
        c_next[left] = right
    else:
        g_head[g] = right
    if right >= 0:
        c_prev[right] = left
    else:
        g_tail[g] = left
    c_code[c] = -1
    c_free[pos[N_FREE_C]] = c
    pos[N_FREE_C] += 1


@njit(cache=True, nogil=True, _nrt=False)
def _insert_entry(c, p, x, s, number, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos):
    """Insert key ``(x, s)`` at position ``p`` of ``c``'s vector in sorted order (mergeTuples,
    Function 2, Line 1): the later entries move up one."""
    _room(c, c_len[c] + 1, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos)
    at = c_start[c] + p
    _copy_entries(at + 1, at, c_len[c] - p, v_ts, v_seq, v_number, per_entry)
    v_ts[at] = x
    v_seq[at] = s
    if per_entry:
        v_number[at] = number
    c_len[c] += 1


@njit(cache=True, nogil=True, _nrt=False)
def _split(
    c, p, g, counts, pos, c_start, c_len, c_cap, c_prev, c_next, c_code, c_number, c_type,
    c_free, g_head, g_tail, v_ts, v_seq, v_number, per_entry,
):  # fmt: skip
    """splitTuple (Function 3): the entries of ``c``'s vector from ``p`` on move to a copy of
    ``c`` linked after it; the copy."""
    counts[SPLITS] += 1
    rest = c_len[c] - p
    c2 = _new_tuple(
        g, c, c_next[c], rest, c_start, c_len, c_cap, c_prev, c_next, c_code, c_free, g_head,
        g_tail, pos,
    )  # fmt: skip
    _copy_entries(c_start[c2], c_start[c] + p, rest, v_ts, v_seq, v_number, per_entry)
    c_len[c2] = rest
    c_len[c] = p
    c_number[c2] = c_number[c]
    c_type[c2] = c_type[c]
    return c2


@njit(cache=True, nogil=True)
def eager_push(
    batch_ts, batch_number, batch_code, first, late, order_ts, order_code, t_max, by_tuples,
    size, counts, pos, c_start, c_len, c_cap, c_prev, c_next, c_code, c_number, c_free, g_head,
    g_tail, v_ts, v_seq, v_number, per_entry, kind, tolerance, quantum, c_type, batch_type,
):  # fmt: skip
    """tupleBasedEagerUpdate (Algorithm 2) and its time-based variant over a batch's rows from
    ``first`` on, in order, on coalesced tuples with timestamp vectors (addTuple, mergeTuples,
    splitTuple, detach: Appendix A), marking the rows too late in ``late``; the row it stopped
    at (the batch's length when done) and the new ``t_max``.

    Before each row it makes room (:mod:`~workbench.kernels.coalesce_room`): it compacts the
    pool when ``compacts`` says so, and stops at a row that finds fewer than two free tuples or
    fewer free pool entries than its ``row_need`` (left in ``pos[NEED]``): the caller grows
    the arrays and calls it again from that row.  The caller leaves the key order room for
    the batch.  A row's steps stay in this loop: a call passing the state's arrays costs about
    as much as the steps.
    """
    n = batch_ts.shape[0]
    for i in range(first, n):
        x = batch_ts[i]
        head, end = pos[HEAD], pos[END]
        if _late(order_ts, head, end, t_max, by_tuples, size, x):
            pos[SEQ] += 1
            late[i] = True
            continue
        g = batch_code[i]
        c, p, right = _locate(g, x, c_start, c_len, c_prev, c_next, g_head, g_tail, v_ts)
        need = row_need(c, p, right, c_start, c_len, c_cap, pos[V_TOP])
        if compacts(v_ts.shape[0], pos[V_TOP], end - head, need):
            _compact(c_start, c_len, c_cap, c_code, v_ts, v_seq, v_number, per_entry, pos)
            need = row_need(c, p, right, c_start, c_len, c_cap, pos[V_TOP])
        if pos[N_FREE_C] < 2 or v_ts.shape[0] - pos[V_TOP] < need:
            pos[NEED] = need
            return i, t_max
        pos[SEQ] += 1
        if x < t_max:
            counts[OUT_OF_ORDER] += 1
        else:
            t_max = x
        pos[HEAD], pos[END] = _place(order_ts, order_code, head, end, x, g)
        s = pos[SEQ] - 1
        v = batch_number[i]
        inside = False
        if c >= 0 and p < c_len[c]:  # x lands inside c, between its entries p - 1 and p
            e = c_start[c] + p
            join_a = same(
                kind, tolerance, quantum, _value_at(e - 1, c, per_entry, v_number, c_number), v
            )
            join_b = same(
                kind, tolerance, quantum, v, _value_at(e, c, per_entry, v_number, c_number)
            )
            if join_a and join_b:  # mergeTuples, inside c's vector
                counts[MERGES] += 1
                _insert_entry(
                    c, p, x, s, v, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos
                )
                inside = True
            else:  # splitTuple: c's entries from p on move to a copy, the new right
                right = _split(
                    c, p, g, counts, pos, c_start, c_len, c_cap, c_prev, c_next, c_code, c_number,
                    c_type, c_free, g_head, g_tail, v_ts, v_seq, v_number, per_entry,
                )  # fmt: skip
        else:
            join_a = c >= 0 and same(
                kind, tolerance, quantum,
                _value_at(c_start[c] + c_len[c] - 1, c, per_entry, v_number, c_number), v,
            )  # fmt: skip
            join_b = right >= 0 and same(
                kind, tolerance, quantum, v,
                _value_at(c_start[right], right, per_entry, v_number, c_number),
            )  # fmt: skip
        if inside:  # merged between two entries of c's vector
            pass
        elif join_a:  # mergeTuples: x joins c's vector at its end (and bridges to right)
            counts[MERGES] += 1
            _insert_entry(
                c, c_len[c], x, s, v, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos
            )
            if join_b:
                k = c_len[right]
                _room(c, c_len[c] + k, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos)
                _copy_entries(
                    c_start[c] + c_len[c], c_start[right], k, v_ts, v_seq, v_number, per_entry
                )
                c_len[c] += k
                _free_tuple(right, c_prev, c_next, c_code, c_free, g_head, g_tail, pos)
        elif join_b:  # mergeTuples: x joins right's vector at its front
            counts[MERGES] += 1
            _insert_entry(
                right, 0, x, s, v, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos
            )
        else:  # addTuple: x starts a coalesced tuple of its own
            counts[INSERTS] += 1
            cx = _new_tuple(
                g, c, right, 1, c_start, c_len, c_cap, c_prev, c_next, c_code, c_free, g_head,
                g_tail, pos,
            )  # fmt: skip
            _insert_entry(
                cx, 0, x, s, v, c_start, c_len, c_cap, v_ts, v_seq, v_number, per_entry, pos
            )
            c_number[cx] = v
            c_type[cx] = batch_type
        _expire_eager(
            order_ts, order_code, t_max, by_tuples, size, counts, pos,
            c_start, c_len, c_cap, c_prev, c_next, c_code, c_free, g_head, g_tail,
        )  # fmt: skip
    return n, t_max


@njit(cache=True, nogil=True, _nrt=False)
def _expire_eager(
    order_ts,
    order_code,
    t_max,
    by_tuples,
    size,
    counts,
    pos,
    c_start,
    c_len,
    c_cap,
    c_prev,
    c_next,
    c_code,
    c_free,
    g_head,
    g_tail,
):
    """Expire the oldest raw tuples (Algorithm 2, Lines 1-8): the oldest is the first
    timestamp of its group's first coalesced tuple, detached from the vector, or the tuple
    deleted with it."""
    bound = t_max - size
    while pos[HEAD] < pos[END] and (
        pos[END] - pos[HEAD] > size if by_tuples else order_ts[pos[HEAD]] < bound
    ):
        c = g_head[order_code[pos[HEAD]]]
        pos[HEAD] += 1
        if c_len[c] > 1:
            counts[DETACHES] += 1
            c_start[c] += 1
            c_len[c] -= 1
            c_cap[c] -= 1
        else:
            counts[DELETES] += 1
            _free_tuple(c, c_prev, c_next, c_code, c_free, g_head, g_tail, pos)
