"""The live Spark join tab: the streaming PTJoin (:class:`workbench.spark.live.LiveJoin`,
PTJoin Section 3) over a replayed data set, started, paused, steered and stopped from the page.

The page lays out the controls and figures and binds them to a
:class:`~workbench.spark.job.LiveSession`, which runs the replay and the LiveJoin.  Spark work
never runs on the server thread: starting (the JVM, the data, the queries), steering that may
restart a query, stopping and collecting the figures go to the session's worker thread in the
order asked; a periodic callback on the server thread moves what finished into the page
(``Buffer``/``Pipe`` streams, the pairs table, the message).  A new delta is a lock and a
dataclass swap inside the LiveJoin, so it applies at once unless a restart is in flight (then
it queues behind it).  Nothing here imports pyspark before Start (the session's module loads
it): the page loads without Java and says why Spark could not start; any Spark failure stops
the run, shows its message and leaves the page usable.

A run ends by itself once the replay is joined: the state becomes ``finished``, the queries stop
and Start is offered again.  The window d follows the data: its default and range come from the
learned templates (d >= max(pi) for the fast path, PTJoin Theorem 2) when a CSV is chosen, and
at Start for every source, unless the user set d.
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
from holoviews.streams import Buffer, Pipe

from workbench.app.live_settings import LiveJoinSettings
from workbench.app.panes import ReadTable, intro, plot
from workbench.viz.live import (
    METRIC_COLUMNS,
    PAIR_TABLE_COLUMNS,
    empty_metrics,
    live_charts,
    pair_table,
    reject_counts,
)

if TYPE_CHECKING:
    from workbench.data.streams import ReplayedStreams
    from workbench.spark.job import LiveSession, RunSettings, Snapshot, Started, Steered
    from workbench.spark.live import LiveJoin

__all__ = ["LiveJoinExplorer"]

STATES = ("stopped", "starting", "running", "paused", "stopping", "finished")
POLL_MS = 1000
"""Period of the callback moving finished work into the page."""
HISTORY = 900
"""Micro-batches kept in the live charts."""
INTRO = (
    "Replay a data set as two event streams into the streaming PTJoin on Spark and watch it "
    "join live: the charts follow each micro-batch, the table shows the latest pairs. Press "
    "**Start** (Spark starts with the server; until it is up, Start waits), then move *confidence "
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
PAIRS_KEY = (
    "**latest joined pairs**: the two events, when each was detected (h:mm:ss into the "
    "replay), the window d and confidence delta the pair was decided under, and P, the exact "
    "probability that the two events occurred at most d apart."
)


ADVICE = {
    "full": " If the disk is still full, free space on it or choose another work folder "
    "(WORKBENCH_WORK_DIR).",
    "read-only": " If the work folder itself cannot be written, choose another one "
    "(WORKBENCH_WORK_DIR).",
}
"""What to do first, by the kind of damage."""


class LiveJoinExplorer(LiveJoinSettings, pn.viewable.Viewer):
    """Start, pause, steer and stop the streaming PTJoin on Spark; watch it live."""

    state = param.Selector(objects=list(STATES), default="stopped", doc="Where the run is.")
    message = param.String("", doc="What the last action did, or why it failed.")
    failed = param.Boolean(False, doc="Whether the message reports a failure.")
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

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._session: LiveSession | None = None
        self._data_choices = 0  # counts data changes: only the newest one's read is shown
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        self._stage_since = time.monotonic()  # when the start being shown began
        self._shown_run = 0
        self._sent = 0
        self.metrics = Buffer(empty_metrics(), length=HISTORY, index=False)
        self.reject_pipe = Pipe(data=reject_counts(pd.Series(dtype="int64"), 0))
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
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(self._session_destroyed)

    @property
    def session(self) -> LiveSession | None:
        """What runs the replay and the LiveJoin in its worker thread
        (:class:`workbench.spark.job.LiveSession`): made at the first Start, None before."""
        return self._session

    # -- actions (server thread) -----------------------------------------------------------

    def start(self, *_: object) -> None:
        """Start the live join on the chosen data (in the worker thread)."""
        if self.state not in ("stopped", "finished"):
            return
        if self._session is None:
            from workbench.spark.job import LiveSession  # pyspark loads here, not with the page

            self._session = LiveSession(on_failure=self._failed)
        self.param.update(state="starting", failed=False, damaged=False)
        self.metrics.clear()
        self._shown_run, self._sent = 0, 0
        self._stage_since = time.monotonic()
        self.run_d = self.d
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.poll, period=POLL_MS)
        settings = self.settings()
        # said at once: a start on a warm Spark may end before the next poll
        self._show_stage(self._session.launch(settings, partial(self._started, settings)))

    def stop(self, *_: object) -> None:
        """Stop the queries and the replay (in the worker thread)."""
        if self.state not in ("running", "paused"):
            return
        self.param.update(state="stopping", message="Stopping...", failed=False)
        self._session.submit(self._session.stop, self._stopped)

    def poll(self) -> None:
        """Move finished work into the page, and ask for the next snapshot while running."""
        if self._session is None:
            return
        self._session.poll()
        if self.state == "starting" and self._session.stage:
            self._show_stage(self._session.stage)
        if self.state in ("running", "paused"):
            self._session.collect(self._show)

    def _show_stage(self, stage: str) -> None:
        """Say what a start is doing (``stage``), and for how long."""
        seconds = time.monotonic() - self._stage_since
        self.message = f"{stage}... ({seconds:.0f} s since Start)"

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until the queued work has finished, then :meth:`poll` (scripts and tests;
        never on the server thread)."""
        if self._session is not None:
            self._session.settle(timeout)
        self.poll()

    def close(self, wait: bool = False) -> None:
        """Stop the callback, then everything Spark (in the worker thread; ``wait`` for it).
        Called when the browser session ends."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        if self._session is not None:
            self._session.close(wait)

    def _session_destroyed(self, _context: object) -> None:
        self.close()

    # -- what finished (server thread, from the session's poll) ----------------------------

    def _failed(self, exc: Exception) -> None:
        """Any failure: the run is stopped; say why (its first line), the page stays up.
        Damaged state (:mod:`workbench.spark.damage`) is said in plain words, with the offer
        to restart on a new checkpoint."""
        from workbench.spark.damage import DamagedRun  # a run had started: pyspark is loaded

        if isinstance(exc, DamagedRun):
            self.param.update(
                state="stopped",
                failed=True,
                damaged=True,
                message=f"{exc.damage.message} The run stopped. Restart on a new checkpoint: "
                "its query re-reads the replay from the start into a sink of its own, so no "
                "pair is repeated or lost." + ADVICE.get(exc.damage.kind, ""),
            )
            return
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        self.param.update(
            state="stopped",
            failed=True,
            message=f"The live join failed ({type(exc).__name__}: {text[:400]}); stopped. Fix "
            "the cause and press Start again.",
        )

    def _started(self, settings: RunSettings, started: Started) -> None:
        """A start's outcome into the page (the data's window for d first)."""
        self.use_window(started.window, settings.d, started.d)
        self.param.update(
            state="paused" if settings.paused else "running",
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
        self.param.update(state="stopped", message=message)

    def _steered(self, steered: Steered | None) -> None:
        if steered is not None:
            self.param.update(message=steered.message, run=steered.run)

    def _paced(self, paused: bool, message: str | None) -> None:
        if message is not None:
            self.param.update(state="paused" if paused else "running", message=message)

    def _show(self, snap: Snapshot) -> None:
        """A snapshot into the charts, the table and the counters; at the end, finish."""
        if snap.run != self._shown_run:
            self.metrics.clear()
            self._shown_run, self._sent = snap.run, 0
        if len(snap.metrics) > self._sent:
            self.metrics.send(snap.metrics.iloc[self._sent :][list(METRIC_COLUMNS)])
            self._sent = len(snap.metrics)
        self.reject_pipe.send(reject_counts(snap.rejects, snap.dropped))
        self.table.value = pair_table(snap.latest)
        self.param.update(
            run=snap.run, pairs=snap.pairs, replayed=snap.replayed, batches=snap.batches
        )
        if snap.finished:
            self.param.update(state="finished", failed=False, message=self._finished())
            self._session.submit(self._session.teardown)

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

    # -- steering (server thread; Spark work goes to the worker) ---------------------------

    @param.depends("delta", watch=True)
    def _steer_delta(self) -> None:
        session, delta = self._session, self.delta
        live = session.live if session is not None else None
        if live is not None and self.state in ("running", "paused") and not session.pending:
            self.param.update(message=live.set_delta(delta), failed=False)  # a lock, a swap
        else:  # starting, or a restart in flight: apply after it
            self._steer("delta", delta, lambda live: live.set_delta(delta))

    @param.depends("d", watch=True)
    def _steer_d(self) -> None:
        if self.d != self.run_d:
            self.run_d = self.d
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
        self._session.submit(partial(self._session.steer, change), self._steered)

    @param.depends("speed", "paused", watch=True)
    def _steer_replay(self) -> None:
        session, speed, paused = self._session, self.speed, self.paused
        if self.state == "starting":
            session.submit(partial(session.pace, speed, paused), partial(self._paced, paused))
        elif self.state in ("running", "paused"):
            self._paced(paused, session.pace(speed, paused))  # cheap: at once

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
        """New data chosen: read a CSV (served: in a thread, so the server's event loop serves
        the other sessions meanwhile), then :meth:`_data_read`."""
        self._data_choices += 1
        choice, read = self._data_choices, self.csv_read()
        doc = pn.state.curdoc
        if read is not None and doc is not None and doc.session_context is not None:
            pn.state.execute(partial(self._read_off_loop, choice, read))
        else:
            self._data_read(choice, read() if read is not None else None)

    async def _read_off_loop(self, choice: int, read: Callable[[], object]) -> None:
        self._data_read(choice, await asyncio.to_thread(read))

    def _data_read(self, choice: int, read: ReplayedStreams | str | None) -> None:
        """A data choice's read into the page, unless a newer choice superseded it; a running
        join restarts on the new data."""
        if choice != self._data_choices:
            return
        self.show_csv(read)
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
        settings = self.settings()
        self._session.submit(
            partial(self._session.restart, settings), partial(self._started, settings)
        )

    # -- the page ----------------------------------------------------------------------------

    @param.depends("state", "message", "failed")
    def status(self) -> pn.pane.Alert:
        """The last action's outcome, or the failure."""
        kind = {"stopped": "light", "finished": "success"}.get(self.state, "info")
        text = self.message or "Stopped. Start replays the data into the streaming PTJoin."
        return pn.pane.Alert(
            text, alert_type="danger" if self.failed else kind, css_classes=["live-status"]
        )

    @param.depends("state", "run", "pairs", "replayed", "events", "batches", "spark_ui")
    def readout(self) -> pn.pane.Markdown:
        """State, run, results and replay progress; the Spark UI's link once Spark runs."""
        ui = f" · [Spark UI]({self.spark_ui}) (this machine only)" if self.spark_ui else ""
        return pn.pane.Markdown(
            f"**{self.state}** · run {self.run} · **{self.pairs:,} pairs joined** · "
            f"{self.replayed:,} of {self.events:,} events replayed · "
            f"{self.batches:,} micro-batches committed{ui}",
            css_classes=["live-readout"],
        )

    def charts(self) -> pn.GridBox:
        """The live charts (:func:`workbench.viz.live.live_charts`), three to a row."""
        return pn.GridBox(
            *(
                plot(v, sizing_mode="stretch_width", height=220)
                for v in live_charts(self.metrics, self.reject_pipe)
            ),
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
        recover = w.Button(
            label="Restart on a new checkpoint",
            color="danger",
            visible=self.param.damaged,
            sizing_mode="stretch_width",
        )
        recover.on_click(self.start)
        controls = pn.Column(
            pn.Row(start, pause, stop, **wide), recover, *self.widgets(), width=300
        )
        view = pn.Column(
            self.status,
            self.readout,
            self.charts(),
            pn.pane.Markdown(CHART_KEY, css_classes=["live-chart-key"], **wide),
            pn.pane.Markdown(PAIRS_KEY, **wide),
            self.table,
            **wide,
        )
        return pn.Column(intro(INTRO, "Live join"), pn.Row(controls, view, **wide), **wide)
