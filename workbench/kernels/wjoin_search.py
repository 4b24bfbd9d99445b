"""The multi-way window joins' search (W-join paper, Sections 3.1, 3.2 and 5.1), compiled: the
period each stream's candidates must fall in (BEW's, shrunk by every tuple chosen; FEW's, the
starting tuple's; none in the paper's FEW mode 2), the candidates met in a buffer (the fast
mechanism's range or the paper's per-tuple test, which also drops what its newest-timestamp
rule expires), and the backtracking over the streams with an explicit stack, written out as
m-tuples; with the kernel state's slots.  :mod:`workbench.kernels.wjoin` steps BEW and FEW
over a batch with it; ``MultiWayJoin._search`` is the Python reference it mirrors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.kernels.buffers import grow
from workbench.kernels.wjoin_store import NIL, POOL_B_NEWER, POOL_ID, find, unlink

__all__ = [
    "BEW",
    "BLIND",
    "COMPARISONS",
    "DROPPED",
    "FEW",
    "N_OUT",
    "PEAK",
    "SEQ",
    "START_ID",
    "START_KEY",
    "START_SEQ",
    "START_STREAM",
    "VISITED_IN",
    "VISITED_OUT",
]

(
    SEQ,
    COMPARISONS,
    DROPPED,
    N_OUT,
    START_STREAM,
    START_SEQ,
    START_ID,
    START_KEY,
    VISITED_IN,
    VISITED_OUT,
    PEAK,
) = range(11)
"""Slots of the kernel's int64 state: next arrival number, comparisons, drops, results written,
FEW's open period (its starting tuple's stream, -1 when none, and fields), the tuples visited
inside and outside the period, and the peak of tuples buffered."""

BEW, FEW, BLIND = range(3)
"""The search's period per stream: BEW's, shrunk by every tuple chosen (Section 3.1); FEW's,
the starting tuple's (Section 3.2); none, the paper's FEW mode 2 joining blindly buffers that
hold one period (Section 3.2)."""


@njit(cache=True, nogil=True)
def _period(mode, s, k, start_ts, sc, filt):
    """Stream s's period: BEW's shrunk one, FEW's of the starting tuple (ties go to the
    lower stream), or none (the paper's FEW's blind join)."""
    if mode == FEW:
        lo = start_ts if s > k else np.nextafter(start_ts, np.inf)
        return lo, start_ts + filt[k, s]
    lo, hi = -np.inf, np.inf
    if mode == BEW:
        for r in range(filt.shape[0]):
            if sc.chosen[r]:
                lo = max(lo, sc.cts[r] - filt[r, s])
                hi = min(hi, sc.cts[r] + filt[r, s])
    return lo, hi


@njit(cache=True, nogil=True)
def _enter(st, each, sc, d, s, key, state):
    """Put depth d's cursor on stream s's first tuple to visit: the oldest (the paper's BEW
    tests them all), or the period's first, binary-searched (nested loop) or found by
    walking the key's bucket past older tuples, each visited outside (hash)."""
    lo, hi = sc.lo[d], sc.hi[d]
    if st.hashed:
        slot = st.hbuckets[s, key, 0]
        while not each and slot != NIL and st.hts[slot] < lo:
            state[VISITED_OUT] += 1
            slot = st.hints[slot, POOL_B_NEWER]
        sc.cur[d] = slot
        return
    head, end = st.fspan[s, 0], st.fspan[s, 1]
    if each:
        sc.cur[d] = head
        return
    sc.cur[d] = head + np.searchsorted(st.fts[s, head:end], lo, side="left")
    sc.stop[d] = head + np.searchsorted(st.fts[s, head:end], hi, side="right")


@njit(cache=True, nogil=True)
def _take(st, sc, s, where):
    """Choose stream s's tuple at ``where`` (a queue position or a pool slot)."""
    if st.hashed:
        sc.cts[s] = st.hts[where]
        sc.cid[s] = st.hints[where, POOL_ID]
    else:
        sc.cts[s] = st.fts[s, where]
        sc.cid[s] = st.fid[s, where]


@njit(cache=True, nogil=True)
def _next_fast(st, sc, d, s, key, state):
    """Depth d's next candidate inside the period (the fast scan: every tuple scanned is a
    comparison and visited inside); whether one was found."""
    if st.hashed:
        slot = sc.cur[d]
        if slot == NIL or not st.hts[slot] <= sc.hi[d]:
            return False
        sc.cur[d] = st.hints[slot, POOL_B_NEWER]
        state[COMPARISONS] += 1
        state[VISITED_IN] += 1
        _take(st, sc, s, slot)
        return True
    p = find(st.fkey[s], sc.cur[d], sc.stop[d], key)
    found = p < sc.stop[d]
    state[COMPARISONS] += p + found - sc.cur[d]  # every tuple scanned has its key tested
    state[VISITED_IN] += p + found - sc.cur[d]
    sc.cur[d] = p + 1
    if found:
        _take(st, sc, s, p)
    return found


