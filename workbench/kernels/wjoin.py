"""Compiled multi-way window joins (W-join paper, Sections 3-5): BEW- and FEW-join over the
nested-loop or hash buffers of :mod:`workbench.operators.wbuffers`, for the equality
predicate (join values factorized to int64 key codes).

A batch is processed tuple by tuple exactly as ``MultiWayJoin.push`` does: the clock moves to
each arrival; a late tuple does nothing else; an on-time tuple is numbered, joined and
buffered, then BEW expires what no future arrival can join and FEW closes and opens the
periods that fell due.  The backtracking search of ``MultiWayJoin._search`` runs with an
explicit stack (one candidate cursor per depth), visiting streams and candidates in the same
order, so the m-tuples and the comparison counts come out identical.

Both buffer kinds are passed to every kernel (the unused one empty), so each kernel compiles
once: ``hashed`` picks the one in use, and the window store of
:mod:`workbench.kernels.wjoin_store` reads and writes it.  Mutable scalars travel in ``state``
(:data:`SEQ` .. :data:`START_KEY`) and ``start_ts``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.kernels.buffers import grow
from workbench.kernels.wjoin_store import (
    NIL,
    POOL_B_NEWER,
    POOL_ID,
    POOL_TS,
    drop_before,
    find,
    insert,
    oldest,
    pop_oldest,
    size,
)

__all__ = [
    "COMPARISONS",
    "DROPPED",
    "N_OUT",
    "SEQ",
    "START_ID",
    "START_KEY",
    "START_SEQ",
    "START_STREAM",
    "warm_up",
    "wjoin_batch",
]

SEQ, COMPARISONS, DROPPED, N_OUT, START_STREAM, START_SEQ, START_ID, START_KEY = range(8)
"""Slots of the kernel's int64 state: next arrival number, counters, results written, and
FEW's open period (its starting tuple's stream, -1 when none, and fields)."""


@njit(cache=True, nogil=True)
def _search(
    hashed,
    few,
    fifo,
    hts,
    hints,
    hbuckets,
    chosen,
    cts,
    cid,
    key,
    start_ts,
    k,
    filt,
    windows,
    refine,
    state,
    out,
    work,
    hi_of,
):
    """Extend the chosen tuples with one tuple per unchosen stream, in stream order, by
    backtracking: BEW's shrinking period (Section 3.1) or FEW's period of the starting
    tuple (Section 3.2); candidates of the key's bucket (hash) or of the ordered queue
    (nested loop, key tested per tuple); GCA/LCA candidates refined (Section 5.1).  Writes
    the m-tuples' ids to ``out`` (returned, grown as needed)."""
    m = filt.shape[0]
    fts, fid, fkey, fspan = fifo[0], fifo[2], fifo[3], fifo[4]
    order, cur, stop = work[0], work[1], work[2]
    depth_n = 0
    for s in range(m):
        if not chosen[s]:
            order[depth_n] = s
            depth_n += 1
    d = 0
    entering = True
    while d >= 0:
        if entering:
            entering = False
            if d == depth_n:  # every stream chosen: refine, emit
                ok = True
                if refine:
                    state[COMPARISONS] += 1
                    for a in range(m):
                        for b in range(a + 1, m):
                            if not abs(cts[a] - cts[b]) <= windows[a, b]:
                                ok = False
                if ok:
                    n = state[N_OUT]
                    if n == out.shape[0]:
                        out = grow(out, n, 1)
                    for r in range(m):
                        out[n, r] = cid[r]
                    state[N_OUT] = n + 1
                d -= 1
                continue
            s = order[d]
            if few:
                lo = start_ts if s > k else np.nextafter(start_ts, np.inf)
                hi = start_ts + filt[k, s]
            else:
                lo, hi = -np.inf, np.inf
                for r in range(m):
                    if chosen[r]:
                        lo = max(lo, cts[r] - filt[r, s])
                        hi = min(hi, cts[r] + filt[r, s])
            if lo > hi:
                d -= 1
                continue
            if hashed:
                slot = hbuckets[s, key, 0]
                while slot != NIL and hts[slot] < lo:
                    slot = hints[slot, POOL_B_NEWER]
                cur[d] = slot
                hi_of[d] = hi
            else:
                head, end = fspan[s, 0], fspan[s, 1]
                cur[d] = head + np.searchsorted(fts[s, head:end], lo, side="left")
                stop[d] = head + np.searchsorted(fts[s, head:end], hi, side="right")
        s = order[d]
        found = False
        if hashed:
            slot = cur[d]
            if slot != NIL and hts[slot] <= hi_of[d]:
                cur[d] = hints[slot, POOL_B_NEWER]
                state[COMPARISONS] += 1
                cts[s] = hts[slot]
                cid[s] = hints[slot, POOL_ID]
                found = True
        else:
            p = find(fkey[s], cur[d], stop[d], key)
            found = p < stop[d]
            state[COMPARISONS] += p + found - cur[d]  # every tuple scanned has its key tested
            cur[d] = p + 1
            if found:
                cts[s] = fts[s, p]
                cid[s] = fid[s, p]
        if found:
            chosen[s] = True
            d += 1
            entering = True
        else:
            chosen[s] = False
            d -= 1
    return out


