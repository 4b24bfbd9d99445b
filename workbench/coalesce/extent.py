"""The window extent with eager coalescing (coalescing paper, Section 4.2.2, Algorithm 2 and
its time-based variant; Appendix A's functions): coalesced tuples, each its value once with the
vector of its raw tuples' timestamps, merging on insert (``mergeTuples``), splitting on
out-of-order gaps (``splitTuple``), and detaching the oldest timestamp on expiry.

``push`` is the readable reference; ``push_batch`` runs the same steps compiled
(:func:`workbench.kernels.coalesce_eager.eager_push`) on the same state arrays
(:class:`~workbench.coalesce.eager_state.EagerState`): each reference method names the kernel
helper it mirrors, and both take their room rules from
:mod:`workbench.kernels.coalesce_room`.  The lazy extent (Algorithm 1) is
:mod:`workbench.coalesce.lazy`, the paper's own array extent (the ``paper`` mechanism)
:mod:`workbench.coalesce.array_extent`.

Both extents expose the same coalesced view after every arrival (tested against
:func:`~workbench.coalesce.scan.recoalesce`, which coalesces the window's raw tuples from
scratch), and say what they allocate (``allocated_bytes``): the eager-vs-lazy memory
trade-off of Section 3.2 and Section 6.1.1 (Eqs. 1-2) measured rather than modelled.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from workbench.coalesce.array_extent import ArrayExtent
from workbench.coalesce.eager_state import DTYPE_CODE, TYPE_CODE, EagerState
from workbench.coalesce.scan import Key
from workbench.coalesce.window import Readings, WindowExtent
from workbench.kernels.coalesce import N_FREE, NEED, ROW, TOP, Arrivals
from workbench.kernels.coalesce_eager import eager_push
from workbench.kernels.coalesce_room import compacts, moved_room, row_need
from workbench.records import Coalesced

__all__ = ["EagerExtent"]


class EagerExtent(EagerState):
    """Eager coalescing with timestamp vectors: add, merge, split, detach (Algorithm 2,
    Appendix A).

    The state (:class:`~workbench.coalesce.eager_state.EagerState`): coalesced tuples linked
    per group in key order, each with its timestamp vector in a shared pool, and the window's
    key order, which refers to each raw tuple's group: the oldest raw tuple is the first
    timestamp of that group's first coalesced tuple, detached from its vector on expiry (or the
    tuple deleted with it).

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

    # -- the reference: addTuple, mergeTuples, splitTuple, detach (Appendix A) ----------------

    def _move(self, dst: int, src: int, n: int) -> None:
        """Move ``n`` pool entries from ``src`` to ``dst`` (the ranges may overlap; mirrors
        ``kernels.coalesce_eager._copy_entries``)."""
        for column in (self._v_ts, self._v_seq, self._v_number, self._v_value):
            if len(column):
                column[dst : dst + n] = column[src : src + n].copy()

    def _room(self, c: int, need: int) -> None:
        """Room for ``need`` entries in ``c``'s vector: grown in place when it ends the
        pool's used part, else moved to its end with ``moved_room`` (mirrors
        ``kernels.coalesce_eager._room``)."""
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
        """The key into ``c``'s vector at position ``p`` in sorted order (Function 2, Line 1:
        the later entries move up one; mirrors ``kernels.coalesce_eager._insert_entry``)."""
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
        """A free coalesced tuple of group ``g`` with an empty vector (room for ``cap``),
        linked between the group's tuples ``left`` and ``right`` (Function 1, Line 9; mirrors
        ``kernels.coalesce_eager._new_tuple``)."""
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
        ``kernels.coalesce_eager._free_tuple``)."""
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
        """Algorithm 2, Lines 14 and 24: where timestamp ``x`` lands among group ``g``'s
        coalesced tuples: the tuple ``c`` whose vector it lands in or after (-1: before all),
        its place ``p`` there (after its equal timestamps) and the group's next tuple (mirrors
        ``kernels.coalesce_eager._locate``)."""
        c = int(self._g_tail[g])
        while c >= 0 and self._v_ts[self._c_start[c]] > x:
            c = int(self._c_prev[c])
        if c < 0:
            return c, 0, int(self._g_head[g])
        first = int(self._c_start[c])
        p = int(self._v_ts[first : first + self._c_len[c]].searchsorted(x, "right"))
        return c, p, int(self._c_next[c])

    def _has_room(self, c: int, p: int, right: int) -> int:
        """Room for the row whose target is ``(c, p, right)``: the pool compacted when
        ``compacts`` says so; 0 when the row fits, else the pool entries it needs (the caller
        grows the arrays; mirrors ``kernels.coalesce_eager._has_room``)."""
        args = self._c_start, self._c_len, self._c_cap
        need = row_need(c, p, right, *args, self._v_top)
        if compacts(len(self._v_ts), self._v_top, len(self), need):
            self._repool(len(self._v_ts))
            need = row_need(c, p, right, *args, self._v_top)
        if self._n_free_c >= 2 and len(self._v_ts) - self._v_top >= need:
            return 0
        return need

    def _merge(self, c: int, p: int, key: Key, number: float, value: object) -> None:
        """mergeTuples (Function 2; Algorithm 2, Lines 16 and 26; mirrors
        ``kernels.coalesce_eager._merge``)."""
        self._counters.merges += 1
        self._insert_entry(c, p, key, number, value)

    def _bridge(self, c: int, right: int) -> None:
        """``right``'s vector appended to ``c``'s and ``right`` freed: the arrival merged at
        ``c``'s end coalesces with both (mirrors ``kernels.coalesce_eager._bridge``)."""
        k = int(self._c_len[right])
        self._room(c, int(self._c_len[c]) + k)
        self._move(int(self._c_start[c] + self._c_len[c]), int(self._c_start[right]), k)
        self._c_len[c] += k
        self._free_tuple(right)

    def _split(self, c: int, p: int) -> int:
        """splitTuple (Function 3; Algorithm 2, Line 18): entries ``p..`` of ``c``'s vector
        move to a copy linked after it; the copy (mirrors ``kernels.coalesce_eager._split``)."""
        self._counters.splits += 1
        rest = int(self._c_len[c]) - p
        c2 = self._new_tuple(int(self._c_code[c]), c, int(self._c_next[c]), rest)
        self._move(int(self._c_start[c2]), int(self._c_start[c]) + p, rest)
        self._c_len[c2], self._c_len[c] = rest, p
        for column in (self._c_number, self._c_type, self._c_value):
            if len(column):
                column[c2] = column[c]
        return c2

    def _add(self, g: int, left: int, right: int, key: Key, number: float, value: object) -> None:
        """addTuple (Function 1; Algorithm 2, Lines 19 and 28): the arrival starts a tuple of
        its own (mirrors ``kernels.coalesce_eager._add``)."""
        self._counters.inserts += 1
        c = self._new_tuple(g, left, right, 1)
        self._insert_entry(c, 0, key, number, value)
        self._c_number[c] = number
        if self._compilable:
            self._c_type[c] = TYPE_CODE[type(value)]
        elif not self._per_entry:
            self._c_value[c] = value

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        """tupleBasedEagerUpdate's insertion (Algorithm 2, Lines 13-30) with Appendix A's
        functions, room made first as ``kernels.coalesce_eager.eager_push`` makes it (mirrors a row
        of ``eager_push``: ``_locate``, ``_has_room``, ``_place``, then ``_arrive``)."""
        self._forget_empty_groups()
        g = self._group_code(group)
        number = self._exact_number(value)
        while True:  # where the kernel stops for room, grow, then locate again
            c, p, right = self._locate(g, key[0])
            need = self._has_room(c, p, right)
            if not need:
                break
            self._make_room(need)
        self._place(key[0], g)
        same = self.equivalence.same
        if c >= 0 and p < self._c_len[c]:  # Line 14: inside c, between entries p - 1 and p
            e = int(self._c_start[c]) + p
            join_a = same(self._entry_value(e - 1, c), value)
            join_b = same(value, self._entry_value(e, c))
            if join_a and join_b:
                self._merge(c, p, key, number, value)
                return
            right = self._split(c, p)
        else:  # Line 24: at the end of c (or before all of the group's tuples)
            last = int(self._c_start[c] + self._c_len[c]) - 1
            join_a = c >= 0 and same(self._entry_value(last, c), value)
            join_b = right >= 0 and same(value, self._entry_value(int(self._c_start[right]), right))
        if join_a:
            self._merge(c, int(self._c_len[c]), key, number, value)
            if join_b:
                self._bridge(c, right)
        elif join_b:
            self._merge(right, 0, key, number, value)
        else:
            self._add(g, c, right, key, number, value)

    def _remove_oldest(self) -> None:
        """Algorithm 2, Lines 1-8: a detach or a delete (mirrors
        ``kernels.coalesce_eager._expire_eager``, ``_detach`` and ``_delete``)."""
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
        kinds = np.full(len(batch), DTYPE_CODE[batch.value.dtype.kind], dtype=np.int8)
        arrivals = Arrivals(np.ascontiguousarray(batch.ts), numbers, codes, kinds)
        counts, late = np.zeros(6, dtype=np.int64), np.zeros(len(batch), dtype=np.bool_)
        clock, params = np.array([self._t_max]), self._params()
        pos = np.array([self._head, self._end, self._seq, self._n_free_c, self._v_top, 0, 0])
        while True:  # the kernel stops at a row short of room: grow, then on from there
            eager_push(arrivals, *self._bundles(), params, pos, clock, counts, late)
            self._head, self._end, self._seq, self._n_free_c, self._v_top = pos[:NEED].tolist()
            if pos[ROW] == len(batch):
                break
            self._make_room(int(pos[NEED]))
            pos[N_FREE], pos[TOP] = self._n_free_c, self._v_top
        self._t_max = float(clock[0])
        self._add_counts(counts)
        return late

    # -- what it shows ------------------------------------------------------------------------

    # -- what it shows ------------------------------------------------------------------------

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
