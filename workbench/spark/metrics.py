"""Streaming query progress as a pandas frame (pushed by a StreamingQueryListener)."""

from __future__ import annotations

import json
import logging
import threading

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

__all__ = [
    "BATCH_COLUMNS",
    "PROGRESS_COLUMNS",
    "ProgressLog",
    "attach_progress",
    "batch_metrics",
    "detach_progress",
    "no_progress",
    "watermark_drops",
]

PROGRESS_COLUMNS = [
    "query",
    "batch",
    "timestamp",
    "input_rows",
    "input_rows_per_s",
    "processed_rows_per_s",
    "batch_ms",
    "state_rows",
    "state_memory_bytes",
    "dropped_by_watermark",
    "watermark",
    "durations",
]
"""One query progress as :class:`ProgressLog` records it (``durations``: Spark's ``durationMs``
phases of the micro-batch, plus its state operators' ``stateCommit``, ``stateUpdates`` and
``stateRemovals`` times, all in ms)."""
BATCH_COLUMNS = (
    "elapsed_s",
    "batch",
    "input_rows_per_s",
    "processed_rows_per_s",
    "batch_ms",
    "state_rows",
    "pairs",
    "results_per_s",
)
"""What :func:`batch_metrics` gives per micro-batch (time in seconds since the run's start)."""


class ProgressLog(StreamingQueryListener):
    """Collects every query progress event (Spark pushes them; nothing polls), and the ends
    delivered of the queries its owner started (:meth:`watch`, :func:`detach_progress`)."""

    def __init__(self) -> None:
        self._rows: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._watched: set[str] = set()
        self._ended: set[str] = set()
        self._ending = threading.Condition(self._lock)

    def watch(self, query_id: str) -> None:
        """Note a query its owner started: :func:`detach_progress` waits for its end."""
        with self._lock:
            self._watched.add(str(query_id))

    def onQueryStarted(self, event: object) -> None:  # noqa: N802 (Spark's API)
        """Nothing to record at start."""

    def onQueryIdle(self, event: object) -> None:  # noqa: N802
        """Nothing to record while idle."""

    def onQueryTerminated(self, event: object) -> None:  # noqa: N802
        """Note that the query's end has been delivered."""
        with self._ending:
            self._ended.add(str(event.id))
            self._ending.notify_all()

    def wait_ended(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until the end of every watched query has been delivered;
        say whether it has."""
        with self._ending:
            return self._ending.wait_for(lambda: self._watched <= self._ended, timeout)

    def onQueryProgress(self, event: object) -> None:  # noqa: N802
        """Record one micro-batch's figures."""
        p = json.loads(event.progress.json)
        states = p.get("stateOperators") or []
        row = {
            "query": p.get("name") or p.get("id"),
            "batch": p.get("batchId"),
            "timestamp": pd.Timestamp(p.get("timestamp")),
            "input_rows": p.get("numInputRows", 0),
            "input_rows_per_s": p.get("inputRowsPerSecond", 0.0),
            "processed_rows_per_s": p.get("processedRowsPerSecond", 0.0),
            "batch_ms": (p.get("durationMs") or {}).get("triggerExecution", 0),
            "state_rows": sum(s.get("numRowsTotal", 0) for s in states),
            "state_memory_bytes": sum(s.get("memoryUsedBytes", 0) for s in states),
            "dropped_by_watermark": sum(s.get("numRowsDroppedByWatermark", 0) for s in states),
            "watermark": (p.get("eventTime") or {}).get("watermark"),
            "durations": {
                **(p.get("durationMs") or {}),
                "stateCommit": sum(s.get("commitTimeMs", 0) for s in states),
                "stateUpdates": sum(s.get("allUpdatesTimeMs", 0) for s in states),
                "stateRemovals": sum(s.get("allRemovalsTimeMs", 0) for s in states),
            },
        }
        with self._lock:
            self._rows.append(row)

    def frame(self) -> pd.DataFrame:
        """Every progress seen so far, one row per micro-batch."""
        with self._lock:
            return pd.DataFrame(self._rows, columns=PROGRESS_COLUMNS)


def detach_progress(spark: SparkSession, log: ProgressLog, timeout: float = 30.0) -> None:
    """Remove ``log`` from the session's listeners once the ends of the queries it watches
    (:meth:`ProgressLog.watch`; stopped or finished by now) have reached it.

    The wait is for both kinds of session.  Spark Connect's Python client removes the
    session's last listener holding the lock that its event thread takes to deliver an event,
    and waits for that thread, so an event arriving meanwhile hangs both for good
    (SPARK-59623, open in pyspark 4.3).  A classic session delivers from a JVM queue that lags
    behind the query on a busy machine: a progress event still queued when the listener goes
    may already be on its way to Python, and if the Python process then exits, the JVM logs a
    Py4J "listener threw an exception" trace.  The queries of live joins and of the dashboard's
    Spark runs keep a listener until their ends have been delivered (each query's last
    event), so when it goes none of them can still send one; a query started without one (a
    batch job's) and running meanwhile still can.  An end that does not arrive within
    ``timeout`` s is logged, and the listener removed all the same."""
    if not log.wait_ended(timeout):
        logging.getLogger("workbench").warning(
            "the end of a streaming query did not reach its listener within %g s; "
            "removing the listener all the same",
            timeout,
        )
    spark.streams.removeListener(log)


def no_progress() -> pd.DataFrame:
    """A progress frame of no micro-batch (before a query reports any)."""
    return pd.DataFrame(columns=PROGRESS_COLUMNS)


def attach_progress(spark: SparkSession) -> ProgressLog:
    """Register a :class:`ProgressLog` on the session and return it."""
    log = ProgressLog()
    spark.streams.addListener(log)
    return log


def batch_metrics(
    progress: pd.DataFrame,
    batches: list[dict[str, object]],
    query: str,
    start: pd.Timestamp,
) -> pd.DataFrame:
    """One row per micro-batch of ``query`` (:data:`BATCH_COLUMNS`): Spark's progress with
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
    return out[list(BATCH_COLUMNS)].astype(np.float64)


def watermark_drops(progress: pd.DataFrame, query: str) -> int:
    """Rows the join state of ``query`` dropped behind the watermark, over all its batches.

    >>> progress = pd.DataFrame({"query": ["q", "other", "q"], "dropped_by_watermark": [1, 5, 2]})
    >>> watermark_drops(progress, "q"), watermark_drops(no_progress(), "q")
    (3, 0)
    """
    return int(progress.loc[progress["query"] == query, "dropped_by_watermark"].sum())
