"""Window extents with eager or lazy coalescing (coalescing paper, Sections 2.3, 4 and 5).

A raw tuple (timestamp ts, group, value) becomes a temporal tuple valid over [ts, te): te is
the timestamp of the group's next tuple, or ts itself while the tuple is the group's latest
(Section 2.3).  Coalescing merges maximal runs of consecutive value-equivalent tuples of a
group into one temporal tuple.

- :class:`LazyExtent` (Algorithm 1, and its time-based variant) stores the raw tuples in
  timestamp order and coalesces during the scan.
- :class:`EagerExtent` (Algorithm 2, and its time-based variant) stores coalesced tuples with
  their timestamp vectors, merging on insert (``mergeTuples``), splitting on out-of-order gaps
  (``splitTuple``), and detaching the oldest timestamp on expiry (Appendix A).

Windows (Section 2.1): a tuple-based window of size w holds the w accepted tuples with the
largest timestamps; a time-based window of size T holds the accepted tuples with
``ts >= t_max - T`` (t_max the largest timestamp accepted).  A tuple that would fall outside
the window on arrival is too late: discarded and counted.  Ties in ts are ordered by arrival.
Both extents expose the same coalesced view after every arrival (tested against
:func:`recoalesce`, which coalesces the window's raw tuples from scratch).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from workbench.coalesce.equivalence import Equivalence

__all__ = [
    "Coalesced",
    "EagerExtent",
    "ExtentCounters",
    "LazyExtent",
    "Window",
    "WindowExtent",
    "coalesce_sorted",
    "recoalesce",
]

Key = tuple[float, int]  # (ts, arrival sequence number)


@dataclass(frozen=True)
class Window:
    """A tuple-based (``size`` tuples) or time-based (``size`` time units) window.

    >>> Window("time", 3600.0).kind
    'time'
    """

    kind: Literal["tuples", "time"]
    size: float

    def __post_init__(self) -> None:
        if self.kind not in ("tuples", "time"):
            raise ValueError(f"kind = {self.kind!r} must be 'tuples' or 'time'")
        if self.kind == "tuples" and not (float(self.size).is_integer() and self.size >= 1):
            raise ValueError(f"size = {self.size!r} must be a whole number of tuples >= 1")
        if not self.size > 0:
            raise ValueError(f"size = {self.size!r} must be positive")


@dataclass(frozen=True, order=True)
class Coalesced:
    """One coalesced temporal tuple: a group's run of value-equivalent tuples over [ts, te)."""

    ts: float
    seq: int
    te: float = field(compare=False)
    group: Hashable = field(compare=False)
    value: object = field(compare=False)
    count: int = field(compare=False)


@dataclass
class ExtentCounters:
    """Work done by an extent (the atomic operations of the cost model, Table 4)."""

    arrived: int = 0
    too_late: int = 0
    out_of_order: int = 0
    inserts: int = 0
    deletes: int = 0
    merges: int = 0
    splits: int = 0
    detaches: int = 0
    reads: int = 0


