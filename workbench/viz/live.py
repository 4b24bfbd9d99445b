"""Plots of a running Spark live join: rates, batch duration, state size, results per second,
and late or rejected events, as plain Bokeh figures over two data sources that a page streams
each micro-batch into (:func:`live_figures`, :func:`stream_metrics`); the table of the latest
pairs in readable units; the micro-batches of a tab's run on Spark (:func:`batch_spikes`).
Every figure is a count or a duration: its axis starts at 0."""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd
from bokeh.models import (
    ColumnDataSource,
    FixedTicker,
    Grid,
    HoverTool,
    Line,
    Plot,
    VBar,
)

from workbench.viz.axes import clock, time_ticks
from workbench.viz.figures import fit_range, margin, mark, plain_figure, share_parts

__all__ = [
    "CHART_HEIGHT",
    "HISTORY",
    "METRIC_COLUMNS",
    "PAIR_TABLE_COLUMNS",
    "REJECT_REASONS",
    "batch_spikes",
    "empty_metrics",
    "live_figures",
    "pair_table",
    "reject_counts",
    "show_rejects",
    "stream_metrics",
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
charts' source holds these."""
REJECT_REASONS = ("malformed", "unknown stream", "unknown template", "late", "dropped by watermark")
"""Why an event did not join: the rejects sink's reasons, and rows the join state dropped."""
PAIR_TABLE_COLUMNS = ("A event", "B event", "A detected", "B detected", "d", "delta", "P")
"""The latest-pairs table as shown: ids, detection times (h:mm:ss.s into the replay), the
window and threshold the pair was decided under, and its probability P(|Xa - Xb| <= d)."""


def _unselectable(plot: object, _element: object) -> None:
    """No glyphs for selected or unselected marks (a HoloViews hook): a chart with no
    selection tool; two Bokeh models fewer a set of spikes."""
    plot.handles["glyph_renderer"].update(selection_glyph=None, nonselection_glyph=None)


_CURVE = {
    "responsive": True,
    "height": 200,
    "framewise": True,
    "default_tools": [],
    "tools": ["hover"],
    "toolbar": None,
    "hooks": [_unselectable],
}
"""A chart of a tab's Spark run (HoloViews): read by hovering, not zoomed (it re-ranges at
each frame, which undid a zoom), so without the toolbar's tools."""


def _from_zero(*columns: pd.Series) -> tuple[float, float]:
    """A count axis from 0 to a little above the largest value (0..1 while all are 0)."""
    top = max((float(c.max()) for c in columns if len(c)), default=0.0)
    return 0.0, max(1.0, 1.1 * top)


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
        xlabel="time since Spark was chosen",
        xformatter=time_ticks("s"),
        **axis,
    )


def empty_metrics() -> pd.DataFrame:
    """Metrics of no micro-batch (:data:`METRIC_COLUMNS`, as floats): what the charts start
    from."""
    return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in METRIC_COLUMNS})


def reject_counts(rejects: pd.Series, dropped: int) -> pd.DataFrame:
    """Events that did not join by reason (every one of :data:`REJECT_REASONS`), as the
    rejects chart of :func:`live_figures` reads them: the rejects sink's counts by reason and
    the rows the join state ``dropped`` behind the watermark.

    >>> reject_counts(pd.Series({"late": 3}), dropped=2)["records"].tolist()
    [0, 0, 0, 3, 2]
    """
    counts = rejects.reindex(REJECT_REASONS[:-1], fill_value=0).to_dict()
    counts[REJECT_REASONS[-1]] = dropped
    return pd.DataFrame({"reason": list(counts), "records": [int(v) for v in counts.values()]})


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


HISTORY = 900
"""Micro-batches kept in the live charts (older ones roll off)."""
CHART_HEIGHT = 220
"""Height of each live chart (px); their widths stretch."""
_METRIC_CHARTS = (
    ("events and results per second", "per second", False),
    ("batch duration", "duration", True),
    ("join state rows", "time ranges kept", False),
)
"""Each metrics chart: its title, y label and whether its values are durations (ms)."""
_LINES = (
    (0, "input_rows_per_s", "#1f77b4", "events read"),
    (0, "processed_rows_per_s", "#ff7f0e", "events processed"),
    (0, "results_per_s", "#8c564b", "pairs joined"),
    (1, "batch_ms", "#2ca02c", ""),
    (2, "state_rows", "#9467bd", ""),
)
"""Each line of the metrics charts: its chart, column, colour and legend entry (none: the
chart's only line).  The rates share a chart: events in, events through and pairs out, each
per second."""


