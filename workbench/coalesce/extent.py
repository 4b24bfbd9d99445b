"""Window extents with eager or lazy coalescing (coalescing paper, Sections 4 and 5).

Coalescing merges maximal runs of consecutive value-equivalent tuples of a group into one
temporal tuple (the window rule and what both share: :mod:`workbench.coalesce.window`; the scan:
:mod:`workbench.coalesce.scan`).

- :class:`LazyExtent` (Algorithm 1, and its time-based variant) stores the raw tuples in
  timestamp order and coalesces during the scan.
- :class:`EagerExtent` (Algorithm 2, and its time-based variant) stores coalesced tuples, each
  its value once with the vector of its raw tuples' timestamps, merging on insert
  (``mergeTuples``), splitting on out-of-order gaps (``splitTuple``), and detaching the oldest
  timestamp on expiry (Appendix A).

``push`` is the readable reference; ``push_batch`` runs the same steps compiled
(:mod:`workbench.kernels.coalesce`) on the same state arrays.

Both extents expose the same coalesced view after every arrival (tested against
:func:`~workbench.coalesce.scan.recoalesce`, which coalesces the window's raw tuples from
scratch), and say what they allocate (``allocated_bytes``): the eager-vs-lazy memory
trade-off of Section 3.2 and Section 6.1.1 (Eqs. 1-2) measured rather than modelled.  Their
arrays grow and shrink with what the window holds (:mod:`workbench.kernels.coalesce_room`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import ClassVar

import numpy as np

from workbench.coalesce.array_extent import ArrayExtent
from workbench.coalesce.order import SlotStore
from workbench.coalesce.scan import Key, coalesce_sorted
from workbench.coalesce.window import Readings, WindowExtent
from workbench.kernels.coalesce import KIND_CODES, NEED, eager_push, lazy_push
from workbench.kernels.coalesce_room import (
    MIN_ROOM,
    compacts,
    grown,
    kept_room,
    moved_room,
    pool_room,
    row_need,
    shrinks,
)
from workbench.records import Coalesced

__all__ = ["EagerExtent", "LazyExtent"]


class LazyExtent(SlotStore, WindowExtent):
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
        window, counts, first = self._config.window, np.zeros(6, dtype=np.int64), self._seq
        placed, self._head, self._end, self._n_free, self._seq, self._t_max = lazy_push(
            np.ascontiguousarray(batch.ts),
            self._ts,
            self._slot,
            self._arrival,
            self._free,
            self._head,
            self._end,
            self._n_free,
            self._seq,
            self._t_max,
            window.kind == "tuples",
            float(window.size),
            counts,
        )
        self._add_counts(counts)
        # the values and groups of the batch's tuples still in the window: row k arrived as
        # number first + k, and a slot freed since holds -1 or a later row
        rows = np.flatnonzero(placed >= 0)
        slots = placed[rows]
        kept = self._arrival[slots] == first + rows
        slots, rows = slots[kept], rows[kept]
        self._value[slots], self._group[slots] = batch.value[rows], batch.group[rows]
        return placed < 0

    def view(self) -> list[Coalesced]:
        rows = self.raw()
        self._counters.reads += len(rows)
        return coalesce_sorted((((ts, seq), g, v) for ts, seq, g, v in rows), self.equivalence)

    def raw(self) -> list[tuple[float, int, Hashable, object]]:
        """The window's raw tuples ``(ts, seq, group, value)`` in timestamp order."""
        live = self._slot[self._head : self._end]
        columns = self._ts[self._head : self._end], self._arrival[live], self._group[live]
        return list(zip(*(c.tolist() for c in columns), self._value[live].tolist(), strict=True))

    def _referenced(self) -> Iterable[object]:
        """Every raw tuple's value and group, as every slot refers to them."""
        return [*self._value, *self._group]


INT_EXACT = 2**52
"""Integers up to this magnitude: their float64 copies subtract exactly (Python ints do)."""

