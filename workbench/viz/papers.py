"""Plots for the notebooks that reproduce the papers: measured curves over arrival rates and the
eager/lazy decision map of the coalescing cost model."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

__all__ = ["paired_bars", "rate_curves", "scheme_map"]


def rate_curves(
    frame: pd.DataFrame,
    x: str,
    y: str,
    by: str,
    title: str,
    xlabel: str = "arrival rate (events/s)",
    ylabel: str | None = None,
    logy: bool = False,
    logx: bool = True,
) -> hv.Overlay:
    """One line with markers per value of ``by``: ``y`` against ``x`` on a log x axis
    (throughput or response time against arrival rate, as the papers plot them), or a
    linear one (``logx=False``: against the number of streams or of output tuples)."""
    layers = []
    for name, part in frame.groupby(by, sort=False):
        data = part[[x, y]].sort_values(x)
        layers.append(hv.Curve(data, x, y, label=str(name)))
        layers.append(hv.Scatter(data, x, y, label=str(name)).opts(size=6))
    return hv.Overlay(layers).opts(
        hv.opts.Curve(logx=logx, logy=logy, line_width=2),
        hv.opts.Scatter(logx=logx, logy=logy),
        hv.opts.Overlay(
            title=title,
            xlabel=xlabel,
            ylabel=ylabel or y,
            width=620,
            height=330,
            legend_position="top_left",
        ),
    )


def paired_bars(frame: pd.DataFrame, x: str, by: str, y: str, title: str, ylabel: str) -> hv.Bars:
    """Bars of ``y`` for each ``x``, side by side for each value of ``by`` (one measure of
    two variants of each algorithm, such as the fast and the paper's mechanism)."""
    return hv.Bars(frame, [x, by], y).opts(
        title=title, ylabel=ylabel, xlabel="", width=620, height=330, tools=["hover"]
    )


def scheme_map(surface: pd.DataFrame, title: str) -> hv.HeatMap:
    """The cheaper scheme over (cp, oop) from a cost surface with columns ``cp``, ``oop``,
    ``eager``, ``lazy``: colour = lazy - eager (blue: eager cheaper, red: lazy cheaper)."""
    data = surface.assign(
        advantage=surface["lazy"] - surface["eager"],
        scheme=np.where(surface["eager"] <= surface["lazy"], "eager", "lazy"),
    )
    bound = float(np.abs(data["advantage"]).max()) or 1.0
    return hv.HeatMap(data, kdims=["cp", "oop"], vdims=["advantage", "scheme"]).opts(
        cmap="RdBu",
        clim=(-bound, bound),
        colorbar=True,
        tools=["hover"],
        title=title,
        width=330,
        height=300,
        xlabel="coalescing probability cp",
        ylabel="out-of-order oop",
    )
