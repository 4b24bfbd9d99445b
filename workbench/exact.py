"""Exact rational arithmetic for histogram timestamps: the oracle every fast path answers to.

Every float is a dyadic rational, so a histogram's edges and probabilities are exact
rationals (:class:`fractions.Fraction`); the probabilities are normalised by their exact sum.
``ge`` is Theorem 1 (Eq. 3) of the PTJoin paper over the adjusted histograms (Definition 3),
which needs O(n + m) rational operations: no rounding anywhere, so ties (P == delta) are ties.
An event of template phi detected at ``t_det`` is ``phi + (t_det - max(phi))`` shifted exactly
(Definition 4), never a rounded absolute histogram.

:func:`stime_bracket` gives Definition 8's satisfaction time as the two adjacent doubles that
enclose it (or the exact double when it is one): Lemma 3's monotone f is bisected over its
exact configuration breakpoints and the configuration's quadratic is solved exactly.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from workbench.timestamps import HistogramTimestamp

__all__ = [
    "ExactHistogram",
    "band_exact",
    "band_prob_exact",
    "ge_exact",
    "stime_bracket",
]

_ONE = Fraction(1)
_HALF = Fraction(1, 2)


@dataclass(frozen=True)
class ExactHistogram:
    """A histogram as exact rationals: ``edges`` (n+1, increasing) and ``probs`` (sum 1).

    >>> h = ExactHistogram.of(HistogramTimestamp.from_buckets([(0, 1, .25), (1, 3, .75)]))
    >>> [str(x) for x in h.edges], [str(p) for p in h.probs]
    (['0', '1', '3'], ['1/4', '3/4'])
    """

    edges: tuple[Fraction, ...]
    probs: tuple[Fraction, ...]

    @classmethod
    def of(cls, h: HistogramTimestamp, shift: Fraction = Fraction(0)) -> ExactHistogram:
        """The exact histogram of ``h + shift`` (the float edges and probabilities as stored)."""
        return cls.from_arrays(h.edges, h.probs, shift)

    @classmethod
    def from_arrays(
        cls, edges: Sequence[float], probs: Sequence[float], shift: Fraction = Fraction(0)
    ) -> ExactHistogram:
        """Edges plus an exact shift; probabilities normalised by their exact sum (zero-width
        padding buckets, as made by ``pack_histograms``, are dropped)."""
        e = [Fraction(float(x)) for x in edges]
        p = [Fraction(float(x)) for x in probs]
        keep = [k for k in range(len(p)) if e[k + 1] > e[k]]
        total = sum((p[k] for k in keep), Fraction(0))
        out_e = [e[keep[0]] + shift] + [e[k + 1] + shift for k in keep]
        return cls(tuple(out_e), tuple(p[k] / total for k in keep))

    def shifted(self, x: Fraction) -> ExactHistogram:
        """H + x, exactly."""
        return ExactHistogram(tuple(e + x for e in self.edges), self.probs)

    @property
    def min(self) -> Fraction:
        """min(H)."""
        return self.edges[0]

    @property
    def max(self) -> Fraction:
        """max(H)."""
        return self.edges[-1]


def _ge(x: ExactHistogram, y: ExactHistogram) -> Fraction:
    """P(X >= Y) by Theorem 1 (Eq. 3) on the adjusted histograms of Definition 3."""
    if x.min >= y.max:
        return _ONE
    if x.max <= y.min:
        return Fraction(0)
    points = sorted(set(x.edges) | set(y.edges))
    total = Fraction(0)
    below_y = Fraction(0)  # sum over earlier intervals of p~_y
    kx = ky = 0
    nx, ny = len(x.probs), len(y.probs)
    for lo, hi in zip(points[:-1], points[1:], strict=True):
        while kx < nx and x.edges[kx + 1] <= lo:
            kx += 1
        while ky < ny and y.edges[ky + 1] <= lo:
            ky += 1
        width = hi - lo
        px = (
            x.probs[kx] * width / (x.edges[kx + 1] - x.edges[kx])
            if (kx < nx and x.edges[kx] <= lo)
            else Fraction(0)
        )
        py = (
            y.probs[ky] * width / (y.edges[ky + 1] - y.edges[ky])
            if (ky < ny and y.edges[ky] <= lo)
            else Fraction(0)
        )
        if px:
            total += px * (below_y + py * _HALF)
        below_y += py
    return total


def ge_exact(
    hi: HistogramTimestamp | ExactHistogram, hj: HistogramTimestamp | ExactHistogram
) -> Fraction:
    """ge(Hi, Hj) = P(Xi >= Xj) exactly (Definition 2 by Theorem 1 in rationals).

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> float(ge_exact(phi1.detected_at(210) - 90, phi2.detected_at(110)))   # Example 4
    0.925
    """
    x = hi if isinstance(hi, ExactHistogram) else ExactHistogram.of(hi)
    y = hj if isinstance(hj, ExactHistogram) else ExactHistogram.of(hj)
    return _ge(x, y)


def _band(x: ExactHistogram, y: ExactHistogram, d: Fraction) -> Fraction:
    """P(|X - Y| <= d) = ge(Y + d, X) + ge(X + d, Y) - 1, with the certain cases first (the
    rational twin of :func:`workbench.probability.band_from_ge`; no clipping is needed)."""
    if y.min - x.max > d or x.min - y.max > d:
        return Fraction(0)
    if y.max - x.min <= d and x.max - y.min <= d:
        return _ONE
    return _ge(y.shifted(d), x) + _ge(x.shifted(d), y) - _ONE


def band_prob_exact(hi: HistogramTimestamp, hj: HistogramTimestamp, d: float) -> Fraction:
    """P(|Xi - Xj| <= d) exactly, for any d >= 0 (the probability of jc(d, delta)).

    >>> u = HistogramTimestamp.uniform
    >>> band_prob_exact(u(0, 10), u(0, 10), d=5)
    Fraction(3, 4)
    """
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative number")
    return _band(ExactHistogram.of(hi), ExactHistogram.of(hj), Fraction(float(d)))


def band_exact(
    phi_a: ExactHistogram, t_a: float, phi_b: ExactHistogram, t_b: float, d: float
) -> Fraction:
    """P(|Xa - Xb| <= d) of events ``phi_a`` detected at ``t_a`` and ``phi_b`` at ``t_b``.

    ``phi_a`` and ``phi_b`` are templates moved so that their max is 0 (exactly): the events
    are ``phi_a + t_a`` and ``phi_b + t_b`` (Definition 4), placed relative to ``t_b``.

    >>> phi = ExactHistogram.of(HistogramTimestamp.uniform(-10, 0))
    >>> band_exact(phi, 1e12, phi, 1e12 + 5, d=5)
    Fraction(1, 2)
    """
    offset = Fraction(float(t_a)) - Fraction(float(t_b))
    return _band(phi_a.shifted(offset), phi_b, Fraction(float(d)))


Side = Literal["right", "left"]


def _f(xh: ExactHistogram, yh: ExactHistogram, x: Fraction) -> Fraction:
    """Lemma 3's f(x) = P(Xi - x >= Xj), non-increasing in x."""
    return _ge(xh.shifted(-x), yh)


