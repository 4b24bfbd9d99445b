"""Compiled float band probability with its proven error bound (PTJoin Section 2.2, Lemma 1
/ Eq. 1; the certified fast path of :mod:`workbench.decision`).

One pair at a time, no allocation (compiled without reference counting, ``_nrt=False``:
callers pass every output array): ``ge(A + shift, B) = P(Xa + shift >= Xb)`` by Eq. 1 in
closed form in local coordinates (each template's max at 0), ``sum_u p_u (G(i2) - G(i1)) /
len(I_u)`` with ``G`` the integral of the other template's CDF, read from its table at that
template's edges (:func:`cdf_tables`) and one merge walk of the two edge lists
(:func:`ge_walk`); and the error bound of :mod:`workbench.decision`'s module docstring.  This
is the only float implementation: :class:`~workbench.decision.BandDecider`, the stime
brackets and the PTJoin kernels all call it, so the python and compiled engines see the same
bits.

A template pack is ``(edges, probs, buckets, bound terms, tables)``
(:class:`~workbench.decision.LocalTemplates`): rows of padded edges and probabilities, the
bucket counts, the bound's quantities (length, density sum, narrowest live bucket; (3, N))
and each template's CDF tables in local coordinates ((3, N, K + 1), :func:`cdf_tables`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "band_many",
    "band_pair",
    "cdf_tables",
    "ge_bound_many",
    "ge_bound_pair",
    "ge_many",
    "ge_over_b",
    "ge_pair",
    "ge_walk",
    "tables_many",
]

_U = 2.0**-53  # UNIT_ROUNDOFF of workbench.decision


@njit(cache=True, nogil=True, inline="always")
def cdf_tables(e, p, row, n, shift, tables, out):
    """At each edge ``c`` of histogram ``row`` moved by ``shift``: its CDF, the integral G of
    its CDF (trapezoids) and half its density on bucket ``c`` (0 past the last edge), written
    to ``tables[0:3, out, c]``."""
    below = area = 0.0
    tables[0, out, 0] = 0.0
    tables[1, out, 0] = 0.0
    base = e[row, 0] + shift
    for c in range(n):
        edge = e[row, c + 1] + shift
        width = edge - base
        tables[2, out, c] = 0.5 * (p[row, c] / width) if width > 0 else 0.0
        nxt = below + p[row, c]
        area = area + 0.5 * (nxt + below) * width
        below = nxt
        tables[0, out, c + 1] = below
        tables[1, out, c + 1] = area
        base = edge
    tables[2, out, n] = 0.0


@njit(cache=True, nogil=True, inline="always")
def ge_walk(ei, pi, row_i, ni, si, ej, row_j, nj, sj, tables, out):
    """Eq. 1 for Hi = row ``row_i`` of ``ei`` moved by ``si`` against Hj = row ``row_j`` of
    ``ej`` moved by ``sj``, whose tables (:func:`cdf_tables`, same shift) are row ``out``:
    G_j at each edge of Hi is the table at the edge below plus one quadratic step.  Where
    the edge ranges do not overlap the value is exact (1 or 0)."""
    if ei[row_i, 0] + si >= ej[row_j, nj] + sj:
        return 1.0
    if ei[row_i, ni] + si <= ej[row_j, 0] + sj:
        return 0.0
    c = 0  # edges of Hj at or below the current edge of Hi
    acc = g_prev = x_prev = 0.0
    for a in range(ni + 1):
        x = ei[row_i, a] + si
        while c <= nj and ej[row_j, c] + sj <= x:
            c += 1
        gx = 0.0
        if c > 0:
            k = c - 1
            step = x - (ej[row_j, k] + sj)
            gx = tables[1, out, k] + tables[0, out, k] * step + tables[2, out, k] * step * step
        if a > 0:
            width = x - x_prev
            if width > 0:
                acc += pi[row_i, a - 1] * ((gx - g_prev) / width)
        g_prev, x_prev = gx, x
    return min(max(acc, 0.0), 1.0)


@njit(cache=True, nogil=True, inline="always")
def ge_bound_pair(length_a, length_b, shift, spread, narrow, k_max):
    """The proven error bound of one ge (decision.py's module docstring): ``spread`` and
    ``narrow`` are the density sum and narrowest live bucket of the integrated template."""
    big = length_a + length_b + abs(shift)
    if not narrow > 16 * _U * big:
        return np.inf
    return 4 * ((20 * k_max + 116) * _U * big * spread + (2 * k_max + 5) * _U)


@njit(cache=True, nogil=True)
def ge_over_b(ae, ap, an, u, be, bp, bn, v, shift, scratch):
    """``P(Xa + shift >= Xb) = 1 - ge(B, A + shift)``: Eq. 1 over B against the tables of A
    moved by ``shift``, built in ``scratch`` (the flatter-template retry; kept out of line)."""
    cdf_tables(ae, ap, u, an[u], shift, scratch, 0)
    return 1.0 - ge_walk(be, bp, v, bn[v], 0.0, ae, u, an[u], shift, scratch, 0)


@njit(cache=True, nogil=True, inline="always")
def ge_pair(ae, ap, an, aq, u, be, bp, bn, bq, bt, v, shift, over_a, k_max, scratch):
    """``P(Xa + shift >= Xb)`` and its bound for row ``u`` of pack A and ``v`` of pack B
    (unpacked: edges, probs, buckets, bound terms, tables): Eq. 1 over A against B's own
    tables, or over B (:func:`ge_over_b`)."""
    if over_a:
        p = ge_walk(ae, ap, u, an[u], shift, be, v, bn[v], 0.0, bt, v)
        spread, narrow = aq[1, u], aq[2, u]
    else:
        p = ge_over_b(ae, ap, an, u, be, bp, bn, v, shift, scratch)
        spread, narrow = bq[1, v], bq[2, v]
    return p, ge_bound_pair(aq[0, u], bq[0, v], shift, spread, narrow, k_max)


@njit(cache=True, nogil=True, inline="always")
def band_pair(ae, ap, an, aq, u, be, bp, bn, bq, bt, v, delta_t, d, over_a, k_max, scratch):
    """Float ``P(|Xa - Xb| <= d) = ge(A + dt + d, B) - ge(A + dt - d, B)`` for row ``u`` of
    pack A and ``v`` of pack B with ``dt = t_a - t_b`` (Section 3), and its proven bound."""
    hi, lo = delta_t + d, delta_t - d
    if over_a:  # the hot path, written flat
        n_u, n_v = an[u], bn[v]
        p = ge_walk(ae, ap, u, n_u, hi, be, v, n_v, 0.0, bt, v)
        p -= ge_walk(ae, ap, u, n_u, lo, be, v, n_v, 0.0, bt, v)
        spread, narrow = aq[1, u], aq[2, u]
    else:
        p = ge_over_b(ae, ap, an, u, be, bp, bn, v, hi, scratch)
        p -= ge_over_b(ae, ap, an, u, be, bp, bn, v, lo, scratch)
        spread, narrow = bq[1, v], bq[2, v]
    bound = ge_bound_pair(aq[0, u], bq[0, v], hi, spread, narrow, k_max)
    bound += ge_bound_pair(aq[0, u], bq[0, v], lo, spread, narrow, k_max)
    return min(max(p, 0.0), 1.0), bound + 3 * _U


@njit(cache=True, nogil=True, _nrt=False)
def tables_many(edges, probs, buckets, tables):
    """:func:`cdf_tables` of every row (a template set in local coordinates) into
    ``tables`` (3, N, K + 1)."""
    for row in range(edges.shape[0]):
        cdf_tables(edges, probs, row, buckets[row], 0.0, tables, row)


@njit(cache=True, nogil=True, _nrt=False)
def ge_many(a, b, u, v, shift, over_a, k_max, scratch, p, bound):
    """:func:`ge_pair` for aligned pairs of packs ``a`` and ``b`` (``over_a`` per pair) into
    ``p`` and ``bound``; ``scratch`` (3, 1, K + 1) serves integrations over B."""
    ae, ap, an, aq, _ = a
    be, bp, bn, bq, bt = b
    for k in range(u.size):
        p[k], bound[k] = ge_pair(
            ae, ap, an, aq, u[k], be, bp, bn, bq, bt, v[k], shift[k], over_a[k], k_max, scratch
        )


@njit(cache=True, nogil=True, _nrt=False)
def ge_bound_many(a, b, u, v, shift, over_a, k_max, bound):
    """The bounds of :func:`ge_pair` alone, for aligned pairs (``over_a`` per pair)."""
    aq, bq = a[3], b[3]
    for k in range(u.size):
        i, j = u[k], v[k]
        if over_a[k]:
            bound[k] = ge_bound_pair(aq[0, i], bq[0, j], shift[k], aq[1, i], aq[2, i], k_max)
        else:
            bound[k] = ge_bound_pair(aq[0, i], bq[0, j], shift[k], bq[1, j], bq[2, j], k_max)


@njit(cache=True, nogil=True, _nrt=False)
def band_many(a, b, u, v, delta_t, d, over_a, k_max, scratch, p, bound):
    """:func:`band_pair` for aligned pairs (``over_a`` per pair) into ``p`` and ``bound``."""
    ae, ap, an, aq, _ = a
    be, bp, bn, bq, bt = b
    for k in range(u.size):
        p[k], bound[k] = band_pair(
            ae, ap, an, aq, u[k], be, bp, bn, bq, bt, v[k], delta_t[k], d, over_a[k], k_max, scratch
        )
