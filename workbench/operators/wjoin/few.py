"""FEW-join: forward evaluation, periods opened at starting tuples (W-join paper, Section 3.2)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from workbench.operators.wbuffers import Tuple
from workbench.operators.windows import FEWConfig, WTuples
from workbench.operators.wjoin.common import MultiWayJoin
from workbench.records import Emitted

__all__ = ["FEWJoin"]

_NO_TUPLES = WTuples(
    *(np.zeros(0, dtype) for dtype in (np.int64, np.int64, np.int64, float, float))
)
"""The empty batch the kernel takes when only time passes (FEW's ``advance`` and ``flush``)."""


class FEWJoin(MultiWayJoin[FEWConfig]):
    """FEW-join: forward evaluation, blind joins inside a period (Section 3.2).

    Inside a period whose timestamps span at most the window, every pair of tuples is within
    the window, so tuples joined there need only the predicate (and the GCA/LCA refinement,
    Section 5.1).  The two mechanisms find the same results once each:

    - ``mechanism="fast"``: a result is found through its oldest tuple, the starting tuple
      of a period ``[ts, ts + W]``.  Mode 1 opens the oldest buffered tuple's period once
      nothing older can come and joins the buffered tuples inside it blindly; mode 2 joins
      each new tuple inside the open period, with the starting tuple, blindly; the period
      closes (its starting tuple leaves) once none of its tuples can still arrive.  Every
      buffered tuple is a starting tuple in turn; results wait for their period.
    - ``mechanism="paper"``: one period is shared across arrivals and the buffers hold it.
      The period starts at the oldest buffered timestamp and lasts the largest filter window
      L.  Mode 1 waits for a tuple of every stream before a period starts: until then, and
      from the first tuple that falls outside the open period, arriving tuples are *held*,
      unjoined, in arrival order.  Once a tuple of every stream is held, mode 1 takes them in
      turn: each is tested against the period (one comparison); one outside it restarts
      mode 1, which sweeps every stream from its oldest tuple and drops those no tuple
      arriving from the held tuple's arrival on can join (``ts < min_j (arrival - D_j -
      C_ij)``, one comparison per tuple met; BEW's fast expiry rule, taken at the held
      tuple's arrival so no result is lost); each is then buffered and joined with the
      buffers blindly (predicate only).  While no tuple is held, a new tuple inside the
      period is admitted (mode 2, one comparison), buffered and joined at once, blindly.
      Every result is found through its last-processed tuple, once; a result whose last
      tuple was held waits for the other streams, so FEW's response time falls as the
      streams get faster (the paper's Figure 7).  A stream that never delivers holds the
      others' tuples until ``flush``.  Where the paper is silent: with delays (D > 0) the
      sweep may keep tuples more than L apart (a delayed partner may still come); the tuple
      is then joined with BEW's period tests (sound, counted) rather than blindly.
      Non-uniform windows: the period lasts the largest filter window and the GCA/LCA
      refinement checks the real windows.  Ties: the period is closed at both ends.

    >>> from workbench.operators import WindowConstraints
    >>> wc = WindowConstraints.uniform(2, 10.0)
    >>> join = FEWJoin(constraints=wc, max_delay=[0, 0])
    >>> join.push(0, 1, 7, ts=100.0, arrival=100.0).ids.tolist()   # mode 1: waits
    []
    >>> join.push(1, 2, 7, ts=105.0, arrival=105.0).ids.tolist()   # period of tuple 1 opens
    [[1, 2]]
    >>> paper = FEWJoin(constraints=wc, max_delay=[0, 0], mechanism="paper")
    >>> paper.push(0, 1, 7, ts=100.0, arrival=100.0).ids.tolist()  # held: mode 1 waits
    []
    >>> paper.push(1, 2, 7, ts=105.0, arrival=105.0).ids.tolist()  # every stream: released
    [[1, 2]]
    >>> paper.push(0, 3, 7, ts=108.0, arrival=108.0).ids.tolist()  # mode 2: joined at once
    [[3, 2]]
    """

    forward: ClassVar[bool] = True

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
        if self.mechanism == "paper":
            return self._join_paper(stream, item)
        out: list[tuple[int, ...]] = []
        self.buffers.insert(stream, item)
        if self._start_tuple is not None and self._in_period(stream, item):  # mode 2: admit
            self._join_start({self._start_stream: self._start_tuple, stream: item}, out)
        out.extend(self._due())
        return out

    def _span(self) -> tuple[float, float]:
        """The oldest and newest timestamps buffered (inf, -inf: none).  Mirrors
        ``kernels.wjoin._span``."""
        held = [s for s in range(self.m) if self.buffers.size(s)]
        return (
            min((self.buffers.oldest(s)[0] for s in held), default=math.inf),
            max((self.buffers.newest_ts(s) for s in held), default=-math.inf),
        )

    def _sweep(self, s: int, bound: float) -> None:
        """Mode 1's trim of stream s: its tuples older than ``bound`` dropped from the
        oldest, each head compared once.  Mirrors ``kernels.wjoin_store.sweep``."""
        while self.buffers.size(s):
            self._counters.comparisons += 1
            if not self.buffers.oldest(s)[0] < bound:
                return
            self.buffers.pop_oldest(s)
            self._counters.dropped += 1

    def _outside(self, ts: float) -> bool:
        """Whether ``ts`` falls outside the paper's period (the oldest buffered timestamp
        plus L), one comparison; True without one when nothing is buffered (no period)."""
        a = self._span()[0]
        if a == math.inf:
            return True
        self._counters.comparisons += 1
        return not a <= ts <= a + self._period

    def _join_paper(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        """The paper's FEW (Section 3.2) for one arriving tuple: admitted into the open
        period and joined at once (mode 2), or held until a tuple of every stream is held
        (mode 1), then the held tuples released.  Mirrors ``kernels.wjoin._few_paper``."""
        if not len(self._held) and not self._outside(item[0]):
            return self._join_blind(stream, item)
        self._held.hold(stream, item, self._now)
        return self._release_held() if self._held.complete() else []

    def _release_held(self) -> list[tuple[int, ...]]:
        """Mode 1 with a tuple of every stream held: each held tuple in arrival order, tested
        against the period, restarting mode 1 when outside it (every stream trimmed of what
        no tuple arriving from its arrival on can join), then joined.  Mirrors
        ``kernels.wjoin._release``."""
        out: list[tuple[int, ...]] = []
        for stream, item, arrival in self._held.release():
            if self._outside(item[0]):
                for r in range(self.m):
                    self._sweep(r, self._horizon(r, paper=False, now=arrival))
            out += self._join_blind(stream, item)
        return out

    def _join_blind(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        """Buffer a tuple and join it with the buffers: blindly when they hold one period
        (mode 2), else (delays) with BEW's period tests.  Mirrors ``kernels.wjoin._few_join``."""
        self.buffers.insert(stream, item)
        lo, hi = self._span()
        f = self._filter
        order = [s for s in range(self.m) if s != stream]

        def period(fixed: dict[int, Tuple], s: int) -> tuple[float, float]:
            if hi - lo <= self._period:  # mode 2: the buffers hold one period, no window test
                return -math.inf, math.inf
            return (
                max(t[0] - f[r, s] for r, t in fixed.items()),
                min(t[0] + f[r, s] for r, t in fixed.items()),
            )

        out: list[tuple[int, ...]] = []
        self._search({stream: item}, order, period, out)
        return out

    def _due(self) -> list[tuple[int, ...]]:
        out: list[tuple[int, ...]] = []
        if self.mechanism == "paper":
            return out  # the paper's FEW waits for tuples, not for time
        while True:
            if self._start_tuple is not None:
                k, ts = self._start_stream, self._start_tuple[0]
                reach = max(self._filter[k, j] + self._delays[j] for j in range(self.m) if j != k)
                if not self._now > ts + reach:
                    return out  # tuples of the period may still arrive
                self.buffers.pop_oldest(k)  # the period closes: drop its starting tuple
                self._counters.dropped += 1
                self._start_tuple = None
            start = self._mode1()
            if start is None:
                return out
            self._start_tuple, self._start_stream = start
            self._join_start({start[1]: start[0]}, out)

    def _mode1(self) -> tuple[Tuple, int] | None:
        """Mode 1 (fast): the oldest buffered tuple and its stream start the next period once
        nothing older can come; None while it must wait."""
        heads = [(self.buffers.oldest(s), s) for s in range(self.m) if self.buffers.size(s)]
        if not heads:
            return None
        oldest, k = min(heads, key=lambda h: (h[0][0], h[1], h[0][1]))
        if not self._now > oldest[0] + max(self._delays):
            return None
        return oldest, k

    def _release(self, until: float) -> Emitted:
        if self._compiled():
            return Emitted(self._kernel(_NO_TUPLES, np.zeros(0, dtype=bool), until))
        return super()._release(until)

    def _pending(self) -> list[tuple[int, ...]]:
        if self.mechanism == "paper":
            return self._release_held()  # the streams ended: mode 1 waits no more
        now, self._now = self._now, math.inf  # nothing can arrive: every period opens, closes
        try:
            return self._due()
        finally:
            self._now = now
