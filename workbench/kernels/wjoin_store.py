"""Compiled window store of the multi-way window join (W-join paper, Sections 3.1.1 and
3.2.2): a stream's tuples in the nested-loop FIFO queues or the hash pool of
:mod:`workbench.operators.wbuffers` (``hashed`` picks which), inserted at their time position,
the oldest read and dropped, the expired ones dropped before a bound (BEW, Section 3.1), and the
nested loop's key scan; the kernels of :mod:`workbench.kernels.wjoin` call them on the same
buffers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "NIL",
    "POOL_B_NEWER",
    "POOL_B_OLDER",
    "POOL_ID",
    "POOL_KEY",
    "POOL_NEWER",
    "POOL_OLDER",
    "POOL_SEQ",
    "POOL_TS",
    "drop_before",
    "find",
    "insert",
    "oldest",
    "pop_oldest",
    "size",
]

NIL = -1
"""No slot: the end of a linked list."""
POOL_SEQ, POOL_ID, POOL_KEY, POOL_OLDER, POOL_NEWER, POOL_B_OLDER, POOL_B_NEWER, POOL_TS = range(8)
"""Columns of the hash pool (``HashBuffers.ints``): a slot's arrival number, id, key code, its
neighbours on the stream's list and in its bucket, and the timestamp's bits."""


@njit(cache=True, nogil=True)
def size(hashed, fifo, hlists, s):
    """Tuples buffered for stream s (W-join Section 3.1.1)."""
    if hashed:
        return hlists[s, 2]
    fspan = fifo[4]
    return fspan[s, 1] - fspan[s, 0]


@njit(cache=True, nogil=True)
def _link(hts, hints, ends, slot, older, newer):
    """Thread a pool slot on a time-ordered list after the last ts <= its own (Section 3.2.2)."""
    after = ends[1]
    while after != NIL and hts[after] > hts[slot]:
        after = hints[after, older]
    nxt = ends[0] if after == NIL else hints[after, newer]
    hints[slot, older] = after
    hints[slot, newer] = nxt
    if nxt == NIL:
        ends[1] = slot
    else:
        hints[nxt, older] = slot
    if after == NIL:
        ends[0] = slot
    else:
        hints[after, newer] = slot


@njit(cache=True, nogil=True)
def insert(hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, s, t):
    """Buffer tuple t = (ts, seq, id, key) of stream s at its time position (Section 3.1.1)."""
    ts, seq, tid, key = t
    if hashed:
        hnfree[0] -= 1
        slot = hfree[hnfree[0]]
        hts[slot] = ts
        hints[slot, POOL_SEQ] = seq
        hints[slot, POOL_ID] = tid
        hints[slot, POOL_KEY] = key
        _link(hts, hints, hlists[s], slot, POOL_OLDER, POOL_NEWER)
        _link(hts, hints, hbuckets[s, key], slot, POOL_B_OLDER, POOL_B_NEWER)
        hlists[s, 2] += 1
        return
    fts, fseq, fid, fkey, fspan = fifo
    head, end = fspan[s, 0], fspan[s, 1]
    pos = head + np.searchsorted(fts[s, head:end], ts, side="right")
    for i in range(end, pos, -1):  # few: arrivals are nearly in timestamp order
        fts[s, i] = fts[s, i - 1]
        fseq[s, i] = fseq[s, i - 1]
        fid[s, i] = fid[s, i - 1]
        fkey[s, i] = fkey[s, i - 1]
    fts[s, pos] = ts
    fseq[s, pos] = seq
    fid[s, pos] = tid
    fkey[s, pos] = key
    fspan[s, 1] = end + 1


@njit(cache=True, nogil=True)
def oldest(hashed, fifo, hts, hints, hlists, s):
    """Stream s's oldest tuple (ts, seq, id, key); the buffer must hold one (Section 3.2)."""
    if hashed:
        slot = hlists[s, 0]
        return hts[slot], hints[slot, POOL_SEQ], hints[slot, POOL_ID], hints[slot, POOL_KEY]
    fts, fseq, fid, fkey, fspan = fifo
    h = fspan[s, 0]
    return fts[s, h], fseq[s, h], fid[s, h], fkey[s, h]


@njit(cache=True, nogil=True)
def pop_oldest(hashed, fifo, hints, hlists, hbuckets, hfree, hnfree, s):
    """Drop stream s's oldest tuple: unlink it from its list and its bucket (Section 3.2.2)."""
    if not hashed:
        fifo[4][s, 0] += 1
        return
    slot = hlists[s, 0]
    nxt = hints[slot, POOL_NEWER]
    hlists[s, 0] = nxt
    if nxt == NIL:
        hlists[s, 1] = NIL
    else:
        hints[nxt, POOL_OLDER] = NIL
    bucket = hbuckets[s, hints[slot, POOL_KEY]]
    nxt = hints[slot, POOL_B_NEWER]
    bucket[0] = nxt
    if nxt == NIL:
        bucket[1] = NIL
    else:
        hints[nxt, POOL_B_OLDER] = NIL
    hlists[s, 2] -= 1
    hfree[hnfree[0]] = slot
    hnfree[0] += 1


@njit(cache=True, nogil=True)
def drop_before(hashed, fifo, hts, hints, hlists, hbuckets, hfree, hnfree, s, bound):
    """Expire stream s's tuples with ``ts < bound``; how many (BEW expiry, Section 3.1)."""
    if not hashed:
        fts, fspan = fifo[0], fifo[4]
        head, end = fspan[s, 0], fspan[s, 1]
        n = np.searchsorted(fts[s, head:end], bound, side="left")
        fspan[s, 0] = head + n
        return n
    n = 0
    while hlists[s, 0] != NIL and hts[hlists[s, 0]] < bound:
        pop_oldest(True, fifo, hints, hlists, hbuckets, hfree, hnfree, s)
        n += 1
    return n


@njit(cache=True, nogil=True)
def find(keys, start, stop, key):
    """The first position of ``key`` in ``keys[start:stop]`` (``stop`` if none): the nested
    loop's key test over an ordered queue (Section 3.1.1), 64 tuples at a time so the
    compiler vectorizes the tests."""
    p = start
    while p + 64 <= stop:
        chunk = keys[p : p + 64]
        hits = False
        for j in range(64):
            hits |= chunk[j] == key
        if hits:
            break
        p += 64
    while p < stop and keys[p] != key:
        p += 1
    return p
