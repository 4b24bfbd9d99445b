"""LH, LL, RL, RH of a base interval in closed form, compiled (interval timing paper, Section
4.1): the crossing points of the satisfaction probability's bounds with the confidence ct, for
the per-event path (:func:`workbench.interval_bounds.bounds_tuple`) and the compiled interval
kernels alike.  :mod:`workbench.interval_bounds` explains the formula and holds its
vectorised twin.

>>> lh_ll_rl_rh(100.0, 120.0, 30.0, 0.5, 20.0)
(80.0, 90.0, 140.0, 150.0)
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["lh_ll_rl_rh"]


@njit(cache=True, nogil=True)
def lh_ll_rl_rh(lo, hi, d, ct, pi):
    """LH, LL, RL, RH of a base interval ``[lo, hi]`` (Section 4.1): the one home of the
    formula, called by :func:`~workbench.interval_bounds.bounds_tuple` and by the compiled
    interval kernels (:mod:`workbench.kernels.interval`)."""
    length = hi - lo
    lh = lo + ct * length - d
    if not d >= max(length, pi):
        return lh, hi - d + pi, lo + d, hi + d + pi
    small, large = min(length, pi), max(length, pi)
    corner = small / (2 * large)
    if ct <= corner:
        quantile = math.sqrt(2 * length * pi * ct)
    elif ct <= 1 - corner:
        quantile = ct * large + small / 2
    else:
        quantile = length + pi - math.sqrt(2 * length * pi * (1 - ct))
    return lh, lo - d + quantile, hi + d - ct * length, hi + d + pi - quantile
