"""Pure functions from workbench values to HoloViews elements or Bokeh figures (no state, no
widgets)."""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend and its options)

from workbench.probability import satisfaction_grid
from workbench.viz.axes import clock, time_ticks
from workbench.viz.coalesce import (
    SCHEME_COLORS,
    extent_figure,
    extent_view,
    surface_figure,
    surface_view,
)
from workbench.viz.deployment import coalesced_layer, mote_map, reading_layer
from workbench.viz.figures import Layer, View, refresh, view_figure
from workbench.viz.live import METRIC_COLUMNS, REJECT_REASONS, batch_spikes, live_figures
from workbench.viz.notebook import setup_notebook
from workbench.viz.ptjoin import (
    MARKERS,
    REGION_COLORS,
    adjusted_bar_view,
    adjusted_bars,
    curve_layers,
    delta_layer,
    histogram_element,
    marker_layer,
    point_layer,
    region_layer,
    template_bar_view,
    template_bars,
)
from workbench.viz.wjoin import (
    ALGORITHM_COLORS,
    constraint_view,
    graph_svg,
    measure_view,
    results_view,
)

hv.Store.set_current_backend("bokeh")
hv.renderer("bokeh").webgl = False
"""Canvas, not WebGL (HoloViews' default): our plots hold thousands of marks at most, which a
canvas draws in milliseconds, while WebGL without a GPU (headless browsers, virtual machines,
remote desktops) is emulated in software and copying each plot's WebGL canvas onto its page
canvas took about 1 s of a tab's 1.6 s in the browser; a browser also keeps only about 16
WebGL contexts per page, fewer than the dashboard's plots."""

__all__ = [
    "ALGORITHM_COLORS",
    "Layer",
    "MARKERS",
    "View",
    "METRIC_COLUMNS",
    "REJECT_REASONS",
    "REGION_COLORS",
    "SCHEME_COLORS",
    "adjusted_bar_view",
    "adjusted_bars",
    "batch_spikes",
    "clock",
    "coalesced_layer",
    "constraint_view",
    "curve_layers",
    "delta_layer",
    "extent_figure",
    "extent_view",
    "graph_svg",
    "histogram_element",
    "live_figures",
    "marker_layer",
    "measure_view",
    "mote_map",
    "point_layer",
    "reading_layer",
    "refresh",
    "region_layer",
    "results_view",
    "satisfaction_grid",
    "setup_notebook",
    "surface_figure",
    "surface_view",
    "template_bar_view",
    "template_bars",
    "time_ticks",
    "view_figure",
]
