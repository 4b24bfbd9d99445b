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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from workbench.operators.base import BadEventError, BadPolicy
from workbench.operators.wbuffers import FifoBuffer, HashBuffer, Tuple
from workbench.operators.windows import WindowConstraints

__all__ = [
    "BEWJoin",
    "FEWJoin",
    "MultiMatches",
    "MultiWayJoin",
    "Strategy",
    "WCounters",
    "brute_force_wjoin",
]

Strategy = Literal["uniform", "gca", "lca", "modified"]
"""How windows are evaluated: one uniform window, GCA or LCA filter-and-refine, or modified
BEW (each pair's own bound)."""
Implementation = Literal["nested", "hash"]
Predicate = Literal["equal"] | Callable[[tuple[Hashable, ...]], bool]


@dataclass(frozen=True)
class MultiMatches:
    """Results of one push: row k of ``ids`` holds the tuple ids of result k, by stream.

    >>> MultiMatches(np.array([[1, 4, 7]])).ids.shape
    (1, 3)
    """

    ids: np.ndarray
    status: Literal["ok", "late", "bad"] = "ok"

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @classmethod
    def build(cls, rows: list[tuple[int, ...]], m: int, status: str = "ok") -> MultiMatches:
        """From a list of id tuples."""
        ids = np.array(rows, dtype=np.int64).reshape(len(rows), m)
        return cls(ids, status)


@dataclass
class WCounters:
    """What a multi-way join has done (buffer sizes at the time of reading)."""

    tuples_in: int = 0
    results_out: int = 0
    comparisons: int = 0
    dropped: int = 0
    late: int = 0
    bad: int = 0
    buffered: tuple[int, ...] = ()


