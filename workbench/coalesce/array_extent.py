"""The coalescing paper's own eager extent: Algorithm 2 on an array (Sections 4.2.2 and 7.2,
Appendix A), the ``paper`` mechanism (:data:`~workbench.coalesce.window.Mechanism`).

"We implement a window extent as an array data structure in this performance study"
(Section 7.2): the coalesced tuples sit in one array in timestamp order, each with its
timestamp vector, and nothing indexes them (Section 4.2's fourth assumption).  So the costs
grow as Section 7.2 explains them: a merge scans the window for its target and the target's
vector for its place, then shifts the vector's later entries (``C_merge`` grows with ``oop x
cp``); a split shifts the tuples after it to make room (``C_split`` grows with ``oop / cp``);
a detach or a delete at the front costs a constant.  :class:`ArrayExtent` counts that work
(``scanned``, ``shifted``) beside the atomic operations, which it counts as
:class:`~workbench.coalesce.extent.EagerExtent` does: the two mechanisms expose the same view
after every arrival and count the same inserts, merges, splits, detaches and deletes.

``push`` is the readable reference; ``push_batch`` runs the same steps compiled
(:mod:`workbench.kernels.coalesce_array`) on the same arrays, with the same counts.  The array
holds numbers: values are judged as float64 (ints up to 2**52 and finite floats, whose copy
Python judges alike); any other value is a bad record (``BadEventError`` naming it).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from workbench.coalesce.array_state import ArrayState
from workbench.coalesce.eager_state import DTYPE_CODE
from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.scan import Key
from workbench.coalesce.window import (
    ExtentConfig,
    ExtentCounters,
    RawTuple,
    Readings,
    Window,
    object_bytes,
)
from workbench.kernels.coalesce import Arrivals
from workbench.kernels.coalesce_array import (
    END,
    HEAD,
    LONGEST,
    RAW,
    ROW,
    SCANNED,
    SEQ,
    SHIFTED,
    TOP,
    push_batch,
)
from workbench.kernels.coalesce_room import GROWTH
from workbench.records import Coalesced

__all__ = ["ArrayCounters", "ArrayExtent"]

NUMBER_TYPES = (float, int, bool)
"""The value types the array holds, by their code in ``Tuples.kind``/``Vectors.kind``."""


@dataclass
class ArrayCounters(ExtentCounters):
    """The extents' counters plus the array's work: tuples and vector entries read by the
    linear scans (``scanned``) and array elements moved by shifts and copies (``shifted``)."""

    scanned: int = 0
    shifted: int = 0


class ArrayExtent(ArrayState):
    """Eager coalescing as Algorithm 2 does it, on an array: linear scans, shifts.

    ``EagerExtent(window, mechanism="paper")`` builds one.  The state
    (:class:`~workbench.coalesce.array_state.ArrayState`) is the array of coalesced tuples
    (:class:`~workbench.kernels.coalesce_array.Tuples`, live in ``[head, end)`` of ``_pos``)
    and the pool of their vectors (:class:`~workbench.kernels.coalesce_array.Vectors`).

    >>> ext = ArrayExtent(Window("tuples", 3))
    >>> for ts, v in [(1, 81), (2, 81), (4, 79), (3, 79)]:   # 3 arrives late
    ...     _ = ext.push(ts, v, "region 2")
    >>> [(c.ts, c.te, c.value, c.count) for c in ext.view()], ext.stored
    ([(2.0, 3.0, 81, 1), (3.0, 4.0, 79, 2)], 2)
    >>> c = ext.counters
    >>> c.merges, c.inserts, c.detaches, c.scanned, c.shifted
    (2, 2, 1, 8, 3)
    """

    counters_type: ClassVar[type] = ArrayCounters

    def __init__(
        self,
        config: ExtentConfig | Window | None = None,
        /,
        equivalence: Equivalence | None = None,
        **fields: object,
    ) -> None:
        if not isinstance(config, ExtentConfig):
            fields.setdefault("mechanism", "paper")
        super().__init__(config, equivalence, **fields)
        if self._config.mechanism != "paper":
            raise ValueError(
                f"mechanism = {self._config.mechanism!r}: ArrayExtent is the paper's mechanism "
                "(EagerExtent(mechanism='fast') is ours)"
            )

    # -- the window ----------------------------------------------------------------------------

    def _admit(self, record: RawTuple) -> bool:
        """Algorithm 2, Line 11 (the window rule), as the kernel's ``too_late``."""
        ts, window, pos = record.key[0], self.window, self._pos
        if window.kind == "tuples":
            return not (pos[RAW] >= window.size and ts < self._tuples.t_s[pos[HEAD]])
        return ts >= self._t_max - window.size

    def _expire(self) -> None:
        """Algorithm 2, Lines 1-8: mirrors ``kernels.coalesce_array.expire``."""
        window, pos, t_s = self.window, self._pos, self._tuples.t_s
        bound = self._t_max - window.size
        while pos[RAW] > 0 and (
            pos[RAW] > window.size if window.kind == "tuples" else t_s[pos[HEAD]] < bound
        ):
            self._remove_oldest()

    def _remove_oldest(self) -> None:
        """A detach (Lines 2-3) or a delete (Lines 5-7): mirrors ``detach`` and ``delete``."""
        pos, tuples, counters = self._pos, self._tuples, self._counters
        h = int(pos[HEAD])
        if tuples.length[h] > 1:
            tuples.start[h] += 1
            tuples.length[h] -= 1
            tuples.cap[h] -= 1
            tuples.t_s[h] = self._vectors.ts[tuples.start[h]]
            end = int(pos[END])
            keys = self._keys(h + 1, end)
            k = h + 1 + bisect.bisect_right(keys, self._key(h))
            counters.scanned += min(k - h, end - h - 1)  # the kernel reads up to the first later
            counters.shifted += k - 1 - h
            self._rotate(h, k - 1)
            counters.detaches += 1
        else:
            pos[HEAD] += 1
            counters.deletes += 1
        pos[RAW] -= 1

    def _key(self, k: int) -> tuple[float, int]:
        return float(self._tuples.t_s[k]), int(self._vectors.seq[self._tuples.start[k]])

    def _keys(self, lo: int, hi: int) -> list[tuple[float, int]]:
        """The first keys of tuples ``[lo, hi)``, in order."""
        t = self._tuples
        seq = self._vectors.seq[t.start[lo:hi]]
        return list(zip(t.t_s[lo:hi].tolist(), seq.tolist(), strict=True))

    def _rotate(self, src: int, dst: int) -> None:
        """Move tuple ``src`` to index ``dst``, the tuples between shifting by one."""
        if src == dst:
            return
        step = 1 if dst > src else -1
        order = np.roll(np.arange(min(src, dst), max(src, dst) + 1), -step)
        for column in self._tuples:
            column[min(src, dst) : max(src, dst) + 1] = column[order]

    # -- the reference: Algorithm 2, Lines 9-31 ------------------------------------------------

    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        self._forget_empty_groups()
        self._make_room()
        self._arrive(*key, self._group_code(group), *self._number(value))
        self._pos[RAW] += 1

    def _arrive(self, x: float, s: int, g: int, number: float, kind: int) -> None:
        """One arrival in the window: mirrors ``kernels.coalesce_array.arrive``."""
        same, entry = self.equivalence.same, self._entry_value
        ins, c, right = self._find_target(g, x)
        p = self._find_entry(c, x) if c >= 0 else 0
        t = self._tuples
        if c >= 0 and p < t.length[c]:  # inside c's vector, between entries p - 1 and p
            e = int(t.start[c]) + p
            join_a, join_b = same(entry(c, e - 1), number), same(number, entry(c, e))
            if join_a and join_b:
                self._merge(c, p, x, s, number, kind)
                return
            c, right = self._split(c, p)
        else:
            join_a = c >= 0 and same(entry(c, int(t.start[c] + t.length[c] - 1)), number)
            join_b = right >= 0 and same(number, entry(right, int(t.start[right])))
        if join_a:
            self._merge(c, int(t.length[c]), x, s, number, kind)
            if join_b:
                self._absorb(c, right)
        elif join_b:
            self._merge(right, 0, x, s, number, kind)
            t.t_s[right] = x
            self._counters.shifted += right - ins
            self._rotate(right, ins)
            if c >= 0:
                t.t_e[c] = x
        else:
            self._add(ins, c, right, x, s, g, number, kind)

    def _entry_value(self, c: int, e: int) -> float:
        """The value entry ``e`` of tuple ``c`` is judged by (as the kernel's ``_value``)."""
        return float(self._vectors.number[e] if self._per_entry else self._tuples.number[c])

    def _find_target(self, g: int, x: float) -> tuple[int, int, int]:
        """Algorithm 2, Lines 14 and 24: mirrors ``find_target`` (the scan from the latest
        tuple stops at the group's last tuple starting at or before ``x``)."""
        head, end, t = int(self._pos[HEAD]), int(self._pos[END]), self._tuples
        ins = head + int(np.searchsorted(t.t_s[head:end], x, side="right"))
        mine = head + np.flatnonzero(t.code[head:end] == g)
        at_or_before = mine[t.t_s[mine] <= x]
        c = int(at_or_before[-1]) if len(at_or_before) else -1
        after = mine[mine > c]
        right = int(after[0]) if len(after) else -1
        self._counters.scanned += end - c if c >= 0 else end - head
        return ins, c, right

    def _find_entry(self, c: int, x: float) -> int:
        """Function 2, Line 1: mirrors ``find_entry`` (the scan from the vector's end)."""
        first, n = int(self._tuples.start[c]), int(self._tuples.length[c])
        p = int(np.searchsorted(self._vectors.ts[first : first + n], x, side="right"))
        self._counters.scanned += n - p + (p > 0)
        return p

    def _grow(self, c: int, need: int) -> None:
        """Mirrors ``_grow``: a full vector moves to the pool's end with twice the room."""
        t, pos = self._tuples, self._pos
        if t.cap[c] >= need:
            return
        n, src, dst = int(t.length[c]), int(t.start[c]), int(pos[TOP])
        for column in self._vectors:
            if len(column):
                column[dst : dst + n] = column[src : src + n]
        self._counters.shifted += n
        t.start[c], t.cap[c] = dst, GROWTH * need
        pos[TOP] += GROWTH * need

    def _merge(self, c: int, p: int, x: float, s: int, number: float, kind: int) -> None:
        """mergeTuples (Function 2): mirrors ``merge``."""
        t, v = self._tuples, self._vectors
        self._grow(c, int(t.length[c]) + 1)
        first, n = int(t.start[c]), int(t.length[c])
        for column in v:
            if len(column):
                column[first + p + 1 : first + n + 1] = column[first + p : first + n].copy()
        self._counters.shifted += n - p
        v.ts[first + p], v.seq[first + p] = x, s
        if self._per_entry:
            v.number[first + p], v.kind[first + p] = number, kind
        t.length[c] = n + 1
        self._pos[LONGEST] = max(self._pos[LONGEST], n + 1)
        t.t_e[c] = max(t.t_e[c], x)
        self._counters.merges += 1

    def _absorb(self, c: int, r: int) -> None:
        """Mirrors ``absorb``: ``r``'s vector appended to ``c``'s, ``r`` out of the array."""
        t = self._tuples
        n, k = int(t.length[c]), int(t.length[r])
        self._grow(c, n + k)
        first, src = int(t.start[c]), int(t.start[r])
        for column in self._vectors:
            if len(column):
                column[first + n : first + n + k] = column[src : src + k]
        self._counters.shifted += k
        t.length[c] = n + k
        self._pos[LONGEST] = max(self._pos[LONGEST], n + k)
        t.t_e[c] = t.t_e[r]
        end = int(self._pos[END])
        self._counters.shifted += end - 1 - r
        self._rotate(r, end - 1)
        self._pos[END] -= 1

    def _split(self, c: int, p: int) -> tuple[int, int]:
        """splitTuple (Function 3): mirrors ``split``; ``c`` and its copy's index."""
        t, pos = self._tuples, self._pos
        first, n, dst = int(t.start[c]), int(t.length[c]), int(pos[TOP])
        rest = n - p
        for column in self._vectors:
            if len(column):
                column[dst : dst + rest] = column[first + p : first + n]
        self._counters.shifted += rest
        pos[TOP] += rest
        end = int(pos[END])
        for column in t:
            column[end] = column[c]
        t.t_s[end], t.start[end], t.length[end], t.cap[end] = self._vectors.ts[dst], dst, rest, rest
        t.length[c] = p
        t.t_e[c] = self._vectors.ts[dst]
        keys = self._keys(c + 1, end)
        k = c + 1 + bisect.bisect_left(keys, self._key(end))
        self._counters.scanned += min(k - c, end - c - 1)
        self._counters.shifted += end - k
        pos[END] += 1
        self._rotate(end, k)
        self._counters.splits += 1
        return c, k

    def _add(
        self, ins: int, c: int, right: int, x: float, s: int, g: int, number: float, kind: int
    ) -> None:
        """addTuple (Function 1): mirrors ``add``."""
        t, v, pos = self._tuples, self._vectors, self._pos
        t_e = float(t.t_s[right]) if right >= 0 else x
        if c >= 0:
            t.t_e[c] = x
        end = int(pos[END])
        self._counters.shifted += end - ins
        pos[END] += 1
        self._rotate(end, ins)  # the slot at the end, now at ins, is overwritten
        at = int(pos[TOP])
        pos[TOP] += 1
        for column, item in zip(t, (x, t_e, g, number, kind, at, 1, 1), strict=True):
            column[ins] = item
        v.ts[at], v.seq[at] = x, s
        if self._per_entry:
            v.number[at], v.kind[at] = number, kind
        pos[LONGEST] = max(pos[LONGEST], 1)
        self._counters.inserts += 1

    # -- compiled ------------------------------------------------------------------------------

    def _reserve(self, k: int) -> None:
        """Nothing ahead of a batch: room is made before each arrival (``_make_room``), the
        kernel stopping for it."""

    def _push_compiled(self, batch: Readings) -> np.ndarray:
        """The rows through :func:`~workbench.kernels.coalesce_array.push_batch`, room made
        whenever it stops; which rows were too late."""
        code = DTYPE_CODE.get(batch.value.dtype.kind)
        if code is None:  # objects: each row's own type
            pairs = list(map(self._number, batch.value.tolist()))
            numbers = np.array([x for x, _ in pairs], dtype=np.float64)
            kinds = np.array([k for _, k in pairs], dtype=np.int8)
        else:
            numbers = batch.value.astype(np.float64)
            kinds = np.full(len(batch), code, dtype=np.int8)
        self._forget_empty_groups()
        ts = np.ascontiguousarray(batch.ts)
        arrivals = Arrivals(ts, numbers, self._group_codes(batch.group), kinds)
        pos, n = self._pos, len(batch)
        late = np.zeros(n, dtype=np.bool_)
        counts = np.zeros(8, dtype=np.int64)
        clock = np.array([self._t_max])
        pos[SEQ], pos[ROW] = self._seq, 0
        params = self._params()
        while True:
            push_batch(arrivals, self._tuples, self._vectors, params, pos, clock, counts, late)
            if pos[ROW] == n:
                break
            self._make_room()  # as the reference does before the arrival the kernel stopped at
        self._seq, self._t_max = int(pos[SEQ]), float(clock[0])
        self._add_counts(counts[:6])
        self._counters.scanned += int(counts[SCANNED])
        self._counters.shifted += int(counts[SHIFTED])
        return late

    # -- what it shows -------------------------------------------------------------------------

    @property
    def stored(self) -> int:
        """Coalesced tuples held (the eager extent's physical size)."""
        return int(self._pos[END] - self._pos[HEAD])

    def oldest(self) -> Key | None:
        """The key (ts, arrival number) of the window's oldest raw tuple, None when empty."""
        if not self._pos[RAW]:
            return None
        return self._key(int(self._pos[HEAD]))

    def _values(self, lo: int, hi: int) -> list:
        """The values tuples ``[lo, hi)`` show (their first entry's), as the types they came as."""
        t, v = self._tuples, self._vectors
        if self._per_entry:
            first = t.start[lo:hi]
            numbers, kinds = v.number[first].tolist(), v.kind[first].tolist()
        else:
            numbers, kinds = t.number[lo:hi].tolist(), t.kind[lo:hi].tolist()
        return [NUMBER_TYPES[k](x) for x, k in zip(numbers, kinds, strict=True)]

    def vectors(self) -> list[tuple[Hashable, object, list[Key]]]:
        """Each coalesced tuple's group, value and timestamp vector (keys in order), in the
        array's order."""
        head, end, t, v = int(self._pos[HEAD]), int(self._pos[END]), self._tuples, self._vectors
        out = []
        for k, value in zip(range(head, end), self._values(head, end), strict=True):
            keys = slice(int(t.start[k]), int(t.start[k] + t.length[k]))
            vector = list(zip(v.ts[keys].tolist(), v.seq[keys].tolist(), strict=True))
            out.append((self._groups[t.code[k]], value, vector))
        return out

    def view(self) -> list[Coalesced]:
        head, end, t = int(self._pos[HEAD]), int(self._pos[END]), self._tuples
        self._counters.reads += end - head
        live = slice(head, end)
        rows = zip(
            t.t_s[live].tolist(),
            self._vectors.seq[t.start[live]].tolist(),
            t.t_e[live].tolist(),
            [self._groups[g] for g in t.code[live].tolist()],
            map(self.equivalence.representative, self._values(head, end)),
            t.length[live].tolist(),
            strict=True,
        )
        return [Coalesced(*row) for row in rows]

    def allocated_bytes(self) -> int:
        """Bytes allocated: the tuple array's and the pool's ``nbytes`` (spare room
        included), the cursors, and the Python objects held (the group index and the group
        objects, :func:`~workbench.coalesce.window.object_bytes`)."""
        arrays = (*self._tuples, *self._vectors, self._pos)
        return sum(a.nbytes for a in arrays) + object_bytes(self._referenced())

    def _referenced(self) -> list[object]:
        """The group index and the group objects (``allocated_bytes``)."""
        return [self._codes, self._groups, *self._groups]
