"""Plots of coalesced window extents and of the eager/lazy cost model (coalescing paper,
Figure 2 and Figure 3), as plain Bokeh figures described by data (:mod:`workbench.viz.figures`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd
from bokeh.core.properties import field
from bokeh.models import ColorBar, Grid, Image
from bokeh.plotting import figure

from workbench.coalesce import Coalesced
from workbench.viz.figures import Layer, View, margin, view_figure

__all__ = [
    "SCHEME_COLORS",
    "extent_figure",
    "extent_view",
    "group_order",
    "surface_figure",
    "surface_view",
    "twin_surfaces",
]

SCHEME_COLORS = {"eager": "#9467bd", "lazy": "#17becf"}
"""Colours of the two coalescing schemes."""


def _label(group: object) -> str:
    """A group key as text: the values of a grouping tuple joined by commas."""
    if isinstance(group, tuple):
        return ", ".join(str(g) for g in group)
    return str(group)


def group_order(group: Hashable) -> tuple:
    """A sort key ordering groups numerically where they are numbers (mote 2 before mote 10).

    >>> sorted([(3,), (10,), (1,), (2,)], key=group_order)
    [(1,), (2,), (3,), (10,)]
    >>> sorted(["b", 2, "a", 1.5], key=group_order)
    [1.5, 2, 'a', 'b']
    """
    parts = group if isinstance(group, tuple) else (group,)
    return tuple(
        (0, float(g), "") if isinstance(g, int | float | np.number) else (1, 0.0, str(g))
        for g in parts
    )


def extent_view(
    tuples: Sequence[Coalesced], title: str, color: str, groups: Sequence[Hashable] = ()
) -> View:
    """Temporal tuples ``[ts, te)`` (s) as one horizontal bar per tuple, one row per group,
    groups in numeric order from the top (Figure 2).

    A coalesced tuple's ``count`` is how many raw tuples it stands for (1 when uncoalesced);
    a tuple still open (``te == ts``) is drawn one hair wide so that it shows. ``groups`` adds
    rows for groups holding no tuple (yet).

    >>> from workbench.coalesce import Coalesced
    >>> tuples = [Coalesced(0.0, 0, 60.0, 10, 20.0, 3), Coalesced(5.0, 1, 5.0, 2, 21.5, 1)]
    >>> view = extent_view(tuples, "extent", "black", groups=[1])
    >>> view.y_ticks, view.layers["tuples"].columns["y0"].tolist()
    ({2.0: '1', 1.0: '2', 0.0: '10'}, [1.0, 0.0])
    >>> view.layers["tuples"].columns["x1"].tolist()  # the open tuple: one second wide
    [6.0, 60.0]
    """
    tuples = sorted(tuples, key=lambda c: (group_order(c.group), c.ts))
    keys = sorted({*groups, *(c.group for c in tuples)}, key=group_order)
    row = {g: float(len(keys) - 1 - k) for k, g in enumerate(keys)}  # the first on top
    ts = np.array([c.ts for c in tuples], dtype=float)
    te = np.array([max(c.te, c.ts + 1.0) for c in tuples], dtype=float)
    y = np.array([row[c.group] for c in tuples], dtype=float)
    span = (float(ts.min()), float(te.max())) if len(tuples) else (0.0, 1.0)
    layer = Layer(
        "segment",
        {
            "x0": ts,
            "y0": y,
            "x1": te,
            "y1": y,
            "group": [_label(c.group) for c in tuples],
            "value": [str(c.value) for c in tuples],
            "count": [c.count for c in tuples],
        },
        {
            "line_color": color,
            "line_width": 9,
            "line_alpha": 0.8,
            "tooltips": [
                ("group", "@group"),
                ("from, to (s)", "@x0{0,0.0}, @x1{0,0.0}"),
                ("value", "@value"),
                ("raw tuples", "@count"),
            ],
        },
    )
    return View(
        title,
        margin(*span),
        (-0.6, max(len(keys), 1) - 0.4),
        {"tuples": layer},
        y_ticks={row[g]: _label(g) for g in keys},
    )


def extent_figure(view: View, height: int = 330, y_label: str = "group") -> figure:
    """An :func:`extent_view` drawn: time since the stream's start across, a row per group."""
    return view_figure(view, "time since the stream's start", y_label, height, x_axis="s")