@dataclass(kw_only=True)
class MultiWayJoin:
    """What BEW and FEW share: validation, lateness, buffers, windows, predicate, counters."""

    constraints: WindowConstraints
    max_delay: Sequence[float]
    predicate: Predicate = "equal"
    strategy: Strategy = "uniform"
    implementation: Implementation = "nested"
    on_bad: BadPolicy = "raise"
    _counters: WCounters = field(default_factory=WCounters, init=False, repr=False)

    def __post_init__(self) -> None:
        m = self.constraints.m
        delays = [float(x) for x in self.max_delay]
        if len(delays) != m or not all(math.isfinite(x) and x >= 0 for x in delays):
            raise ValueError(f"max_delay = {self.max_delay!r} needs {m} finite delays >= 0")
        self._delays = delays
        if self.strategy not in ("uniform", "gca", "lca", "modified"):
            raise ValueError(f"strategy = {self.strategy!r} is not uniform, gca, lca, modified")
        if self.implementation not in ("nested", "hash"):
            raise ValueError(f"implementation = {self.implementation!r} is not nested or hash")
        if self.implementation == "hash" and self.predicate != "equal":
            raise ValueError("implementation = 'hash' needs the equality predicate")
        if self.predicate != "equal" and not callable(self.predicate):
            raise ValueError(f"predicate = {self.predicate!r} is not 'equal' nor callable")
        if self.on_bad not in ("raise", "count"):
            raise ValueError(f"on_bad = {self.on_bad!r} must be 'raise' or 'count'")
        form = self.constraints.form
        if self.strategy == "uniform" and form != "uniform clique":
            raise ValueError(
                f"strategy = 'uniform' needs a uniform clique, the constraints form a {form}"
            )
        self._filter, self._refine = self._filter_windows()
        self._bound = self.constraints.closure()
        self._now = -math.inf
        self._seq = 0
        make = HashBuffer if self.implementation == "hash" else FifoBuffer
        self.buffers = [make() for _ in range(m)]

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

    @property
    def counters(self) -> WCounters:
        """A snapshot of the counters with the current buffer sizes."""
        return replace(self._counters, buffered=tuple(len(b) for b in self.buffers))

    @property
    def now(self) -> float:
        """The clock: the latest arrival time seen."""
        return self._now

    def push(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> MultiMatches:
        """Process one arriving tuple; return the results it completes."""
        self._counters.tuples_in += 1
        try:
            s = self._validate(stream, ts, arrival)
        except BadEventError:
            if self.on_bad == "raise":
                raise
            self._counters.bad += 1
            return MultiMatches.build([], self.m, "bad")
        self._now = float(arrival)
        if arrival > ts + self._delays[s]:
            self._counters.late += 1
            return MultiMatches.build([], self.m, "late")
        item = (float(ts), self._seq, int(event_id), value)
        self._seq += 1
        rows = self._accept(s, item)
        self._counters.results_out += len(rows)
        return MultiMatches.build(rows, self.m)

    def advance(self, now: float) -> MultiMatches:
        """Move the clock without a tuple; return results that became due."""
        if not math.isfinite(now) or now < self._now:
            raise BadEventError(f"now = {now!r} is not a finite time at or after {self._now!r}")
        self._now = float(now)
        rows = self._tick()
        self._counters.results_out += len(rows)
        return MultiMatches.build(rows, self.m)

    def flush(self) -> MultiMatches:
        """End of streams: finish pending work and empty the buffers."""
        rows = self._drain()
        self._counters.results_out += len(rows)
        for buf in self.buffers:
            while buf.oldest() is not None:
                buf.pop_oldest()
                self._counters.dropped += 1
        return MultiMatches.build(rows, self.m)

    def _validate(self, stream: int, ts: float, arrival: float) -> int:
        if not isinstance(stream, int | np.integer) or not 0 <= int(stream) < self.m:
            raise BadEventError(f"stream = {stream!r} is not a stream index 0..{self.m - 1}")
        for name, value in (("ts", ts), ("arrival", arrival)):
            if not isinstance(value, int | float | np.number) or not math.isfinite(value):
                raise BadEventError(f"{name} = {value!r} is not a finite time")
        if arrival < ts:
            raise BadEventError(f"arrival = {arrival!r} precedes ts = {ts!r}")
        if arrival < self._now:
            raise BadEventError(
                f"arrival = {arrival!r} is earlier than the clock {self._now!r}: "
                "tuples must be pushed in arrival order"
            )
        return int(stream)

    def _accept(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        raise NotImplementedError

    def _tick(self) -> list[tuple[int, ...]]:
        return []

    def _drain(self) -> list[tuple[int, ...]]:
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


@dataclass(kw_only=True)
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

    def _accept(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
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


@dataclass(kw_only=True)
class FEWJoin(MultiWayJoin):
    """FEW-join: periods opened at starting tuples, blind joins inside them (Section 3.2).

    >>> wc = WindowConstraints.uniform(2, 10.0)
    >>> join = FEWJoin(constraints=wc, max_delay=[0, 0])
    >>> join.push(0, 1, 7, ts=100.0, arrival=100.0).ids.tolist()   # mode 1: waits
    []
    >>> join.push(1, 2, 7, ts=105.0, arrival=105.0).ids.tolist()   # period of tuple 1 opens
    [[1, 2]]
    """

    _start: Tuple | None = field(default=None, init=False, repr=False)
    _start_stream: int = field(default=-1, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.strategy == "modified":
            raise ValueError("strategy = 'modified' is the modified BEW-join; FEW uses gca or lca")
        self._d_max = max(self._delays)

    def _in_period(self, stream: int, item: Tuple) -> bool:
        """Whether ``item`` of ``stream`` can join the open period's starting tuple."""
        start, k = self._start, self._start_stream
        if stream == k or (item[0], stream) <= (start[0], k):
            return False
        return item[0] <= start[0] + self._filter[k, stream]

    def _join_start(self, fixed: dict[int, Tuple], out: list[tuple[int, ...]]) -> None:
        """Blind join of the starting tuple (and any fixed tuples) with the period's tuples."""
        start, k = self._start, self._start_stream
        f = self._filter
        order = [s for s in range(self.m) if s not in fixed]

        def window(_: dict[int, Tuple], s: int) -> tuple[float, float]:
            lo = start[0] if s > k else math.nextafter(start[0], math.inf)
            return lo, start[0] + f[k, s]

        self._search(fixed, order, window, out)

    def _accept(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        self.buffers[stream].insert(item)
        if self._start is not None and self._in_period(stream, item):  # mode 2: admit
            self._join_start({self._start_stream: self._start, stream: item}, out)
        out.extend(self._tick())
        return out

    def _tick(self) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        while True:
            if self._start is not None:
                k, ts = self._start_stream, self._start[0]
                reach = max(self._filter[k, j] + self._delays[j] for j in range(self.m) if j != k)
                if not self._now > ts + reach:
                    return out  # tuples of the period may still arrive
                self.buffers[k].pop_oldest()  # the period closes: drop its starting tuple
                self._counters.dropped += 1
                self._start = None
            # mode 1: the oldest buffered tuple starts the next period once nothing older comes
            heads = [(b.oldest(), s) for s, b in enumerate(self.buffers) if b.oldest()]
            if not heads:
                return out
            oldest, k = min(heads, key=lambda h: (h[0][0], h[1], h[0][1]))
            if not self._now > oldest[0] + self._d_max:
                return out
            self._start, self._start_stream = oldest, k
            self._join_start({k: oldest}, out)

    def _drain(self) -> list[tuple[int, ...]]:
        now, self._now = self._now, math.inf  # nothing can arrive: every period opens, closes
        try:
            return self._tick()
        finally:
            self._now = now


def brute_force_wjoin(
    values: Sequence[Sequence[Hashable]],
    timestamps: Sequence[Sequence[float]],
    ids: Sequence[Sequence[int]],
    constraints: WindowConstraints,
    predicate: Predicate = "equal",
) -> set[tuple[int, ...]]:
    """Every m-tuple (one tuple per stream) meeting all window constraints and the predicate.

    Checks the original constraints pair by pair (no periods, no shortest paths).

    >>> brute_force_wjoin([[1, 2], [1]], [[0.0, 1.0], [4.0]], [[10, 11], [20]],
    ...                   WindowConstraints.uniform(2, 5.0))
    {(10, 20)}
    """
    m = constraints.m
    w = constraints.windows
    out: set[tuple[int, ...]] = set()
    chosen: list[int] = []

    def extend(s: int) -> None:
        if s == m:
            vals = tuple(values[r][chosen[r]] for r in range(m))
            ok = len(set(vals)) == 1 if predicate == "equal" else predicate(vals)
            if ok:
                out.add(tuple(ids[r][chosen[r]] for r in range(m)))
            return
        for k in range(len(values[s])):
            t = timestamps[s][k]
            if all(abs(t - timestamps[r][chosen[r]]) <= w[r, s] for r in range(s)):
                chosen.append(k)
                extend(s + 1)
                chosen.pop()

    extend(0)
    return out
