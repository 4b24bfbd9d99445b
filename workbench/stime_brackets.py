"""Certified satisfaction times of every template pair at once (PTJoin paper, Section 3.1,
Definition 8, Lemma 3): the brackets behind :func:`workbench.stime.stime_table` and
:class:`workbench.stime.StimeTable`.

Writing ``f(x) = 1/2 * sum_kl a_k b_l * max(e_ik - e_jl - x, 0)**2`` with ``a``/``b`` the
density jumps at the edges (the four corners of Lemma 1 regrouped by edge), the configuration
bounding the level is found by a compiled binary search over the breakpoints inside the
paper's quantile range (:mod:`workbench.kernels.stime`), and its quadratic solved.

**Certified.**  A float stime is only an estimate.  :func:`stime_brackets` encloses the exact
one: around each estimate x it evaluates f at ``x - eta`` and ``x + eta`` with the proven error
bound of :func:`workbench.decision.ge_shift` and keeps ``[x - eta, x + eta]`` where both sides
are certain; the rest (flat stretches at the level, ill-conditioned pairs) are solved in exact
rationals (:func:`workbench.exact.stime_bracket`: the adjacent doubles around the true value,
or the exact double).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Literal

import numpy as np

from workbench.decision import UNIT_ROUNDOFF, LocalTemplates, ge_bound, ge_shift
from workbench.exact import stime_bracket
from workbench.kernels.stime import StimeInputs, StimeOutputs, StimeParams, stime_estimates
from workbench.probability import ge_batch
from workbench.templates import TemplateSet
from workbench.timestamps import pack_histograms

__all__ = ["Side", "check_side", "stime_brackets"]

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


def check_side(side: str) -> None:
    """Reject a side other than "right" or "left", naming it.

    >>> check_side("up")
    Traceback (most recent call last):
    ValueError: side = 'up' must be 'right' or 'left'
    """
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


def _local_jumps(ts: TemplateSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges (each template moved so its max is 0), probabilities, and the density jump at
    every edge."""
    edges, probs = pack_histograms(ts.templates)
    edges = edges - ts.max_times[:, None]
    widths = np.diff(edges, axis=1)
    dens = np.divide(probs, widths, out=np.zeros_like(probs), where=widths > 0)
    padded = np.pad(dens, ((0, 0), (1, 1)))
    return edges, probs, np.diff(padded, axis=1)  # dens_k - dens_{k-1} at edge k


def _quantiles(edges: np.ndarray, probs: np.ndarray, q: float) -> np.ndarray:
    """Where each template's CDF reaches ``q`` (its buckets uniform)."""
    cdf = np.concatenate([np.zeros((len(probs), 1)), np.cumsum(probs, axis=1)], axis=1)
    return np.array([np.interp(q, cdf[r], edges[r]) for r in range(len(probs))])


def _stime_estimates(
    ha: TemplateSet, hb: TemplateSet, level: float, side: Side
) -> tuple[np.ndarray, np.ndarray]:
    """Float estimates of x* = stime - max(phi_u) for every pair (flat, u-major) and |f'(x*)|
    (NaN where unknown): the compiled binary search over the breakpoints inside the paper's
    quantile range (:func:`workbench.kernels.stime.stime_estimates`)), the pairs it
    flags solved again here from Lemma 1's values."""
    ea, pa, ja = _local_jumps(ha)
    eb, pb, jb = _local_jumps(hb)
    ja = -ja  # Hi's edges enter with the negated jump (Lemma 1: +i2, -i1)
    n = len(ha) * len(hb)
    t_i, t_j = _quantiles(ea, pa, 1 - level), _quantiles(eb, pb, level)
    out, fprime, ck, ck1 = (np.empty(n) for _ in range(4))
    flagged = np.zeros(n, dtype=bool)
    inputs = StimeInputs(ea, ja, eb, jb, t_i, t_j)
    params = StimeParams(level, side == "right", _LEVEL_TOL, _TIME_TOL, _EPS_SUM)
    outputs = StimeOutputs(out, fprime, flagged, ck, ck1)

    def estimate(start: int) -> None:
        stime_estimates(inputs, params, start, min(start + _CHUNK_PAIRS, n), outputs)

    _in_threads(estimate, range(0, n, _CHUNK_PAIRS))
    pair = np.flatnonzero(flagged)  # rounding could move x*: solved again from Lemma 1 values
    if pair.size:
        u, v = np.divmod(pair, len(hb))
        lo, hi = ck[pair], ck1[pair]

        def f(x: np.ndarray) -> np.ndarray:
            return ge_batch(ea[u] - x[:, None], pa[u], eb[v], pb[v])

        t = _quadratic_crossing(f(lo), f((lo + hi) / 2), f(hi), np.full(lo.shape, level))
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

    >>> from workbench.timestamps import HistogramTimestamp
    >>> u = HistogramTimestamp.uniform
    >>> x, lo, hi = stime_brackets(TemplateSet("A", (u(0, 10),)), TemplateSet("B", (u(0, 10),)),
    ...                            Fraction(1, 2))
    >>> bool(lo[0, 0] <= 0.0 <= hi[0, 0]), float(hi[0, 0] - lo[0, 0]) < 1e-9
    (True, True)
    """
    level = Fraction(level)
    if not 0 < level < 1:
        raise ValueError(f"level = {float(level)!r} must lie strictly between 0 and 1")
    check_side(side)
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
