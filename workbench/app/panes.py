"""Panes shared by the tabs."""

from __future__ import annotations

import holoviews as hv
import panel as pn

__all__ = ["plot"]


def plot(obj: hv.core.Dimensioned | hv.DynamicMap | object, **params: object) -> pn.pane.HoloViews:
    """A HoloViews pane whose axes stay its own: tabs sharing a dimension name (max(H_j))
    would otherwise share one range across very different time scales."""
    return pn.pane.HoloViews(obj, linked_axes=False, **params)
