"""The template editor: see, pick, generate and edit the template histograms of both streams,
and the adjusted histograms of a pair (PTJoin paper, Definitions 1, 3 and 4, Example 5).

The page only lays out and draws; the templates, the edits and the readouts are
:class:`~workbench.app.templates_model.TemplatesModel`'s, which the editor extends with its
layout (so ``TemplateEditor(...)`` and its parameters stay as they were).
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.plotting import figure

from workbench.app.panes import following, intro, plain_help
from workbench.app.templates_model import SOURCES, TemplatesModel, format_buckets, parse_buckets
from workbench.viz.figures import View, share_parts
from workbench.viz.ptjoin import (
    adjusted_bar_view,
    adjusted_bars,
    template_bar_view,
    template_bars,
)

__all__ = ["SOURCES", "TemplateEditor", "format_buckets", "parse_buckets"]


class TemplateEditor(TemplatesModel, pn.viewable.Viewer):
    """Both streams' templates: pick one, generate a set, edit buckets, compare a pair (the
    model's controls, readouts and bar charts)."""

    def template_view(self, name: str) -> View:
        """Stream ``name``'s templates as bars over the offset from detection (Definition 4)."""
        return template_bar_view(
            self.templates_of(name), self.picked_of(name), self.bar_title(name)
        )

    def template_figure(self, name: str) -> figure:
        """:meth:`template_view` drawn, following the streams and the picked template."""
        return following(
            self,
            [f"stream_{name.lower()}", "stream", "picked"],
            template_bars(self.template_view(name)),
            lambda: self.template_view(name),
        )

    def adjusted_view(self) -> View:
        """The adjusted histograms of the pair (Definition 3) with P(Xi >= Xj) (Theorem 1)."""
        hi, hj = self.pair()
        return adjusted_bar_view(hi, hj, self.adjusted_title())

    def adjusted_figure(self) -> figure:
        """:meth:`adjusted_view` drawn, following the pair."""
        return following(
            self,
            ["stream_a", "stream_b", "pair_u", "pair_v", "offset"],
            adjusted_bars(self.adjusted_view()),
            self.adjusted_view,
        )

    @param.depends("stream_a", "stream_b")
    def counts_text(self) -> str:
        """:meth:`shown` over the generator's heading: one pane, not two (a Markdown pane is
        two Bokeh models a session, rendered on the server)."""
        return f"{self.shown()}\n\n### Generate random templates"

    @param.depends("stream_a", "stream_b", "pair_u", "pair_v", "offset")
    def pair_text(self) -> str:
        """The pair's heading over :meth:`pair_summary`: one pane, not two."""
        return (
            "### Adjusted histograms of a pair: both cut at every bucket edge of either "
            f"(Definition 3)\n\n{self.pair_summary()}"
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        select, whole, real = (plain_help(c) for c in (w.Select, w.IntInput, w.FloatInput))
        bars_a, bars_b, adjusted = (*map(self.template_figure, "AB"), self.adjusted_figure())
        share_parts(bars_a, bars_b, adjusted)
        controls = pn.Column(
            "### Source",
            select.from_param(self.param.source),
            pn.pane.Markdown(self.counts_text, css_classes=["template-counts"]),
            pn.Row(
                whole.from_param(self.param.count, width=135),
                whole.from_param(self.param.n_buckets, width=135),
            ),
            pn.Row(
                real.from_param(self.param.max_length, width=135),
                whole.from_param(self.param.seed, width=135),
            ),
            plain_help(w.Button).from_param(self.param.generate, name="Generate random templates"),
            "### Edit a template",
            plain_help(w.RadioButtonGroup).from_param(self.param.stream),
            whole.from_param(self.param.picked),
            plain_help(w.TextAreaInput).from_param(self.param.buckets, height=180),
            plain_help(w.Button).from_param(self.param.apply, name="Apply", color="primary"),
            pn.pane.Alert(self.status, alert_type=self.status_kind),
            width=300,
        )
        pair = [
            pn.pane.Markdown(self.pair_text),
            pn.Row(
                whole.from_param(self.param.pair_u, width=120),
                whole.from_param(self.param.pair_v, width=120),
                plain_help(w.FloatSlider).from_param(self.param.offset, width=300),
            ),
            pn.pane.Bokeh(adjusted, sizing_mode="stretch_width"),
        ]
        return pn.Column(
            intro(
                "Each bar chart shows one stream's templates: how long before its detection "
                "an event of each sensor occurred, as a histogram (the picked template in blue, "
                "the others grey). Pick, edit or generate templates on the left; below, two "
                "events' histograms cut at each other's bucket edges (the adjusted histograms "
                "H_i~ and H_j~) give the probability that one occurred before the other.",
                "Histogram timestamps",
            ),
            pn.Row(
                controls,
                pn.Column(
                    pn.Row(
                        *(pn.pane.Bokeh(f, sizing_mode="stretch_width") for f in (bars_a, bars_b)),
                        sizing_mode="stretch_width",
                    ),
                    *pair,
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
