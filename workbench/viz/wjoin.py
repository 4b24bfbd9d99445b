"""Plots of multi-way window joins: the constraint graph and BEW vs FEW measures
(W-join paper, Sections 2 and 6), described by data (:mod:`workbench.viz.figures`): the
measures as plain Bokeh figures, the graph, a diagram, as SVG."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from bokeh.core.properties import field

from workbench.operators import WindowConstraints
from workbench.viz.figures import Layer, View, headroom, margin, step_corners

__all__ = [
    "ALGORITHM_COLORS",
    "SPARK_COLOR",
    "constraint_view",
    "graph_svg",
    "measure_view",
    "results_view",
    "significant",
]

ALGORITHM_COLORS = {"BEW": "#1f77b4", "FEW": "#d62728"}
"""Colours of the two evaluation strategies."""
_CURVE_STYLE = {
    "BEW": {"width": 4.0, "alpha": 0.6},
    "FEW": {"width": 2.0, "dash": "dashed"},
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

    Without constraints (``wc=None``) the same layers hold no marks; ``title`` replaces the
    default "Constraints: <form>".  The edges' windows and the streams' names are one layer
    of text over the rest, each label with its size.

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


GRAPH_TITLE_PX = 30
"""Height of the graph's title line (px), above its drawing."""


def graph_svg(view: View, size: tuple[int, int] = (320, 300)) -> str:
    """A :func:`constraint_view` drawn as SVG, ``size`` px (width, height) with its title on
    top: edges, streams (a stream's name on hover, as the browser shows an SVG ``title``) and
    labels, placed as a figure with the view's ranges would place them.  A diagram that no one
    zooms needs no Bokeh figure: one HTML pane, where a figure with its three layers took 21
    Bokeh models in every session.

    >>> svg = graph_svg(constraint_view(WindowConstraints.path([5.0]), ["a", "b"]))
    >>> svg.count("<line"), svg.count("<circle"), ">5 s</text>" in svg, "<title>a</title>" in svg
    (1, 2, True, True)
    """
    width, height = size
    (x_lo, x_hi), (y_lo, y_hi) = view.x_range, view.y_range
    plot = height - GRAPH_TITLE_PX

    def px(x: float, y: float) -> tuple[float, float]:
        return (
            width * (x - x_lo) / (x_hi - x_lo),
            GRAPH_TITLE_PX + plot * (y_hi - y) / (y_hi - y_lo),
        )

    edges, streams, labels = (view.layers[k].columns for k in ("edges", "streams", "labels"))
    style = view.layers["edges"].style
    stroke = f'stroke="{style["line_color"]}" stroke-width="{style["line_width"]}"'
    lines = [
        '<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/>'.format(
            *px(a, b), *px(c, d), stroke
        )
        for a, b, c, d in zip(edges["x0"], edges["y0"], edges["x1"], edges["y1"], strict=True)
    ]
    dot = view.layers["streams"].style
    circles = [
        '<circle cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}"><title>{}</title></circle>'.format(
            *px(x, y), dot["size"] / 2, dot["color"], html.escape(str(name))
        )
        for x, y, name in zip(streams["x"], streams["y"], streams["stream"], strict=True)
    ]
    texts = [
        '<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="middle" '
        'dominant-baseline="middle">{}</text>'.format(*px(x, y), size, html.escape(str(text)))
        for x, y, text, size in zip(
            labels["x"], labels["y"], labels["text"], labels["size"], strict=True
        )
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'class="constraint-graph" font-family="sans-serif">'
        f'<text x="10" y="20" font-size="13px" font-weight="bold">{html.escape(view.title)}</text>'
        + "".join([*lines, *circles, *texts])
        + "</svg>"
    )


def measure_view(
    frame: pd.DataFrame,
    measure: str,
    label: str,
    unit: str = "",
    colors: Mapping[str, str] = ALGORITHM_COLORS,
) -> View:
    """One bar per algorithm for a measure (throughput, response time), its value written on
    top in three significant digits (a bar too short to see still reads; the bars and their
    values share one source); a missing value (NaN) reads "not run yet".  ``colors``: each
    algorithm's bar colour (others gray).

    >>> frame = pd.DataFrame({"algorithm": ["BEW", "FEW"], "ms": [0.0387941, 12655.4]})
    >>> view = measure_view(frame, "ms", "mean response time (ms)", "ms")
    >>> list(view.layers["bars"].columns["text"]), view.x_ticks
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
            "bars",
            {
                "left": x - 0.4,
                "right": x + 0.4,
                "x": x,
                "top": shown,
                "algorithm": algorithms,
                "text": text,
                "color": [colors.get(a, "gray") for a in algorithms],
            },
            {
                "fill_color": field("color"),
                "line_color": field("color"),
                "tooltips": [("algorithm", "@algorithm"), (label, "@text")],
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
    """Cumulative results against stream time (s), one step curve per algorithm that has
    results; ``spark``, the stream times (s) of Spark's committed results, adds their dotted
    curve.

    The curves are one layer of lines (one row each, with its colour, width, alpha and
    dash), so a page's figure keeps one structure and one renderer; the legend names the
    curves drawn (BokehJS makes an entry for each value of the ``curve`` column).

    >>> view = results_view({"BEW": (np.array([2.0, 5.0]), np.array([1, 2]))})
    >>> view.layers["curves"].columns["curve"], view.layers["curves"].columns["xs"][0].tolist()
    (['BEW'], [2.0, 5.0, 5.0])
    """
    styles = {
        **{
            n: {"color": c, "width": 2.0, "alpha": 1.0, "dash": "solid", **_CURVE_STYLE[n]}
            for n, c in ALGORITHM_COLORS.items()
        },
        "Spark": {"color": SPARK_COLOR, "width": 2.0, "alpha": 1.0, "dash": "dotted"},
    }
    drawn = {name: curves[name] for name in ALGORITHM_COLORS if name in curves}
    if spark is not None:
        drawn["Spark"] = (spark, np.arange(1, len(spark) + 1))
    drawn = {
        n: (np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for n, (x, y) in drawn.items()
    }
    drawn = {n: xy for n, xy in drawn.items() if len(xy[0])}
    lines = [step_corners(x, y) for x, y in drawn.values()]
    columns = {
        "xs": [xs for xs, _ in lines],
        "ys": [ys for _, ys in lines],
        "curve": list(drawn),
        **{k: [styles[n][k] for n in drawn] for k in ("color", "width", "alpha", "dash")},
    }
    style = {
        "line_color": field("color"),
        "line_width": field("width"),
        "line_alpha": field("alpha"),
        "line_dash": field("dash"),
        "legend_field": "curve",
    }
    xs = np.concatenate([x for x, _ in drawn.values()]) if drawn else np.zeros(0)
    top = max((float(np.max(y)) for _, y in drawn.values()), default=0.0)
    span = (float(xs.min()), float(xs.max())) if len(xs) else (0.0, 1.0)
    return View(
        "Results emitted over stream time",
        margin(*span),
        headroom(top),
        {"curves": Layer("multi_line", columns, style)},
    )
