"""Join buffers of the multi-way window join (W-join paper, Sections 3.1.1 and 3.2.2).

Both keep one stream's tuples in timestamp order (ties in arrival order) so the oldest tuple
leaves first in O(1):

- :class:`FifoBuffer`, the nested-loop implementation: one ordered queue, scanned over a
  time range.
- :class:`HashBuffer`, the hash implementation: a hash table on the join key whose buckets
  keep their tuples in order, threaded on one doubly linked list in timestamp order, so expiry
  unlinks the list's head and its bucket's head.

A tuple is ``(ts, seq, id, value)``: ``seq`` is its arrival number.  Delayed tuples are
inserted at their place, searching from the newest end (the delay bound keeps that short).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterator

__all__ = ["FifoBuffer", "HashBuffer", "Tuple"]

Tuple = tuple[float, int, int, Hashable]
"""One stream tuple: (ts, seq, id, value)."""


class _Ordered:
    """A list of tuples in (ts, seq) order with a moving head (dropping the oldest is O(1))."""

    __slots__ = ("head", "items", "ts")

    def __init__(self) -> None:
        self.ts: list[float] = []
        self.items: list[Tuple] = []
        self.head = 0

    def __len__(self) -> int:
        return len(self.items) - self.head

    def insert(self, item: Tuple) -> None:
        pos = bisect_right(self.ts, item[0], lo=self.head)  # equal ts: after, in arrival order
        self.ts.insert(pos, item[0])
        self.items.insert(pos, item)

    def range(self, lo: float, hi: float) -> list[Tuple]:
        i = bisect_left(self.ts, lo, lo=self.head)
        j = bisect_right(self.ts, hi, lo=i)
        return self.items[i:j]

    def oldest(self) -> Tuple | None:
        return self.items[self.head] if self.head < len(self.items) else None

    def pop_oldest(self) -> Tuple:
        item = self.items[self.head]
        self.head += 1
        if self.head > 64 and self.head * 2 > len(self.items):  # compact now and then
            del self.ts[: self.head]
            del self.items[: self.head]
            self.head = 0
        return item

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self.items[self.head :])


class FifoBuffer:
    """Nested-loop join buffer: one ordered FIFO queue of a stream's tuples.

    >>> buf = FifoBuffer()
    >>> for t in [(5.0, 0, 10, "x"), (3.0, 1, 11, "y"), (9.0, 2, 12, "x")]:
    ...     buf.insert(t)
    >>> [t[2] for t in buf.candidates(4.0, 9.0, None)]
    [10, 12]
    >>> buf.drop_before(4.0), len(buf)
    (1, 2)
    """

    def __init__(self) -> None:
        self._queue = _Ordered()

    def __len__(self) -> int:
        return len(self._queue)

    def insert(self, item: Tuple) -> None:
        """Add a tuple at its timestamp position."""
        self._queue.insert(item)

    def candidates(self, lo: float, hi: float, key: Hashable | None) -> list[Tuple]:
        """Every tuple with ``lo <= ts <= hi`` (the key is not used: the caller tests it)."""
        return self._queue.range(lo, hi)

    def oldest(self) -> Tuple | None:
        """The tuple with the smallest (ts, seq), if any."""
        return self._queue.oldest()

    def pop_oldest(self) -> Tuple:
        """Remove and return the oldest tuple."""
        return self._queue.pop_oldest()

    def drop_before(self, bound: float) -> int:
        """Expire every tuple with ``ts < bound``; return how many."""
        n = 0
        while (oldest := self._queue.oldest()) is not None and oldest[0] < bound:
            self._queue.pop_oldest()
            n += 1
        return n

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self._queue)


class _Node:
    __slots__ = ("item", "newer", "older")

    def __init__(self, item: Tuple) -> None:
        self.item = item
        self.older: _Node | None = None
        self.newer: _Node | None = None


class HashBuffer:
    """Hash join buffer: buckets by key, each in order, on one time-ordered linked list.

    >>> buf = HashBuffer()
    >>> for t in [(5.0, 0, 10, "x"), (3.0, 1, 11, "y"), (9.0, 2, 12, "x")]:
    ...     buf.insert(t)
    >>> [t[2] for t in buf.candidates(0.0, 9.0, "x")]
    [10, 12]
    >>> buf.drop_before(6.0), [t[2] for t in buf]
    (2, [12])
    """

    def __init__(self) -> None:
        self._buckets: dict[Hashable, _Ordered] = {}
        self._oldest: _Node | None = None
        self._newest: _Node | None = None
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def insert(self, item: Tuple) -> None:
        """Add a tuple to its bucket and to the time-ordered list (searched from the newest)."""
        self._buckets.setdefault(item[3], _Ordered()).insert(item)
        node = _Node(item)
        after = self._newest
        while after is not None and (after.item[0], after.item[1]) > (item[0], item[1]):
            after = after.older
        node.older = after
        node.newer = self._oldest if after is None else after.newer
        if node.newer is None:
            self._newest = node
        else:
            node.newer.older = node
        if after is None:
            self._oldest = node
        else:
            after.newer = node
        self._n += 1

    def candidates(self, lo: float, hi: float, key: Hashable | None) -> list[Tuple]:
        """The tuples of the key's bucket with ``lo <= ts <= hi`` (one probe)."""
        bucket = self._buckets.get(key)
        return [] if bucket is None else bucket.range(lo, hi)

    def oldest(self) -> Tuple | None:
        """The tuple with the smallest (ts, seq), if any."""
        return None if self._oldest is None else self._oldest.item

    def pop_oldest(self) -> Tuple:
        """Unlink the oldest tuple from the list and from its bucket's head: O(1)."""
        node = self._oldest
        if node is None:
            raise IndexError("pop from an empty buffer")
        self._oldest = node.newer
        if self._oldest is None:
            self._newest = None
        else:
            self._oldest.older = None
        bucket = self._buckets[node.item[3]]
        bucket.pop_oldest()
        if not len(bucket):
            del self._buckets[node.item[3]]
        self._n -= 1
        return node.item

    def drop_before(self, bound: float) -> int:
        """Expire every tuple with ``ts < bound``; return how many."""
        n = 0
        while self._oldest is not None and self._oldest.item[0] < bound:
            self.pop_oldest()
            n += 1
        return n

    def __iter__(self) -> Iterator[Tuple]:
        node = self._oldest
        while node is not None:
            yield node.item
            node = node.newer

    def __getstate__(self) -> list[Tuple]:
        return list(self)  # flat: pickling the linked list node by node would recurse

    def __setstate__(self, items: list[Tuple]) -> None:
        self.__init__()
        for item in items:
            self.insert(item)
