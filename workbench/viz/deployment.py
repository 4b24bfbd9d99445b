"""Plots of the Intel Lab deployment (real or simulated): mote map, readings, coalesced runs."""

from __future__ import annotations

import holoviews as hv
import pandas as pd

from workbench.coalesce.window import Coalesced

__all__ = ["coalesced_segments", "mote_map", "reading_curve"]


def mote_map(
    positions: pd.DataFrame, latest: pd.Series, title: str, clabel: str = "value"
) -> hv.Points:
    """Motes at their positions (metres), coloured by a value per mote (``clabel`` names it)."""
    frame = positions.assign(value=positions["mote"].map(latest))
    return hv.Points(frame, kdims=["x", "y"], vdims=["value", "mote"]).opts(
        color="value",
        cmap="coolwarm",
        size=10,
        colorbar=True,
        clabel=clabel,
        tools=["hover"],
        title=title,
        invert_yaxis=True,
        xlabel="x (m)",
        ylabel="y (m)",
    )


def reading_curve(readings: pd.DataFrame, measure: str, label: str) -> hv.Curve:
    """One mote's readings over time."""
    return hv.Curve(readings, kdims="time", vdims=measure, label=label)


def coalesced_segments(view: list[Coalesced], start: pd.Timestamp) -> hv.Segments:
    """Coalesced temporal tuples as horizontal segments [ts, te) at their value: each is one
    run of consecutive value-equivalent readings (coalescing paper, Section 2.3)."""
    rows = [
        (
            start + pd.to_timedelta(c.ts, unit="s"),
            c.value,
            start + pd.to_timedelta(c.te, unit="s"),
            c.value,
        )
        for c in view
    ]
    frame = pd.DataFrame(rows, columns=["t0", "v0", "t1", "v1"])
    return hv.Segments(frame, kdims=["t0", "v0", "t1", "v1"], label="coalesced tuples").opts(
        color="black", line_width=3
    )
