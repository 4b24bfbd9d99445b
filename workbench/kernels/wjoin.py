"""Compiled multi-way window joins (W-join paper, Sections 3-5): BEW- and FEW-join, the fast
mechanisms and the paper's, over the nested-loop or hash buffers of
:mod:`workbench.operators.wbuffers`, for the equality predicate (join values factorized to
int64 key codes).

A batch is processed tuple by tuple exactly as ``MultiWayJoin.push`` does: the clock moves to
each arrival; a late tuple does nothing else; an on-time tuple is numbered, joined and
buffered, then the fast BEW expires what no future arrival can join and the fast FEW closes
and opens the periods that fell due (the paper's BEW drops expired tuples as its search meets
them; the paper's FEW trims its buffers when mode 1 restarts).  The backtracking search of
``MultiWayJoin._search`` (:mod:`workbench.kernels.wjoin_search`) runs with an explicit stack
(one candidate cursor per depth), visiting streams and candidates in the same order, so the
m-tuples and every counter come out identical.

The kernel takes typed bundles: the batch (:class:`Batch`), both buffer kinds
(:class:`~workbench.kernels.wjoin_store.Store`, the unused one empty, so each kernel compiles
once), the parameters (:class:`Params`), the mutable state (:class:`State`: int64 slots
:data:`~workbench.kernels.wjoin_search.SEQ` .. :data:`~workbench.kernels.wjoin_search.PEAK`,
FEW's period start, the paper's newest-timestamp vector) and the search's scratch arrays
(:class:`Scratch`).  The paper's FEW holds tuples while its mode 1
waits for a tuple of every stream, in the state's held arrays (those of
:class:`~workbench.operators.wjoin.held.HeldTuples`, room reserved by the caller).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from workbench.kernels.wjoin_search import (
    BEW,
    BLIND,
    COMPARISONS,
    DROPPED,
    FEW,
    PEAK,
    SEQ,
    START_ID,
    START_KEY,
    START_SEQ,
    START_STREAM,
    _choose_only,
    _horizon,
    _search,
)
from workbench.kernels.wjoin_store import (
    NIL,
    POOL_TS,
    Store,
    drop_before,
    insert,
    newest_ts,
    oldest,
    pop_oldest,
    size,
    sweep,
)

__all__ = ["Batch", "Params", "Scratch", "State", "warm_up", "wjoin_batch"]


class Batch(NamedTuple):
    """A batch of valid tuples in arrival order (late ones flagged)."""

    stream: np.ndarray
    ids: np.ndarray
    keys: np.ndarray
    ts: np.ndarray
    late: np.ndarray
    arrival: np.ndarray


class Params(NamedTuple):
    """The join: FEW or BEW, the paper's mechanism or the fast one, GCA/LCA refinement, each
    stream's delay bound, the filter windows, the real windows, the shortest-path bounds and
    the paper's FEW period length (the largest filter window)."""

    few: bool
    paper: bool
    refine: bool
    delays: np.ndarray
    filt: np.ndarray
    windows: np.ndarray
    bound: np.ndarray
    period: float


class State(NamedTuple):
    """What a batch leaves for the next: the int64 slots, FEW's open period's start
    timestamp (one float), the paper's BEW's newest timestamp of each stream and the paper's
    FEW's held tuples (``HeldTuples.ints``, ``.times``, ``.count``)."""

    ints: np.ndarray
    start_ts: np.ndarray
    newest: np.ndarray
    held_ints: np.ndarray
    held_times: np.ndarray
    held_count: np.ndarray


class Scratch(NamedTuple):
    """The search's working arrays, m each: chosen streams, their tuples' ts and ids, the
    streams' order, each depth's cursor, stop, period, and each stream's expiry bound."""

    chosen: np.ndarray
    cts: np.ndarray
    cid: np.ndarray
    order: np.ndarray
    cur: np.ndarray
    stop: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    drop: np.ndarray

    @classmethod
    def empty(cls, m: int) -> Scratch:
        """Working arrays for m streams."""
        cid, order, cur, stop = (np.zeros(m, np.int64) for _ in range(4))
        lo, hi, drop = (np.zeros(m) for _ in range(3))
        return cls(np.zeros(m, np.bool_), np.zeros(m), cid, order, cur, stop, lo, hi, drop)


@njit(cache=True, nogil=True)
def _bew(st, p, sc, state, s, ts, seq, tid, key, now, out):
    """BEW-join of one tuple (Section 3.1): join at once, buffer it; the fast mechanism then
    expires what no future arrival can join, the paper's drops what its search meets."""
    m = p.filt.shape[0]
    newest = state.newest
    if p.paper:
        newest[s] = max(newest[s], ts)
        for r in range(m):
            sc.drop[r] = _horizon(p, r, newest, now, True)
    _choose_only(sc, s, ts, tid)
    out = _search(st, p, BEW, p.paper, sc, key, 0, 0.0, state.ints, out)
    insert(st, s, ts, seq, tid, key)
    if not p.paper:
        for r in range(m):
            state.ints[DROPPED] += drop_before(st, r, _horizon(p, r, newest, now, False))
    return out


