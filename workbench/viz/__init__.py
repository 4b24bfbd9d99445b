"""Pure functions from workbench values to HoloViews elements (no state, no widgets)."""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the Bokeh backend and its options)

from workbench.viz.deployment import coalesced_segments, mote_map, reading_curve
from workbench.viz.ptjoin import (
    REGION_COLORS,
    histogram_element,
    partition_spans,
    satisfaction_curves,
)

hv.Store.set_current_backend("bokeh")

__all__ = [
    "REGION_COLORS",
    "coalesced_segments",
    "histogram_element",
    "mote_map",
    "partition_spans",
    "reading_curve",
    "satisfaction_curves",
]
