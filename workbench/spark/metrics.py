"""Streaming query progress as a pandas frame (pushed by a StreamingQueryListener)."""

from __future__ import annotations

import json
import threading

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

__all__ = ["ProgressLog", "attach_progress"]

COLUMNS = [
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
]


class ProgressLog(StreamingQueryListener):
    """Collects every query progress event (Spark pushes them; nothing polls)."""

    def __init__(self) -> None:
        self._rows: list[dict[str, object]] = []
        self._lock = threading.Lock()

    def onQueryStarted(self, event: object) -> None:  # noqa: N802 (Spark's API)
        """Nothing to record at start."""

    def onQueryIdle(self, event: object) -> None:  # noqa: N802
        """Nothing to record while idle."""

    def onQueryTerminated(self, event: object) -> None:  # noqa: N802
        """Nothing to record at the end."""

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
        }
        with self._lock:
            self._rows.append(row)

    def frame(self) -> pd.DataFrame:
        """Every progress seen so far, one row per micro-batch."""
        with self._lock:
            return pd.DataFrame(self._rows, columns=COLUMNS)


def attach_progress(spark: SparkSession) -> ProgressLog:
    """Register a :class:`ProgressLog` on the session and return it."""
    log = ProgressLog()
    spark.streams.addListener(log)
    return log
