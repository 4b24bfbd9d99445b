"""Plots of histogram templates, satisfaction-probability curves and partition regions
(PTJoin paper, Figure 2 and Figure 3; interval timing paper, Figure 1).

Every plot is a :class:`~workbench.viz.figures.View` that
:func:`~workbench.viz.figures.view_figure` draws and :func:`~workbench.viz.figures.refresh`
redraws in place: the template and adjusted-histogram bars (:func:`template_bar_view`,
:func:`adjusted_bar_view`), and the satisfaction and partition-region plots' layers
(:func:`curve_layers`, :func:`region_layer`, :func:`marker_layer`, :func:`point_layer`,
:func:`delta_layer`). Only :func:`histogram_element` is a HoloViews element, for notebooks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import holoviews as hv
import numpy as np
from bokeh.models import (
    NumeralTickFormatter,
)
from bokeh.plotting import figure

from workbench.partitions import MARKERS, Partitions, Region
from workbench.probability import adjusted_histograms
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp
from workbench.viz.figures import Layer, View, headroom, margin, view_figure

__all__ = [
    "DELTA_COLOR",
    "MARKERS",
    "REGION_COLORS",
    "adjusted_bar_view",
    "adjusted_bars",
    "curve_layers",
    "delta_layer",
    "fill_swatch",
    "histogram_element",
    "key",
    "label_levels",
    "line_swatch",
    "marker_layer",
    "point_layer",
    "region_layer",
    "region_entries",
    "template_bar_view",
    "template_bars",
]

REGION_COLORS = {"VR": "#d62728", "PR": "#ff7f0e", "SR": "#2ca02c"}
"""Colours of the violation, probing and satisfaction ranges."""

DELTA_COLOR = "#1f77b4"
"""Colour of the confidence delta and the base event's time."""

LABEL_CHAR = 0.012
"""Width of one label character as a fraction of the x range (9 pt text on a plot >= 650 px)."""


def _density_ticks() -> NumeralTickFormatter:
    """Density ticks (1/ms) as plain decimals: 0.0015, not 1.500e-3 (one model per plot)."""
    return NumeralTickFormatter(format="0.[00000]")


def fill_swatch(color: str, alpha: float = 0.35) -> str:
    """An inline HTML box of ``color`` for a Markdown key (shaded regions, bars, dots)."""
    return (
        f'<span style="display:inline-block;width:14px;height:10px;background:{color};'
        f'opacity:{alpha};vertical-align:middle"></span>'
    )


def line_swatch(color: str, dash: str = "solid", width: int = 2) -> str:
    """An inline HTML line of ``color`` and ``dash`` (solid, dashed, dotted) for a Markdown key."""
    return (
        f'<span style="display:inline-block;width:24px;border-top:{width}px {dash} {color};'
        'vertical-align:middle"></span>'
    )


def region_entries() -> list[tuple[str, str]]:
    """The key's entries of the shaded SR, LPR/RPR and VR ranges (PTJoin Theorem 3)."""
    return [
        (fill_swatch(REGION_COLORS["SR"]), "SR: every partner joins, no probing"),
        (
            fill_swatch(REGION_COLORS["PR"]),
            "LPR, RPR (left, right): probing ranges, the probability is computed",
        ),
        (fill_swatch(REGION_COLORS["VR"]), "VR: no partner joins"),
    ]


def key(entries: Sequence[tuple[str, str]]) -> str:
    """A legend as Markdown: ``swatch text`` entries side by side, each kept on one line.

    >>> key([("x", "one"), ("y", "two")]).count('<span style="white-space:nowrap">x&nbsp;one')
    1
    """
    return " &emsp; ".join(
        f'<span style="white-space:nowrap">{swatch}&nbsp;{text}</span>' for swatch, text in entries
    )


def histogram_element(h: HistogramTimestamp, label: str = "") -> hv.Histogram:
    """A histogram timestamp as a density plot (Definition 1: uniform inside each bucket)."""
    return hv.Histogram((h.edges, h.density), kdims="time", vdims="density", label=label)


def _offset_columns(histograms: Sequence[HistogramTimestamp]) -> dict[str, np.ndarray]:
    """Quad columns (left, right, top) of every bucket of ``histograms``, each histogram over
    its offset from detection, ``phi - max(phi)`` (Definition 4)."""
    if not histograms:
        return {"left": np.zeros(0), "right": np.zeros(0), "top": np.zeros(0)}
    moved = [h.edges - h.max for h in histograms]
    return {
        "left": np.concatenate([e[:-1] for e in moved]),
        "right": np.concatenate([e[1:] for e in moved]),
        "top": np.concatenate([h.density for h in histograms]),
    }


