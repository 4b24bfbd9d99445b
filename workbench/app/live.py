"""The live Spark join: the streaming PTJoin (:class:`workbench.spark.live.LiveJoin`, PTJoin
Section 3) over a replayed data set, started, paused, steered and stopped from the page.

Spark work never runs on the server thread.  Starting (the JVM, the data, the queries),
steering that may restart a query, stopping, and collecting the figures run in one worker
thread per page, in the order asked; a periodic callback on the server thread moves what
finished into the page (``Buffer``/``Pipe`` streams, the pairs table, the message).  A new
delta is a lock and a dataclass swap inside the LiveJoin, so it applies at once unless a
restart is in flight (then it queues behind it).  Nothing here imports pyspark before Start:
the page loads without Java and says why Spark could not start; any Spark failure stops the
run, shows its message and leaves the page usable.

Every page's LiveJoin gets its own query name, so pages run live joins side by side on the
process's one Spark session.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
from holoviews.streams import Buffer, Pipe

from workbench.app.data import (
    MAX_DELAY_MS,
    READINGS_FILE,
    ReplayedStreams,
    csv_streams,
    default_streams,
    readings_file_streams,
    synthetic_streams,
)
from workbench.app.panes import plot
from workbench.data.replay import Replayer
from workbench.operators import StreamSpec
from workbench.viz.live import (
    METRIC_COLUMNS,
    REJECT_REASONS,
    metric_curve,
    rate_curves,
    reject_bars,
)

if TYPE_CHECKING:
    from workbench.spark.live import LiveJoin

__all__ = [
    "SOURCES",
    "LiveJoinExplorer",
    "RunSettings",
    "Snapshot",
    "batch_metrics",
    "load_streams",
    "spark_live_join",
]

SOURCES = ("simulated deployment", "Intel Lab readings file", "CSV file", "synthetic events")
"""Data the live join can replay."""
STATES = ("stopped", "starting", "running", "paused", "stopping")
POLL_MS = 1000
"""Period of the callback moving finished work into the page."""
REJECTS_EVERY = 3
"""Snapshots between two reads of the rejects sink (a Spark batch read)."""
D_MAX_FACTOR = 2.0
"""The join state covers windows up to this multiple of the starting d (changes within: live)."""
FILES_PER_SECOND = 2.0
"""Replay files per second of wall time at the starting speed."""
LATEST = 15
"""Rows of the latest-pairs table."""
HISTORY = 900
"""Micro-batches kept in the live charts."""
PAIR_COLUMNS = ["a_id", "b_id", "a_t", "b_t", "d", "delta", "probability"]

_SPARK_LOCK = threading.Lock()


def spark_live_join(
    source_dir: Path,
    streams: tuple[StreamSpec, StreamSpec],
    d: float,
    delta: float,
    work_dir: Path,
    d_max: float,
    trigger_seconds: float,
    name: str,
    extra_watermark_ms: float,
) -> LiveJoin:
    """A LiveJoin on this process's ``local[2]`` Spark session (made at the first Start, then
    reused; pyspark is imported here, not when the dashboard loads)."""
    from workbench.spark.live import LiveJoin
    from workbench.spark.session import spark_session

    with _SPARK_LOCK:
        spark = spark_session("local[2]", app_name="workbench-dashboard", shuffle_partitions=2)
        spark.sparkContext.setLogLevel("ERROR")
    return LiveJoin(
        spark,
        source_dir,
        streams,
        d,
        delta,
        work_dir,
        d_max=d_max,
        trigger_seconds=trigger_seconds,
        name=name,
        extra_watermark_ms=extra_watermark_ms,
    )


def load_streams(
    source: str,
    readings_path: str = str(READINGS_FILE),
    csv_file: bytes | None = None,
    csv_time: str = "time",
    csv_sensor: str = "sensor",
    csv_time_unit: str = "",
) -> ReplayedStreams:
    """The two event streams of a data source (one of :data:`SOURCES`)."""
    if source == "simulated deployment":
        return default_streams()
    if source == "Intel Lab readings file":
        if not Path(readings_path).exists():
            raise FileNotFoundError(
                f"no readings file at {readings_path}: workbench.data.fetch_readings downloads "
                "it (needs a network), or give the path of a copy of data.txt(.gz)"
            )
        return readings_file_streams(readings_path)
    if source == "CSV file":
        if not csv_file:
            raise ValueError("choose a CSV file first (a time column and a sensor column)")
        return csv_streams(csv_file, csv_time, csv_sensor, csv_time_unit)
    if source == "synthetic events":
        return synthetic_streams()
    raise ValueError(f"unknown data source {source!r}; choose one of {SOURCES}")


def batch_metrics(
    progress: pd.DataFrame,
    batches: list[dict[str, object]],
    query: str,
    start: pd.Timestamp,
) -> pd.DataFrame:
    """One row per micro-batch of ``query`` (:data:`METRIC_COLUMNS`): Spark's progress with
    the pairs the batch committed.  Results per second are a batch's pairs over the time since
    the previous batch started (the first batch: over its own duration).

    >>> t = pd.Timestamp("2025-01-01", tz="UTC")
    >>> progress = pd.DataFrame({"query": "q", "batch": [0, 1], "batch_ms": [500, 400],
    ...     "timestamp": [t, t + pd.Timedelta(seconds=2)], "input_rows_per_s": 0.0,
    ...     "processed_rows_per_s": 0.0, "state_rows": [3, 5]})
    >>> m = batch_metrics(progress, [{"batch": 0, "pairs": 4}, {"batch": 1, "pairs": 8}], "q", t)
    >>> m[["elapsed_s", "pairs", "results_per_s"]].to_numpy().tolist()
    [[0.0, 4.0, 8.0], [2.0, 8.0, 4.0]]
    """
    rows = progress[progress["query"] == query]
    pairs = pd.DataFrame(batches, columns=["batch", "pairs"]).drop_duplicates("batch", keep="last")
    out = rows.merge(pairs, on="batch", how="left")
    out["pairs"] = out["pairs"].fillna(0)
    out["elapsed_s"] = (pd.to_datetime(out["timestamp"], utc=True) - start).dt.total_seconds()
    since = out["elapsed_s"].diff()
    if len(out):
        since.iloc[0] = out["batch_ms"].iloc[0] / 1000.0
    out["results_per_s"] = out["pairs"] / since.clip(lower=1e-3)
    return out[list(METRIC_COLUMNS)].astype(np.float64)


@dataclass(frozen=True)
class RunSettings:
    """What a Start runs with (read from the page on the server thread)."""

    source: str
    readings_path: str
    csv_file: bytes | None
    csv_time: str
    csv_sensor: str
    csv_time_unit: str
    d: float
    delta: float
    max_delay: tuple[float, float]
    trigger_seconds: float
    extra_watermark_ms: float
    speed: float
    paused: bool

    def streams(self) -> ReplayedStreams:
        """The chosen data as two event streams."""
        return load_streams(
            self.source,
            self.readings_path,
            self.csv_file,
            self.csv_time,
            self.csv_sensor,
            self.csv_time_unit,
        )


@dataclass(frozen=True)
class Snapshot:
    """What a running live join looked like, collected in the worker thread."""

    live: object
    run: int
    metrics: pd.DataFrame
    latest: pd.DataFrame
    rejects: pd.Series | None
    dropped: int
    pairs: int
    replayed: int


def _empty_metrics() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in METRIC_COLUMNS})


def _reject_counts(rejects: pd.Series, dropped: int) -> pd.DataFrame:
    counts = rejects.reindex(REJECT_REASONS[:-1], fill_value=0).to_dict()
    counts[REJECT_REASONS[-1]] = dropped
    return pd.DataFrame({"reason": list(counts), "records": [int(v) for v in counts.values()]})


class LiveJoinExplorer(pn.viewable.Viewer):
    """Start, pause, steer and stop the streaming PTJoin on Spark; watch it live."""

    source = param.Selector(
        objects=list(SOURCES),
        default=SOURCES[0],
        label="data",
        doc="What is replayed: the simulated deployment, the real readings file, a CSV of "
        "your own readings, or synthetic events. Changing it while running restarts.",
    )
    readings_path = param.String(
        str(READINGS_FILE), label="readings file", doc="The Intel Lab data.txt(.gz)."
    )
    csv_file = param.Bytes(default=None, allow_None=True, label="CSV file", doc="Your readings.")
    csv_time = param.String("time", label="CSV time column", doc="The CSV's timestamp column.")
    csv_sensor = param.String("sensor", label="CSV sensor column", doc="The CSV's sensor id.")
    csv_time_unit = param.Selector(
        objects=["", "s", "ms"],
        default="",
        label="CSV time unit",
        doc="Unit of numeric timestamps since the Unix epoch; empty: parse dates.",
    )
    speed = param.Number(
        300.0,
        bounds=(1.0, 20_000.0),
        step=10.0,
        label="speed (x real time)",
        doc="Seconds of arrival time replayed per second; applies at once.",
    )
    delta = param.Number(
        0.8,
        bounds=(0.01, 0.99),
        step=0.01,
        label="confidence delta",
        doc="Threshold of jc(d, delta); applies from the next micro-batch, no restart.",
    )
    d = param.Number(
        3000.0,
        bounds=(0.0, 600_000.0),
        step=100.0,
        label="window d (ms)",
        doc=f"Join window; live up to {D_MAX_FACTOR:g}x the starting d (the join state's "
        "envelope), beyond it the query restarts on a new checkpoint.",
    )
    max_delay_a = param.Number(
        MAX_DELAY_MS,
        bounds=(0.0, 600_000.0),
        step=100.0,
        label="D_A (ms): max delay",
        doc="Stream A's max network delay: later events are rejected as late, and the join's "
        "event-time watermark trails by at least max(D_A, D_B) plus the band width. Restarts "
        "the query on a new checkpoint.",
    )
    max_delay_b = param.Number(
        MAX_DELAY_MS,
        bounds=(0.0, 600_000.0),
        step=100.0,
        label="D_B (ms): max delay",
        doc="Stream B's max network delay (as D_A).",
    )
    watermark = param.Number(
        0.0,
        bounds=(0.0, 600_000.0),
        step=500.0,
        label="watermark: extra delay (ms)",
        doc="How much later than max(D_A, D_B) + the band width the event-time watermark runs "
        "(an earlier one would drop on-time events). Later keeps join state longer. Restarts "
        "the query on a new checkpoint.",
    )
    trigger_seconds = param.Number(
        1.0,
        bounds=(0.1, 60.0),
        step=0.1,
        label="trigger (s)",
        doc="Micro-batch interval; restarts the query from its checkpoint (nothing lost).",
    )
    paused = param.Boolean(False, label="Pause", doc="Hold the replay; the query keeps running.")
    state = param.Selector(objects=list(STATES), default="stopped", doc="Where the run is.")
    message = param.String("", doc="What the last action did, or why it failed.")
    failed = param.Boolean(False, doc="Whether the message reports a failure.")
    run = param.Integer(0, doc="The LiveJoin's run (a new checkpoint starts a new run).")
    pairs = param.Integer(0, doc="Pairs joined by the current run.")
    replayed = param.Integer(0, doc="Events replayed so far.")
    events = param.Integer(0, doc="Events in the replay.")
    live_factory = param.Callable(
        spark_live_join,
        doc="Makes the LiveJoin (keywords: source_dir, streams, d, delta, work_dir, d_max, "
        "trigger_seconds, name, extra_watermark_ms); tests inject a fake.",
    )
    work_root = param.String(
        None, allow_None=True, doc="Where each run's temporary folder goes (system default)."
    )

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="live-join")
        self._jobs: list[Future] = []
        self._snapshot: Future | None = None
        self._snapshots = 0
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        self._live: LiveJoin | None = None
        self._replayer: Replayer | None = None
        self._replay_thread: threading.Thread | None = None
        self._wake = threading.Event()  # ends the replay's pacing sleep at a stop
        self._work: Path | None = None
        self._start_time = pd.Timestamp.now(tz="UTC")
        self._shown_run = 0
        self._sent = 0
        self._rejects = pd.Series(dtype=np.int64)
        self.metrics = Buffer(_empty_metrics(), length=HISTORY, index=False)
        self.reject_pipe = Pipe(data=_reject_counts(self._rejects, 0))
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=PAIR_COLUMNS),
            show_index=False,
            disabled=True,
            layout="fit_columns",
            sizing_mode="stretch_width",
            height=300,
        )
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._session_destroyed)

    # -- actions (server thread) -----------------------------------------------------------

    def start(self, *_: object) -> None:
        """Start the live join on the chosen data (in the worker thread)."""
        if self.state != "stopped":
            return
        self.param.update(state="starting", failed=False, message="Starting Spark...")
        self.metrics.clear()
        self._shown_run, self._sent, self._snapshots = 0, 0, 0
        self._rejects = pd.Series(dtype=np.int64)
        self._start_time = pd.Timestamp.now(tz="UTC")
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.poll, period=POLL_MS)
        self._submit(self._start_job, self.settings())

    def settings(self) -> RunSettings:
        """The page's current choices."""
        return RunSettings(
            source=self.source,
            readings_path=self.readings_path,
            csv_file=self.csv_file,
            csv_time=self.csv_time,
            csv_sensor=self.csv_sensor,
            csv_time_unit=self.csv_time_unit,
            d=self.d,
            delta=self.delta,
            max_delay=(self.max_delay_a, self.max_delay_b),
            trigger_seconds=self.trigger_seconds,
            extra_watermark_ms=self.watermark,
            speed=self.speed,
            paused=self.paused,
        )

    def stop(self, *_: object) -> None:
        """Stop the queries and the replay (in the worker thread)."""
        if self.state not in ("running", "paused"):
            return
        self.param.update(state="stopping", message="Stopping...", failed=False)
        self._submit(self._stop_job)

    def poll(self) -> None:
        """Move finished work into the page, and ask for the next snapshot while running."""
        while self._jobs and self._jobs[0].done():
            self.param.update(**self._jobs.pop(0).result())
        if self._snapshot is not None and self._snapshot.done():
            result, self._snapshot = self._snapshot.result(), None
            if isinstance(result, Snapshot):
                self._show(result)
            else:
                self.param.update(**result)
        if self._snapshot is None and not self._jobs and self.state in ("running", "paused"):
            self._snapshots += 1
            self._snapshot = self._worker.submit(
                self._guard(self._collect), self._snapshots % REJECTS_EVERY == 1
            )

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until the queued work has finished, then :meth:`poll` (scripts and tests;
        never on the server thread)."""
        for future in [*self._jobs, *([self._snapshot] if self._snapshot else [])]:
            future.result(timeout)
        self.poll()

    def _submit(self, job: Callable[..., dict[str, object]], *args: object) -> None:
        self._jobs.append(self._worker.submit(self._guard(job), *args))

    def _guard(self, job: Callable[..., object]) -> Callable[..., object]:
        """Run ``job``; on any failure stop everything and report it (the page stays up)."""

        def guarded(*args: object) -> object:
            try:
                return job(*args)
            except Exception as exc:  # Spark, Java, the data: shown, never raised
                self._teardown()
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                return {
                    "state": "stopped",
                    "failed": True,
                    "message": f"The live join failed ({type(exc).__name__}: {text[:400]}); "
                    "stopped. Fix the cause and press Start again.",
                }

        return guarded

    def _show(self, snap: Snapshot) -> None:
        """A snapshot into the charts, the table and the counters."""
        if snap.live is not self._live:
            return  # collected before a stop
        if snap.run != self._shown_run:
            self.metrics.clear()
            self._shown_run, self._sent = snap.run, 0
        if len(snap.metrics) > self._sent:
            self.metrics.send(snap.metrics.iloc[self._sent :])
            self._sent = len(snap.metrics)
        if snap.rejects is not None:
            self._rejects = snap.rejects
        self.reject_pipe.send(_reject_counts(self._rejects, snap.dropped))
        self.table.value = snap.latest
        self.param.update(run=snap.run, pairs=snap.pairs, replayed=snap.replayed)

    # -- steering (server thread; Spark work goes to the worker) ---------------------------

    @param.depends("delta", watch=True)
    def _steer_delta(self) -> None:
        if self._live is not None and self.state in ("running", "paused") and not self._jobs:
            self.param.update(message=self._live.set_delta(self.delta), failed=False)
        else:  # starting, or a restart in flight: apply after it
            self._steer("set_delta", self.delta)

    @param.depends("d", watch=True)
    def _steer_d(self) -> None:
        self._steer("set_d", self.d)

    @param.depends("max_delay_a", "max_delay_b", watch=True)
    def _steer_max_delay(self) -> None:
        self._steer("set_max_delay", (self.max_delay_a, self.max_delay_b))

    @param.depends("watermark", watch=True)
    def _steer_watermark(self) -> None:
        self._steer("set_watermark", self.watermark)

    @param.depends("trigger_seconds", watch=True)
    def _steer_trigger(self) -> None:
        self._steer("set_trigger", self.trigger_seconds)

    def _steer(self, method: str, value: object) -> None:
        if self.state not in ("starting", "running", "paused"):
            return  # read at the next Start
        self.param.update(message=f"Applying {method[4:]} = {value}...", failed=False)
        self._submit(self._steer_job, method, value)

    @param.depends("speed", "paused", watch=True)
    def _steer_replay(self) -> None:
        if self.state == "starting":
            self._submit(self._replay_job, self.speed, self.paused)
        elif self._replayer is not None and self.state in ("running", "paused"):
            self.param.update(**self._replay_job(self.speed, self.paused))

    @param.depends(
        "source",
        "readings_path",
        "csv_file",
        "csv_time",
        "csv_sensor",
        "csv_time_unit",
        watch=True,
    )
    def _restart_on_new_data(self) -> None:
        if self.state not in ("running", "paused"):
            return
        self.param.update(
            state="starting",
            failed=False,
            message="the data changed: the live join restarts on the new data",
        )
        self._submit(self._restart_job, self.settings())

    # -- jobs (worker thread) --------------------------------------------------------------

    def _start_job(self, settings: RunSettings) -> dict[str, object]:
        streams = settings.streams()
        specs = tuple(
            StreamSpec(t, D) for t, D in zip(streams.templates, settings.max_delay, strict=True)
        )
        self._work = Path(tempfile.mkdtemp(prefix="workbench-live-", dir=self.work_root))
        replay = self._work / "replay"
        replay.mkdir()
        d, delta, speed = settings.d, settings.delta, settings.speed
        self._live = self.live_factory(
            source_dir=replay,
            streams=specs,
            d=d,
            delta=delta,
            work_dir=self._work / "join",
            d_max=d * D_MAX_FACTOR,
            trigger_seconds=settings.trigger_seconds,
            name=f"ptjoin-{uuid.uuid4().hex[:8]}",  # one query name per page
            extra_watermark_ms=settings.extra_watermark_ms,
        )
        self._live.start()
        self._wake = threading.Event()
        self._replayer = Replayer(
            streams.events,
            replay,
            batch_ms=speed * 1000.0 / FILES_PER_SECOND,
            speed=speed,
            sleep=self._wake.wait,
        )
        if settings.paused:
            self._replayer.pause()
        self._replay_thread = self._replayer.start()
        n = len(streams.events)
        return {
            "state": "paused" if settings.paused else "running",
            "events": n,
            "run": self._live.run,
            "message": f"Running: {n:,} events of {streams.source} replayed at {speed:g}x into "
            f"the streaming PTJoin on Spark (d = {d:g} ms, delta = {delta:g})",
        }

    def _restart_job(self, settings: RunSettings) -> dict[str, object]:
        self._teardown()
        return self._start_job(settings)

    def _steer_job(self, method: str, value: object) -> dict[str, object]:
        if self._live is None:
            return {}
        return {"message": getattr(self._live, method)(value), "run": self._live.run}

    def _replay_job(self, speed: float, paused: bool) -> dict[str, object]:
        """Pace, pause or resume the replay (cheap: also called on the server thread)."""
        if self._replayer is None:
            return {}
        self._replayer.speed = speed
        if paused:
            self._replayer.pause()
            return {
                "state": "paused",
                "message": f"replay paused (speed {speed:g}x): the query keeps running, idle",
            }
        self._replayer.resume()
        return {"state": "running", "message": f"replay running at {speed:g}x"}

    def _stop_job(self) -> dict[str, object]:
        pairs = self._pair_count()
        self._teardown()
        return {
            "state": "stopped",
            "message": f"Stopped after {pairs:,} pairs; Start replays the data from its start",
        }

    def _pair_count(self) -> int:
        return int(sum(b["pairs"] for b in self._live.batches)) if self._live else 0

    def _collect(self, with_rejects: bool) -> Snapshot:
        """The live join's figures (worker thread)."""
        live, replayer = self._live, self._replayer
        if live is None or replayer is None:
            raise RuntimeError("no live join is running")
        if not live.active:
            raise RuntimeError(f"the join query stopped: {live.error or 'no reason given'}")
        progress = live.progress.frame() if live.progress is not None else None
        metrics = (
            _empty_metrics()
            if progress is None
            else batch_metrics(progress, list(live.batches), live.query_name, self._start_time)
        )
        rows = progress[progress["query"] == live.query_name] if progress is not None else None
        dropped = 0 if rows is None else int(rows["dropped_by_watermark"].sum())
        rejects = live.rejects() if with_rejects else None
        latest = live.latest(LATEST)[PAIR_COLUMNS].round({"a_t": 0, "b_t": 0, "probability": 4})
        return Snapshot(
            live, live.run, metrics, latest, rejects, dropped, self._pair_count(), replayer.written
        )

    def _teardown(self) -> None:
        """Stop the replay and the queries, remove the run's folder."""
        replayer, thread, live, work = self._replayer, self._replay_thread, self._live, self._work
        self._replayer = self._replay_thread = self._live = self._work = None
        try:
            if replayer is not None:
                self._wake.set()
                replayer.stop()
            if thread is not None:
                thread.join()
            if live is not None:
                live.close()
        finally:
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)

    def close(self, wait: bool = False) -> None:
        """Stop the callback, then everything Spark (in the worker thread; ``wait`` for it).
        Called when the browser session ends."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self._worker.submit(self._teardown)
        self._worker.shutdown(wait=wait)

    def _session_destroyed(self, _context: object) -> None:
        self.close()

    # -- the page ----------------------------------------------------------------------------

    @param.depends("state", "message", "failed")
    def status(self) -> pn.pane.Alert:
        """The last action's outcome, or the failure."""
        kind = "danger" if self.failed else ("info" if self.state != "stopped" else "light")
        text = self.message or "Stopped. Start replays the data into the streaming PTJoin."
        return pn.pane.Alert(text, alert_type=kind, css_classes=["live-status"])

    @param.depends("state", "run", "pairs", "replayed", "events")
    def readout(self) -> pn.pane.Markdown:
        """State, run, results and replay progress."""
        return pn.pane.Markdown(
            f"**{self.state}** · run {self.run} · **{self.pairs:,} pairs joined** · "
            f"{self.replayed:,} of {self.events:,} events replayed",
            css_classes=["live-readout"],
        )

    def _charts(self) -> pn.viewable.Viewable:
        m = self.metrics
        views = [
            hv.DynamicMap(rate_curves, streams=[m]),
            hv.DynamicMap(
                lambda data: metric_curve(data, "batch_ms", "batch duration (ms)", "#2ca02c"),
                streams=[m],
            ),
            hv.DynamicMap(
                lambda data: metric_curve(data, "state_rows", "join state rows", "#9467bd"),
                streams=[m],
            ),
            hv.DynamicMap(
                lambda data: metric_curve(data, "results_per_s", "results per second", "#8c564b"),
                streams=[m],
            ),
            hv.DynamicMap(reject_bars, streams=[self.reject_pipe]),
        ]
        return pn.GridBox(
            *(plot(v, sizing_mode="stretch_width", height=220) for v in views),
            ncols=3,
            sizing_mode="stretch_width",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        not_idle = pn.bind(lambda state: state != "stopped", self.param.state)
        not_live = pn.bind(lambda state: state not in ("running", "paused"), self.param.state)
        start = w.Button(label="Start", color="primary", disabled=not_idle, width=90)
        start.on_click(self.start)
        stop = w.Button(label="Stop", color="warning", disabled=not_live, width=90)
        stop.on_click(self.stop)
        pause = w.Toggle.from_param(self.param.paused, disabled=not_live, width=90)
        csv = pn.Column(
            w.FileInput.from_param(self.param.csv_file, accept=".csv"),
            w.TextInput.from_param(self.param.csv_time),
            w.TextInput.from_param(self.param.csv_sensor),
            w.Select.from_param(self.param.csv_time_unit),
            visible=self.param.source.rx() == "CSV file",
        )
        controls = pn.Column(
            pn.Row(start, pause, stop),
            w.Select.from_param(self.param.source),
            w.TextInput.from_param(
                self.param.readings_path,
                visible=self.param.source.rx() == "Intel Lab readings file",
            ),
            csv,
            w.FloatInput.from_param(self.param.speed),
            w.FloatSlider.from_param(self.param.delta),
            w.FloatInput.from_param(self.param.d),
            w.FloatInput.from_param(self.param.max_delay_a),
            w.FloatInput.from_param(self.param.max_delay_b),
            w.FloatInput.from_param(self.param.watermark),
            w.FloatInput.from_param(self.param.trigger_seconds),
            width=300,
        )
        return pn.Row(
            controls,
            pn.Column(
                self.status,
                self.readout,
                self._charts(),
                pn.pane.Markdown(
                    "**latest joined pairs**: detection times a_t, b_t (ms into the replay), "
                    "the (d, delta) they were decided under, exact P(|Xa - Xb| <= d)"
                ),
                self.table,
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
