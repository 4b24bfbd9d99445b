"""Exact rational arithmetic for histogram timestamps: the oracle every fast path answers to.

Every float is a dyadic rational, so a histogram's edges and probabilities are exact
rationals (:class:`fractions.Fraction`); the probabilities are normalised by their exact sum.
``ge`` is Theorem 1 (Eq. 3) of the PTJoin paper over the adjusted histograms (Definition 3),
which needs O(n + m) rational operations: no rounding anywhere, so ties (P == delta) are ties.
The rationals are carried as integers over one common denominator per evaluation (edges on the
least common scale of their denominators, each bucket's density over the least common multiple
of its histogram's widths), so a probability costs integer products and one final reduction,
not a normalised :class:`~fractions.Fraction` per step: the same values, exactly.
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
from functools import cached_property
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

    @cached_property
    def _ints(self) -> _Ints:
        """The histogram as integers (computed once per histogram)."""
        return _Ints.of(self)


@dataclass(frozen=True)
class _Ints:
    """An exact histogram in integers: edge k is ``edges[k] / scale``; bucket k holds
    probability ``density[k] * (edges[k + 1] - edges[k]) / base`` (on a scale ``r`` times
    finer, edges and ``base`` are ``r`` times larger and ``density`` is unchanged)."""

    scale: int
    edges: tuple[int, ...]
    density: tuple[int, ...]
    base: int

    @classmethod
    def of(cls, h: ExactHistogram) -> _Ints:
        scale = math.lcm(*(e.denominator for e in h.edges))
        edges = tuple(e.numerator * (scale // e.denominator) for e in h.edges)
        widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
        q = math.lcm(*(p.denominator for p in h.probs))
        w = math.lcm(*(x for x in widths if x > 0))
        density = tuple(
            p.numerator * (q // p.denominator) * (w // x) if x > 0 else 0
            for p, x in zip(h.probs, widths, strict=True)
        )
        return cls(scale, edges, density, q * w)

    def on(self, scale: int, shift: Fraction | int = 0) -> tuple[list[int], int]:
        """Edges moved by ``shift`` on ``scale`` (a multiple of this scale and of the shift's
        denominator), and the base there."""
        r = scale // self.scale
        s = int(shift * scale)
        return [e * r + s for e in self.edges], self.base * r


def _scale(*values: Fraction | _Ints) -> int:
    """The least common scale of histograms' edges and of rationals."""
    return math.lcm(*(v.scale if isinstance(v, _Ints) else v.denominator for v in values))


def _ge_int(xe: list[int], xd: tuple[int, ...], ye: list[int], yd: tuple[int, ...]) -> int:
    """``P(X >= Y) * 2 * base_x * base_y`` (Theorem 1, Eq. 3, on the adjusted histograms) for
    X and Y with integer edges ``xe``, ``ye`` on one scale and densities ``xd``, ``yd``, when
    neither lies wholly beyond the other (the caller decides those): an integer, exactly."""
    points = sorted(set(xe) | set(ye))
    total = below_y = 0  # below_y: the mass of Y on earlier intervals, over base_y
    kx = ky = 0
    nx, ny = len(xd), len(yd)
    lo = points[0]
    for hi in points[1:]:
        while kx < nx and xe[kx + 1] <= lo:
            kx += 1
        while ky < ny and ye[ky + 1] <= lo:
            ky += 1
        width = hi - lo
        py = yd[ky] * width if (ky < ny and ye[ky] <= lo) else 0
        if kx < nx and xe[kx] <= lo:
            px = xd[kx] * width
            if px:
                total += px * (2 * below_y + py)
        below_y += py
        lo = hi
    return total


def _ge_num(
    xe: list[int], xd: tuple[int, ...], ye: list[int], yd: tuple[int, ...], one: int
) -> int:
    """``P(X >= Y) * one`` with ``one = 2 * base_x * base_y``: the certain cases, then
    :func:`_ge_int`."""
    if xe[0] >= ye[-1]:
        return one
    if xe[-1] <= ye[0]:
        return 0
    return _ge_int(xe, xd, ye, yd)


