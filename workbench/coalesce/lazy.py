"""The window extent with lazy coalescing (coalescing paper, Section 4.2.1, Algorithm 1 and its
time-based variant): the raw tuples stored in timestamp order, coalesced during the scan.

``push`` is the readable reference; ``push_batch`` runs the same steps compiled
(:func:`workbench.kernels.coalesce.lazy_push`) on the same state arrays.  The window rule and
what both extents share: :mod:`workbench.coalesce.window`; the scan:
:mod:`workbench.coalesce.scan`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from workbench.coalesce.order import SlotStore
from workbench.coalesce.scan import Key, coalesce_sorted
from workbench.coalesce.window import Readings, WindowExtent
from workbench.kernels.coalesce import HEAD, N_FREE, Order, Slots, lazy_push
from workbench.records import Coalesced

__all__ = ["LazyExtent"]


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
        """Algorithm 1, Lines 4-15 (mirrors a row of ``kernels.coalesce.lazy_push``)."""
        self._store(key, group, value)
        self._counters.inserts += 1

    def _remove_oldest(self) -> None:
        """Algorithm 1, Lines 1-3 (mirrors the expiry loop of ``kernels.coalesce.lazy_push``)."""
        self._drop_oldest()
        self._counters.deletes += 1

    def _push_compiled(self, batch: Readings) -> np.ndarray:
        counts, first = np.zeros(6, dtype=np.int64), self._seq
        pos = np.array([self._head, self._end, self._seq, self._n_free, 0, 0, 0])
        clock = np.array([self._t_max])
        placed = lazy_push(
            np.ascontiguousarray(batch.ts),
            Order(self._ts, self._slot),
            Slots(self._arrival, self._free),
            self._params(),
            pos,
            clock,
            counts,
        )
        self._head, self._end, self._seq, self._n_free = pos[HEAD : N_FREE + 1].tolist()
        self._t_max = float(clock[0])
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
