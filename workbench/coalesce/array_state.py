"""The state of the coalescing paper's array extent (Sections 4.2.2 and 7.2, Appendix A): the
array of coalesced tuples and the pool of their vectors
(:class:`~workbench.kernels.coalesce_array.Tuples`,
:class:`~workbench.kernels.coalesce_array.Vectors`), the values they hold, the groups they
number and the room they take (:mod:`workbench.kernels.coalesce_room`'s rules for the array:
grown when full, shrunk at a quarter, the pool compacted on the way).  The extent's algorithm
is :class:`~workbench.coalesce.array_extent.ArrayExtent`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable

import numpy as np

from workbench.coalesce.eager_state import exact_range
from workbench.coalesce.window import RawTuple, Readings, WindowExtent
from workbench.kernels.coalesce_array import (
    END,
    HEAD,
    LONGEST,
    POS,
    RAW,
    TOP,
    Tuples,
    Vectors,
    room_ok,
)
from workbench.kernels.coalesce_room import (
    GROWTH,
    MIN_ROOM,
    SHRINK_BELOW,
    SPARE_TUPLES,
    array_row_need,
)
from workbench.protocol import BadEventError

__all__ = ["ArrayState"]


class ArrayState(WindowExtent):
    """The array extent's arrays, values, groups and room (``EagerExtent(...,
    mechanism="paper")`` builds the extent): the coalesced tuples live in ``[head, end)`` of
    ``_pos``, their vectors in the pool; both grow when full and shrink when a quarter full
    (``_make_room``)."""

    # -- state ---------------------------------------------------------------------------------

    def _new_order(self) -> None:
        """The empty array and pool (the extent keeps no key order of raw tuples)."""
        eq = self.equivalence
        for name in ("tolerance", "quantum"):
            p = getattr(eq, name)
            if not (isinstance(p, float) or (type(p) is int and abs(p) <= 2**53)):
                raise ValueError(f"equivalence.{name} = {p!r} is not a float or an int <= 2**53")
        self._per_entry = not eq.transitive
        self._int_exact, self._scale = exact_range(eq)
        self._pos = np.zeros(len(POS), dtype=np.int64)
        self._codes: dict[Hashable, int] = {}  # the groups that had tuples, numbered
        self._groups: list[Hashable] = []  # by code: the group object the view reports
        self._tuples = _empty_tuples(MIN_ROOM)
        self._vectors = _empty_vectors(MIN_ROOM, self._per_entry)

    def __len__(self) -> int:
        """Raw tuples held."""
        return int(self._pos[RAW])

    # -- values and groups ---------------------------------------------------------------------

    def _validate(self, ts: float, value: object, group: Hashable) -> RawTuple:
        """A valid arrival numbers its group, late or not, as a batch's rows do in
        ``_push_compiled`` (so both report the same first object of equal groups)."""
        self._number(value)
        record = super()._validate(ts, value, group)
        self._group_code(group)
        return record

    def _number(self, value: object) -> tuple[float, int]:
        """``value`` as float64 and its type code, or a BadEventError: the array holds finite
        floats and ints up to 2**52 (whose float64 copies Python judges alike), whose quotient
        by the quantum is finite (Python's floor would raise on inf)."""
        if isinstance(value, bool | np.bool_):
            return float(value), 2
        exact = isinstance(value, numbers.Integral) and abs(int(value)) <= self._int_exact
        if (exact or isinstance(value, float | np.floating)) and math.isfinite(
            float(value) / self._scale
        ):
            return float(value), int(exact)
        raise BadEventError(
            f"value = {value!r}: the array extent holds finite floats and ints up to "
            f"{self._int_exact}"
        )

    def _valid_rows(self, batch: Readings) -> np.ndarray:
        ok = super()._valid_rows(batch)
        values, kind = batch.value, batch.value.dtype.kind
        if kind in "fiu":
            numbers_ = values.astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                ok &= np.isfinite(numbers_ / self._scale)
            if kind != "f":
                ok &= np.abs(numbers_) <= self._int_exact
        elif kind != "b":
            ok &= np.fromiter(map(self._holds, values.tolist()), bool, len(values))
        return ok

    def _holds(self, value: object) -> bool:
        try:
            self._number(value)
        except BadEventError:
            return False
        return True

    def _group_code(self, group: Hashable) -> int:
        code = self._codes.get(group)
        if code is None:
            code = self._codes[group] = len(self._groups)
            self._groups.append(group)
        return code

    def _group_codes(self, groups: np.ndarray) -> np.ndarray:
        """Each row's group code, as ``_group_code`` gives them row by row."""
        kind = groups.dtype.kind
        if kind in "iubUS" or (kind == "f" and not np.isnan(groups).any()):
            _, rows, inverse = np.unique(groups, return_index=True, return_inverse=True)
            codes = [self._group_code(g) for g in groups[np.sort(rows)].tolist()]
            table = np.empty(len(rows), dtype=np.int64)
            table[np.argsort(rows)] = codes
            return table[inverse]
        return np.fromiter(map(self._group_code, groups.tolist()), np.int64, len(groups))

    def _forget_empty_groups(self) -> None:
        """Renumber the groups still in the window once the codes of groups that left
        outnumber its tuples (a stream of ever new groups keeps bounded state)."""
        head, end = self._pos[HEAD], self._pos[END]
        if len(self._groups) <= 2 * (end - head) + 64:
            return
        live = self._tuples.code[head:end]
        kept = np.unique(live)
        new_code = np.full(len(self._groups), -1, dtype=np.int64)
        new_code[kept] = np.arange(len(kept))
        self._tuples.code[head:end] = new_code[live]
        self._groups = [self._groups[c] for c in kept.tolist()]
        self._codes = {g: c for c, g in enumerate(self._groups)}

    # -- room: growing when full, shrinking at a quarter ------------------------------------

    def _fit(self) -> None:
        """Nothing after an update: the arrays are fitted before each arrival
        (:meth:`_make_room`); the array extent keeps no key order of its own."""

    def _make_room(self) -> None:
        """Before an arrival in the window, unless
        :func:`~workbench.kernels.coalesce_array.room_ok` (the test the kernel stops for): the
        tuple array and the pool rebuilt with room for twice what they hold (what a row may
        need included), so that they double when full and halve when a quarter full, the pool
        compacted on the way."""
        pos = self._pos
        if room_ok(self._tuples, self._vectors, pos):
            return
        live, room = int(pos[END] - pos[HEAD]) + SPARE_TUPLES, len(self._tuples.t_s)
        if pos[END] + SPARE_TUPLES > room or SHRINK_BELOW * live < room:
            self._resize_tuples(max(MIN_ROOM, GROWTH * live))
        lengths = self._tuples.length[pos[HEAD] : pos[END]]
        pos[LONGEST] = int(lengths.max()) if len(lengths) else 0  # the bound made exact
        need = int(array_row_need(pos[LONGEST]))
        self._compact_pool(max(MIN_ROOM, GROWTH * (int(pos[RAW]) + need)))

    def _resize_tuples(self, room: int) -> None:
        """The live tuples to the front of arrays of ``room`` slots."""
        pos, old = self._pos, self._tuples
        live = slice(pos[HEAD], pos[END])
        n = pos[END] - pos[HEAD]
        self._tuples = _empty_tuples(room)
        for new, column in zip(self._tuples, old, strict=True):
            new[:n] = column[live]
        pos[HEAD], pos[END] = 0, n

    def _compact_pool(self, room: int) -> None:
        """Every live vector to the front of a pool of ``room`` entries, in tuple order and
        without spare room (what detaches, splits and moves left behind is reclaimed)."""
        pos, tuples = self._pos, self._tuples
        live = slice(pos[HEAD], pos[END])
        lengths = tuples.length[live]
        starts = np.cumsum(lengths) - lengths
        source = np.repeat(tuples.start[live] - starts, lengths) + np.arange(lengths.sum())
        old, self._vectors = self._vectors, _empty_vectors(room, self._per_entry)
        for new, column in zip(self._vectors, old, strict=True):
            if len(column):
                new[: len(source)] = column[source]
        tuples.start[live], tuples.cap[live] = starts, lengths
        pos[TOP] = len(source)


def _empty_tuples(room: int) -> Tuples:
    return Tuples(
        np.zeros(room),
        np.zeros(room),
        np.zeros(room, dtype=np.int64),
        np.zeros(room),
        np.zeros(room, dtype=np.int8),
        np.zeros(room, dtype=np.int64),
        np.zeros(room, dtype=np.int64),
        np.zeros(room, dtype=np.int64),
    )


def _empty_vectors(room: int, per_entry: bool) -> Vectors:
    values = room if per_entry else 0
    return Vectors(
        np.zeros(room),
        np.zeros(room, dtype=np.int64),
        np.zeros(values),
        np.zeros(values, dtype=np.int8),
    )
