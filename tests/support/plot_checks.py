"""Server-side checks of rendered plots: a plot's axes cover what its renderers draw.

A HoloViews pane is rendered to Bokeh once (``rendered``); changing the app's parameters then
updates that same figure in place, as in a served page, so :func:`uncovered` sees what a user
would see after the change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn

X_FIELDS = ("x", "x0", "x1", "left", "right", "xs")
Y_FIELDS = ("y", "y0", "y1", "top", "bottom", "ys")
SKIP_GLYPHS = ("VStrip", "HStrip", "VSpan", "HSpan")  # spans to infinity: backgrounds


def rendered(pane: pn.pane.HoloViews) -> list:
    """The Bokeh plots of a HoloViews pane (one per figure; a layout gives several)."""
    root = pane.get_root()
    plot, _ = pane._plots[root.ref["id"]]
    figures = []
    for p in plot.traverse(lambda x: x):
        state = getattr(p, "state", None)
        if state is not None and hasattr(state, "x_range") and state not in figures:
            figures.append(state)
    return figures


def _values(data: dict, glyph: object, fields: tuple[str, ...]) -> np.ndarray:
    out = []
    for name in fields:
        spec = getattr(glyph, name, None)
        column = spec if isinstance(spec, str) else getattr(spec, "field", None)
        if column is None or column not in data:
            continue
        values = data[column]
        parts = list(values) if len(values) and np.ndim(values[0]) > 0 else [values]
        flat = np.concatenate([_ms(np.asarray(v)).ravel() for v in parts])
        out.append(flat[np.isfinite(flat)])
    return np.concatenate(out) if out else np.zeros(0)


def _ms(values: np.ndarray) -> np.ndarray:
    """Numbers as floats; dates as ms since the epoch (as Bokeh's datetime axes count)."""
    if values.dtype.kind == "M":
        return values.astype("datetime64[ns]").astype(np.int64) / 1e6
    return values.astype(float)


def _range_ms(x: object) -> float:
    if isinstance(x, (int, float)):
        return float(x)
    return pd.Timestamp(x).value / 1e6


def _off_factors(figure: object, axis: str, fields: tuple[str, ...], factors: list[str]) -> list:
    """On a categorical axis every category drawn must be one of the axis' factors."""
    out = []
    for r in figure.renderers:
        glyph = getattr(r, "glyph", None)
        for name in fields:
            spec = getattr(glyph, name, None)
            column = spec if isinstance(spec, str) else getattr(spec, "field", None)
            drawn = set(map(str, r.data_source.data.get(column, []))) if column else set()
            if not drawn <= set(factors):
                out.append(f"{axis} categories {sorted(drawn - set(factors))} are not on the axis")
    return out


def uncovered(figure: object, tol: float = 1e-9) -> list[str]:
    """What of the figure's renderers lies outside its axes' ranges (empty when all fits).

    A plot with data must also have non-degenerate ranges."""
    problems = []
    for axis, fields in (("x", X_FIELDS), ("y", Y_FIELDS)):
        rng = getattr(figure, f"{axis}_range")
        if hasattr(rng, "factors"):
            problems += _off_factors(figure, axis, fields, [str(f) for f in rng.factors])
            continue
        if rng.start is None or rng.end is None:
            continue  # a DataRange1d the browser computes from the data
        lo, hi = sorted((_range_ms(rng.start), _range_ms(rng.end)))
        span = max(hi - lo, 1e-12)
        for r in figure.renderers:
            glyph = getattr(r, "glyph", None)
            if glyph is None or not r.visible or type(glyph).__name__ in SKIP_GLYPHS:
                continue
            vals = _values(r.data_source.data, glyph, fields)
            if vals.size == 0:
                continue
            if vals.min() < lo - tol * span or vals.max() > hi + tol * span:
                problems.append(
                    f"{type(glyph).__name__} {axis} in [{vals.min():.6g}, {vals.max():.6g}] "
                    f"outside the {axis} range [{lo:.6g}, {hi:.6g}]"
                )
    return problems