@njit(cache=True, nogil=True)
def _span(st, m):
    """The oldest and newest timestamps buffered over all streams (+inf, -inf: none)."""
    lo, hi = np.inf, -np.inf
    for r in range(m):
        if size(st, r) > 0:
            lo = min(lo, oldest(st, r)[0])
            hi = max(hi, newest_ts(st, r))
    return lo, hi


@njit(cache=True, nogil=True)
def _outside(st, p, ints, ts):
    """Whether ``ts`` falls outside the paper's FEW period (the oldest buffered timestamp
    plus ``p.period``), one comparison; True without one when nothing is buffered."""
    a = _span(st, p.filt.shape[0])[0]
    if a == np.inf:
        return True
    ints[COMPARISONS] += 1
    return not a <= ts <= a + p.period


@njit(cache=True, nogil=True)
def _few_join(st, p, sc, state, s, ts, seq, tid, key, out):
    """The paper's FEW joins one tuple (Section 3.2): buffered, then joined blindly with the
    buffers when they hold one period (mode 2), else (delays) with BEW's period tests.
    Mirrored by ``FEWJoin._join_blind``."""
    insert(st, s, ts, seq, tid, key)
    lo, hi = _span(st, p.filt.shape[0])
    _choose_only(sc, s, ts, tid)
    mode = BLIND if hi - lo <= p.period else BEW
    return _search(st, p, mode, False, sc, key, 0, 0.0, state.ints, out)


@njit(cache=True, nogil=True)
def _hold(state, s, ts, seq, tid, key, now):
    """Hold one tuple unjoined while mode 1 waits (Section 3.2).  Mirrored by
    ``HeldTuples.hold``."""
    k = state.held_count.sum()
    h = state.held_ints
    h[k, 0], h[k, 1], h[k, 2], h[k, 3] = s, seq, tid, key
    state.held_times[k, 0], state.held_times[k, 1] = ts, now
    state.held_count[s] += 1


@njit(cache=True, nogil=True)
def _release(st, p, sc, state, out):
    """Mode 1 with a tuple of every stream held (or the streams' end): each held tuple in
    arrival order, tested against the period, restarting mode 1 when outside it (every
    stream trimmed of what no tuple arriving from its arrival on can join), then joined.
    Mirrored by ``FEWJoin._release``."""
    ints = state.ints
    for k in range(state.held_count.sum()):
        h, t = state.held_ints[k], state.held_times[k]
        s, seq, tid, key, ts, now = h[0], h[1], h[2], h[3], t[0], t[1]
        if _outside(st, p, ints, ts):  # mode 1 restarts: trim, sweeping from the oldest
            for r in range(p.filt.shape[0]):
                n, tests = sweep(st, r, _horizon(p, r, state.newest, now, False))
                ints[DROPPED] += n
                ints[COMPARISONS] += tests
        out = _few_join(st, p, sc, state, s, ts, seq, tid, key, out)
    state.held_count[:] = 0
    return out


@njit(cache=True, nogil=True)
def _few_paper(st, p, sc, state, s, ts, seq, tid, key, now, out):
    """The paper's FEW-join of one arriving tuple (Section 3.2): admitted into the open
    period and joined at once (mode 2), or held until a tuple of every stream is held
    (mode 1), then the held tuples released.  Mirrored by ``FEWJoin._join_paper``."""
    if state.held_count.sum() == 0 and not _outside(st, p, state.ints, ts):
        return _few_join(st, p, sc, state, s, ts, seq, tid, key, out)
    _hold(state, s, ts, seq, tid, key, now)
    if state.held_count.min() > 0:
        out = _release(st, p, sc, state, out)
    return out


@njit(cache=True, nogil=True)
def _open(st, p, sc, state, k, out):
    """FEW's mode 1 (fast): the oldest buffered tuple of stream k starts the next period,
    joined blindly with the period's tuples."""
    t0, seq, tid, key = oldest(st, k)
    ints = state.ints
    state.start_ts[0] = t0
    ints[START_STREAM], ints[START_SEQ], ints[START_ID], ints[START_KEY] = k, seq, tid, key
    _choose_only(sc, k, t0, tid)
    return _search(st, p, FEW, False, sc, key, k, t0, ints, out)


