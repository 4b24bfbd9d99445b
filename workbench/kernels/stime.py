"""The compiled search for satisfaction-time estimates (PTJoin paper, Section 3.1, after
Definition 8): per template pair, the configuration bounding the level is found by binary
search over the breakpoints inside the paper's quantile range, and its quadratic solved.

Writing ``f(x) = sum_kl w_kl * max(c_kl - x, 0)**2`` (``c`` the breakpoints, an edge of Hi
less an edge of Hj, ``w`` half the product of the density jumps there:
:mod:`workbench.stime_brackets`), f is non-increasing (Lemma 3).  With ``t_i`` the point where
``P(X_i <= t_i) = 1 - level`` and ``t_j`` where ``P(X_j <= t_j) = level``, f is at least the
level below ``max(min(Hi) - t_j, t_i - max(Hj))`` and at most the level above
``min(max(Hi) - t_j, t_i - min(Hj))``: only the breakpoints between bound the crossing, "which
efficiently prunes unnecessary configurations".  Where f sits at the level at an end of that
range (a flat stretch the crossing may extend past) every breakpoint is searched instead.
The estimates are certified afterwards (:func:`workbench.stime_brackets.stime_brackets`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stime_estimates"]


@njit(cache=True, nogil=True, _nrt=False)
def _f(c, w, m, x):
    """f(x): the sum over the breakpoints above x."""
    total = 0.0
    for k in range(m):
        d = c[k] - x
        if d > 0:
            total += w[k] * d * d
    return total


@njit(cache=True, nogil=True, _nrt=False)
def _holds(f, level, right, tol):
    """Whether f is on the satisfying side of the level (the crossing lies further right)."""
    return f >= level - tol if right else f > level + tol


@njit(cache=True, nogil=True, _nrt=False)
def _bounding(b, n, c, w, m, level, right, tol):
    """The index k with the crossing in ``[b[k], b[k+1]]`` (sorted candidates ``b[:n]``,
    ``b[0]`` on the satisfying side, ``b[n-1]`` not), by binary search."""
    lo, hi = 0, n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _holds(_f(c, w, m, b[mid]), level, right, tol):
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def stime_estimates(
    ea, ja, eb, jb, t_i, t_j, level, right, tol, time_tol, eps_sum, start, stop, out, fprime,
    flagged, ck_out, ck1_out,
):  # fmt: skip
    """Estimates of x* (``out``) and |f'(x*)| (``fprime``) for pairs ``start..stop`` (flat,
    u-major over ``len(eb)`` templates of Hj); ``flagged`` where the rounding of f near the
    root could move x* by more than ``time_tol`` (its configuration in ``ck_out``,
    ``ck1_out``).  Edges are local (each template's max at 0); ``ja`` enters negated."""
    n_b = eb.shape[0]
    terms = ea.shape[1] * eb.shape[1]
    c, w = np.empty(terms), np.empty(terms)
    b = np.empty(terms + 2)
    for pair in range(start, stop):
        u, v = pair // n_b, pair % n_b
        m = 0
        for k in range(ea.shape[1]):
            if ja[u, k] == 0.0:
                continue
            for j in range(eb.shape[1]):
                if jb[v, j] != 0.0:
                    c[m] = ea[u, k] - eb[v, j]
                    w[m] = 0.5 * ja[u, k] * jb[v, j]
                    m += 1
        # the paper's range (max(Hi) = max(Hj) = 0 here)
        x_lo = max(t_i[u], ea[u, 0] - t_j[v])
        x_hi = min(-t_j[v], t_i[u] - eb[v, 0])
        n = 0
        if x_lo < x_hi:
            b[0] = x_lo
            n = 1
            for k in range(m):
                if x_lo < c[k] < x_hi:
                    b[n] = c[k]
                    n += 1
            b[n] = x_hi
            n += 1
            b[1 : n - 1].sort()
            ok = _holds(_f(c, w, m, x_lo), level, right, tol)
            if not ok or _holds(_f(c, w, m, x_hi), level, right, tol):
                n = 0  # at the level at an end of the range: search every breakpoint
        if n == 0:
            b[:m] = c[:m]
            b[:m].sort()
            n = m
            if n < 2 or not _holds(_f(c, w, m, b[0]), level, right, tol):
                lo = 0
            elif _holds(_f(c, w, m, b[n - 1]), level, right, tol):
                lo = n - 2
            else:
                lo = _bounding(b, n, c, w, m, level, right, tol)
        else:
            lo = _bounding(b, n, c, w, m, level, right, tol)
        ck, ck1 = b[lo], b[min(lo + 1, n - 1)]
        # f(ck + y) = a1 y^2 - 2 slope y + fk on [ck, ck1], summed around ck (keeps the digits)
        slope = fk = a1 = rounding = 0.0
        for k in range(m):
            d = c[k] - ck
            if d > 0:
                a1 += w[k]
                slope += w[k] * d
                fk += w[k] * d * d
                rounding += abs(w[k] * d * d)
        rounding *= eps_sum
        gap = fk - level if fk - level > tol else 0.0
        denom = slope + np.sqrt(max(slope * slope - a1 * gap, 0.0))
        y = gap / denom if denom > 0 else 0.0
        y = min(max(y, 0.0), ck1 - ck)
        out[pair] = ck + y
        fprime[pair] = 2 * abs(slope - a1 * y)
        flagged[pair] = rounding > time_tol * fprime[pair]
        ck_out[pair], ck1_out[pair] = ck, ck1
