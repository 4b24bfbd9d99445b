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
unique; ``side="right"`` is the largest T with ``prob >= delta`` (what Theorem 2's Eq. 8
needs) and ``side="left"`` the smallest T with ``prob <= delta`` (what Eq. 9 needs).  Both agree
wherever the crossing is unique.

**Certified.**  A float stime is only an estimate.  :func:`stime_brackets` encloses the exact
one: around each estimate x it evaluates f at ``x - eta`` and ``x + eta`` with the proven error
bound of :func:`workbench.decision.ge_shift` and keeps ``[x - eta, x + eta]`` where both sides
are certain; the rest (flat stretches at the level, ill-conditioned pairs) are solved in exact
rationals (:func:`workbench.exact.stime_bracket`: the adjacent doubles around the true value,
or the exact double).  :class:`StimeTable` decides pairs against these brackets and sends the
pairs that fall inside one to the exact band probability, so every decision is exact.

(This module runs past 400 lines on purpose: the scalar search, the vectorised table, its
certificates and :class:`StimeTable` share private tolerances and the estimate/certify
steps, and read as one derivation of Definition 8.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

from workbench.decision import UNIT_ROUNDOFF, BandDecider, LocalTemplates, ge_bound, ge_shift
from workbench.exact import ExactHistogram, stime_bracket
from workbench.probability import ge_batch
from workbench.timestamps import HistogramTimestamp, TemplateSet, pack_histograms

__all__ = ["Side", "StimeTable", "stime", "stime_brackets", "stime_table"]

Side = Literal["right", "left"]
"""Which end of a flat crossing stime returns: "right" (Eq. 8) or "left" (Eq. 9)."""

_CHUNK_PAIRS = 4096
_EPS_SUM = 128 * np.finfo(np.float64).eps  # a sum of <= 128 terms: rounding <= n eps sum|x|
_TIME_TOL = 1e-7  # ms
_LEVEL_TOL = 1e-12
"""How close to the level the float *estimate* treats f as flat; certification (not this
tolerance) decides, see :func:`stime_brackets`."""
_CERTIFY_ROUNDS = 3
_THREADS = min(4, os.cpu_count() or 1)
_WIDEN = 256.0


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
    """stime(Hi, Hj, delta) (Definition 8), exactly: the reference the tables answer to.

    Binary search over the configurations and the closed-form root of the bounding one, as the
    paper describes after Definition 8, carried out in exact rationals
    (:func:`workbench.exact.stime_bracket`); the result is within one rounding of the true T.
    Example 4 of the paper: ``stime(H3, H2, 0.8) = 208.59``.

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> round(stime(phi1.detected_at(210), phi2.detected_at(110), 0.8), 2)
    208.59
    """
    delta = _check_delta(delta)
    _check_side(side)
    # Eq. 7 and invariance under shifting Hj: both maxima at 0 (exactly), then shift back
    lo, hi_x = stime_bracket(
        ExactHistogram.of(hi, -Fraction(hi.max)),
        ExactHistogram.of(hj, -Fraction(hj.max)),
        Fraction(delta),
        side,
    )
    x = lo if side == "right" else hi_x
    return float(Fraction(x) + Fraction(hi.max))


def _local_jumps(ts: TemplateSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges (each template moved so its max is 0), probabilities, and the density jump at
    every edge."""
    edges, probs = pack_histograms(ts.templates)
    edges = edges - ts.max_times[:, None]
    widths = np.diff(edges, axis=1)
    dens = np.divide(probs, widths, out=np.zeros_like(probs), where=widths > 0)
    padded = np.pad(dens, ((0, 0), (1, 1)))
    return edges, probs, np.diff(padded, axis=1)  # dens_k - dens_{k-1} at edge k


def _stime_estimates(
    ha: TemplateSet, hb: TemplateSet, level: float, side: Side
) -> tuple[np.ndarray, np.ndarray]:
    """Float estimates of x* = stime - max(phi_u) for every pair (flat, u-major) and |f'(x*)|
    (NaN where unknown); vectorised as the module docstring describes."""
    ea, pa, ja = _local_jumps(ha)
    eb, pb, jb = _local_jumps(hb)
    # Hi's edges enter with the negated jump (Lemma 1: +i2, -i1), Hj's with the jump itself
    ja = -ja
    n_a, n_b = len(ha), len(hb)
    terms = ea.shape[1] * eb.shape[1]
    out = np.empty(n_a * n_b)
    fprime = np.full(n_a * n_b, np.nan)
    shaky: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (pairs, c_k, c_k+1)
    chunk = min(_CHUNK_PAIRS, n_a * n_b)
    # buffers reused across a thread's chunks, term-major (terms, ..., pairs) so the suffix
    # sums below add whole rows; fresh arrays per chunk would cost more than the arithmetic
    local = threading.local()

    def estimate(start: int) -> None:
        if not hasattr(local, "sums"):
            local.sums = np.empty((terms, 3, chunk))
            local.c, local.f, local.w = (np.empty((terms, chunk)) for _ in range(3))
        sums_buf, c_buf, f_buf, w_buf = local.sums, local.c, local.f, local.w
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
        if side == "right":  # last breakpoint with f >= level
            k = np.clip((f >= level - _LEVEL_TOL).sum(axis=0) - 1, 0, terms - 2)
        else:  # last breakpoint with f > level
            k = np.clip((f > level + _LEVEL_TOL).sum(axis=0), 1, terms - 1) - 1
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
        gap = np.where(fk - level > _LEVEL_TOL, fk - level, 0.0)
        denom = slope + np.sqrt(np.maximum(slope * slope - a1 * gap, 0.0))
        y = np.clip(np.divide(gap, denom, out=np.zeros_like(gap), where=denom > 0), 0, ck1 - ck)
        out[pair] = ck + y
        fprime[pair] = 2 * np.abs(slope - a1 * y)
        # where that error, over the slope at the root, could move stime by more than
        # _TIME_TOL, the configuration is solved again from exact Lemma 1 values
        flagged = rounding > _TIME_TOL * 2 * np.abs(slope - a1 * y)
        if flagged.any():
            shaky.append((pair[flagged], ck[flagged], ck1[flagged]))

    _in_threads(estimate, range(0, n_a * n_b, chunk))
    if shaky:
        pair, lo, hi = (np.concatenate(x) for x in zip(*shaky, strict=True))
        u, v = np.divmod(pair, n_b)

        def f(x: np.ndarray) -> np.ndarray:
            return ge_batch(ea[u] - x[:, None], pa[u], eb[v], pb[v])

        f_lo, f_mid, f_hi = f(lo), f((lo + hi) / 2), f(hi)
        t = _quadratic_crossing(f_lo, f_mid, f_hi, np.full(lo.shape, level))
        out[pair] = lo + t * (hi - lo)
        fprime[pair] = np.nan  # unknown: certification starts from a generic width
    return out, fprime


def _in_threads(work: Callable[[int], None], starts: range) -> None:
    """Run ``work`` on every chunk start in a few threads (NumPy releases the GIL in its
    loops; chunks write disjoint slices of preallocated outputs)."""
    workers = min(_THREADS, len(starts))
    if workers <= 1:
        for start in starts:
            work(start)
        return
    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(work, starts):
            pass


def stime_brackets(
    ha: TemplateSet, hb: TemplateSet, level: float | Fraction, side: Side = "right"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Certified satisfaction times in local coordinates ``x = stime - max(phi_u)``.

    Returns ``(x, lo, hi)``, each of shape (len(ha), len(hb)): an estimate and a bracket with
    ``lo <= x* <= hi`` proven (right: ``f(lo) >= level > f(hi)``; left: ``f(lo) > level >=
    f(hi)``, ``f(x) = P(phi_u - x >= phi_v)`` with both maxima at 0).  ``level`` is exact (a
    Fraction, e.g. ``1 - delta``) or a float.

    >>> u = HistogramTimestamp.uniform
    >>> x, lo, hi = stime_brackets(TemplateSet("A", (u(0, 10),)), TemplateSet("B", (u(0, 10),)),
    ...                            Fraction(1, 2))
    >>> bool(lo[0, 0] <= 0.0 <= hi[0, 0]), float(hi[0, 0] - lo[0, 0]) < 1e-9
    (True, True)
    """
    level = Fraction(level)
    if not 0 < level < 1:
        raise ValueError(f"level = {float(level)!r} must lie strictly between 0 and 1")
    _check_side(side)
    level_f = float(level)
    x, fprime = _stime_estimates(ha, hb, level_f, side)
    n_a, n_b = len(ha), len(hb)
    local = (LocalTemplates.of(ha), LocalTemplates.of(hb))
    lo, hi = np.full(x.shape, np.nan), np.full(x.shape, np.nan)

    def certify(start: int) -> None:
        pair = np.arange(start, min(start + _CHUNK_PAIRS, x.size))
        u, v = np.divmod(pair, n_b)
        xs = x[pair]
        scale = local[0].length[u] + local[1].length[v] + np.abs(xs)
        # the float error of f near x*, over the slope there, is how far x* may be from xs
        bound = ge_bound(local, u, v, -xs)
        width = np.where(fprime[pair] > 0, 4 * bound / fprime[pair], np.nan)
        width = np.fmax(
            np.where(np.isfinite(width), width, 1e-9 * scale), 8 * UNIT_ROUNDOFF * scale
        )
        target = width.copy()
        todo = np.arange(pair.size)
        for _ in range(_CERTIFY_ROUNDS):
            k = pair[todo]
            x_lo, x_hi = xs[todo] - width[todo], xs[todo] + width[todo]
            holds_lo, _ = _certified_side(local, u[todo], v[todo], x_lo, level_f, side)
            _, fails_hi = _certified_side(local, u[todo], v[todo], x_hi, level_f, side)
            ok = holds_lo & fails_hi
            lo[k[ok]], hi[k[ok]] = x_lo[ok], x_hi[ok]
            todo = todo[~ok]
            if todo.size == 0:
                break
            width[todo] *= _WIDEN
        # a poor estimate certified only in a wide bracket: bisect it with certified values
        wide = np.flatnonzero(hi[pair] - lo[pair] > 4 * target)
        for _ in range(64):
            if wide.size == 0:
                break
            k = pair[wide]
            mid = (lo[k] + hi[k]) / 2
            holds, fails = _certified_side(local, u[wide], v[wide], mid, level_f, side)
            lo[k[holds]], hi[k[fails]] = mid[holds], mid[fails]
            x[k] = (lo[k] + hi[k]) / 2
            wide = wide[(holds | fails) & (hi[k] - lo[k] > 4 * target[wide])]

    _in_threads(certify, range(0, x.size, _CHUNK_PAIRS))
    for k in np.flatnonzero(np.isnan(lo)):  # flat at the level or ill-conditioned: rationals
        u, v = divmod(int(k), n_b)
        lo[k], hi[k] = stime_bracket(local[0].exact(u), local[1].exact(v), level, side)
        x[k] = lo[k] if side == "right" else hi[k]
    shape = (n_a, n_b)
    return x.reshape(shape), lo.reshape(shape), hi.reshape(shape)


def _certified_side(
    local: tuple[LocalTemplates, LocalTemplates],
    u: np.ndarray,
    v: np.ndarray,
    x: np.ndarray,
    level: float,
    side: Side,
) -> tuple[np.ndarray, np.ndarray]:
    """Where f(x) is certainly on the satisfying side of the level (x <= x* for "right",
    x < x* for "left"), and where certainly not; neither where the float bound cannot tell."""
    f, bound = ge_shift(local, u, v, -x)
    bound = bound + UNIT_ROUNDOFF  # the float level is within u/2 of the exact one
    if side == "right":
        return f - bound >= level, f + bound < level
    return f - bound > level, f + bound <= level


def stime_table(ha: TemplateSet, hb: TemplateSet, delta: float, side: Side = "right") -> np.ndarray:
    """stime(phi_u, phi_v, delta) for every u in ha and v in hb, shape (len(ha), len(hb)).

    Vectorised over all pairs, each value inside its certified bracket
    (:func:`stime_brackets`), so it agrees with :func:`stime` to within that bracket.

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> table = stime_table(TemplateSet("A", (phi1,)), TemplateSet("B", (phi2,)), 0.8)
    >>> round(float(table[0, 0]) + 210 - 40, 2)   # Eq. 7: shift phi1 to H3
    208.59
    """
    delta = _check_delta(delta)
    x, _, _ = stime_brackets(ha, hb, Fraction(delta), side)
    return x + ha.max_times[:, None]


@dataclass(frozen=True)
class StimeTable:
    """Precomputed satisfaction times of every template pair (PTJoin Section 3.1, Theorem 2).

    ``sat[u, v] = stime(phi_u, phi_v, delta)`` (side "right") decides pairs with
    ``max(Hj) >= max(Hi)`` by Eq. 8; ``inv[u, v] = stime(phi_u, phi_v, 1 - delta)`` (side "left")
    decides the others by Eq. 9.  Built at query installation time, one comparison per pair.
    ``sat_lo <= sat_x <= sat_hi`` (and the same for inv) are the certified brackets in local
    coordinates ``x = stime - max(phi_u)``; a pair whose comparison falls inside a bracket is
    decided by the exact band probability instead.

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
    sat_lo: np.ndarray = field(repr=False)
    sat_hi: np.ndarray = field(repr=False)
    inv_lo: np.ndarray = field(repr=False)
    inv_hi: np.ndarray = field(repr=False)
    band: BandDecider = field(repr=False)

    @classmethod
    def build(
        cls,
        templates_a: TemplateSet,
        templates_b: TemplateSet,
        delta: float,
        band: BandDecider | None = None,
    ) -> StimeTable:
        """Compute both tables (and their brackets) for stream A's templates against B's;
        ``band`` decides the pairs inside a bracket (a new :class:`BandDecider` by default)."""
        delta = _check_delta(delta)
        sat, sat_lo, sat_hi = stime_brackets(templates_a, templates_b, Fraction(delta), "right")
        inv, inv_lo, inv_hi = stime_brackets(templates_a, templates_b, 1 - Fraction(delta), "left")
        offset = templates_a.max_times[:, None]
        arrays = [sat + offset, inv + offset, sat_lo, sat_hi, inv_lo, inv_hi]
        for a in arrays:
            a.flags.writeable = False
        band = band or BandDecider(templates_a, templates_b)
        return cls(templates_a, templates_b, delta, *arrays, band)

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

    def verdicts(
        self, u: np.ndarray, v: np.ndarray, max_hi: np.ndarray, max_hj: np.ndarray, d: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 8 / Eq. 9 against the brackets: ``(join, certain)`` per pair; where ``certain``
        is False the comparison falls inside a bracket and only the exact band decides."""
        dt = np.asarray(max_hj, dtype=np.float64) - np.asarray(max_hi, dtype=np.float64)
        slack = 4 * UNIT_ROUNDOFF * (np.abs(dt) + d)  # bounds the rounding of dt -/+ d
        later = dt >= 0  # the sign of a rounded difference is exact
        y = np.where(later, dt - d, dt + d)
        # Eq. 8 (later): join iff dt - d <= sat*; Eq. 9 (earlier): join iff dt + d >= inv*
        yes = np.where(later, y + slack <= self.sat_lo[u, v], y - slack >= self.inv_hi[u, v])
        no = np.where(later, y - slack > self.sat_hi[u, v], y + slack < self.inv_lo[u, v])
        return yes, yes | no

    def decide(
        self,
        u: int | np.ndarray,
        v: int | np.ndarray,
        max_hi: float | np.ndarray,
        max_hj: float | np.ndarray,
        d: float,
    ) -> np.ndarray:
        """Whether a_i |= phi_u and b_j |= phi_v satisfy jc(d, delta), by Eq. 8 or Eq. 9
        (exactly: comparisons inside a bracket go to the exact band probability)."""
        self.check_fast_path(d)
        u, v, max_hi, max_hj = np.broadcast_arrays(
            np.asarray(u),
            np.asarray(v),
            np.asarray(max_hi, dtype=np.float64),
            np.asarray(max_hj, dtype=np.float64),
        )
        join, certain = self.verdicts(u, v, max_hi, max_hj, d)
        join = np.array(join, dtype=bool)
        unsure = ~certain
        if unsure.any():
            join[unsure] = self.band.decide_exact(
                u[unsure], max_hi[unsure], v[unsure], max_hj[unsure], d, self.delta
            )
        return join

    @property
    def t_min(self) -> float:
        """A certified lower bound of t_min = min over (u, v) of stime(phi_u, phi_v, 1 - delta)
        - max(phi_u) (Theorem 4)."""
        low = float(self.inv_lo.min())
        return low - 4 * UNIT_ROUNDOFF * abs(low)
