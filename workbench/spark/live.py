"""A running streaming PTJoin that can be steered while it runs (PTJoin Section 3, Theorem 2).

The join state is the candidate band of :func:`workbench.spark.ptjoin.ptjoin_candidates`: it
covers the loose partitions (Eq. 4-5) of an envelope window ``d_max`` and depends on no
threshold.  Each micro-batch's candidates go through a ``foreachBatch`` step that applies the
*current* ``(d, delta)`` (:class:`~workbench.spark.ptjoin.Decider`) and writes the batch's pairs
to ``batch-<id>.parquet``, replacing any earlier attempt of that batch id: the step is
idempotent, so with the checkpoint a restarted query loses and duplicates nothing.

Steering, and what each change costs:

- delta, or d within ``d_max``: applied from the next micro-batch, no restart, state kept;
- the trigger interval (pacing): restart **from the same checkpoint** (nothing recomputed);
- d above ``d_max``, a stream's max delay D or the watermark: the join's range condition,
  on-time filter or state eviction changes, which a checkpoint's state cannot be reused for,
  so the query restarts on a **new checkpoint** (a new run folder) and re-reads the replay.

Rejected input (malformed, unknown stream or template, late) goes to a rejects sink of its own
query; :meth:`LiveJoin.rejects` counts it by reason.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from workbench.operators.base import StreamSpec
from workbench.probability import band_prob_many
from workbench.spark.metrics import ProgressLog, attach_progress
from workbench.spark.ptjoin import CANDIDATE_COLUMNS, Decider, ptjoin_candidates
from workbench.spark.source import read_rejects, rejects_query

__all__ = ["LiveJoin", "LiveParams", "read_live_pairs"]

PAIR_COLUMNS = [*CANDIDATE_COLUMNS, "d", "delta"]


def read_live_pairs(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The pairs a live run wrote (one file per micro-batch), whether or not it still runs."""
    files = sorted((Path(run_dir) / "pairs").glob("batch-*.parquet"))
    if not files:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


@dataclass(frozen=True)
class LiveParams:
    """What a :class:`LiveJoin` runs with (times in milliseconds)."""

    d: float
    delta: float
    d_max: float
    max_delay: tuple[float, float]
    trigger_seconds: float = 1.0
    extra_watermark_ms: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.delta < 1:
            raise ValueError(f"delta = {self.delta!r} must lie strictly between 0 and 1")
        if not self.d >= 0:
            raise ValueError(f"d = {self.d!r} must be a non-negative window")
        if not self.d_max >= self.d:
            raise ValueError(f"d_max = {self.d_max!r} must be at least d = {self.d!r}")
        if not (np.isfinite(self.extra_watermark_ms) and self.extra_watermark_ms >= 0):
            raise ValueError(
                f"extra_watermark_ms = {self.extra_watermark_ms!r} must be finite and >= 0"
            )
        if not self.trigger_seconds > 0:
            raise ValueError(f"trigger_seconds = {self.trigger_seconds!r} must be positive")


