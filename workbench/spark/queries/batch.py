"""A bounded input on Spark: records joined by the workbench's own operator per time range
(:mod:`workbench.spark.queries.ranges`; PTJoin Section 3, interval timing correlation Section 4,
W-join Sections 3-5), the results written to Parquet and every rejected record beside them with its
reason.

A two-stream join reads an event folder (:mod:`workbench.data.event_files`): ``streams.json``
and ``events/`` in Parquet, JSON lines or CSV, checked in Spark as a live stream's records are
(:func:`~workbench.spark.queries.source.event_checks`: malformed, unknown stream or template,
unrepresentable, arrival before detection, late).  A W-join reads tuples (``stream, id, key, t,
arrival``; :func:`~workbench.spark.queries.wjoin.wjoin_checks`); an equality W-join's ranges are
split by the key's hash.
Accepted records go to the ranges, rejected ones to ``rejects/``; the tasks write their
results to Parquet themselves (:func:`~workbench.spark.queries.ranges.write_ranges`: the JVM moves
no result).  The driver plans the ranges from the accepted records' span and time quantiles,
observed while the rejects are written (no job of its own), and reads counts; no record or
result passes through it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from workbench.data.event_files import EVENT_FORMATS, EventFormat
from workbench.events import sort_pairs
from workbench.operators.wjoin import MultiWayJoin
from workbench.spark.queries.ranges import (
    Join,
    RangePlan,
    Span,
    join_reach,
    plan_ranges,
    span_columns,
    write_ranges,
)
from workbench.spark.queries.source import (
    CORRUPT,
    EVENT_FIELDS,
    event_checks,
    reject_rows,
    with_reason,
)
from workbench.spark.queries.wjoin import WJOIN_FIELDS, wjoin_checks

__all__ = [
    "JoinRun",
    "RecordSchema",
    "event_format",
    "read_records",
    "read_result_files",
    "record_schema",
    "run_join",
    "task_slots",
]

_SUFFIXES = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}


def event_format(folder: str | os.PathLike[str]) -> EventFormat:
    """The format of the event files under ``folder`` (by their suffix; one format only)."""
    found = {_SUFFIXES[p.suffix] for p in Path(folder).rglob("*") if p.suffix in _SUFFIXES}
    if len(found) != 1:
        what = "no event files" if not found else f"files of several formats {sorted(found)}"
        raise ValueError(
            f"{folder} holds {what}: expected .parquet, .jsonl or .csv files of one format"
        )
    return found.pop()  # type: ignore[return-value]


@dataclass(frozen=True)
class RecordSchema:
    """How a join family's records look in files: the Spark ``fields``, the ``checks`` that
    accept them, the ``time`` column and the file columns ``renamed`` to the operator's batch
    fields."""

    fields: str
    checks: list[tuple[str, Column]]
    time: str
    renamed: dict[str, str]


def record_schema(op: Join) -> RecordSchema:
    """The records ``op`` joins: events (:data:`~workbench.spark.queries.source.EVENT_FIELDS`) or,
    for a W-join, tuples (:data:`~workbench.spark.queries.wjoin.WJOIN_FIELDS`)."""
    if isinstance(op, MultiWayJoin):
        renamed = {"key": "value", "t": "ts"}
        return RecordSchema(WJOIN_FIELDS, wjoin_checks(op.config.max_delay), "t", renamed)
    return RecordSchema(EVENT_FIELDS, event_checks(op.streams), "t_det", {})


def read_records(
    spark: SparkSession, folder: str, fmt: EventFormat, schema: RecordSchema
) -> DataFrame:
    """The record files under ``folder`` with a ``reason`` column (null: accepted), as a live
    stream's records are classified (:func:`~workbench.spark.queries.source.with_reason`)."""
    if fmt not in EVENT_FORMATS:
        raise ValueError(f"format = {fmt!r} must be one of {EVENT_FORMATS}")
    reader = spark.read.option("recursiveFileLookup", "true")
    fields = [f.split() for f in schema.fields.split(", ")]
    if fmt == "parquet":  # its own column types (int or long, ...), cast to the schema's
        raw = reader.parquet(folder)
        missing = [name for name, _ in fields if name not in raw.columns]
        if missing:
            raise ValueError(f"the records under {folder} lack the column(s) {missing}")
        raw = raw.select(
            *(F.col(name).cast(kind.lower()).alias(name) for name, kind in fields),
            F.lit(None).cast("string").alias(CORRUPT),
        )
    else:
        reader = reader.schema(f"{schema.fields}, {CORRUPT} STRING").option(
            "columnNameOfCorruptRecord", CORRUPT
        )
        raw = reader.json(folder) if fmt == "json" else reader.option("header", True).csv(folder)
    return with_reason(raw, schema.checks)


def task_slots(spark: SparkSession) -> int:
    """The session's task slots (default parallelism; over Spark Connect, which does not tell,
    the shuffle partitions)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 (a Connect session has no SparkContext)
        return int(spark.conf.get("spark.sql.shuffle.partitions", "2"))


@dataclass(frozen=True)
class JoinRun:
    """One join job: the results written (pairs, or a W-join's m-tuples), the rejected records
    by reason, the ranges it ran on, and its seconds (planning included)."""

    output: str
    results: int
    rejects: dict[str, int]
    plan: RangePlan
    seconds: float


def run_join(
    spark: SparkSession,
    folder: str | os.PathLike[str],
    op: Join,
    output: str | os.PathLike[str],
    fmt: EventFormat | None = None,
) -> JoinRun:
    """Join the records under ``folder`` (``events/`` of an event folder, or the folder
    itself) with ``op`` per time range; results to ``output/pairs`` (a W-join's:
    ``output/results``), rejected records to ``output/rejects`` (Parquet, replaced if
    present)."""
    begin = time.perf_counter()
    folder = Path(folder)
    source = folder / "events" if (folder / "events").is_dir() else folder
    schema = record_schema(op)
    classified = read_records(spark, str(source), fmt or event_format(source), schema)
    out = Path(output)
    reasons = ["malformed", *(name for name, _ in schema.checks)]
    counts = Observation("rejects")
    ok = F.col("reason").isNull()
    t_ok = F.when(ok, F.col(schema.time))
    observed = classified.observe(  # the accepted records' span too: no pass of its own to plan
        counts,
        *(F.sum((F.col("reason") == r).cast("long")).alias(r) for r in reasons),
        *span_columns(t_ok),
    )
    reject_rows(observed).write.mode("overwrite").parquet(str(out / "rejects"))
    got = counts.get
    span = Span.of(got)
    accepted = classified.filter(ok).withColumnsRenamed(schema.renamed)
    plan = plan_ranges(accepted, join_reach(op), task_slots(spark), span)
    folder = out / ("pairs" if op.arity == 2 else "results")
    results = write_ranges(accepted, op, plan, folder)
    rejects = {r: int(got[r]) for r in reasons if got[r]}
    return JoinRun(str(out), results, rejects, plan, time.perf_counter() - begin)


def read_result_files(folder: str | os.PathLike[str]) -> np.ndarray:
    """The results of a join's ``pairs/`` (or ``results/``) Parquet folder as a sorted ``(n,
    m)`` array of ids, columns in file order (Arrow, not Spark: for checks and small results)."""
    table = ds.dataset(str(folder), format="parquet").to_table()
    ids = np.column_stack([col.to_numpy() for col in table.columns])
    return sort_pairs(ids.astype(np.int64).reshape(-1, table.num_columns))
