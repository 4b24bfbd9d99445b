"""The Satisfaction probability tab's state and computation, no Panel: for a base event and the
partner templates, the curves of P(|Xi - Xj| <= d) against the partner's max time, delta, and
the crossing points LH, LL, RL, RH (interval timing paper, Figure 1; PTJoin paper, Figure 3,
Theorem 3), against the loose partitions of Eq. 4-6.  The page is
:class:`~workbench.app.ptjoin.PTJoinExplorer`'s.
"""

from __future__ import annotations

import numpy as np
import param

from workbench.app.controls import confidence_delta
from workbench.interval_bounds import interval_bounds
from workbench.paper_examples import example3_templates
from workbench.partitions import MARKERS, Partitions, loose_partitions, tight_partitions
from workbench.probability import satisfaction_grid
from workbench.stime import StimeTable
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = ["MODELS", "PTJoinModel", "scaled"]

MODELS = ("histograms", "intervals")
"""Timestamp models: histogram templates (PTJoin) or uniform intervals (interval paper)."""

CURVE_POINTS = 200
"""Partner max times evaluated per curve across the plotted range."""
EDGE_POINTS = 60
"""Extra partner max times in each loose probing range, where the curves rise and fall."""
LOOSE_NAMES = ("(1)", "(4)", "(5)", "(8)")
"""The loose partition bounds' names: their equations in the interval timing paper (Eq. 4-6)."""
INTERVAL_LENGTHS = 48
"""Partner lengths in (0, pi] standing for every uniform target in the interval model."""


def _default_streams() -> tuple[TemplateSet, TemplateSet]:
    """Example 3's sensors s1 and s2 feed both streams; a_i defaults to a3 (s1, t = 210)."""
    templates = tuple(example3_templates())
    return TemplateSet("A", templates), TemplateSet("B", templates)


def scaled(templates: TemplateSet, pi: float) -> TemplateSet:
    """The templates stretched in time so that their longest has length ``pi`` (Def. 5).

    >>> u = HistogramTimestamp.uniform
    >>> scaled(TemplateSet("B", (u(0, 10), u(0, 20))), 40.0).pi
    40.0
    """
    if not pi > 0:
        raise ValueError(f"pi = {pi!r} must be a positive length")
    if pi == templates.pi:
        return templates
    factor = pi / templates.pi
    return TemplateSet(
        templates.name, tuple(HistogramTimestamp(t.edges * factor, t.probs) for t in templates)
    )


