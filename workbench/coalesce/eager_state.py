"""The eager extent's state (coalescing paper, Section 4.2.2 and Appendix A): its coalesced
tuples, their groups and the pool of their timestamp vectors, as arrays that the readable
reference (:class:`~workbench.coalesce.extent.EagerExtent`'s ``push``) and the compiled kernel
(:func:`workbench.kernels.coalesce_eager.eager_push`) both read and write, with the values they hold
and the room they take (:mod:`workbench.kernels.coalesce_room`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.window import RawTuple, WindowExtent
from workbench.kernels.coalesce import Groups, Linked, Order, Pool
from workbench.kernels.coalesce_room import (
    MIN_ROOM,
    grown,
    kept_room,
    pool_room,
    shrinks,
)

__all__ = [
    "DTYPE_CODE",
    "INT_EXACT",
    "NUMBER_TYPES",
    "TYPE_CODE",
    "EagerState",
    "exact_range",
]

INT_EXACT = 2**52
"""Integers up to this magnitude: their float64 copies subtract exactly (Python ints do)."""

NUMBER_TYPES = (float, int, bool, np.float64)
"""The types of values the kernel judges, numbered by ``_c_type``."""
TYPE_CODE = {t: code for code, t in enumerate(NUMBER_TYPES)}
DTYPE_CODE = {"f": 0, "i": 1, "u": 1, "b": 2}
"""A batch column's values come out of NumPy as Python floats, ints or bools (their code)."""


def exact_range(eq: Equivalence) -> tuple[int, float]:
    """The largest integer magnitude whose float64 copy ``eq`` judges as Python judges the int,
    and the divisor whose quotient must stay finite (the quantum, else 1): what an eager
    extent's kernel may take.

    >>> exact_range(Equivalence("relative", 4)), exact_range(Equivalence("quantized", quantum=2))
    ((2251799813685248, 1.0), (4503599627370496, 2.0))
    """
    int_exact = INT_EXACT
    if eq.kind == "relative" and type(eq.tolerance) is int and eq.tolerance > 1:
        int_exact = 2**53 // eq.tolerance  # Python multiplies ints exactly
    return int_exact, float(eq.quantum) if eq.kind == "quantized" else 1.0


class EagerState(WindowExtent):
    """The arrays of :class:`~workbench.coalesce.extent.EagerExtent` and their bookkeeping.

    A coalesced tuple ``c`` stores its group's code ``_c_code`` (-1: free), its value once
    (``_c_number``, the float64 copy the kernel judges, with the value's type ``_c_type``; or
    the object ``_c_value`` once a value the kernel cannot judge was accepted) and its
    timestamp vector: the keys ``(ts, arrival)`` of its raw tuples in key order, entries
    ``[_c_start, _c_start + _c_len)`` of the pool ``_v_ts``/``_v_seq`` (room for
    ``_c_cap``).  A group's coalesced tuples are linked in key order (``_c_prev``,
    ``_c_next``; ``_g_head``, ``_g_tail`` by group code, whose first group object
    ``_g_group`` the view reports).  The window's key order
    (:class:`~workbench.coalesce.order.KeyOrder`) refers to each raw tuple's group.  The kernel
    sees them as the bundles :class:`~workbench.kernels.coalesce.Linked`,
    :class:`~workbench.kernels.coalesce.Groups`, :class:`~workbench.kernels.coalesce.Pool` and
    :class:`~workbench.kernels.coalesce.Order` (``_bundles``).

    The arrays follow what the window holds (:mod:`~workbench.kernels.coalesce_room`): before a
    row the pool compacts or grows and the tuple arrays grow (``_make_room``; the kernel stops
    at such a row and goes on once the caller grew them), and they shrink once a quarter or
    less is in use (``_fit``).

    One value describes a run only for the transitive kinds (``equal``, ``quantized``); for
    the others each vector entry keeps its raw value beside its timestamp (``_v_number``, shown
    as a float, or the object ``_v_value`` once a value the kernel cannot judge was accepted),
    since a later arrival is judged against its neighbours' own values.
    """

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
        self._int_exact, self._scale = exact_range(eq)
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

    def _validate(self, ts: float, value: object, group: Hashable) -> RawTuple:
        """A valid arrival numbers its group, late or not, as a batch's rows do in
        ``_push_compiled`` (so both report the same first object of equal groups)."""
        record = super()._validate(ts, value, group)
        self._group_code(group)
        return record

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
        ``pool_room`` (what the caller of ``kernels.coalesce_eager.eager_push`` does where it stops,
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
        ``kept_room`` leaves it (what detaches, splits and moves left behind is reclaimed), in
        pool order (mirrors ``kernels.coalesce_eager._compact``, which does it in place)."""
        live = np.flatnonzero(self._c_code >= 0)
        live = live[np.argsort(self._c_start[live], kind="stable")]
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

    def _bundles(self) -> tuple[Order, Linked, Groups, Pool]:
        """The state as the kernel's bundles (the same arrays, not copies)."""
        return (
            Order(self._ts, self._slot),
            Linked(
                self._c_start,
                self._c_len,
                self._c_cap,
                self._c_prev,
                self._c_next,
                self._c_code,
                self._c_number,
                self._c_type,
                self._c_free,
            ),
            Groups(self._g_head, self._g_tail),
            Pool(self._v_ts, self._v_seq, self._v_number),
        )

    def _live(self) -> np.ndarray:
        """The coalesced tuples held."""
        return np.flatnonzero(self._c_code >= 0)
