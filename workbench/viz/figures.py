"""Plain Bokeh figures described by data, for plots a page redraws as its controls move.

A :class:`View` names each layer of marks: how it is drawn (:data:`DRAW`), its style and its
source's columns.  :func:`view_figure` draws a view once; :func:`refresh` gives the same
figure another view's columns, axes and title in place, so a served page receives only the
new columns.  Built directly, without HoloViews, a tab with such a plot costs the server and
the browser about half as much (the dashboard's switch figures on the docs' Benchmarks page)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from bokeh.model import Model
from bokeh.models import (
    AllIndices,
    AllLabels,
    Axis,
    BasicTicker,
    BasicTickFormatter,
    ColumnDataSource,
    CustomJSTickFormatter,
    DatetimeAxis,
    FixedTicker,
    Glyph,
    GlyphRenderer,
    Grid,
    HoverTool,
    HSpan,
    Image,
    Line,
    LinearAxis,
    LinearColorMapper,
    LinearScale,
    MultiLine,
    NumeralTickFormatter,
    Plot,
    Quad,
    Range1d,
    Scatter,
    Segment,
    Step,
    Text,
    Tool,
    UnionRenderers,
    VArea,
    VSpan,
    VStrip,
)
from bokeh.palettes import Viridis256
from bokeh.plotting._legends import pop_legend_kwarg, update_legend
from bokeh.plotting._renderer import pop_visuals

from workbench.viz.axes import time_ticks

__all__ = [
    "DRAW",
    "Layer",
    "View",
    "fit_range",
    "headroom",
    "margin",
    "mark",
    "plain_figure",
    "refresh",
    "share_parts",
    "step_corners",
    "view_figure",
]

_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
"""The tools of a plain figure a user zooms (the default)."""


@dataclass(frozen=True)
class Layer:
    """One set of marks: its glyph (a key of :data:`DRAW`), the source's columns, the style
    (Bokeh glyph properties, with ``color`` and ``alpha`` for all of a glyph's colours and
    alphas, and ``legend_label`` / ``legend_field`` as in ``bokeh.plotting``; ``tooltips``,
    Bokeh's list of pairs, adds a hover tool over the layer's marks, and ``hover``, more of
    that tool's settings: ``limit``, ``sort_by``)."""

    glyph: str
    columns: Mapping[str, Sequence | np.ndarray]
    style: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class View:
    """What a plot shows: its title, axis ranges (numbers, or times on a datetime axis) and
    named layers (drawn in order)."""

    title: str
    x_range: tuple[object, object]
    y_range: tuple[object, object]
    layers: Mapping[str, Layer]
    x_ticks: Mapping[float, str] | None = None
    """Ticks at these positions only, labelled with these words (categories drawn at numbers:
    one bar per algorithm); None: the axis's own ticks."""
    y_ticks: Mapping[float, str] | None = None
    """The same for the y axis (a row per group)."""
    color_range: tuple[float, float] | None = None
    """The low and high values of the figure's colour scale (``image`` layers: Viridis)."""


def mark(
    fig: Plot,
    glyph: type[Glyph],
    source: ColumnDataSource,
    coordinates: Mapping[str, object],
    style: Mapping[str, object],
    like: GlyphRenderer | None = None,
) -> GlyphRenderer:
    """A renderer of ``glyph`` marks on ``fig`` at the source's ``coordinates`` (glyph
    property -> column or value), styled as ``bokeh.plotting``'s glyph methods style them
    (``style``: their keywords, the same defaults), with no glyph for selected, unselected or
    muted marks: nothing on our plots is selected or muted, and the glyph methods build those
    two glyphs (unselected, muted) for every renderer only for a page to drop them.  ``like``:
    a renderer of the same source whose row view (a Bokeh model) this one shares."""
    style = dict(style)
    legend, legend_name = pop_legend_kwarg(style)
    visuals = pop_visuals(glyph, style)
    renderer = GlyphRenderer(
        glyph=glyph(**coordinates, **style, **visuals),
        data_source=source,
        selection_glyph=None,
        nonselection_glyph=None,
        muted_glyph=None,
    )
    if like is not None:
        renderer.view = like.view
    fig.renderers.append(renderer)
    if legend:
        update_legend(fig, legend, legend_name, renderer)
    return renderer


def _labelled(fig: Plot, source: ColumnDataSource, name: str, **style: object) -> list:
    """Vertical lines at ``x``, each with its text (the column ``name``) at height ``y``."""
    color = style.pop("color")
    line = mark(fig, VSpan, source, {"x": "x"}, {"line_color": color, **style})
    text = {
        "text_color": color,
        "text_font_size": "9pt",
        "text_baseline": "bottom",
        "text_align": "center",
    }
    return [line, mark(fig, Text, source, {"x": "x", "y": "y", "text": name}, text, like=line)]


def _bars(fig: Plot, source: ColumnDataSource, name: str, **style: object) -> list:
    """Bars from 0 up to ``top`` between ``left`` and ``right``, each with its ``text`` 4 px
    above its top at ``x`` (screen units: any scale); ``style`` is the bars'."""
    bars = mark(
        fig, Quad, source, {"left": "left", "right": "right", "top": "top", "bottom": 0.0}, style
    )
    text = {
        "text_baseline": "bottom",
        "text_align": "center",
        "text_font_size": "10pt",
        "text_color": "black",
        "y_offset": -4,
    }
    return [bars, mark(fig, Text, source, {"x": "x", "y": "top", "text": "text"}, text, like=bars)]


def _glyph(glyph: type[Glyph], **coordinates: object) -> Callable[..., list[GlyphRenderer]]:
    """How a one-glyph layer is drawn (:data:`DRAW`): ``glyph`` at ``coordinates``."""
    return lambda fig, src, name, **style: [mark(fig, glyph, src, coordinates, style)]


DRAW: dict[str, Callable[..., list[GlyphRenderer]]] = {
    "vstrip": _glyph(VStrip, x0="x0", x1="x1"),
    "multi_line": _glyph(MultiLine, xs="xs", ys="ys"),
    "line": _glyph(Line, x="x", y="y"),
    "segment": _glyph(Segment, x0="x0", y0="y0", x1="x1", y1="y1"),
    "hspan": _glyph(HSpan, y="y"),
    "vspan": _glyph(VSpan, x="x"),
    "labelled": _labelled,
    "scatter": _glyph(Scatter, x="x", y="y"),
    "varea": _glyph(VArea, x="x", y1=0.0, y2="y"),
    "quad": _glyph(Quad, left="left", right="right", top="top", bottom=0.0),
    "bars": _bars,
    "step": _glyph(Step, x="x", y="y", mode="after"),
    "text": _glyph(Text, x="x", y="y", text="text"),
    "image": _glyph(Image, image="image", x="x", y="y", dw="dw", dh="dh"),
}
"""How each kind of layer is drawn from its source, and the columns it reads: strips
``x0``-``x1`` (full height), ``xs``/``ys`` lines, an ``x``/``y`` line, segments from
(``x0``, ``y0``) to (``x1``, ``y1``), full-width lines at ``y``, full-height lines at ``x``,
such lines labelled by the layer's own column at ``y``, dots at (``x``, ``y``), an area from 0
up to ``y`` along ``x``, bars from 0 up to ``top`` between ``left`` and ``right`` (``bars``:
each with its ``text`` above it at ``x``), a step line through ``x``/``y`` (each value holds
until the next ``x``), ``text`` at (``x``, ``y``), 2-D arrays ``image`` (a cell per value,
coloured on the view's :attr:`~View.color_range`) with their corner ``x``, ``y`` and size
``dw``, ``dh``."""


def plain_figure(
    title: str,
    x_label: str,
    y_label: str,
    height: int = 420,
    x_axis: str = "ms",
    tools: str = _TOOLS,
) -> Plot:
    """An empty figure as wide as its place, ``height`` px high, with explicit ranges to set
    (:func:`fit_range`); its x axis is a time in ms (``x_axis`` "ms") or s ("s"), dates
    ("datetime"), plain numbers ("linear") or none ("none": no axes and no grid lines at
    all, a diagram).  ``tools``: Bokeh's comma-separated tool names (pan, zoom, reset and
    save by default); "" for a plot no one zooms (bars, a diagram), which then shows no
    toolbar and costs eight Bokeh models fewer (its layers' hover tooltips still show).

    Built from Bokeh's models, as ``bokeh.plotting.figure`` builds it (the same axes, grids
    and tools) but without the default ranges, scales, title and options that ``figure``
    makes only to replace them: a figure is about twenty models, each of which costs the
    server its validation and themed defaults.

    >>> len(plain_figure("t", "x", "y").references()) - len(
    ...     plain_figure("t", "x", "y", tools="").references())
    8
    """
    if x_axis not in ("ms", "s", "datetime", "linear", "none"):
        raise ValueError(f"x_axis = {x_axis!r} must be 'ms', 's', 'datetime', 'linear' or 'none'")
    fig = Plot(
        height=height,
        sizing_mode="stretch_width",
        x_range=Range1d(),
        y_range=Range1d(),
        toolbar_location="right" if tools else None,
    )
    fig.title.text = title
    fig.toolbar.tools = [Tool.from_string(name) for name in tools.split(",") if name]
    if x_axis == "none":
        return fig
    x = DatetimeAxis(axis_label=x_label) if x_axis == "datetime" else LinearAxis(axis_label=x_label)
    if x_axis in ("ms", "s"):
        x.formatter = time_ticks(x_axis)
    y = LinearAxis(axis_label=y_label)
    fig.add_layout(x, "below")
    fig.add_layout(y, "left")
    fig.center.extend([Grid(dimension=0, axis=x), Grid(dimension=1, axis=y)])
    return fig


def view_figure(
    view: View,
    x_label: str,
    y_label: str,
    height: int = 420,
    x_axis: str = "ms",
    tools: str = _TOOLS,
) -> Plot:
    """``view`` drawn on a :func:`plain_figure` (``x_axis``, ``tools``: its own); its sources
    carry the layers' names (what :func:`refresh` updates), its colour scale (if any) the
    name ``colors``.  Its layers share one selection policy and one filter of all rows
    (neither holds state): two Bokeh models fewer for each layer after the first; the marks
    of one layer share its row view."""
    fig = plain_figure(view.title, x_label, y_label, height, x_axis, tools)
    colors = None
    if view.color_range is not None:
        colors = LinearColorMapper(palette=Viridis256, name="colors")
    policy, every_row = UnionRenderers(), AllIndices()
    for name, layer in view.layers.items():
        style = dict(layer.style)
        tooltips, hover = style.pop("tooltips", None), style.pop("hover", {})
        if layer.glyph == "image" and colors is not None:
            style["color_mapper"] = colors
        source = ColumnDataSource(dict(layer.columns), name=name, selection_policy=policy)
        marks = DRAW[layer.glyph](fig, source, name, **style)
        marks[0].view.filter = every_row
        if tooltips:
            fig.add_tools(HoverTool(renderers=marks[:1], tooltips=tooltips, **hover))
    _show_frame(fig, view)
    return fig


_SHARED = (
    AllIndices,
    AllLabels,
    Axis,
    BasicTicker,
    BasicTickFormatter,
    CustomJSTickFormatter,
    LinearScale,
    NumeralTickFormatter,
    UnionRenderers,
)
"""Models that hold no state of their own in the browser: a filter of every row, a policy,
a scale (each plot's frame derives its own from it), tickers and tick formatters that compute
from their settings alone.  Figures of one page can share one of each (:func:`share_parts`)."""


def _shared_key(model: Model) -> tuple[type, str] | None:
    """What makes ``model`` interchangeable with another: its type and settings (None: a model
    that is not one of :data:`_SHARED`)."""
    if type(model) not in _SHARED:
        return None
    return type(model), repr(sorted(model.properties_with_values(include_defaults=False).items()))


def share_parts(*figs: Plot) -> None:
    """Let ``figs``, the figures of one page, share one of each stateless model
    (:data:`_SHARED`) with the same settings: every renderer's row filter, every source's
    selection policy, every axis's label policy, ticker and tick formatter, and the scales.
    Each Bokeh model costs the server its building, its walks of the document and its
    serialization, and the browser its view; a figure holds about 25 of them before it draws
    anything, and each renderer adds 7.  Call it once the figures are drawn (a later
    :func:`refresh` changes only data, ranges and titles); what they show does not change.
    It visits only where those models sit (a walk of every model the figures reference would
    cost as much as drawing them).

    >>> a, b = plain_figure("a", "x", "y"), plain_figure("b", "x", "y")
    >>> share_parts(a, b)
    >>> a.x_scale is b.y_scale, a.xaxis[0].formatter is b.xaxis[0].formatter
    (True, True)
    """
    kept: dict[tuple[type, str], Model] = {}

    def share(owner: Model, *names: str) -> None:
        for name in names:
            value = getattr(owner, name)
            key = _shared_key(value) if isinstance(value, Model) else None
            if key is not None and kept.setdefault(key, value) is not value:
                setattr(owner, name, kept[key])

    for fig in figs:
        share(fig, "x_scale", "y_scale")
        for axis in (*fig.above, *fig.below, *fig.left, *fig.right):
            if isinstance(axis, Axis):
                share(axis, "ticker", "formatter", "major_label_policy")
        for renderer in fig.renderers:
            if isinstance(renderer, GlyphRenderer):
                share(renderer.view, "filter")
                share(renderer.data_source, "selection_policy")


def step_corners(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The corners of a step line through ``x``, ``y`` whose each value holds until the next
    ``x`` (Bokeh's ``step`` in mode "after"), as a plain line's points: step lines of several
    series, one row each, are then one ``multi_line`` layer (one renderer, one source).

    >>> [a.tolist() for a in step_corners(np.array([0.0, 1.0, 3.0]), np.array([5.0, 6.0, 9.0]))]
    [[0.0, 1.0, 1.0, 3.0, 3.0], [5.0, 5.0, 6.0, 6.0, 9.0]]
    """
    return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]


def margin(lo: float, hi: float, share: float = 0.02) -> tuple[float, float]:
    """``lo`` to ``hi`` widened by ``share`` of its width on each side (by 1 when it has no
    width): an axis around what it shows.

    >>> margin(0.0, 100.0), margin(5.0, 5.0)
    ((-2.0, 102.0), (4.0, 6.0))
    """
    pad = share * (hi - lo) if hi > lo else 1.0
    return lo - pad, hi + pad


def headroom(top: float, share: float = 0.05) -> tuple[float, float]:
    """0 to ``share`` above ``top`` (0 to 1 when nothing is above 0): an axis for bars or counts.

    >>> headroom(200.0), headroom(0.0)
    ((0.0, 210.0), (0.0, 1.0))
    """
    return 0.0, (1.0 + share) * top if top > 0 else 1.0


def fit_range(axis: Range1d, start: object, end: object) -> None:
    """An axis from ``start`` to ``end`` (numbers or times; start > end inverts it), where
    its Reset tool returns too (not to the first data's range)."""
    axis.update(start=start, end=end, reset_start=start, reset_end=end)


def _fit_ticks(axis: object, ticks: Mapping[float, str] | None) -> None:
    """Ticks at ``ticks``' positions, labelled with its words (None: nothing set)."""
    if ticks is None:
        return
    axis.major_label_overrides = {float(k): v for k, v in ticks.items()}
    if isinstance(axis.ticker, FixedTicker):
        axis.ticker.ticks = [float(k) for k in ticks]
    else:
        axis.ticker = FixedTicker(ticks=[float(k) for k in ticks])


def _drawn(renderer: GlyphRenderer) -> bool:
    """Whether ``renderer``'s source holds any marks."""
    return any(len(column) for column in renderer.data_source.data.values())


def _show_frame(fig: Plot, view: View) -> None:
    """``view``'s axis ranges, ticks, colour scale and title on ``fig``; its legend names only
    the layers that have marks (a swatch for an empty layer names nothing on the plot)."""
    for legend in fig.legend:
        for item in legend.items:
            item.visible = any(_drawn(r) for r in item.renderers)
    fit_range(fig.x_range, *view.x_range)
    fit_range(fig.y_range, *view.y_range)
    for axes, ticks in ((fig.xaxis, view.x_ticks), (fig.yaxis, view.y_ticks)):
        if axes:  # a diagram has none
            _fit_ticks(axes[0], ticks)
    if view.color_range is not None:
        low, high = view.color_range
        mappers = (getattr(r.glyph, "color_mapper", None) for r in _glyphs(fig))
        next(m for m in mappers if m is not None).update(low=low, high=high)
    fig.title.text = view.title


def _glyphs(fig: Plot) -> list[GlyphRenderer]:
    """``fig``'s glyph renderers, read off the figure itself (a model search walks every
    model the figure references: about a tenth of a served page's work as its sliders
    moved)."""
    return [r for r in fig.renderers if isinstance(r, GlyphRenderer)]


def refresh(fig: Plot, view: View) -> None:
    """``fig`` (drawn by :func:`view_figure` with the same layers) shows ``view``: new
    columns, axis ranges, ticks, colour scale and title, in place."""
    sources = {r.data_source.name: r.data_source for r in _glyphs(fig)}
    for name, layer in view.layers.items():
        sources[name].data = dict(layer.columns)
    _show_frame(fig, view)
