"""Join buffers of the multi-way window join (W-join paper, Sections 3.1.1 and 3.2.2).

Each keeps every stream's tuples in timestamp order (ties in arrival order) so the oldest
tuple leaves first in O(1):

- :class:`FifoBuffers`, the nested-loop implementation: one ordered queue per stream, scanned
  over a time range.
- :class:`HashBuffers`, the hash implementation: per stream, a hash table on the join key
  whose buckets keep their tuples in order, threaded on one doubly linked list in timestamp
  order, so expiry unlinks the list's head and its bucket's head.

Beside them, :class:`HeldTuples` keeps the tuples the paper's FEW holds, in arrival order,
while its mode 1 waits for a tuple of every stream (Section 3.2).

A tuple is ``(ts, seq, id, key)``: ``seq`` is its arrival number and ``key`` its join value
factorized by :class:`KeyCodes` (equal values, equal codes).  Delayed tuples are inserted at
their place, searching from the newest end (the delay bound keeps that short).

The state is NumPy arrays (rows per stream, linked lists as slot indices), so the readable
methods here and the compiled kernels of :mod:`workbench.kernels.wjoin` work on the same
buffers and may be interleaved.  ``reserve`` makes room before a kernel runs.  Each method
that a function of :mod:`workbench.kernels.wjoin_store` repeats in compiled form says so
("mirrors ..."), and both take the hash pool's layout (``NIL``, the ``POOL_*`` columns) from
that module.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

import numpy as np

from workbench.kernels.wjoin_store import (
    NIL,
    POOL_B_NEWER,
    POOL_B_OLDER,
    POOL_ID,
    POOL_KEY,
    POOL_NEWER,
    POOL_OLDER,
    POOL_SEQ,
    POOL_TS,
)

__all__ = ["NIL", "FifoBuffers", "HashBuffers", "KeyCodes", "Tuple", "Visit"]

Tuple = tuple[float, int, int, int]
"""One stream tuple: (ts, seq, id, key code)."""


class Visit(NamedTuple):
    """What one visit of a stream's buffer by the search did (W-join Section 3.1): the
    comparisons made, the candidates found, the buffered tuples visited inside and outside
    the period, and those dropped on the way (the paper's BEW)."""

    comparisons: int
    found: list[Tuple]
    inside: int
    outside: int = 0
    dropped: int = 0


class KeyCodes:
    """Join values factorized to int64 codes, kept across pushes and batches.

    Equal values share a code; a value unequal to itself (NaN) gets a fresh code, so it
    matches nothing, as ``!=`` would say.  The table grows with the distinct values seen
    until the buffers are emptied (``flush``).

    >>> keys = KeyCodes()
    >>> keys.code("car"), keys.code("bus"), keys.code("car")
    (0, 1, 0)
    >>> keys.codes(np.array([7, "bus"], dtype=object)).tolist(), keys.value(2)
    ([2, 1], 7)
    """

    def __init__(self) -> None:
        self._codes: dict[Hashable, int] = {}
        self.values: list[Hashable] = []

    def __len__(self) -> int:
        return len(self.values)

    def code(self, value: Hashable) -> int:
        """The value's code (a new one for a value not seen before)."""
        code = self._codes.get(value)
        if code is None:
            code = len(self.values)
            self.values.append(value)
            if value == value:
                self._codes[value] = code
        return code

    def codes(self, values: np.ndarray) -> np.ndarray:
        """The codes of a batch's value column (each distinct value looked up once)."""
        if values.dtype.kind in "iubUS":  # no value unequal to itself: factorize first
            uniq, inverse = np.unique(values, return_inverse=True)
            table = np.array([self.code(v) for v in uniq.tolist()], dtype=np.int64)
            return table[inverse.reshape(-1)]
        return np.array([self.code(v) for v in values.tolist()], dtype=np.int64)

    def value(self, code: int) -> Hashable:
        """The value a code stands for."""
        return self.values[code]


class FifoBuffers:
    """Nested-loop join buffers: one ordered FIFO queue per stream (rows of 2-D arrays).

    Stream s holds ``ts[s, head:end]`` (sorted) with its tuples' ``seq``, ``id`` and ``key``
    in the same places of their arrays; ``span[s]`` = (head, end).

    >>> buf = FifoBuffers(2)
    >>> for t in [(5.0, 0, 10, 1), (3.0, 1, 11, 2), (9.0, 2, 12, 1)]:
    ...     buf.insert(0, t)
    >>> visit = buf.scan(0, 4.0, 9.0, key=1)
    >>> visit.comparisons, [t[2] for t in visit.found]
    (2, [10, 12])
    >>> buf.drop_before(0, 4.0), buf.size(0), buf.size(1)
    (1, 2, 0)
    """

    def __init__(self, m: int, capacity: int = 16) -> None:
        self.ts = np.zeros((m, capacity))
        self.seq, self.id, self.key = (np.zeros((m, capacity), np.int64) for _ in range(3))
        self.span = np.zeros((m, 2), dtype=np.int64)

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self.ts, self.seq, self.id, self.key)

    def size(self, s: int) -> int:
        """Tuples held for stream s."""
        head, end = self.span[s].tolist()
        return end - head

    def _tuples(self, s: int, i: int, j: int) -> list[Tuple]:
        return list(zip(*(col[s, i:j].tolist() for col in self._columns()), strict=True))

    def reserve(self, counts: np.ndarray) -> None:
        """Room for ``counts[s]`` more tuples of each stream s (grown or compacted)."""
        head, end = self.span[:, 0], self.span[:, 1]
        cap = self.ts.shape[1]
        full = end + counts > cap
        if not full.any():
            return
        need = end - head + counts
        old = self._columns()
        if (2 * need > cap).any():  # grow (doubling): every stream moves to the front
            cap = int(2 * need.max())
            new = tuple(np.zeros((len(counts), cap), col.dtype) for col in old)
            full[:] = True
        else:
            new = old
        for s in np.flatnonzero(full).tolist():
            h, e = self.span[s].tolist()
            for col, before in zip(new, old, strict=True):
                col[s, : e - h] = before[s, h:e]
            self.span[s] = (0, e - h)
        self.ts, self.seq, self.id, self.key = new

    def insert(self, s: int, item: Tuple) -> None:
        """Add a tuple at its timestamp position (after equal timestamps; mirrors the queue
        branch of ``kernels.wjoin_store.insert``)."""
        if self.span[s, 1] == self.ts.shape[1]:
            counts = np.zeros(len(self.span), dtype=np.int64)
            counts[s] = 1
            self.reserve(counts)
        head, end = self.span[s].tolist()
        pos = head + int(np.searchsorted(self.ts[s, head:end], item[0], side="right"))
        for col, x in zip(self._columns(), item, strict=True):
            col[s, pos + 1 : end + 1] = col[s, pos:end]
            col[s, pos] = x
        self.span[s, 1] = end + 1

    def scan(self, s: int, lo: float, hi: float, key: int | None) -> Visit:
        """Scan stream s's tuples with ``lo <= ts <= hi`` (binary-searched), testing each
        one's key (the nested loop, vectorised): each tuple scanned is a comparison and
        visited inside the period; found: those with the key (all of them for ``key=None``)."""
        head, end = self.span[s].tolist()
        i = head + int(np.searchsorted(self.ts[s, head:end], lo, side="left"))
        j = head + int(np.searchsorted(self.ts[s, head:end], hi, side="right"))
        if key is None:
            return Visit(j - i, self._tuples(s, i, j), j - i)
        hits = i + np.flatnonzero(self.key[s, i:j] == key)
        return Visit(j - i, [self._tuples(s, k, k + 1)[0] for k in hits.tolist()], j - i)

    def test_each(self, s: int, lo: float, hi: float, key: int | None, bound: float) -> Visit:
        """The paper's nested loop (W-join Section 3.1), one tuple at a time from the oldest:
        every tuple of stream s's queue tested against the period ``[lo, hi]`` (a
        comparison), the key of each one inside (a comparison), and each one older than the
        period against the expiry ``bound`` (a comparison): dropped if ``ts < bound``.  Those
        form a prefix of the queue, so they leave from its head.  Mirrors the nested-loop
        branch of ``kernels.wjoin_search._next_each``.

        >>> buf = FifoBuffers(1)
        >>> for t in [(3.0, 0, 10, 1), (5.0, 1, 11, 2), (9.0, 2, 12, 1)]:
        ...     buf.insert(0, t)
        >>> visit = buf.test_each(0, 4.0, 9.0, key=1, bound=4.0)
        >>> visit.comparisons, [t[2] for t in visit.found], visit.dropped, buf.size(0)
        (6, [12], 1, 2)
        """
        tests, found, inside, outside, dropped = 0, [], 0, 0, 0
        head, end = self.span[s].tolist()
        for p in range(head, end):
            ts = float(self.ts[s, p])
            tests += 1
            if lo <= ts <= hi:
                inside += 1
                if key is not None:
                    tests += 1
                if key is None or int(self.key[s, p]) == key:
                    found.append(self._tuples(s, p, p + 1)[0])
                continue
            outside += 1
            if ts < lo:
                tests += 1
                if ts < bound:  # a prefix: p is the head
                    self.span[s, 0] += 1
                    dropped += 1
        return Visit(tests, found, inside, outside, dropped)

    def newest_ts(self, s: int) -> float:
        """Stream s's newest timestamp; the buffer must hold a tuple (mirrors
        ``kernels.wjoin_store.newest_ts``)."""
        return float(self.ts[s, self.span[s, 1] - 1])

    def oldest(self, s: int) -> Tuple | None:
        """Stream s's tuple with the smallest (ts, seq), if any."""
        head, end = self.span[s].tolist()
        return self._tuples(s, head, head + 1)[0] if head < end else None

    def pop_oldest(self, s: int) -> Tuple:
        """Remove and return stream s's oldest tuple (mirrors
        ``kernels.wjoin_store.pop_oldest``)."""
        item = self.oldest(s)
        if item is None:
            raise IndexError("pop from an empty buffer")
        self.span[s, 0] += 1
        return item

    def drop_before(self, s: int, bound: float) -> int:
        """Expire every tuple of stream s with ``ts < bound``; return how many (mirrors
        ``kernels.wjoin_store.drop_before``)."""
        head, end = self.span[s].tolist()
        n = int(np.searchsorted(self.ts[s, head:end], bound, side="left"))
        self.span[s, 0] = head + n
        return n

    def stream(self, s: int) -> list[Tuple]:
        """Stream s's tuples, oldest first."""
        head, end = self.span[s].tolist()
        return self._tuples(s, head, end)


