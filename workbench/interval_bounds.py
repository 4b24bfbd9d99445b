"""LH, LL, RL, RH for uniform interval timestamps (interval timing paper, Section 4.1).

A base tuple with interval ``I1 = [lo, hi]`` meets target tuples whose intervals have length at
most pi.  For the mutual deadline ``|@S1 - @S2| <= d`` with confidence ct, the upper and lower
bounds of the satisfaction probability over every target of max time x cross ct at LH, RH
(upper bound) and LL, RL (lower bound).  Targets with ``max(I) in [LL, RL]`` satisfy, below LH
or above RH violate, and ``[LH, LL)``, ``(RL, RH]`` must be probed.

With ``d >= max(pi, len(I1))`` (the paper's Corollary 3 assumption) only one side of the band
binds on each side of the base (Lemma 2 of the PTJoin paper): the upper bound is reached by a
point-like target on the left (LH) and a target of length pi on the right (RH); the lower bound
by a target of length pi on the left (LL) and a point-like target on the right (RL).  All four
have closed forms through the trapezoidal distribution of a difference of two uniforms.  For
smaller d the loose partitions of PTJoin Eq. 4-6 apply instead (still sound, less tight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.decision import UNIT_ROUNDOFF
from workbench.kernels.interval_bounds import lh_ll_rl_rh
from workbench.partitions import Partitions

__all__ = [
    "IntervalBounds",
    "bounds_tuple",
    "interval_bounds",
    "interval_bounds_many",
    "invalidation_bound",
    "uniform_band_certified",
]


def _check(d: float, ct: float, pi: float) -> None:
    if not 0.0 < ct < 1.0:
        raise ValueError(f"ct = {ct!r} must lie strictly between 0 and 1")
    if not pi > 0:
        raise ValueError(f"pi = {pi!r} must be a positive length")
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative number")


@dataclass(frozen=True)
class IntervalBounds:
    """The four crossing points of a base interval (interval timing paper, Figure 1(b)).

    ``LL > RL`` stands for an empty satisfaction range (possible only below ``d = pi``).

    >>> from workbench.partitions import Region
    >>> b = IntervalBounds(lh=0.0, ll=5.0, rl=20.0, rh=25.0)
    >>> [Region(r).name for r in b.classify([-1, 0, 5, 20, 25, 26])]
    ['VR', 'PR', 'SR', 'SR', 'PR', 'VR']
    """

    lh: float
    ll: float
    rl: float
    rh: float

    def __post_init__(self) -> None:
        if not (self.lh <= self.ll and self.rl <= self.rh and self.lh <= self.rh):
            raise ValueError(
                f"bounds must satisfy LH <= LL, RL <= RH (LL > RL: empty SR), got "
                f"lh={self.lh!r}, ll={self.ll!r}, rl={self.rl!r}, rh={self.rh!r}"
            )

    def partitions(self) -> Partitions:
        """The same ranges as PTJoin :class:`~workbench.partitions.Partitions`."""
        return Partitions(self.lh, self.ll, self.rl, self.rh)

    def classify(self, max_times: float | np.ndarray) -> np.ndarray:
        """The :class:`~workbench.partitions.Region` code of every target max time."""
        return self.partitions().classify(max_times)


def _difference_quantile(a: np.ndarray, b: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of U(0, a) + U(0, b) (a trapezoidal law on [0, a + b])."""
    small, large = np.minimum(a, b), np.maximum(a, b)
    corner = small / (2 * large)  # CDF where the rising ramp ends
    ramp_up = np.sqrt(2 * a * b * q)
    flat = q * large + small / 2
    ramp_down = a + b - np.sqrt(2 * a * b * (1 - q))
    return np.where(q <= corner, ramp_up, np.where(q <= 1 - corner, flat, ramp_down))


