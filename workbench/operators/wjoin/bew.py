"""BEW-join: backward evaluation, each new tuple joined at once (W-join paper, Section 3.1)."""

from __future__ import annotations

from workbench.operators.wbuffers import Tuple
from workbench.operators.windows import WJoinConfig
from workbench.operators.wjoin.common import MultiWayJoin

__all__ = ["BEWJoin"]


class BEWJoin(MultiWayJoin[WJoinConfig]):
    """BEW-join: every new tuple is joined at once by backward evaluation (Section 3.1).

    The period starts as ``[ts - W, ts + W]`` around the new tuple and shrinks to each chosen
    tuple's window.  Both mechanisms give the same results at the same pushes; their search
    and their buffers differ:

    - ``mechanism="fast"`` binary-searches every stream's time-ordered buffer for the period
      and, after each new tuple, drops every tuple that no future arrival can join:
      ``ts < min_j (now - D_j - C_ij)`` (D_j stream j's delay bound, C_ij the shortest-path
      bound of the pair, ``now`` the clock).  Its buffers hold one window.
    - ``mechanism="paper"`` keeps the newest timestamp of each stream (Section 3.1.1's
      "ordered vector of the timestamps of the newest tuples") and tests every buffered
      tuple (nested loop) or every tuple of the key's bucket (hash) against the period in
      turn, each test a comparison.  A tuple the search meets older than the period is
      compared with ``min_j (newest_j - D_j - C_ij)`` and dropped below it; nothing else
      expires.  The rule is safe: a tuple of stream j arriving now or later has
      ``ts >= arrival - D_j >= newest_j - D_j`` (the newest tuple arrived no later than the
      clock), and a result holding tuples of streams i and j has them within C_ij, so a
      tuple of stream i below the bound for every j joins neither a future arrival nor the
      tuple being joined (itself counted in newest).  The paper states it for D = 0 and one
      window W ("older than the newest tuples of the other streams by W").  A stream that
      lags (a slow stream's newest timestamp is old) or a tuple the search never meets keeps
      out-of-window tuples buffered and visited: the cost the paper's discussion of
      Figure 4 blames on BEW (``counters.visited_outside``, ``counters.peak_buffered``).

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
        """Mirrors ``kernels.wjoin._bew``."""
        out: list[tuple[int, ...]] = []
        f = self._filter
        order = [s for s in range(self.m) if s != stream]
        paper = self.mechanism == "paper"

        def period(fixed: dict[int, Tuple], s: int) -> tuple[float, float]:
            lo = max(t[0] - f[r, s] for r, t in fixed.items())
            hi = min(t[0] + f[r, s] for r, t in fixed.items())
            return lo, hi

        drop = None
        if paper:
            self._newest[stream] = max(self._newest[stream], item[0])
            drop = [self._horizon(r, paper=True) for r in range(self.m)]
        self._search({stream: item}, order, period, out, drop)
        self.buffers.insert(stream, item)
        if not paper:
            for r in range(self.m):
                self._counters.dropped += self.buffers.drop_before(r, self._horizon(r, False))
        return out
