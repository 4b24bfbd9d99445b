"""The timing joins' race drawn (the Timing joins tab, :mod:`workbench.experiments.race`):
a bar per racer for a measure, and each racer's results over the replay's clock, one step
line per racer, all drawn by one renderer (the lazy ones climb in blocks).  The racers are
named by the caller, in a fixed order that gives each its colour."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from bokeh.core.properties import field
from bokeh.palettes import Category10_10

from workbench.viz.figures import Layer, View, headroom, margin, step_corners
from workbench.viz.wjoin import measure_view

__all__ = ["race_bars", "race_results_view", "racer_colors"]


def racer_colors(names: Sequence[str]) -> dict[str, str]:
    """One colour per racer, by its place in ``names`` (at most ten).

    >>> racer_colors(["Simple", "Eager"])
    {'Simple': '#1f77b4', 'Eager': '#ff7f0e'}
    """
    if len(names) > len(Category10_10):
        raise ValueError(f"{len(names)} racers: at most {len(Category10_10)} have colours")
    return dict(zip(names, Category10_10, strict=False))


def race_bars(
    table: pd.DataFrame, measure: str, label: str, names: Sequence[str], unit: str = ""
) -> View:
    """One bar per racer of the race's ``table`` (its index: the racers, of ``names``) for
    ``measure``; the values on hover (eight labels over the bars would overlap: the tab's
    table has them).

    >>> t = pd.DataFrame({"events_per_s": [2e5, 1e6]}, index=["Simple", "Eager"])
    >>> view = race_bars(t, "events_per_s", "events/s", ["Simple", "SSort", "Eager"])
    >>> view.x_ticks, list(view.layers["bars"].columns["color"])
    ({0.0: 'Simple', 1.0: 'Eager'}, ['#1f77b4', '#2ca02c'])
    """
    frame = pd.DataFrame({"algorithm": list(table.index), measure: table[measure].to_numpy()})
    view = measure_view(frame, measure, label, unit, colors=racer_colors(names))
    return replace(view, layers={"bars": replace(view.layers["bars"], glyph="quad")})


def race_results_view(history: pd.DataFrame, names: Sequence[str]) -> View:
    """Each racer's results against the replay's clock (``history``: a ``clock_s`` column
    and one column of results per racer in the race, one row per step), as step lines in one
    layer ``racers``, a line per racer in the race (named in the column ``racer``, which the
    legend reads); each racer of ``names`` keeps its colour; PTJoin's modes are dashed.

    >>> h = pd.DataFrame({"clock_s": [0.0, 60.0], "Eager": [0, 40]})
    >>> racers = race_results_view(h, ["Simple", "Eager"]).layers["racers"].columns
    >>> racers["racer"], racers["ys"][0].tolist(), racers["line_color"]
    (['Eager'], [0.0, 0.0, 40.0], ['#ff7f0e'])
    """
    clock = history["clock_s"].to_numpy(dtype=float) if len(history) else np.zeros(0)
    lines = [
        (name, color, *step_corners(clock, history[name].to_numpy(dtype=float)))
        for name, color in racer_colors(names).items()
        if name in history and len(history)
    ]
    columns = {
        "racer": [name for name, *_ in lines],
        "line_color": [color for _, color, *_ in lines],
        "line_dash": ["dashed" if "PTJoin" in name else "solid" for name, *_ in lines],
        "xs": [xs for *_, xs, _ in lines],
        "ys": [ys for *_, ys in lines],
    }
    style = {
        "line_color": field("line_color"),
        "line_dash": field("line_dash"),
        "line_width": 2,
        "legend_field": "racer",
    }
    counts = history.drop(columns="clock_s").to_numpy(dtype=float)
    top = float(counts.max()) if counts.size else 0.0
    span = (float(clock.min()), float(clock.max())) if len(clock) else (0.0, 1.0)
    return View(
        "Results over the replay's clock",
        margin(*span),
        headroom(top),
        {"racers": Layer("multi_line", columns, style)},
    )
