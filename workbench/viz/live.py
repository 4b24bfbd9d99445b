"""Plots of a running Spark live join: rates, batch duration, state size, results per second,
and late or rejected events (fed by HoloViews ``Buffer``/``Pipe`` streams)."""

from __future__ import annotations

import holoviews as hv
import pandas as pd

__all__ = ["METRIC_COLUMNS", "REJECT_REASONS", "metric_curve", "rate_curves", "reject_bars"]

METRIC_COLUMNS = (
    "elapsed_s",
    "batch",
    "input_rows_per_s",
    "processed_rows_per_s",
    "batch_ms",
    "state_rows",
    "pairs",
    "results_per_s",
)
"""Columns of the per-micro-batch metrics the curves read (time in seconds since Start)."""
REJECT_REASONS = ("malformed", "unknown stream", "unknown template", "late", "dropped by watermark")
"""Why an event did not join: the rejects sink's reasons, and rows the join state dropped."""

_CURVE = {"responsive": True, "height": 200, "framewise": True, "tools": ["hover"]}


def rate_curves(data: pd.DataFrame) -> hv.Overlay:
    """Input and processed rows per second of each micro-batch over time since Start."""
    return (
        hv.Curve(data, "elapsed_s", "input_rows_per_s", label="input").opts(color="#1f77b4")
        * hv.Curve(data, "elapsed_s", "processed_rows_per_s", label="processed").opts(
            color="#ff7f0e"
        )
    ).opts(
        hv.opts.Curve(**_CURVE, xlabel="seconds since Start", ylabel="rows/s"),
        hv.opts.Overlay(title="input and processed rows/s", legend_position="top_left"),
    )


def metric_curve(data: pd.DataFrame, column: str, title: str, color: str) -> hv.Curve:
    """One per-micro-batch figure over time since Start."""
    return hv.Curve(data, ("elapsed_s", "seconds since Start"), column).opts(
        title=title, color=color, **_CURVE
    )


def reject_bars(data: pd.DataFrame) -> hv.Bars:
    """Events that did not join, by reason (columns ``reason``, ``records``)."""
    return hv.Bars(data, "reason", "records").opts(
        title="late and rejected events",
        responsive=True,
        height=200,
        framewise=True,
        color="#d62728",
        tools=["hover"],
        xrotation=20,
    )