def _metric_data(metrics: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns the charts read (:data:`METRIC_COLUMNS`), as float arrays."""
    return {c: metrics[c].to_numpy(dtype=np.float64) for c in METRIC_COLUMNS}


def _reject_data(rejects: pd.DataFrame) -> dict[str, object]:
    """The reject bars' columns: one bar per reason at 0, 1, ... (:func:`reject_counts`)."""
    return {
        "x": np.arange(len(rejects), dtype=np.float64),
        "reason": rejects["reason"].tolist(),
        "records": rejects["records"].to_numpy(dtype=np.float64),
    }


def _tooltip(column: str, label: str, duration: bool) -> tuple[str, str]:
    return label, f"@{column}{{0,0}}" + (" ms" if duration else "")


def live_figures(metrics: pd.DataFrame, rejects: pd.DataFrame) -> list[Plot]:
    """The live join's charts: events read, events processed and pairs joined per second,
    batch duration and state rows over time since Start, drawn from one source of
    ``metrics`` (:func:`empty_metrics` columns, named "metrics"), and the bars of the
    ``rejects`` (:func:`reject_counts`, a source named "rejects").  They are read by
    hovering, not zoomed (they follow every micro-batch): no toolbar.  Their y axes start at 0
    and end a little above the data (0..1 while all is 0), the metrics charts share one time
    axis; a new micro-batch streams its rows and moves the axes (:func:`stream_metrics`,
    :func:`show_rejects`);
    they share their stateless parts and draw horizontal grid lines only (a chart with its
    line: about 15 Bokeh models).

    >>> figs = live_figures(empty_metrics(), reject_counts(pd.Series(dtype="int64"), 0))
    >>> [f.title.text for f in figs][1:], figs[0].x_range is figs[2].x_range
    (['batch duration', 'join state rows', 'late and rejected events'], True)
    """
    source = ColumnDataSource(_metric_data(metrics), name="metrics")
    figs = []
    for title, y_label, duration in _METRIC_CHARTS:
        fig = plain_figure(title, "time since Start", y_label, CHART_HEIGHT, "s", tools="")
        if figs:
            fig.x_range = figs[0].x_range
        if duration:
            fig.yaxis.formatter = time_ticks("ms")
        figs.append(fig)
    lines: list = []
    for chart, column, color, legend in _LINES:
        style = {"line_color": color, "line_width": 2}
        if legend:
            style["legend_label"] = legend
        like = lines[0] if lines else None
        lines.append(
            mark(figs[chart], Line, source, {"x": "elapsed_s", "y": column}, style, like=like)
        )
    figs[0].legend.location = "top_left"
    for chart, (_, y_label, duration) in enumerate(_METRIC_CHARTS):
        shown = [(c, legend or y_label) for k, c, _, legend in _LINES if k == chart]
        figs[chart].add_tools(
            HoverTool(
                renderers=[next(r for r in lines if r in figs[chart].renderers)],
                tooltips=[
                    ("time since Start", "@elapsed_s{0.0} s"),
                    *(_tooltip(c, label, duration) for c, label in shown),
                ],
                mode="vline",
            )
        )
    figs.append(_reject_figure(rejects))
    _fit_metrics(figs, metrics)
    for fig in figs:  # a line's values read against the y axis; times are the x axis' ticks
        fig.center = [g for g in fig.center if not (isinstance(g, Grid) and g.dimension == 0)]
    share_parts(*figs)
    return figs


def _reject_figure(rejects: pd.DataFrame) -> Plot:
    """The bars of events that did not join, by reason (:func:`live_figures`)."""
    fig = plain_figure("late and rejected events", "", "events", CHART_HEIGHT, "linear", "")
    fit_range(fig.y_range, *_from_zero(rejects["records"]))
    fit_range(fig.x_range, -0.6, len(REJECT_REASONS) - 0.4)
    axis = fig.xaxis[0]
    axis.update(
        ticker=FixedTicker(ticks=list(range(len(REJECT_REASONS)))),
        major_label_overrides={float(k): r for k, r in enumerate(REJECT_REASONS)},
        major_label_orientation=math.radians(20),
    )
    source = ColumnDataSource(_reject_data(rejects), name="rejects")
    style = {"fill_color": "#d62728", "line_color": "#d62728"}
    bars = mark(fig, VBar, source, {"x": "x", "top": "records", "width": 0.8}, style)
    fig.add_tools(
        HoverTool(renderers=[bars], tooltips=[("reason", "@reason"), ("events", "@records{0,0}")])
    )
    return fig


def _source(figs: list[Plot], name: str) -> ColumnDataSource:
    """The source named ``name`` of the :func:`live_figures` ``figs``."""
    return next(r.data_source for f in figs for r in f.renderers if r.data_source.name == name)


def stream_metrics(figs: list[Plot], metrics: pd.DataFrame, appended: int) -> None:
    """The :func:`live_figures` ``figs`` show ``metrics``: its last ``appended`` rows streamed
    onto what they show (older rows roll off past :data:`HISTORY`), or, with ``appended`` 0,
    ``metrics`` in place of it (a new run, or nothing yet)."""
    source = _source(figs, "metrics")
    if 0 < appended <= len(metrics):
        source.stream(_metric_data(metrics.iloc[-appended:]), rollover=HISTORY)
    else:
        source.data = _metric_data(metrics)
    _fit_metrics(figs, metrics)


def _fit_metrics(figs: list[Plot], metrics: pd.DataFrame) -> None:
    """The metrics charts' axes around ``metrics``: the shared time axis over its batches,
    each count or duration from 0 to a little above its largest value."""
    shown = metrics["elapsed_s"]
    fit_range(figs[0].x_range, *(margin(shown.min(), shown.max()) if len(shown) else (0.0, 1.0)))
    for chart in range(len(_METRIC_CHARTS)):
        columns = [metrics[c] for k, c, _, _ in _LINES if k == chart]
        fit_range(figs[chart].y_range, *_from_zero(*columns))


def show_rejects(figs: list[Plot], rejects: pd.DataFrame) -> None:
    """The :func:`live_figures` ``figs`` show these ``rejects`` (:func:`reject_counts`)."""
    _source(figs, "rejects").data = _reject_data(rejects)
    fit_range(figs[-1].y_range, *_from_zero(rejects["records"]))