def surface_view(
    cp: np.ndarray,
    oop: np.ndarray,
    cost: np.ndarray,
    title: str,
    clim: tuple[float, float],
    queries: pd.DataFrame,
) -> View:
    """Weighted cost over the (cp, oop) grid (Eq. 9-10, ``cost`` oop by row), as in the
    paper's Figure 3, a cell around each grid point; both schemes' surfaces share ``clim``, so
    colours compare.  The ``queries`` (columns ``query``, ``cp``, ``oop``, ``scheme``) sit at
    their measured (cp, oop), coloured by the scheme that serves them."""
    half_x, half_y = (cp[1] - cp[0]) / 2, (oop[1] - oop[0]) / 2
    x0, x1 = float(cp[0] - half_x), float(cp[-1] + half_x)
    y0, y1 = float(oop[0] - half_y), float(oop[-1] + half_y)
    layers = {
        "surface": Layer(
            "image",
            {
                "image": [np.asarray(cost, dtype=float)],
                "x": [x0],
                "y": [y0],
                "dw": [x1 - x0],
                "dh": [y1 - y0],
            },
            {"tooltips": [("cp", "$x{0.00}"), ("oop", "$y{0.00}"), ("cost", "@image{0.00}")]},
        )
    }
    served = queries["scheme"].to_numpy(dtype=object)
    layers["queries"] = Layer(
        "scatter",
        {
            "x": queries["cp"].to_numpy(dtype=float),
            "y": queries["oop"].to_numpy(dtype=float),
            "query": queries["query"].to_numpy(dtype=object),
            "served": np.array([f"query served {k}" for k in served], dtype=object),
            "color": np.array([SCHEME_COLORS[k] for k in served], dtype=object),
        },
        {
            "size": 11,
            "color": field("color"),
            "line_color": "white",
            "legend_field": "served",  # the schemes serving a query now, as BokehJS groups them
            "tooltips": [("query", "@query"), ("cp", "@x{0.000}"), ("oop", "@y{0.000}")],
        },
    )
    return View(title, (x0, x1), (y0, y1), layers, color_range=clim)


def surface_figure(view: View, height: int = 320) -> figure:
    """A :func:`surface_view` drawn, its colour bar reading the weighted cost (memory, update
    and scan each relative to its maximum, Eq. 7-8); read by hovering, not zoomed: no
    toolbar; no grid (the image covers the whole frame, and a grid is drawn under it)."""
    fig = view_figure(
        view,
        "cp: share of arrivals that merge",
        "oop: share out of order",
        height,
        "linear",
        tools="",
    )
    (colors,) = {  # read off the glyphs: a model search walks every model of the figure
        r.glyph.color_mapper for r in fig.renderers if isinstance(r.glyph, Image)
    }
    fig.add_layout(ColorBar(color_mapper=colors, title="weighted cost"), "right")
    fig.legend.location = "top_left"
    fig.center = [r for r in fig.center if not isinstance(r, Grid)]
    return fig


def twin_surfaces(first: figure, second: figure) -> None:
    """Let two :func:`surface_figure` figures over the same grid, colour scale and queries
    (the eager and the lazy surface) share their ranges, colour mapper, colour bar's label
    policy and queries' source: seven Bokeh models fewer, and what they show does not change
    (each :func:`~workbench.viz.figures.refresh` sets the same values on the shared models).

    >>> from workbench.app.coalescing_model import GRID
    >>> queries = pd.DataFrame({"query": ["q"], "cp": [0.5], "oop": [0.5], "scheme": ["lazy"]})
    >>> a, b = (
    ...     surface_figure(surface_view(GRID, GRID, np.ones((len(GRID),) * 2), t, (0, 1), queries))
    ...     for t in "ab"
    ... )
    >>> twin_surfaces(a, b)
    >>> a.x_range is b.x_range, a.renderers[1].data_source is b.renderers[1].data_source
    (True, True)
    """
    second.x_range, second.y_range = first.x_range, first.y_range
    # read off the layouts: a model search walks every model of the figure (55 ms here)
    bar, other = (next(r for r in f.right if isinstance(r, ColorBar)) for f in (first, second))
    other.update(color_mapper=bar.color_mapper, major_label_policy=bar.major_label_policy)
    for glyphs, shared in zip(second.renderers, first.renderers, strict=True):
        if glyphs.data_source.name == "queries":
            glyphs.data_source = shared.data_source
        else:
            glyphs.glyph.color_mapper = bar.color_mapper
