"""Satisfaction time (PTJoin paper, Section 3.1, Definition 8) and its tables.

``stime(Hi, Hj, delta)`` is the time T with ``prob(Hi + max(Hj) - T >= Hj) = delta``.  As a
function of the shift x, ``f(x) = prob(Hi - x >= Hj)`` is non-increasing (Lemma 3) and quadratic
between the *configurations*' breakpoints ``x = e_i - e_j`` (an edge of Hi meets an edge of Hj).
:func:`stime` binary-searches those breakpoints for the configuration bounding delta and solves
that configuration's quadratic in closed form, as the paper describes after Definition 8.

:func:`stime_table` computes stime for every template pair of two streams at once, vectorised:
writing ``f(x) = 1/2 * sum_kl a_k b_l * max(e_ik - e_jl - x, 0)**2`` with ``a``/``b`` the
density jumps at the edges (the four corners of Lemma 1 regrouped by edge), every
configuration's quadratic follows from suffix sums over the sorted breakpoints.

Where f is flat at the level (zero-probability buckets can make it so) the paper's T is not
unique; ``side="right"`` returns the largest T with ``prob >= delta`` (what Theorem 2's Eq. 8
needs) and ``side="left"`` the smallest T with ``prob <= delta`` (what Eq. 9 needs).  Both agree
wherever the crossing is unique.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from workbench.probability import ge_batch
from workbench.timestamps import HistogramTimestamp, TemplateSet, pack_histograms

__all__ = ["Side", "StimeTable", "stime", "stime_table"]

Side = Literal["right", "left"]
"""Which end of a flat crossing stime returns: "right" (Eq. 8) or "left" (Eq. 9)."""

_CHUNK_PAIRS = 4096
_EPS_SUM = 128 * np.finfo(np.float64).eps  # a sum of <= 128 terms: rounding <= n eps sum|x|
_TIME_TOL = 1e-7  # ms
_LEVEL_TOL = 1e-12
"""Probabilities this close to delta count as equal to it: rounding noise must not move a
flat crossing from one end to the other (the flat ends are where Eq. 8 and Eq. 9 differ)."""


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    return delta


def _check_side(side: str) -> None:
    if side not in ("right", "left"):
        raise ValueError(f"side = {side!r} must be 'right' or 'left'")


def _quadratic_crossing(
    f_lo: np.ndarray, f_mid: np.ndarray, f_hi: np.ndarray, level: np.ndarray
) -> np.ndarray:
    """Where, as a fraction t of the configuration, the quadratic through f(0), f(1/2), f(1)
    falls to ``level`` (f is non-increasing there and f(0) >= level)."""
    alpha = 2 * f_hi + 2 * f_lo - 4 * f_mid
    beta = 4 * f_mid - 3 * f_lo - f_hi
    gap = np.where(f_lo - level > _LEVEL_TOL, f_lo - level, 0.0)
    root = np.sqrt(np.maximum(beta * beta - 4 * alpha * gap, 0.0))
    denom = root - beta  # the numerically stable form of the root that lies in [0, 1]
    t = np.divide(2 * gap, denom, out=np.zeros_like(gap), where=denom > 0)
    return np.clip(t, 0.0, 1.0)


def stime(
    hi: HistogramTimestamp, hj: HistogramTimestamp, delta: float, side: Side = "right"
) -> float:
    """stime(Hi, Hj, delta) (Definition 8) by binary search over configurations.

    Example 4 of the paper: ``stime(H3, H2, 0.8) = 208.59``.

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> round(stime(phi1.detected_at(210), phi2.detected_at(110), 0.8), 2)
    208.59
    """
    delta = _check_delta(delta)
    _check_side(side)
    # Eq. 7 and invariance under shifting Hj: work with both maxima at 0, then shift back
    hi0, hj0 = hi - hi.max, hj - hj.max
    breaks = np.unique(hi0.edges[:, None] - hj0.edges[None, :])

    def f(x: np.ndarray) -> np.ndarray:
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        return ge_batch(
            hi0.edges[None, :] - x[:, None],
            hi0.probs[None, :],
            hj0.edges[None, :],
            hj0.probs[None, :],
        )

    # f(breaks[0]) = 1 >= delta and f(breaks[-1]) = 0 < delta: bisect to adjacent breakpoints
    lo, hi_idx = 0, breaks.size - 1
    while hi_idx - lo > 1:
        mid = (lo + hi_idx) // 2
        value = f(breaks[mid])[0]
        above = value >= delta - _LEVEL_TOL if side == "right" else value > delta + _LEVEL_TOL
        if above:
            lo = mid
        else:
            hi_idx = mid
    a, b = breaks[lo], breaks[hi_idx]
    f_lo, f_mid, f_hi = f(np.array([a, (a + b) / 2, b]))
    t = _quadratic_crossing(np.array(f_lo), np.array(f_mid), np.array(f_hi), np.array(delta))
    return float(a + t * (b - a) + hi.max)


def _local_jumps(ts: TemplateSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges (each template moved so its max is 0), probabilities, and the density jump at
    every edge."""
    edges, probs = pack_histograms(ts.templates)
    edges = edges - ts.max_times[:, None]
    widths = np.diff(edges, axis=1)
    dens = np.divide(probs, widths, out=np.zeros_like(probs), where=widths > 0)
    padded = np.pad(dens, ((0, 0), (1, 1)))
    return edges, probs, np.diff(padded, axis=1)  # dens_k - dens_{k-1} at edge k


