"""Plots of multi-way window joins: the constraint graph and BEW vs FEW measures
(W-join paper, Sections 2 and 6)."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.operators import WindowConstraints

__all__ = ["ALGORITHM_COLORS", "constraint_graph", "measure_bars", "results_over_time"]

ALGORITHM_COLORS = {"BEW": "#1f77b4", "FEW": "#d62728"}
"""Colours of the two evaluation strategies."""


def constraint_graph(wc: WindowConstraints, names: list[str]) -> hv.Overlay:
    """The window constraints as a graph: streams on a circle, edges labelled by window."""
    m = wc.m
    angle = np.pi / 2 - 2 * np.pi * np.arange(m) / m
    xs, ys = np.cos(angle), np.sin(angle)
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m) if np.isfinite(wc.windows[i, j])]
    edges = hv.Segments(
        [(xs[i], ys[i], xs[j], ys[j]) for i, j in pairs], kdims=["x0", "y0", "x1", "y1"]
    ).opts(color="gray", line_width=2)
    windows = hv.Labels(
        {
            "x": [(xs[i] + xs[j]) / 2 for i, j in pairs],
            "y": [(ys[i] + ys[j]) / 2 for i, j in pairs],
            "window": [f"{wc.windows[i, j]:g} s" for i, j in pairs],
        },
        kdims=["x", "y"],
        vdims=["window"],
    ).opts(text_font_size="9pt", text_color="black")
    nodes = hv.Points({"x": xs, "y": ys, "stream": names}, kdims=["x", "y"], vdims=["stream"])
    labels = hv.Labels({"x": xs, "y": ys + 0.17, "stream": names}, ["x", "y"], "stream")
    return (
        edges * windows * nodes.opts(size=18, color="#1f77b4") * labels.opts(text_font_size="10pt")
    ).opts(
        hv.opts.Overlay(
            title=f"Constraints: {wc.form}",
            xaxis=None,
            yaxis=None,
            xlim=(-1.4, 1.4),
            ylim=(-1.4, 1.5),
        )
    )


def measure_bars(frame: pd.DataFrame, measure: str, label: str) -> hv.Bars:
    """One bar per algorithm for a measure (throughput, response time)."""
    return hv.Bars(frame, kdims=["algorithm"], vdims=[measure]).opts(
        color="algorithm", cmap=ALGORITHM_COLORS, ylabel=label, title=label, tools=["hover"]
    )


def results_over_time(curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> hv.Overlay:
    """Cumulative results against stream time, one step curve per algorithm."""
    return hv.Overlay(
        [
            hv.Curve((t, n), kdims="stream time (s)", vdims="results", label=name).opts(
                interpolation="steps-post", color=ALGORITHM_COLORS[name], line_width=2
            )
            for name, (t, n) in curves.items()
        ]
    ).opts(title="Results emitted over stream time")
