"""A running streaming timing join that can be steered while it runs (PTJoin Section 3,
Theorem 2; the interval correlations, interval timing paper Algorithms 1-7).

The join runs by time ranges inside Spark's stateful tasks
(:mod:`workbench.spark.queries.live_ranges`): per range, the workbench's own operator (PTJoin, or an
interval correlation over one-bucket templates) over the range's events kept in Spark's state
store, the band that of an envelope window ``d_max`` (Eq. 4-5).
**One query** reads the replay: the pairs and the rejected records (malformed, unknown stream
or template, late; :func:`~workbench.spark.queries.source.reject_record`) are one stream, so the
files are listed, read and parsed once per micro-batch, and scanned once: the rejected records
ride through the range step in a group of their own and come out as rejects.

**No driver in the data path.**  The tasks decide the pairs under the *current* ``(d,
delta)`` (the run's ``params.json``); each micro-batch goes through a ``foreachBatch`` step
(:class:`BatchWriter`) that writes it with Spark's own distributed Parquet writer into the
folder ``batch=<id>`` of the run's sink, which it empties first: a re-run of a batch id
replaces exactly that batch's output, so with the checkpoint a restarted query loses and
duplicates nothing.  The driver sees only the batch's counts (an ``Observation``); per batch
it writes a small record (``batches/<id>.json``).

Because the step reads its parameters from the run folder and writes its records there, it
needs nothing of the client's memory: over Spark Connect it runs in the server's Python
(``foreachBatch`` functions do) and the LiveJoin steers it the same way.

Steering, and what each change costs:

- delta, d within ``d_max``, or the algorithm: applied from the next micro-batch, no restart,
  state kept;
- the trigger interval (pacing): restart **from the same checkpoint** (nothing recomputed);
- d above ``d_max``, a stream's max delay D or the watermark: the join's band, on-time
  filter or state eviction changes, which a checkpoint's state cannot be reused for,
  so the query restarts on a **new checkpoint** (a new run folder) and re-reads the replay.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from workbench.events import COLUMNS
from workbench.operators.base import StreamSpec
from workbench.spark.metrics import ProgressLog, attach_progress, detach_progress
from workbench.spark.queries.damage import Damage, diagnose
from workbench.spark.queries.live_params import LiveParams, write_params
from workbench.spark.queries.live_ranges import live_pairs, rocksdb_state
from workbench.spark.queries.live_sink import (
    BatchWriter,
    latest_pairs,
    read_live_pairs,
    read_live_rejects,
)
from workbench.spark.queries.ranges import band_reach
from workbench.spark.queries.source import (
    event_time,
    read_events,
    reject_record,
    stop_query,
)
from workbench.spark.session import ui_url

__all__ = [
    "BatchWriter",
    "LiveJoin",
    "live_stream",
    "read_live_pairs",
]


def live_stream(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    run_dir: str | os.PathLike[str],
    d_max: float,
    max_files_per_trigger: int | None = None,
    extra_watermark_ms: float = 0.0,
) -> DataFrame:
    """The live query's one stream: the pairs decided per time range
    (``kind = "pair"``, :func:`~workbench.spark.queries.live_ranges.live_pairs`, steered by
    ``run_dir``'s parameters) and the rejected records (``kind = "reject"``), with the other
    kind's columns null.  The watermark trails the newest detection by D + the band, the
    least that never cuts an on-time event (Theorem 4), plus ``extra_watermark_ms``."""
    _, classified = read_events(
        spark, source_dir, streams, d_max, max_files_per_trigger, extra_watermark_ms
    )
    delay = max(s.max_delay for s in streams) + band_reach(streams, d_max).band
    slack = f"{math.ceil(delay + extra_watermark_ms)} milliseconds"
    accepted, rejected = F.col("reason").isNull(), F.col("reason").isNotNull()
    rows = classified.select(
        *COLUMNS,
        F.when(accepted, event_time("t_det")).alias("ts"),
        "reason",
        F.when(rejected, reject_record(classified)).alias("record"),
    )
    return live_pairs(rows.withWatermark("ts", slack), run_dir, streams, d_max)


class LiveJoin:
    """The streaming timing join over a replay folder, steerable while it runs (module
    docstring); ``algorithm`` is one of :data:`~workbench.operators.TIMING_JOINS` (an interval
    correlation needs one-bucket templates).

    ``work_dir`` holds one folder per run (checkpoints, pairs, rejects); constructing a
    LiveJoin on a folder with runs resumes the latest one from its checkpoint.
    ``available_now`` processes what is there and stops (tests); otherwise a processing-time
    trigger every ``trigger_seconds``.  The query is named ``<name>-run<k>``; Spark runs one
    active query per name, so live joins that run side by side in one session need different
    names.
    """

    def __init__(
        self,
        spark: SparkSession,
        source_dir: str | os.PathLike[str],
        streams: tuple[StreamSpec, StreamSpec],
        d: float,
        delta: float,
        work_dir: str | os.PathLike[str],
        d_max: float | None = None,
        trigger_seconds: float = 1.0,
        max_files_per_trigger: int | None = None,
        available_now: bool = False,
        name: str = "ptjoin",
        extra_watermark_ms: float = 0.0,
        algorithm: str = "ptjoin",
    ) -> None:
        self.spark = spark
        self.name = name
        self.source_dir = str(source_dir)
        self.params = LiveParams(
            d=d,
            delta=delta,
            d_max=d if d_max is None else d_max,
            max_delay=(streams[0].max_delay, streams[1].max_delay),
            trigger_seconds=trigger_seconds,
            extra_watermark_ms=extra_watermark_ms,
            algorithm=algorithm,
        )
        self.params.check(streams)
        self._streams = streams
        self.work_dir = Path(work_dir)
        self.max_files_per_trigger = max_files_per_trigger
        self.available_now = available_now
        runs = sorted(self.work_dir.glob("run-*"))
        self.run = int(runs[-1].name.split("-")[1]) if runs else 1
        self.progress: ProgressLog | None = None
        self._records: dict[str, dict[str, object]] = {}
        self._query: StreamingQuery | None = None
        self._catch_up: tuple[StreamingQuery, threading.Event] | None = None

    @property
    def streams(self) -> tuple[StreamSpec, StreamSpec]:
        """The stream specs with the current max delays."""
        return tuple(  # type: ignore[return-value]
            replace(s, max_delay=D)
            for s, D in zip(self._streams, self.params.max_delay, strict=True)
        )

    @property
    def run_dir(self) -> Path:
        """The current run's folder (checkpoints, pairs, rejects)."""
        return self.work_dir / f"run-{self.run:03d}"

    @property
    def query_name(self) -> str:
        """The join query's name in Spark's progress (changes with each new run)."""
        return f"{self.name}-run{self.run}"

    @property
    def query_id(self) -> str | None:
        """The running join query's id (it survives restarts from the same checkpoint)."""
        return self._query.id if self._query is not None else None

    @property
    def ui_url(self) -> str | None:
        """The Spark UI of the session the join runs on (None over Spark Connect)."""
        return ui_url(self.spark)

    @property
    def query(self) -> StreamingQuery | None:
        """The running join query (None when stopped)."""
        return self._query

    @property
    def active(self) -> bool:
        """Whether the join query is running."""
        return self._query is not None and self._query.isActive

    @property
    def error(self) -> str | None:
        """Why the join query failed, if it did (None while it runs, or after :meth:`stop`)."""
        exc = self._query.exception() if self._query is not None else None
        return None if exc is None else str(exc)

    @property
    def batches(self) -> list[dict[str, object]]:
        """The current run's committed micro-batches, in order: id, commit time, pairs,
        rejects and the parameters it ran with (read from the run's batch records)."""
        folder = self.run_dir / "batches"
        names = sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []
        for name in names:
            if name not in self._records:
                self._records[name] = json.loads((folder / name).read_text())
        return [self._records[name] for name in names]

    def start(self) -> None:
        """Start the run's query (one query: pairs and rejects)."""
        if self.active:
            raise RuntimeError("the live join is already running")
        if self.progress is None:
            self.progress = attach_progress(self.spark)
        stream = live_stream(
            self.spark,
            self.source_dir,
            self.streams,
            self.run_dir,
            self.params.d_max,
            max_files_per_trigger=self.max_files_per_trigger,
            extra_watermark_ms=self.params.extra_watermark_ms,
        )
        write_params(self.run_dir, self.params)
        self._records = {}
        writer = (
            stream.writeStream.foreachBatch(BatchWriter(self.run_dir))
            .option("checkpointLocation", str(self.run_dir / "chk"))
            .queryName(self.query_name)
        )
        with rocksdb_state(self.spark):  # the range step's state API needs it
            self._query = self._trigger(writer).start()
        self.progress.watch(self._query.id)

    def _trigger(self, writer: DataStreamWriter) -> DataStreamWriter:
        if self.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{self.params.trigger_seconds} seconds")

    def _set(self, params: LiveParams) -> None:
        """Take new parameters; the running batch step reads them from the next batch."""
        self.params = params
        if self.run_dir.exists():
            write_params(self.run_dir, params)

    def wait_until_idle(self, timeout: float = 120.0) -> None:
        """Block until a micro-batch that started after this call found no new input."""
        query = self._query
        if query is None:
            raise RuntimeError("the live join is not running")
        last = query.lastProgress
        after = last["batchId"] if last else -1
        deadline = time.monotonic() + timeout
        while True:
            p = query.lastProgress
            if p and p["batchId"] > after and p["numInputRows"] == 0:
                return
            if not query.isActive:
                raise RuntimeError(f"the join query stopped: {query.exception()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the join query was not idle within {timeout:g} s")
            time.sleep(0.1)

    def caught_up(self) -> bool:
        """Whether the join query has committed everything in the replay folder: call it once
        the replay has written its last file, then poll.  The first call for a query starts the
        wait (Spark's ``processAllAvailable`` in a thread of its own: it returns once a trigger
        finds no new input), later calls report it; a restarted query waits anew."""
        query = self._query
        if query is None:
            return False
        if self._catch_up is None or self._catch_up[0] is not query:
            done = threading.Event()

            def wait() -> None:
                try:
                    query.processAllAvailable()
                except Exception:  # the query failed: active and error report it
                    return
                if query.isActive:  # not stopped while waiting
                    done.set()

            threading.Thread(target=wait, name=f"{self.query_name}-caught-up", daemon=True).start()
            self._catch_up = (query, done)
        return self._catch_up[1].is_set()

    def await_termination(self, timeout: float | None = None) -> None:
        """Wait for the query (``available_now`` runs end by themselves)."""
        if self._query is not None:
            self._query.awaitTermination(timeout)

    def stop(self) -> None:
        """Stop the query (the checkpoint keeps its progress)."""
        if self._query is not None:
            stop_query(self.spark, self._query)
        self._query = None

    def close(self) -> None:
        """Stop and detach the progress listener."""
        self.stop()
        if self.progress is not None:
            detach_progress(self.spark, self.progress)
            self.progress = None

    def set_delta(self, delta: float) -> str:
        """Apply a new threshold from the next micro-batch; say so."""
        self._set(replace(self.params, delta=delta))
        return f"delta = {delta:g} applies from the next micro-batch; join state kept, no restart"

    def set_d(self, d: float) -> str:
        """Apply a new window: live within d_max, else restart on a new checkpoint; say which."""
        if d <= self.params.d_max:
            self._set(replace(self.params, d=d))
            return (
                f"d = {d:g} ms is within the join state's envelope d_max = "
                f"{self.params.d_max:g} ms: applies from the next micro-batch, no restart"
            )
        return self._restart_new(
            replace(self.params, d=d, d_max=d),
            f"d = {d:g} ms exceeds the join state's envelope d_max = {self.params.d_max:g} ms",
        )

    def set_algorithm(self, algorithm: str) -> str:
        """Run ``algorithm`` from the next micro-batch (the same pairs, found another way)."""
        params = replace(self.params, algorithm=algorithm)
        params.check(self._streams)
        self._set(params)
        return (
            f"{algorithm} decides the pairs from the next micro-batch; join state kept, no "
            "restart (every timing join decides the same pairs)"
        )

    def set_max_delay(self, max_delay: tuple[float, float]) -> str:
        """A new max delay D per stream changes what is on time: restart on a new checkpoint."""
        return self._restart_new(
            replace(self.params, max_delay=tuple(float(x) for x in max_delay)),
            f"max delay D = {max_delay} changes which events are on time (Definition 6)",
        )

    def set_watermark(self, extra_ms: float) -> str:
        """Delay the watermark ``extra_ms`` beyond the least exact one: restart on a new
        checkpoint (the join's state eviction changes)."""
        return self._restart_new(
            replace(self.params, extra_watermark_ms=float(extra_ms)),
            f"a watermark {extra_ms:g} ms later than D + the band changes the join's state "
            "eviction",
        )

    def set_trigger(self, seconds: float) -> str:
        """A new trigger interval: restart from the same checkpoint (nothing recomputed)."""
        running = self.active
        self.stop()
        self._set(replace(self.params, trigger_seconds=seconds))
        if running:
            self.start()
        return (
            f"trigger every {seconds:g} s: restarted from its checkpoint (run {self.run}); "
            "state and results kept"
        )

    @property
    def damage(self) -> Damage | None:
        """What damaged state stopped the query, if that is what did (:mod:`~workbench.spark.
        queries.damage`)."""
        return diagnose(self.error, self.work_dir)

    def recover(self) -> str:
        """Restart a query stopped by damaged state on a new checkpoint (a new run folder): it
        re-reads the replay from its start, so the new run has each pair once; say so."""
        damage = self.damage
        if damage is None:
            raise RuntimeError("the live join is not stopped by damaged state: nothing to recover")
        self.stop()
        self.run += 1
        self.start()
        return (
            f"{damage.message} Restarted on a new checkpoint (run {self.run}): the query "
            "re-reads the replay from its start"
        )

    def _restart_new(self, params: LiveParams, why: str) -> str:
        running = self.active
        self.stop()
        self.params = params
        self.run += 1
        if running:
            self.start()
        return (
            f"{why}: the join state cannot be reused, so the query restarted on a new checkpoint "
            f"(run {self.run}) and re-reads the replay from its start"
        )

    def pairs(self) -> pd.DataFrame:
        """Every pair committed by the current run (columns: candidate columns, d, delta)."""
        return read_live_pairs(self.run_dir)

    def latest(self, n: int = 20) -> pd.DataFrame:
        """The last ``n`` pairs written, with their exact probability (:func:`~workbench.spark.
        queries.live_sink.latest_pairs`)."""
        return latest_pairs(self.run_dir, self.batches, self._streams, n)

    def rejects(self) -> pd.Series:
        """Rejected records of the current run, counted by reason."""
        frame = read_live_rejects(self.run_dir)
        return (
            frame.groupby("reason").size().rename("records")
            if len(frame)
            else pd.Series(dtype=np.int64, name="records")
        )