def stime_table(ha: TemplateSet, hb: TemplateSet, delta: float, side: Side = "right") -> np.ndarray:
    """stime(phi_u, phi_v, delta) for every u in ha and v in hb, shape (len(ha), len(hb)).

    Vectorised over all pairs (see the module docstring); equal to :func:`stime` pair by pair.

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> table = stime_table(TemplateSet("A", (phi1,)), TemplateSet("B", (phi2,)), 0.8)
    >>> round(float(table[0, 0]) + 210 - 40, 2)   # Eq. 7: shift phi1 to H3
    208.59
    """
    delta = _check_delta(delta)
    _check_side(side)
    ea, pa, ja = _local_jumps(ha)
    eb, pb, jb = _local_jumps(hb)
    # Hi's edges enter with the negated jump (Lemma 1: +i2, -i1), Hj's with the jump itself
    ja = -ja
    n_a, n_b = len(ha), len(hb)
    terms = ea.shape[1] * eb.shape[1]
    out = np.empty(n_a * n_b)
    shaky: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (pairs, c_k, c_k+1)
    chunk = min(_CHUNK_PAIRS, n_a * n_b)
    # buffers reused across chunks, term-major (terms, ..., pairs) so the suffix sums below
    # add whole rows; fresh arrays of this size per chunk would cost more than the arithmetic
    sums_buf = np.empty((terms, 3, chunk))
    c_buf = np.empty((terms, chunk))
    f_buf = np.empty((terms, chunk))
    w_buf = np.empty((terms, chunk))
    for start in range(0, n_a * n_b, chunk):
        pair = np.arange(start, min(start + chunk, n_a * n_b))
        n = len(pair)
        u, v = np.divmod(pair, n_b)
        c = (ea[u][:, :, None] - eb[v][:, None, :]).reshape(n, terms)
        w = (0.5 * ja[u][:, :, None] * jb[v][:, None, :]).reshape(n, terms)
        # sort every pair's breakpoints
        order = np.argsort(c, axis=1)
        order += (np.arange(n) * terms)[:, None]
        sums, ct, f = sums_buf[:, :, :n], c_buf[:, :n], f_buf[:, :n]
        ct[:] = np.take(c.ravel(), order).T
        sums[:, 0] = np.take(w.ravel(), order).T
        w_sorted = w_buf[:, :n]
        w_sorted[:] = sums[:, 0]
        # suffix sums over the terms at or after each breakpoint: a = sum w, b = sum w c,
        # s = sum w c^2; then f(c_k) = a c_k^2 - 2 b c_k + s (a term's own share is 0 there)
        np.multiply(sums[:, 0], ct, out=sums[:, 1])
        np.multiply(sums[:, 1], ct, out=sums[:, 2])
        for k in range(terms - 2, -1, -1):
            sums[k] += sums[k + 1]
        a, b = sums[:, 0], sums[:, 1]
        np.multiply(a, ct, out=f)
        f -= 2 * b
        f *= ct
        f += sums[:, 2]
        if side == "right":  # last breakpoint with f >= delta
            k = np.clip((f >= delta - _LEVEL_TOL).sum(axis=0) - 1, 0, terms - 2)
        else:  # last breakpoint with f > delta
            k = np.clip((f > delta + _LEVEL_TOL).sum(axis=0), 1, terms - 1) - 1
        cols = np.arange(n)
        ck, ck1 = ct[k, cols], ct[k + 1, cols]
        # on [c_k, c_k+1]: f(c_k + y) = a1 y^2 - 2 slope y + f_k; f_k and the slope are summed
        # again around c_k, which keeps the digits the global sums above cancel away
        reach = np.maximum(ct - ck, 0.0, out=f)  # f is no longer needed: reuse its buffer
        reach *= w_sorted
        slope = reach.sum(axis=0)
        reach *= np.maximum(ct - ck, 0.0)
        fk = reach.sum(axis=0)
        rounding = _EPS_SUM * np.abs(reach).sum(axis=0)  # bound on the rounding error of f_k
        a1 = a[k + 1, cols]
        gap = np.where(fk - delta > _LEVEL_TOL, fk - delta, 0.0)
        denom = slope + np.sqrt(np.maximum(slope * slope - a1 * gap, 0.0))
        y = np.clip(np.divide(gap, denom, out=np.zeros_like(gap), where=denom > 0), 0, ck1 - ck)
        out[pair] = ck + y
        # where that error, over the slope at the root, could move stime by more than
        # _TIME_TOL, the configuration is solved again from exact Lemma 1 values
        flagged = rounding > _TIME_TOL * 2 * np.abs(slope - a1 * y)
        if flagged.any():
            shaky.append((pair[flagged], ck[flagged], ck1[flagged]))
    if shaky:
        pair, lo, hi = (np.concatenate(x) for x in zip(*shaky, strict=True))
        u, v = np.divmod(pair, n_b)

        def f(x: np.ndarray) -> np.ndarray:
            return ge_batch(ea[u] - x[:, None], pa[u], eb[v], pb[v])

        f_lo, f_mid, f_hi = f(lo), f((lo + hi) / 2), f(hi)
        if side == "right":
            holds = (f_lo >= delta - _LEVEL_TOL) & (f_hi < delta - _LEVEL_TOL)
        else:
            holds = (f_lo > delta + _LEVEL_TOL) & (f_hi <= delta + _LEVEL_TOL)
        t = _quadratic_crossing(f_lo, f_mid, f_hi, np.full(lo.shape, delta))
        out[pair] = lo + t * (hi - lo)
        for j in np.flatnonzero(~holds):  # rounding chose the wrong configuration: search
            uj, vj = int(u[j]), int(v[j])
            out[pair[j]] = stime(ha[uj], hb[vj], delta, side) - ha.max_times[uj]
    return out.reshape(n_a, n_b) + ha.max_times[:, None]


