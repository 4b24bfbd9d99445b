"""Satisfaction time (PTJoin paper, Section 3.1, Definition 8) and its tables.

``stime(Hi, Hj, delta)`` is the time T with ``prob(Hi + max(Hj) - T >= Hj) = delta``.  As a
function of the shift x, ``f(x) = prob(Hi - x >= Hj)`` is non-increasing (Lemma 3) and quadratic
between the *configurations*' breakpoints ``x = e_i - e_j`` (an edge of Hi meets an edge of Hj).
:func:`stime` binary-searches those breakpoints for the configuration bounding delta and solves
that configuration's quadratic in closed form, as the paper describes after Definition 8.

:func:`stime_table` computes stime for every template pair of two streams at once, and
:class:`StimeTable` decides pairs by Theorem 2, both from the certified brackets of
:mod:`workbench.stime_brackets` (vectorised over the pairs); a pair whose comparison falls
inside a bracket goes to the exact band probability, so every decision is exact.

Where f is flat at the level (zero-probability buckets can make it so) the paper's T is not
unique; ``side="right"`` is the largest T with ``prob >= delta`` (what Theorem 2's Eq. 8
needs) and ``side="left"`` the smallest T with ``prob <= delta`` (what Eq. 9 needs).  Both agree
wherever the crossing is unique.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from workbench.decision import UNIT_ROUNDOFF, BandDecider
from workbench.exact import ExactHistogram, stime_bracket
from workbench.stime_brackets import Side, check_side, stime_brackets
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = ["StimeTable", "stime", "stime_table"]


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    return delta


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
    check_side(side)
    # Eq. 7 and invariance under shifting Hj: both maxima at 0 (exactly), then shift back
    lo, hi_x = stime_bracket(
        ExactHistogram.of(hi, -Fraction(hi.max)),
        ExactHistogram.of(hj, -Fraction(hj.max)),
        Fraction(delta),
        side,
    )
    x = lo if side == "right" else hi_x
    return float(Fraction(x) + Fraction(hi.max))


def stime_table(ha: TemplateSet, hb: TemplateSet, delta: float, side: Side = "right") -> np.ndarray:
    """stime(phi_u, phi_v, delta) for every u in ha and v in hb, shape (len(ha), len(hb)).

    Vectorised over all pairs, each value inside its certified bracket
    (:func:`~workbench.stime_brackets.stime_brackets`), so it agrees with :func:`stime` to
    within that bracket.

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
