"""Window extents with eager or lazy coalescing (coalescing paper, Sections 4 and 5).

Coalescing merges maximal runs of consecutive value-equivalent tuples of a group into one
temporal tuple (the window rule and what both share: :mod:`workbench.coalesce.window`; the scan:
:mod:`workbench.coalesce.scan`).

- :class:`LazyExtent` (Algorithm 1, and its time-based variant) stores the raw tuples in
  timestamp order and coalesces during the scan.
- :class:`EagerExtent` (Algorithm 2, and its time-based variant) stores coalesced tuples with
  their timestamp vectors, merging on insert (``mergeTuples``), splitting on out-of-order gaps
  (``splitTuple``), and detaching the oldest timestamp on expiry (Appendix A).

``push`` is the readable reference; ``push_batch`` runs the same steps compiled
(:mod:`workbench.kernels.coalesce`) on the same state arrays.

Both extents expose the same coalesced view after every arrival (tested against
:func:`~workbench.coalesce.scan.recoalesce`, which coalesces the window's raw tuples from
scratch).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from workbench.coalesce.scan import Key, coalesce_sorted
from workbench.coalesce.window import Readings, WindowExtent
from workbench.kernels.coalesce import KIND_CODES, eager_push, lazy_push
from workbench.records import Coalesced

__all__ = ["EagerExtent", "LazyExtent"]


class LazyExtent(WindowExtent):
    """Lazy coalescing: raw tuples in timestamp order; the scan coalesces (Algorithm 1).

    The kernel only orders timestamps, so any values and groups take the compiled path.

    >>> from workbench.coalesce.window import Window
    >>> ext = LazyExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()]
    [(2.0, 3.0, 81), (3.0, 4.0, 79)]
    """

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        self._store(key, group, value)
        self._counters.inserts += 1

    def _remove_oldest(self) -> None:
        self._drop_oldest()
        self._counters.deletes += 1

    def _push_compiled(self, batch: Readings) -> np.ndarray:
        return self._run(lazy_push, batch)

    def view(self) -> list[Coalesced]:
        rows = self.raw()
        self._counters.reads += len(rows)
        return coalesce_sorted((((ts, seq), g, v) for ts, seq, g, v in rows), self.equivalence)

    def raw(self) -> list[tuple[float, int, Hashable, object]]:
        """The window's raw tuples ``(ts, seq, group, value)`` in timestamp order."""
        live = self._slot[self._head : self._end]
        columns = self._ts[self._head : self._end], self._arrival[live], self._group[live]
        return list(zip(*(c.tolist() for c in columns), self._value[live].tolist(), strict=True))


INT_EXACT = 2**52
"""Integers up to this magnitude: their float64 copies subtract exactly (Python ints do)."""


