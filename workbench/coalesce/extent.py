"""Window extents with eager or lazy coalescing (coalescing paper, Sections 4 and 5).

Coalescing merges maximal runs of consecutive value-equivalent tuples of a group into one
temporal tuple (the window rule and what both share: :mod:`workbench.coalesce.window`).

- :class:`LazyExtent` (Algorithm 1, and its time-based variant) stores the raw tuples in
  timestamp order and coalesces during the scan.
- :class:`EagerExtent` (Algorithm 2, and its time-based variant) stores coalesced tuples with
  their timestamp vectors, merging on insert (``mergeTuples``), splitting on out-of-order gaps
  (``splitTuple``), and detaching the oldest timestamp on expiry (Appendix A).

Both extents expose the same coalesced view after every arrival (tested against
:func:`~workbench.coalesce.window.recoalesce`, which coalesces the window's raw tuples from
scratch).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Hashable

from workbench.coalesce.window import Coalesced, Key, WindowExtent, coalesce_sorted

__all__ = ["EagerExtent", "LazyExtent"]


class LazyExtent(WindowExtent):
    """Lazy coalescing: raw tuples in timestamp order; the scan coalesces (Algorithm 1).

    >>> from workbench.coalesce.window import Window
    >>> ext = LazyExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()]
    [(2.0, 3.0, 81), (3.0, 4.0, 79)]
    """

    def _start(self) -> None:
        super()._start()
        self._keys: list[Key] = []
        self._rows: list[tuple[Key, Hashable, object]] = []
        self._head = 0

    def oldest(self) -> Key | None:
        return self._keys[self._head] if self._head < len(self._keys) else None

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        pos = bisect_right(self._keys, key, lo=self._head)
        self._keys.insert(pos, key)
        self._rows.insert(pos, (key, group, value))
        self._counters.inserts += 1

    def _remove_oldest(self) -> None:
        self._head += 1
        self._counters.deletes += 1
        if self._head > 64 and 2 * self._head > len(self._keys):
            del self._keys[: self._head]
            del self._rows[: self._head]
            self._head = 0

    def view(self) -> list[Coalesced]:
        rows = self._rows[self._head :]
        self._counters.reads += len(rows)
        return coalesce_sorted(rows, self.equivalence)

    def raw(self) -> list[tuple[float, int, Hashable, object]]:
        """The window's raw tuples ``(ts, seq, group, value)`` in timestamp order."""
        return [(k[0], k[1], g, v) for k, g, v in self._rows[self._head :]]


class _Run:
    """A coalesced tuple: its raw keys (ts = keys[0], the timestamp vector = keys[1:]) and
    values (one per key, or just the first when the equivalence is transitive)."""

    __slots__ = ("keys", "values")

    def __init__(self, keys: list[Key], values: list[object]) -> None:
        self.keys = keys
        self.values = values