def _ge(x: ExactHistogram, y: ExactHistogram) -> Fraction:
    """P(X >= Y) by Theorem 1 (Eq. 3) on the adjusted histograms of Definition 3."""
    xi, yi = x._ints, y._ints
    scale = _scale(xi, yi)
    (xe, bx), (ye, by) = xi.on(scale), yi.on(scale)
    one = 2 * bx * by
    return Fraction(_ge_num(xe, xi.density, ye, yi.density, one), one)


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


def _band(
    x: ExactHistogram, y: ExactHistogram, d: Fraction, shift: Fraction = Fraction(0)
) -> Fraction:
    """P(|X + shift - Y| <= d) = ge(Y + d, X + shift) + ge(X + shift + d, Y) - 1, with the
    certain cases first (the rational twin of :func:`workbench.probability.band_from_ge`; no
    clipping is needed)."""
    return _band_ratios(x, y, d.numerator, d.denominator, shift.numerator, shift.denominator)


def _band_ratios(
    x: ExactHistogram, y: ExactHistogram, d_num: int, d_den: int, s_num: int, s_den: int
) -> Fraction:
    """:func:`_band` with ``d = d_num / d_den`` and ``shift = s_num / s_den``."""
    xi, yi = x._ints, y._ints
    scale = math.lcm(xi.scale, yi.scale, d_den, s_den)
    r = scale // xi.scale
    s = s_num * (scale // s_den)
    xe, bx = [e * r + s for e in xi.edges], xi.base * r
    ye, by = yi.on(scale)
    di = d_num * (scale // d_den)
    if ye[0] - xe[-1] > di or xe[0] - ye[-1] > di:
        return Fraction(0)
    if ye[-1] - xe[0] <= di and xe[-1] - ye[0] <= di:
        return _ONE
    one = 2 * bx * by
    y_d = [e + di for e in ye]
    x_d = [e + di for e in xe]
    both = _ge_num(y_d, yi.density, xe, xi.density, one) + _ge_num(
        x_d, xi.density, ye, yi.density, one
    )
    return Fraction(both - one, one)


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
    (na, da), (nb, db) = float(t_a).as_integer_ratio(), float(t_b).as_integer_ratio()
    s_den = math.lcm(da, db)
    s_num = na * (s_den // da) - nb * (s_den // db)  # t_a - t_b, exactly
    return _band_ratios(phi_a, phi_b, *float(d).as_integer_ratio(), s_num, s_den)


Side = Literal["right", "left"]


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
    # in integers: x is x_int / scale and f(x) is f_num(x_int) / one; breaks and their
    # midpoints (hence the factor 2) lie on the scale
    xi, yi = hi._ints, hj._ints
    scale = 2 * _scale(xi, yi)
    (xe, bx), (ye, by) = xi.on(scale), yi.on(scale)
    one = 2 * bx * by
    exact_level = Fraction(level)
    above = exact_level.numerator * one  # f holds at or above it, times the level's denominator

    def f_num(x: int) -> int:
        return _ge_num([e - x for e in xe], xi.density, ye, yi.density, one)

    def holds_num(x: int) -> bool:
        value = f_num(x) * exact_level.denominator
        return value >= above if side == "right" else value > above

    breaks = sorted({a - b for a in xe for b in ye})
    lo, up = 0, len(breaks) - 1  # f(breaks[0]) = 1 holds, f(breaks[-1]) = 0 does not
    while up - lo > 1:
        mid = (lo + up) // 2
        if holds_num(breaks[mid]):
            lo = mid
        else:
            up = mid
    a_int, b_int = breaks[lo], breaks[up]
    # f on [a, b] is one quadratic: f(a + y) = c2 y^2 + c1 y + c0 (three exact samples)
    f0, fm, f1 = (Fraction(f_num(x), one) for x in (a_int, (a_int + b_int) // 2, b_int))
    a, b = Fraction(a_int, scale), Fraction(b_int, scale)
    w = b - a
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