@njit(cache=True, nogil=True)
def _due(
    hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, now, delays, filt, windows,
    refine, state, start_ts, out, chosen, cts, cid, work, hi_of,
):  # fmt: skip
    """FEW-join's periods that fell due by ``now`` (Section 3.2): the open period closes once
    none of its tuples can still arrive (its starting tuple leaves), then mode 1 opens the
    oldest buffered tuple's period once nothing older can arrive and joins it blindly."""
    m = filt.shape[0]
    while True:  # the periods that fell due
        k = state[START_STREAM]
        if k >= 0:
            reach = -np.inf
            for j in range(m):
                if j != k:
                    reach = max(reach, filt[k, j] + delays[j])
            if not now > start_ts[0] + reach:
                break  # tuples of the period may still arrive
            pop_oldest(hashed, fifo, hints, hlists, hbuckets, hfree, hnfree, k)
            state[DROPPED] += 1
            state[START_STREAM] = -1
        k = -1  # mode 1: the oldest buffered tuple starts the next period
        t0 = np.inf
        for r in range(m):
            if size(hashed, fifo, hlists, r) > 0:
                t = oldest(hashed, fifo, hts, hints, hlists, r)[0]
                if t < t0:
                    k, t0 = r, t
        if k < 0 or not now > t0 + delays.max():
            break
        t0, seq, tid, key = oldest(hashed, fifo, hts, hints, hlists, k)
        start_ts[0] = t0
        state[START_STREAM], state[START_SEQ], state[START_ID], state[START_KEY] = (
            k, seq, tid, key
        )  # fmt: skip
        chosen[:] = False
        chosen[k] = True
        cts[k], cid[k] = t0, tid
        out = _search(
            hashed, True, fifo, hts, hints, hbuckets, chosen, cts, cid,
            key, t0, k, filt, windows, refine, state, out, work, hi_of,
        )  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def wjoin_batch(
    few,
    hashed,
    refine,
    stream,
    ids,
    keys,
    ts,
    late,
    arrival,
    until,
    delays,
    filt,
    windows,
    bound,
    fts,
    fseq,
    fid,
    fkey,
    fspan,
    hints,
    hlists,
    hbuckets,
    hfree,
    hnfree,
    state,
    start_ts,
    out,
):
    """BEW-join (Section 3.1: join at once, then expire) or FEW-join (Section 3.2: mode 2
    admission into the open period, then the periods that fell due, mode 1) of a batch of
    valid tuples, one by one as ``push``, then FEW's periods due by ``until`` (-inf: none;
    ``advance`` and ``flush`` pass an empty batch); returns the result ids (``state[N_OUT]``
    rows)."""
    m = filt.shape[0]
    fifo = (fts, fseq, fid, fkey, fspan)
    hts = hints.view(np.float64)[:, POOL_TS]
    chosen = np.zeros(m, dtype=np.bool_)
    cts = np.zeros(m)
    cid = np.zeros(m, dtype=np.int64)
    work = np.zeros((3, m), dtype=np.int64)
    hi_of = np.zeros(m)
    for i in range(stream.shape[0]):
        if late[i]:
            continue
        now = arrival[i]
        s = stream[i]
        seq = state[SEQ]
        state[SEQ] = seq + 1
        item = (ts[i], seq, ids[i], keys[i])
        if not few:
            chosen[:] = False
            chosen[s] = True
            cts[s] = ts[i]
            cid[s] = ids[i]
            out = _search(
                hashed, False, fifo, hts, hints, hbuckets, chosen, cts, cid,
                keys[i], 0.0, 0, filt, windows, refine, state, out, work, hi_of,
            )  # fmt: skip
            insert(hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, s, item)
            for r in range(m):  # expire what no future arrival can join
                b = np.inf
                for j in range(m):
                    if j != r:
                        b = min(b, now - delays[j] - bound[r, j])
                state[DROPPED] += drop_before(
                    hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, r, b
                )
            continue
        insert(hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, s, item)
        k = state[START_STREAM]
        t0 = start_ts[0]
        if (  # mode 2: a new tuple inside the open period joins its starting tuple's period
            k >= 0
            and s != k
            and (ts[i] > t0 or (ts[i] == t0 and s > k))
            and ts[i] <= t0 + filt[k, s]
            and keys[i] == state[START_KEY]
        ):
            chosen[:] = False
            chosen[k] = chosen[s] = True
            cts[k], cid[k] = t0, state[START_ID]
            cts[s], cid[s] = ts[i], ids[i]
            out = _search(
                hashed, True, fifo, hts, hints, hbuckets, chosen, cts, cid,
                keys[i], t0, k, filt, windows, refine, state, out, work, hi_of,
            )  # fmt: skip
        out = _due(
            hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, now, delays, filt,
            windows, refine, state, start_ts, out, chosen, cts, cid, work, hi_of,
        )  # fmt: skip
    if few and until > -np.inf:  # advance or flush: the periods due by then
        out = _due(
            hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, until, delays, filt,
            windows, refine, state, start_ts, out, chosen, cts, cid, work, hi_of,
        )  # fmt: skip
    return out


def warm_up() -> None:
    """Compile (or load from the on-disk cache) :func:`wjoin_batch` for the one signature
    the operators call it with, outside any timed region."""
    i, f, b = np.zeros(1, np.int64), np.zeros(1), np.zeros(1, np.bool_)
    square, state = np.zeros((2, 2)), np.zeros(8, np.int64)
    fifo = np.zeros((2, 0)), *(np.zeros((2, 0), np.int64) for _ in range(3))
    hints = np.zeros((0, 8), np.int64)
    hlists, hbuckets = np.zeros((2, 3), np.int64), np.zeros((2, 0, 2), np.int64)
    wjoin_batch(
        False, False, False, i, i, i, f, ~b, f, -np.inf, f, square, square, square,
        *fifo, np.zeros((2, 2), np.int64), hints, hlists, hbuckets, i[:0], i,
        state, f, np.zeros((1, 2), np.int64),
    )  # fmt: skip
