"""Compiled window store of the multi-way window join (W-join paper, Sections 3.1.1 and
3.2.2): a stream's tuples in the nested-loop FIFO queues or the hash pool of
:mod:`workbench.operators.wbuffers` (``Store.hashed`` picks which), inserted at their time
position, the oldest and newest read, the oldest dropped, the expired ones dropped before a
bound (BEW, Section 3.1; FEW's trim at a restart of mode 1, Section 3.2), a met tuple unlinked
from the middle of its bucket (the paper's BEW, Section 3.1), and the nested loop's key scan;
the kernels of :mod:`workbench.kernels.wjoin` call them on the same buffers.
"""

from __future__ import annotations

from typing import NamedTuple

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
    "Store",
    "drop_before",
    "find",
    "insert",
    "newest_ts",
    "oldest",
    "pop_oldest",
    "size",
    "sweep",
    "unlink",
]

NIL = -1
"""No slot: the end of a linked list."""
POOL_SEQ, POOL_ID, POOL_KEY, POOL_OLDER, POOL_NEWER, POOL_B_OLDER, POOL_B_NEWER, POOL_TS = range(8)
"""Columns of the hash pool (``HashBuffers.ints``): a slot's arrival number, id, key code, its
neighbours on the stream's list and in its bucket, and the timestamp's bits."""


class Store(NamedTuple):
    """Both buffer kinds of :mod:`workbench.operators.wbuffers` as one bundle (the kind not
    in use empty): ``hashed`` picks the hash pool, else the FIFO queues."""

    hashed: bool
    fts: np.ndarray
    fseq: np.ndarray
    fid: np.ndarray
    fkey: np.ndarray
    fspan: np.ndarray
    hts: np.ndarray
    hints: np.ndarray
    hlists: np.ndarray
    hbuckets: np.ndarray
    hfree: np.ndarray
    hnfree: np.ndarray


@njit(cache=True, nogil=True)
def size(st, s):
    """Tuples buffered for stream s (W-join Section 3.1.1)."""
    if st.hashed:
        return st.hlists[s, 2]
    return st.fspan[s, 1] - st.fspan[s, 0]


@njit(cache=True, nogil=True)
def _link(hts, hints, ends, slot, older, newer):
    """Thread a pool slot on a time-ordered list after the last ts <= its own (Section 3.2.2).
    Mirrored by ``HashBuffers._link``."""
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
def _unthread(hints, ends, slot, older, newer):
    """Take a pool slot off a doubly linked list whose (oldest, newest) are ``ends``.  Mirrored
    by ``HashBuffers._unthread``."""
    before, after = hints[slot, older], hints[slot, newer]
    if before == NIL:
        ends[0] = after
    else:
        hints[before, newer] = after
    if after == NIL:
        ends[1] = before
    else:
        hints[after, older] = before


@njit(cache=True, nogil=True)
def insert(st, s, ts, seq, tid, key):
    """Buffer tuple (ts, seq, id, key) of stream s at its time position (Section 3.1.1).
    Mirrored by ``HashBuffers.insert`` and ``FifoBuffers.insert``."""
    if st.hashed:
        st.hnfree[0] -= 1
        slot = st.hfree[st.hnfree[0]]
        st.hts[slot] = ts
        st.hints[slot, POOL_SEQ] = seq
        st.hints[slot, POOL_ID] = tid
        st.hints[slot, POOL_KEY] = key
        _link(st.hts, st.hints, st.hlists[s], slot, POOL_OLDER, POOL_NEWER)
        _link(st.hts, st.hints, st.hbuckets[s, key], slot, POOL_B_OLDER, POOL_B_NEWER)
        st.hlists[s, 2] += 1
        return
    fts, fseq, fid, fkey = st.fts, st.fseq, st.fid, st.fkey
    head, end = st.fspan[s, 0], st.fspan[s, 1]
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
    st.fspan[s, 1] = end + 1


@njit(cache=True, nogil=True)
def oldest(st, s):
    """Stream s's oldest tuple (ts, seq, id, key); the buffer must hold one (Section 3.2)."""
    if st.hashed:
        slot = st.hlists[s, 0]
        h = st.hints
        return st.hts[slot], h[slot, POOL_SEQ], h[slot, POOL_ID], h[slot, POOL_KEY]
    h = st.fspan[s, 0]
    return st.fts[s, h], st.fseq[s, h], st.fid[s, h], st.fkey[s, h]


@njit(cache=True, nogil=True)
def newest_ts(st, s):
    """Stream s's newest timestamp; the buffer must hold a tuple (Section 3.2's period)."""
    if st.hashed:
        return st.hts[st.hlists[s, 1]]
    return st.fts[s, st.fspan[s, 1] - 1]


@njit(cache=True, nogil=True)
def unlink(st, s, slot):
    """Drop one tuple of stream s's hash pool from its list and its bucket, wherever it is
    (the paper's BEW meets expired tuples inside a bucket, Section 3.1.1).  Mirrored by
    ``HashBuffers.remove``."""
    _unthread(st.hints, st.hlists[s], slot, POOL_OLDER, POOL_NEWER)
    bucket = st.hbuckets[s, st.hints[slot, POOL_KEY]]
    _unthread(st.hints, bucket, slot, POOL_B_OLDER, POOL_B_NEWER)
    st.hlists[s, 2] -= 1
    st.hfree[st.hnfree[0]] = slot
    st.hnfree[0] += 1


@njit(cache=True, nogil=True)
def pop_oldest(st, s):
    """Drop stream s's oldest tuple (Section 3.2.2).  Mirrored by the ``pop_oldest`` of
    :mod:`workbench.operators.wbuffers`' buffers."""
    if st.hashed:
        unlink(st, s, st.hlists[s, 0])
    else:
        st.fspan[s, 0] += 1


@njit(cache=True, nogil=True)
def drop_before(st, s, bound):
    """Expire stream s's tuples with ``ts < bound``; how many (BEW expiry, Section 3.1).
    Mirrored by the ``drop_before`` of :mod:`workbench.operators.wbuffers`' buffers."""
    if not st.hashed:
        head, end = st.fspan[s, 0], st.fspan[s, 1]
        n = np.searchsorted(st.fts[s, head:end], bound, side="left")
        st.fspan[s, 0] = head + n
        return n
    n = 0
    while st.hlists[s, 0] != NIL and st.hts[st.hlists[s, 0]] < bound:
        pop_oldest(st, s)
        n += 1
    return n


@njit(cache=True, nogil=True)
def sweep(st, s, bound):
    """FEW's trim at a restart of mode 1 (Section 3.2): stream s's tuples older than
    ``bound`` dropped one by one from the oldest, each head compared once; (dropped,
    comparisons).  Mirrored by ``FEWJoin._sweep``."""
    n = 0
    while size(st, s) > 0:
        if not oldest(st, s)[0] < bound:
            return n, n + 1
        pop_oldest(st, s)
        n += 1
    return n, n


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
