"""Max-time sorted stream buffers and the index ranges of partitions in them (PTJoin Section
3.2; interval timing Section 4.2): binary-searched SR/PR/VR slices, their rounding margins and
the expansion of many slices into (arrival, partner) index pairs."""

from __future__ import annotations

import numpy as np

from workbench.decision import UNIT_ROUNDOFF

__all__ = [
    "SortedBuffer",
    "expand_ranges",
    "kernel_state",
    "partition_slice",
    "partition_slices",
    "rounding_margin",
    "set_windows",
    "widen",
]


class SortedBuffer:
    """A stream buffer kept in ascending max-time order (PTJoin Section 3.2).

    A window ``[start, end)`` of preallocated columns: obsolete events leave from the front in
    O(1), an arrival is inserted by binary search, shifting only the later events (few, since
    arrivals are nearly in order).  With ``keep_sorted=False`` it appends in arrival order
    (the Simple algorithm) and evicts by mask.

    >>> buf = SortedBuffer()
    >>> for i, t in enumerate([5.0, 3.0, 9.0]):
    ...     buf.insert(i, 0, t, t - 1)
    >>> buf.tmax.tolist(), buf.ids.tolist()
    ([3.0, 5.0, 9.0], [1, 0, 2])
    >>> buf.evict_before(4.0), buf.ids.tolist()
    (1, [0, 2])
    """

    def __init__(self, keep_sorted: bool = True, capacity: int = 1024) -> None:
        self.keep_sorted = keep_sorted
        self._ids = np.empty(capacity, dtype=np.int64)
        self._tmpl = np.empty(capacity, dtype=np.int64)
        self._tmax = np.empty(capacity, dtype=np.float64)
        self._tmin = np.empty(capacity, dtype=np.float64)
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    @property
    def ids(self) -> np.ndarray:
        """Event ids, in buffer order."""
        return self._ids[self._start : self._end]

    @property
    def templates(self) -> np.ndarray:
        """Template indices, in buffer order."""
        return self._tmpl[self._start : self._end]

    @property
    def tmax(self) -> np.ndarray:
        """max(H) of every event (its detection time), ascending when sorted."""
        return self._tmax[self._start : self._end]

    @property
    def tmin(self) -> np.ndarray:
        """min(H) of every event."""
        return self._tmin[self._start : self._end]

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self._ids, self._tmpl, self._tmax, self._tmin)

    @property
    def window(self) -> tuple[int, int]:
        """The live window ``[start, end)`` of the preallocated columns."""
        return self._start, self._end

    @window.setter
    def window(self, bounds: tuple[int, int]) -> None:
        self._start, self._end = bounds

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more events after the live window (kernels insert in place)."""
        n = len(self)
        if self._end + extra <= self._ids.size:
            return
        capacity = self._ids.size
        if n + extra > capacity // 2:
            capacity = max(2 * capacity, n + extra)
        for name in ("_ids", "_tmpl", "_tmax", "_tmin"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[:n] = old[self._start : self._end]
            setattr(self, name, new)
        self._start, self._end = 0, n

    def insert(self, event_id: int, template: int, tmax: float, tmin: float) -> None:
        """Add one event at its max-time position (after equal max times)."""
        self.reserve(1)
        pos = self._end
        if self.keep_sorted:
            pos = self._start + int(np.searchsorted(self.tmax, tmax, side="right"))
            if pos < self._end:
                for col in self._columns():
                    col[pos + 1 : self._end + 1] = col[pos : self._end]
        self._ids[pos], self._tmpl[pos] = event_id, template
        self._tmax[pos], self._tmin[pos] = tmax, tmin
        self._end += 1

    def insert_many(
        self, ids: np.ndarray, templates: np.ndarray, tmax: np.ndarray, tmin: np.ndarray
    ) -> None:
        """Add a block of events, keeping the order (one merge instead of many inserts; mirrors
        kernels.interval._merge_block)."""
        n_new = int(ids.size)
        if n_new == 0:
            return
        n = len(self)
        self.reserve(n_new)
        lo, hi = self._start, self._end + n_new
        merged = (
            np.concatenate((self.ids, ids)),
            np.concatenate((self.templates, templates)),
            np.concatenate((self.tmax, tmax)),
            np.concatenate((self.tmin, tmin)),
        )
        order = np.argsort(merged[2], kind="stable") if self.keep_sorted else slice(None)
        for col, values in zip(self._columns(), merged, strict=True):
            col[lo:hi] = values[order]
        self._end = self._start + n + n_new

    def evict_before(self, bound: float) -> int:
        """Drop every event with max time below ``bound``; return how many left."""
        if self.keep_sorted:
            k = int(np.searchsorted(self.tmax, bound, side="left"))
            self._start += k
            return k
        keep = self.tmax >= bound
        k = int(keep.size - np.count_nonzero(keep))
        if k:
            n = int(keep.size) - k
            for col in self._columns():
                col[self._start : self._start + n] = col[self._start : self._end][keep]
            self._end = self._start + n
        return k

    def clear(self) -> int:
        """Drop everything; return how many left."""
        n = len(self)
        self._start = self._end = 0
        return n


def partition_slices(
    tmax: np.ndarray, lh: np.ndarray, ll: np.ndarray, rl: np.ndarray, rh: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Index bounds ``(i_lh, i_sr, j_sr, j_rh)`` of partitions in an ascending ``tmax``.

    LPR is ``[i_lh, i_sr)``, SR ``[i_sr, j_sr)``, RPR ``[j_sr, j_rh)`` with the conventions of
    :class:`~workbench.partitions.Partitions` (``LPR = [lh, ll)``, ``SR = [ll, rl]``,
    ``RPR = (rl, rh]``); an empty SR (``ll > rl``) leaves one probing range, never a pair
    counted twice.  Vectorised over many arriving events.

    >>> partition_slices(np.array([0., 1., 2., 3., 4., 5.]), np.array([1.]), np.array([2.]),
    ...                  np.array([3.]), np.array([4.]))
    (array([1]), array([2]), array([4]), array([5]))
    """
    i_lh = np.searchsorted(tmax, lh, side="left")
    i_sr = np.searchsorted(tmax, ll, side="left")
    j_sr = np.maximum(np.searchsorted(tmax, rl, side="right"), i_sr)
    j_rh = np.maximum(np.searchsorted(tmax, rh, side="right"), j_sr)
    return i_lh, np.maximum(i_sr, i_lh), j_sr, j_rh


