"""The live Spark join tab: the streaming PTJoin over a replayed data set, started, paused,
steered and stopped from the page (PTJoin Section 3).

The page only lays out and displays: what the join runs with is
:class:`~workbench.app.live_settings.LiveJoinSettings`, the run itself
:class:`~workbench.app.live_run.LiveRun` (the shared
:class:`~workbench.app.spark_control.SparkControl`).  Nothing here imports pyspark before
Start: the page loads without Java and says why Spark could not start.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import panel as pn
import param

from workbench.app.live_run import LiveRun
from workbench.app.live_settings import LiveJoinSettings
from workbench.app.panes import ReadTable, in_place, intro
from workbench.viz.live import (
    CHART_HEIGHT,
    PAIR_TABLE_COLUMNS,
    live_figures,
    show_rejects,
    stream_metrics,
)

__all__ = ["LiveJoinExplorer"]

INTRO = (
    "Replay a data set as two event streams into the streaming PTJoin on Spark and watch it "
    "join live: the charts follow each micro-batch, the table shows the latest pairs. Press "
    "**Start** (Spark starts with the server; until it is up, Start waits), then move *confidence "
    "delta* or *window d* while it runs; choose *CSV file* under *data* to replay your own "
    "readings (a time column and a sensor column)."
)
CHART_KEY = (
    "**events read / processed**: events Spark read and worked through per second · **pairs "
    "joined**: results per second · **batch duration**: time one micro-batch took · **join "
    "state rows**: time ranges whose events Spark keeps for later partners, until the "
    "watermark passes them · **late**: arrived more than D after detection · **dropped by "
    "watermark**: arrived after the watermark had passed them · **malformed / unknown**: "
    "records the join could not read."
)
PAIRS_KEY = (
    "**latest joined pairs**: the two events, when each was detected (h:mm:ss into the "
    "replay), the window d and confidence delta the pair was decided under, and P, the exact "
    "probability that the two events occurred at most d apart."
)


class LiveJoinExplorer(pn.viewable.Viewer):
    """Start, pause, steer and stop the streaming PTJoin on Spark; watch it live."""

    model = param.ClassSelector(class_=LiveJoinSettings, doc="What the live join runs with.")
    spark = param.ClassSelector(class_=LiveRun, doc="The live join's run on Spark.")

    def __init__(self, model: LiveJoinSettings | None = None, spark: LiveRun | None = None) -> None:
        model = LiveJoinSettings() if model is None else model
        super().__init__(model=model, spark=LiveRun(model=model) if spark is None else spark)
        self.table = ReadTable(
            pd.DataFrame(columns=list(PAIR_TABLE_COLUMNS)),
            height=300,
            tooltips={
                "A detected": "detection time of stream A's event, h:mm:ss into the replay",
                "B detected": "detection time of stream B's event, h:mm:ss into the replay",
                "d": "the window the pair was decided under",
                "delta": "the confidence the pair was decided under",
                "P": "exact probability that the two events occurred at most d apart",
            },
        )

    def close(self, wait: bool = False) -> None:
        """Stop the run (``wait`` for it): the browser session ended."""
        self.spark.close(wait)

    @param.depends("spark.latest", watch=True)
    def _show_pairs(self) -> None:
        self.table.value = self.spark.latest

    def status(self) -> pn.pane.Alert:
        """The last action's outcome, or the failure: one pane whose text and colour follow the
        run (updated in place: a pane made anew per message would be replaced in the page
        every poll while a start waits)."""
        run = self.spark

        def text(message: str, _state: str) -> str:
            return message or "Stopped. Start replays the data into the streaming PTJoin."

        def kind(state: str) -> str:
            if state == "failed":
                return "danger"
            return {"stopped": "light", "finished": "success"}.get(run.phase(), "info")

        return pn.pane.Alert(
            pn.bind(text, run.param.message, run.param.state),
            alert_type=pn.bind(kind, run.param.state),
            css_classes=["live-status"],
        )

    @param.depends(
        "spark.state",
        "spark.run",
        "spark.pairs",
        "spark.replayed",
        "spark.events",
        "spark.batches",
        "spark.spark_ui",
        "model.paused",
    )
    def readout(self) -> str:
        """State, run, results and replay progress; the Spark UI's link once Spark runs
        (Markdown: one pane shows it, its text replaced as the run goes)."""
        run = self.spark
        ui = f" · [Spark UI]({run.spark_ui}) (this machine only)" if run.spark_ui else ""
        return (
            f"**{run.phase()}** · run {run.run} · **{run.pairs:,} pairs joined** · "
            f"{run.replayed:,} of {run.events:,} events replayed · "
            f"{run.batches:,} micro-batches committed{ui}"
        )

    def charts(self) -> pn.GridBox:
        """The live charts (:func:`workbench.viz.live.live_figures`), two to a row; each
        micro-batch streams its metrics into them and replaces the rejects' bars, in place."""
        run = self.spark
        figs = live_figures(run.metrics, run.rejects)
        run.param.watch(
            lambda *_: in_place(partial(stream_metrics, figs, run.metrics, run.appended)),
            "metrics",
        )
        run.param.watch(lambda *_: in_place(partial(show_rejects, figs, run.rejects)), "rejects")
        return pn.GridBox(
            *(pn.pane.Bokeh(f, sizing_mode="stretch_width", height=CHART_HEIGHT) for f in figs),
            ncols=2,
            sizing_mode="stretch_width",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w, run = pn.widgets, self.spark
        busy = pn.bind(lambda _state: run.busy, run.param.state)
        not_live = pn.bind(lambda state: state != "running", run.param.state)
        button = {"width": 90, "margin": (5, 5)}  # three in the 300 px column
        start = w.Button(label="Start", color="primary", disabled=busy, **button)
        start.on_click(run.start)
        stop = w.Button(label="Stop", color="warning", disabled=not_live, **button)
        stop.on_click(run.stop)
        pause = w.Toggle.from_param(self.model.param.paused, disabled=not_live, **button)
        wide = {"sizing_mode": "stretch_width"}
        recover = w.Button(
            label="Restart on a new checkpoint",
            color="danger",
            visible=run.param.damaged,
            sizing_mode="stretch_width",
        )
        recover.on_click(run.start)
        controls = pn.Column(
            pn.Row(start, pause, stop, **wide),
            *([recover] if run.damaged else []),
            *self.model.widgets(),
            width=300,
        )

        def offer(event: param.parameterized.Event) -> None:
            """The restart's button, put in the page when damage first stops a run."""
            if event.new and recover not in controls.objects:
                controls.insert(1, recover)

        run.param.watch(offer, "damaged")
        view = pn.Column(
            self.status(),
            pn.pane.Markdown(self.readout, css_classes=["live-readout"], **wide),
            self.charts(),
            pn.pane.Markdown(f"{CHART_KEY}\n\n{PAIRS_KEY}", css_classes=["live-chart-key"], **wide),
            self.table,
            **wide,
        )
        return pn.Column(intro(INTRO, "Live join"), pn.Row(controls, view, **wide), **wide)