class EagerExtent(WindowExtent):
    """Eager coalescing with timestamp vectors: merge, split, detach (Algorithm 2).

    >>> from workbench.coalesce.window import Window
    >>> ext = EagerExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()], ext.stored
    ([(2.0, 3.0, 81), (3.0, 4.0, 79)], 2)
    """

    def _start(self) -> None:
        super()._start()
        self._groups: dict[Hashable, list[_Run]] = {}
        self._keep_values = not self.equivalence.transitive
        # every group's oldest key, as a heap with stale entries skipped on the way out
        self._heads: list[tuple[Key, Hashable]] = []

    @property
    def stored(self) -> int:
        """Coalesced tuples held (the eager extent's physical size)."""
        return sum(len(runs) for runs in self._groups.values())

    def oldest(self) -> Key | None:
        heads = self._heads
        while heads:
            key, group = heads[0]
            runs = self._groups.get(group)
            if runs and runs[0].keys[0] == key:
                return key
            heapq.heappop(heads)  # stale: that group's head has changed since
        return None

    def _value(self, run: _Run, index: int) -> object:
        return run.values[index] if self._keep_values else run.values[0]

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        runs = self._groups.get(group)
        if runs and key > runs[-1].keys[-1]:  # in order for its group: only the last run
            last = runs[-1]
            previous = last.values[-1] if self._keep_values else last.values[0]
            if self.equivalence.same(previous, value):
                self._merge(last, len(last.keys), key, value)
            else:
                self._counters.inserts += 1
                runs.append(_Run([key], [value]))
            return
        if not runs or key < runs[0].keys[0]:
            heapq.heappush(self._heads, (key, group))  # the key becomes the group's head
        if runs is None:
            runs = self._groups[group] = []
        self._insert_into(runs, key, value)

    def _insert_into(self, runs: list[_Run], key: Key, value: object) -> None:
        same = self.equivalence.same
        i = bisect_right(runs, key, key=lambda r: r.keys[0]) - 1
        if i >= 0:
            run = runs[i]
            p = bisect_left(run.keys, key)
            if p < len(run.keys):  # key falls inside run i: merge, or split around it
                before, after = self._value(run, p - 1), self._value(run, p)
                join_a, join_b = same(before, value), same(value, after)
                if join_a and join_b:
                    self._merge(run, p, key, value)
                    return
                self._counters.splits += 1
                keep = self._keep_values
                left = _Run(run.keys[:p], run.values[:p] if keep else [run.values[0]])
                right = _Run(run.keys[p:], run.values[p:] if keep else [run.values[0]])
                if join_a:
                    self._merge(left, p, key, value)
                    runs[i : i + 1] = [left, right]
                elif join_b:
                    self._merge(right, 0, key, value)
                    right.values = right.values if self._keep_values else [value]
                    runs[i : i + 1] = [left, right]
                else:
                    self._counters.inserts += 1
                    runs[i : i + 1] = [left, _Run([key], [value]), right]
                return
        # key falls between run i (or nothing) and run i + 1 (or nothing)
        prev = runs[i] if i >= 0 else None
        nxt = runs[i + 1] if i + 1 < len(runs) else None
        join_a = prev is not None and same(self._value(prev, len(prev.keys) - 1), value)
        join_b = nxt is not None and same(value, self._value(nxt, 0))
        if join_a and join_b:  # x bridges two runs into one
            self._merge(prev, len(prev.keys), key, value)
            prev.keys.extend(nxt.keys)
            if self._keep_values:
                prev.values.extend(nxt.values)
            del runs[i + 1]
        elif join_a:
            self._merge(prev, len(prev.keys), key, value)
        elif join_b:
            self._merge(nxt, 0, key, value)
            if not self._keep_values:
                nxt.values = [value]
        else:
            self._counters.inserts += 1
            runs.insert(i + 1, _Run([key], [value]))

    def _merge(self, run: _Run, position: int, key: Key, value: object) -> None:
        """mergeTuples: put the key into the run's timestamp vector at its place."""
        self._counters.merges += 1
        run.keys.insert(position, key)
        if self._keep_values:
            run.values.insert(position, value)

    def _remove_oldest(self) -> None:
        self.oldest()  # drop stale heads: the heap's top is now the oldest tuple
        _, group = heapq.heappop(self._heads)
        runs = self._groups[group]
        run = runs[0]
        if len(run.keys) > 1:  # detach the first timestamp of the vector
            self._counters.detaches += 1
            del run.keys[0]
            if self._keep_values:
                del run.values[0]
        else:
            self._counters.deletes += 1
            del runs[0]
        if runs:
            heapq.heappush(self._heads, (runs[0].keys[0], group))
        else:
            del self._groups[group]

    def view(self) -> list[Coalesced]:
        out: list[Coalesced] = []
        for group, runs in self._groups.items():
            for k, run in enumerate(runs):
                self._counters.reads += 1
                te = runs[k + 1].keys[0][0] if k + 1 < len(runs) else run.keys[-1][0]
                first = run.keys[0]
                value = self.equivalence.representative(run.values[0])
                out.append(Coalesced(first[0], first[1], te, group, value, len(run.keys)))
        out.sort()
        return out
