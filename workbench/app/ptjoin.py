"""The satisfaction-probability explorer: for a base event and the partner templates, the
curves of P(|Xi - Xj| <= d) against the partner's max time, their envelopes, delta, and the
crossing points LH, LL, RL, RH (interval timing paper, Figure 1; PTJoin paper, Figure 3,
Theorem 3), against the loose partitions of Eq. 4-6.

The page only lays out and draws; the parameters and what they compute are
:class:`~workbench.app.ptjoin_model.PTJoinModel`'s, which the explorer extends with its layout
(so ``PTJoinExplorer(stream_a=..., d=...)`` and its parameters stay as they were).
"""

from __future__ import annotations

import numpy as np
import panel as pn

from workbench.app.panes import controls_page, following_view, plain_help, plot_key
from workbench.app.ptjoin_model import MODELS, PTJoinModel, scaled
from workbench.partitions import Partitions
from workbench.viz.figures import View, share_parts
from workbench.viz.ptjoin import (
    DELTA_COLOR,
    curve_layers,
    delta_layer,
    line_swatch,
    marker_layer,
    region_entries,
    region_layer,
)

__all__ = ["MODELS", "PTJoinExplorer", "scaled"]

INTRO = (
    "For one event a_i of stream A, the chart shows the probability that a partner "
    "b_j of stream B occurred within d ms of it, as b_j's detection time slides "
    "along the axis: one grey curve per partner template and their envelopes. "
    "Where the envelopes cross the confidence delta they split the axis into "
    "ranges where every partner joins (green), some do (orange) or none does "
    "(red). Move delta, d or pi (the length of the longest partner template) "
    "and watch the ranges move; below d = pi only the looser bounds apply."
)


class PTJoinExplorer(PTJoinModel, pn.viewable.Viewer):
    """Satisfaction probability of a base event a_i against the partner stream's templates:
    the model's controls, its readout and the plot of its curves."""

    def curve_view(self) -> View:
        """Curves, envelopes, delta, LH/LL/RL/RH and the loose bounds (1), (4), (5), (8)."""
        xs, probs = self.curves()
        loose = self.partitions()["loose"]
        marks = self.markers()
        shaded = Partitions(*marks.values()) if marks["LL"] <= marks["RL"] else loose
        span = xs[-1] - xs[0]
        named = marker_layer(marks, "marker", "black", 1.02, span=span)
        return View(
            self.title(),
            (xs[0], xs[-1]),
            (-0.02, max(1.1, float(np.max(named.columns["y"])) + 0.08)),
            {
                "regions": region_layer(shaded, xs[0], xs[-1]),
                **curve_layers(xs, probs),
                "delta": delta_layer(self.delta),
                "loose": marker_layer(self.loose_marks(), "loose", "gray", 0.02, "dashed", span),
                "marker": named,
            },
        )

    @staticmethod
    def legend() -> pn.pane.Markdown:
        """What every mark of the plot means, in plain words."""
        return plot_key(
            [
                *region_entries(),
                (line_swatch("gray", width=1), "one partner template's curve (first 12)"),
                (line_swatch("black"), "upper envelope (best template)"),
                (line_swatch("black", "dotted"), "lower envelope (worst template)"),
                (line_swatch(DELTA_COLOR, "dashed"), "delta, the probability a pair needs"),
                (
                    line_swatch("black", width=1),
                    "LH, LL, RL, RH: where the envelopes cross delta (Left or Right side; "
                    "High = upper, Low = lower envelope)",
                ),
                (
                    line_swatch("gray", "dashed", 1),
                    "(1), (4), (5), (8): looser bounds from the lengths alone (Eq. 4-6)",
                ),
            ]
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        controls = [
            w.FloatSlider.from_param(self.param.delta),
            w.FloatSlider.from_param(self.param.d),
            w.FloatSlider.from_param(self.param.pi),
            w.FloatSlider.from_param(self.param.t_det),
            plain_help(w.IntInput).from_param(self.param.template),
            w.RadioButtonGroup.from_param(self.param.model),
            pn.pane.Markdown(self.summary),
        ]
        shown = following_view(
            self,
            self.curve_view,
            ["d", "t_det", "template", "model", "table"],  # delta, pi: via the table
            "detection time max(H_j) of the partner b_j",
            "P(|Xi - Xj| <= d)",
        )
        share_parts(shown.object)
        return controls_page(INTRO, "Satisfaction probability", controls, shown, self.legend())
