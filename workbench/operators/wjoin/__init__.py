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
  processed: no duplicates.  After each tuple (fast mechanism), tuples that no future arrival can
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
- **Mechanisms** (``mechanism``): ``fast`` as above; ``paper`` follows the text where the
  fast one departs from it.  The paper's BEW keeps each stream's newest timestamp (Section
  3.1.1's ordered vector), tests every buffered tuple (or every tuple of the key's bucket)
  against its period one by one, and drops a tuple only when its search meets it older than
  ``min_j (newest_j - D_j - C_ij)``: its buffers hold out-of-window tuples until visited.
  The paper's FEW shares one period (the oldest buffered timestamp plus the largest filter
  window) across arrivals: a tuple inside it is joined at once with the buffers, blindly; a
  tuple outside it is held, with every later one, until a tuple of every stream is held
  (mode 1 waits for every stream); then each held tuple outside the period restarts mode 1,
  which trims every stream of what no tuple arriving from then on can join, and is joined
  (with delays, when the buffers then span more than a period, with BEW's period tests).
  Same results, in both engines; the counters ``visited_inside``, ``visited_outside`` and
  ``peak_buffered`` show the difference in work and memory.
- **Implementations**: nested loop (ordered FIFO buffers scanned over the period, the key
  tested per tuple) and hash (one probe of the key's bucket per stream; equality only).
  Values are factorized to int64 key codes (:class:`~workbench.operators.wbuffers.KeyCodes`)
  and the buffers are NumPy arrays, shared by both engines.
- **Engines**: ``push`` is the readable per-tuple path (``common``, ``bew``, ``few``);
  ``push_batch`` with the compiled engine runs :func:`~workbench.kernels.wjoin.wjoin_batch`
  (the same steps, tuple by tuple, in numba, either mechanism) for the equality predicate.
  A user predicate is a Python function of the values, so its batches take the per-tuple
  path in both engines.
"""

from __future__ import annotations

from workbench.operators.wjoin.bew import BEWJoin
from workbench.operators.wjoin.common import MultiWayJoin
from workbench.operators.wjoin.few import FEWJoin

__all__ = ["BEWJoin", "FEWJoin", "MultiWayJoin"]