@njit(cache=True, nogil=True)
def _due(st, p, sc, state, now, out):
    """FEW-join's periods that fell due by ``now`` (Section 3.2): the open period closes once
    none of its tuples can still arrive (its starting tuple leaves), then mode 1 opens the
    oldest buffered tuple's period once nothing older can arrive and joins it blindly."""
    m = p.filt.shape[0]
    ints = state.ints
    while True:
        k = ints[START_STREAM]
        if k >= 0:
            reach = -np.inf
            for j in range(m):
                if j != k:
                    reach = max(reach, p.filt[k, j] + p.delays[j])
            if not now > state.start_ts[0] + reach:
                return out  # tuples of the period may still arrive
            pop_oldest(st, k)
            ints[DROPPED] += 1
            ints[START_STREAM] = -1
        k, t0 = -1, np.inf
        for r in range(m):
            if size(st, r) > 0 and oldest(st, r)[0] < t0:
                k, t0 = r, oldest(st, r)[0]
        if k < 0 or not now > t0 + p.delays.max():
            return out
        out = _open(st, p, sc, state, k, out)


@njit(cache=True, nogil=True)
def _few(st, p, sc, state, s, ts, seq, tid, key, now, out):
    """FEW-join of one tuple (fast, Section 3.2): mode 2 admission into the open period,
    then the periods that fell due."""
    ints = state.ints
    insert(st, s, ts, seq, tid, key)
    k = ints[START_STREAM]
    t0 = state.start_ts[0]
    if (  # mode 2: a new tuple inside the open period joins its starting tuple's period
        k >= 0
        and s != k
        and (ts > t0 or (ts == t0 and s > k))
        and ts <= t0 + p.filt[k, s]
        and key == ints[START_KEY]
    ):
        _choose_only(sc, k, t0, ints[START_ID])
        sc.chosen[s] = True
        sc.cts[s], sc.cid[s] = ts, tid
        out = _search(st, p, FEW, False, sc, key, k, t0, ints, out)
    return _due(st, p, sc, state, now, out)


@njit(cache=True, nogil=True)
def wjoin_batch(batch, st, p, state, sc, until, out):
    """BEW-join (Section 3.1) or FEW-join (Section 3.2), the fast mechanism or the paper's,
    of a batch of valid tuples, one by one as ``push``, then the fast FEW's periods due by
    ``until`` (-inf: none; ``advance`` and ``flush`` pass an empty batch) or, at ``flush``
    (+inf), the paper's FEW's held tuples; the peak of tuples buffered (held included) is
    taken after each tuple; returns the result ids (``N_OUT`` rows)."""
    m = p.filt.shape[0]
    ints = state.ints
    for i in range(batch.stream.shape[0]):
        if batch.late[i]:
            continue
        seq = ints[SEQ]
        ints[SEQ] = seq + 1
        s, ts, tid, key, now = (
            batch.stream[i], batch.ts[i], batch.ids[i], batch.keys[i], batch.arrival[i]
        )  # fmt: skip
        if not p.few:
            out = _bew(st, p, sc, state, s, ts, seq, tid, key, now, out)
        elif p.paper:
            out = _few_paper(st, p, sc, state, s, ts, seq, tid, key, now, out)
        else:
            out = _few(st, p, sc, state, s, ts, seq, tid, key, now, out)
        held = state.held_count.sum()
        for r in range(m):
            held += size(st, r)
        ints[PEAK] = max(ints[PEAK], held)
    if p.few and not p.paper and until > -np.inf:  # advance or flush: the periods due by then
        out = _due(st, p, sc, state, until, out)
    if p.few and p.paper and until == np.inf:  # flush: the streams ended, mode 1 waits no more
        out = _release(st, p, sc, state, out)
    return out


def warm_up() -> None:
    """Compile (or load from the on-disk cache) :func:`wjoin_batch` for the one signature
    the operators call it with, outside any timed region."""
    fifo = (np.zeros((2, 0)), *(np.zeros((2, 0), np.int64) for _ in range(3)))
    ints = np.full((2, 8), NIL, dtype=np.int64)  # an empty pool of two slots, as _NO_HASH's
    lists = np.full((2, 3), NIL, dtype=np.int64)
    lists[:, 2] = 0
    st = Store(
        False, *fifo, np.zeros((2, 2), np.int64),
        ints.view(np.float64)[:, POOL_TS], ints, lists, np.zeros((2, 0, 2), np.int64),
        np.arange(1, -1, -1, dtype=np.int64), np.array([2], dtype=np.int64),
    )  # fmt: skip
    i, f = np.zeros(0, np.int64), np.zeros(0)
    square = np.zeros((2, 2))
    params = Params(False, False, False, np.zeros(2), square, square, square, 0.0)
    state = State(
        np.zeros(11, np.int64), np.zeros(1), np.zeros(2),
        np.zeros((1, 4), np.int64), np.zeros((1, 2)), np.zeros(2, np.int64),
    )  # fmt: skip
    batch = Batch(i, i, i, f, np.zeros(0, np.bool_), f)
    wjoin_batch(batch, st, params, state, Scratch.empty(2), -np.inf, np.zeros((1, 2), np.int64))
