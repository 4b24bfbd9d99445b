"""LH, LL, RL, RH for uniform interval timestamps (interval timing paper, Section 4.1).

A base tuple with interval ``I1 = [lo, hi]`` meets target tuples whose intervals have length at
most pi.  For the mutual deadline ``|@S1 - @S2| <= d`` with confidence ct, the upper and lower
bounds of the satisfaction probability over every target of max time x cross ct at LH, RH
(upper bound) and LL, RL (lower bound).  Targets with ``max(I) in [LL, RL]`` satisfy, below LH
or above RH violate, and ``[LH, LL)``, ``(RL, RH]`` must be probed.

With ``d >= max(pi, len(I1))`` (the paper's Corollary 3 assumption) only one side of the band
binds on each side of the base (Lemma 2 of the PTJoin paper), and:

- the upper bound is reached by a point-like target on the left (LH) and a target of length pi
  on the right (RH); the lower bound by a target of length pi on the left (LL) and a point-like
  target on the right (RL);
- LH and RL have closed forms; LL and RH are PTJoin satisfaction times of the base against a
  one-bucket template of length pi (Theorem 3 with a single template).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.partitions import Region
from workbench.stime import stime
from workbench.timestamps import HistogramTimestamp

__all__ = ["IntervalBounds", "interval_bounds", "invalidation_bound"]


def _check(d: float, ct: float, pi: float) -> None:
    if not 0.0 < ct < 1.0:
        raise ValueError(f"ct = {ct!r} must lie strictly between 0 and 1")
    if not pi > 0:
        raise ValueError(f"pi = {pi!r} must be a positive length")
    if not d >= pi:
        raise ValueError(f"d = {d!r} must be at least pi = {pi!r} (Corollary 3's assumption)")


@dataclass(frozen=True)
class IntervalBounds:
    """The four crossing points of a base interval (interval timing paper, Figure 1(b)).

    >>> b = IntervalBounds(lh=0.0, ll=5.0, rl=20.0, rh=25.0)
    >>> [Region(r).name for r in b.classify([-1, 0, 5, 20, 25, 26])]
    ['VR', 'PR', 'SR', 'SR', 'PR', 'VR']
    """

    lh: float
    ll: float
    rl: float
    rh: float

    def __post_init__(self) -> None:
        if not self.lh <= self.ll <= self.rl <= self.rh:
            raise ValueError(
                f"bounds must be ordered LH <= LL <= RL <= RH, got lh={self.lh!r}, "
                f"ll={self.ll!r}, rl={self.rl!r}, rh={self.rh!r}"
            )

    def classify(self, max_times: float | np.ndarray) -> np.ndarray:
        """The :class:`~workbench.partitions.Region` code of every target max time."""
        m = np.asarray(max_times, dtype=np.float64)
        region = np.full(m.shape, Region.PR, dtype=np.int8)
        region[(m >= self.ll) & (m <= self.rl)] = Region.SR
        region[(m < self.lh) | (m > self.rh)] = Region.VR
        return region


def interval_bounds(lo: float, hi: float, d: float, ct: float, pi: float) -> IntervalBounds:
    """LH, LL, RL, RH for base ``[lo, hi]``, deadline d, confidence ct, max target length pi.

    >>> interval_bounds(100, 120, d=30, ct=0.5, pi=20)
    IntervalBounds(lh=80.0, ll=90.0, rl=140.0, rh=150.0)
    """
    _check(d, ct, pi)
    if not hi > lo:
        raise ValueError(f"hi = {hi!r} must exceed lo = {lo!r}")
    length = hi - lo
    if not d >= length:
        raise ValueError(f"d = {d!r} must be at least the base length {length!r}")
    base = HistogramTimestamp.uniform(lo, hi)
    longest = HistogramTimestamp.uniform(0.0, pi)
    return IntervalBounds(
        lh=lo + ct * length - d,  # P(x + d >= X1) = ct
        ll=stime(base, longest, 1.0 - ct, side="left") - d,  # Eq. 9 with a length-pi target
        rl=hi + d - ct * length,  # P(X1 + d >= x) = ct
        rh=stime(base, longest, ct, side="right") + d,  # Eq. 8 with a length-pi target
    )


def invalidation_bound(now: float, max_delay: float, pi_base: float, d: float, ct: float) -> float:
    """``max(LH(e_inv))`` with ``@e_inv = (now - delay_base - pi, now - delay_base)`` (Sec. 4.2).

    Target tuples with max time below this bound can join no base tuple that may still arrive.

    >>> invalidation_bound(now=1000, max_delay=100, pi_base=20, d=30, ct=0.5)
    860.0
    """
    _check(d, ct, pi_base)
    if not max_delay >= 0:
        raise ValueError(f"max_delay = {max_delay!r} must be a non-negative delay")
    start = now - max_delay - pi_base
    return start + ct * pi_base - d
