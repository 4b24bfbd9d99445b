"""Compiled primitives of max-time sorted stream buffers (PTJoin Section 3.2): insertion at
the max-time position, eviction of an obsolete prefix, and growable result arrays.

A buffer is the four preallocated columns of :class:`~workbench.operators.buffers.
SortedBuffer` (ids, templates, max times, min times) with its live window ``[start, end)``;
the caller makes room before a kernel runs, so kernels never reallocate a buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["evict_before", "grow", "insert_sorted", "partition_window"]


@njit(cache=True, nogil=True)
def insert_sorted(ids, tmpl, tmax, tmin, start, end, event_id, template, t_max, t_min):
    """Insert one event after the equal max times of ``[start, end)``; the new end."""
    pos = start + np.searchsorted(tmax[start:end], t_max, side="right")
    for k in range(end, pos, -1):  # few: arrivals are nearly in max-time order
        ids[k] = ids[k - 1]
        tmpl[k] = tmpl[k - 1]
        tmax[k] = tmax[k - 1]
        tmin[k] = tmin[k - 1]
    ids[pos] = event_id
    tmpl[pos] = template
    tmax[pos] = t_max
    tmin[pos] = t_min
    return end + 1


@njit(cache=True, nogil=True)
def evict_before(tmax, start, end, bound):
    """The new start once every event with max time below ``bound`` has left."""
    return start + np.searchsorted(tmax[start:end], bound, side="left")


@njit(cache=True, nogil=True)
def grow(array, used, extra):
    """``array`` with room for ``extra`` more rows after ``used`` (doubled when full)."""
    if used + extra <= array.shape[0]:
        return array
    bigger = np.empty((max(2 * array.shape[0], used + extra),) + array.shape[1:], array.dtype)
    bigger[:used] = array[:used]
    return bigger


@njit(cache=True, nogil=True, inline="always")
def partition_window(tmax, start, end, lh, ll, rl, rh):
    """:func:`~workbench.operators.buffers.partition_slice` on the live window ``[start, end)``
    of a max-time sorted column, as absolute indices ``(i_lh, i_sr, j_sr, j_rh)`` (PTJoin
    Section 3.2; interval timing Section 4.2's binary searches)."""
    live = tmax[start:end]
    i_lh = start + np.searchsorted(live, lh, side="left")
    i_sr = start + np.searchsorted(live, ll, side="left")
    j_sr = max(start + np.searchsorted(live, rl, side="right"), i_sr)
    j_rh = max(start + np.searchsorted(live, rh, side="right"), j_sr)
    return i_lh, max(i_sr, i_lh), j_sr, j_rh
