"""The worked examples of the PTJoin paper (Examples 3, 4 and 5), as data the workbench can show."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.partitions import Partitions, loose_partitions, tight_partitions
from workbench.probability import prob_ge
from workbench.stime import StimeTable, stime
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "Example4",
    "Example5",
    "Example5Setting",
    "example3_templates",
    "example4",
    "example5",
]


def example3_templates() -> TemplateSet:
    """Example 3: the templates phi_1 (sensor s1) and phi_2 (sensor s2).

    >>> [t.buckets() for t in example3_templates()][0]
    [(0.0, 20.0, 0.1), (20.0, 30.0, 0.3), (30.0, 40.0, 0.6)]
    """
    phi1 = HistogramTimestamp.from_buckets([(0, 20, 0.1), (20, 30, 0.3), (30, 40, 0.6)])
    phi2 = HistogramTimestamp.from_buckets(
        [(0, 10, 0.15), (10, 20, 0.3), (20, 30, 0.4), (30, 40, 0.15)]
    )
    return TemplateSet("example3", (phi1, phi2))


@dataclass(frozen=True)
class Example4:
    """The figures of Example 4: two probabilities and the satisfaction time."""

    h2: HistogramTimestamp
    h3: HistogramTimestamp
    prob_90: float
    prob_100: float
    stime_08: float

    def report(self) -> str:
        """The figures as the paper states them."""
        return "\n".join(
            [
                "PTJoin Example 4 (events of Example 3: a2 by s2 at 110, a3 by s1 at 210)",
                f"  H2 = {self.h2!r}",
                f"  H3 = {self.h3!r}",
                f"  prob(H3 - 90 >= H2)  = {self.prob_90:.3f}   (paper: 0.925)",
                f"  prob(H3 - 100 >= H2) = {self.prob_100:.3f}   (paper: 0.769)",
                f"  stime(H3, H2, 0.8)   = {self.stime_08:.2f}  (paper: 208.59)",
            ]
        )


def example4() -> Example4:
    """Compute Example 4 of the PTJoin paper.

    >>> e = example4()
    >>> round(e.prob_90, 3), round(e.prob_100, 3), round(e.stime_08, 2)
    (0.925, 0.769, 208.59)
    """
    phi1, phi2 = example3_templates()
    h2, h3 = phi2.detected_at(110), phi1.detected_at(210)
    return Example4(
        h2=h2,
        h3=h3,
        prob_90=prob_ge(h3, h2, -90.0),
        prob_100=prob_ge(h3, h2, -100.0),
        stime_08=stime(h3, h2, 0.8),
    )


@dataclass(frozen=True)
class Example5Setting:
    """Example 5's setting (PTJoin Section 3.1, Figure 3): ``templates`` random templates per
    stream (H_A, H_B) of ``buckets`` buckets and lengths up to ``max_length`` ms, joined with
    window ``d`` (ms) and confidence ``delta``.

    >>> ha, hb = Example5Setting(templates=3, buckets=4).template_sets(np.random.default_rng(0))
    >>> ha.name, len(hb), hb[0].n_buckets, bool(ha.pi <= 1000.0)
    ('H_A', 3, 4, True)
    """

    templates: int = 500
    buckets: int = 10
    max_length: float = 1000.0
    d: float = 1500.0
    delta: float = 0.8

    def template_sets(self, rng: np.random.Generator) -> tuple[TemplateSet, TemplateSet]:
        """The random template sets H_A and H_B, drawn from ``rng`` in that order."""
        return (
            random_templates(rng, self.templates, self.buckets, self.max_length, name="H_A"),
            random_templates(rng, self.templates, self.buckets, self.max_length, name="H_B"),
        )


@dataclass(frozen=True)
class Example5:
    """Example 5 (Figure 3): the partitions of stream B upon arrival of a_i, tight and loose."""

    templates_a: TemplateSet
    templates_b: TemplateSet
    u: int
    hi: HistogramTimestamp
    d: float
    delta: float
    tight: Partitions
    loose: Partitions


def example5(
    templates: int = 500,
    buckets: int = 10,
    max_length: float = 1000.0,
    d: float = 1500.0,
    delta: float = 0.8,
    t_det: float = 5000.0,
    seed: int = 0,
) -> Example5:
    """Example 5: ``templates`` random templates per stream, a_i from a random template of
    H_A detected at ``t_det``; Theorem 3's tight and Eq. 4-6's loose partitions of B.

    >>> e = example5(templates=20, seed=1)
    >>> e.loose.lpr_lo <= e.tight.lpr_lo and e.tight.rpr_hi <= e.loose.rpr_hi
    True
    """
    rng = np.random.default_rng(seed)
    ha, hb = Example5Setting(templates, buckets, max_length, d, delta).template_sets(rng)
    u = int(rng.integers(templates))
    table = StimeTable.build(ha, hb, delta)
    hi = ha.event(u, t_det)
    return Example5(
        templates_a=ha,
        templates_b=hb,
        u=u,
        hi=hi,
        d=d,
        delta=delta,
        tight=tight_partitions(table, u, t_det, d),
        loose=loose_partitions(hi, d, hb.pi),
    )
