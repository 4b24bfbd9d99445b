"""Panes shared by the tabs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import holoviews as hv
import panel as pn

__all__ = ["controls_beside", "plot"]


def plot(obj: hv.core.Dimensioned | hv.DynamicMap | object, **params: object) -> pn.pane.HoloViews:
    """A HoloViews pane whose axes stay its own: tabs sharing a dimension name (max(H_j))
    would otherwise share one range across very different time scales."""
    return pn.pane.HoloViews(obj, linked_axes=False, **params)


def controls_beside(
    controls: Sequence[pn.viewable.Viewable], view: Callable[..., object], height: int = 440
) -> pn.Row:
    """A tab of a 300 px control column beside one dynamic plot of ``view``."""
    return pn.Row(
        pn.Column(*controls, width=300),
        plot(hv.DynamicMap(view), sizing_mode="stretch_width", height=height),
        sizing_mode="stretch_width",
    )
