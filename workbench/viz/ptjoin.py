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
from bokeh.core.properties import field
from bokeh.models import NumeralTickFormatter
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


def _bar_figure(view: View, x_label: str, height: int, tools: str) -> figure:
    """A density chart of ``view`` (:func:`~workbench.viz.figures.view_figure`), its legend
    top left; :func:`~workbench.viz.figures.refresh` redraws it."""
    fig = view_figure(view, x_label, "density (1/ms)", height, tools=tools)
    fig.yaxis.formatter = _density_ticks()
    fig.legend.location = "top_left"
    return fig


_BAR_STYLE = {
    "fill_color": field("color"),
    "line_color": field("color"),
    "fill_alpha": field("fill_alpha"),
    "line_alpha": field("line_alpha"),
    "legend_field": "shown",
}
"""Bars of several kinds in one layer: each row its colour, opacity and legend entry (the
column ``shown``), so a chart draws them all with one renderer."""


def _bar_rows(
    bars: Mapping[str, np.ndarray],
    shown: str,
    color: str,
    alpha: tuple[float, float],
    **labels: np.ndarray,
) -> dict[str, np.ndarray]:
    """``bars`` (left, right, top) of one kind as :data:`_BAR_STYLE` draws them: its legend
    entry ``shown``, ``color``, (fill, line) ``alpha``; ``labels``: more columns to hover."""
    n = len(bars["left"])
    return {
        **bars,
        "shown": np.full(n, shown, dtype=object),
        "color": np.full(n, color, dtype=object),
        "fill_alpha": np.full(n, alpha[0]),
        "line_alpha": np.full(n, alpha[1]),
        **labels,
    }


def _joined(*rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bar columns of several kinds, one after the other (the last drawn on top)."""
    return {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}


def _template_rows(
    templates: TemplateSet, which: Sequence[int], shown: str, color: str, alpha: tuple
) -> dict[str, np.ndarray]:
    """The bars of the templates ``which`` (:func:`_offset_columns`), each labelled with its
    index, and whether it is the picked one (``picked`` 1, hovered first)."""
    histograms = [templates[k] for k in which]
    per = [len(h.density) for h in histograms]
    return _bar_rows(
        _offset_columns(histograms),
        shown,
        color,
        alpha,
        template=np.repeat(np.asarray(which, dtype=int), per),
        picked=np.full(sum(per), int(shown == "picked template")),
    )


def template_bar_view(templates: TemplateSet, picked: int | None, title: str) -> View:
    """A stream's templates as bars over the offset from detection, ``phi - max(phi)``
    (Definition 4): every template but the picked one faintly, the picked one (if any) on
    top, in one layer ``templates`` whatever the number of templates (the legend names the
    kinds drawn).  Hovering a bar names its template, the picked one first.

    >>> from workbench.paper_examples import example3_templates
    >>> bars = template_bar_view(example3_templates(), 1, "A").layers["templates"].columns
    >>> sorted(set(bars["shown"])), int(bars["template"][-1]), int(bars["picked"][-1])
    (['other templates', 'picked template'], 1, 1)
    """
    others = [k for k in range(len(templates)) if k != picked]
    chosen = [picked] if picked is not None else []
    columns = _joined(
        _template_rows(templates, others, "other templates", "gray", (0.12, 0.3)),
        _template_rows(templates, chosen, "picked template", "#1f77b4", (0.7, 1.0)),
    )
    style = {
        **_BAR_STYLE,
        "tooltips": [
            ("template", "phi_@template"),
            ("offset (ms)", "@left{0,0.[000]} to @right{0,0.[000]}"),
            ("density (1/ms)", "@top{0.[000000]}"),
        ],
        "hover": {"sort_by": [("picked", "descending")], "limit": 1},
    }
    return _bar_view(title, {"templates": Layer("quad", columns, style)})


def template_bars(view: View, height: int = 280) -> figure:
    """A :func:`template_bar_view` drawn (an overview: no zoom tools; the hover answers)."""
    return _bar_figure(view, "occurrence time before detection (detected at 0)", height, "")


_ADJUSTED = (
    ("H_i~", "event a on the shared bucket edges", "#1f77b4"),
    ("H_j~", "event b on the shared bucket edges", "#ff7f0e"),
)
"""The adjusted histograms' names, meanings and colours (Definition 3)."""


def adjusted_bar_view(hi: HistogramTimestamp, hj: HistogramTimestamp, title: str) -> View:
    """The adjusted histograms of a pair: both cut at every edge of either, so their buckets
    line up (Definition 3), in one layer ``adjusted``; the legend names them H_i~ (event a)
    and H_j~ (event b).

    >>> from workbench.timestamps import HistogramTimestamp as H
    >>> view = adjusted_bar_view(H.uniform(0.0, 10.0), H.uniform(5.0, 20.0), "pair")
    >>> bars = view.layers["adjusted"].columns
    >>> [s.split(",")[0] for s in bars["shown"]], bars["left"].tolist()
    (['H_i~', 'H_i~', 'H_i~', 'H_j~', 'H_j~', 'H_j~'], [0.0, 5.0, 10.0, 0.0, 5.0, 10.0])
    """
    points, p_i, p_j = adjusted_histograms(hi, hj)
    widths = np.diff(points)
    columns = _joined(
        *(
            _bar_rows(
                {"left": points[:-1], "right": points[1:], "top": p / widths},
                f"{name}, {what}",
                color,
                (0.5, 0.5),
            )
            for (name, what, color), p in zip(_ADJUSTED, (p_i, p_j), strict=True)
        )
    )
    return _bar_view(title, {"adjusted": Layer("quad", columns, _BAR_STYLE)})


def adjusted_bars(view: View, height: int = 280) -> figure:
    """An :func:`adjusted_bar_view` drawn, with pan and wheel zoom (the pair's cut buckets
    may be narrow)."""
    return _bar_figure(view, "occurrence time (a detected at 0)", height, "pan,wheel_zoom,reset")


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
    """Per-template satisfaction curves (the first ``shown``) and their envelopes (Figure 3),
    as one layer ``curves`` of lines, each named in the column ``curve``.

    The upper envelope (max over templates) is solid, the lower (min) dotted, as in the
    interval timing paper's Figure 1; both drawn over the templates' grey curves.

    >>> layer = curve_layers(np.arange(3.0), np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]))
    >>> layer["curves"].columns["curve"], layer["curves"].columns["ys"][-1].tolist()
    (['template 0', 'template 1', 'upper envelope', 'lower envelope'], [0.0, 1.0, 0.0])
    """
    xs = np.asarray(max_times, dtype=float)
    n = min(shown, len(probs))
    lines = [
        *((f"template {k}", probs[k], "gray", 0.35, 1, "solid") for k in range(n)),
        ("upper envelope", probs.max(axis=0), "black", 1.0, 2, "solid"),
        ("lower envelope", probs.min(axis=0), "black", 1.0, 2, "dotted"),
    ]
    keys = ("curve", "ys", "line_color", "line_alpha", "line_width", "line_dash")
    columns = {key: [line[k] for line in lines] for k, key in enumerate(keys)}
    return {
        "curves": Layer(
            "multi_line",
            {"xs": [xs] * len(lines), **columns},
            {key: field(key) for key in keys[2:]},
        )
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
