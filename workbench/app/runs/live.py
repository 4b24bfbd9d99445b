"""One live join run from outside Spark: settings -> a replay feeding a :class:`LiveJoin`
(PTJoin Section 3), started, restarted, steered, paced and stopped; snapshots of its results,
metrics and rejects; the end of a run; one worker thread that does it all in the order asked.

Every action of a :class:`LiveSession` (:meth:`~LiveSession.start`, :meth:`~LiveSession.steer`,
:meth:`~LiveSession.pace`, ...) runs on the calling thread.  The session is a
:class:`~workbench.app.runs.replay.ReplayJob` (its replay, Spark slot, folder and generations
are every run's), so a :class:`~workbench.app.runs.worker.Worker`: :meth:`~LiveSession.submit`
queues an action for its worker thread instead and :meth:`~LiveSession.poll` hands the results
back on the polling thread (the dashboard's server thread, which Spark then never blocks).  A
failure of queued work stops the run (:meth:`~LiveSession.teardown`) and goes to
``on_failure``.

A run ends by itself: once the replay has written its last file and the join query has
committed everything in the folder (:meth:`LiveJoin.caught_up`), the snapshot says
``finished``.  With :attr:`RunSettings.auto_d` the window d follows the data: the default that
its learned templates suggest (d >= max(pi) for the fast path, PTJoin Theorem 2).

Each run's LiveJoin gets its own query name, so sessions run side by side on the process's one
Spark session.  This module loads pyspark: the dashboard imports it at its first Start.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.app.runs.replay import FILES_PER_SECOND, ReplayJob, Snapshot
from workbench.config import settings as workbench_settings
from workbench.data.streams import ReplayedStreams, WindowRange, load_streams, window_range
from workbench.operators import StreamSpec
from workbench.spark.metrics import batch_metrics, no_progress, watermark_drops
from workbench.spark.queries.damage import Damage, diagnose
from workbench.spark.queries.live import LiveJoin
from workbench.spark.session import shared_session

__all__ = [
    "DamagedRun",
    "LiveFactory",
    "LiveSession",
    "LiveSnapshot",
    "RunSettings",
    "Started",
    "Steered",
    "spark_live_join",
]

READING = "Reading the data and learning its timing templates"
"""What a start does first (:attr:`LiveSession.stage`)."""
REJECTS_EVERY = 3
"""Snapshots between two reads of the rejects sink (a Spark batch read)."""
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
class LiveSnapshot(Snapshot):
    """What a running live join looked like (its :attr:`metrics`: one row per micro-batch,
    :func:`~workbench.spark.metrics.batch_metrics`)."""

    live: LiveJoin
    run: int
    latest: pd.DataFrame
    """The latest pairs (:data:`PAIR_COLUMNS`)."""
    rejects: pd.Series
    """Rejected records by reason, as last read (every :data:`REJECTS_EVERY` snapshots)."""
    dropped: int
    """Rows the join state dropped behind the watermark."""
    pairs: int
    batches: int
    finished: bool
    """Whether the replay has ended and the join has committed all of it."""


class DamagedRun(RuntimeError):
    """A live run stopped by damaged state (:attr:`damage` says which:
    :func:`~workbench.spark.queries.damage.diagnose`)."""

    def __init__(self, damage: Damage) -> None:
        super().__init__(damage.message)
        self.damage = damage


def _no_rejects() -> pd.Series:
    return pd.Series(dtype=np.int64)


class LiveSession(ReplayJob):
    """One live join run at a time with its replay, steered from one other thread (module
    docstring); ``on_failure`` gets what made queued work fail.  Its replay is paced by speed
    (times real time), its LiveJoin runs its own queries, progress listener and checkpoints."""

    def __init__(self, on_failure: Callable[[Exception], None]) -> None:
        super().__init__(on_failure, name="live-join")
        self._snapshots = 0
        self._rejects = _no_rejects()
        self._live: LiveJoin | None = None

    @property
    def live(self) -> LiveJoin | None:
        """The running LiveJoin (None when stopped)."""
        return self._live

    @property
    def running(self) -> bool:
        """Whether a LiveJoin runs."""
        return self._live is not None

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
        self._snapshots, self._rejects = 0, _no_rejects()
        return self._launch(settings, keep_clock=False)

    def restart(self, settings: RunSettings) -> Started:
        """Stop the run, then start one on ``settings`` (time still counts from the start)."""
        return self._launch(settings, keep_clock=True)

    def _launch(self, settings: RunSettings, keep_clock: bool) -> Started:
        self.stage = READING
        streams = settings.streams()
        window = window_range(streams.templates)
        d = window.default if settings.auto_d else settings.d
        specs = tuple(
            StreamSpec(t, D) for t, D in zip(streams.templates, settings.max_delay, strict=True)
        )
        self.work_root = settings.work_root
        self._open(streams.events.to_frame(), keep_clock)
        self.stage = (
            "Waiting for Spark (it starts with the server: about half a minute)"
            if workbench_settings().spark_at_start
            else "Starting Spark (the server's first Spark run: about half a minute)"
        )
        self._live = (settings.live_factory or spark_live_join)(
            source_dir=self.replay_dir,
            streams=specs,
            d=d,
            delta=settings.delta,
            work_dir=self.work / "join",
            d_max=d * settings.d_max_factor,
            trigger_seconds=settings.trigger_seconds,
            name=f"ptjoin-{uuid.uuid4().hex[:8]}",  # one query name per session
            extra_watermark_ms=settings.extra_watermark_ms,
        )
        self.stage = "Starting the join queries"
        self._live.start()
        self.stage = ""
        self._replay(settings.speed, settings.paused)
        return self._started_words(settings, streams, window, d)

    def _started_words(
        self, settings: RunSettings, streams: ReplayedStreams, window: WindowRange, d: float
    ) -> Started:
        """What a start did, in the page's words."""
        n, speed = len(streams.events), settings.speed
        path = "the fast path" if d >= window.fast_from else "exact probabilities (d < max(pi))"
        chosen = (
            f"d = {d:,g} ms follows the data's widest timing template, max(pi) = "
            f"{math.ceil(window.fast_from):,} ms"
            if settings.auto_d
            else f"d = {d:,g} ms"
        )
        message = (
            f"Running: {n:,} events of {streams.source} replayed at {speed:g}x into the "
            f"streaming PTJoin on Spark ({chosen}, {path}; delta = {settings.delta:g}). The "
            "first pairs take a few seconds: Spark plans and compiles the join."
        )
        ui = getattr(self._live, "ui_url", None)
        return Started(window, d, n, self._live.run, streams.source, message, ui)

    def _replay_pace(self, rate: float | None) -> tuple[float | None, float]:
        """``rate`` is the replay's speed (times real time): :data:`FILES_PER_SECOND` files a
        second of wall time at the speed it starts with."""
        speed = float(rate) if rate is not None else 1.0
        return speed, speed * 1000.0 / FILES_PER_SECOND

    def _pace_words(self, rate: float | None, paused: bool) -> str:
        if paused:
            return f"replay paused (speed {rate:g}x): the query keeps running, idle"
        return f"replay running at {rate:g}x"

    def steer(self, change: Callable[[LiveJoin], str]) -> Steered | None:
        """Apply ``change`` (a :class:`LiveJoin` setter, e.g. ``lambda live: live.set_d(d)``)
        to the running LiveJoin; None when none runs."""
        if self._live is None:
            return None
        return Steered(change(self._live), self._live.run)

    def stop(self) -> str:
        """Stop the run (:meth:`teardown`) and say what it did."""
        pairs = self.pairs
        self.teardown()
        return f"Stopped after {pairs:,} pairs; Start replays the data from its start"

    def _stop_query(self) -> None:
        """Close the LiveJoin (its queries and listener)."""
        live, self._live = self._live, None
        if live is not None:
            live.close()

    def snapshot(self, with_rejects: bool | None = None) -> LiveSnapshot:
        """The run's figures; finished once the replay has ended and the join has committed
        all of it (checked first, so the figures include it all).  The rejects sink is read
        ``with_rejects`` (None: every :data:`REJECTS_EVERY` snapshots, the first included)
        and at the end."""
        live, replayer = self._live, self.replayer
        if live is None or replayer is None:
            raise RuntimeError("no live join is running")
        if not live.active:
            damage = diagnose(live.error, Path(live.work_dir))
            if damage is not None:
                raise DamagedRun(damage)
            raise RuntimeError(f"the join query stopped: {live.error or 'no reason given'}")
        if with_rejects is None:
            self._snapshots += 1
            with_rejects = self._snapshots % REJECTS_EVERY == 1
        finished = replayer.written == len(replayer.records) and live.caught_up()
        progress = live.progress.frame() if live.progress is not None else no_progress()
        metrics = batch_metrics(progress, list(live.batches), live.query_name, self.started_at)
        if with_rejects or finished:
            self._rejects = live.rejects()
        pairs = self.pairs  # counted before the files are read: a counted batch is on disk
        return LiveSnapshot(
            generation=self.generation,
            replayed=replayer.written,
            total=len(replayer.records),
            metrics=metrics,
            live=live,
            run=live.run,
            latest=live.latest(LATEST)[PAIR_COLUMNS],
            rejects=self._rejects,
            dropped=watermark_drops(progress, live.query_name),
            pairs=pairs,
            batches=len(live.batches),
            finished=finished,
        )