def _bar_view(title: str, layers: dict[str, Layer]) -> View:
    """Bars over a time axis, the axes around them: a margin of 2 % in time, 5 % above the
    tallest."""
    drawn = [layer.columns for layer in layers.values() if len(layer.columns["left"])]
    if not drawn:
        return View(title, (-1.0, 1.0), (0.0, 1.0), layers)
    lo = min(float(np.min(c["left"])) for c in drawn)
    hi = max(float(np.max(c["right"])) for c in drawn)
    top = max(float(np.max(c["top"])) for c in drawn)
    return View(title, margin(lo, hi), headroom(top), layers)


def _bar_figure(view: View, x_label: str, height: int) -> figure:
    """A density chart of ``view`` (:func:`~workbench.viz.figures.view_figure`), its legend
    top left; :func:`~workbench.viz.figures.refresh` redraws it."""
    fig = view_figure(view, x_label, "density (1/ms)", height)
    fig.yaxis.formatter = _density_ticks()
    fig.legend.location = "top_left"
    return fig


def template_bar_view(templates: TemplateSet, picked: int | None, title: str) -> View:
    """A stream's templates as bars over the offset from detection, ``phi - max(phi)``
    (Definition 4): every template but the picked one faintly, the picked one (if any) on
    top; two layers whatever the number of templates, their names the legend's."""
    others = [t for k, t in enumerate(templates) if k != picked]
    chosen = [templates[picked]] if picked is not None else []
    return _bar_view(
        title,
        {
            "other templates": Layer(
                "quad",
                _offset_columns(others),
                {
                    "color": "gray",
                    "fill_alpha": 0.12,
                    "line_alpha": 0.3,
                    "legend_label": "other templates",
                },
            ),
            "picked template": Layer(
                "quad",
                _offset_columns(chosen),
                {
                    "color": "#1f77b4",
                    "fill_alpha": 0.7,
                    "line_alpha": 1.0,
                    "legend_label": "picked template",
                    "tooltips": [
                        ("offset (ms)", "@left{0,0.[000]} to @right{0,0.[000]}"),
                        ("density (1/ms)", "@top{0.[000000]}"),
                    ],
                },
            ),
        },
    )


def template_bars(view: View, height: int = 280) -> figure:
    """A :func:`template_bar_view` drawn."""
    return _bar_figure(view, "occurrence time before detection (detected at 0)", height)


_ADJUSTED = (
    ("H_i~", "event a on the shared bucket edges", "#1f77b4"),
    ("H_j~", "event b on the shared bucket edges", "#ff7f0e"),
)
"""The adjusted histograms' names, meanings and colours (Definition 3)."""


def adjusted_bar_view(hi: HistogramTimestamp, hj: HistogramTimestamp, title: str) -> View:
    """The adjusted histograms of a pair: both cut at every edge of either, so their buckets
    line up (Definition 3); the legend names them H_i~ (event a) and H_j~ (event b)."""
    points, p_i, p_j = adjusted_histograms(hi, hj)
    widths = np.diff(points)
    return _bar_view(
        title,
        {
            name: Layer(
                "quad",
                {"left": points[:-1], "right": points[1:], "top": p / widths},
                {
                    "color": color,
                    "fill_alpha": 0.5,
                    "line_alpha": 0.5,
                    "legend_label": f"{name}, {what}",
                },
            )
            for (name, what, color), p in zip(_ADJUSTED, (p_i, p_j), strict=True)
        },
    )


def adjusted_bars(view: View, height: int = 280) -> figure:
    """An :func:`adjusted_bar_view` drawn."""
    return _bar_figure(view, "occurrence time (a detected at 0)", height)