def _holds(value: Fraction, level: Fraction, side: Side) -> bool:
    """Whether f = value is still on the satisfying side of the level at x."""
    return value >= level if side == "right" else value > level


def stime_bracket(
    hi: ExactHistogram, hj: ExactHistogram, level: Fraction, side: Side = "right"
) -> tuple[float, float]:
    """Adjacent doubles ``(lo, hi)`` around x* of Lemma 3's f (``lo == hi`` when x* is one).

    ``side="right"``: x* = sup{x : f(x) >= level} (Eq. 8's stime); ``side="left"``:
    x* = inf{x : f(x) <= level} (Eq. 9's).  ``f(x) = P(Xi - x >= Xj)``; the satisfaction time
    of Definition 8 is ``x* + max(Hi)`` when ``max(Hj) = 0``.

    >>> u = ExactHistogram.of(HistogramTimestamp.uniform(-10, 0))
    >>> stime_bracket(u, u, Fraction(1, 2))
    (0.0, 0.0)
    """
    if not 0 < level < 1:
        raise ValueError(f"level = {level!r} must lie strictly between 0 and 1")
    breaks = sorted({a - b for a in hi.edges for b in hj.edges})
    lo, up = 0, len(breaks) - 1  # f(breaks[0]) = 1 holds, f(breaks[-1]) = 0 does not
    while up - lo > 1:
        mid = (lo + up) // 2
        if _holds(_f(hi, hj, breaks[mid]), level, side):
            lo = mid
        else:
            up = mid
    a, b = breaks[lo], breaks[up]
    # f on [a, b] is one quadratic: f(a + y) = c2 y^2 + c1 y + c0 (three exact samples)
    w = b - a
    f0, fm, f1 = _f(hi, hj, a), _f(hi, hj, a + w / 2), _f(hi, hj, b)
    c0 = f0
    c2 = 2 * (f1 + f0 - 2 * fm) / (w * w)
    c1 = (f1 - f0) / w - c2 * w

    def value_at(x: Fraction) -> Fraction:
        y = x - a
        return f0 if y <= 0 else (f1 if y >= w else (c2 * y + c1) * y + c0)

    def holds_at(x: float) -> bool:
        return _holds(value_at(Fraction(x)), level, side)

    # bisect over doubles by their order: x_lo holds, x_hi does not, until they are adjacent
    x_lo, x_hi = float(a), float(b)
    if not holds_at(x_lo):
        x_lo = math.nextafter(x_lo, -math.inf)
    if holds_at(x_hi):
        x_hi = math.nextafter(x_hi, math.inf)
    k_lo, k_hi = _ordinal(x_lo), _ordinal(x_hi)
    while k_hi - k_lo > 1:
        mid = (k_lo + k_hi) // 2
        if holds_at(_from_ordinal(mid)):
            k_lo = mid
        else:
            k_hi = mid
    x_lo, x_hi = _from_ordinal(k_lo), _from_ordinal(k_hi)
    # right: x_lo <= x* < x_hi; left: x_lo < x* <= x_hi; x* is a double when f equals the level
    if side == "right" and value_at(Fraction(x_lo)) == level:
        return x_lo, x_lo
    if side == "left" and value_at(Fraction(x_hi)) == level:
        return x_hi, x_hi
    return x_lo, x_hi


def _ordinal(x: float) -> int:
    """The position of a double in the ordered doubles (-0.0 and 0.0 share 0)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _from_ordinal(k: int) -> float:
    """The double at position k (inverse of :func:`_ordinal`)."""
    bits = k if k >= 0 else (-k) | (1 << 63)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]
