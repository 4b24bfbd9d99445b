"""A window's raw tuples in key order through out-of-order arrivals (coalescing Sec. 2, Alg. 1)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from workbench.coalesce.scan import Key
from workbench.kernels.coalesce_room import GROWTH, MIN_ROOM, grown, shrinks

__all__ = ["KeyOrder", "SlotStore"]


class KeyOrder:
    """Raw tuples' timestamps kept in key order (ts, then arrival), as the paper's processing
    model keeps a window extent (Section 2): an in-order arrival is appended, an out-of-order
    one placed after its equal timestamps by moving the younger tuples up (Algorithm 1, lines
    9-10), and the oldest leaves from the front.

    The state is two arrays in key order, live in ``[_head, _end)``: the timestamps ``_ts`` and
    what each refers to, ``_slot`` (the lazy extent's storage slot, the eager extent's group),
    with ``GROWTH`` times the room the window needs (:mod:`workbench.kernels.coalesce_room`:
    grown when full, shrunk by ``_fit`` once it holds less than a quarter).
    """

    def _new_order(self) -> None:
        """Empty arrays with room for a few tuples."""
        self._ts = np.empty(MIN_ROOM)
        self._slot = np.empty(MIN_ROOM, dtype=np.int64)
        self._head = self._end = 0

    def __len__(self) -> int:
        """Raw tuples held."""
        return self._end - self._head

    def _reserve(self, k: int) -> None:
        """Room for ``k`` more raw tuples: the tuples moved to the front of arrays of
        ``GROWTH`` times the room they need when they reach their end."""
        if self._end + k > len(self._ts):
            self._reorder(max(len(self._ts), grown(len(self) + k)))

    def _reorder(self, room: int) -> None:
        """The raw tuples moved to the front of arrays of ``room`` rows."""
        n, head = len(self), self._head
        ts, slot = np.empty(room), np.empty(room, dtype=np.int64)
        ts[:n], slot[:n] = self._ts[head : self._end], self._slot[head : self._end]
        self._ts, self._slot, self._head, self._end = ts, slot, 0, n

    def _fit(self) -> None:
        """Shrink the arrays once they hold less than a quarter of their room."""
        if shrinks(len(self._ts), len(self)):
            self._reorder(grown(len(self)))

    def _place(self, ts: float, ref: int) -> None:
        """Put a raw tuple's timestamp in key order (after its equal timestamps: ties by
        arrival), referring to ``ref`` (mirrors ``kernels.coalesce._place``)."""
        if self._end == len(self._ts):
            self._reserve(1)
        head, end = self._head, self._end
        if head < end and ts < self._ts[end - 1]:  # out of order: the younger tuples move up
            pos = head + int(self._ts[head:end].searchsorted(ts, side="right"))
            self._ts[pos + 1 : end + 1] = self._ts[pos:end]
            self._slot[pos + 1 : end + 1] = self._slot[pos:end]
        else:
            pos = end
        self._ts[pos], self._slot[pos], self._end = ts, ref, end + 1


class SlotStore(KeyOrder):
    """The key order of raw tuples each stored whole in a slot: per slot the tuple's arrival
    number ``_arrival``, its ``_value`` and ``_group`` (any objects) and a subclass's own
    columns (``slot_columns``); the free slots in ``_free[:_n_free]``.  ``_reserve`` makes
    room before a kernel writes them.

    >>> from workbench.coalesce.lazy import LazyExtent
    >>> from workbench.coalesce.window import Window
    >>> ext = LazyExtent(Window("tuples", 3))
    >>> for ts in [1.0, 3.0, 2.0]:   # 2.0 arrives out of order, after 3.0
    ...     _ = ext.push(ts, 80)
    >>> [(ts, seq) for ts, seq, _, _ in ext.raw()], ext.oldest()
    ([(1.0, 0), (2.0, 2), (3.0, 1)], (1.0, 0))
    """

    slot_columns: ClassVar[dict[str, type]] = {
        "_arrival": np.int64,
        "_value": object,
        "_group": object,
    }

    def _new_order(self) -> None:
        super()._new_order()
        self._free = np.arange(MIN_ROOM - 1, -1, -1, dtype=np.int64)  # a stack of free slots
        self._n_free = MIN_ROOM
        for name, dtype in self.slot_columns.items():
            setattr(self, name, np.empty(MIN_ROOM, dtype=dtype))

    def oldest(self) -> Key | None:
        """The key (ts, arrival number) of the window's oldest raw tuple, None when empty."""
        if self._head == self._end:
            return None
        return float(self._ts[self._head]), int(self._arrival[self._slot[self._head]])

    def _reserve(self, k: int) -> None:
        """Room for ``k`` more raw tuples in key order, and as many free slots."""
        super()._reserve(k)
        if self._n_free < k:
            n, old = len(self), len(self._arrival)
            room = max(GROWTH * old, n + k)
            for name in self.slot_columns:
                column = getattr(self, name)
                grown = np.empty(room, dtype=column.dtype)
                grown[:old] = column
                setattr(self, name, grown)
            free = np.empty(room, dtype=np.int64)
            free[: self._n_free] = self._free[: self._n_free]
            free[self._n_free : self._n_free + room - old] = np.arange(room - 1, old - 1, -1)
            self._free, self._n_free = free, self._n_free + room - old

    def _fit(self) -> None:
        """Shrink the slots once a quarter of them or less are used: the raw tuples renumbered
        ``0..`` in key order (what free slots referred to is let go)."""
        super()._fit()
        n = len(self)
        if shrinks(len(self._arrival), n):
            live, room = self._slot[self._head : self._end], grown(n)
            for name in self.slot_columns:
                column = getattr(self, name)
                kept = np.empty(room, dtype=column.dtype)
                kept[:n] = column[live]
                setattr(self, name, kept)
            self._slot[self._head : self._end] = np.arange(n)
            self._n_free = room - n
            self._free = np.empty(room, dtype=np.int64)
            self._free[: self._n_free] = np.arange(room - 1, n - 1, -1)

    def _store(self, key: Key, group: Hashable, value: object) -> int:
        """Put a raw tuple in key order and in a free slot; the slot."""
        if not self._n_free:
            self._reserve(1)
        self._n_free -= 1
        slot = int(self._free[self._n_free])
        self._place(key[0], slot)
        self._arrival[slot], self._value[slot], self._group[slot] = key[1], value, group
        return slot

    def _drop_oldest(self) -> int:
        """Take the oldest raw tuple out of the key order and free its slot (arrival number
        -1); the slot (its other columns stay readable until the slot is taken again)."""
        slot = int(self._slot[self._head])
        self._head += 1
        self._arrival[slot] = -1
        self._free[self._n_free] = slot
        self._n_free += 1
        return slot
