"""Plots of coalesced window extents and of the eager/lazy cost model (coalescing paper,
Figure 2 and Figure 3)."""

from __future__ import annotations

from collections.abc import Sequence

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.coalesce import Coalesced

__all__ = ["SCHEME_COLORS", "cost_surface", "extent_timeline", "query_points"]

SCHEME_COLORS = {"eager": "#9467bd", "lazy": "#17becf"}
"""Colours of the two coalescing schemes."""


def _label(group: object) -> str:
    """A group key as text: the values of a grouping tuple joined by commas."""
    if isinstance(group, tuple):
        return ", ".join(str(g) for g in group)
    return str(group)


def extent_timeline(tuples: Sequence[Coalesced], title: str, color: str) -> hv.Segments:
    """Temporal tuples ``[ts, te)`` as one horizontal bar per tuple, one row per group.

    A coalesced tuple's ``count`` is how many raw tuples it stands for (1 when uncoalesced);
    a tuple still open (``te == ts``) is drawn one hair wide so that it shows.
    """
    groups = [_label(c.group) for c in tuples]
    frame = pd.DataFrame(
        {
            "ts": [c.ts for c in tuples],
            "group": groups,
            "te": [max(c.te, c.ts + 1.0) for c in tuples],
            "group_end": groups,
            "value": [c.value for c in tuples],
            "count": [c.count for c in tuples],
        }
    )
    frame["value"] = frame["value"].astype(str)
    return hv.Segments(
        frame, kdims=["ts", "group", "te", "group_end"], vdims=["value", "count"]
    ).opts(
        color=color,
        line_width=9,
        alpha=0.8,
        tools=["hover"],
        title=title,
        xlabel="time (s since the stream's start)",
        ylabel="group",
    )


def cost_surface(
    cp: np.ndarray, oop: np.ndarray, cost: np.ndarray, title: str, clim: tuple[float, float]
) -> hv.Image:
    """Weighted cost over the (cp, oop) grid (Eq. 9-10), as in the paper's Figure 3."""
    return hv.Image((cp, oop, cost), kdims=["cp", "oop"], vdims=["cost"]).opts(
        cmap="viridis", clim=clim, colorbar=True, title=title, tools=["hover"]
    )


def query_points(frame: pd.DataFrame) -> hv.Points:
    """Queries at their measured (cp, oop), coloured by the scheme they are served with."""
    return hv.Points(frame, kdims=["cp", "oop"], vdims=["query", "scheme"]).opts(
        color="scheme",
        cmap=SCHEME_COLORS,
        size=11,
        line_color="white",
        tools=["hover"],
        show_legend=False,
    )
