"""Plots of multi-way window joins: the constraint graph and BEW vs FEW measures
(W-join paper, Sections 2 and 6), as plain Bokeh figures described by data
(:mod:`workbench.viz.figures`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from bokeh.core.properties import field
from bokeh.plotting import figure

from workbench.operators import WindowConstraints
from workbench.viz.figures import Layer, View, headroom, margin, view_figure

__all__ = [
    "ALGORITHM_COLORS",
    "SPARK_COLOR",
    "constraint_view",
    "graph_figure",
    "measure_view",
    "results_view",
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


def constraint_view(wc: WindowConstraints | None, names: Sequence[str], title: str = "") -> View:
    """The window constraints as a graph: streams on a circle, edges labelled by window.

    Without constraints (``wc=None``) the same layers hold no marks, so a page's figure keeps
    its structure; ``title`` replaces the default "Constraints: <form>".  The edges' windows
    and the streams' names are one layer of text over the rest, each label with its size.

    >>> view = constraint_view(WindowConstraints.path([5.0, 3.0]), ["a", "b", "c"])
    >>> view.title, list(view.layers["labels"].columns["text"])
    ('Constraints: path', ['5 s', '3 s', 'a', 'b', 'c'])
    """
    m = wc.m if wc is not None else 0
    angle = np.pi / 2 - 2 * np.pi * np.arange(m) / max(m, 1)
    xs, ys = np.cos(angle), np.sin(angle)
    pairs = (
        []
        if wc is None
        else [(i, j) for i in range(m) for j in range(i + 1, m) if np.isfinite(wc.windows[i, j])]
    )
    i, j = np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int)
    streams = np.array(list(names)[:m], dtype=object)
    text = {"text_align": "center", "text_baseline": "middle", "text_color": "black"}
    layers = {
        "edges": Layer(
            "segment",
            {"x0": xs[i], "y0": ys[i], "x1": xs[j], "y1": ys[j]},
            {"line_color": "gray", "line_width": 2},
        ),
        "streams": Layer(
            "scatter",
            {"x": xs, "y": ys, "stream": streams},
            {"size": 18, "color": "#1f77b4", "tooltips": [("stream", "@stream")]},
        ),
        "labels": Layer(
            "text",
            {
                "x": np.concatenate([(xs[i] + xs[j]) / 2, xs]),
                "y": np.concatenate([(ys[i] + ys[j]) / 2, ys + 0.17]),
                "text": [*(f"{wc.windows[a, b]:g} s" for a, b in pairs), *streams],
                "size": ["9pt"] * len(pairs) + ["10pt"] * m,
            },
            {"text_font_size": field("size"), **text},
        ),
    }
    return View(title or f"Constraints: {wc.form}", (-1.4, 1.4), (-1.4, 1.5), layers)


def graph_figure(view: View, size: tuple[int, int] = (320, 300)) -> figure:
    """A :func:`constraint_view` drawn ``size`` px (width, height): a diagram, without axes
    or toolbar (its streams' tooltips still show)."""
    fig = view_figure(view, "", "", size[1], x_axis="none", tools="")
    fig.update(sizing_mode="fixed", width=size[0])
    return fig


def measure_view(
    frame: pd.DataFrame,
    measure: str,
    label: str,
    unit: str = "",
    colors: Mapping[str, str] = ALGORITHM_COLORS,
) -> View:
    """One bar per algorithm for a measure (throughput, response time), its value written on
    top in three significant digits (a bar too short to see still reads); a missing value (NaN)
    reads "not run yet".  ``colors``: each algorithm's bar colour (others gray).

    >>> frame = pd.DataFrame({"algorithm": ["BEW", "FEW"], "ms": [0.0387941, 12655.4]})
    >>> view = measure_view(frame, "ms", "mean response time (ms)", "ms")
    >>> list(view.layers["values"].columns["text"]), view.x_ticks
    (['0.0388 ms', '12,700 ms'], {0.0: 'BEW', 1.0: 'FEW'})
    """
    values = frame[measure].astype(float)
    text = [
        f"{significant(v):,.{_decimals(v)}f} {unit}".strip() if np.isfinite(v) else "not run yet"
        for v in values
    ]
    algorithms = frame["algorithm"].tolist()
    shown = values.fillna(0.0).map(significant).to_numpy(dtype=float)
    x = np.arange(len(algorithms), dtype=float)
    top = float(shown.max()) if len(shown) else 0.0
    layers = {
        "bars": Layer(
            "quad",
            {
                "left": x - 0.4,
                "right": x + 0.4,
                "top": shown,
                "algorithm": algorithms,
                "value": text,
                "color": [colors.get(a, "gray") for a in algorithms],
            },
            {
                "fill_color": field("color"),
                "line_color": field("color"),
                "tooltips": [("algorithm", "@algorithm"), (label, "@value")],
            },
        ),
        "values": Layer(
            "text",
            {"x": x, "y": shown, "text": text},
            {  # 4 px above the bar's top (screen units: any scale)
                "text_baseline": "bottom",
                "text_align": "center",
                "text_font_size": "10pt",
                "text_color": "black",
                "y_offset": -4,
            },
        ),
    }
    return View(
        label,
        (-0.6, max(len(algorithms), 1) - 0.4),
        headroom(top, 0.15),  # room for the labels above the bars
        layers,
        x_ticks={float(k): a for k, a in enumerate(algorithms)},
    )


def _decimals(x: float, digits: int = 3) -> int:
    """How many decimals show ``x`` in ``digits`` significant digits (none from 100 up)."""
    if x == 0 or not np.isfinite(x):
        return 0
    return max(digits - 1 - int(np.floor(np.log10(abs(x)))), 0)


def results_view(
    curves: dict[str, tuple[np.ndarray, np.ndarray]], spark: np.ndarray | None = None
) -> View:
    """Cumulative results against stream time (s), one step curve per algorithm; ``spark``,
    the stream times (s) of Spark's committed results, adds their dotted curve.

    Every algorithm of :data:`ALGORITHM_COLORS` and Spark has its layer (empty when it did not
    run), so a page's figure keeps one structure; the legend names the curves that hold
    results (BokehJS reads each entry from its layer's column of the layer's name).
    """
    empty = (np.zeros(0), np.zeros(0))
    drawn = {name: curves.get(name, empty) for name in ALGORITHM_COLORS}
    drawn["Spark"] = empty if spark is None else (spark, np.arange(1, len(spark) + 1))
    styles = {
        **{n: {"line_color": c, **_CURVE_STYLE[n]} for n, c in ALGORITHM_COLORS.items()},
        "Spark": {"line_color": SPARK_COLOR, "line_width": 2, "line_dash": "dotted"},
    }
    layers = {
        name: Layer(
            "step",
            {
                "x": np.asarray(x, dtype=float),
                "y": np.asarray(y, dtype=float),
                name: [name] * len(x),  # its legend entry, one per layer, none while empty
            },
            {**styles[name], "legend_field": name},
        )
        for name, (x, y) in drawn.items()
    }
    xs = np.concatenate([np.asarray(x, dtype=float) for x, _ in drawn.values()])
    top = max((float(np.max(y)) for _, y in drawn.values() if len(y)), default=0.0)
    span = (float(xs.min()), float(xs.max())) if len(xs) else (0.0, 1.0)
    return View("Results emitted over stream time", margin(*span), headroom(top), layers)
