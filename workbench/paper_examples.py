"""The worked examples of the PTJoin paper (Examples 3 and 4), as data the workbench can show."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.probability import prob_ge
from workbench.stime import stime
from workbench.timestamps import HistogramTimestamp, TemplateSet

__all__ = ["Example4", "example3_templates", "example4"]


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
