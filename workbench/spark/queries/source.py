"""Replay files as a Spark stream, with every record accepted or rejected for a named reason.

The replay (:class:`workbench.data.replay.Replayer`) writes JSON lines.  :func:`read_stream`
reads them with a fixed schema plus Spark's ``_corrupt_record`` column (PERMISSIVE mode), so a
malformed line becomes a row instead of a failure.  :func:`with_reason` gives each row a
``reason``: ``"malformed"`` when the line did not parse or a field is missing, null or not a
finite number, else the first failing check (unknown stream, unknown template, a histogram
that floats cannot represent at its time (``TemplateSet.horizons``), late), else
null (accepted).  Accepted rows feed the joins; rejected rows go to a Parquet rejects sink
(:func:`rejects_query`), so bad input is counted and kept, never crashes a query and never
reaches the results.  Late means PTJoin Definition 6: ``arrival > t_det + D`` of its stream.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql.types import DoubleType

from workbench.operators.base import StreamSpec

__all__ = [
    "CORRUPT",
    "EPOCH_OFFSET_MS",
    "EVENT_FIELDS",
    "REJECT_SCHEMA",
    "event_checks",
    "event_time",
    "parquet_sink",
    "read_classified",
    "read_rejects",
    "read_batches",
    "read_sink",
    "read_stream",
    "reject_record",
    "reject_rows",
    "rejects_query",
    "sink_partitions",
    "start_writer",
    "stop_query",
    "with_reason",
]

CORRUPT = "_corrupt_record"
EVENT_FIELDS = "stream INT, id LONG, template INT, t_det DOUBLE, arrival DOUBLE"
REJECT_SCHEMA = "reason STRING, stream INT, id LONG, record STRING"
EPOCH_OFFSET_MS = 10**12
"""Added to replay times (ms) to make event-time timestamps: Spark's join drops input rows at
or below the watermark, and the first batch's watermark is 0, so a time of 0 would be lost."""


def event_time(ms: Column | str) -> Column:
    """A replay time in milliseconds as a Spark timestamp (microseconds, offset by
    ``EPOCH_OFFSET_MS`` so every time from -31 years on lies above the initial watermark)."""
    col = F.col(ms) if isinstance(ms, str) else ms
    return F.timestamp_micros(F.round(col * 1000).cast("long") + EPOCH_OFFSET_MS * 1000)


def read_stream(
    spark: SparkSession,
    source_dir: str,
    fields: str = EVENT_FIELDS,
    max_files_per_trigger: int | None = None,
) -> DataFrame:
    """The replay files under ``source_dir`` as a stream of ``fields`` plus ``_corrupt_record``."""
    reader = (
        spark.readStream.schema(f"{fields}, {CORRUPT} STRING")
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
    )
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    return reader.json(source_dir)


def _well_formed(raw: DataFrame) -> Column:
    """The line parsed and every field is present; doubles are finite."""
    ok = F.col(CORRUPT).isNull()
    for field in raw.schema.fields:
        if field.name == CORRUPT:
            continue
        col = F.col(field.name)
        ok = ok & col.isNotNull()
        if isinstance(field.dataType, DoubleType):
            ok = ok & ~F.isnan(col) & (F.abs(col) < float("inf"))
    return ok


def with_reason(raw: DataFrame, checks: Sequence[tuple[str, Column]] = ()) -> DataFrame:
    """Add ``reason``: null when accepted, else ``"malformed"`` or the first failing check's
    name (each check is ``(name, condition that holds for acceptable rows)``)."""
    reason = F.when(~_well_formed(raw), F.lit("malformed"))
    for name, ok in checks:
        reason = reason.when(~ok, F.lit(name))
    return raw.withColumn("reason", reason.otherwise(F.lit(None).cast("string")))


