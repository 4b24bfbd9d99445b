"""Plots of multi-way window joins: the constraint graph and BEW vs FEW measures
(W-join paper, Sections 2 and 6)."""

from __future__ import annotations

from collections.abc import Sequence

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.operators import WindowConstraints
from workbench.viz.axes import time_ticks

__all__ = [
    "ALGORITHM_COLORS",
    "SPARK_COLOR",
    "constraint_graph",
    "measure_bars",
    "results_over_time",
    "significant",
]

ALGORITHM_COLORS = {"BEW": "#1f77b4", "FEW": "#d62728"}
"""Colours of the two evaluation strategies."""
_CURVE_STYLE = {
    "BEW": {"line_width": 4, "alpha": 0.6},
    "FEW": {"line_width": 2, "line_dash": "dashed"},
}
"""Line styles that keep both curves visible where they coincide."""
SPARK_COLOR = "#2ca02c"
"""Colour of Spark's results curve (a tab's run on Spark)."""
_RESULTS = {"title": "Results emitted over stream time", "legend_position": "top_left"}


def significant(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits (response times span 0.04 ms to 13 s).

    >>> significant(12655.42551), significant(0.0387941), significant(0.0)
    (12700.0, 0.0388, 0.0)
    """
    if digits < 1:
        raise ValueError(f"digits = {digits!r} must be at least 1")
    if x == 0 or not np.isfinite(x):
        return float(x)
    return float(round(x, digits - 1 - int(np.floor(np.log10(abs(x))))))


def constraint_graph(
    wc: WindowConstraints | None, names: Sequence[str], title: str = ""
) -> hv.Overlay:
    """The window constraints as a graph: streams on a circle, edges labelled by window.

    Without constraints (``wc=None``) the same overlay holds no marks, so a dynamic plot keeps
    its structure; ``title`` replaces the default "Constraints: <form>".
    """
    m = wc.m if wc is not None else 0
    angle = np.pi / 2 - 2 * np.pi * np.arange(m) / max(m, 1)
    xs, ys = np.cos(angle), np.sin(angle)
    pairs = (
        []
        if wc is None
        else [(i, j) for i in range(m) for j in range(i + 1, m) if np.isfinite(wc.windows[i, j])]
    )
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
    streams = list(names)[:m]
    nodes = hv.Points({"x": xs, "y": ys, "stream": streams}, kdims=["x", "y"], vdims=["stream"])
    labels = hv.Labels({"x": xs, "y": ys + 0.17, "stream": streams}, ["x", "y"], "stream")
    return (
        edges * windows * nodes.opts(size=18, color="#1f77b4") * labels.opts(text_font_size="10pt")
    ).opts(
        hv.opts.Overlay(
            title=title or f"Constraints: {wc.form}",
            xaxis=None,
            yaxis=None,
            xlim=(-1.4, 1.4),
            ylim=(-1.4, 1.5),
        )
    )


def measure_bars(frame: pd.DataFrame, measure: str, label: str, unit: str = "") -> hv.Overlay:
    """One bar per algorithm for a measure (throughput, response time), its value written on
    top in three significant digits (a bar too short to see still reads); a missing value (NaN)
    reads "not run yet".

    >>> frame = pd.DataFrame({"algorithm": ["BEW", "FEW"], "ms": [0.0387941, 12655.4]})
    >>> bars = measure_bars(frame, "ms", "mean response time (ms)", "ms")
    >>> bars.Labels.I.dframe()["value"].tolist()
    ['0.0388 ms', '12,700 ms']
    """
    values = frame[measure].astype(float)
    text = [
        f"{significant(v):,.{_decimals(v)}f} {unit}".strip() if np.isfinite(v) else "not run yet"
        for v in values
    ]
    data = pd.DataFrame(
        {
            "algorithm": frame["algorithm"],
            measure: values.fillna(0.0).map(significant),
            "value": text,
        }
    )
    top = float(data[measure].max()) if len(data) else 0.0
    bars = hv.Bars(data, kdims=["algorithm"], vdims=[measure, "value"]).opts(
        color="algorithm",
        cmap=ALGORITHM_COLORS,
        ylabel=label,
        title=label,
        tools=["hover"],
        show_legend=False,
        ylim=(0, 1.15 * top if top > 0 else 1.0),  # room for the labels above the bars
    )
    labels = hv.Labels(data, kdims=["algorithm", measure], vdims=["value"]).opts(
        text_baseline="bottom", text_font_size="10pt", text_color="black", hooks=[_lift]
    )
    return bars * labels


def _lift(plot: object, element: object) -> None:
    """Raise bar labels 4 px above their bar's top (screen units: any scale)."""
    plot.handles["glyph"].y_offset = -4


def _decimals(x: float, digits: int = 3) -> int:
    """How many decimals show ``x`` in ``digits`` significant digits (none from 100 up)."""
    if x == 0 or not np.isfinite(x):
        return 0
    return max(digits - 1 - int(np.floor(np.log10(abs(x)))), 0)


def results_over_time(
    curves: dict[str, tuple[np.ndarray, np.ndarray]], spark: np.ndarray | None = None
) -> hv.Overlay:
    """Cumulative results against stream time (s), one step curve per algorithm; ``spark``,
    the stream times (s) of Spark's committed results, adds their dotted curve.

    Every algorithm of :data:`ALGORITHM_COLORS` has its curve (empty when it did not run), so a
    dynamic plot keeps one structure and one legend.
    """
    empty = (np.zeros(0), np.zeros(0))
    view = hv.Overlay(
        [
            hv.Curve(
                curves.get(name, empty), kdims="stream time", vdims="results", label=name
            ).opts(interpolation="steps-post", color=color, **_CURVE_STYLE[name])
            for name, color in ALGORITHM_COLORS.items()
        ]
    ).opts(
        hv.opts.Curve(xformatter=time_ticks("s"), tools=["hover"]),
        hv.opts.Overlay(**_RESULTS),
    )
    if spark is None:
        return view
    dotted = hv.Curve(
        (spark, np.arange(1, len(spark) + 1)), "stream time", "results", label="Spark"
    ).opts(interpolation="steps-post", color=SPARK_COLOR, line_width=2, line_dash="dotted")
    return (view * dotted).opts(hv.opts.Overlay(**_RESULTS))
