"""Plots of a running Spark live join: rates, batch duration, state size, results per second,
and late or rejected events (fed by HoloViews ``Buffer``/``Pipe`` streams); the table of the
latest pairs in readable units; the micro-batches of a tab's run on Spark
(:func:`batch_spikes`).  Every figure is a count or a duration: its axis starts at 0."""

from __future__ import annotations

from functools import partial

import holoviews as hv
import numpy as np
import pandas as pd
from holoviews.streams import Buffer, Pipe

from workbench.viz.axes import clock, time_ticks

__all__ = [
    "METRIC_COLUMNS",
    "PAIR_TABLE_COLUMNS",
    "REJECT_REASONS",
    "batch_spikes",
    "empty_metrics",
    "live_charts",
    "metric_curve",
    "pair_table",
    "rate_curves",
    "reject_bars",
    "reject_counts",
]

METRIC_COLUMNS = (
    "elapsed_s",
    "input_rows_per_s",
    "processed_rows_per_s",
    "batch_ms",
    "state_rows",
    "results_per_s",
)
"""Columns of the per-micro-batch metrics the curves read (time in seconds since Start): the
charts' ``Buffer`` holds these."""
REJECT_REASONS = ("malformed", "unknown stream", "unknown template", "late", "dropped by watermark")
"""Why an event did not join: the rejects sink's reasons, and rows the join state dropped."""
PAIR_TABLE_COLUMNS = ("A event", "B event", "A detected", "B detected", "d", "delta", "P")
"""The latest-pairs table as shown: ids, detection times (h:mm:ss.s into the replay), the
window and threshold the pair was decided under, and its probability P(|Xa - Xb| <= d)."""


def _unselectable(plot: object, _element: object) -> None:
    """No glyphs for selected or unselected marks (a HoloViews hook): a live chart has no
    selection tool; two Bokeh models fewer a line or a set of bars (the muted glyph stays:
    a click on the legend mutes a line)."""
    plot.handles["glyph_renderer"].update(selection_glyph=None, nonselection_glyph=None)


_READ_ONLY = {
    "default_tools": [],
    "tools": ["hover"],
    "toolbar": None,
    "hooks": [_unselectable],
}
"""A live chart is read by hovering, not zoomed: it re-ranges at every micro-batch
(``framewise``), which undid a zoom; without the toolbar's tools a chart is eight Bokeh models
fewer."""
_CURVE = {"responsive": True, "height": 200, "framewise": True, **_READ_ONLY}


def _since_start(start: str = "Start") -> dict[str, object]:
    """A time-since-``start`` x axis (a new formatter per plot: a Bokeh model has one
    document)."""
    return {"xlabel": f"time since {start}", "xformatter": time_ticks("s")}


def _from_zero(*columns: pd.Series) -> tuple[float, float]:
    """A count axis from 0 to a little above the largest value (0..1 while all are 0)."""
    top = max((float(c.max()) for c in columns if len(c)), default=0.0)
    return 0.0, max(1.0, 1.1 * top)


def rate_curves(data: pd.DataFrame) -> hv.Overlay:
    """Input and processed rows per second of each micro-batch over time since Start."""
    columns = ("input_rows_per_s", "processed_rows_per_s")
    return (
        hv.Curve(data, "elapsed_s", columns[0], label="read").opts(color="#1f77b4")
        * hv.Curve(data, "elapsed_s", columns[1], label="processed").opts(color="#ff7f0e")
    ).opts(
        hv.opts.Curve(
            **_CURVE,
            **_since_start(),
            ylabel="events per second",
            ylim=_from_zero(*(data[c] for c in columns)),
        ),
        hv.opts.Overlay(title="events read and processed per second", legend_position="top_left"),
    )


def metric_curve(
    data: pd.DataFrame,
    column: str,
    title: str,
    color: str,
    ylabel: str | None = None,
    duration: bool = False,
) -> hv.Curve:
    """One per-micro-batch figure over time since Start, its y axis labelled ``ylabel``
    (default: the title); ``duration``: values in ms, shown as readable durations."""
    axis = {"yformatter": time_ticks("ms")} if duration else {}
    return hv.Curve(data, "elapsed_s", column).opts(
        title=title,
        color=color,
        ylabel=ylabel or title,
        ylim=_from_zero(data[column]),
        **_CURVE,
        **_since_start(),
        **axis,
    )


