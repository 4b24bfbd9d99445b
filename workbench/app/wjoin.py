"""The multi-way join explorer: motes of the (simulated) deployment as streams, a constraint
graph over them, BEW-join and FEW-join run side by side (W-join paper, Sections 3-5).

A run happens in a worker thread (``asyncio.to_thread``) so the server keeps serving.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.app.data import default_readings
from workbench.app.panes import plot
from workbench.operators import BEWJoin, FEWJoin, WindowConstraints
from workbench.viz.wjoin import constraint_graph, measure_bars, results_over_time

__all__ = ["GRAPHS", "RunResult", "WJoinExplorer", "run_join"]

GRAPHS = ("uniform clique", "path", "star")
"""Constraint graphs offered: every pair, a chain in the chosen order, all to the first."""


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


def run_join(op: BEWJoin | FEWJoin, rows: pd.DataFrame, algorithm: str) -> RunResult:
    """Push ``rows`` (stream, id, value, ts, arrival; arrival order) through ``op``, timed.

    A result's response time is the stream time from the arrival of its last tuple to the
    arrival that emitted it, plus the processing time of that push (ms; times in seconds).
    """
    arrival_of = dict(zip(rows["id"].tolist(), rows["arrival"].tolist(), strict=True))
    responses, emitted, busy = [], [], 0.0
    for s, i, v, ts, arrival in rows[["stream", "id", "value", "ts", "arrival"]].itertuples(
        index=False
    ):
        start = time.perf_counter()
        out = op.push(int(s), int(i), v, float(ts), float(arrival))
        service = time.perf_counter() - start
        busy += service
        for ids in out.ids.tolist():
            last = max(arrival_of[k] for k in ids)
            responses.append(1000.0 * (arrival - last + service))
            emitted.append(arrival)
    start = time.perf_counter()
    tail = op.flush()
    busy += time.perf_counter() - start
    end = float(rows["arrival"].iloc[-1]) if len(rows) else 0.0
    for ids in tail.ids.tolist():
        responses.append(1000.0 * (end - max(arrival_of[k] for k in ids)))
        emitted.append(end)
    return RunResult(
        algorithm,
        len(rows),
        len(responses),
        op.counters.late,
        busy,
        np.array(responses),
        np.array(emitted),
    )


class WJoinExplorer(pn.viewable.Viewer):
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

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = default_readings()
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
        delay = [
            float((g["arrival"] - g["ts"]).max()) + 1e-6
            for _, g in rows.groupby("stream", sort=True)
        ]
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
        try:
            if not 2 <= len(self.motes) <= 6:
                raise ValueError(f"choose 2 to 6 motes, got {len(self.motes)}")
            rows = self.rows()
            out = [run_join(op, rows, name) for name, op in self.operators(rows).items()]
        except ValueError as exc:
            self.param.update(message=f"Cannot run: {exc}", results=[])
            return []
        self.param.update(results=out, message=f"{len(rows):,} tuples from {len(self.motes)} motes")
        return out

    async def run_async(self, *_: object) -> None:
        """Run in a worker thread, so the server keeps serving meanwhile."""
        if self.running:
            return
        self.running = True
        try:
            await asyncio.to_thread(self.run)
        finally:
            self.running = False

    def measures(self) -> pd.DataFrame:
        """Per algorithm: results, throughput, mean and 95th-percentile response time."""
        return pd.DataFrame(
            {
                "algorithm": [r.algorithm for r in self.results],
                "results": [r.results for r in self.results],
                "tuples/s": [round(r.throughput) for r in self.results],
                "mean response (ms)": [
                    float(r.response_ms.mean()) if r.results else 0.0 for r in self.results
                ],
                "p95 response (ms)": [
                    float(np.percentile(r.response_ms, 95)) if r.results else 0.0
                    for r in self.results
                ],
                "late": [r.late for r in self.results],
            }
        )

    @param.depends("motes", "graph", "window")
    def graph_view(self) -> hv.Overlay:
        """The constraint graph over the chosen motes."""
        if not 2 <= len(self.motes) <= 6:
            return hv.Overlay([hv.Points([])]).opts(title="Choose 2 to 6 motes")
        return constraint_graph(self.constraints(), [f"mote {m}" for m in self.motes])

    @param.depends("results")
    def measures_view(self) -> hv.Layout:
        """Throughput, mean response time and results over stream time, BEW against FEW."""
        if not self.results:
            return hv.Layout([hv.Curve([]).opts(title="Press Run", height=280, width=420)])
        frame = self.measures()
        curves = {
            r.algorithm: (np.sort(r.emitted_at), np.arange(1, r.results + 1)) for r in self.results
        }
        return (
            measure_bars(frame, "tuples/s", "throughput (tuples/s)")
            + measure_bars(frame, "mean response (ms)", "mean response time (ms)")
            + results_over_time(curves)
        ).opts(hv.opts.Bars(height=280, width=260), hv.opts.Curve(height=280, width=420))

    @param.depends("results", "message", "running")
    def status(self) -> pn.viewable.Viewable:
        """The run's outcome: a table of measures, or the reason it could not run."""
        if self.running:
            return pn.pane.Alert("Running...", alert_type="info")
        if self.message.startswith("Cannot run"):
            return pn.pane.Alert(self.message, alert_type="danger")
        return pn.Column(
            pn.pane.Markdown(self.message),
            pn.widgets.Tabulator(self.measures(), show_index=False, disabled=True),
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        button = w.Button(label="Run", color="primary")
        button.on_click(self.run_async)
        controls = pn.Column(
            w.MultiChoice.from_param(self.param.motes),
            w.Select.from_param(self.param.graph),
            w.FloatSlider.from_param(self.param.window),
            w.FloatSlider.from_param(self.param.quantum),
            w.FloatSlider.from_param(self.param.hours),
            w.RadioButtonGroup.from_param(self.param.implementation),
            w.CheckButtonGroup.from_param(self.param.algorithms),
            button,
            width=300,
        )
        return pn.Row(
            controls,
            pn.Column(
                pn.Row(plot(self.graph_view, width=320, height=300), self.status),
                plot(self.measures_view),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
