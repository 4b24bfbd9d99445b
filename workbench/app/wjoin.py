"""The multi-way join explorer: motes of the (simulated) deployment as streams, a constraint
graph over them, BEW-join and FEW-join run side by side (W-join paper, Sections 3-5).

A run happens in a worker thread (``asyncio.to_thread``) so the server keeps serving.
**Run on Spark** also replays the same tuples, in arrival order, into the streaming W-join on
Spark (:class:`workbench.spark.wjoin_job.WJoinJob`): its results count and results over time
come from the query's sink, its micro-batches from the query's progress, through a periodic
callback (:class:`~workbench.app.spark_runs.SparkRuns`); Spark work runs in the job's worker
thread.  Once caught up, Spark's results equal the in-process BEW-join's on the same tuples,
as the page reports.  pyspark loads only when Spark is chosen.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.app.panes import ReadTable, following, following_pane, intro
from workbench.app.spark_runs import STARTING, SparkRuns, failure_text
from workbench.data.streams import default_readings
from workbench.experiments import Clock, profile_wjoin
from workbench.operators import BEWJoin, FEWJoin, WindowConstraints
from workbench.viz.figures import View, view_figure
from workbench.viz.wjoin import (
    ALGORITHM_COLORS,
    constraint_view,
    graph_figure,
    measure_view,
    results_view,
    significant,
)

if TYPE_CHECKING:
    from workbench.spark.wjoin_job import WJoinJob, WJoinSnapshot

__all__ = ["GRAPHS", "RunResult", "WJoinExplorer", "max_delays", "response_ms", "run_join"]

GRAPHS = ("uniform clique", "path", "star")
"""Constraint graphs offered: every pair, a chain in the chosen order, all to the first."""
PLOT_HEIGHT = 300
"""Height of each result plot (px); their widths stretch."""
MEASURES = {
    "algorithm": str,
    "results": int,
    "tuples/s": float,
    "mean response (ms)": float,
    "p95 response (ms)": float,
    "late": int,
}
"""Columns of the measures table and their types (also before a run, when it is empty)."""


def response_ms(ms: object) -> str:
    """A response time as the measures table shows it: thousands grouped, at most four
    decimals (the measures carry three significant digits).

    >>> response_ms(1234.0), response_ms(0.0123), response_ms(12.5)
    ('1,234', '0.0123', '12.5')
    """
    return f"{float(ms):,.4f}".rstrip("0").rstrip(".")


SPARK_STATES = ("idle", "starting", "running", "caught up", "failed")
INTRO = (
    "Each chosen mote is one stream. A result takes one reading from every stream such that "
    "each pair joined by an edge of the graph lies within its window and all temperatures fall "
    "in the same band. Press **Run** to join the same readings with **BEW** and **FEW** and "
    "compare throughput, response time and when results appear; then try another graph, window "
    "or more motes."
)
ALGORITHMS_HELP = (
    "**hash** / **nested**: buffers searched by hash buckets or nested loops. "
    "**BEW** answers each new tuple at once; **FEW** waits until a window can no longer grow, "
    "then emits its results."
)


@dataclass(frozen=True)
class RunResult:
    """What one join run did: tuples, results, throughput, response times, result times."""

    algorithm: str
    tuples: int
    results: int
    late: int
    seconds: float
    response_ms: np.ndarray
    emitted_at: np.ndarray

    @property
    def throughput(self) -> float:
        """Tuples processed per second of processing time."""
        return self.tuples / self.seconds if self.seconds > 0 else float("inf")


def max_delays(rows: pd.DataFrame) -> list[float]:
    """Each stream's largest delay (``arrival - ts``) in ``rows``, a hair above (no tuple is
    late), streams in order.

    >>> rows = pd.DataFrame({"stream": [1, 0, 1], "ts": [0.0, 1.0, 2.0],
    ...                      "arrival": [3.0, 1.5, 2.5]})
    >>> [round(d, 3) for d in max_delays(rows)]
    [0.5, 3.0]
    """
    return [
        float((g["arrival"] - g["ts"]).max()) + 1e-6 for _, g in rows.groupby("stream", sort=True)
    ]


def run_join(
    op: BEWJoin | FEWJoin, rows: pd.DataFrame, algorithm: str, clock: Clock = time.perf_counter
) -> RunResult:
    """Push ``rows`` (stream, id, value, ts, arrival; arrival order; times in seconds) through
    ``op``, timed by the experiments' harness (:func:`~workbench.experiments.profile_wjoin`).

    Response times follow its one first-come-first-served model (ms): a result's emitting
    call finishes after every earlier call, and its response time runs from the arrival of
    its last tuple to that finish.
    """
    p = profile_wjoin(op, rows, unit_ms=1000.0, clock=clock)
    return RunResult(
        algorithm,
        len(rows),
        p.results,
        p.counters.late,
        p.seconds,
        p.response_ms(),
        p.emitted_at_ms() / 1000.0,
    )


class WJoinExplorer(SparkRuns, pn.viewable.Viewer):
    """Choose motes as streams and a constraint graph; run BEW and FEW; compare them."""

    motes = param.ListSelector(
        default=[1, 2, 3], objects=list(range(1, 55)), doc="Motes joined (2 to 6 streams)."
    )
    graph = param.Selector(
        objects=list(GRAPHS), default=GRAPHS[0], doc="Which pairs carry a window."
    )
    window = param.Number(
        60.0, bounds=(1.0, 3600.0), step=1.0, label="window (s)", doc="Window of every edge."
    )
    quantum = param.Number(
        0.5,
        bounds=(0.01, 10.0),
        step=0.01,
        label="temperature band (C)",
        doc="Tuples join when their temperatures fall in the same band (equality predicate).",
    )
    hours = param.Number(
        6.0, bounds=(0.5, 24.0), step=0.5, label="hours of data", doc="Stream time replayed."
    )
    implementation = param.Selector(
        objects=["hash", "nested"], default="hash", doc="Hash buckets or nested-loop buffers."
    )
    algorithms = param.ListSelector(
        default=["BEW", "FEW"], objects=["BEW", "FEW"], doc="Which evaluation strategies run."
    )
    running = param.Boolean(False, doc="Whether a run is in progress.")
    results = param.List(default=[], item_type=RunResult, doc="Results of the last run.")
    message = param.String("", doc="Outcome of the last run, or why it could not run.")
    readings = param.DataFrame(doc="Readings (time, mote, temperature, arrival).")
    run_on = param.Selector(
        doc="Join in this process only, or also stream the tuples through the W-join on Spark."
    )
    replay_seconds = param.Number(
        20.0,
        bounds=(1.0, 600.0),
        step=1.0,
        label="Spark replay (s)",
        doc="Wall time the replay into Spark takes (the tuples arrive in their order, paced).",
    )
    spark_state = param.Selector(
        objects=list(SPARK_STATES), default="idle", doc="Where the Spark run is."
    )
    spark_unit = "tuples"

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = default_readings()
        self.spark_pane = pn.pane.Markdown(css_classes=["wjoin-spark"], sizing_mode="stretch_width")
        self.status_pane = pn.pane.Alert(sizing_mode="stretch_width")
        self.results_table = ReadTable(
            pd.DataFrame(),
            formats={
                "tuples/s": "{:,.0f}".format,
                "mean response (ms)": response_ms,
                "p95 response (ms)": response_ms,
            },
        )
        super().__init__(**params)

    def constraints(self) -> WindowConstraints:
        """The window constraints of the chosen graph over the chosen motes."""
        m = len(self.motes)
        if self.graph == "uniform clique":
            return WindowConstraints.uniform(m, self.window)
        if self.graph == "path":
            return WindowConstraints.path([self.window] * (m - 1))
        return WindowConstraints.graph(m, {(0, j): self.window for j in range(1, m)})

    def rows(self) -> pd.DataFrame:
        """The motes' readings as tuples (stream, id, band, ts, arrival) in arrival order."""
        r = self.readings
        start = r["time"].min()
        r = r[(r["time"] < start + pd.Timedelta(hours=self.hours)) & r["mote"].isin(self.motes)]
        r = r.dropna(subset=["temperature"]).sort_values("arrival", kind="stable")
        stream = r["mote"].map({m: k for k, m in enumerate(self.motes)})
        return pd.DataFrame(
            {
                "stream": stream.to_numpy(),
                "id": np.arange(len(r)),
                "value": np.floor(r["temperature"].to_numpy() / self.quantum).astype(int),
                "ts": (r["time"] - start).dt.total_seconds().to_numpy(),
                "arrival": (r["arrival"] - start).dt.total_seconds().to_numpy(),
            }
        )

    def operators(self, rows: pd.DataFrame) -> dict[str, BEWJoin | FEWJoin]:
        """One operator per chosen algorithm; delays bounded by the data's largest."""
        wc = self.constraints()
        delay = max_delays(rows)
        if len(delay) != wc.m:
            raise ValueError(f"every chosen mote needs readings; got {len(delay)} of {wc.m}")
        strategy = "uniform" if self.graph == "uniform clique" else "gca"
        kw = {"constraints": wc, "max_delay": delay, "implementation": self.implementation}
        classes = {"BEW": BEWJoin, "FEW": FEWJoin}
        return {
            name: classes[name](
                strategy="modified" if name == "BEW" and strategy == "gca" else strategy, **kw
            )
            for name in self.algorithms
        }

    def run(self) -> list[RunResult]:
        """Run the chosen algorithms on the same rows (blocking); store and return results."""
        results, message = self._compute()
        self.param.update(results=results, message=message)
        return results

    def _compute(self) -> tuple[list[RunResult], str]:
        """The chosen algorithms' runs and the outcome in words; sets no parameter, so it can
        run in a worker thread while the page's state changes only on the server's loop."""
        try:
            if not 2 <= len(self.motes) <= 6:
                raise ValueError(f"choose 2 to 6 motes, got {len(self.motes)}")
            if not self.algorithms:
                raise ValueError("choose BEW, FEW or both")
            rows = self.rows()
            out = [run_join(op, rows, name) for name, op in self.operators(rows).items()]
        except ValueError as exc:
            return [], f"Cannot run: {exc}"
        found = ", ".join(f"{r.results:,} results ({r.algorithm})" for r in out)
        return out, f"{len(rows):,} tuples from {len(self.motes)} motes joined: {found}."

    async def run_async(self, *_: object) -> None:
        """Run in a worker thread, so the server keeps serving meanwhile; the outcome is set
        back on the server's loop.  On Spark: :meth:`run_spark`."""
        if self.run_on == "Spark":
            self.run_spark()
            return
        if self.running:
            return
        self.running = True
        try:
            results, message = await asyncio.to_thread(self._compute)
            self.param.update(results=results, message=message)
        finally:
            self.running = False

    def measures(self) -> pd.DataFrame:
        """Per algorithm: results, throughput, mean and 95th-percentile response time (three
        significant digits: they span 0.04 ms to seconds), late tuples."""
        rows = [
            (
                r.algorithm,
                r.results,
                significant(r.throughput),
                significant(float(r.response_ms.mean())) if r.results else 0.0,
                significant(float(np.percentile(r.response_ms, 95))) if r.results else 0.0,
                r.late,
            )
            for r in self.results
        ]
        return pd.DataFrame(rows, columns=list(MEASURES)).astype(MEASURES)

    def _bars_frame(self) -> pd.DataFrame:
        """The measures, or before a run the chosen algorithms with no values (NaN)."""
        if self.results:
            return self.measures()
        names = self.algorithms or list(ALGORITHM_COLORS)
        return pd.DataFrame({"algorithm": names, "tuples/s": np.nan, "mean response (ms)": np.nan})

    def graph_view(self) -> View:
        """The constraint graph over the chosen motes (no marks unless 2 to 6 are chosen)."""
        if not 2 <= len(self.motes) <= 6:
            return constraint_view(None, [], title="Choose 2 to 6 motes")
        return constraint_view(self.constraints(), [f"mote {m}" for m in self.motes])

    def throughput_view(self) -> View:
        """Tuples processed per second of processing time, per algorithm."""
        return measure_view(self._bars_frame(), "tuples/s", "throughput (tuples/s)")

    def response_view(self) -> View:
        """Mean response time per algorithm: from a result's last tuple arriving to its output."""
        frame = self._bars_frame()
        return measure_view(frame, "mean response (ms)", "mean response time (ms)", "ms")

    def results_view(self) -> View:
        """Cumulative results against stream time, BEW against FEW (and Spark's committed
        results at the arrival of their last tuple, on Spark)."""
        curves = {
            r.algorithm: (np.sort(r.emitted_at), np.arange(1, r.results + 1)) for r in self.results
        }
        spark = None
        if self.run_on == "Spark":
            spark = self.snapshot.emitted_at / 1000.0 if self.snapshot is not None else np.zeros(0)
        return results_view(curves, spark)

    def _plots(self) -> list[pn.pane.Bokeh]:
        """The result plots, side by side under the graph, each redrawn as what it shows
        changes: the two measures' bars and the results over time."""
        bars = [
            (self.throughput_view, "throughput (tuples/s)"),
            (self.response_view, "mean response time (ms)"),
        ]
        panes = [
            following_pane(
                self,
                ["results"],
                view_figure(view(), "algorithm", label, PLOT_HEIGHT, "linear"),
                view,
                PLOT_HEIGHT,
            )
            for view, label in bars
        ]
        over_time = view_figure(self.results_view(), "stream time", "results", PLOT_HEIGHT, "s")
        over_time.legend.location = "top_left"
        shows = ["results", "spark_shown", "run_on"]
        panes.append(following_pane(self, shows, over_time, self.results_view, PLOT_HEIGHT))
        return panes

    # -- run on Spark (server thread; Spark work goes to the job's worker) ---------------------

    def spark_tuples(self) -> tuple[pd.DataFrame, WindowConstraints, list[float]]:
        """The run's tuples for Spark (stream, id, key, t, arrival; ms), its constraints and
        max delays in ms (those the in-process operators use, scaled)."""
        rows = self.rows()
        tuples = pd.DataFrame(
            {
                "stream": rows["stream"],
                "id": rows["id"],
                "key": rows["value"],
                "t": rows["ts"] * 1000.0,
                "arrival": rows["arrival"] * 1000.0,
            }
        )
        delays = [d * 1000.0 for d in max_delays(rows)]
        return tuples, WindowConstraints(self.constraints().windows * 1000.0), delays

    def run_spark(self, *_: object) -> None:
        """Run the in-process algorithms and the streaming W-join on Spark on the same tuples
        (both in the job's worker thread); a periodic callback brings the Spark run in."""
        if self.spark_state in ("starting", "running") or self.running:
            return
        try:
            if not 2 <= len(self.motes) <= 6:
                raise ValueError(f"choose 2 to 6 motes, got {len(self.motes)}")
            tuples, constraints, delays = self.spark_tuples()
            if len(delays) != constraints.m:
                raise ValueError(f"every chosen mote needs readings; got {len(delays)}")
        except ValueError as exc:
            self.param.update(spark_state="failed", spark_message=f"Cannot run on Spark: {exc}")
            return
        job = self._spark_begin(STARTING, running=True, spark_state="starting")
        job.submit(self._compute, self._computed)
        rate = len(tuples) / self.replay_seconds
        job.submit(partial(job.start, tuples, constraints, delays, rate), self._spark_started)

    def _computed(self, outcome: tuple[list[RunResult], str]) -> None:
        results, message = outcome
        self.param.update(results=results, message=message, running=False)

    def _spark_started(self, message: str) -> None:
        self.param.update(spark_state="running", spark_message=message)

    def _spark_fail(self, exc: Exception) -> None:
        """A failure of the Spark run: it is torn down; say why (first line); the page stays."""
        self.param.update(running=False, spark_state="failed", spark_message=failure_text(exc))

    def _job_class(self) -> type[WJoinJob]:
        from workbench.spark.wjoin_job import WJoinJob  # pyspark loads here

        return WJoinJob

    def _collecting(self) -> bool:
        return self.spark_state == "running"

    @param.depends("run_on", watch=True)
    def _switch(self) -> None:
        """Back in process: stop the Spark run and remove its folder."""
        if self.run_on == "in-process":
            self._spark_end(spark_state="idle", running=False)

    def _show_spark(self, snap: WJoinSnapshot) -> None:
        self.snapshot = snap
        if snap.caught_up:
            agree = "equal" if snap.agrees else "differ from"
            self.param.update(
                spark_state="caught up",
                spark_message=f"Caught up: Spark committed {len(snap.results):,} results, which "
                f"{agree} the in-process BEW-join's {len(snap.expected):,} on the same tuples.",
            )
            self._job.submit(self._job.teardown)
        self.spark_shown += 1

    def spark_readout(self) -> str:
        """The Spark run in words: results, tuples read, agreement with BEW (Markdown)."""
        if self.run_on != "Spark":
            return ""
        snap = self.snapshot
        text = f"**Spark**: {self.spark_message}" if self.spark_message else "**Spark**"
        if snap is None:
            return text
        same = "yes" if snap.agrees else ("no" if snap.caught_up else "not yet (catching up)")
        return (
            f"{text}\n\n**{len(snap.results):,} results** committed · {snap.read:,} of "
            f"{snap.total:,} tuples read by the query ({snap.replayed:,} replayed) · "
            f"{len(snap.metrics):,} micro-batches · in-process BEW on the same tuples: "
            f"{len(snap.expected):,} results · **same results as BEW: {same}**"
        )

    @param.depends("spark_shown", "spark_state", "spark_message", "run_on", watch=True)
    def _show_spark_readout(self) -> None:
        self.spark_pane.object = self.spark_readout()

    @param.depends("results", "message", "running", watch=True, on_init=True)
    def _show_status(self) -> None:
        """The run's outcome in the status box and the measures table."""
        if self.running:
            text, kind = f"Running {' and '.join(self.algorithms)}...", "info"
        elif self.message.startswith("Cannot run"):
            text, kind = self.message, "danger"
        elif self.message:
            text, kind = self.message, "success"
        else:
            text, kind = "Press **Run**: the chosen algorithms join the same tuples.", "info"
        self.status_pane.param.update(object=text, alert_type=kind)
        self.results_table.value = self.measures()

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        busy = pn.bind(
            lambda running, state: running or state in ("starting", "running"),
            self.param.running,
            self.param.spark_state,
        )
        button = w.Button(label="Run", color="primary", disabled=busy)
        button.on_click(self.run_async)
        on_spark = self.param.run_on.rx() == "Spark"
        controls = pn.Column(
            w.RadioButtonGroup.from_param(self.param.run_on),
            w.MultiChoice.from_param(self.param.motes),
            w.Select.from_param(self.param.graph),
            w.FloatSlider.from_param(self.param.window),
            w.FloatSlider.from_param(self.param.quantum),
            w.FloatSlider.from_param(self.param.hours),
            w.RadioButtonGroup.from_param(self.param.implementation),
            w.CheckButtonGroup.from_param(self.param.algorithms),
            pn.pane.Markdown(ALGORITHMS_HELP, css_classes=["wjoin-help"]),
            w.FloatInput.from_param(self.param.replay_seconds, visible=on_spark),
            button,
            width=300,
        )
        spark = self.spark_section()
        graph = following(
            self, ["motes", "graph", "window"], graph_figure(self.graph_view()), self.graph_view
        )
        return pn.Column(
            intro(INTRO, "Multi-way window joins"),
            pn.Row(
                controls,
                pn.Column(
                    pn.Row(
                        pn.pane.Bokeh(graph, width=320, height=300),
                        pn.Column(
                            self.status_pane, self.results_table, sizing_mode="stretch_width"
                        ),
                        sizing_mode="stretch_width",
                    ),
                    pn.Row(*self._plots(), sizing_mode="stretch_width"),
                    spark,
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
