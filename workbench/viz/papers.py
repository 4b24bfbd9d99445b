"""Plots for the notebooks that reproduce the papers: measured curves over arrival rates, the
eager/lazy decision maps of the coalescing paper's Figures 3 and 4 (model and measured runs),
Table 4's atomic costs over (cp, oop) and the cost bars of Figure 5."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.viz.coalesce import SCHEME_COLORS

__all__ = [
    "atomic_cost_maps",
    "cost_bars",
    "paired_bars",
    "rate_curves",
    "scheme_map",
    "surface_maps",
]


def rate_curves(
    frame: pd.DataFrame,
    x: str,
    y: str,
    by: str,
    title: str,
    xlabel: str = "arrival rate (events/s)",
    ylabel: str | None = None,
    logy: bool = False,
    logx: bool = True,
) -> hv.Overlay:
    """One line with markers per value of ``by``: ``y`` against ``x`` on a log x axis
    (throughput or response time against arrival rate, as the papers plot them), or a
    linear one (``logx=False``: against the number of streams or of output tuples)."""
    layers = []
    for name, part in frame.groupby(by, sort=False):
        data = part[[x, y]].sort_values(x)
        layers.append(hv.Curve(data, x, y, label=str(name)))
        layers.append(hv.Scatter(data, x, y, label=str(name)).opts(size=6))
    return hv.Overlay(layers).opts(
        hv.opts.Curve(logx=logx, logy=logy, line_width=2),
        hv.opts.Scatter(logx=logx, logy=logy),
        hv.opts.Overlay(
            title=title,
            xlabel=xlabel,
            ylabel=ylabel or y,
            width=620,
            height=330,
            legend_position="top_left",
        ),
    )


def paired_bars(frame: pd.DataFrame, x: str, by: str, y: str, title: str, ylabel: str) -> hv.Bars:
    """Bars of ``y`` for each ``x``, side by side for each value of ``by`` (one measure of
    two variants of each algorithm, such as the fast and the paper's mechanism)."""
    return hv.Bars(frame, [x, by], y).opts(
        title=title, ylabel=ylabel, xlabel="", width=620, height=330, tools=["hover"]
    )


def scheme_map(surface: pd.DataFrame, title: str) -> hv.HeatMap:
    """The cheaper scheme over (cp, oop) from a cost surface with columns ``cp``, ``oop``,
    ``eager``, ``lazy``: colour = lazy - eager (blue: eager cheaper, red: lazy cheaper)."""
    data = surface.assign(
        advantage=surface["lazy"] - surface["eager"],
        scheme=np.where(surface["eager"] <= surface["lazy"], "eager", "lazy"),
    )
    bound = float(np.abs(data["advantage"]).max()) or 1.0
    return hv.HeatMap(data, kdims=["cp", "oop"], vdims=["advantage", "scheme"]).opts(
        cmap="RdBu",
        clim=(-bound, bound),
        colorbar=True,
        tools=["hover"],
        title=title,
        width=330,
        height=300,
        xlabel="coalescing probability cp",
        ylabel="out-of-order oop",
    )


def surface_maps(surfaces: pd.DataFrame) -> hv.Layout:
    """:func:`scheme_map` of every panel and source of
    :func:`~workbench.experiments.cost_surfaces.figure_surfaces`: a row per panel of Figures 3
    and 4, a column per source (model with constant costs, model with measured costs,
    measured runs)."""
    sources = list(dict.fromkeys(surfaces["source"]))
    maps = [
        scheme_map(part, f"Fig. {panel}: {source}")
        for (panel, source), part in surfaces.groupby(["panel", "source"], sort=False)
    ]
    return hv.Layout(maps).cols(len(sources))


def atomic_cost_maps(
    cells: pd.DataFrame, names: tuple[str, ...] = ("insert", "merge", "split", "read")
) -> hv.Layout:
    """Table 4's atomic costs measured per (cp, oop) cell (µs), one heat map per operation
    (:func:`~workbench.experiments.atomic_costs.measure_cells`; blank where the cell never
    exercised it)."""
    maps = []
    for name in names:
        data = cells[["cp", "oop"]].assign(us=cells[name] * 1e6)
        maps.append(
            hv.HeatMap(data, kdims=["cp", "oop"], vdims=["us"]).opts(
                cmap="viridis",
                colorbar=True,
                tools=["hover"],
                title=f"C_{name} (µs)",
                width=300,
                height=260,
                xlabel="coalescing probability cp",
                ylabel="out-of-order oop",
            )
        )
    return hv.Layout(maps).cols(len(names))


def cost_bars(table: pd.DataFrame, title: str) -> hv.Bars:
    """Figure 5: each case's total weighted cost with every query lazy, every query eager and
    the optimal selection (columns ``case``, ``all lazy``, ``all eager``, ``optimal`` of
    :func:`~workbench.experiments.coalescing_selection.table5_selection` or
    ``table6_selection``)."""
    schemes = ["all lazy", "all eager", "optimal"]
    data = table.melt(id_vars="case", value_vars=schemes, var_name="selection", value_name="cost")
    return hv.Bars(data, kdims=["case", "selection"], vdims=["cost"]).opts(
        title=title,
        width=620,
        height=300,
        tools=["hover"],
        xlabel="",
        ylabel="total weighted cost (Eq. 9-10)",
        multi_level=True,
        color="selection",
        cmap={
            "all lazy": SCHEME_COLORS["lazy"],
            "all eager": SCHEME_COLORS["eager"],
            "optimal": "#2ca02c",
        },
    )
