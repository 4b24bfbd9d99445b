"""The PTJoin explorer: steer delta, d and an arriving event; see templates, satisfaction
curves and the tight partitions of Theorem 3 against the loose ones of Eq. 4-6."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param

from workbench.paper_examples import example3_templates
from workbench.partitions import Partitions, loose_partitions, tight_partitions
from workbench.stime import StimeTable
from workbench.timestamps import TemplateSet
from workbench.viz.ptjoin import histogram_element, partition_spans, satisfaction_curves

__all__ = ["PTJoinExplorer"]


def _default_streams() -> tuple[TemplateSet, TemplateSet]:
    """Example 3's sensors s1 and s2 feed both streams; a_i defaults to a3 (s1, t = 210)."""
    templates = tuple(example3_templates())
    return TemplateSet("A", templates), TemplateSet("B", templates)


class PTJoinExplorer(pn.viewable.Viewer):
    """Interactive PTJoin partitions for one arriving event a_i of stream A."""

    delta = param.Number(
        0.8,
        bounds=(0.01, 0.99),
        step=0.01,
        label="confidence delta",
        doc="Confidence threshold delta of jc(d, delta).",
    )
    d = param.Number(
        60.0,
        bounds=(0.0, 2000.0),
        step=1.0,
        label="window d (ms)",
        doc="Join window d: pairs need P(|Xa - Xb| <= d) >= delta.",
    )
    t_det = param.Number(
        210.0,
        bounds=(0.0, 10_000.0),
        label="detection time of a_i (ms)",
        doc="Detection time of the arriving event a_i, so max(H_i) = t_det.",
    )
    template = param.Integer(
        0, bounds=(0, None), label="template u of a_i", doc="Template index u of a_i in stream A."
    )
    stream_a = param.ClassSelector(class_=TemplateSet, doc="Templates of stream A.")
    stream_b = param.ClassSelector(class_=TemplateSet, doc="Templates of stream B.")
    table = param.ClassSelector(class_=StimeTable, doc="stime tables for the current delta.")

    def __init__(self, **params: object) -> None:
        if "stream_a" not in params or "stream_b" not in params:
            a, b = _default_streams()
            params.setdefault("stream_a", a)
            params.setdefault("stream_b", b)
        super().__init__(**params)
        self._bound_template()
        self._rebuild_table()

    @param.depends("stream_a", watch=True)
    def _bound_template(self) -> None:
        self.param.template.bounds = (0, len(self.stream_a) - 1)
        self.template = min(self.template, len(self.stream_a) - 1)

    @param.depends("delta", "stream_a", "stream_b", watch=True)
    def _rebuild_table(self) -> None:
        self.table = StimeTable.build(self.stream_a, self.stream_b, self.delta)

    @property
    def fast_path(self) -> bool:
        """Whether d >= max(pi_A, pi_B), so Theorem 3's tight partitions apply."""
        return self.d >= self.table.min_d

    def partitions(self) -> dict[str, Partitions]:
        """The loose partitions (Eq. 4-6) and, on the fast path, the tight ones (Theorem 3)."""
        hi = self.stream_a.event(self.template, self.t_det)
        out = {"loose": loose_partitions(hi, self.d, self.stream_b.pi)}
        if self.fast_path:
            out["tight"] = tight_partitions(self.table, self.template, self.t_det, self.d)
        return out

    @param.depends("template", "stream_a", "stream_b")
    def templates_view(self) -> hv.Overlay:
        """The template histograms of both streams (Figure 2)."""
        hists = [histogram_element(t, f"A: phi_{k}") for k, t in enumerate(self.stream_a)]
        hists += [histogram_element(t, f"B: phi_{k}") for k, t in enumerate(self.stream_b)]
        return hv.Overlay(hists).opts(
            hv.opts.Histogram(alpha=0.5), hv.opts.Overlay(title="Template histograms")
        )

    @param.depends("delta", "d", "t_det", "template", "table")
    def curve_view(self) -> hv.Overlay:
        """Satisfaction probability against the partner's max time, with the partitions."""
        parts = self.partitions()
        p = parts.get("tight", parts["loose"])
        lo, hi = parts["loose"].lpr_lo - 50, parts["loose"].rpr_hi + 50
        xs = np.linspace(lo, hi, 600)
        hi_event = self.stream_a.event(self.template, self.t_det)
        title = "Theorem 3 partitions" if "tight" in parts else "Eq. 4-6 partitions (d < max pi)"
        return (
            partition_spans(p, lo, hi)
            * satisfaction_curves(hi_event, self.stream_b, self.d, xs)
            * hv.HLine(self.delta).opts(color="black", line_dash="dashed")
        ).opts(
            hv.opts.Overlay(
                title=title,
                xlim=(lo, hi),
                ylim=(-0.02, 1.02),
                xlabel="max(H_j) of the partner b_j (ms)",
                ylabel="P(|Xi - Xj| <= d)",
                responsive=True,
                height=350,
            )
        )

    def __panel__(self) -> pn.viewable.Viewable:
        controls = pn.Column(
            pn.widgets.FloatSlider.from_param(self.param.delta),
            pn.widgets.FloatSlider.from_param(self.param.d),
            pn.widgets.FloatInput.from_param(self.param.t_det),
            pn.widgets.IntInput.from_param(self.param.template),
            width=280,
        )
        return pn.Row(
            controls,
            pn.Column(
                pn.pane.HoloViews(self.templates_view, sizing_mode="stretch_width", height=250),
                pn.pane.HoloViews(self.curve_view, sizing_mode="stretch_width", height=380),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
