"""BEW-join: backward evaluation, each new tuple joined at once (W-join paper, Section 3.1)."""

from __future__ import annotations

import numpy as np

from workbench.operators.wbuffers import Tuple
from workbench.operators.wjoin.common import MultiWayJoin

__all__ = ["BEWJoin"]


class BEWJoin(MultiWayJoin):
    """BEW-join: every new tuple is joined at once by backward evaluation (Section 3.1).

    The period starts as ``[ts - W, ts + W]`` around the new tuple and shrinks to each chosen
    tuple's window.  ``mechanism="fast"`` binary-searches every stream's time-ordered buffer
    for the period; ``mechanism="paper"`` tests every buffered tuple (nested loop) or every
    tuple of the key's bucket (hash) against the period as Section 3.1 describes, each test a
    comparison.  Both drop expired tuples right after each new tuple (the paper drops them as
    it meets them building a later period, by the same bound), so their buffers and results
    agree and only the search differs.

    >>> from workbench.operators import WindowConstraints
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

        self._search({stream: item}, order, period, out, each=self.mechanism == "paper")
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