NUMBER_TYPES = (float, int, bool, np.float64)
"""The types of values the kernel judges, numbered by ``_c_type``."""
_TYPE_CODE = {t: code for code, t in enumerate(NUMBER_TYPES)}
_DTYPE_CODE = {"f": 0, "i": 1, "u": 1, "b": 2}
"""A batch column's values come out of NumPy as Python floats, ints or bools."""


class EagerExtent(WindowExtent):
    """Eager coalescing with timestamp vectors: add, merge, split, detach (Algorithm 2,
    Appendix A).

    A coalesced tuple ``c`` stores its group's code ``_c_code`` (-1: free), its value once
    (``_c_number``, the float64 copy the kernel judges, with the value's type ``_c_type``; or
    the object ``_c_value`` once a value the kernel cannot judge was accepted) and its
    timestamp vector: the keys ``(ts, arrival)`` of its raw tuples in key order, entries
    ``[_c_start, _c_start + _c_len)`` of the pool ``_v_ts``/``_v_seq`` (room for
    ``_c_cap``).  A group's coalesced tuples are linked in key order (``_c_prev``,
    ``_c_next``; ``_g_head``, ``_g_tail`` by group code, whose first group object
    ``_g_group`` the view reports).  The window's key order
    (:class:`~workbench.coalesce.order.KeyOrder`) refers to each raw tuple's group: the
    oldest raw tuple is the first timestamp of that group's first coalesced tuple, detached
    from its vector on expiry (or the tuple deleted with it).  The arrays follow what the
    window holds (:mod:`~workbench.kernels.coalesce_room`): before a row the pool compacts or
    grows and the tuple arrays grow (``_make_room``; the kernel stops at such a row and goes on
    once the caller grew them), and they shrink once a quarter or less is in use (``_fit``).

    One value describes a run only for the transitive kinds (``equal``, ``quantized``); for
    the others each vector entry keeps its raw value beside its timestamp (``_v_number``, shown
    as a float, or the object ``_v_value`` once a value the kernel cannot judge was accepted),
    since a later arrival is judged against its neighbours' own values.

    The kernel judges equivalence on float64 copies of the values, so it only takes values
    whose copy Python judges alike (``_exact_number``: finite floats and ints up to 2**52
    whose quotient by the quantum is finite) under a tolerance and quantum that are floats or
    ints up to 2**53.  Once any other value (a tuple, a string, a Decimal...) has been
    accepted, ``push_batch`` keeps to the reference path, and so does a batch holding one.

    >>> from workbench.coalesce.window import Window
    >>> ext = EagerExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (3, 79), (4, 79)]:
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value) for c in ext.view()], ext.stored
    ([(2.0, 3.0, 81), (3.0, 4.0, 79)], 2)
    """

    def __new__(cls, *args: object, **kwargs: object) -> WindowExtent:
        """``mechanism="paper"`` gives the paper's array extent (:class:`ArrayExtent`,
        Algorithm 2 on an array); ``"fast"`` (the default) this one."""
        config = args[0] if args else None
        mechanism = kwargs.get("mechanism", getattr(config, "mechanism", "fast"))
        if cls is EagerExtent and mechanism == "paper":
            return ArrayExtent(*args, **kwargs)
        return super().__new__(cls)

    tuple_columns: ClassVar[dict[str, type]] = {
        "_c_start": np.int64,
        "_c_len": np.int64,
        "_c_cap": np.int64,
        "_c_prev": np.int64,
        "_c_next": np.int64,
        "_c_number": np.float64,
        "_c_type": np.int8,
    }

    def _start(self) -> None:
        super()._start()
        eq = self.equivalence
        self._per_entry = not eq.transitive
        self._compilable = all(
            isinstance(p, float) or (type(p) is int and p <= 2**53)
            for p in (eq.tolerance, eq.quantum)
        )
        self._int_exact = INT_EXACT
        if eq.kind == "relative" and type(eq.tolerance) is int and eq.tolerance > 1:
            self._int_exact = 2**53 // eq.tolerance  # Python multiplies ints exactly
        self._scale = float(eq.quantum) if eq.kind == "quantized" else 1.0  # value / quantum
        self._codes: dict[Hashable, int] = {}  # the groups that had tuples, numbered
        self._g_head = np.full(MIN_ROOM, -1, dtype=np.int64)
        self._g_tail = np.full(MIN_ROOM, -1, dtype=np.int64)
        self._g_group = np.empty(MIN_ROOM, dtype=object)
        for name, dtype in self.tuple_columns.items():
            setattr(self, name, np.zeros(MIN_ROOM, dtype=dtype))
        self._c_code = np.full(MIN_ROOM, -1, dtype=np.int64)
        self._c_free = np.arange(MIN_ROOM - 1, -1, -1, dtype=np.int64)  # a stack of free tuples
        self._n_free_c = MIN_ROOM
        self._v_ts = np.empty(MIN_ROOM)
        self._v_seq = np.empty(MIN_ROOM, dtype=np.int64)
        self._v_number = np.empty(MIN_ROOM if self._per_entry else 0)
        self._v_top = 0  # the pool's first unused entry
        self._c_value = self._v_value = np.empty(0, dtype=object)  # the values as objects
        if not self._compilable:
            self._keep_objects()

    # -- values -------------------------------------------------------------------------------

    def _exact_number(self, value: object) -> float:
        """``value`` as float64 when the kernel would judge it as Python judges the object;
        else NaN, and ``push_batch`` keeps to the reference path from now on."""
        kind = type(value)
        if kind in (float, np.float64) or (kind in (int, bool) and abs(value) <= self._int_exact):
            number = float(value)
            if math.isfinite(number / self._scale):  # Python's floor would raise on inf
                return number
        if self._compilable:
            self._keep_objects()
        self._compilable = False
        return math.nan

    def _keep_objects(self) -> None:
        """Keep the values as objects from now on (the ones held so far as their numbers)."""
        if self._per_entry:
            self._v_value = np.empty(len(self._v_ts), dtype=object)
            self._v_value[: self._v_top] = self._v_number[: self._v_top]
        else:
            live = self._live()
            self._c_value = np.empty(len(self._c_code), dtype=object)
            self._c_value[live] = self._typed(live)

    def _typed(self, tuples: np.ndarray) -> list:
        """The values of ``tuples`` (transitive kinds, numbers kept) as the types they came as."""
        numbers, types = self._c_number[tuples].tolist(), self._c_type[tuples].tolist()
        if not any(types):
            return numbers
        return [NUMBER_TYPES[t](x) for x, t in zip(numbers, types, strict=True)]

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

    def _entry_value(self, e: int, c: int) -> object:
        """The value vector entry ``e`` of tuple ``c`` is judged by (and shows)."""
        if self._compilable:
            return self._v_number[e] if self._per_entry else self._c_number[c]
        return self._v_value[e] if self._per_entry else self._c_value[c]

    # -- groups -------------------------------------------------------------------------------

    def _group_code(self, group: Hashable) -> int:
        code = self._codes.get(group)
        if code is None:
            code = self._codes[group] = len(self._codes)
            if code == len(self._g_head):
                self._g_head = np.concatenate((self._g_head, np.full(code, -1)))
                self._g_tail = np.concatenate((self._g_tail, np.full(code, -1)))
                self._g_group = np.concatenate((self._g_group, np.empty(code, dtype=object)))
            self._g_head[code] = self._g_tail[code] = -1
            self._g_group[code] = group
        return code

    def _group_codes(self, groups: np.ndarray) -> np.ndarray:
        """Each row's group code, as ``_group_code`` gives them row by row (a new group's
        object the first row's)."""
        kind, n = groups.dtype.kind, len(groups)
        if kind in "iu":
            lo, hi = int(groups.min()), int(groups.max())
            if hi - lo <= 4 * n + 1024:  # a dense range: a look-up table
                first = np.full(hi - lo + 1, n, dtype=np.int64)
                offset = groups - lo
                np.minimum.at(first, offset, np.arange(n))
                present = np.flatnonzero(first < n)
                table = np.empty(hi - lo + 1, dtype=np.int64)
                rows = first[present]
                table[present] = [self._group_code(g) for g in groups[rows].tolist()]
                return table[offset]
        if kind in "iubUS" or (kind == "f" and not np.isnan(groups).any()):
            _, rows, inverse = np.unique(groups, return_index=True, return_inverse=True)
            return np.array([self._group_code(g) for g in groups[rows].tolist()], np.int64)[inverse]
        # objects, and NaN (a new group at every row, as one by one): row by row
        return np.fromiter(map(self._group_code, groups.tolist()), np.int64, n)

    def _forget_empty_groups(self) -> None:
        """Renumber the groups still in the window once the codes of groups that left
        outnumber the window (a stream of ever new groups keeps bounded state)."""
        if len(self._codes) <= 2 * len(self) + 64:
            return
        kept = {g: c for g, c in self._codes.items() if self._g_head[c] >= 0}
        old = np.fromiter(kept.values(), np.int64, len(kept))
        new_code = np.full(len(self._codes), -1, dtype=np.int64)
        new_code[old] = np.arange(len(kept))
        used = self._c_code >= 0
        self._c_code[used] = new_code[self._c_code[used]]
        self._slot[self._head : self._end] = new_code[self._slot[self._head : self._end]]
        room = grown(len(kept)) if shrinks(len(self._g_head), len(kept)) else len(self._g_head)
        for name in ("_g_head", "_g_tail", "_g_group"):
            column = getattr(self, name)
            column[: len(kept)] = column[old]
            setattr(self, name, column[:room].copy())
        self._g_group[len(kept) :] = None  # the groups that left are not kept alive
        self._codes = dict(zip(kept, range(len(kept)), strict=True))

    # -- room ---------------------------------------------------------------------------------

    def _make_room(self, need: int) -> None:
        """Two free coalesced tuples and ``need`` free pool entries at the pool's top: the
        tuple arrays grown to ``GROWTH`` times the tuples they must hold, the pool to
        ``pool_room`` (what the caller of ``kernels.coalesce.eager_push`` does where it stops,
        and the reference before a row)."""
        tuples = len(self._c_code) - self._n_free_c
        if self._n_free_c < 2:
            self._retuple(grown(tuples + 2))
        if len(self._v_ts) - self._v_top < need:
            self._repool(pool_room(len(self), need))

    def _fit(self) -> None:
        """Shrink the pool and the tuple arrays once they hold less than a quarter of their
        room (``coalesce_room.shrinks``)."""
        super()._fit()
        if shrinks(len(self._v_ts), len(self)):
            self._repool(pool_room(len(self), 0))
        tuples = len(self._c_code) - self._n_free_c
        if shrinks(len(self._c_code), tuples):
            self._retuple(grown(tuples))

    def _retuple(self, room: int) -> None:
        """Renumber the coalesced tuples ``0..`` in arrays of ``room`` rows (links and group
        ends follow; the rest free)."""
        live = self._live()
        new = np.full(len(self._c_code) + 1, -1, dtype=np.int64)  # new[-1] = -1: no tuple
        new[live] = np.arange(len(live))
        columns = {**self.tuple_columns, "_c_code": np.int64}
        if len(self._c_value):
            columns["_c_value"] = object
        for name, dtype in columns.items():
            column = np.full(room, -1 if name == "_c_code" else 0, dtype=dtype)
            column[: len(live)] = getattr(self, name)[live]
            setattr(self, name, column)
        for name in ("_c_prev", "_c_next"):
            getattr(self, name)[: len(live)] = new[getattr(self, name)[: len(live)]]
        self._g_head, self._g_tail = new[self._g_head], new[self._g_tail]
        self._n_free_c = room - len(live)
        self._c_free = np.empty(room, dtype=np.int64)
        self._c_free[: self._n_free_c] = np.arange(room - 1, len(live) - 1, -1)

    def _repool(self, size: int) -> None:
        """Move every live vector to the front of a pool of ``size`` entries with the room
        ``kept_room`` leaves it (what detaches, splits and moves left behind is reclaimed): as
        ``kernels.coalesce._compact`` does in place."""
        live = np.flatnonzero(self._c_code >= 0)
        lengths = self._c_len[live]
        caps = kept_room(lengths, self._c_cap[live])
        starts = np.cumsum(caps) - caps
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        source = np.repeat(self._c_start[live], lengths) + offsets
        target = np.repeat(starts, lengths) + offsets
        for name in ("_v_ts", "_v_seq", "_v_number", "_v_value"):
            column = getattr(self, name)
            if len(column):
                grown = np.empty(size, dtype=column.dtype)
                grown[target] = column[source]
                setattr(self, name, grown)
        self._c_start[live], self._c_cap[live] = starts, caps
        self._v_top = int(caps.sum())

    # -- the reference: addTuple, mergeTuples, splitTuple, detach (Appendix A) ----------------

    def _move(self, dst: int, src: int, n: int) -> None:
        """Move ``n`` pool entries from ``src`` to ``dst`` (the ranges may overlap)."""
        for column in (self._v_ts, self._v_seq, self._v_number, self._v_value):
            if len(column):
                column[dst : dst + n] = column[src : src + n].copy()

    def _room(self, c: int, need: int) -> None:
        """Room for ``need`` entries in ``c``'s vector: grown in place when it ends the
        pool's used part, else moved to its end with ``moved_room`` (mirrors
        ``kernels.coalesce._room``)."""
        if self._c_cap[c] >= need:
            return
        if self._c_start[c] + self._c_cap[c] == self._v_top:
            self._v_top = int(self._c_start[c]) + need
            self._c_cap[c] = need
            return
        cap = int(moved_room(int(self._c_len[c]), need))
        self._move(self._v_top, int(self._c_start[c]), int(self._c_len[c]))
        self._c_start[c], self._c_cap[c] = self._v_top, cap
        self._v_top += cap

    def _insert_entry(self, c: int, p: int, key: Key, number: float, value: object) -> None:
        """mergeTuples (Function 2, Line 1): the key into ``c``'s vector at position ``p``,
        in sorted order (the later entries move up one; mirrors
        ``kernels.coalesce._insert_entry``)."""
        self._room(c, int(self._c_len[c]) + 1)
        at, n = int(self._c_start[c]) + p, int(self._c_len[c])
        self._move(at + 1, at, n - p)
        self._v_ts[at], self._v_seq[at] = key
        if self._per_entry:
            self._v_number[at] = number
            if not self._compilable:
                self._v_value[at] = value
        self._c_len[c] += 1

    def _new_tuple(self, g: int, left: int, right: int, cap: int) -> int:
        """addTuple (Function 1): an empty coalesced tuple of group ``g`` with room for
        ``cap`` entries, linked between the group's tuples ``left`` and ``right`` (mirrors
        ``kernels.coalesce._new_tuple``)."""
        self._n_free_c -= 1
        c = int(self._c_free[self._n_free_c])
        self._c_start[c], self._c_len[c], self._c_cap[c] = self._v_top, 0, cap
        self._v_top += cap
        self._c_code[c], self._c_prev[c], self._c_next[c] = g, left, right
        if left >= 0:
            self._c_next[left] = c
        else:
            self._g_head[g] = c
        if right >= 0:
            self._c_prev[right] = c
        else:
            self._g_tail[g] = c
        return c

    def _free_tuple(self, c: int) -> None:
        """Unlink a coalesced tuple from its group and free it (mirrors
        ``kernels.coalesce._free_tuple``)."""
        g, left, right = (int(a[c]) for a in (self._c_code, self._c_prev, self._c_next))
        if left >= 0:
            self._c_next[left] = right
        else:
            self._g_head[g] = right
        if right >= 0:
            self._c_prev[right] = left
        else:
            self._g_tail[g] = left
        self._c_code[c] = -1
        self._c_free[self._n_free_c] = c
        self._n_free_c += 1

    def _locate(self, g: int, x: float) -> tuple[int, int, int]:
        """Where timestamp ``x`` lands among group ``g``'s coalesced tuples: the tuple ``c``
        whose vector it lands in or after (-1: before all), its place ``p`` there (after its
        equal timestamps) and the group's next tuple (mirrors ``kernels.coalesce._locate``)."""
        c = int(self._g_tail[g])
        while c >= 0 and self._v_ts[self._c_start[c]] > x:
            c = int(self._c_prev[c])
        if c < 0:
            return c, 0, int(self._g_head[g])
        first = int(self._c_start[c])
        p = int(self._v_ts[first : first + self._c_len[c]].searchsorted(x, "right"))
        return c, p, int(self._c_next[c])

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        """tupleBasedEagerUpdate's insertion (Algorithm 2) with Appendix A's functions, room
        made first as ``kernels.coalesce.eager_push`` makes it (compacting the pool, or
        growing what the kernel would stop for; mirrors a row of ``eager_push``)."""
        self._forget_empty_groups()
        g = self._group_code(group)
        number = self._exact_number(value)
        x = key[0]
        while True:
            c, p, right = self._locate(g, x)
            args = self._c_start, self._c_len, self._c_cap
            need = row_need(c, p, right, *args, self._v_top)
            if compacts(len(self._v_ts), self._v_top, len(self), need):
                self._repool(len(self._v_ts))
                need = row_need(c, p, right, *args, self._v_top)
            if self._n_free_c >= 2 and len(self._v_ts) - self._v_top >= need:
                break
            self._make_room(need)
        self._place(x, g)
        same, counters = self.equivalence.same, self._counters
        first = int(self._c_start[c]) if c >= 0 else 0
        if c >= 0 and p < self._c_len[c]:  # x lands inside c, between entries p - 1 and p
            join_a = same(self._entry_value(first + p - 1, c), value)
            join_b = same(value, self._entry_value(first + p, c))
            if join_a and join_b:
                counters.merges += 1
                self._insert_entry(c, p, key, number, value)
                return
            counters.splits += 1  # splitTuple (Function 3): entries p.. move to a copy c2
            rest = int(self._c_len[c]) - p
            right = self._new_tuple(g, c, int(self._c_next[c]), rest)
            self._move(int(self._c_start[right]), first + p, rest)
            self._c_len[right], self._c_len[c] = rest, p
            for column in (self._c_number, self._c_type, self._c_value):
                if len(column):
                    column[right] = column[c]
        else:
            end = first + int(self._c_len[c]) - 1
            join_a = c >= 0 and same(self._entry_value(end, c), value)
            join_b = right >= 0 and same(value, self._entry_value(int(self._c_start[right]), right))
        if join_a:  # mergeTuples: x joins c's vector at its end (and bridges to right)
            counters.merges += 1
            self._insert_entry(c, int(self._c_len[c]), key, number, value)
            if join_b:
                k = int(self._c_len[right])
                self._room(c, int(self._c_len[c]) + k)
                self._move(int(self._c_start[c] + self._c_len[c]), int(self._c_start[right]), k)
                self._c_len[c] += k
                self._free_tuple(right)
        elif join_b:  # mergeTuples: x joins right's vector at its front
            counters.merges += 1
            self._insert_entry(right, 0, key, number, value)
        else:  # addTuple: x starts a coalesced tuple of its own
            counters.inserts += 1
            new = self._new_tuple(g, c, right, 1)
            self._insert_entry(new, 0, key, number, value)
            self._c_number[new] = number
            if self._compilable:
                self._c_type[new] = _TYPE_CODE[type(value)]
            elif not self._per_entry:
                self._c_value[new] = value

    def _remove_oldest(self) -> None:
        c = int(self._g_head[self._slot[self._head]])
        self._head += 1
        if self._c_len[c] > 1:  # the oldest timestamp leaves its vector
            self._counters.detaches += 1
            self._c_start[c] += 1
            self._c_len[c] -= 1
            self._c_cap[c] -= 1
        else:
            self._counters.deletes += 1
            self._free_tuple(c)

    # -- compiled -----------------------------------------------------------------------------

    def _push_compiled(self, batch: Readings) -> np.ndarray | None:
        numbers = self._numbers(batch.value) if self._compilable else None
        if numbers is None:
            return None
        self._forget_empty_groups()
        codes = self._group_codes(batch.group)
        eq, window = self.equivalence, self._config.window
        counts, late = np.zeros(6, dtype=np.int64), np.zeros(len(batch), dtype=np.bool_)
        ts, kind = np.ascontiguousarray(batch.ts), KIND_CODES[eq.kind]
        by_tuples = window.kind == "tuples"
        row = 0
        while True:  # the kernel stops at a row short of room: grow, then on from there
            pos = np.array([self._head, self._end, self._seq, self._n_free_c, self._v_top, 0])
            row, self._t_max = eager_push(
                ts, numbers, codes, row, late, self._ts, self._slot, self._t_max,
                by_tuples, float(window.size), counts, pos, self._c_start,
                self._c_len, self._c_cap, self._c_prev, self._c_next, self._c_code,
                self._c_number, self._c_free, self._g_head, self._g_tail, self._v_ts,
                self._v_seq, self._v_number, self._per_entry, kind, float(eq.tolerance),
                float(eq.quantum), self._c_type, _DTYPE_CODE[batch.value.dtype.kind],
            )  # fmt: skip
            self._head, self._end, self._seq, self._n_free_c, self._v_top = pos[:NEED].tolist()
            if row == len(batch):
                break
            self._make_room(int(pos[NEED]))
        self._add_counts(counts)
        return late

    # -- what it shows ------------------------------------------------------------------------

    def _live(self) -> np.ndarray:
        """The coalesced tuples held."""
        return np.flatnonzero(self._c_code >= 0)

    @property
    def stored(self) -> int:
        """Coalesced tuples held (the eager extent's physical size)."""
        return int(np.count_nonzero(self._c_code >= 0))

    def oldest(self) -> Key | None:
        """The key (ts, arrival number) of the window's oldest raw tuple, None when empty."""
        if self._head == self._end:
            return None
        first = self._c_start[self._g_head[self._slot[self._head]]]
        return float(self._v_ts[first]), int(self._v_seq[first])

    def vectors(self) -> list[tuple[Hashable, object, list[Key]]]:
        """Each coalesced tuple's group, value and timestamp vector (keys in order), by
        group and key."""
        out = []
        for c in self._live().tolist():
            first = int(self._c_start[c])
            keys = slice(first, first + int(self._c_len[c]))
            vector = list(zip(self._v_ts[keys].tolist(), self._v_seq[keys].tolist(), strict=True))
            out.append((self._g_group[self._c_code[c]], self._entry_value(first, c), vector))
        out.sort(key=lambda row: (self._codes.get(row[0], -1), row[2][0]))
        return out

    def view(self) -> list[Coalesced]:
        live = self._live()
        first = self._c_start[live]
        last_ts = self._v_ts[first + self._c_len[live] - 1]
        following = self._c_next[live]
        # valid until the group's next coalesced tuple starts, else until its last timestamp
        te, linked = last_ts, following >= 0
        te[linked] = self._v_ts[self._c_start[following[linked]]]
        self._counters.reads += len(live)
        if self._per_entry:
            values = (self._v_number if self._compilable else self._v_value)[first].tolist()
        else:
            values = self._typed(live) if self._compilable else self._c_value[live].tolist()
        groups = self._g_group[self._c_code[live]].tolist()
        rows = zip(
            self._v_ts[first].tolist(),
            self._v_seq[first].tolist(),
            te.tolist(),
            groups,
            map(self.equivalence.representative, values),
            self._c_len[live].tolist(),
            strict=True,
        )
        out = [Coalesced(*row) for row in rows]
        out.sort()
        return out

    def _referenced(self) -> Iterable[object]:
        """The groups (and their index), and the values kept as objects."""
        codes = self._codes
        return [*self._g_group, codes, *codes.values(), *self._c_value, *self._v_value]
