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

A run ends by itself: once the replay has written its last file and the join query has
committed everything in the folder (:meth:`LiveJoin.caught_up`), the state becomes
``finished``, the queries stop and Start is offered again.  The window d follows the data: its
default and range come from the learned templates (d >= max(pi) for the fast path, PTJoin
Theorem 2) when a CSV is chosen, and at Start for every source, unless the user set d.

Every page's LiveJoin gets its own query name, so pages run live joins side by side on the
process's one Spark session.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
from holoviews.streams import Buffer, Pipe

from workbench.app.panes import intro, plot
from workbench.data.replay import Replayer
from workbench.data.streams import (
    MAX_DELAY_MS,
    READINGS_FILE,
    SOURCES,
    WINDOW_MAX_MS,
    WINDOW_MS,
    ReplayedStreams,
    WindowRange,
    csv_streams,
    load_streams,
    window_range,
)
from workbench.operators import StreamSpec
from workbench.viz.live import (
    METRIC_COLUMNS,
    PAIR_TABLE_COLUMNS,
    REJECT_REASONS,
    metric_curve,
    pair_table,
    rate_curves,
    reject_bars,
)

if TYPE_CHECKING:
    from workbench.spark.live import LiveJoin

__all__ = [
    "LiveJoinExplorer",
    "RunSettings",
    "Snapshot",
    "spark_live_join",
]

