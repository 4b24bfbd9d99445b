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


class FEWJoin(MultiWayJoin):
    """FEW-join: periods opened at starting tuples, blind joins inside them (Section 3.2).

    A result is found through its oldest tuple, the starting tuple of a period: mode 2 joins
    blindly the tuples inside the period (predicate tests only).  Mode 1 picks the next
    starting tuple, the oldest buffered one once nothing older can come.
    ``mechanism="fast"`` opens its period straight away, searching streams that may hold no
    partner.  ``mechanism="paper"`` first sweeps the time axis as Section 3.2's mode 1 does:
    each other stream's oldest tuple is tested against the period (one comparison each); the
    period opens when every stream has a tuple inside it, and the starting tuple is dropped
    unsearched when a stream has none and can get none in time (the paper's "older than the
    current period: dropped").  Same results, emitted no later (a stream without a tuple in
    the period makes both wait; the paper's drops the starting tuple sooner).

    >>> from workbench.operators import WindowConstraints
    >>> wc = WindowConstraints.uniform(2, 10.0)
    >>> join = FEWJoin(constraints=wc, max_delay=[0, 0])
    >>> join.push(0, 1, 7, ts=100.0, arrival=100.0).ids.tolist()   # mode 1: waits
    []
    >>> join.push(1, 2, 7, ts=105.0, arrival=105.0).ids.tolist()   # period of tuple 1 opens
    [[1, 2]]
    """

    config_type: ClassVar[type] = FEWConfig
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
            start = self._mode1()
            if start is None:
                return out
            self._start_tuple, self._start_stream = start
            self._join_start({start[1]: start[0]}, out)

    def _mode1(self) -> tuple[Tuple, int] | None:
        """Mode 1 (Section 3.2): the next starting tuple and its stream, None while it must
        wait.  The oldest buffered tuple starts the next period once nothing older can come;
        the paper's plane sweep first tests the other streams' oldest tuples (round robin
        from k + 1) against its period, and drops it when a stream has no tuple inside and
        can get none in time: no result holds it."""
        f = self._filter
        while True:
            heads = [(self.buffers.oldest(s), s) for s in range(self.m) if self.buffers.size(s)]
            if not heads:
                return None
            oldest, k = min(heads, key=lambda h: (h[0][0], h[1], h[0][1]))
            if not self._now > oldest[0] + max(self._delays):
                return None
            if self.mechanism == "fast":
                return oldest, k
            for j in [*range(k + 1, self.m), *range(k)]:
                self._counters.comparisons += 1
                head = self.buffers.oldest(j)
                if head is not None and head[0] <= oldest[0] + f[k, j]:
                    continue  # inside the period
                if not self._now > oldest[0] + f[k, j] + self._delays[j]:
                    return None  # a tuple of stream j inside the period may still arrive
                self.buffers.pop_oldest(k)  # older than anything stream j can offer: dropped
                self._counters.dropped += 1
                break
            else:
                return oldest, k

    def _tick(self) -> Emitted:
        if self._compiled():
            return Emitted(self._kernel(_NO_TUPLES, np.zeros(0, dtype=bool), self._now))
        return super()._tick()

    def _drain(self) -> Emitted:
        if self._compiled():
            return Emitted(self._kernel(_NO_TUPLES, np.zeros(0, dtype=bool), math.inf))
        return super()._drain()

    def _pending(self) -> list[tuple[int, ...]]:
        now, self._now = self._now, math.inf  # nothing can arrive: every period opens, closes
        try:
            return self._due()
        finally:
            self._now = now
