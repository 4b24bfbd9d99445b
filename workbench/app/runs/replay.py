"""What every dashboard run on Spark shares (the Live join's :mod:`workbench.app.runs.live`,
the Coalescing tab's :mod:`workbench.app.runs.coalesce`, the Multi-way join's
:mod:`workbench.app.runs.wjoin`): a data set's records replayed as JSON-lines files into a
temporary folder (:class:`~workbench.data.replay.Replayer`, paced in a thread of its own), a
Spark run slot (:mod:`workbench.app.runs.slots`), one worker thread
(:class:`~workbench.app.runs.worker.Worker`) that runs every Spark call, so the Bokeh server
thread never waits on Spark, and snapshots (:class:`Snapshot`) that name the (re)start they
show.  A tab's run reads the replay with one streaming query whose progress it listens to
(:func:`~workbench.spark.metrics.attach_progress`); the live join's
:class:`~workbench.spark.queries.live.LiveJoin` runs its own queries and listener.

**What the query has read.**  The replay writes the records, in arrival order, as files of
consecutive records that the file source reads whole and in order, so the rows a query has
read (the sum of its micro-batches' ``numInputRows``) are always a prefix of the records: the
in-process operator fed that prefix is the view to compare with (the oracle).  A micro-batch's
progress is reported after its output is committed, so the output of the last reported batch
is on disk when its progress is read.

The session is a parameter (a factory, called in the worker): the dashboard passes none and
gets :func:`~workbench.spark.session.shared_session`; tests pass their own session's.  This
module loads pyspark: the tabs import it when "run on Spark" is chosen.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workbench.app.runs.slots import spark_slots
from workbench.app.runs.worker import Worker
from workbench.config import run_folder
from workbench.data.replay import Replayer
from workbench.spark.metrics import ProgressLog, attach_progress, detach_progress
from workbench.spark.queries.source import stop_query
from workbench.spark.session import SessionFactory

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "FILES_PER_SECOND",
    "METRICS",
    "ReplayJob",
    "Snapshot",
    "read_prefix",
    "replay_pace",
]

FILES_PER_SECOND = 2.0
"""Replay files per second of wall time (each becomes part of a micro-batch)."""
FAST_FILES = 10
"""Files of a replay that runs as fast as possible (tests)."""
METRICS = ("elapsed_s", "batch", "input_rows", "batch_ms", "input_rows_per_s", "checkpoint")
"""Per micro-batch figures of a tab's run (time in seconds since its start)."""


@dataclass(frozen=True)
class Snapshot:
    """What a run looked like (:meth:`ReplayJob.snapshot`); each run adds its own figures."""

    generation: int
    """The (re)start it shows (:attr:`ReplayJob.generation`): one of an earlier is not shown."""
    replayed: int
    """Records the replay had written."""
    total: int
    """Records in the replay."""
    metrics: pd.DataFrame
    """One row per micro-batch of the run."""


def replay_pace(arrival: np.ndarray, rate: float | None) -> tuple[float | None, float]:
    """The :class:`~workbench.data.replay.Replayer` ``(speed, batch_ms)`` that writes about
    ``rate`` records per second of wall time in :data:`FILES_PER_SECOND` files a second
    (``rate`` None: as fast as possible, in :data:`FAST_FILES` files).  Arrival times in ms.

    >>> replay_pace(np.arange(0.0, 1000.0, 10.0), 300.0)   # 10 ms apart, 300 a second
    (3.0, 1500.0)
    >>> replay_pace(np.arange(0.0, 1000.0, 10.0), None)
    (None, 99.0)
    """
    span = float(arrival[-1] - arrival[0]) if len(arrival) > 1 else 0.0
    if rate is None:
        return None, max(span / FAST_FILES, 1.0)
    if not rate > 0:
        raise ValueError(f"rate = {rate!r} must be positive (records per second)")
    gap = span / (len(arrival) - 1) if span > 0 else 1.0
    speed = rate * gap / 1000.0
    return speed, 1000.0 * speed / FILES_PER_SECOND


def read_prefix(progress: pd.DataFrame, query: str) -> tuple[int, int | None]:
    """``(rows, batch)``: how many rows the query named ``query`` in the progress (all its runs
    on one checkpoint) has read by its last reported micro-batch, and that batch's id (None
    before the first).

    >>> p = pd.DataFrame({"query": ["q", "other", "q"], "batch": [0, 0, 1],
    ...                   "input_rows": [40, 7, 2]})
    >>> read_prefix(p, "q"), read_prefix(p, "none")
    ((42, 1), (0, None))
    """
    mine = progress[progress["query"] == query].drop_duplicates("batch", keep="last")
    if not len(mine):
        return 0, None
    return int(mine["input_rows"].sum()), int(mine["batch"].max())