def label_levels(xs: Sequence[float], names: Sequence[str], span: float) -> np.ndarray:
    """The text row (0, 1, ...) of each centred label at ``xs``, so that no two overlap.

    From left to right each label takes the lowest row where it clears every label already
    there; ``span`` is the x range the labels are drawn across (widths are relative to it).

    >>> label_levels([0.0, 1.0, 50.0, 51.0], ["LH", "LL", "RL", "RH"], 100.0).tolist()
    [0, 1, 0, 1]
    """
    if not span > 0:
        raise ValueError(f"span = {span!r} must be a positive x range")
    half = [(0.5 * len(name) * LABEL_CHAR + 0.005) * span for name in names]
    rows: list[list[int]] = []
    levels = np.zeros(len(xs), dtype=int)
    for k in np.argsort(np.asarray(xs, dtype=float), kind="stable"):
        level = next(
            (
                r
                for r, row in enumerate(rows)
                if all(abs(xs[k] - xs[j]) >= half[k] + half[j] for j in row)
            ),
            len(rows),
        )
        if level == len(rows):
            rows.append([])
        rows[level].append(k)
        levels[k] = level
    return levels


def marker_layer(
    markers: Mapping[str, float],
    column: str,
    color: str,
    y: float,
    dash: str = "solid",
    span: float | None = None,
    step: float = 0.06,
) -> Layer:
    """Vertical lines at named time points, with their names as labels from height ``y`` up.

    Labels that would overlap on an x range ``span`` wide (default: the markers' own extent)
    move up by ``step`` per row (:func:`label_levels`). The labels' source carries the names
    in ``column`` (the browser tests read it there).
    """
    xs, names = list(markers.values()), list(markers.keys())
    width = span if span is not None else (max(xs) - min(xs) if xs else 0.0)
    levels = label_levels(xs, names, width) if width > 0 else np.arange(len(xs))
    return Layer(
        "labelled",
        {"x": np.asarray(xs, dtype=float), "y": y + step * levels, column: names},
        {"color": color, "line_width": 1.5, "line_dash": dash},
    )


def region_layer(p: Partitions, lo: float, hi: float) -> Layer:
    """Shaded VR / PR / SR bands of a partition between ``lo`` and ``hi`` on the time axis.

    Always five bands (empty ones are zero wide), so a live plot keeps its shape.
    """
    bands = [
        ("VR", lo, p.lpr_lo),
        ("PR", p.lpr_lo, p.lpr_hi),
        ("SR", p.lpr_hi, p.rpr_lo),
        ("PR", p.rpr_lo, p.rpr_hi),
        ("VR", p.rpr_hi, hi),
    ]
    return Layer(
        "vstrip",
        {
            "x0": np.array([a for _, a, _ in bands]),
            "x1": np.array([max(a, b) for _, a, b in bands]),
            "region": [name for name, _, _ in bands],
            "color": [REGION_COLORS[name] for name, _, _ in bands],
        },
        {"fill_color": "color", "fill_alpha": 0.15, "line_alpha": 0.0},
    )


def curve_layers(max_times: np.ndarray, probs: np.ndarray, shown: int = 12) -> dict[str, Layer]:
    """Per-template satisfaction curves (the first ``shown``) and their envelopes (Figure 3).

    The upper envelope (max over templates) is solid, the lower (min) dotted, as in the
    interval timing paper's Figure 1.
    """
    xs = np.asarray(max_times, dtype=float)
    return {
        "curves": Layer(
            "multi_line",
            {"xs": [xs] * min(shown, len(probs)), "ys": list(probs[:shown])},
            {"line_color": "gray", "line_alpha": 0.35, "line_width": 1},
        ),
        "upper": Layer(
            "line", {"x": xs, "y": probs.max(axis=0)}, {"line_color": "black", "line_width": 2}
        ),
        "lower": Layer(
            "line",
            {"x": xs, "y": probs.min(axis=0)},
            {"line_color": "black", "line_width": 2, "line_dash": "dotted"},
        ),
    }


def delta_layer(delta: float) -> Layer:
    """The confidence delta a pair needs, a dashed line across the plot."""
    return Layer(
        "hspan",
        {"y": [delta]},
        {"line_color": DELTA_COLOR, "line_dash": "dashed", "line_width": 1.5},
    )


def point_layer(max_times: np.ndarray, probs: np.ndarray, regions: np.ndarray) -> Layer:
    """Partner events at (max(H_j), exact probability), coloured by their region."""
    names = [Region(r).name for r in regions]
    return Layer(
        "scatter",
        {
            "x": np.asarray(max_times, dtype=float),
            "y": np.asarray(probs, dtype=float),
            "region": names,
            "color": [REGION_COLORS[n] for n in names],
        },
        {
            "size": 6,
            "color": "color",
            "tooltips": [("range", "@region"), ("max(H_j)", "@x{0,0.0} ms"), ("P", "@y{0.0000}")],
        },
    )
