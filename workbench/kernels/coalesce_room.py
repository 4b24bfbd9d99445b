"""How the coalescing window extents size their arrays: one rule for the Python reference
(:mod:`workbench.coalesce.extent`, :mod:`workbench.coalesce.order`) and the compiled kernels
(:mod:`workbench.kernels.coalesce`), so that what an extent allocates follows what its window
holds (coalescing paper, Section 3.2 and Section 6.1.1's memory costs, Eqs. 1-2).

Every array of an extent grows to ``GROWTH`` times what it must hold when it is full, and shrinks
to that once it holds less than ``1 / SHRINK_BELOW`` of its room, never below ``MIN_ROOM``
rows: both amortised (a resize copies what is held, and the next one waits until that much has
arrived or left).

The eager extent's timestamp vectors share one pool, filled from its top: a vector that needs
room and does not end the pool's used part moves to the top with room to spare
(:func:`moved_room`), leaving its old entries dead, as a detach leaves the entry it drops.  A
row that finds too little room at the top (:func:`row_need`) compacts the pool when the dead
entries (and the vectors' spare room) exceed ``DEAD_PER_LIVE`` times the live ones
(:func:`compacts`), else the pool grows to room for as many dead entries and what the row
needs (:func:`pool_room`); the kernel cannot grow an array, so it stops at that row and the
caller grows the pool and calls it again from there.  A moved vector gets one spare entry per
``SPARE_PER_ENTRY`` of its entries, and a compaction keeps it at most as many
(:func:`kept_room`): enough that long vectors need not move again at once, little enough that
the next compaction waits until that many entries have been taken (both amortised).

The paper's array extent (:mod:`workbench.kernels.coalesce_array`) keeps no spare room in its
vectors and no dead entries: a full vector moves to the pool's top with ``GROWTH`` times the
room, the tuple array and the pool grow to ``GROWTH`` times what they must hold and shrink once
they hold less than ``1 / SHRINK_BELOW`` of it (:func:`array_row_need`, ``SPARE_TUPLES``), the
pool compacted on the way.

The kernels compile these constants in, and numba's on-disk cache follows only the file of
the function it caches: ``./dev setup`` empties the kernels' cache whenever any file of
``workbench/kernels/`` changes; outside it, delete ``workbench/kernels/__pycache__/*.nbi`` and
``*.nbc`` after changing a constant here.

>>> grown(100), shrinks(1000, 200), shrinks(1000, 300)
(200, True, False)
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "DEAD_PER_LIVE",
    "GROWTH",
    "MIN_ROOM",
    "SHRINK_BELOW",
    "SPARE_PER_ENTRY",
    "SPARE_TUPLES",
    "array_row_need",
    "compacts",
    "grown",
    "kept_room",
    "moved_room",
    "pool_room",
    "row_need",
    "shrinks",
    "vector_need",
]

MIN_ROOM = 16
"""Rows of every array of an empty extent, and the least any array shrinks to."""
GROWTH = 2
"""An array that must grow, or may shrink, gets this many times the rows it must hold."""
SHRINK_BELOW = 4
"""An array shrinks once it holds less than ``1 / SHRINK_BELOW`` of its rows."""
DEAD_PER_LIVE = 1
"""The vector pool compacts (rather than grows) once its dead entries exceed this many per live
one: a compaction moves the live entries, paid for by at least as many entries allocated."""
SPARE_PER_ENTRY = 2
"""A moved vector gets, and a compaction keeps it, one spare entry per this many entries."""
SPARE_TUPLES = 3
"""Free slots the array extent's tuple array keeps past its live tuples before a row (a split
or an add takes one, the shifts hold a tuple in the slots past the end meanwhile)."""


def grown(held: int) -> int:
    """The rows of an array that must hold ``held`` rows (grown, or shrunk to fit)."""
    return max(MIN_ROOM, GROWTH * held)


def pool_room(live: int, need: int) -> int:
    """The entries of a vector pool grown (or shrunk) to hold ``live`` entries in vectors and
    ``need`` more at its top: ``DEAD_PER_LIVE`` dead entries per live one fit before it compacts
    again, so a row that needs no more than this one compacts rather than grows.

    >>> pool_room(1000, 30)
    2030
    """
    return max(MIN_ROOM, (1 + DEAD_PER_LIVE) * live + need)


def shrinks(size: int, held: int) -> bool:
    """Whether an array of ``size`` rows holding ``held`` of them shrinks (to ``grown(held)``)."""
    return size > MIN_ROOM and SHRINK_BELOW * held < size


@njit(cache=True, nogil=True)
def kept_room(length, cap):
    """The room a compaction leaves a vector of ``length`` entries that had ``cap`` (scalars,
    or arrays of vectors)."""
    return np.minimum(cap, length + length // SPARE_PER_ENTRY)


@njit(cache=True, nogil=True, _nrt=False)
def moved_room(length, need):
    """The room of a vector of ``length`` entries moved to the pool's top to hold ``need``."""
    return max(need, length + (length + 1) // SPARE_PER_ENTRY)


@njit(cache=True, nogil=True, _nrt=False)
def vector_need(c, extra, c_start, c_len, c_cap, top):
    """Pool entries the vector of coalesced tuple ``c`` takes to grow by ``extra`` entries: none
    within its room, the missing ones when it ends the pool's used part (``top``), else a move to
    the top (bounded by ``moved_room`` of the grown vector, which also covers a second growth in
    place right after the move)."""
    if c < 0 or c_cap[c] >= c_len[c] + extra:
        return 0
    if c_start[c] + c_cap[c] == top:
        return c_len[c] + extra - c_cap[c]
    return moved_room(c_len[c] + extra, c_len[c] + extra)


@njit(cache=True, nogil=True, _nrt=False)
def row_need(c, p, right, c_start, c_len, c_cap, top):
    """Pool entries one arrival may take (Algorithm 2 with Appendix A's functions), given the
    coalesced tuple ``c`` its timestamp lands in or after (-1: before all of its group's), its
    place ``p`` in ``c``'s vector and ``right`` the group's next tuple: inside ``c``, a merge
    into ``c`` or a split (the vector's tail copied, then one entry); else a merge at ``c``'s end
    bridging to ``right``, a merge at ``right``'s front, or a new tuple of one entry."""
    if c >= 0 and p < c_len[c]:
        return max(vector_need(c, 1, c_start, c_len, c_cap, top), c_len[c] - p + 1)
    bridge = c_len[right] if right >= 0 else 0
    return (
        vector_need(c, 1 + bridge, c_start, c_len, c_cap, top)
        + vector_need(right, 1, c_start, c_len, c_cap, top)
        + 1
    )


@njit(cache=True, nogil=True, _nrt=False)
def compacts(size, top, live, need):
    """Whether a pool of ``size`` entries used up to ``top``, ``live`` of them in vectors, is
    compacted before a row that needs ``need`` entries: when the room at the top is short and
    the dead entries exceed ``DEAD_PER_LIVE`` per live one."""
    return size - top < need and top - live > DEAD_PER_LIVE * live


@njit(cache=True, nogil=True, _nrt=False)
def array_row_need(longest):
    """The free pool entries a row of the array extent may use when no vector is longer than
    ``longest``: a merge that bridges two tuples grows a vector to twice ``longest + 1``, then to
    twice ``2 * longest + 1``; a split copies at most ``longest`` entries and grows the copy to
    twice ``longest + 1`` (the caller compacts or grows the pool below this).

    >>> array_row_need(10)
    68
    """
    return 6 * longest + 8