class ReplayJob(Worker):
    """A data set's records replayed into a run on Spark, one run at a time (module
    docstring): a tab's one streaming query (:meth:`_listen`, :meth:`_started`), or the live
    join's LiveJoin (:class:`~workbench.app.runs.live.LiveSession`).

    Actions (:meth:`pace`, :meth:`teardown` and the subclasses' ``start``, ...) run on the
    calling thread; queue them with :meth:`~workbench.app.runs.worker.Worker.submit` to run them
    in the worker.  ``on_failure`` gets what made queued work fail (the run is then torn
    down).  ``session`` makes the SparkSession (None: the dashboard's shared session);
    ``work_root`` is where the run's temporary folder goes (None: the system's default).
    Its queries are named after ``name`` and a tag of the job's own (:attr:`query_name`): the
    session's progress listener sees every query, and Spark runs one active query per name.
    """

    def __init__(
        self,
        on_failure: Callable[[Exception], None],
        session: SessionFactory | None = None,
        work_root: str | None = None,
        name: str = "spark-tab",
    ) -> None:
        super().__init__(on_failure, name=name)
        self.session = session
        self.work_root = work_root
        self.name = name
        self.tag = f"{name}-{uuid.uuid4().hex[:8]}"
        """Names this job's queries (a job serves one browser session)."""
        self.generation = 0
        """Counts (re)starts: a snapshot of an earlier generation is not shown."""
        self.checkpoint = 0
        """The current checkpoint's number (a new checkpoint re-reads the replay)."""
        self.started_at = pd.Timestamp.now(tz="UTC")
        self.records: pd.DataFrame | None = None
        self.query: StreamingQuery | None = None
        self.progress: ProgressLog | None = None
        self.work: Path | None = None
        self.replayer: Replayer | None = None
        self._spark: SparkSession | None = None
        self._checkpoints: dict[str, int] = {}  # query name -> checkpoint number
        self._opened = 0  # runs started (each on a fresh progress listener)
        self.stage = ""
        """Why a start waits (empty when it does not)."""
        self.paused = False
        """Whether the replay is held (:meth:`pace`)."""

    @property
    def spark(self) -> SparkSession:
        """The run's session (made at the first use, in the worker)."""
        if self._spark is None:
            if self.session is None:
                from workbench.spark.session import shared_session

                self._spark = shared_session()
            else:
                self._spark = self.session()
        return self._spark

    @property
    def query_name(self) -> str:
        """The name of the current checkpoint's query (kept by a restart on the checkpoint);
        progress is filtered by it."""
        return f"{self.tag}-{self._opened}.{self.checkpoint}"

    @property
    def replay_dir(self) -> Path:
        """Where the replay writes its files."""
        if self.work is None:
            raise RuntimeError("no run is on: start one first")
        return self.work / "replay"

    def folder(self, what: str) -> str:
        """A folder of the current checkpoint (``out``, ``chk``)."""
        if self.work is None:
            raise RuntimeError("no run is on: start one first")
        return str(self.work / f"checkpoint-{self.checkpoint}" / what)

    @property
    def replayed(self) -> int:
        """Records the replay has written so far."""
        return self.replayer.written if self.replayer is not None else 0

    @property
    def total(self) -> int:
        """Records in the replay."""
        return len(self.records) if self.records is not None else 0

    # -- actions (on the calling thread) ------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a run is on (a tab's: its query started; the live join's: its LiveJoin)."""
        return self.query is not None

    def _open(self, records: pd.DataFrame, keep_clock: bool = False) -> None:
        """Tear down any earlier run, then take a Spark slot (:attr:`stage` says why a start
        waits for one) and make the run's folders: a new generation, time counting from now
        (from the first start: ``keep_clock``)."""
        self.teardown()
        self.records = records.reset_index(drop=True)
        if not keep_clock:
            self.started_at = pd.Timestamp.now(tz="UTC")
        self.generation += 1
        self._opened += 1
        self.checkpoint = 1
        self._checkpoints = {}
        spark_slots().acquire(self, self.closing, self._waiting_for_slot)
        self.stage = ""
        self.work = run_folder(f"workbench-{self.name}-", self.work_root)
        self.replay_dir.mkdir()

    def _listen(self) -> None:
        """Listen to the progress of the run's queries (before the first starts)."""
        self.progress = attach_progress(self.spark)

    def _replay_pace(self, rate: float | None) -> tuple[float | None, float]:
        """The replay's ``(speed, batch_ms)`` at ``rate`` (:func:`replay_pace`: records a
        second of wall time, None: as fast as possible)."""
        return replay_pace(self.records["arrival"].to_numpy(np.float64), rate)

    def _replay(self, rate: float | None, paused: bool) -> None:
        """Start replaying the records into :attr:`replay_dir` (a thread of its own) at
        ``rate`` (:meth:`_replay_pace`), held while ``paused``."""
        speed, batch_ms = self._replay_pace(rate)
        self.replayer = Replayer(self.records, self.replay_dir, batch_ms=batch_ms, speed=speed)
        self.paused = paused
        if paused:
            self.replayer.pause()
        self.replayer.start()

    def _started(self, query: StreamingQuery) -> None:
        """Note a started query (its name, :attr:`query_name`, names its progress) on the
        current checkpoint; its listener waits for its end when detached."""
        self.query = query
        self._checkpoints[query.name] = self.checkpoint
        if self.progress is not None:
            self.progress.watch(query.id)

    def _stop_query(self) -> None:
        query, self.query = self.query, None
        if query is not None:
            stop_query(self.spark, query)  # its tasks ended: the folder's removal holds

    def pace(self, rate: float | None, paused: bool) -> str | None:
        """Set the replay's rate (:meth:`_replay_pace`), hold or resume it, and say so
        (:meth:`_pace_words`); None when no run is on.  Cheap: call it on any thread."""
        replayer = self.replayer
        if replayer is None or self.records is None:
            return None
        replayer.speed, _ = self._replay_pace(rate)
        self.paused = paused
        if paused:
            replayer.pause()
        else:
            replayer.resume()
        return self._pace_words(rate, paused)

    def _pace_words(self, rate: float | None, paused: bool) -> str:
        """What :meth:`pace` says it did."""
        if paused:
            return "replay paused: the Spark query keeps running, idle"
        return "replay running" + (f" at about {rate:,.0f} records a second" if rate else "")

    def teardown(self) -> None:
        """Stop the replay and the query, detach the listener, remove the run's folder."""
        replayer, work, progress = self.replayer, self.work, self.progress
        self.replayer = self.work = self.progress = None
        try:
            if replayer is not None:
                replayer.stop()  # ends its pacing wait at once
                replayer.join()
            self._stop_query()
            if progress is not None and self._spark is not None:
                detach_progress(self._spark, progress)
        finally:
            spark_slots().release(self)
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)

    def _waiting_for_slot(self, used: int, limit: int) -> None:
        self.stage = (
            f"Waiting for a free Spark slot: {used} of {limit} runs on this server are going "
            "(WORKBENCH_SPARK_SLOTS); this run starts when one ends"
        )

    def cleanup(self) -> None:
        """After a failure, and at :meth:`close`: stop the run (:meth:`teardown`)."""
        self.stage = ""
        self.teardown()

    # -- reads (in the worker) ------------------------------------------------------------------

    def live_query(self) -> StreamingQuery:
        """The running query; a RuntimeError saying why when there is none or it failed."""
        query = self.query
        if query is None:
            raise RuntimeError("no Spark query is running")
        if not query.isActive:
            raise RuntimeError(f"the Spark query stopped: {query.exception() or 'no reason given'}")
        return query

    def metrics(self) -> pd.DataFrame:
        """One row per micro-batch of the run's queries (:data:`METRICS`), every checkpoint."""
        frame = self.progress.frame() if self.progress is not None else None
        if frame is None or not len(frame):
            return pd.DataFrame({c: pd.Series(dtype=np.float64) for c in METRICS})
        frame = frame[frame["query"].isin(list(self._checkpoints))]
        elapsed = pd.to_datetime(frame["timestamp"], utc=True) - self.started_at
        return pd.DataFrame(
            {
                "elapsed_s": elapsed.dt.total_seconds(),
                "batch": frame["batch"],
                "input_rows": frame["input_rows"],
                "batch_ms": frame["batch_ms"],
                "input_rows_per_s": frame["input_rows_per_s"],
                "checkpoint": frame["query"].map(self._checkpoints),
            }
        ).astype(np.float64)

    def read(self) -> tuple[int, int | None]:
        """``(rows, batch)`` the current query has read (:func:`read_prefix`)."""
        query = self.live_query()
        progress = self.progress.frame() if self.progress is not None else None
        if progress is None:
            return 0, None
        return read_prefix(progress, query.name)

    def caught_up(self, rows: int) -> bool:
        """Whether the replay has ended and the query has read all of it (``rows``)."""
        return self.replayer is not None and self.replayed == self.total == rows

    def collect(self, then: Callable[[Snapshot], None]) -> None:
        """Queue a ``snapshot`` as the worker's sample (not while actions are queued);
        :meth:`~workbench.app.runs.worker.Worker.poll` hands it to ``then`` unless the run
        restarted or stopped since."""
        if self.running and not self.sampling and not self.pending:
            self.sample(self.snapshot, partial(self._current, then))

    def snapshot(self) -> Snapshot:
        """What the run looks like now (the subclasses')."""
        raise NotImplementedError

    def _current(self, then: Callable[[Snapshot], None], snap: Snapshot) -> None:
        if snap.generation == self.generation and self.running:
            then(snap)
