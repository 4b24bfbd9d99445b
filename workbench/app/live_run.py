"""The live join tab's run: the streaming PTJoin (:class:`workbench.spark.queries.live.LiveJoin`,
PTJoin Section 3) over a replayed data set, started, paused, steered and stopped, on the shared
:class:`~workbench.app.spark_control.SparkControl`.

The run goes through a :class:`~workbench.app.runs.live.LiveSession`, which runs the replay and the
LiveJoin in its worker thread: starting (the JVM, the data, the queries), steering that may
restart a query, stopping and collecting the figures go there in the order asked; polling on
the server thread moves what finished into the run (the micro-batches' metrics and the
rejects the page's charts show, the latest pairs, the counters, the message).  A new delta is
a lock and a dataclass swap inside the LiveJoin, so it applies at once unless a restart is in
flight (then it queues behind it).  Nothing here imports pyspark before Start; any Spark
failure stops the run and says why.

A run ends by itself once the replay is joined (``finished``).  The window d follows the data
(:class:`~workbench.app.live_settings.LiveJoinSettings`), unless the user set d.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import pandas as pd
import panel as pn
import param

from workbench.app.live_settings import LiveJoinSettings
from workbench.app.spark_control import SparkControl
from workbench.viz.live import (
    HISTORY,
    METRIC_COLUMNS,
    PAIR_TABLE_COLUMNS,
    empty_metrics,
    pair_table,
    reject_counts,
)

if TYPE_CHECKING:
    from workbench.app.runs.live import LiveSession, LiveSnapshot, RunSettings, Started, Steered
    from workbench.data.streams import ReplayedStreams
    from workbench.spark.queries.live import LiveJoin

__all__ = ["LiveRun"]

ADVICE = {
    "full": " If the disk is still full, free space on it or choose another work folder "
    "(WORKBENCH_WORK_DIR).",
    "read-only": " If the work folder itself cannot be written, choose another one "
    "(WORKBENCH_WORK_DIR).",
}
"""What to do first, by the kind of damage."""


class LiveRun(SparkControl):
    """The streaming PTJoin on Spark under ``model``'s settings (module docstring)."""

    model = param.ClassSelector(class_=LiveJoinSettings, doc="What the live join runs with.")
    damaged = param.Boolean(
        False, doc="Whether damaged state (checkpoint, sink) stopped the last run."
    )
    run = param.Integer(0, doc="The LiveJoin's run (a new checkpoint starts a new run).")
    pairs = param.Integer(0, doc="Pairs joined by the current run.")
    replayed = param.Integer(0, doc="Events replayed so far.")
    events = param.Integer(0, doc="Events in the replay.")
    batches = param.Integer(0, doc="Micro-batches the current run committed.")
    replaying = param.String("", doc="The data the latest run replays (empty before a Start).")
    spark_ui = param.String("", doc="The Spark UI's address (loopback; empty before a Start).")
    latest = param.DataFrame(
        pd.DataFrame(columns=list(PAIR_TABLE_COLUMNS)), doc="The latest joined pairs, as shown."
    )
    metrics = param.DataFrame(
        empty_metrics(),
        doc="Per micro-batch figures of the current run (its last HISTORY batches), charted.",
    )
    appended = param.Integer(
        0, doc="Rows the latest change of metrics added at its end (0: metrics were replaced)."
    )
    rejects = param.DataFrame(
        reject_counts(pd.Series(dtype="int64"), 0),
        doc="The late, dropped and unreadable records by reason, charted.",
    )

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._data_choices = 0  # counts data changes: only the newest one's read is shown
        self._stage_since = time.monotonic()  # when the start being shown began
        self._shown_run = 0
        self._sent = 0

    def phase(self) -> str:
        """The run in one word, as the page and the header say it: stopped, starting, running,
        paused, stopping or finished."""
        if self.state in ("idle", "failed"):
            return "stopped"
        if self.state == "running" and self.model.paused:
            return "paused"
        return self.state

    def _make_job(self) -> LiveSession:
        from workbench.app.runs.live import LiveSession  # pyspark loads here, not with the page

        return LiveSession(on_failure=self.fail)

    # -- actions (server thread) -----------------------------------------------------------

    def start(self, *_: object) -> None:
        """Start the live join on the chosen data (in the worker thread)."""
        if self.busy:
            return
        session = self.begin("")
        self.damaged = False
        self.param.update(metrics=empty_metrics(), appended=0)
        self._shown_run, self._sent = 0, 0
        self._stage_since = time.monotonic()
        self.model.run_d = self.model.d
        settings = self.model.settings()
        # said at once: a start on a warm Spark may end before the next poll
        self._staged(session.launch(settings, partial(self._started, settings)))

    def stop(self, *_: object) -> None:
        """Stop the queries and the replay (in the worker thread)."""
        if self.state != "running":
            return
        self.param.update(state="stopping", message="Stopping...")
        self.job.submit(self.job.stop, self._stopped)

    def _staged(self, stage: str) -> None:
        """Say what a start is doing (``stage``), and for how long."""
        seconds = time.monotonic() - self._stage_since
        self.message = f"{stage}... ({seconds:.0f} s since Start)"

    # -- what finished (server thread, from the session's poll) ----------------------------

    def failure(self, exc: Exception) -> str:
        """Damaged state (:mod:`workbench.spark.queries.damage`) in plain words, with the offer to
        restart on a new checkpoint; any other failure by its first line."""
        from workbench.app.runs.live import DamagedRun  # a run had started: pyspark is loaded

        if isinstance(exc, DamagedRun):
            return (
                f"{exc.damage.message} The run stopped. Restart on a new checkpoint: "
                "its query re-reads the replay from the start into a sink of its own, so no "
                "pair is repeated or lost." + ADVICE.get(exc.damage.kind, "")
            )
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (
            f"The live join failed ({type(exc).__name__}: {text[:400]}); stopped. Fix "
            "the cause and press Start again."
        )

    def fail(self, exc: Exception) -> None:
        """Any failure: the run is stopped; say why, the page stays up."""
        from workbench.app.runs.live import DamagedRun

        self.damaged = isinstance(exc, DamagedRun)
        super().fail(exc)

    def _started(self, settings: RunSettings, started: Started) -> None:
        """A start's outcome into the run (the data's window for d first)."""
        self.model.use_window(started.window, settings.d, started.d)
        self.param.update(
            state="running",
            events=started.events,
            run=started.run,
            pairs=0,
            replayed=0,
            batches=0,
            replaying=started.source,
            message=started.message,
            spark_ui=started.ui_url or "",
        )

    def _stopped(self, message: str) -> None:
        self.param.update(state="idle", message=message)

    def _steered(self, steered: Steered | None) -> None:
        if steered is not None:
            self.param.update(message=steered.message, run=steered.run)

    def _paced(self, message: str | None) -> None:
        if message is not None:
            self.message = message

    def _show(self, snap: LiveSnapshot) -> None:
        """A snapshot into the charts, the pairs and the counters; at the end, finish."""
        if snap.run != self._shown_run:
            self.param.update(metrics=empty_metrics(), appended=0)
            self._shown_run, self._sent = snap.run, 0
        if len(snap.metrics) > self._sent:
            new = snap.metrics.iloc[self._sent :][list(METRIC_COLUMNS)]
            shown = pd.concat([self.metrics, new], ignore_index=True).iloc[-HISTORY:]
            self.param.update(metrics=shown.reset_index(drop=True), appended=len(new))
            self._sent = len(snap.metrics)
        self.rejects = reject_counts(snap.rejects, snap.dropped)
        self.param.update(
            latest=pair_table(snap.latest),
            run=snap.run,
            pairs=snap.pairs,
            replayed=snap.replayed,
            batches=snap.batches,
        )
        super()._show(snap)
        if snap.finished:
            self.finish(self._finished())

    def _finished(self) -> str:
        """What a finished run did, in plain words."""
        text = (
            f"Finished: all {self.events:,} events replayed and joined, "
            f"{self.pairs:,} pairs (run {self.run}, {self.batches:,} micro-batches). "
            "Start replays the data again."
        )
        if self.pairs == 0:
            text += (
                f" No two events were within d = {self.model.d:,g} ms of each other with "
                f"probability >= delta = {self.model.delta:g}: try a larger window d."
            )
        return text

    # -- steering (server thread; Spark work goes to the worker) ---------------------------

    @param.depends("model.delta", watch=True)
    def _steer_delta(self) -> None:
        session, delta = self.job, self.model.delta
        live = session.live if session is not None else None
        if live is not None and self.state == "running" and not session.pending:
            self.message = live.set_delta(delta)  # a lock, a swap
        else:  # starting, or a restart in flight: apply after it
            self._steer("delta", delta, lambda live: live.set_delta(delta))

    @param.depends("model.d", watch=True)
    def _steer_d(self) -> None:
        m = self.model
        if m.d != m.run_d:
            m.run_d = d = m.d
            self._steer("d", d, lambda live: live.set_d(d))

    @param.depends("model.max_delay_a", "model.max_delay_b", watch=True)
    def _steer_max_delay(self) -> None:
        delays = (self.model.max_delay_a, self.model.max_delay_b)
        self._steer("max_delay", delays, lambda live: live.set_max_delay(delays))

    @param.depends("model.watermark", watch=True)
    def _steer_watermark(self) -> None:
        extra = self.model.watermark
        self._steer("watermark", extra, lambda live: live.set_watermark(extra))

    @param.depends("model.trigger_seconds", watch=True)
    def _steer_trigger(self) -> None:
        seconds = self.model.trigger_seconds
        self._steer("trigger", seconds, lambda live: live.set_trigger(seconds))

    def _steer(self, name: str, value: object, change: Callable[[LiveJoin], str]) -> None:
        """Apply ``change`` to the running LiveJoin in the worker (after a restart in flight);
        its message shows in the page."""
        if self.state not in ("starting", "running"):
            return  # read at the next Start
        self.message = f"Applying {name} = {value}..."
        self.job.submit(partial(self.job.steer, change), self._steered)

    @param.depends("model.speed", "model.paused", watch=True)
    def _steer_replay(self) -> None:
        session, speed, paused = self.job, self.model.speed, self.model.paused
        if self.state == "starting":
            session.submit(partial(session.pace, speed, paused), self._paced)
        elif self.state == "running":
            self._paced(session.pace(speed, paused))  # cheap: at once

    @param.depends(
        "model.source",
        "model.readings_path",
        "model.csv_file",
        "model.csv_time",
        "model.csv_sensor",
        "model.csv_time_unit",
        watch=True,
    )
    def _new_data(self) -> None:
        """New data chosen: read a CSV (served: in a thread, so the server's event loop serves
        the other sessions meanwhile), then :meth:`_data_read`."""
        self._data_choices += 1
        choice, read = self._data_choices, self.model.csv_read()
        doc = pn.state.curdoc
        if read is not None and doc is not None and doc.session_context is not None:
            pn.state.execute(partial(self._read_off_loop, choice, read))
        else:
            self._data_read(choice, read() if read is not None else None)

    async def _read_off_loop(self, choice: int, read: Callable[[], object]) -> None:
        self._data_read(choice, await asyncio.to_thread(read))

    def _data_read(self, choice: int, read: ReplayedStreams | str | None) -> None:
        """A data choice's read into the settings, unless a newer choice superseded it; a
        running join restarts on the new data."""
        if choice != self._data_choices:
            return
        m = self.model
        m.show_csv(read)
        if self.state != "running":
            return
        if m.source == "CSV file" and (not m.csv_file or m.csv_alert == "danger"):
            self.message = "The run goes on with its data until a usable CSV file is chosen."
            return
        self.param.update(
            state="starting", message="the data changed: the live join restarts on the new data"
        )
        self._stage_since = time.monotonic()
        settings = m.settings()
        self.job.submit(partial(self.job.restart, settings), partial(self._started, settings))