STATES = ("stopped", "starting", "running", "paused", "stopping", "finished")
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
CSV_UNIT_LABEL = "CSV time unit"
INTRO = (
    "Replay a data set as two event streams into the streaming PTJoin on Spark and watch it "
    "join live: the charts follow each micro-batch, the table shows the latest pairs. Press "
    "**Start** (the first start launches Java, about half a minute), then move *confidence "
    "delta* or *window d* while it runs; choose *CSV file* under *data* to replay your own "
    "readings (a time column and a sensor column)."
)
CHART_KEY = (
    "**read / processed**: events Spark read and worked through per second · **batch "
    "duration**: time one micro-batch took · **join state rows**: events kept waiting for "
    "partners until the watermark passes them · **results per second**: pairs joined · "
    "**late**: arrived more than D after detection · **dropped by watermark**: arrived after "
    "the watermark had passed them · **malformed / unknown**: records the join could not read."
)

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
    auto_d: bool = False
    """Whether d is the page's derived default (then the data's templates choose it)."""

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
    batches: int
    finished: bool
    """Whether the replay has ended and the join has committed all of it."""


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
    csv_file = param.Bytes(
        default=None,
        allow_None=True,
        label="CSV file",
        doc="Your readings: one row per reading, with a time column and a sensor column.",
    )
    csv_time = param.String("time", label="CSV time column", doc="The CSV's timestamp column.")
    csv_sensor = param.String("sensor", label="CSV sensor column", doc="The CSV's sensor id.")
    csv_time_unit = param.Selector(
        objects={
            "none: dates": "",
            "s since 1970": "s",
            "ms since 1970": "ms",
            "us since 1970": "us",
            "ns since 1970": "ns",
        },
        default="",
        label=CSV_UNIT_LABEL,
        doc="none when the time column holds dates (2024-03-01 08:00:30); for numbers "
        "counted from 1970-01-01 (Unix time), their unit: s, ms, us or ns.",
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
        doc="How sure the join must be: a pair joins when the probability that its two events "
        "occurred at most d apart is at least delta. Applies from the next micro-batch, no "
        "restart.",
    )
    d = param.Number(
        WINDOW_MS,
        bounds=(0.0, WINDOW_MAX_MS),
        step=100.0,
        label="window d (ms)",
        doc="How far apart (ms) two events may have occurred and still join. Its default and "
        "range follow the data's timing templates (see the note below). Changes up to "
        f"{D_MAX_FACTOR:g}x the starting d apply live; beyond, the query restarts on a new "
        "checkpoint.",
    )
    max_delay_a = param.Number(
        MAX_DELAY_MS,
        bounds=(0.0, 600_000.0),
        step=100.0,
        label="D_A (ms): max delay",
        doc="Stream A's longest network delay: an event arriving more than D after its "
        "detection is late, counted and not joined. Restarts the query on a new checkpoint.",
    )
    max_delay_b = param.Number(
        MAX_DELAY_MS,
        bounds=(0.0, 600_000.0),
        step=100.0,
        label="D_B (ms): max delay",
        doc="Stream B's longest network delay (as D_A).",
    )
    watermark = param.Number(
        0.0,
        bounds=(0.0, 600_000.0),
        step=500.0,
        label="watermark: extra delay (ms)",
        doc="The watermark is the join's clock for forgetting: events older than it can find no "
        "more partners and leave the join state. It trails the newest event by max(D_A, D_B) "
        "plus the window, so no on-time event is dropped; this delays it further (keeps state "
        "longer). Restarts the query on a new checkpoint.",
    )
    trigger_seconds = param.Number(
        1.0,
        bounds=(0.1, 60.0),
        step=0.1,
        label="trigger (s)",
        doc="How often Spark runs a micro-batch; restarts the query from its checkpoint "
        "(nothing lost).",
    )
    paused = param.Boolean(False, label="Pause", doc="Hold the replay; the query keeps running.")
    state = param.Selector(objects=list(STATES), default="stopped", doc="Where the run is.")
    message = param.String("", doc="What the last action did, or why it failed.")
    failed = param.Boolean(False, doc="Whether the message reports a failure.")
    run = param.Integer(0, doc="The LiveJoin's run (a new checkpoint starts a new run).")
    pairs = param.Integer(0, doc="Pairs joined by the current run.")
    replayed = param.Integer(0, doc="Events replayed so far.")
    events = param.Integer(0, doc="Events in the replay.")
    batches = param.Integer(0, doc="Micro-batches the current run committed.")
    fast_from = param.Number(
        None,
        allow_None=True,
        doc="max(pi_A, pi_B), the widest timing template of the data (ms): the fast path needs "
        "d >= it. None until the data is read (a CSV: when chosen; else at Start).",
    )
    csv_report = param.String("", doc="What the chosen CSV gave, or why it cannot be used.")
    csv_alert = param.Selector(
        objects=["success", "warning", "danger"], default="success", doc="How csv_report reads."
    )
    replaying = param.String("", doc="The data the latest run replays (empty before a Start).")
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
        self._stage, self._stage_since = "", time.monotonic()  # what a start is doing
        self._auto_d = WINDOW_MS  # d's derived default: d follows the data while it is this
        self._run_d = self.d  # the window the run has, or will have once queued work ran
        self._shown_run = 0
        self._sent = 0
        self._rejects = pd.Series(dtype=np.int64)
        self.metrics = Buffer(_empty_metrics(), length=HISTORY, index=False)
        self.reject_pipe = Pipe(data=_reject_counts(self._rejects, 0))
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=list(PAIR_TABLE_COLUMNS)),
            show_index=False,
            disabled=True,
            layout="fit_data_stretch",
            sizing_mode="stretch_width",
            height=300,
            header_tooltips={
                "A detected": "detection time of stream A's event, h:mm:ss into the replay",
                "B detected": "detection time of stream B's event, h:mm:ss into the replay",
                "d": "the window the pair was decided under",
                "delta": "the confidence the pair was decided under",
                "P": "exact probability that the two events occurred at most d apart",
            },
        )
        self._check_csv()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._session_destroyed)

    # -- actions (server thread) -----------------------------------------------------------

    def start(self, *_: object) -> None:
        """Start the live join on the chosen data (in the worker thread)."""
        if self.state not in ("stopped", "finished"):
            return
        self.param.update(state="starting", failed=False, message="Starting...")
        self.metrics.clear()
        self._shown_run, self._sent, self._snapshots = 0, 0, 0
        self._rejects = pd.Series(dtype=np.int64)
        self._start_time = pd.Timestamp.now(tz="UTC")
        self._stage_since = time.monotonic()
        self._run_d = self.d
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
            auto_d=self.d == self._auto_d,
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
            self._apply(self._jobs.pop(0).result())
        if self._snapshot is not None and self._snapshot.done():
            result, self._snapshot = self._snapshot.result(), None
            if isinstance(result, Snapshot):
                self._show(result)
            else:
                self.param.update(**result)
        if self.state == "starting" and self._stage:
            seconds = time.monotonic() - self._stage_since
            self.message = f"{self._stage}... ({seconds:.0f} s since Start)"
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
                self._stage = ""
                self._teardown()
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                return {
                    "state": "stopped",
                    "failed": True,
                    "message": f"The live join failed ({type(exc).__name__}: {text[:400]}); "
                    "stopped. Fix the cause and press Start again.",
                }

        return guarded

    def _apply(self, result: dict[str, object]) -> None:
        """A job's result into the page (a start's window for d first)."""
        window = result.pop("window", None)
        if window is not None:
            self._use_window(*window)
        self.param.update(**result)

    def _show(self, snap: Snapshot) -> None:
        """A snapshot into the charts, the table and the counters; at the end, finish."""
        if snap.live is not self._live:
            return  # collected before a stop or a restart
        if snap.run != self._shown_run:
            self.metrics.clear()
            self._shown_run, self._sent = snap.run, 0
        if len(snap.metrics) > self._sent:
            self.metrics.send(snap.metrics.iloc[self._sent :])
            self._sent = len(snap.metrics)
        if snap.rejects is not None:
            self._rejects = snap.rejects
        self.reject_pipe.send(_reject_counts(self._rejects, snap.dropped))
        self.table.value = pair_table(snap.latest)
        self.param.update(
            run=snap.run, pairs=snap.pairs, replayed=snap.replayed, batches=snap.batches
        )
        if snap.finished:
            self.param.update(state="finished", failed=False, message=self._finished())
            self._submit(self._finish_job)

    def _finished(self) -> str:
        """What a finished run did, in plain words."""
        text = (
            f"Finished: all {self.events:,} events replayed and joined, "
            f"{self.pairs:,} pairs (run {self.run}, {self.batches:,} micro-batches). "
            "Start replays the data again."
        )
        if self.pairs == 0:
            text += (
                f" No two events were within d = {self.d:,g} ms of each other with probability "
                f">= delta = {self.delta:g}: try a larger window d."
            )
        return text

    # -- the data and its window (server thread) -------------------------------------------

    def _check_csv(self) -> None:
        """Read the chosen CSV now: what it gave goes under the CSV inputs, and d's default and
        range follow its templates."""
        if self.source != "CSV file" or not self.csv_file:
            self.csv_report = ""
            self._forget_window()
            return
        try:
            streams = csv_streams(self.csv_file, self.csv_time, self.csv_sensor, self.csv_time_unit)
        except ValueError as exc:
            self.param.update(csv_report=str(exc), csv_alert="danger")
            return
        window = window_range(streams.templates)
        self._use_window(window, self.d, window.default if self.d == self._auto_d else self.d)
        report, paragraph = streams.report, "\n\n"
        self.param.update(
            csv_report=paragraph.join(
                [f"**{streams.source}**", report.describe(CSV_UNIT_LABEL, paragraph)]
            ),
            csv_alert="warning" if report["bad_time_or_sensor"] or report.hint() else "success",
        )

    def _forget_window(self) -> None:
        """Data whose templates are not read yet (they are at Start): d's range and default
        as before any data."""
        self.param.d.bounds = (0.0, WINDOW_MAX_MS)
        self.fast_from = None
        if self.d == self._auto_d != WINDOW_MS:
            self._follow(WINDOW_MS)
        self._auto_d = WINDOW_MS

    def _follow(self, d: float) -> None:
        """Set d for new data without steering the run: a run already uses it, or a queued
        start or restart reads it."""
        self._run_d = d
        self.d = d

    def _use_window(self, window: WindowRange, requested: float, d: float) -> None:
        """d's range from the data's templates, and ``d`` for it unless the user changed d
        since ``requested`` was read; d follows the data while it is the derived default."""
        self.param.d.bounds = (0.0, window.upper)
        self.param.d.step = window.step
        self.fast_from = window.fast_from
        if requested == self._auto_d:
            self._auto_d = window.default
        if self.d == requested and d != requested:
            self._follow(d)

    @param.depends("d", "fast_from")
    def window_note(self) -> pn.pane.Markdown:
        """Whether d allows the fast path (PTJoin Theorem 2), in plain words."""
        if self.fast_from is None:
            text = (
                "The fast path (PTJoin Theorem 2) needs d >= max(pi), the widest *timing "
                "template* of the data (how uncertain one event's time is). The templates are "
                "learned from the data when it is read (a CSV: when chosen, else at Start); "
                "d's default follows them."
            )
        elif self.d >= self.fast_from:
            text = (
                f"d >= max(pi) = {math.ceil(self.fast_from):,} ms, the widest timing template "
                "of this data: the fast path applies (each pair is compared with precomputed "
                "bounds; a pair too close to call is *pending* and gets the exact check)."
            )
        else:
            text = (
                f"d < max(pi) = {math.ceil(self.fast_from):,} ms, the widest timing template "
                "of this data: each pair gets the exact probability, slower than the fast "
                f"path (d >= {math.ceil(self.fast_from):,} ms)."
            )
        return pn.pane.Markdown(text, css_classes=["live-window-note"], margin=(0, 10))

    @param.depends("csv_report", "csv_alert")
    def csv_view(self) -> pn.pane.Alert | None:
        """What the chosen CSV gave: accepted and rejected rows, or why it cannot be used."""
        if not self.csv_report:
            return None
        return pn.pane.Alert(
            self.csv_report, alert_type=self.csv_alert, css_classes=["live-csv-report"]
        )

    # -- steering (server thread; Spark work goes to the worker) ---------------------------

    @param.depends("delta", watch=True)
    def _steer_delta(self) -> None:
        if self._live is not None and self.state in ("running", "paused") and not self._jobs:
            self.param.update(message=self._live.set_delta(self.delta), failed=False)
        else:  # starting, or a restart in flight: apply after it
            delta = self.delta
            self._steer("delta", delta, lambda live: live.set_delta(delta))

    @param.depends("d", watch=True)
    def _steer_d(self) -> None:
        if self.d != self._run_d:
            self._run_d = self.d
            d = self.d
            self._steer("d", d, lambda live: live.set_d(d))

    @param.depends("max_delay_a", "max_delay_b", watch=True)
    def _steer_max_delay(self) -> None:
        delays = (self.max_delay_a, self.max_delay_b)
        self._steer("max_delay", delays, lambda live: live.set_max_delay(delays))

    @param.depends("watermark", watch=True)
    def _steer_watermark(self) -> None:
        extra = self.watermark
        self._steer("watermark", extra, lambda live: live.set_watermark(extra))

    @param.depends("trigger_seconds", watch=True)
    def _steer_trigger(self) -> None:
        seconds = self.trigger_seconds
        self._steer("trigger", seconds, lambda live: live.set_trigger(seconds))

    def _steer(self, name: str, value: object, change: Callable[[LiveJoin], str]) -> None:
        """Apply ``change`` to the running LiveJoin in the worker (after a restart in flight);
        its message shows in the page."""
        if self.state not in ("starting", "running", "paused"):
            return  # read at the next Start
        self.param.update(message=f"Applying {name} = {value}...", failed=False)
        self._submit(self._steer_job, change)

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
    def _new_data(self) -> None:
        self._check_csv()
        if self.state not in ("running", "paused"):
            return
        if self.source == "CSV file" and (not self.csv_file or self.csv_alert == "danger"):
            self.message = "The run goes on with its data until a usable CSV file is chosen."
            return
        self.param.update(
            state="starting",
            failed=False,
            message="the data changed: the live join restarts on the new data",
        )
        self._stage_since = time.monotonic()
        self._submit(self._restart_job, self.settings())

    # -- jobs (worker thread) --------------------------------------------------------------

    def _start_job(self, settings: RunSettings) -> dict[str, object]:
        self._stage = "Reading the data and learning its timing templates"
        streams = settings.streams()
        window = window_range(streams.templates)
        d = window.default if settings.auto_d else settings.d
        specs = tuple(
            StreamSpec(t, D) for t, D in zip(streams.templates, settings.max_delay, strict=True)
        )
        self._work = Path(tempfile.mkdtemp(prefix="workbench-live-", dir=self.work_root))
        replay = self._work / "replay"
        replay.mkdir()
        delta, speed = settings.delta, settings.speed
        self._stage = "Starting Spark (the first Start launches Java: about half a minute)"
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
        self._stage = "Starting the join queries"
        self._live.start()
        self._stage = ""
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
        path = "the fast path" if d >= window.fast_from else "exact probabilities (d < max(pi))"
        chosen = (
            f"d = {d:,g} ms follows the data's widest timing template, max(pi) = "
            f"{math.ceil(window.fast_from):,} ms"
            if settings.auto_d
            else f"d = {d:,g} ms"
        )
        return {
            "window": (window, settings.d, d),
            "state": "paused" if settings.paused else "running",
            "events": n,
            "run": self._live.run,
            "pairs": 0,
            "replayed": 0,
            "batches": 0,
            "replaying": streams.source,
            "message": f"Running: {n:,} events of {streams.source} replayed at {speed:g}x into "
            f"the streaming PTJoin on Spark ({chosen}, {path}; delta = {delta:g}). The first "
            "pairs take a few seconds: Spark plans and compiles the join.",
        }

    def _restart_job(self, settings: RunSettings) -> dict[str, object]:
        self._teardown()
        return self._start_job(settings)

    def _steer_job(self, change: Callable[[LiveJoin], str]) -> dict[str, object]:
        if self._live is None:
            return {}
        return {"message": change(self._live), "run": self._live.run}

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

    def _finish_job(self) -> dict[str, object]:
        self._teardown()
        return {}

    def _pair_count(self) -> int:
        return int(sum(b["pairs"] for b in self._live.batches)) if self._live else 0

    def _collect(self, with_rejects: bool) -> Snapshot:
        """The live join's figures (worker thread); finished once the replay has ended and
        the join has committed all of it (checked first, so the figures include it all)."""
        live, replayer = self._live, self._replayer
        if live is None or replayer is None:
            raise RuntimeError("no live join is running")
        if not live.active:
            raise RuntimeError(f"the join query stopped: {live.error or 'no reason given'}")
        from workbench.spark.metrics import batch_metrics  # pyspark is loaded once Spark runs

        finished = replayer.written == len(replayer.records) and live.caught_up()
        progress = live.progress.frame() if live.progress is not None else None
        metrics = (
            _empty_metrics()
            if progress is None
            else batch_metrics(progress, list(live.batches), live.query_name, self._start_time)
        )
        rows = progress[progress["query"] == live.query_name] if progress is not None else None
        dropped = 0 if rows is None else int(rows["dropped_by_watermark"].sum())
        rejects = live.rejects() if with_rejects or finished else None
        latest = live.latest(LATEST)[PAIR_COLUMNS]
        return Snapshot(
            live,
            live.run,
            metrics,
            latest,
            rejects,
            dropped,
            self._pair_count(),
            replayer.written,
            len(live.batches),
            finished,
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
        kind = {"stopped": "light", "finished": "success"}.get(self.state, "info")
        text = self.message or "Stopped. Start replays the data into the streaming PTJoin."
        return pn.pane.Alert(
            text, alert_type="danger" if self.failed else kind, css_classes=["live-status"]
        )

    @param.depends("state", "run", "pairs", "replayed", "events", "batches")
    def readout(self) -> pn.pane.Markdown:
        """State, run, results and replay progress."""
        return pn.pane.Markdown(
            f"**{self.state}** · run {self.run} · **{self.pairs:,} pairs joined** · "
            f"{self.replayed:,} of {self.events:,} events replayed · "
            f"{self.batches:,} micro-batches committed",
            css_classes=["live-readout"],
        )

    def _charts(self) -> pn.viewable.Viewable:
        m = self.metrics
        views = [
            hv.DynamicMap(rate_curves, streams=[m]),
            hv.DynamicMap(
                partial(
                    metric_curve,
                    column="batch_ms",
                    title="batch duration",
                    color="#2ca02c",
                    ylabel="duration",
                    duration=True,
                ),
                streams=[m],
            ),
            hv.DynamicMap(
                partial(
                    metric_curve,
                    column="state_rows",
                    title="join state rows",
                    color="#9467bd",
                    ylabel="events waiting",
                ),
                streams=[m],
            ),
            hv.DynamicMap(
                partial(
                    metric_curve,
                    column="results_per_s",
                    title="results per second",
                    color="#8c564b",
                    ylabel="pairs per second",
                ),
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
        busy = pn.bind(lambda state: state not in ("stopped", "finished"), self.param.state)
        not_live = pn.bind(lambda state: state not in ("running", "paused"), self.param.state)
        button = {"width": 90, "margin": (5, 5)}  # three in the 300 px column
        start = w.Button(label="Start", color="primary", disabled=busy, **button)
        start.on_click(self.start)
        stop = w.Button(label="Stop", color="warning", disabled=not_live, **button)
        stop.on_click(self.stop)
        pause = w.Toggle.from_param(self.param.paused, disabled=not_live, **button)
        wide = {"sizing_mode": "stretch_width"}
        csv = pn.Column(
            w.FileInput.from_param(self.param.csv_file, accept=".csv", **wide),
            w.TextInput.from_param(self.param.csv_time, **wide),
            w.TextInput.from_param(self.param.csv_sensor, **wide),
            w.Select.from_param(self.param.csv_time_unit, **wide),
            self.csv_view,
            visible=self.param.source.rx() == "CSV file",
            **wide,
        )
        controls = pn.Column(
            pn.Row(start, pause, stop, **wide),
            w.Select.from_param(self.param.source, **wide),
            w.TextInput.from_param(
                self.param.readings_path,
                visible=self.param.source.rx() == "Intel Lab readings file",
                **wide,
            ),
            csv,
            w.FloatInput.from_param(self.param.speed, **wide),
            w.FloatSlider.from_param(self.param.delta, **wide),
            w.FloatInput.from_param(self.param.d, **wide),
            self.window_note,
            w.FloatInput.from_param(self.param.max_delay_a, **wide),
            w.FloatInput.from_param(self.param.max_delay_b, **wide),
            w.FloatInput.from_param(self.param.watermark, **wide),
            w.FloatInput.from_param(self.param.trigger_seconds, **wide),
            width=300,
        )
        view = pn.Column(
            self.status,
            self.readout,
            self._charts(),
            pn.pane.Markdown(CHART_KEY, css_classes=["live-chart-key"], **wide),
            pn.pane.Markdown(
                "**latest joined pairs**: the two events, when each was detected (h:mm:ss into "
                "the replay), the window d and confidence delta the pair was decided under, and "
                "P, the exact probability that the two events occurred at most d apart.",
                **wide,
            ),
            self.table,
            **wide,
        )
        return pn.Column(intro(INTRO, "Live join"), pn.Row(controls, view, **wide), **wide)
