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
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import numpy as np

from workbench.operators.wbuffers import FifoBuffer, HashBuffer, Tuple
from workbench.operators.windows import (
    FEWConfig,
    WindowConstraints,
    WJoinConfig,
    WJoinCounters,
    WTuples,
)
from workbench.protocol import ArrivalOrdered, BadEventError, check_time, from_config
from workbench.records import Counters, Emitted

__all__ = ["BEWJoin", "FEWJoin", "MultiWayJoin"]


class MultiWayJoin(ArrivalOrdered):
    """What BEW and FEW share: validation, lateness, buffers, windows, predicate, counters.

    The constructor takes the fields of :class:`WJoinConfig`; ``max_delay`` may be steered
    down while running (a buffer kept for a longer delay still holds every partner).
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
        self._bound = self.constraints.closure()
        self._seq = 0
        make = HashBuffer if self._config.implementation == "hash" else FifoBuffer
        self.buffers = [make() for _ in range(self.m)]

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
            return closure, False
        if self.strategy == "gca":
            return np.full((m, m), closure.max()), True
        local = closure.max(axis=1)  # LCA: every stream's largest local window
        return np.minimum(local[:, None], local[None, :]), True

    @property
    def m(self) -> int:
        """Number of joined streams."""
        return self.constraints.m

    def _buffered(self) -> tuple[int, ...]:
        return tuple(len(b) for b in self.buffers)

    def push(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> Emitted:
        """Process one arriving tuple; emit the results it completes (or it, late or bad)."""
        return super().push(stream, event_id, value, ts, arrival)

    def _validate(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> tuple[int, int, Hashable, float, float]:
        if not isinstance(stream, int | np.integer) or not 0 <= int(stream) < self.m:
            raise BadEventError(f"stream = {stream!r} is not a stream index 0..{self.m - 1}")
        ts, arrival = check_time("ts", ts), check_time("arrival", arrival)
        self._check_arrival("ts", ts, arrival)
        return int(stream), int(event_id), value, ts, arrival

    def _accept(self, parsed: tuple[int, int, Hashable, float, float]) -> Emitted:
        s, event_id, value, ts, _ = parsed
        item = (ts, self._seq, event_id, value)
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
        for buf in self.buffers:
            while buf.oldest() is not None:
                buf.pop_oldest()
                self._counters.dropped += 1

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
                values = tuple(fixed[s][3] for s in range(m))
                if not equal:
                    self._counters.comparisons += 1
                    if not self.predicate(values):
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
            for cand in self.buffers[s].candidates(lo, hi, key if equal else None):
                self._counters.comparisons += 1
                if equal and cand[3] != key:
                    continue
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
        self.buffers[stream].insert(item)
        self._expire()
        return out

    def _expire(self) -> None:
        """Drop tuples no future arrival can join: ts < now - D_j - C_ij for every j."""
        horizon = np.array(self._delays)
        for i, buf in enumerate(self.buffers):
            others = [j for j in range(self.m) if j != i]
            bound = min(self._now - horizon[j] - self._bound[i, j] for j in others)
            self._counters.dropped += buf.drop_before(bound)


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
        self.buffers[stream].insert(item)
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
                self.buffers[k].pop_oldest()  # the period closes: drop its starting tuple
                self._counters.dropped += 1
                self._start_tuple = None
            # mode 1: the oldest buffered tuple starts the next period once nothing older comes
            heads = [(b.oldest(), s) for s, b in enumerate(self.buffers) if b.oldest()]
            if not heads:
                return out
            oldest, k = min(heads, key=lambda h: (h[0][0], h[1], h[0][1]))
            if not self._now > oldest[0] + max(self._delays):
                return out
            self._start_tuple, self._start_stream = oldest, k
            self._join_start({k: oldest}, out)

    def _pending(self) -> list[tuple[int, ...]]:
        now, self._now = self._now, math.inf  # nothing can arrive: every period opens, closes
        try:
            return self._due()
        finally:
            self._now = now
