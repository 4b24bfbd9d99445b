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

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["StimeInputs", "StimeOutputs", "StimeParams", "stime_estimates"]


class StimeInputs(NamedTuple):
    """The template pairs' local edges (each template's max at 0) and density jumps per
    template of Hi (``ea``, ``ja``, the jump negated) and of Hj (``eb``, ``jb``), one row per
    template, and the quantile points ``t_i``, ``t_j`` bounding the paper's range."""

    ea: np.ndarray
    ja: np.ndarray
    eb: np.ndarray
    jb: np.ndarray
    t_i: np.ndarray
    t_j: np.ndarray


class StimeParams(NamedTuple):
    """The level searched, whether x* is the right crossing, the level's tolerance, the time
    tolerance a rounding may move x* by, and the relative rounding of a sum of f's terms."""

    level: float
    right: bool
    tol: float
    time_tol: float
    eps_sum: float


class StimeOutputs(NamedTuple):
    """Per pair (flat, u-major): x*, |f'(x*)|, whether rounding could move x* by more than
    ``time_tol``, and the bounding configuration ``[ck, ck1]``."""

    x: np.ndarray
    fprime: np.ndarray
    flagged: np.ndarray
    ck: np.ndarray
    ck1: np.ndarray


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


@njit(cache=True, nogil=True, _nrt=False)
def _breakpoints(inputs, u, v, c, w):
    """Fill ``c`` and ``w`` with the pair's breakpoints and weights (every edge of Hi less
    every edge of Hj with both jumps nonzero); how many."""
    ea, ja, eb, jb = inputs.ea, inputs.ja, inputs.eb, inputs.jb
    m = 0
    for k in range(ea.shape[1]):
        if ja[u, k] == 0.0:
            continue
        for j in range(eb.shape[1]):
            if jb[v, j] != 0.0:
                c[m] = ea[u, k] - eb[v, j]
                w[m] = 0.5 * ja[u, k] * jb[v, j]
                m += 1
    return m


@njit(cache=True, nogil=True)
def _in_range(inputs, u, v, c, w, m, b, params):
    """The candidates inside the paper's range (max(Hi) = max(Hj) = 0 here), sorted in
    ``b``, and the index bounding the crossing; ``(0, 0)`` when the range is empty or f sits
    at the level at one of its ends (then every breakpoint is searched instead)."""
    level, right, tol = params.level, params.right, params.tol
    x_lo = max(inputs.t_i[u], inputs.ea[u, 0] - inputs.t_j[v])
    x_hi = min(-inputs.t_j[v], inputs.t_i[u] - inputs.eb[v, 0])
    if not x_lo < x_hi:
        return 0, 0
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
        return 0, 0
    return n, _bounding(b, n, c, w, m, level, right, tol)


@njit(cache=True, nogil=True)
def _all_breakpoints(c, w, m, b, params):
    """Every breakpoint sorted in ``b`` and the index bounding the crossing (clamped to the
    ends where f does not cross between them); how many and the index."""
    level, right, tol = params.level, params.right, params.tol
    b[:m] = c[:m]
    b[:m].sort()
    if m < 2 or not _holds(_f(c, w, m, b[0]), level, right, tol):
        return m, 0
    if _holds(_f(c, w, m, b[m - 1]), level, right, tol):
        return m, m - 2
    return m, _bounding(b, m, c, w, m, level, right, tol)


@njit(cache=True, nogil=True, _nrt=False)
def _solve(c, w, m, ck, ck1, params, outputs, pair):
    """x* in ``[ck, ck1]`` from the quadratic ``f(ck + y) = a1 y^2 - 2 slope y + fk``, summed
    around ck (keeps the digits), with |f'(x*)| and the rounding flag, into ``outputs``."""
    slope = fk = a1 = rounding = 0.0
    for k in range(m):
        d = c[k] - ck
        if d > 0:
            a1 += w[k]
            slope += w[k] * d
            fk += w[k] * d * d
            rounding += abs(w[k] * d * d)
    rounding *= params.eps_sum
    gap = fk - params.level if fk - params.level > params.tol else 0.0
    denom = slope + np.sqrt(max(slope * slope - a1 * gap, 0.0))
    y = gap / denom if denom > 0 else 0.0
    y = min(max(y, 0.0), ck1 - ck)
    outputs.x[pair] = ck + y
    outputs.fprime[pair] = 2 * abs(slope - a1 * y)
    outputs.flagged[pair] = rounding > params.time_tol * outputs.fprime[pair]
    outputs.ck[pair], outputs.ck1[pair] = ck, ck1


@njit(cache=True, nogil=True)
def stime_estimates(inputs, params, start, stop, outputs):
    """Estimates of x* and |f'(x*)| for pairs ``start..stop`` (flat, u-major over the
    templates of Hj) into ``outputs``, flagged where the rounding of f near the root could
    move x* by more than ``time_tol`` (with its configuration; the caller,
    ``workbench.stime_brackets._stime_estimates``, solves those again from Lemma 1's values)."""
    n_b = inputs.eb.shape[0]
    terms = inputs.ea.shape[1] * inputs.eb.shape[1]
    c, w = np.empty(terms), np.empty(terms)
    b = np.empty(terms + 2)
    for pair in range(start, stop):
        u, v = pair // n_b, pair % n_b
        m = _breakpoints(inputs, u, v, c, w)
        n, lo = _in_range(inputs, u, v, c, w, m, b, params)
        if n == 0:
            n, lo = _all_breakpoints(c, w, m, b, params)
        _solve(c, w, m, b[lo], b[min(lo + 1, n - 1)], params, outputs, pair)
