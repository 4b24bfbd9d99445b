"""Partitions of a max-time sorted partner stream (PTJoin paper, Section 3.1 and 3.2).

Upon arrival of a_i, stream B splits by ``max(H_j)`` into the satisfaction range SR (every event
there satisfies jc), the violation range VR (none does) and the probing ranges LPR and RPR
(must be probed).  :func:`loose_partitions` gives Eq. 4-6 (any d, any delta);
:func:`tight_partitions` gives Theorem 3 (d >= max(pi_A, pi_B)); :func:`obsolete_before` gives
Theorem 4's buffer invalidation bound.

Conventions for the boundaries: ``LPR = [lpr_lo, lpr_hi)``, ``SR = [lpr_hi, rpr_lo]``,
``RPR = (rpr_lo, rpr_hi]``, and VR is everything below ``lpr_lo`` or above ``rpr_hi``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from workbench.decision import UNIT_ROUNDOFF
from workbench.stime import StimeTable
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "MARKERS",
    "Partitions",
    "Region",
    "loose_partitions",
    "obsolete_before",
    "tight_partitions",
]


MARKERS = ("LH", "LL", "RL", "RH")
"""The crossing points of the envelopes with delta (interval timing paper, Figure 1(b)):
Left or Right side, crossed by the High (upper) or Low (lower) envelope."""


class Region(IntEnum):
    """Where a partner's max time falls: violation, probing or satisfaction range.

    >>> Region(2).name, int(Region.PR)
    ('SR', 1)
    """

    VR = 0
    PR = 1
    SR = 2


@dataclass(frozen=True)
class Partitions:
    """The ranges of max(H_j) for one arriving event: LPR, SR, RPR (VR is the rest).

    >>> p = Partitions(lpr_lo=0.0, lpr_hi=10.0, rpr_lo=20.0, rpr_hi=30.0)
    >>> [Region(r).name for r in p.classify([-1, 0, 10, 20, 25, 30, 31])]
    ['VR', 'PR', 'SR', 'SR', 'PR', 'PR', 'VR']
    >>> p.index_ranges(np.array([-1., 0., 5., 10., 15., 20., 25., 30., 31.]))
    {'LPR': (1, 3), 'SR': (3, 6), 'RPR': (6, 8)}
    """

    lpr_lo: float
    lpr_hi: float
    rpr_lo: float
    rpr_hi: float

    def __post_init__(self) -> None:
        for name in ("lpr_lo", "lpr_hi", "rpr_lo", "rpr_hi"):
            value = getattr(self, name)
            if not np.isfinite(value):
                raise ValueError(f"{name} = {value!r} must be a finite number")
        if not self.lpr_lo <= self.lpr_hi:
            raise ValueError(f"lpr_lo = {self.lpr_lo!r} exceeds lpr_hi = {self.lpr_hi!r}")
        if not self.rpr_lo <= self.rpr_hi:
            raise ValueError(f"rpr_lo = {self.rpr_lo!r} exceeds rpr_hi = {self.rpr_hi!r}")

    @property
    def sr_empty(self) -> bool:
        """True when the probing ranges overlap, leaving no satisfaction range."""
        return self.lpr_hi > self.rpr_lo

    def classify(self, max_times: float | np.ndarray) -> np.ndarray:
        """The :class:`Region` code of every partner max time."""
        m = np.asarray(max_times, dtype=np.float64)
        region = np.full(m.shape, Region.PR, dtype=np.int8)
        region[(m >= self.lpr_hi) & (m <= self.rpr_lo)] = Region.SR
        region[(m < self.lpr_lo) | (m > self.rpr_hi)] = Region.VR
        return region

    def index_ranges(self, sorted_max_times: np.ndarray) -> dict[str, tuple[int, int]]:
        """Half-open index ranges of LPR, SR and RPR in an ascending array, by binary search.

        When SR is empty the whole probing stretch is reported as LPR and SR/RPR are empty.
        """
        m = np.asarray(sorted_max_times)
        lo = int(np.searchsorted(m, self.lpr_lo, side="left"))
        hi = int(np.searchsorted(m, self.rpr_hi, side="right"))
        if self.sr_empty:
            return {"LPR": (lo, hi), "SR": (hi, hi), "RPR": (hi, hi)}
        sr_lo = int(np.searchsorted(m, self.lpr_hi, side="left"))
        sr_hi = int(np.searchsorted(m, self.rpr_lo, side="right"))
        return {"LPR": (lo, sr_lo), "SR": (sr_lo, sr_hi), "RPR": (sr_hi, hi)}


def loose_partitions(hi: HistogramTimestamp, d: float, pi_b: float) -> Partitions:
    """The delta-independent partitions of Eq. 4-6 for arriving H_i, window d, partner pi_B.

    >>> p = loose_partitions(HistogramTimestamp.uniform(100, 140), d=100, pi_b=30)
    >>> (p.lpr_lo, p.lpr_hi, p.rpr_lo, p.rpr_hi)
    (0.0, 70.0, 200.0, 270.0)
    """
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative number")
    if not pi_b > 0:
        raise ValueError(f"pi_b = {pi_b!r} must be a positive length")
    return Partitions(
        lpr_lo=hi.min - d,  # Eq. 4
        lpr_hi=hi.max - d + pi_b,  # Eq. 4 and 6
        rpr_lo=hi.min + d,  # Eq. 5 and 6
        rpr_hi=hi.max + d + pi_b,  # Eq. 5
    )


def tight_partitions(table: StimeTable, u: int, max_hi: float, d: float) -> Partitions:
    """The tight partitions of Theorem 3 for a_i |= phi_u (stream A) with max(H_i) = max_hi.

    ``LPR = [min_v inv[u, v] + g(-d), max_v inv[u, v] + g(-d))`` and
    ``RPR = (min_v sat[u, v] + g(d), max_v sat[u, v] + g(d)]`` with
    ``g(x) = max(H_i) - max(phi_u) + x``, drawn from the certified stime brackets and widened
    by the rounding of these sums, so SR and VR are exact (the probing ranges may grow by
    a few ulps).

    >>> from workbench.templates import TemplateSet
    >>> u = HistogramTimestamp.uniform
    >>> t = StimeTable.build(TemplateSet("A", (u(0, 10),)), TemplateSet("B", (u(0, 10),)), 0.5)
    >>> p = tight_partitions(t, 0, max_hi=100.0, d=20)
    >>> [round(x, 6) for x in (p.lpr_lo, p.lpr_hi, p.rpr_lo, p.rpr_hi)]
    [80.0, 80.0, 120.0, 120.0]
    """
    table.check_fast_path(d)
    if not 0 <= u < len(table.templates_a):
        raise ValueError(f"u = {u!r} is not a template index of stream {table.templates_a.name!r}")
    max_hi = float(max_hi)
    # the certified brackets (local: stime - max(phi_u)), outer ends for the probing ranges,
    # inner ends for SR, and a margin for the rounding of the sums below
    inv_lo, inv_hi = float(table.inv_lo[u].min()), float(table.inv_hi[u].max())
    sat_lo, sat_hi = float(table.sat_lo[u].min()), float(table.sat_hi[u].max())
    margin = 16 * UNIT_ROUNDOFF * (abs(max_hi) + d + max(abs(inv_lo), abs(sat_hi)))
    return Partitions(
        lpr_lo=max_hi + inv_lo - d - margin,
        lpr_hi=max_hi + inv_hi - d + margin,
        rpr_lo=max_hi + sat_lo + d - margin,
        rpr_hi=max_hi + sat_hi + d + margin,
    )


def obsolete_before(table: StimeTable, max_hi: float, d: float, max_delay_a: float) -> float:
    """Theorem 4: every b_j with ``max(H_j)`` below the returned time is obsolete.

    The bound is ``max(H_i) - D_A - d + t_min`` when a_i from A (max delay D_A) is processed.

    >>> from workbench.templates import TemplateSet
    >>> u = HistogramTimestamp.uniform
    >>> t = StimeTable.build(TemplateSet("A", (u(0, 10),)), TemplateSet("B", (u(0, 10),)), 0.5)
    >>> round(obsolete_before(t, max_hi=100.0, d=20, max_delay_a=50), 6)
    30.0
    """
    table.check_fast_path(d)
    if not max_delay_a >= 0:
        raise ValueError(f"max_delay_a = {max_delay_a!r} must be a non-negative delay")
    bound = float(max_hi) - max_delay_a - d + table.t_min
    return bound - 16 * UNIT_ROUNDOFF * (abs(float(max_hi)) + max_delay_a + d + abs(table.t_min))
