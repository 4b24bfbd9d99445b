"""Plots of the Intel Lab deployment (real or simulated): mote map, readings, coalesced runs,
as plain Bokeh figures (:mod:`workbench.viz.figures`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.palettes import RdBu11
from bokeh.plotting import figure
from bokeh.transform import linear_cmap

from workbench.coalesce.window import Coalesced
from workbench.viz.figures import Layer, View, view_figure

__all__ = ["coalesced_layer", "mote_map", "reading_layer"]

COOL_TO_WARM = RdBu11
"""Low values blue, high values red (Bokeh lists RdBu from its blue end)."""


def mote_map(
    positions: pd.DataFrame,
    value: pd.Series,
    title: str,
    clabel: str = "value",
    height: int = 320,
    tools: str = "",
) -> figure:
    """Motes at their positions (metres, y down as on the lab's floor plan), coloured by a
    value per mote (``clabel`` names it on the colour bar; hovering a mote reads it).  The
    floor plan shows all its motes at once: no zoom tools unless ``tools`` names some
    (:func:`~workbench.viz.figures.plain_figure`)."""
    values = positions["mote"].map(value).to_numpy(dtype=float)
    known = values[np.isfinite(values)]
    low, high = (float(known.min()), float(known.max())) if known.size else (0.0, 1.0)
    pad_x = 0.05 * float(np.ptp(positions["x"])) + 1.0
    pad_y = 0.05 * float(np.ptp(positions["y"])) + 1.0
    view = View(
        title,
        (float(positions["x"].min()) - pad_x, float(positions["x"].max()) + pad_x),
        (float(positions["y"].max()) + pad_y, float(positions["y"].min()) - pad_y),
        {
            "motes": Layer(
                "scatter",
                {
                    "x": positions["x"].to_numpy(dtype=float),
                    "y": positions["y"].to_numpy(dtype=float),
                    "mote": positions["mote"].to_numpy(),
                    "value": values,
                },
                {
                    "size": 10,
                    "color": linear_cmap("value", COOL_TO_WARM, low, high, nan_color="lightgray"),
                    "tooltips": [("mote", "@mote"), (clabel, "@value{0.00}")],
                },
            )
        },
    )
    fig = view_figure(view, "x (m)", "y (m)", height=height, x_axis="linear", tools=tools)
    fig.add_layout(fig.renderers[0].construct_color_bar(title=clabel), "right")
    return fig


def reading_layer(readings: pd.DataFrame, measure: str, label: str) -> Layer:
    """One mote's readings over time, keyed ``label``."""
    return Layer(
        "line",
        {"x": readings["time"].to_numpy(), "y": readings[measure].to_numpy(dtype=float)},
        {"legend_label": label},
    )


def coalesced_layer(view: list[Coalesced], start: pd.Timestamp) -> Layer:
    """Coalesced temporal tuples as horizontal segments [ts, te) at their value: each is one
    run of consecutive value-equivalent readings (coalescing paper, Section 2.3)."""
    ts = start + pd.to_timedelta([c.ts for c in view], unit="s")
    te = start + pd.to_timedelta([c.te for c in view], unit="s")
    values = np.array([c.value for c in view], dtype=float)
    return Layer(
        "segment",
        {"x0": ts.to_numpy(), "y0": values, "x1": te.to_numpy(), "y1": values},
        {"line_color": "black", "line_width": 3, "legend_label": "coalesced tuples"},
    )