class EagerExtent(WindowExtent):
    """Eager coalescing with timestamp vectors: merge, split, detach (Algorithm 2).

    A group's raw tuples are linked in key order (``_prev``, ``_next``); a coalesced tuple is
    a raw tuple that ``_starts`` one, and its timestamp vector the group's following raw
    tuples up to the next start (the group's first tuple always starts one).  Groups are
    numbered (``_code``, with ``_tail`` their last slot).

    The kernel judges equivalence on float64 copies of the values (``_number``), so it only
    takes values whose copy Python judges alike (``_exact_number``: finite floats and ints up
    to 2**52 whose quotient by the quantum is finite) under a tolerance and quantum that are
    floats or ints up to 2**53.  Once any other value (a tuple, a string, a Decimal...) has
    been accepted, ``push_batch`` keeps to the reference path, and so does a batch holding
    one.

    >>> from workbench.coalesce.window import Window
    >>> ext = EagerExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()], ext.stored
    ([(2.0, 3.0, 81), (3.0, 4.0, 79)], 2)
    """

    slot_columns: ClassVar[dict[str, type]] = {
        **WindowExtent.slot_columns,
        "_key_ts": np.float64,
        "_code": np.int64,
        "_number": np.float64,
        "_starts": np.bool_,
        "_prev": np.int64,
        "_next": np.int64,
    }

    def _start(self) -> None:
        super()._start()
        self._codes: dict[Hashable, int] = {}  # the groups that had tuples, numbered
        self._tail = np.full(16, -1, dtype=np.int64)  # by code: the group's last slot
        eq = self.equivalence
        self._compilable = all(
            isinstance(p, float) or (type(p) is int and p <= 2**53)
            for p in (eq.tolerance, eq.quantum)
        )
        self._int_exact = INT_EXACT
        if eq.kind == "relative" and type(eq.tolerance) is int and eq.tolerance > 1:
            self._int_exact = 2**53 // eq.tolerance  # Python multiplies ints exactly
        self._scale = float(eq.quantum) if eq.kind == "quantized" else 1.0  # value / quantum

    @property
    def stored(self) -> int:
        """Coalesced tuples held (the eager extent's physical size)."""
        return int(np.count_nonzero(self._starts[self._slot[self._head : self._end]]))

    def _exact_number(self, value: object) -> float:
        """``value`` as float64 when the kernel would judge it as Python judges the object;
        else NaN, and ``push_batch`` keeps to the reference path from now on."""
        kind = type(value)
        if kind in (float, np.float64) or (kind in (int, bool) and abs(value) <= self._int_exact):
            number = float(value)
            if math.isfinite(number / self._scale):  # Python's floor would raise on inf
                return number
        self._compilable = False
        return math.nan

    def _numbers(self, values: np.ndarray) -> np.ndarray | None:
        """A batch's values as float64 (``_exact_number`` for a column), None if it cannot."""
        kind = values.dtype.kind
        if kind in "iub":
            bound = self._int_exact
            if len(values) and (int(values.max()) > bound or int(values.min()) < -bound):
                return None
        elif kind != "f":
            return None
        numbers = values.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(numbers / self._scale).all()
        return numbers if finite else None

    def _group_code(self, group: Hashable) -> int:
        code = self._codes.get(group)
        if code is None:
            code = self._codes[group] = len(self._codes)
            if code == len(self._tail):
                self._tail = np.concatenate((self._tail, np.empty_like(self._tail)))
            self._tail[code] = -1
        return code

    def _group_codes(self, groups: np.ndarray) -> np.ndarray:
        """Each row's group code, as ``_group_code`` gives them."""
        kind, n = groups.dtype.kind, len(groups)
        if kind in "iu":
            lo, hi = int(groups.min()), int(groups.max())
            if hi - lo <= 4 * n + 1024:  # a dense range: a look-up table
                seen = np.zeros(hi - lo + 1, dtype=bool)
                offset = groups - lo
                seen[offset] = True
                present = np.flatnonzero(seen)
                table = np.empty(hi - lo + 1, dtype=np.int64)
                table[present] = [self._group_code(lo + k) for k in present.tolist()]
                return table[offset]
        if kind in "iubUS" or (kind == "f" and not np.isnan(groups).any()):
            unique, inverse = np.unique(groups, return_inverse=True)
            return np.array([self._group_code(g) for g in unique.tolist()], np.int64)[inverse]
        # objects, and NaN (a new group at every row, as one by one): row by row
        return np.fromiter(map(self._group_code, groups.tolist()), np.int64, n)

    def _forget_empty_groups(self) -> None:
        """Renumber the groups still in the window once the codes of groups that left
        outnumber the window (a stream of ever new groups keeps bounded state)."""
        if len(self._codes) <= 2 * (self._end - self._head) + 64:
            return
        kept = {g: c for g, c in self._codes.items() if self._tail[c] >= 0}
        old = np.fromiter(kept.values(), np.int64, len(kept))
        new_code = np.full(len(self._codes), -1, dtype=np.int64)
        new_code[old] = np.arange(len(kept))
        live = self._slot[self._head : self._end]
        self._code[live] = new_code[self._code[live]]
        self._tail[: len(kept)] = self._tail[old]
        self._codes = dict(zip(kept, range(len(kept)), strict=True))

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        self._forget_empty_groups()
        x = self._store(key, group, value)
        g = self._group_code(group)
        self._key_ts[x], self._code[x] = key[0], g
        self._number[x] = self._exact_number(value)
        # the group's neighbours in key order: a before x, b after it
        a, b = int(self._tail[g]), -1
        while a >= 0 and self._key_ts[a] > key[0]:
            a, b = int(self._prev[a]), a
        same = self.equivalence.same
        join_a = a >= 0 and same(self._value[a], value)
        join_b = b >= 0 and same(value, self._value[b])
        counters = self._counters
        if b >= 0 and not self._starts[b] and not (join_a and join_b):
            counters.splits += 1  # splitTuple: x cuts a coalesced tuple in two
        if join_a or join_b:
            counters.merges += 1  # mergeTuples (into a's vector, b's, or bridging both)
        else:
            counters.inserts += 1  # addTuple
        self._starts[x] = not join_a
        self._prev[x], self._next[x] = a, b
        if a >= 0:
            self._next[a] = x
        if b >= 0:
            self._prev[b] = x
            self._starts[b] = not join_b
        else:
            self._tail[g] = x

    def _remove_oldest(self) -> None:
        old = self._drop_oldest()
        after = int(self._next[old])
        if after >= 0 and not self._starts[after]:
            self._counters.detaches += 1  # the oldest timestamp leaves its vector
        else:
            self._counters.deletes += 1
        if after >= 0:
            self._prev[after], self._starts[after] = -1, True
        else:
            self._tail[self._code[old]] = -1

    def _push_compiled(self, batch: Readings) -> np.ndarray | None:
        numbers = self._numbers(batch.value) if self._compilable else None
        if numbers is None:
            return None
        self._forget_empty_groups()
        codes = self._group_codes(batch.group)
        eq = self.equivalence
        return self._run(
            eager_push,
            batch,
            numbers,
            codes,
            self._key_ts,
            self._code,
            self._number,
            self._starts,
            self._prev,
            self._next,
            self._tail,
            KIND_CODES[eq.kind],
            float(eq.tolerance),
            float(eq.quantum),
        )

    def view(self) -> list[Coalesced]:
        live = self._slot[self._head : self._end]
        by_group = live[np.argsort(self._code[live], kind="stable")]  # each group in key order
        # each coalesced tuple: from its start to the raw tuple before the next start
        bounds = np.append(np.flatnonzero(self._starts[by_group]), len(by_group))
        first, last = by_group[bounds[:-1]], by_group[bounds[1:] - 1]
        code = self._code[first]
        # valid until the group's next coalesced tuple starts, else until its last timestamp
        te = self._key_ts[last]
        followed = np.flatnonzero(code[1:] == code[:-1])
        te[followed] = self._key_ts[first[followed + 1]]
        count = np.diff(bounds)
        self._counters.reads += len(first)
        ts, seq, group, value = (
            c[first].tolist() for c in (self._key_ts, self._arrival, self._group, self._value)
        )
        value = map(self.equivalence.representative, value)
        rows = zip(ts, seq, te.tolist(), group, value, count.tolist(), strict=True)
        out = [Coalesced(*row) for row in rows]
        out.sort()
        return out