def partition_slice(
    tmax: np.ndarray, lh: float, ll: float, rl: float, rh: float
) -> tuple[int, int, int, int]:
    """:func:`partition_slices` for one arriving event, as plain ints (the per-event path)."""
    i_lh, i_sr = (int(x) for x in tmax.searchsorted((lh, ll), side="left"))
    j_sr, j_rh = (int(x) for x in tmax.searchsorted((rl, rh), side="right"))
    j_sr = max(j_sr, i_sr)
    return i_lh, max(i_sr, i_lh), j_sr, max(j_rh, j_sr)


def widen(lh: float, ll: float, rl: float, rh: float, margin: float) -> tuple[float, ...]:
    """Partition bounds moved outwards by ``margin`` (probing ranges grow, SR and VR shrink),
    so bounds computed in floats never put a pair in SR or VR that belongs in a probing range.

    >>> widen(0.0, 10.0, 20.0, 30.0, 1.0)
    (-1.0, 11.0, 19.0, 31.0)
    """
    return lh - margin, ll + margin, rl - margin, rh + margin


def rounding_margin(*magnitudes: float) -> float:
    """A bound on the rounding of a few float operations over numbers of these magnitudes.

    >>> rounding_margin(1e12, 100.0) > 1e-4
    True
    """
    return 16 * UNIT_ROUNDOFF * sum(abs(float(m)) for m in magnitudes)


def expand_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All ``(k, i)`` with ``starts[k] <= i < ends[k]``, as two aligned index arrays.

    >>> [a.tolist() for a in expand_ranges(np.array([0, 5]), np.array([2, 8]))]
    [[0, 0, 1, 1, 1], [0, 1, 5, 6, 7]]
    """
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.maximum(np.asarray(ends, dtype=np.int64) - starts, 0)
    owner = np.repeat(np.arange(lengths.size), lengths)
    first = np.cumsum(lengths) - lengths
    return owner, np.arange(int(lengths.sum())) - first[owner] + starts[owner]


def kernel_state(buffers: tuple[SortedBuffer, SortedBuffer]) -> tuple[object, ...]:
    """Two buffers as the compiled kernels take them: the preallocated columns, each as the
    pair (A, B) in the order ids, templates, max times, min times, then the live windows
    ``[start_A, end_A, start_B, end_B]`` (kernels move them; :func:`set_windows`)."""
    a, b = buffers
    columns = tuple(zip(a._columns(), b._columns(), strict=True))
    return (*columns, np.array([*a.window, *b.window], dtype=np.int64))


def set_windows(buffers: tuple[SortedBuffer, SortedBuffer], windows: np.ndarray) -> None:
    """Give two buffers the live windows a kernel left (``[start_A, end_A, start_B, end_B]``)."""
    for buf, bounds in zip(buffers, windows.reshape(2, 2).tolist(), strict=True):
        buf.window = tuple(bounds)