class PTJoinModel(param.Parameterized):
    """Satisfaction probability of a base event a_i against the partner stream's templates:
    the parameters, the stime table, the curves' grid, the partitions and the readout."""

    delta = confidence_delta()
    d = param.Number(
        60.0,
        bounds=(0.0, 20_000.0),
        step=1.0,
        label="window d (ms)",
        doc="Join window d: pairs need P(|Xa - Xb| <= d) >= delta.",
    )
    pi = param.Number(
        40.0,
        bounds=(1.0, None),
        step=1.0,
        label="partner pi (ms)",
        doc="pi: length of the longest partner template; all are stretched to it (Definition 5).",
    )
    t_det = param.Number(
        210.0,
        bounds=(0.0, 20_000.0),
        step=1.0,
        label="detection time of a_i (ms)",
        doc="Detection time of the base event a_i, so max(H_i) = t_det.",
    )
    template = param.Integer(
        0, bounds=(0, None), label="template u of a_i", doc="Template index u of a_i in stream A."
    )
    model = param.Selector(
        objects=list(MODELS),
        default="histograms",
        doc="Histogram templates (PTJoin Theorem 3) or uniform intervals of length <= pi "
        "(interval timing paper, Section 4.1).",
    )
    stream_a = param.ClassSelector(class_=TemplateSet, doc="Templates of stream A.")
    stream_b = param.ClassSelector(class_=TemplateSet, doc="Templates of stream B (partners).")
    table = param.ClassSelector(class_=StimeTable, doc="stime tables for delta and partners.")

    def __init__(self, **params: object) -> None:
        if "stream_a" not in params or "stream_b" not in params:
            a, b = _default_streams()
            params.setdefault("stream_a", a)
            params.setdefault("stream_b", b)
        super().__init__(**params)
        self._grid: tuple[tuple, np.ndarray, np.ndarray] | None = None
        self._bound_template()
        self._bound_pi(reset="pi" not in params)

    @param.depends("stream_a", watch=True)
    def _bound_template(self) -> None:
        self.param.template.bounds = (0, len(self.stream_a) - 1)
        self.template = min(self.template, len(self.stream_a) - 1)

    @param.depends("stream_b", watch=True)
    def _bound_pi(self, reset: bool = True) -> None:
        """pi ranges around the partner stream's own pi (and resets to it on a new stream)."""
        own = self.stream_b.pi
        self.param.pi.softbounds = (own / 10, own * 4)
        self.param.pi.step = max(own / 200, 0.01)
        if reset and self.pi != own:
            self.pi = own  # rebuilds the table
        else:
            self._rebuild_table()

    @param.depends("delta", "pi", "stream_a", watch=True)
    def _rebuild_table(self) -> None:
        self.table = StimeTable.build(self.stream_a, self.partners, self.delta)

    @property
    def partners(self) -> TemplateSet:
        """The partner templates: stream B stretched to pi (histogram model)."""
        return scaled(self.stream_b, self.pi)

    def base_event(self) -> HistogramTimestamp:
        """H_i of a_i: template u detected at t_det (or the uniform interval of its length)."""
        hi = self.stream_a.event(self.template, self.t_det)
        if self.model == "intervals":
            return HistogramTimestamp.uniform(hi.min, hi.max)
        return hi

    def partner_set(self) -> TemplateSet:
        """The partner templates the curves range over (uniform lengths in the interval model)."""
        if self.model == "intervals":
            lengths = self.pi * np.linspace(1.0 / INTERVAL_LENGTHS, 1.0, INTERVAL_LENGTHS)
            return TemplateSet(
                "uniform", tuple(HistogramTimestamp.uniform(0.0, x) for x in lengths)
            )
        return self.partners

    @property
    def fast_path(self) -> bool:
        """Whether the exact bounds apply: d >= max(pi_A, pi_B) (Theorem 3; Corollary 3)."""
        if self.model == "intervals":
            hi = self.base_event()
            return self.d >= max(self.pi, hi.length)
        return self.d >= self.table.min_d

    def partitions(self) -> dict[str, Partitions]:
        """The loose partitions (Eq. 4-6) and, when they apply, the tight ones."""
        hi = self.base_event()
        out = {"loose": loose_partitions(hi, self.d, self.pi)}
        if self.fast_path:
            if self.model == "intervals":
                b = interval_bounds(hi.min, hi.max, self.d, self.delta, self.pi)
                out["tight"] = b.partitions()
            else:
                out["tight"] = tight_partitions(self.table, self.template, self.t_det, self.d)
        return out

    def markers(self) -> dict[str, float]:
        """LH, LL, RL, RH: the tight partition bounds, or the loose ones off the fast path."""
        parts = self.partitions()
        p = parts.get("tight", parts["loose"])
        return dict(zip(MARKERS, (p.lpr_lo, p.lpr_hi, p.rpr_lo, p.rpr_hi), strict=True))

    def loose_marks(self) -> dict[str, float]:
        """The loose bounds (1), (4), (5), (8) of Eq. 4-6, by name."""
        loose = self.partitions()["loose"]
        bounds = (loose.lpr_lo, loose.lpr_hi, loose.rpr_lo, loose.rpr_hi)
        return dict(zip(LOOSE_NAMES, bounds, strict=True))

    def curves(self) -> tuple[np.ndarray, np.ndarray]:
        """Partner max times and the probability of every partner template at each.

        The grid spans Eq. 4-6's partitions with a margin, so every curve starts and ends at 0
        (outside them no partner can satisfy), and is denser in the loose probing ranges where
        the curves rise and fall. The probabilities depend on max(H_j) - t_det only, and not on
        delta: the grid is computed relative to t_det and kept until u, d, pi, the model or the
        streams change.
        """
        cached = (self.template, self.d, self.pi, self.model, self.stream_a, self.stream_b)
        if self._grid is None or self._grid[0] != cached:
            loose = self.partitions()["loose"]
            margin = 0.1 * (loose.rpr_hi - loose.lpr_lo)
            rel = np.unique(
                np.concatenate(
                    [
                        np.linspace(loose.lpr_lo - margin, loose.rpr_hi + margin, CURVE_POINTS),
                        np.linspace(loose.lpr_lo, loose.lpr_hi, EDGE_POINTS),
                        np.linspace(loose.rpr_lo, loose.rpr_hi, EDGE_POINTS),
                    ]
                )
            )
            rel -= self.t_det
            hi = self.base_event() - self.t_det
            self._grid = (cached, rel, satisfaction_grid(hi, self.partner_set(), self.d, rel))
        _, rel, probs = self._grid
        return rel + self.t_det, probs

    def title(self) -> str:
        """The plot's title: what it shows, then which bounds it marks (and their source)."""
        if not self.fast_path:
            bounds = "loose bounds only (Eq. 4-6): d is below the longest template"
        elif self.model == "intervals":
            bounds = "exact bounds for uniform intervals (interval paper, Section 4.1)"
        else:
            bounds = "exact bounds (PTJoin Theorem 3)"
        return f"Satisfaction probability of a_i with a partner b_j; {bounds}"

    @param.depends("d", "t_det", "template", "model", "table")  # delta, pi: via the table
    def summary(self) -> str:
        """The four crossing points against the loose bounds, in ms (Markdown)."""
        marks = self.markers()
        loose = self.partitions()["loose"]
        exact = "exact, Theorem 3" if self.fast_path else "d < pi: loose fallback"
        rows = [
            f"| {name} | {marks[name]:,.1f} | {eq} {bound:,.1f} |"
            for name, (eq, bound) in zip(MARKERS, self.loose_marks().items(), strict=True)
        ]
        return (
            f"**Range bounds, ms ({exact})**\n\n| | tight | loose (Eq. 4-6) |\n|---|---|---|\n"
            + "\n".join(rows)
            + f"\n\nSR (all join) is {marks['RL'] - marks['LL']:,.1f} ms wide, "
            f"{loose.rpr_lo - loose.lpr_hi:,.1f} ms by the loose bounds"
        )