def batch_spikes(
    metrics: pd.DataFrame, column: str, title: str, color: str, duration: bool = False
) -> hv.Spikes:
    """One spike per micro-batch of a tab's Spark run at its start (time since Spark was
    chosen): ``column`` of :data:`~workbench.app.runs.replay.METRICS` (``duration``: ms, shown
    as durations).  Spikes, not a line: batches of a new checkpoint start over.

    >>> m = pd.DataFrame({"elapsed_s": [1.0, 2.5], "input_rows": [40.0, 12.0]})
    >>> batch_spikes(m, "input_rows", "rows read", "#1f77b4").opts.get().kwargs["ylim"]
    (0.0, 44.0)
    """
    axis = {"yformatter": time_ticks("ms")} if duration else {}
    return hv.Spikes(metrics, "elapsed_s", column).opts(
        title=title,
        color=color,
        line_width=4,
        ylabel=title,
        ylim=_from_zero(metrics[column]),
        **_CURVE,
        **_since_start("Spark was chosen"),
        **axis,
    )


def empty_metrics() -> pd.DataFrame:
    """Metrics of no micro-batch (:data:`METRIC_COLUMNS`, as floats): what the curves' ``Buffer``
    starts from."""
    return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in METRIC_COLUMNS})


def reject_counts(rejects: pd.Series, dropped: int) -> pd.DataFrame:
    """Events that did not join by reason (every one of :data:`REJECT_REASONS`), as
    :func:`reject_bars` reads them: the rejects sink's counts by reason and the rows the join
    state ``dropped`` behind the watermark.

    >>> reject_counts(pd.Series({"late": 3}), dropped=2)["records"].tolist()
    [0, 0, 0, 3, 2]
    """
    counts = rejects.reindex(REJECT_REASONS[:-1], fill_value=0).to_dict()
    counts[REJECT_REASONS[-1]] = dropped
    return pd.DataFrame({"reason": list(counts), "records": [int(v) for v in counts.values()]})


def reject_bars(data: pd.DataFrame) -> hv.Bars:
    """Events that did not join, by reason (columns ``reason``, ``records``); the count axis
    starts at 0 and shows 0..1 while nothing was rejected."""
    return hv.Bars(data, "reason", "records").opts(
        title="late and rejected events",
        responsive=True,
        height=200,
        framewise=True,
        color="#d62728",
        **_READ_ONLY,
        xrotation=20,
        xlabel="",
        ylabel="events",
        ylim=_from_zero(data["records"]),
    )


def pair_table(latest: pd.DataFrame) -> pd.DataFrame:
    """The latest pairs (``a_id``, ``b_id``, ``a_t``, ``b_t`` in ms, ``d``, ``delta``,
    ``probability``) as the page shows them (:data:`PAIR_TABLE_COLUMNS`).

    >>> row = {"a_id": 7, "b_id": 9, "a_t": 61_500.0, "b_t": 3_723_000.0, "d": 3000.0,
    ...        "delta": 0.8, "probability": 0.912345}
    >>> print(pair_table(pd.DataFrame([row])).to_string(index=False))
     A event  B event A detected B detected        d delta     P
           7        9     1:01.5  1:02:03.0 3,000 ms  0.80 0.912
    """
    return pd.DataFrame(
        {
            "A event": latest["a_id"].astype("int64"),
            "B event": latest["b_id"].astype("int64"),
            "A detected": [clock(t) for t in latest["a_t"]],
            "B detected": [clock(t) for t in latest["b_t"]],
            "d": [f"{d:,.0f} ms" for d in latest["d"]],
            "delta": [f"{x:.2f}" for x in latest["delta"]],
            "P": [f"{p:.3f}" for p in latest["probability"]],
        },
        columns=list(PAIR_TABLE_COLUMNS),
    )


def live_charts(metrics: Buffer, rejects: Pipe) -> list[hv.DynamicMap]:
    """The live join's charts: rates, batch duration, state rows and results per second over
    the ``metrics`` of each micro-batch (:func:`empty_metrics` columns), and the bars of the
    ``rejects`` (:func:`reject_counts`)."""
    curves = [
        partial(
            metric_curve,
            column="batch_ms",
            title="batch duration",
            color="#2ca02c",
            ylabel="duration",
            duration=True,
        ),
        partial(
            metric_curve,
            column="state_rows",
            title="join state rows",
            color="#9467bd",
            ylabel="time ranges kept",
        ),
        partial(
            metric_curve,
            column="results_per_s",
            title="results per second",
            color="#8c564b",
            ylabel="pairs per second",
        ),
    ]
    return [
        *(hv.DynamicMap(f, streams=[metrics]) for f in [rate_curves, *curves]),
        hv.DynamicMap(reject_bars, streams=[rejects]),
    ]
