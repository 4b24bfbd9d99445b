"""One live join run from outside Spark: settings -> a replay feeding a :class:`LiveJoin`
(PTJoin Section 3), started, restarted, steered, paced and stopped; snapshots of its results,
metrics and rejects; the end of a run; one worker thread that does it all in the order asked.

Every action of a :class:`LiveSession` (:meth:`~LiveSession.start`, :meth:`~LiveSession.steer`,
:meth:`~LiveSession.pace`, ...) runs on the calling thread; the session is a
:class:`~workbench.app.runs.worker.Worker`, so :meth:`~LiveSession.submit` queues one for its
worker thread instead and :meth:`~LiveSession.poll` hands the results back on the polling thread
(the dashboard's server thread, which Spark then never blocks).  A failure of queued work stops
the run (:meth:`~LiveSession.teardown`) and goes to ``on_failure``.

A run ends by itself: once the replay has written its last file and the join query has
committed everything in the folder (:meth:`LiveJoin.caught_up`), the snapshot says
``finished``.  With :attr:`RunSettings.auto_d` the window d follows the data: the default that
its learned templates suggest (d >= max(pi) for the fast path, PTJoin Theorem 2).

Each run's LiveJoin gets its own query name, so sessions run side by side on the process's one
Spark session.  This module loads pyspark: the dashboard imports it at its first Start.
"""

from __future__ import annotations

import math
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.app.runs.slots import spark_slots
from workbench.app.runs.worker import Worker
from workbench.config import run_folder
from workbench.config import settings as workbench_settings
from workbench.data.replay import Replayer
from workbench.data.streams import ReplayedStreams, WindowRange, load_streams, window_range
from workbench.operators import StreamSpec
from workbench.spark.damage import DamagedRun, diagnose
from workbench.spark.live import LiveJoin
from workbench.spark.metrics import batch_metrics, no_progress, watermark_drops
from workbench.spark.session import shared_session

__all__ = [
    "LiveFactory",
    "LiveSession",
    "RunSettings",
    "Snapshot",
    "Started",
    "Steered",
    "spark_live_join",
]

READING = "Reading the data and learning its timing templates"
"""What a start does first (:attr:`LiveSession.stage`)."""
REJECTS_EVERY = 3
"""Snapshots between two reads of the rejects sink (a Spark batch read)."""
FILES_PER_SECOND = 2.0
"""Replay files per second of wall time at the starting speed."""
LATEST = 15
"""Rows of the latest pairs in a snapshot."""
PAIR_COLUMNS = ["a_id", "b_id", "a_t", "b_t", "d", "delta", "probability"]
"""Columns of the latest pairs in a snapshot."""


