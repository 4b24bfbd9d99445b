"""Plots of coalesced window extents and of the eager/lazy cost model (coalescing paper,
Figure 2 and Figure 3)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.coalesce import Coalesced
from workbench.viz.axes import time_ticks

__all__ = ["SCHEME_COLORS", "cost_surface", "extent_timeline", "group_order", "query_points"]

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


def extent_timeline(
    tuples: Sequence[Coalesced], title: str, color: str, groups: Sequence[Hashable] = ()
) -> hv.Segments:
    """Temporal tuples ``[ts, te)`` (s) as one horizontal bar per tuple, one row per group,
    groups in numeric order from the top (Figure 2).

    A coalesced tuple's ``count`` is how many raw tuples it stands for (1 when uncoalesced);
    a tuple still open (``te == ts``) is drawn one hair wide so that it shows. ``groups`` adds
    rows for groups holding no tuple (yet).
    """
    tuples = sorted(tuples, key=lambda c: (group_order(c.group), c.ts))
    keys = sorted({*groups, *(c.group for c in tuples)}, key=group_order)
    rows = [_label(g) for g in reversed(keys)]  # the first factor is drawn at the bottom
    labels = [_label(c.group) for c in tuples]
    frame = pd.DataFrame(
        {
            "ts": [c.ts for c in tuples],
            "group": labels,
            "te": [max(c.te, c.ts + 1.0) for c in tuples],
            "group_end": labels,
            "value": [str(c.value) for c in tuples],
            "count": [c.count for c in tuples],
        }
    )
    return hv.Segments(
        frame,
        kdims=[
            "ts",
            hv.Dimension("group", values=rows),
            "te",
            hv.Dimension("group_end", values=rows),
        ],
        vdims=["value", "count"],
    ).opts(
        color=color,
        line_width=9,
        alpha=0.8,
        tools=["hover"],
        title=title,
        xlabel="time since the stream's start",
        xformatter=time_ticks("s"),
        ylabel="group",
    )


def cost_surface(
    cp: np.ndarray, oop: np.ndarray, cost: np.ndarray, title: str, clim: tuple[float, float]
) -> hv.Image:
    """Weighted cost over the (cp, oop) grid (Eq. 9-10), as in the paper's Figure 3; the
    colour bar reads the cost, memory, update and scan each relative to its maximum (Eq. 7-8);
    both schemes' surfaces share ``clim``, so colours compare."""
    return hv.Image((cp, oop, cost), kdims=["cp", "oop"], vdims=["cost"]).opts(
        cmap="viridis",
        clim=clim,
        colorbar=True,
        clabel="weighted cost (each part normalised)",
        title=title,
        tools=["hover"],
    )


def query_points(frame: pd.DataFrame) -> hv.Points:
    """Queries at their measured (cp, oop), coloured by the scheme they are served with (the
    legend names the colours); hover shows cp and oop in three decimals."""
    served = {k: f"query served {k}" for k in SCHEME_COLORS}
    data = frame.assign(served=frame["scheme"].map(served))
    return hv.Points(data, kdims=["cp", "oop"], vdims=["query", "served"]).opts(
        color="served",
        cmap={served[k]: c for k, c in SCHEME_COLORS.items()},
        size=11,
        line_color="white",
        hover_tooltips=[("query", "@query"), ("cp", "@cp{0.000}"), ("oop", "@oop{0.000}")],
        show_legend=True,
        legend_position="top_left",
    )