def event_checks(streams: Sequence[StreamSpec]) -> list[tuple[str, Column]]:
    """Checks of the event schema: a known stream, a known template of it, an arrival not
    before the detection (the in-process operators refuse such an event), on time (Def. 6)."""
    stream, template = F.col("stream"), F.col("template")
    known_template = F.lit(False)
    on_time = F.lit(False)
    faithful = F.lit(False)
    for s, spec in enumerate(streams):
        known_template = known_template | (
            (stream == s) & template.between(0, len(spec.templates) - 1)
        )
        on_time = on_time | ((stream == s) & (F.col("arrival") <= F.col("t_det") + spec.max_delay))
        # TemplateSet.horizons: the event's narrowest bucket is at least the float spacing;
        # one comparison decides nearly every event (|t_det| below the stream's smallest
        # horizon minus its longest template), the per-template look-up the rest
        ts = spec.templates
        # array literals (not arrays of literals: those cost ~1 s per 100,000 rows)
        reach = F.element_at(F.lit(ts.lengths.astype(np.float64)), template + 1)
        limit = F.element_at(F.lit(ts.horizons.astype(np.float64)), template + 1)
        safe = float(np.min(ts.horizons) - np.max(ts.lengths)) * (1 - 2.0**-20)  # no ties
        t_abs = F.abs(F.col("t_det"))
        faithful = faithful | ((stream == s) & ((t_abs < safe) | (t_abs + reach < limit)))
    return [
        ("unknown stream", stream.between(0, len(streams) - 1)),
        ("unknown template", known_template),
        ("unrepresentable", faithful),
        ("arrival before detection", F.col("arrival") >= F.col("t_det")),
        ("late", on_time),
    ]


def read_classified(
    spark: SparkSession,
    source_dir: str,
    fields: str,
    checks: Sequence[tuple[str, Column]],
    time_column: str,
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The replay under ``source_dir`` read as ``fields`` (:func:`read_stream`) and classified
    by ``checks`` (:func:`with_reason`).

    Returns ``(accepted, classified)``: the accepted rows (reason null) with ``ts``,
    ``time_column`` as an event-time timestamp (:func:`event_time`), and the classified stream
    (for :func:`rejects_query`).
    """
    raw = read_stream(spark, source_dir, fields, max_files_per_trigger)
    classified = with_reason(raw, checks)
    accepted = (
        classified.filter(F.col("reason").isNull())
        .drop("reason", CORRUPT)
        .withColumn("ts", event_time(time_column))
    )
    return accepted, classified


def read_events(
    spark: SparkSession,
    source_dir: str,
    streams: Sequence[StreamSpec],
    d_max: float,
    max_files_per_trigger: int | None = None,
    extra_watermark_ms: float = 0.0,
) -> tuple[DataFrame, DataFrame]:
    """A timing join's replay read and classified (:func:`read_classified` with
    :func:`event_checks`), once its envelope window ``d_max`` and the watermark's extra delay
    are checked; returns ``(accepted, classified)``."""
    if not d_max >= 0:
        raise ValueError(f"d = {d_max!r} must be a non-negative window")
    if not (np.isfinite(extra_watermark_ms) and extra_watermark_ms >= 0):
        raise ValueError(f"extra_watermark_ms = {extra_watermark_ms!r} must be finite and >= 0")
    return read_classified(
        spark, source_dir, EVENT_FIELDS, event_checks(streams), "t_det", max_files_per_trigger
    )


def start_writer(
    writer: DataStreamWriter,
    checkpoint_dir: str,
    available_now: bool = True,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start a stream writer on its checkpoint; ``available_now`` processes what is there and
    stops."""
    writer = writer.option("checkpointLocation", checkpoint_dir)
    if query_name:
        writer = writer.queryName(query_name)
    writer = writer.trigger(availableNow=True) if available_now else writer
    return writer.start()