def _pool(rows: int) -> np.ndarray:
    """``rows`` empty pool rows of 64 bytes, starting on a cache line."""
    raw = np.full(8 * rows + 8, NIL, dtype=np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip : skip + 8 * rows].reshape(rows, 8)


class HashBuffers:
    """Hash join buffers: per stream, buckets by key on one time-ordered linked list.

    Tuples live in a pool of slots, one 64-byte row each (a bucket's walk reads one row per
    tuple): ``ints[slot]`` = (seq, id, key, older, newer, bucket older, bucket newer, ts),
    ``ts`` being a float64 view of the last column; ``lists[s]`` = (oldest, newest, count) of
    stream s,
    ``buckets[s, key]`` = (oldest, newest) of its bucket; ``free[:nfree[0]]`` the free slots.

    >>> buf = HashBuffers(2)
    >>> for t in [(5.0, 0, 10, 1), (3.0, 1, 11, 2), (9.0, 2, 12, 1)]:
    ...     buf.insert(0, t)
    >>> visit = buf.scan(0, 6.0, 9.0, key=1)
    >>> visit.comparisons, [t[2] for t in visit.found], visit.outside
    (1, [12], 1)
    >>> buf.drop_before(0, 6.0), [t[2] for t in buf.stream(0)]
    (2, [12])
    """

    SEQ, ID, KEY, TS = POOL_SEQ, POOL_ID, POOL_KEY, POOL_TS
    OLDER, NEWER, B_OLDER, B_NEWER = POOL_OLDER, POOL_NEWER, POOL_B_OLDER, POOL_B_NEWER

    def __init__(self, m: int, capacity: int = 16, keys: int = 16) -> None:
        self._use_pool(_pool(capacity))
        self.lists = np.full((m, 3), NIL, dtype=np.int64)
        self.lists[:, 2] = 0
        self.buckets = np.full((m, keys, 2), NIL, dtype=np.int64)
        self.free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
        self.nfree = np.array([capacity], dtype=np.int64)

    def _use_pool(self, ints: np.ndarray) -> None:
        self.ints = ints
        self.ts = ints.view(np.float64)[:, self.TS]

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "ts"}  # a view of ints

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._use_pool(self.ints)

    def size(self, s: int) -> int:
        """Tuples held for stream s."""
        return int(self.lists[s, 2])

    def _tuple(self, slot: int) -> Tuple:
        seq, event_id, key = self.ints[slot, :3].tolist()
        return (float(self.ts[slot]), seq, event_id, key)

    def reserve(self, n: int, keys: int) -> None:
        """Room for ``n`` more tuples and buckets for key codes below ``keys``."""
        m, k = self.buckets.shape[:2]
        if keys > k:
            buckets = np.full((m, max(2 * k, keys), 2), NIL, dtype=np.int64)
            buckets[:, :k] = self.buckets
            self.buckets = buckets
        nfree, cap = int(self.nfree[0]), len(self.ints)
        if n > nfree:
            new = max(2 * cap, cap + n - nfree)
            ints = _pool(new)
            ints[:cap] = self.ints
            self._use_pool(ints)
            added = np.arange(new - 1, cap - 1, -1, dtype=np.int64)
            rest = np.zeros(cap - nfree, np.int64)
            self.free = np.concatenate([self.free[:nfree], added, rest])
            self.nfree[0] = nfree + new - cap

    def _link(self, slot: int, ends: np.ndarray, older: int, newer: int) -> None:
        """Thread ``slot`` on a list whose (oldest, newest) are ``ends``, after the last
        element with ts <= its own (searched from the newest; Section 3.2.2; mirrors
        ``kernels.wjoin_store._link``)."""
        ts, ints = self.ts, self.ints
        after = int(ends[1])
        while after != NIL and ts[after] > ts[slot]:
            after = int(ints[after, older])
        nxt = int(ends[0]) if after == NIL else int(ints[after, newer])
        ints[slot, older], ints[slot, newer] = after, nxt
        if nxt == NIL:
            ends[1] = slot
        else:
            ints[nxt, older] = slot
        if after == NIL:
            ends[0] = slot
        else:
            ints[after, newer] = slot

    def insert(self, s: int, item: Tuple) -> None:
        """Add a tuple to its bucket and to the stream's time-ordered list (mirrors the hash
        branch of ``kernels.wjoin_store.insert``)."""
        key = item[3]
        if not self.nfree[0] or key >= self.buckets.shape[1]:
            self.reserve(1, key + 1)
        self.nfree[0] -= 1
        slot = int(self.free[self.nfree[0]])
        self.ts[slot] = item[0]
        self.ints[slot, :3] = item[1:]
        self._link(slot, self.lists[s], self.OLDER, self.NEWER)
        self._link(slot, self.buckets[s, key], self.B_OLDER, self.B_NEWER)
        self.lists[s, 2] += 1

    def scan(self, s: int, lo: float, hi: float, key: int) -> Visit:
        """The tuples of the key's bucket of stream s with ``lo <= ts <= hi`` (one probe):
        the bucket is walked from its oldest tuple, those older than ``lo`` visited outside
        the period, each one inside a comparison."""
        if key >= self.buckets.shape[1]:
            return Visit(0, [], 0)
        out, outside = [], 0
        slot = int(self.buckets[s, key, 0])
        while slot != NIL and self.ts[slot] <= hi:
            if self.ts[slot] >= lo:
                out.append(self._tuple(slot))
            else:
                outside += 1
            slot = int(self.ints[slot, self.B_NEWER])
        return Visit(len(out), out, len(out), outside)

    def test_each(self, s: int, lo: float, hi: float, key: int, bound: float) -> Visit:
        """The paper's hash probe (W-join Section 3.1.1): every tuple of the key's bucket of
        stream s tested against the period ``[lo, hi]`` (a comparison), each one older than
        the period against the expiry ``bound`` (a comparison) and unlinked if ``ts <
        bound``.  Mirrors the hash branch of ``kernels.wjoin_search._next_each``.

        >>> buf = HashBuffers(1)
        >>> for t in [(3.0, 0, 10, 1), (5.0, 1, 11, 2), (9.0, 2, 12, 1)]:
        ...     buf.insert(0, t)
        >>> visit = buf.test_each(0, 4.0, 9.0, key=1, bound=4.0)
        >>> visit.comparisons, [t[2] for t in visit.found], visit.dropped, buf.size(0)
        (3, [12], 1, 2)
        """
        if key >= self.buckets.shape[1]:
            return Visit(0, [], 0)
        tests, found, inside, outside, dropped = 0, [], 0, 0, 0
        slot = int(self.buckets[s, key, 0])
        while slot != NIL:
            after = int(self.ints[slot, self.B_NEWER])
            ts = float(self.ts[slot])
            tests += 1
            if lo <= ts <= hi:
                inside += 1
                found.append(self._tuple(slot))
            else:
                outside += 1
                if ts < lo:
                    tests += 1
                    if ts < bound:
                        self.remove(s, slot)
                        dropped += 1
            slot = after
        return Visit(tests, found, inside, outside, dropped)

    def newest_ts(self, s: int) -> float:
        """Stream s's newest timestamp; the buffer must hold a tuple (mirrors
        ``kernels.wjoin_store.newest_ts``)."""
        return float(self.ts[int(self.lists[s, 1])])

    def _unthread(self, ends: np.ndarray, slot: int, older: int, newer: int) -> None:
        """Take ``slot`` off a doubly linked list whose (oldest, newest) are ``ends`` (mirrors
        ``kernels.wjoin_store._unthread``)."""
        before, after = int(self.ints[slot, older]), int(self.ints[slot, newer])
        if before == NIL:
            ends[0] = after
        else:
            self.ints[before, newer] = after
        if after == NIL:
            ends[1] = before
        else:
            self.ints[after, older] = before

    def remove(self, s: int, slot: int) -> None:
        """Unlink one tuple of stream s from its list and its bucket, wherever it is (mirrors
        ``kernels.wjoin_store.unlink``)."""
        self._unthread(self.lists[s], slot, self.OLDER, self.NEWER)
        key = int(self.ints[slot, self.KEY])
        self._unthread(self.buckets[s, key], slot, self.B_OLDER, self.B_NEWER)
        self.lists[s, 2] -= 1
        self.free[self.nfree[0]] = slot
        self.nfree[0] += 1

    def oldest(self, s: int) -> Tuple | None:
        """Stream s's tuple with the smallest (ts, seq), if any."""
        slot = int(self.lists[s, 0])
        return None if slot == NIL else self._tuple(slot)

    def pop_oldest(self, s: int) -> Tuple:
        """Unlink stream s's oldest tuple from its list and from its bucket's head: O(1)
        (mirrors ``kernels.wjoin_store.pop_oldest``)."""
        slot = int(self.lists[s, 0])
        if slot == NIL:
            raise IndexError("pop from an empty buffer")
        item = self._tuple(slot)
        self.remove(s, slot)
        return item

    def drop_before(self, s: int, bound: float) -> int:
        """Expire every tuple of stream s with ``ts < bound``; return how many (mirrors
        ``kernels.wjoin_store.drop_before``)."""
        n = 0
        while (slot := int(self.lists[s, 0])) != NIL and self.ts[slot] < bound:
            self.pop_oldest(s)
            n += 1
        return n

    def stream(self, s: int) -> list[Tuple]:
        """Stream s's tuples, oldest first."""
        out, slot = [], int(self.lists[s, 0])
        while slot != NIL:
            out.append(self._tuple(slot))
            slot = int(self.ints[slot, self.NEWER])
        return out