def spark_live_join(
    *,
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
    """A LiveJoin on this process's shared Spark session
    (:func:`~workbench.spark.session.shared_session`)."""
    return LiveJoin(
        shared_session(),
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


LiveFactory = Callable[..., LiveJoin]
"""Makes the LiveJoin of a run, called with :func:`spark_live_join`'s keywords (tests pass a
fake)."""


@dataclass(frozen=True)
class RunSettings:
    """What a start runs with: the data (:func:`~workbench.data.streams.load_streams`'s
    choices), the join's settings (times in ms), the replay's pace, where the run goes."""

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
    d_max_factor: float
    """The join state covers windows up to this multiple of the starting d (changes within:
    live, beyond: a new checkpoint)."""
    auto_d: bool = False
    """Whether d is the page's derived default (then the data's templates choose it)."""
    work_root: str | None = None
    """Where the run's temporary folder goes (None: the system's default)."""
    live_factory: LiveFactory | None = None
    """Makes the LiveJoin (None: :func:`spark_live_join`)."""
    refusal: str = ""
    """Why the page refused the chosen data (a readings path outside the data folder): then
    loading it raises this message and nothing is opened."""

    def streams(self) -> ReplayedStreams:
        """The chosen data as two event streams (a ValueError: :attr:`refusal`, when set)."""
        if self.refusal:
            raise ValueError(self.refusal)
        return load_streams(
            self.source,
            self.readings_path,
            self.csv_file,
            self.csv_time,
            self.csv_sensor,
            self.csv_time_unit,
        )


@dataclass(frozen=True)
class Started:
    """What a start did: the data's window range, the d the run uses, its size and run."""

    window: WindowRange
    d: float
    events: int
    run: int
    source: str
    """The replayed data, in words."""
    message: str
    ui_url: str | None = None
    """The Spark UI's address (loopback), when the session has one."""


@dataclass(frozen=True)
class Steered:
    """What a steering change did, in the LiveJoin's words, and the run it left."""

    message: str
    run: int


@dataclass(frozen=True)
class Snapshot:
    """What a running live join looked like."""

    live: LiveJoin
    run: int
    metrics: pd.DataFrame
    """One row per micro-batch of the run (:func:`~workbench.spark.metrics.batch_metrics`)."""
    latest: pd.DataFrame
    """The latest pairs (:data:`PAIR_COLUMNS`)."""
    rejects: pd.Series
    """Rejected records by reason, as last read (every :data:`REJECTS_EVERY` snapshots)."""
    dropped: int
    """Rows the join state dropped behind the watermark."""
    pairs: int
    replayed: int
    batches: int
    finished: bool
    """Whether the replay has ended and the join has committed all of it."""


def _no_rejects() -> pd.Series:
    return pd.Series(dtype=np.int64)


class LiveSession(Worker):
    """One live join run at a time with its replay, steered from one other thread (module
    docstring); ``on_failure`` gets what made queued work fail."""

    def __init__(self, on_failure: Callable[[Exception], None]) -> None:
        super().__init__(on_failure, name="live-join")
        self.stage = ""
        """What a start is doing (empty when it is not)."""
        self.started_at = pd.Timestamp.now(tz="UTC")
        """When the run started: the metrics count time from it."""
        self._snapshots = 0
        self._rejects = _no_rejects()
        self._live: LiveJoin | None = None
        self._replayer: Replayer | None = None
        self._work: Path | None = None
        self._paused = False

    @property
    def live(self) -> LiveJoin | None:
        """The running LiveJoin (None when stopped)."""
        return self._live

    @property
    def replayer(self) -> Replayer | None:
        """The replay feeding it (None when stopped)."""
        return self._replayer

    @property
    def paused(self) -> bool:
        """Whether the replay is held (:meth:`pace`)."""
        return self._paused

    @property
    def pairs(self) -> int:
        """Pairs the current run has committed."""
        return int(sum(b["pairs"] for b in self._live.batches)) if self._live else 0

    # -- actions (on the calling thread) ------------------------------------------------------

    def launch(self, settings: RunSettings, then: Callable[[Started], None]) -> str:
        """Queue :meth:`start`, ``then`` getting what started, and return its first stage:
        a page can say what Start does before the worker has taken it up."""
        self.stage = READING
        self.submit(partial(self.start, settings), then)
        return READING

    def start(self, settings: RunSettings) -> Started:
        """Read the data, start its LiveJoin and the replay into it; time counts from now."""
        self.started_at = pd.Timestamp.now(tz="UTC")
        self._snapshots, self._rejects = 0, _no_rejects()
        return self._launch(settings)

    def restart(self, settings: RunSettings) -> Started:
        """Stop the run, then start one on ``settings`` (time still counts from the start)."""
        self.teardown()
        return self._launch(settings)

    def _launch(self, settings: RunSettings) -> Started:
        self.stage = READING
        streams = settings.streams()
        window = window_range(streams.templates)
        d = window.default if settings.auto_d else settings.d
        specs = tuple(
            StreamSpec(t, D) for t, D in zip(streams.templates, settings.max_delay, strict=True)
        )
        self._work = run_folder("workbench-live-", settings.work_root)
        replay = self._work / "replay"
        replay.mkdir()
        delta, speed = settings.delta, settings.speed
        spark_slots().acquire(self, self.closing, self._waiting_for_slot)
        self.stage = (
            "Waiting for Spark (it starts with the server: about half a minute)"
            if workbench_settings().spark_at_start
            else "Starting Spark (the server's first Spark run: about half a minute)"
        )
        self._live = (settings.live_factory or spark_live_join)(
            source_dir=replay,
            streams=specs,
            d=d,
            delta=delta,
            work_dir=self._work / "join",
            d_max=d * settings.d_max_factor,
            trigger_seconds=settings.trigger_seconds,
            name=f"ptjoin-{uuid.uuid4().hex[:8]}",  # one query name per session
            extra_watermark_ms=settings.extra_watermark_ms,
        )
        self.stage = "Starting the join queries"
        self._live.start()
        self.stage = ""
        self._replayer = Replayer(
            streams.events,
            replay,
            batch_ms=speed * 1000.0 / FILES_PER_SECOND,
            speed=speed,
        )
        self._paused = settings.paused
        if settings.paused:
            self._replayer.pause()
        self._replayer.start()
        n = len(streams.events)
        path = "the fast path" if d >= window.fast_from else "exact probabilities (d < max(pi))"
        chosen = (
            f"d = {d:,g} ms follows the data's widest timing template, max(pi) = "
            f"{math.ceil(window.fast_from):,} ms"
            if settings.auto_d
            else f"d = {d:,g} ms"
        )
        message = (
            f"Running: {n:,} events of {streams.source} replayed at {speed:g}x into the "
            f"streaming PTJoin on Spark ({chosen}, {path}; delta = {delta:g}). The first pairs "
            "take a few seconds: Spark plans and compiles the join."
        )
        ui = getattr(self._live, "ui_url", None)
        return Started(window, d, n, self._live.run, streams.source, message, ui)

    def steer(self, change: Callable[[LiveJoin], str]) -> Steered | None:
        """Apply ``change`` (a :class:`LiveJoin` setter, e.g. ``lambda live: live.set_d(d)``)
        to the running LiveJoin; None when none runs."""
        if self._live is None:
            return None
        return Steered(change(self._live), self._live.run)

    def pace(self, speed: float, paused: bool) -> str | None:
        """Set the replay's speed, hold or resume it, and say so; None when none runs."""
        if self._replayer is None:
            return None
        self._replayer.speed = speed
        self._paused = paused
        if paused:
            self._replayer.pause()
            return f"replay paused (speed {speed:g}x): the query keeps running, idle"
        self._replayer.resume()
        return f"replay running at {speed:g}x"

    def stop(self) -> str:
        """Stop the run (:meth:`teardown`) and say what it did."""
        pairs = self.pairs
        self.teardown()
        return f"Stopped after {pairs:,} pairs; Start replays the data from its start"

    def _waiting_for_slot(self, used: int, limit: int) -> None:
        self.stage = (
            f"Waiting for a free Spark slot: {used} of {limit} runs on this server are going "
            "(WORKBENCH_SPARK_SLOTS); this run starts when one ends"
        )

    def teardown(self) -> None:
        """Stop the replay and the queries, remove the run's folder (a finished run, too),
        free the run's Spark slot."""
        replayer, live, work = self._replayer, self._live, self._work
        self._replayer = self._live = self._work = None
        try:
            if replayer is not None:
                replayer.stop()  # ends its pacing wait at once
                replayer.join()
            if live is not None:
                live.close()
        finally:
            spark_slots().release(self)
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)

    def snapshot(self, with_rejects: bool) -> Snapshot:
        """The run's figures; finished once the replay has ended and the join has committed
        all of it (checked first, so the figures include it all).  The rejects sink is read
        ``with_rejects`` and at the end."""
        live, replayer = self._live, self._replayer
        if live is None or replayer is None:
            raise RuntimeError("no live join is running")
        if not live.active:
            damage = diagnose(live.error, Path(live.work_dir))
            if damage is not None:
                raise DamagedRun(damage)
            raise RuntimeError(f"the join query stopped: {live.error or 'no reason given'}")
        finished = replayer.written == len(replayer.records) and live.caught_up()
        progress = live.progress.frame() if live.progress is not None else no_progress()
        metrics = batch_metrics(progress, list(live.batches), live.query_name, self.started_at)
        if with_rejects or finished:
            self._rejects = live.rejects()
        pairs = self.pairs  # counted before the files are read: a counted batch is on disk
        return Snapshot(
            live,
            live.run,
            metrics,
            live.latest(LATEST)[PAIR_COLUMNS],
            self._rejects,
            watermark_drops(progress, live.query_name),
            pairs,
            replayer.written,
            len(live.batches),
            finished,
        )

    def cleanup(self) -> None:
        """After a failure, and at :meth:`close`: stop the run (:meth:`teardown`)."""
        self.stage = ""
        self.teardown()

    def collect(self, then: Callable[[Snapshot], None]) -> None:
        """Queue a :meth:`snapshot` as the worker's sample (not while actions are queued);
        :meth:`poll` hands it to ``then`` unless the run stopped or restarted since."""
        if not self.sampling and not self.pending:
            self._snapshots += 1
            read = partial(self.snapshot, self._snapshots % REJECTS_EVERY == 1)
            self.sample(read, partial(self._current, then))

    def _current(self, then: Callable[[Snapshot], None], snap: Snapshot) -> None:
        """``then(snap)`` unless ``snap`` was taken before a stop or a restart."""
        if snap.live is self._live:
            then(snap)