@njit(cache=True, nogil=True)
def _meet(st, sc, d, s, t, where, state):
    """The paper's BEW meets a tuple outside the period (Section 3.1): visited outside; one
    older than the period is compared with the expiry bound and dropped below it."""
    state[VISITED_OUT] += 1
    if t < sc.lo[d]:
        state[COMPARISONS] += 1
        if t < sc.drop[s]:
            state[DROPPED] += 1
            if st.hashed:
                unlink(st, s, where)
            else:
                st.fspan[s, 0] += 1  # older than the period and expired: the queue's head


@njit(cache=True, nogil=True)
def _next_each(st, sc, d, s, key, state):
    """The paper's BEW (Section 3.1): depth d's next candidate, every tuple of the queue (or
    of the key's bucket) tested against the period in a scalar loop, the key of each one
    inside tested (nested loop), each one met outside handed to :func:`_meet`.  Mirrored by
    ``FifoBuffers.test_each`` and ``HashBuffers.test_each``."""
    lo, hi = sc.lo[d], sc.hi[d]
    where = sc.cur[d]
    while (where != NIL) if st.hashed else (where < st.fspan[s, 1]):
        after = st.hints[where, POOL_B_NEWER] if st.hashed else where + 1
        t = st.hts[where] if st.hashed else st.fts[s, where]
        state[COMPARISONS] += 1
        if lo <= t <= hi:
            state[VISITED_IN] += 1
            hit = True
            if not st.hashed:
                state[COMPARISONS] += 1
                hit = st.fkey[s, where] == key
            if hit:
                sc.cur[d] = after
                _take(st, sc, s, where)
                return True
        else:
            _meet(st, sc, d, s, t, where, state)
        where = after
    sc.cur[d] = where
    return False


@njit(cache=True, nogil=True)
def _emit(sc, p, state, out):
    """Every stream chosen: refine GCA/LCA candidates (Section 5.1), write the m ids."""
    m = p.filt.shape[0]
    if p.refine:
        state[COMPARISONS] += 1
        for a in range(m):
            for b in range(a + 1, m):
                if not abs(sc.cts[a] - sc.cts[b]) <= p.windows[a, b]:
                    return out
    n = state[N_OUT]
    if n == out.shape[0]:
        out = grow(out, n, 1)
    for r in range(m):
        out[n, r] = sc.cid[r]
    state[N_OUT] = n + 1
    return out


@njit(cache=True, nogil=True)
def _search(st, p, mode, each, sc, key, k, start_ts, state, out):
    """Extend the chosen tuples with one tuple per unchosen stream, in stream order, by
    backtracking inside each stream's period (:func:`_period`), candidates of the key's
    bucket (hash) or of the queue (nested loop, key tested per tuple), by the fast scan or
    the paper's per-tuple test (``each``); returns ``out`` (grown as needed)."""
    n = 0
    for s in range(p.filt.shape[0]):
        if not sc.chosen[s]:
            sc.order[n] = s
            n += 1
    d = 0
    entering = True
    while d >= 0:
        if entering:
            entering = False
            if d == n:
                out = _emit(sc, p, state, out)
                d -= 1
                continue
            sc.lo[d], sc.hi[d] = _period(mode, sc.order[d], k, start_ts, sc, p.filt)
            if sc.lo[d] > sc.hi[d]:
                d -= 1
                continue
            _enter(st, each, sc, d, sc.order[d], key, state)
        s = sc.order[d]
        if _next_each(st, sc, d, s, key, state) if each else _next_fast(st, sc, d, s, key, state):
            sc.chosen[s] = True
            d += 1
            entering = True
        else:
            sc.chosen[s] = False
            d -= 1
    return out


@njit(cache=True, nogil=True)
def _choose_only(sc, s, ts, tid):
    """The search starts from one chosen tuple."""
    sc.chosen[:] = False
    sc.chosen[s] = True
    sc.cts[s] = ts
    sc.cid[s] = tid


@njit(cache=True, nogil=True)
def _horizon(p, r, newest, now, paper):
    """The expiry bound of stream r: a tuple older than ``min_j (t_j - D_j - C_rj)`` joins no
    future arrival, t_j the clock ``now`` (fast) or the paper's newest timestamp of stream j
    (``paper``).  Mirrored by ``MultiWayJoin._horizon``."""
    b = np.inf
    for j in range(p.filt.shape[0]):
        if j != r:
            b = min(b, (newest[j] if paper else now) - p.delays[j] - p.bound[r, j])
    return b
