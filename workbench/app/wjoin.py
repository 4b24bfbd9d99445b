"""The Multi-way join tab: motes of the (simulated) deployment as streams, a constraint graph
over them, BEW-join and FEW-join run side by side and compared (W-join paper, Sections 3-5).

The page only lays out and displays: the streams, graph and runs are
:class:`~workbench.app.wjoin_model.WJoinModel`'s, the run on Spark
:class:`~workbench.app.wjoin_spark.WJoinSpark`'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.app.newest import on_page
from workbench.app.panes import ReadTable, intro, plain_help
from workbench.app.redraw import redrawn
from workbench.app.spark_section import SparkSection
from workbench.app.wjoin_model import SETTINGS, WJoinModel
from workbench.app.wjoin_spark import WJoinSpark
from workbench.viz.figures import View, share_parts, view_figure
from workbench.viz.wjoin import (
    ALGORITHM_COLORS,
    constraint_view,
    graph_svg,
    measure_view,
    results_view,
)

__all__ = ["WJoinExplorer", "response_ms"]

PLOT_HEIGHT = 300
"""Height of each result plot (px); their widths stretch."""
INTRO = (
    "Each chosen mote is one stream. A result takes one reading from every stream such that "
    "each pair joined by an edge of the graph lies within its window and all temperatures fall "
    "in the same band. Press **Run** to join the same readings with **BEW** and **FEW** and "
    "compare throughput, response time and when results appear; then try another graph, window "
    "or more motes."
)
ALGORITHMS_HELP = (
    "**in-process** / **Spark**: join in this process only, or also stream the tuples through "
    "the W-join on Spark. **hash** / **nested**: buffers searched by hash buckets or nested "
    "loops; the **BEW** / **FEW** buttons choose which evaluation strategies run. "
    "**BEW** answers each new tuple at once; **FEW** waits until a window can no longer grow, "
    "then emits its results. Beyond a uniform clique, **GCA** finds candidates with the largest "
    "window for every stream, **LCA** with each stream's largest own window, and both then "
    "check every edge; **modified** BEW keeps a stream's tuples by the windows of its own "
    "edges (W-join Section 5.1). **fast** / **paper**: our search and expiry, or the paper's "
    "(Sections 3.1-3.2): the same results; the paper's BEW keeps and revisits tuples outside "
    "the window (**visited outside**, **peak buffered**) when a stream is slower; the paper's "
    "FEW holds tuples until every stream has sent one, so its answers wait less as the "
    "streams get faster."
)


def response_ms(ms: object) -> str:
    """A response time as the measures table shows it: thousands grouped, at most four
    decimals (the measures carry three significant digits).

    >>> response_ms(1234.0), response_ms(0.0123), response_ms(12.5)
    ('1,234', '0.0123', '12.5')
    """
    return f"{float(ms):,.4f}".rstrip("0").rstrip(".")


class WJoinExplorer(pn.viewable.Viewer):
    """Choose motes as streams and a constraint graph; run BEW and FEW; compare them."""

    model = param.ClassSelector(class_=WJoinModel, doc="The streams, graph and runs.")
    spark = param.ClassSelector(class_=WJoinSpark, doc="The run on Spark.")

    def __init__(self, model: WJoinModel | None = None, spark: WJoinSpark | None = None) -> None:
        model = WJoinModel() if model is None else model
        super().__init__(model=model, spark=WJoinSpark(model=model) if spark is None else spark)
        self.spark_pane = pn.pane.Markdown(
            self._spark_readout, css_classes=["wjoin-spark"], sizing_mode="stretch_width"
        )
        self.status_pane = pn.pane.Alert(css_classes=["wjoin-status"], sizing_mode="stretch_width")
        self.results_table = ReadTable(
            pd.DataFrame(),
            formats={
                "tuples/s": "{:,.0f}".format,
                "mean response (ms)": response_ms,
                "p95 response (ms)": response_ms,
                "visited outside": "{:,}".format,
                "peak buffered": "{:,}".format,
            },
        )
        table = self.results_table.__panel__()  # its spinner, with no layout around it
        self.model.param.watch(lambda e: setattr(table, "loading", e.new), "running")
        self._show_status()

    async def run_async(self, *_: object) -> None:
        """The Run button: the model's run in a worker thread; on Spark, also the Spark run
        (:meth:`~workbench.app.wjoin_spark.WJoinSpark.run`)."""
        if self.spark.run_on == "Spark":  # its changes under the document's lock (on_page)
            on_page(self.spark.run)
            return
        await self.model.run_async()

    def close(self, wait: bool = False) -> None:
        """Stop the Spark run (``wait`` for it): the browser session ended."""
        self.spark.close(wait)

    @param.depends("spark.shown", "spark.state", "spark.message", "spark.run_on")
    def _spark_readout(self) -> str:
        return self.spark.readout()

    @param.depends(
        "model.results",
        "model.message",
        "model.running",
        *(f"model.{name}" for name in SETTINGS),
        watch=True,
    )
    def _show_status(self) -> None:
        """The run's outcome in the status box and the measures table; results whose settings
        have moved since are said to be stale."""
        m = self.model
        if m.running:
            text, kind = f"Running {' and '.join(m.algorithms)}...", "info"
        elif m.message.startswith("Cannot run"):
            text, kind = m.message, "danger"
        elif changed := m.changed_since_run():
            text = (
                f"{m.message} These results are stale: {', '.join(changed)} changed since "
                "this run. Press **Run** to join at the current settings."
            )
            kind = "warning"
        elif m.message:
            text, kind = m.message, "success"
        else:
            text, kind = "Press **Run**: the chosen algorithms join the same tuples.", "info"
        self.status_pane.param.update(object=text, alert_type=kind)
        self.results_table.value = m.measures()

    def _bars_frame(self) -> pd.DataFrame:
        """The measures, or before a run the chosen algorithms with no values (NaN)."""
        if self.model.results:
            return self.model.measures()
        names = self.model.algorithms or list(ALGORITHM_COLORS)
        return pd.DataFrame({"algorithm": names, "tuples/s": np.nan, "mean response (ms)": np.nan})

    @param.depends("model.motes", "model.graph", "model.window")
    def graph_view(self) -> View:
        """The constraint graph over the chosen motes (no marks unless 2 to 6 are chosen)."""
        motes = self.model.motes
        if not 2 <= len(motes) <= 6:
            return constraint_view(None, [], title="Choose 2 to 6 motes")
        return constraint_view(self.model.constraints(), [f"mote {m}" for m in motes])

    @param.depends("graph_view")
    def graph_drawing(self) -> str:
        """The constraint graph as the page draws it (SVG: a diagram no one zooms)."""
        return graph_svg(self.graph_view())

    @param.depends("model.results")
    def throughput_view(self) -> View:
        """Tuples processed per second of processing time, per algorithm."""
        return measure_view(self._bars_frame(), "tuples/s", "throughput (tuples/s)")

    @param.depends("model.results")
    def response_view(self) -> View:
        """Mean response time per algorithm: from a result's last tuple arriving to its output."""
        frame = self._bars_frame()
        return measure_view(frame, "mean response (ms)", "mean response time (ms)", "ms")

    @param.depends("model.results", "spark.shown", "spark.run_on")
    def results_view(self) -> View:
        """Cumulative results against stream time, BEW against FEW (and Spark's committed
        results at the arrival of their last tuple, on Spark)."""
        curves = {
            r.algorithm: (np.sort(r.emitted_at), np.arange(1, r.results + 1))
            for r in self.model.results
        }
        spark = None
        if self.spark.run_on == "Spark":
            snap = self.spark.snapshot
            spark = snap.emitted_at / 1000.0 if snap is not None else np.zeros(0)
        return results_view(curves, spark)

    def _plots(self) -> list[pn.pane.Bokeh]:
        """The result plots, side by side under the graph, each redrawn as what it shows
        changes: the two measures' bars and the results over time, sharing their stateless
        parts (:func:`~workbench.viz.figures.share_parts`); the results can be zoomed."""
        bars = [
            (self.throughput_view, "throughput (tuples/s)"),
            (self.response_view, "mean response time (ms)"),
        ]
        figures = [  # bars are read, not zoomed (their tooltips still show)
            redrawn(
                self,
                view,
                view_figure(view(), "algorithm", label, PLOT_HEIGHT, "linear", tools=""),
            )
            for view, label in bars
        ]
        over_time = view_figure(
            self.results_view(), "stream time", "results", PLOT_HEIGHT, "s", "pan,wheel_zoom,reset"
        )
        over_time.legend.location = "top_left"
        figures.append(redrawn(self, self.results_view, over_time))
        share_parts(*figures)
        return [
            pn.pane.Bokeh(
                f, sizing_mode="stretch_width", height=PLOT_HEIGHT, loading=self.model.param.running
            )
            for f in figures
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        w, m = pn.widgets, self.model.param
        busy = pn.bind(
            lambda running, _state: running or self.spark.busy,
            m.running,
            self.spark.param.state,
        )
        button = w.Button(label="Run", color="primary", disabled=busy)
        button.on_click(self.run_async)
        on_spark = self.spark.param.run_on.rx() == "Spark"
        choice = plain_help(w.Select)
        below = {"description": None}  # a button group's help is a Tooltip model: help below
        plots = self._plots()
        controls = pn.Column(
            w.RadioButtonGroup.from_param(self.spark.param.run_on, **below),
            plain_help(w.MultiChoice).from_param(m.motes),
            choice.from_param(m.graph),
            w.FloatSlider.from_param(m.window),
            w.FloatSlider.from_param(m.quantum),
            w.FloatSlider.from_param(m.hours),
            w.RadioButtonGroup.from_param(m.implementation, **below),
            w.CheckButtonGroup.from_param(m.algorithms, **below),
            w.RadioButtonGroup.from_param(m.mechanism, **below),
            pn.Row(
                choice.from_param(m.bew_strategy, width=140),
                choice.from_param(m.few_strategy, width=140),
                visible=self.model.param.graph.rx() != "uniform clique",
            ),
            pn.pane.Markdown(ALGORITHMS_HELP, css_classes=["wjoin-help"]),
            plain_help(w.FloatInput).from_param(self.spark.param.replay_seconds, visible=on_spark),
            button,
            width=300,
        )
        return pn.Column(
            intro(INTRO, "Multi-way window joins"),
            pn.Row(
                controls,
                pn.Column(
                    pn.Row(
                        pn.pane.HTML(self.graph_drawing, width=320, height=300),
                        pn.Column(
                            self.status_pane,
                            self.results_table,
                            sizing_mode="stretch_width",
                        ),
                        sizing_mode="stretch_width",
                    ),
                    pn.Row(*plots, sizing_mode="stretch_width"),
                    SparkSection(control=self.spark, status=self.spark_pane),
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