@dataclass(frozen=True)
class StimeTable:
    """Precomputed satisfaction times of every template pair (PTJoin Section 3.1, Theorem 2).

    ``sat[u, v] = stime(phi_u, phi_v, delta)`` (side "right") decides pairs with
    ``max(Hj) >= max(Hi)`` by Eq. 8; ``inv[u, v] = stime(phi_u, phi_v, 1 - delta)`` (side "left")
    decides the others by Eq. 9.  Built at query installation time, one comparison per pair.

    >>> u = HistogramTimestamp.uniform
    >>> table = StimeTable.build(TemplateSet("A", (u(0, 10),)), TemplateSet("B", (u(0, 20),)), 0.5)
    >>> table.decide(0, 0, max_hi=100.0, max_hj=np.array([95.0, 125.0, 135.0]), d=20).tolist()
    [True, True, False]
    """

    templates_a: TemplateSet
    templates_b: TemplateSet
    delta: float
    sat: np.ndarray = field(repr=False)
    inv: np.ndarray = field(repr=False)

    @classmethod
    def build(cls, templates_a: TemplateSet, templates_b: TemplateSet, delta: float) -> StimeTable:
        """Compute both tables for stream A's templates against stream B's."""
        delta = _check_delta(delta)
        sat = stime_table(templates_a, templates_b, delta, side="right")
        inv = stime_table(templates_a, templates_b, 1.0 - delta, side="left")
        sat.flags.writeable = False
        inv.flags.writeable = False
        return cls(templates_a, templates_b, delta, sat, inv)

    @property
    def max_a(self) -> np.ndarray:
        """max(phi_u) of stream A's templates."""
        return self.templates_a.max_times

    @property
    def min_d(self) -> float:
        """The smallest window d for which the fast path holds: max(pi_A, pi_B) (Lemma 2)."""
        return max(self.templates_a.pi, self.templates_b.pi)

    def check_fast_path(self, d: float) -> None:
        """Raise ValueError unless ``d >= max(pi_A, pi_B)``, Theorem 2's precondition."""
        if not d >= self.min_d:
            raise ValueError(
                f"d = {d!r} is below max(pi_A, pi_B) = {self.min_d!r}: the stime fast path "
                "(Lemma 2, Theorem 2) does not apply; use the exact band probability"
            )

    def decide(
        self,
        u: int | np.ndarray,
        v: int | np.ndarray,
        max_hi: float | np.ndarray,
        max_hj: float | np.ndarray,
        d: float,
    ) -> np.ndarray:
        """Whether a_i |= phi_u and b_j |= phi_v satisfy jc(d, delta), by Eq. 8 or Eq. 9."""
        self.check_fast_path(d)
        u, v = np.asarray(u), np.asarray(v)
        max_hi, max_hj = np.asarray(max_hi, dtype=np.float64), np.asarray(max_hj, dtype=np.float64)
        g0 = max_hi - self.max_a[u]
        later = self.sat[u, v] + d + g0 >= max_hj  # Eq. 8, used when max(Hj) >= max(Hi)
        earlier = self.inv[u, v] - d + g0 <= max_hj  # Eq. 9, used when max(Hi) > max(Hj)
        return np.where(max_hj >= max_hi, later, earlier)

    @property
    def t_min(self) -> float:
        """t_min = min over (u, v) of stime(phi_u, phi_v, 1 - delta) - max(phi_u) (Theorem 4)."""
        return float((self.inv - self.max_a[:, None]).min())