def stop_query(spark: SparkSession, query: StreamingQuery, timeout: float = 30.0) -> None:
    """Stop a query and wait (up to ``timeout`` s) until the jobs of its micro-batches have
    ended and their tasks too: a stop cancels the job at once, but its interrupted tasks may
    still be writing (state files, a sink file, their completion listeners) for a moment, so a
    caller that removes the query's folder right after would see it re-created.  Over Spark
    Connect there is no job status to wait on: only the stop."""
    query.stop()
    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 (a Connect session has no SparkContext)
        return
    deadline = time.monotonic() + timeout
    group = str(query.runId)
    while time.monotonic() < deadline:
        jobs = [job for j in tracker.getJobIdsForGroup(group) if (job := tracker.getJobInfo(j))]
        stages = [tracker.getStageInfo(s) for job in jobs for s in job.stageIds]
        running = any(job.status == "RUNNING" for job in jobs)
        if not running and not any(s is not None and s.numActiveTasks > 0 for s in stages):
            return
        time.sleep(0.05)


def parquet_sink(
    frame: DataFrame,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start writing a stream to a Parquet file sink in append mode (exactly once with the
    checkpoint; see :func:`start_writer`)."""
    writer = frame.writeStream.format("parquet").option("path", output_dir).outputMode("append")
    return start_writer(writer, checkpoint_dir, available_now, query_name)


def rejects_query(
    classified: DataFrame,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    query_name: str | None = None,
) -> StreamingQuery:
    """Write the rejected rows of a :func:`with_reason` stream to a Parquet sink (exactly once;
    :func:`reject_rows`)."""
    return parquet_sink(
        reject_rows(classified), output_dir, checkpoint_dir, available_now, query_name
    )


def reject_rows(classified: DataFrame) -> DataFrame:
    """The rejected rows of a :func:`with_reason` stream as ``REJECT_SCHEMA``: the reason,
    stream and id where they parsed, and the record (the raw line if it did not)."""
    fields = [c for c in classified.columns if c not in (CORRUPT, "reason")]
    return classified.filter(F.col("reason").isNotNull()).select(
        "reason",
        (F.col("stream") if "stream" in fields else F.lit(None)).cast("int").alias("stream"),
        (F.col("id") if "id" in fields else F.lit(None)).cast("long").alias("id"),
        reject_record(classified).alias("record"),
    )


def reject_record(classified: DataFrame) -> Column:
    """A :func:`with_reason` row's record as a reject keeps it: the raw line if it did not
    parse, else its parsed fields as JSON."""
    fields = [c for c in classified.columns if c not in (CORRUPT, "reason")]
    return F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*fields)))


def read_sink(spark: SparkSession, output_dir: str, schema: str) -> pd.DataFrame | None:
    """The rows written under ``output_dir`` (a sink of ``schema``), or None before the sink's
    first batch (the folder does not exist yet)."""
    try:
        return spark.read.schema(schema).parquet(output_dir).toPandas()
    except Exception as exc:
        if "PATH_NOT_FOUND" not in str(exc):
            raise
        return None


def sink_partitions(sink: Path) -> list[tuple[int, Path]]:
    """The batch partitions ``(batch id, folder)`` a ``foreachBatch`` step wrote under
    ``sink`` (``batch=<id>``), in batch order."""
    found = [(int(p.name.split("=", 1)[1]), p) for p in sink.glob("batch=*") if p.is_dir()]
    return sorted(found)


def read_batches(
    spark: SparkSession, output_dir: str, schema: str, last: int | None = None
) -> pd.DataFrame | None:
    """The rows of the batch partitions under ``output_dir`` (:func:`sink_partitions`, a sink
    of ``schema`` with its ``batch`` column) up to batch ``last`` (None: all), or None when
    there are none.  Only those folders are listed: a query re-running its uncommitted next
    batch replaces that batch's folder, and a read of the whole sink meanwhile could list a
    file the re-run then deletes."""
    folders = [str(p) for b, p in sink_partitions(Path(output_dir)) if last is None or b <= last]
    if not folders:
        return None
    return spark.read.schema(schema).option("basePath", output_dir).parquet(*folders).toPandas()


def read_rejects(spark: SparkSession, output_dir: str) -> pd.DataFrame:
    """The committed rejects of a :func:`rejects_query` (empty frame before its first batch)."""
    rejects = read_sink(spark, output_dir, REJECT_SCHEMA)
    if rejects is None:
        return pd.DataFrame(columns=["reason", "stream", "id", "record"])
    return rejects