class LiveJoin:
    """The streaming PTJoin over a replay folder, steerable while it runs (module docstring).

    ``work_dir`` holds one folder per run (checkpoints, pairs, rejects); constructing a
    LiveJoin on a folder with runs resumes the latest one from its checkpoint.
    ``available_now`` processes what is there and stops (tests); otherwise a processing-time
    trigger every ``trigger_seconds``.  Queries are named ``<name>-run<k>`` and
    ``<name>-rejects-run<k>``; Spark runs one active query per name, so live joins that run
    side by side in one session need different names.
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
        )
        self._streams = streams
        self.work_dir = Path(work_dir)
        self.max_files_per_trigger = max_files_per_trigger
        self.available_now = available_now
        runs = sorted(self.work_dir.glob("run-*"))
        self.run = int(runs[-1].name.split("-")[1]) if runs else 1
        self.decider = Decider(spark, streams)
        self.progress: ProgressLog | None = None
        self.batches: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._queries: list[StreamingQuery] = []
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
        return self._queries[0].id if self._queries else None

    @property
    def active(self) -> bool:
        """Whether the join query is running."""
        return bool(self._queries) and self._queries[0].isActive

    @property
    def error(self) -> str | None:
        """Why the join query failed, if it did (None while it runs, or after :meth:`stop`)."""
        exc = self._queries[0].exception() if self._queries else None
        return None if exc is None else str(exc)

    def start(self) -> None:
        """Start the join and rejects queries of the current run."""
        if self.active:
            raise RuntimeError("the live join is already running")
        if self.progress is None:
            self.progress = attach_progress(self.spark)
        candidates, classified = ptjoin_candidates(
            self.spark,
            self.source_dir,
            self.streams,
            self.params.d_max,
            max_files_per_trigger=self.max_files_per_trigger,
            extra_watermark_ms=self.params.extra_watermark_ms,
        )
        (self.run_dir / "pairs").mkdir(parents=True, exist_ok=True)
        writer = (
            candidates.writeStream.foreachBatch(self._write_batch)
            .option("checkpointLocation", str(self.run_dir / "chk"))
            .queryName(self.query_name)
        )
        rejects = str(self.run_dir / "rejects")
        self._queries = [
            self._trigger(writer).start(),
            rejects_query(
                classified,
                rejects,
                str(self.run_dir / "chk-rejects"),
                available_now=self.available_now,
                query_name=f"{self.name}-rejects-run{self.run}",
            ),
        ]

    def _trigger(self, writer: DataStreamWriter) -> DataStreamWriter:
        if self.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{self.params.trigger_seconds} seconds")

    def _write_batch(self, batch: DataFrame, batch_id: int) -> None:
        """Decide one micro-batch under the current parameters; replace that batch's file."""
        with self._lock:
            params = self.params
        decided = self.decider.decide(batch, params.d, params.delta).toPandas()
        frame = self.decider.resolve(decided, params.d, params.delta)
        frame = frame.assign(d=params.d, delta=params.delta)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        final = self.run_dir / "pairs" / f"batch-{batch_id:06d}.parquet"
        tmp = final.with_name(f".{final.name}.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, final)  # atomic; a re-run of this batch id replaces it
        with self._lock:
            self.batches.append(
                {"batch": batch_id, "time": time.time(), "pairs": table.num_rows, **vars(params)}
            )

    def wait_until_idle(self, timeout: float = 120.0) -> None:
        """Block until a micro-batch that started after this call found no new input."""
        query = self._queries[0]
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
        query = self._queries[0] if self._queries else None
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
        """Wait for the queries (``available_now`` runs end by themselves)."""
        for query in self._queries:
            query.awaitTermination(timeout)

    def stop(self) -> None:
        """Stop both queries (the checkpoint keeps their progress)."""
        for query in self._queries:
            query.stop()
        self._queries = []

    def close(self) -> None:
        """Stop and detach the progress listener."""
        self.stop()
        if self.progress is not None:
            self.spark.streams.removeListener(self.progress)
            self.progress = None

    def set_delta(self, delta: float) -> str:
        """Apply a new threshold from the next micro-batch; say so."""
        with self._lock:
            self.params = replace(self.params, delta=delta)
        return f"delta = {delta:g} applies from the next micro-batch; join state kept, no restart"

    def set_d(self, d: float) -> str:
        """Apply a new window: live within d_max, else restart on a new checkpoint; say which."""
        if d <= self.params.d_max:
            with self._lock:
                self.params = replace(self.params, d=d)
            return (
                f"d = {d:g} ms is within the join state's envelope d_max = "
                f"{self.params.d_max:g} ms: applies from the next micro-batch, no restart"
            )
        return self._restart_new(
            replace(self.params, d=d, d_max=d),
            f"d = {d:g} ms exceeds the join state's envelope d_max = {self.params.d_max:g} ms",
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
        self.params = replace(self.params, trigger_seconds=seconds)
        if running:
            self.start()
        return (
            f"trigger every {seconds:g} s: restarted from its checkpoint (run {self.run}); "
            "state and results kept"
        )

    def _restart_new(self, params: LiveParams, why: str) -> str:
        running = self.active
        self.stop()
        self.params = params
        self.run += 1
        with self._lock:
            self.batches = []
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
        """The last ``n`` pairs written (of the last micro-batches, the latest detected), with
        their exact probability P(|Xa - Xb| <= d)."""
        files = sorted((self.run_dir / "pairs").glob("batch-*.parquet"))
        parts: list[pd.DataFrame] = []
        while files and sum(map(len, parts)) < n:
            part = pd.read_parquet(files.pop())
            if len(part):  # a micro-batch that joined nothing writes an empty file
                parts.insert(0, part)
        if not parts:
            return pd.DataFrame(columns=[*PAIR_COLUMNS, "probability"])
        frame = pd.concat(parts, ignore_index=True)
        order = np.argsort(np.maximum(frame["a_t"], frame["b_t"]).to_numpy(), kind="stable")
        frame = frame.iloc[order[-n:]].reset_index(drop=True)
        a, b = (s.templates for s in self._streams)
        his = [a.event(int(u), t) for u, t in zip(frame["a_template"], frame["a_t"], strict=True)]
        hjs = [b.event(int(v), t) for v, t in zip(frame["b_template"], frame["b_t"], strict=True)]
        frame["probability"] = band_prob_many(his, hjs, frame["d"].to_numpy())
        return frame

    def rejects(self) -> pd.Series:
        """Rejected records of the current run, counted by reason."""
        frame = read_rejects(self.spark, str(self.run_dir / "rejects"))
        return (
            frame.groupby("reason").size().rename("records")
            if len(frame)
            else pd.Series(dtype=np.int64, name="records")
        )