def interval_bounds_many(
    lo: np.ndarray, hi: np.ndarray, d: float, ct: float, pi: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LH, LL, RL, RH for many base intervals at once (arrays of ``lo`` and ``hi``).

    Where ``d >= max(pi, hi - lo)`` the bounds are exact (Section 4.1); elsewhere they are the
    loose partitions of PTJoin Eq. 4-6, whose satisfaction range may be empty (``LL > RL``).

    >>> [float(x[0]) for x in interval_bounds_many(np.array([100.]), np.array([120.]), 30, .5, 20)]
    [80.0, 90.0, 140.0, 150.0]
    """
    _check(d, ct, pi)
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    length = hi - lo
    if np.any(~(length > 0)):
        k = int(np.flatnonzero(~(length > 0))[0])
        raise ValueError(f"hi = {float(hi.flat[k])!r} must exceed lo = {float(lo.flat[k])!r}")
    exact = d >= np.maximum(length, pi)
    quantile = _difference_quantile(length, np.full_like(length, pi), ct)
    return (
        lo + ct * length - d,  # point-like target; sound for every d (see invalidation_bound)
        np.where(exact, lo - d + quantile, hi - d + pi),  # exact: length-pi target
        np.where(exact, hi + d - ct * length, lo + d),  # exact: point-like target
        np.where(exact, hi + d + pi - quantile, hi + d + pi),  # exact: length-pi target
    )


def interval_bounds(lo: float, hi: float, d: float, ct: float, pi: float) -> IntervalBounds:
    """LH, LL, RL, RH for base ``[lo, hi]``, deadline d, confidence ct, max target length pi.

    The scalar twin of :func:`interval_bounds_many` (plain floats: the per-event path).

    >>> interval_bounds(100, 120, d=30, ct=0.5, pi=20)
    IntervalBounds(lh=80.0, ll=90.0, rl=140.0, rh=150.0)
    """
    _check(d, ct, pi)
    return IntervalBounds(*bounds_tuple(float(lo), float(hi), d, ct, pi))


def bounds_tuple(
    lo: float, hi: float, d: float, ct: float, pi: float
) -> tuple[float, float, float, float]:
    """(LH, LL, RL, RH) as plain floats, without checking d, ct, pi (operators check them once).

    >>> bounds_tuple(100.0, 120.0, 30.0, 0.5, 20.0)
    (80.0, 90.0, 140.0, 150.0)
    """
    if not hi - lo > 0:
        raise ValueError(f"hi = {hi!r} must exceed lo = {lo!r}")
    return lh_ll_rl_rh(float(lo), float(hi), float(d), float(ct), float(pi))


def invalidation_bound(now: float, max_delay: float, pi_base: float, d: float, ct: float) -> float:
    """``max(LH(e_inv))`` with ``@e_inv = (now - delay_base - pi, now - delay_base)`` (Sec. 4.2).

    Target tuples with max time below this bound can join no base tuple that may still arrive.
    LH needs no assumption on d: a target ending at x <= LH has P <= P(X1 <= x + d) < ct.

    >>> invalidation_bound(now=1000, max_delay=100, pi_base=20, d=30, ct=0.5)
    860.0
    """
    _check(d, ct, pi_base)
    if not max_delay >= 0:
        raise ValueError(f"max_delay = {max_delay!r} must be a non-negative delay")
    start = now - max_delay - pi_base
    return start + ct * pi_base - d


def _trapezoid(a: np.ndarray, b: np.ndarray, base: np.ndarray, d: float) -> np.ndarray:
    """P(|Xb - Xa| <= d) for Xa ~ U(0, a) + c, Xb ~ U(0, b) + c + a + base: the integral of the
    trapezoid density of Xb - Xa (support [base, base + a + b]) by the relu-square formula,
    written with few NumPy calls (the interval operators call it once per arrival)."""
    width = a + b
    twice_ab = 2 * a * b

    def cdf(z: float) -> np.ndarray:
        s = np.minimum(np.maximum(z - base, 0.0), width)  # outside the support: 0 or 1 exactly
        sa = np.maximum(s - a, 0.0)
        sb = np.maximum(s - b, 0.0)
        return (s * s - sa * sa - sb * sb) / twice_ab

    return np.minimum(np.maximum(cdf(d) - cdf(-d), 0.0), 1.0)


def uniform_band_certified(
    len_a: np.ndarray, t_a: np.ndarray, len_b: np.ndarray, t_b: np.ndarray, d: float
) -> tuple[np.ndarray, np.ndarray]:
    """P(|Xa - Xb| <= d) of uniform intervals ``[t - len, t]`` in floats, with a proven bound
    on its error (interval timing paper, Section 4.1's trapezoid; the fast path of the five
    interval operators).

    In local coordinates (``s = t_a - t_b``, one rounding), with ``L = d + |s| + len_a +
    len_b``: each clipped argument of the CDF ``F(w) = (r(w) - r(w - a) - r(w - b)) / 2ab``
    (``r(x) = max(x, 0)**2``) is within ``4 u L`` of the exact one, and F is Lipschitz with
    constant ``1 / max(a, b)`` in w and 1 in the relative error of a or b (couple the
    uniforms by scaling), so the inputs cost ``4 u L / max(a, b) + 2 u``; on the rounded
    inputs the three squares and two subtractions err by at most ``8 u (a + b)**2`` before the
    division by ``2 a b`` (``3 u`` more), and the band is a difference of two CDFs (``u``).
    Doubling for the second-order terms: ``B = u (16 L / max(a, b) + 16 (a + b)**2 / (a b)
    + 22)``.

    >>> p, bound = uniform_band_certified(np.array([10.0]), np.array([10.0]),
    ...                                   np.array([10.0]), np.array([10.0]), 5.0)
    >>> p.tolist(), bool(bound[0] < 1e-12)
    ([0.75], True)
    """
    a = np.asarray(len_a, dtype=np.float64)
    b = np.asarray(len_b, dtype=np.float64)
    shift = np.asarray(t_a, dtype=np.float64) - t_b
    p = _trapezoid(a, b, -b - shift, d)  # lo_b - hi_a = -len_b - (t_a - t_b)
    width = a + b
    bound = UNIT_ROUNDOFF * (
        16 * (d + np.abs(shift) + width) / np.maximum(a, b) + 16 * width * width / (a * b) + 22
    )
    return p, bound