def coalesce_sorted(
    rows: Iterable[tuple[Key, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """Coalesce raw tuples ``((ts, seq), group, value)`` given in key order (the scan of a lazily
    coalesced extent, Algorithm 1).

    A coalesced tuple reports ``equivalence.representative`` of its first raw value.

    >>> rows = [((1.0, 0), "r1", 81), ((2.0, 1), "r1", 81), ((3.0, 2), "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in coalesce_sorted(rows, Equivalence())]
    [(1.0, 3.0, 81, 2), (3.0, 3.0, 80, 1)]
    """
    # per group: [first key, last ts, first value, count, last value]
    open_runs: dict[Hashable, list] = {}
    out: list[Coalesced] = []
    rep = equivalence.representative
    for key, group, value in rows:
        run = open_runs.get(group)
        if run is not None and equivalence.same(run[4], value):
            run[1], run[3], run[4] = key[0], run[3] + 1, value
            continue
        if run is not None:
            out.append(Coalesced(run[0][0], run[0][1], key[0], group, rep(run[2]), run[3]))
        open_runs[group] = [key, key[0], value, 1, value]
    for group, run in open_runs.items():
        out.append(Coalesced(run[0][0], run[0][1], run[1], group, rep(run[2]), run[3]))
    out.sort()
    return out


def recoalesce(
    rows: Iterable[tuple[float, int, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """The oracle: coalesce raw tuples ``(ts, seq, group, value)`` from scratch.

    >>> rows = [(1, 0, "r1", 81), (2, 1, "r1", 81), (3, 2, "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in recoalesce(rows, Equivalence())]
    [(1, 3, 81, 2), (3, 3, 80, 1)]
    """
    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    return coalesce_sorted((((ts, seq), g, v) for ts, seq, g, v in ordered), equivalence)


class WindowExtent:
    """What both extents share: the window rule, lateness, arrival numbering, counters."""

    def __init__(self, window: Window, equivalence: Equivalence | None = None) -> None:
        self.window = window
        self.equivalence = equivalence or Equivalence()
        self.counters = ExtentCounters()
        self._seq = 0
        self._t_max = float("-inf")
        self._n = 0  # raw tuples in the window

    def __len__(self) -> int:
        """Raw tuples currently in the window."""
        return self._n

    def push(self, ts: float, value: object, group: Hashable = None) -> bool:
        """Add one arriving tuple; False when it was too late (discarded and counted)."""
        self.counters.arrived += 1
        key = (float(ts), self._seq)
        self._seq += 1
        if self.window.kind == "tuples":
            too_late = self._n >= self.window.size and key < self._oldest()
        else:
            too_late = key[0] < self._t_max - self.window.size
        if too_late:
            self.counters.too_late += 1
            return False
        if key[0] < self._t_max:
            self.counters.out_of_order += 1
        self._t_max = max(self._t_max, key[0])
        self._insert(key, group, value)
        self._n += 1
        self._expire()
        return True

    def remove_oldest(self) -> None:
        """Expire the window's oldest raw tuple: a delete, or a detach from its coalesced
        tuple's timestamp vector (Table 4; :func:`~workbench.coalesce.cost.measure_atomic_costs`
        times it).  The window must not be empty."""
        self._remove_oldest()
        self._n -= 1

    def _expire(self) -> None:
        if self.window.kind == "tuples":
            if self._n > self.window.size:  # one arrival pushes out at most one tuple
                self.remove_oldest()
        else:
            bound = self._t_max - self.window.size
            while (oldest := self._oldest()) is not None and oldest[0] < bound:
                self.remove_oldest()

    def view(self) -> list[Coalesced]:
        """The coalesced view of the current window, sorted by (ts, arrival)."""
        raise NotImplementedError

    def _oldest(self) -> Key | None:
        raise NotImplementedError

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        raise NotImplementedError

    def _remove_oldest(self) -> None:
        raise NotImplementedError


class LazyExtent(WindowExtent):
    """Lazy coalescing: raw tuples in timestamp order; the scan coalesces (Algorithm 1).

    >>> ext = LazyExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()]
    [(2.0, 3.0, 81), (3.0, 4.0, 79)]
    """

    def __init__(self, window: Window, equivalence: Equivalence | None = None) -> None:
        super().__init__(window, equivalence)
        self._keys: list[Key] = []
        self._rows: list[tuple[Key, Hashable, object]] = []
        self._head = 0

    def _oldest(self) -> Key | None:
        return self._keys[self._head] if self._head < len(self._keys) else None

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        pos = bisect_right(self._keys, key, lo=self._head)
        self._keys.insert(pos, key)
        self._rows.insert(pos, (key, group, value))
        self.counters.inserts += 1

    def _remove_oldest(self) -> None:
        self._head += 1
        self.counters.deletes += 1
        if self._head > 64 and 2 * self._head > len(self._keys):
            del self._keys[: self._head]
            del self._rows[: self._head]
            self._head = 0

    def view(self) -> list[Coalesced]:
        rows = self._rows[self._head :]
        self.counters.reads += len(rows)
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

    >>> ext = EagerExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()], ext.stored
    ([(2.0, 3.0, 81), (3.0, 4.0, 79)], 2)
    """

    def __init__(self, window: Window, equivalence: Equivalence | None = None) -> None:
        super().__init__(window, equivalence)
        self._groups: dict[Hashable, list[_Run]] = {}
        self._keep_values = not self.equivalence.transitive
        # every group's oldest key, as a heap with stale entries skipped on the way out
        self._heads: list[tuple[Key, Hashable]] = []

    @property
    def stored(self) -> int:
        """Coalesced tuples held (the eager extent's physical size)."""
        return sum(len(runs) for runs in self._groups.values())

    def _oldest(self) -> Key | None:
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
                self.counters.inserts += 1
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
                self.counters.splits += 1
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
                    self.counters.inserts += 1
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
            self.counters.inserts += 1
            runs.insert(i + 1, _Run([key], [value]))

    def _merge(self, run: _Run, position: int, key: Key, value: object) -> None:
        """mergeTuples: put the key into the run's timestamp vector at its place."""
        self.counters.merges += 1
        run.keys.insert(position, key)
        if self._keep_values:
            run.values.insert(position, value)

    def _remove_oldest(self) -> None:
        self._oldest()  # drop stale heads: the heap's top is now the oldest tuple
        _, group = heapq.heappop(self._heads)
        runs = self._groups[group]
        run = runs[0]
        if len(run.keys) > 1:  # detach the first timestamp of the vector
            self.counters.detaches += 1
            del run.keys[0]
            if self._keep_values:
                del run.values[0]
        else:
            self.counters.deletes += 1
            del runs[0]
        if runs:
            heapq.heappush(self._heads, (runs[0].keys[0], group))
        else:
            del self._groups[group]

    def view(self) -> list[Coalesced]:
        out: list[Coalesced] = []
        for group, runs in self._groups.items():
            for k, run in enumerate(runs):
                self.counters.reads += 1
                te = runs[k + 1].keys[0][0] if k + 1 < len(runs) else run.keys[-1][0]
                first = run.keys[0]
                value = self.equivalence.representative(run.values[0])
                out.append(Coalesced(first[0], first[1], te, group, value, len(run.keys)))
        out.sort()
        return out
