"""Multi-way window joins: BEW-join and FEW-join (W-join paper, Sections 3-5).

An m-tuple (one tuple per stream, 2 <= m <= 6) is a result when its timestamps meet every
window constraint (:class:`~workbench.operators.windows.WindowConstraints`) and the join
predicate holds: equality of the tuples' values (the key) or a user function of the m values.

The paper's text survives without its symbols; the choices made here where it is silent:

- **Timestamps and delay.** Tuples carry valid-time timestamps and arrive at most D_s after
  them (a later tuple is counted late and not joined); the clock is the arrival time.
- **BEW-join** (backward evaluation, Section 3.1): each new tuple is joined at once with the
  buffered tuples of the other streams, visited in stream order with recursive backtracking.
  The *period* starts as ``[ts - W, ts + W]`` around the new tuple and shrinks to the
  intersection of ``[t - W, t + W]`` over the tuples chosen so far, so every chosen tuple is
  within W of all others.  A result is emitted only when its newest-arriving tuple is
  processed: no duplicates.  After each tuple, buffered tuples that no future arrival can
  join (``ts < now - D_j - C_ij`` for every other stream j, C the shortest-path bounds) expire.
- **FEW-join** (forward evaluation, Section 3.2).  *Mode 1* takes the oldest buffered tuple
  (by (ts, stream)) as the starting tuple once nothing older can still arrive, opens its
  period ``[ts, ts + W]`` and joins the buffered tuples inside it *blindly*: within a period
  of length W every pair is within W, so only the predicate is tested.  *Mode 2* admits each
  new tuple that falls inside the open period and joins it, again blindly, with the starting
  tuple and the period's tuples.  When no tuple inside the period can still arrive, the
  starting tuple is dropped and mode 1 looks for the next one.  A result is found through its
  oldest tuple, hence once.  Results wait for their starting tuple's period: FEW trades
  response time for fewer window tests.
- **Non-uniform windows** (Section 5.1) filter and refine: GCA filters with the largest
  window of all pairs; LCA filters each pair with the smaller of the two streams' largest
  local windows; candidates are then refined against the real constraints.  Missing
  constraints of path and graph joins are bounded by shortest paths first (Section 5.2).
  The *modified BEW* for path/graph joins shrinks the period per stream with each pair's own
  bound (the window or the shortest path), so it needs no refinement step.
- **Implementations**: nested loop (ordered FIFO buffers scanned over the period, the key
  tested per tuple) and hash (one probe of the key's bucket per stream; equality only).
  Values are factorized to int64 key codes (:class:`~workbench.operators.wbuffers.KeyCodes`)
  and the buffers are NumPy arrays, shared by both engines.
- **Engines**: ``push`` is the readable per-tuple path below; ``push_batch`` with the
  compiled engine runs :func:`~workbench.kernels.wjoin.wjoin_batch` (the same steps, tuple
  by tuple, in numba) for the equality predicate.  A user predicate is a Python function of
  the values, so its batches take the per-tuple path in both engines.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import numpy as np

from workbench.kernels.wjoin import (
    COMPARISONS,
    DROPPED,
    N_OUT,
    SEQ,
    START_ID,
    START_KEY,
    START_SEQ,
    START_STREAM,
    wjoin_batch,
)
from workbench.operators.wbuffers import FifoBuffers, HashBuffers, KeyCodes, Tuple
from workbench.operators.windows import (
    FEWConfig,
    WindowConstraints,
    WJoinConfig,
    WJoinCounters,
    WTuple,
    WTuples,
)
from workbench.protocol import BadEventError, JoinOperator, check_time, from_config
from workbench.records import Counters, Emitted

__all__ = ["BEWJoin", "FEWJoin", "MultiWayJoin"]

_ON_TIME = np.zeros(1, dtype=bool)

_NO_FIFO, _NO_HASH = FifoBuffers(1, capacity=0), HashBuffers(1, capacity=0, keys=0)
"""Empty buffers of the kind not in use, passed to the kernel beside the real ones."""
_NO_TUPLES = WTuples(
    *(np.zeros(0, dtype) for dtype in (np.int64, np.int64, np.int64, float, float))
)
"""The empty batch the kernel takes when only time passes (FEW's ``advance`` and ``flush``)."""


class MultiWayJoin(JoinOperator[WTuple, WJoinConfig]):
    """What BEW and FEW share: validation, lateness, buffers, windows, predicate, counters.

    The constructor takes the fields of :class:`WJoinConfig`; ``max_delay`` may be steered
    down while running (a buffer kept for a longer delay still holds every partner).  One
    ``push`` runs ``_validate`` (a :class:`~workbench.operators.windows.WTuple`), the lateness
    test of :class:`~workbench.protocol.JoinOperator`, then ``_accept``, which calls the
    evaluation's ``_join(stream, item) -> results``.
    """

    config_type: ClassVar[type] = WJoinConfig
    counters_type: ClassVar[type[Counters]] = WJoinCounters
    batch_type: ClassVar[type] = WTuples
    steerable: ClassVar[frozenset[str]] = frozenset({"max_delay"})

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return {"constraints": WindowConstraints.uniform(3, 4.0), "max_delay": (2.0, 1.0, 3.0)}

    def _start(self) -> None:
        super()._start()
        self._filter, self._refine = self._filter_windows()
        # writable copies: the kernel then compiles once (numba types read-only arrays apart)
        self._bound = self.constraints.closure().copy()
        self._windows = self.constraints.windows.copy()
        self._seq = 0
        self._new_buffers()

    def _new_buffers(self) -> None:
        """Empty buffers and an empty key table."""
        make = HashBuffers if self._config.implementation == "hash" else FifoBuffers
        self.buffers: FifoBuffers | HashBuffers = make(self.m)
        self._keys = KeyCodes()

    @property
    def arity(self) -> int:  # type: ignore[override]
        """Tuple ids per result: m."""
        return self.m

    constraints = from_config("constraints", "The window constraints.")
    predicate = from_config("predicate", "The join predicate.")
    strategy = from_config("strategy", "The window strategy.")

    @property
    def _delays(self) -> tuple[float, ...]:
        return self._config.max_delay

    def _steered(self, changes: dict[str, Any]) -> WJoinConfig:
        new = super()._steered(changes)
        pairs = enumerate(zip(new.max_delay, self._delays, strict=True))
        raised = [s for s, (new_d, old_d) in pairs if new_d > old_d]
        if raised:
            s = raised[0]
            raise ValueError(
                f"max_delay of stream {s} = {new.max_delay[s]!r} exceeds the "
                f"{self._delays[s]!r} the buffers were kept for"
            )
        return new

    def _filter_windows(self) -> tuple[np.ndarray, bool]:
        """The per-pair windows the period uses, and whether candidates need refining."""
        closure = self.constraints.closure()
        m = self.constraints.m
        if self.strategy in ("uniform", "modified"):
            return closure.copy(), False
        if self.strategy == "gca":
            return np.full((m, m), closure.max()), True
        local = closure.max(axis=1)  # LCA: every stream's largest local window
        return np.minimum(local[:, None], local[None, :]), True

    @property
    def m(self) -> int:
        """Number of joined streams."""
        return self.constraints.m

    def _buffered(self) -> tuple[int, ...]:
        return tuple(self.buffers.size(s) for s in range(self.m))

    def push(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> Emitted:
        """Process one arriving tuple; emit the results it completes (or it, late or bad)."""
        return super().push(stream, event_id, value, ts, arrival)

    def _validate(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> WTuple:
        if not isinstance(stream, int | np.integer) or not 0 <= int(stream) < self.m:
            raise BadEventError(f"stream = {stream!r} is not a stream index 0..{self.m - 1}")
        ts, arrival = check_time("ts", ts), check_time("arrival", arrival)
        self._check_arrival("ts", ts, arrival)
        return WTuple(int(stream), int(event_id), value, ts, arrival)

    def _valid_rows(self, batch: WTuples) -> np.ndarray:
        s = batch.stream
        ok = (s >= 0) & (s < self.m) & np.isfinite(batch.ts) & np.isfinite(batch.arrival)
        return self._arrival_ok(batch.ts, batch.arrival, ok)

    def _push_valid(self, batch: WTuples) -> Emitted:
        """Valid tuples through the compiled kernel (:func:`~workbench.kernels.wjoin.
        wjoin_batch`), on the same buffers as ``push``, for the equality predicate (values
        factorized to key codes); a user predicate, a Python function of the values, runs the
        reference path (``push`` per tuple)."""
        if self.predicate != "equal":
            return super()._push_valid(batch)
        late = batch.arrival > batch.ts + np.array(self._delays)[batch.stream]
        return self._batch_done(batch, late, self._kernel(batch, late, -math.inf))

    def _kernel(self, batch: WTuples, late: np.ndarray, until: float) -> np.ndarray:
        """Run :func:`~workbench.kernels.wjoin.wjoin_batch` on the buffers: the batch's
        on-time tuples, then FEW's periods due by ``until``; the result ids (work counters,
        arrival numbers and FEW's open period updated)."""
        keys = self._keys.codes(batch.value)
        buffers = self.buffers
        hashed = isinstance(buffers, HashBuffers)
        if hashed:
            buffers.reserve(len(batch), len(self._keys))
            fifo, table = _NO_FIFO, buffers
        else:
            buffers.reserve(np.bincount(batch.stream[~late], minlength=self.m))
            fifo, table = buffers, _NO_HASH
        k, start = self._open_period()
        start_ts, seq, start_id, start_key = start or (0.0, 0, 0, 0)
        state = np.array([self._seq, 0, 0, 0, k, seq, start_id, start_key], dtype=np.int64)
        start_at = np.array([start_ts])
        stream, ids, ts, arrival = (
            np.require(col, requirements=("C", "W"))  # one compiled signature
            for col in (batch.stream, batch.id, batch.ts, batch.arrival)
        )
        out = wjoin_batch(
            isinstance(self, FEWJoin), hashed, self._refine,
            stream, ids, keys, ts, late, arrival, until,
            np.array(self._delays), self._filter, self._windows, self._bound,
            fifo.ts, fifo.seq, fifo.id, fifo.key, fifo.span,
            table.ints, table.lists, table.buckets, table.free, table.nfree,
            state, start_at, np.empty((16, self.m), dtype=np.int64),
        )  # fmt: skip
        self._seq = int(state[SEQ])
        k, seq, start_id, start_key = state[[START_STREAM, START_SEQ, START_ID, START_KEY]].tolist()
        self._reopen(k, (float(start_at[0]), seq, start_id, start_key))
        self._counters.comparisons += int(state[COMPARISONS])
        self._counters.dropped += int(state[DROPPED])
        return out[: state[N_OUT]]

    def _open_period(self) -> tuple[int, Tuple | None]:
        """FEW's open period: its starting tuple's stream (-1 when none) and the tuple."""
        return -1, None

    def _reopen(self, stream: int, item: Tuple) -> None:  # noqa: B027 - BEW has no period
        """Put the period the kernel left open in force (FEW)."""

    def _accept(self, record: WTuple) -> Emitted:
        s, event_id, value, ts, arrival = record
        if self._config.engine == "compiled" and self.predicate == "equal":
            # the compiled engine runs one admitted tuple through the batch kernel
            column = np.empty(1, dtype=object)
            column[0] = value
            one = WTuples.trusted(
                np.array([s]), np.array([event_id]), column, np.array([ts]), np.array([arrival])
            )
            return Emitted(self._kernel(one, _ON_TIME, -math.inf))
        item = (ts, self._seq, event_id, self._keys.code(value))
        self._seq += 1
        return Emitted.rows(self._join(s, item), self.m)

    def _tick(self) -> Emitted:
        return Emitted.rows(self._due(), self.m)

    def _drain(self) -> Emitted:
        return Emitted.rows(self._pending(), self.m)

    def _retune(self, new: WJoinConfig) -> Emitted:
        """A lower delay bound only lets periods close sooner: what fell due is emitted."""
        self._config = new
        return Emitted.rows(self._due(), self.m)

    def _clear(self) -> None:
        self._counters.dropped += sum(self._buffered())
        self._new_buffers()

    @abstractmethod
    def _join(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        """Buffer an on-time tuple; the results it completes."""

    def _due(self) -> list[tuple[int, ...]]:
        """Results that fell due as time passed (FEW's periods)."""
        return []

    def _pending(self) -> list[tuple[int, ...]]:
        """Results still pending at the end of the streams."""
        return []

    # -- the shared search -------------------------------------------------------------------
    def _search(
        self,
        fixed: dict[int, Tuple],
        order: list[int],
        ranges: Callable[[dict[int, Tuple], int], tuple[float, float]],
        out: list[tuple[int, ...]],
    ) -> None:
        """Extend ``fixed`` with one tuple per stream of ``order`` inside ``ranges``; emit."""
        equal = self.predicate == "equal"
        key = next(iter(fixed.values()))[3]
        if equal and any(t[3] != key for t in fixed.values()):
            return
        m = self.m

        def extend(depth: int) -> None:
            if depth == len(order):
                if not equal:
                    self._counters.comparisons += 1
                    if not self.predicate(tuple(self._keys.value(fixed[s][3]) for s in range(m))):
                        return
                if self._refine:
                    self._counters.comparisons += 1
                    ts = np.array([fixed[s][0] for s in range(m)])
                    if not self.constraints.satisfied(ts):
                        return
                out.append(tuple(fixed[s][2] for s in range(m)))
                return
            s = order[depth]
            lo, hi = ranges(fixed, s)
            if lo > hi:
                return
            # every tuple scanned in the period is one comparison (its key, or the window)
            scanned, found = self.buffers.scan(s, lo, hi, key if equal else None)
            self._counters.comparisons += scanned
            for cand in found:
                fixed[s] = cand
                extend(depth + 1)
            fixed.pop(s, None)

        extend(0)


class BEWJoin(MultiWayJoin):
    """BEW-join: every new tuple is joined at once by backward evaluation (Section 3.1).

    >>> wc = WindowConstraints.uniform(3, 10.0)
    >>> join = BEWJoin(constraints=wc, max_delay=[0, 0, 0])
    >>> join.push(0, 1, "car", ts=100.0, arrival=100.0).ids.tolist()
    []
    >>> join.push(1, 2, "car", ts=104.0, arrival=104.0).ids.tolist()
    []
    >>> join.push(2, 3, "car", ts=109.0, arrival=109.0).ids.tolist()   # all within 10
    [[1, 2, 3]]
    """

    def _join(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        f = self._filter
        order = [s for s in range(self.m) if s != stream]

        def period(fixed: dict[int, Tuple], s: int) -> tuple[float, float]:
            lo = max(t[0] - f[r, s] for r, t in fixed.items())
            hi = min(t[0] + f[r, s] for r, t in fixed.items())
            return lo, hi

        self._search({stream: item}, order, period, out)
        self.buffers.insert(stream, item)
        self._expire()
        return out

    def _expire(self) -> None:
        """Drop tuples no future arrival can join: ts < now - D_j - C_ij for every j."""
        horizon = np.array(self._delays)
        for i in range(self.m):
            others = [j for j in range(self.m) if j != i]
            bound = min(self._now - horizon[j] - self._bound[i, j] for j in others)
            self._counters.dropped += self.buffers.drop_before(i, bound)


class FEWJoin(MultiWayJoin):
    """FEW-join: periods opened at starting tuples, blind joins inside them (Section 3.2).

    >>> wc = WindowConstraints.uniform(2, 10.0)
    >>> join = FEWJoin(constraints=wc, max_delay=[0, 0])
    >>> join.push(0, 1, 7, ts=100.0, arrival=100.0).ids.tolist()   # mode 1: waits
    []
    >>> join.push(1, 2, 7, ts=105.0, arrival=105.0).ids.tolist()   # period of tuple 1 opens
    [[1, 2]]
    """

    config_type: ClassVar[type] = FEWConfig

    def _start(self) -> None:
        super()._start()
        self._start_tuple: Tuple | None = None
        self._start_stream = -1

    def _open_period(self) -> tuple[int, Tuple | None]:
        if self._start_tuple is None:
            return -1, None
        return self._start_stream, self._start_tuple

    def _reopen(self, stream: int, item: Tuple) -> None:
        self._start_stream, self._start_tuple = stream, (item if stream >= 0 else None)

    def _in_period(self, stream: int, item: Tuple) -> bool:
        """Whether ``item`` of ``stream`` can join the open period's starting tuple."""
        start, k = self._start_tuple, self._start_stream
        if stream == k or (item[0], stream) <= (start[0], k):
            return False
        return item[0] <= start[0] + self._filter[k, stream]

    def _join_start(self, fixed: dict[int, Tuple], out: list[tuple[int, ...]]) -> None:
        """Blind join of the starting tuple (and any fixed tuples) with the period's tuples."""
        start, k = self._start_tuple, self._start_stream
        f = self._filter
        order = [s for s in range(self.m) if s not in fixed]

        def window(_: dict[int, Tuple], s: int) -> tuple[float, float]:
            lo = start[0] if s > k else math.nextafter(start[0], math.inf)
            return lo, start[0] + f[k, s]

        self._search(fixed, order, window, out)

    def _join(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        self.buffers.insert(stream, item)
        if self._start_tuple is not None and self._in_period(stream, item):  # mode 2: admit
            self._join_start({self._start_stream: self._start_tuple, stream: item}, out)
        out.extend(self._due())
        return out

    def _due(self) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        while True:
            if self._start_tuple is not None:
                k, ts = self._start_stream, self._start_tuple[0]
                reach = max(self._filter[k, j] + self._delays[j] for j in range(self.m) if j != k)
                if not self._now > ts + reach:
                    return out  # tuples of the period may still arrive
                self.buffers.pop_oldest(k)  # the period closes: drop its starting tuple
                self._counters.dropped += 1
                self._start_tuple = None
            # mode 1: the oldest buffered tuple starts the next period once nothing older comes
            heads = [(self.buffers.oldest(s), s) for s in range(self.m) if self.buffers.size(s)]
            if not heads:
                return out
            oldest, k = min(heads, key=lambda h: (h[0][0], h[1], h[0][1]))
            if not self._now > oldest[0] + max(self._delays):
                return out
            self._start_tuple, self._start_stream = oldest, k
            self._join_start({k: oldest}, out)

    def _tick(self) -> Emitted:
        if self._compiled():
            return Emitted(self._kernel(_NO_TUPLES, np.zeros(0, dtype=bool), self._now))
        return super()._tick()

    def _drain(self) -> Emitted:
        if self._compiled():
            return Emitted(self._kernel(_NO_TUPLES, np.zeros(0, dtype=bool), math.inf))
        return super()._drain()

    def _compiled(self) -> bool:
        """Whether time passing runs the kernel: the compiled engine, equality predicate."""
        return self._config.engine == "compiled" and self.predicate == "equal"

    def _pending(self) -> list[tuple[int, ...]]:
        now, self._now = self._now, math.inf  # nothing can arrive: every period opens, closes
        try:
            return self._due()
        finally:
            self._now = now
