"""A bounded input on Spark: event files joined by the workbench's own operator per time range
(:mod:`workbench.spark.ranges`; PTJoin Section 3, interval timing correlation Section 4), the
pairs written to Parquet and every rejected record beside them with its reason.

The input is an event folder (:mod:`workbench.data.event_files`): ``streams.json`` and
``events/`` in Parquet, JSON lines or CSV.  Records are checked in Spark as a live stream's are
(:func:`~workbench.spark.source.event_checks`: malformed, unknown stream or template,
unrepresentable, arrival before detection, late); accepted ones go to the ranges, rejected ones
to ``rejects/``.  The driver plans the ranges (two small aggregates) and reads counts; no event
or pair passes through it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from workbench.data.event_files import EVENT_FORMATS, EventFormat
from workbench.events import COLUMNS, sort_pairs
from workbench.operators.base import StreamSpec, TwoStreamJoin
from workbench.spark.ranges import RangePlan, join_band, join_ranges, plan_ranges
from workbench.spark.source import CORRUPT, EVENT_FIELDS, event_checks, reject_rows, with_reason

__all__ = ["JoinRun", "event_format", "read_events", "read_pairs_files", "run_join", "task_slots"]

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


def read_events(
    spark: SparkSession, folder: str, fmt: EventFormat, streams: tuple[StreamSpec, StreamSpec]
) -> DataFrame:
    """The event files under ``folder`` with a ``reason`` column (null: accepted), as a live
    stream's records are classified (:func:`~workbench.spark.source.with_reason`)."""
    if fmt not in EVENT_FORMATS:
        raise ValueError(f"format = {fmt!r} must be one of {EVENT_FORMATS}")
    reader = spark.read.option("recursiveFileLookup", "true")
    if fmt == "parquet":  # its own column types (int or long, ...), cast to the event schema
        raw = reader.parquet(folder)
        missing = [c for c in COLUMNS if c not in raw.columns]
        if missing:
            raise ValueError(f"the events under {folder} lack the column(s) {missing}")
        fields = [f.split() for f in EVENT_FIELDS.split(", ")]
        raw = raw.select(
            *(F.col(name).cast(kind.lower()).alias(name) for name, kind in fields),
            F.lit(None).cast("string").alias(CORRUPT),
        )
    else:
        reader = reader.schema(f"{EVENT_FIELDS}, {CORRUPT} STRING").option(
            "columnNameOfCorruptRecord", CORRUPT
        )
        raw = reader.json(folder) if fmt == "json" else reader.option("header", True).csv(folder)
    return with_reason(raw, event_checks(streams))


def task_slots(spark: SparkSession) -> int:
    """The session's task slots (default parallelism; over Spark Connect, which does not tell,
    the shuffle partitions)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 (a Connect session has no SparkContext)
        return int(spark.conf.get("spark.sql.shuffle.partitions", "2"))


@dataclass(frozen=True)
class JoinRun:
    """One join job: the pairs written, the rejected records by reason, the ranges it ran on,
    and its seconds (planning included)."""

    output: str
    pairs: int
    rejects: dict[str, int]
    plan: RangePlan
    seconds: float


def run_join(
    spark: SparkSession,
    folder: str | os.PathLike[str],
    op: TwoStreamJoin,
    output: str | os.PathLike[str],
    fmt: EventFormat | None = None,
) -> JoinRun:
    """Join the events under ``folder`` (``events/`` of an event folder, or the folder itself)
    with ``op`` per time range; pairs ``(a_id, b_id)`` to ``output/pairs``, rejected records
    to ``output/rejects`` (both Parquet, replaced if present)."""
    begin = time.perf_counter()
    folder = Path(folder)
    source = folder / "events" if (folder / "events").is_dir() else folder
    fmt = fmt or event_format(source)
    classified = read_events(spark, str(source), fmt, op.streams)
    out = Path(output)
    reasons = ["malformed", *(name for name, _ in event_checks(op.streams))]
    counts = Observation("rejects")
    ok = F.col("reason").isNull()
    t_ok = F.when(ok, F.col("t_det"))
    observed = classified.observe(  # the accepted events' span too: one pass fewer to plan
        counts,
        *(F.sum((F.col("reason") == r).cast("long")).alias(r) for r in reasons),
        F.min(t_ok).alias("lo"),
        F.max(t_ok).alias("hi"),
        F.sum(ok.cast("long")).alias("n"),
    )
    reject_rows(observed).write.mode("overwrite").parquet(str(out / "rejects"))
    got = counts.get
    span = (got["lo"], got["hi"], int(got["n"] or 0))
    accepted = classified.filter(ok).select(*COLUMNS)
    plan = plan_ranges(accepted, *join_band(op), task_slots(spark), span)
    written = Observation("pairs")
    pairs = join_ranges(accepted, op, plan).observe(written, F.count(F.lit(1)).alias("pairs"))
    pairs.write.mode("overwrite").parquet(str(out / "pairs"))
    rejects = {r: int(got[r]) for r in reasons if got[r]}
    return JoinRun(str(out), int(written.get["pairs"]), rejects, plan, time.perf_counter() - begin)


def read_pairs_files(folder: str | os.PathLike[str]) -> np.ndarray:
    """The ``(a_id, b_id)`` pairs of a join's ``pairs/`` Parquet folder, sorted (Arrow, not
    Spark: for checks and small results)."""
    table = ds.dataset(str(folder), format="parquet").to_table(columns=["a_id", "b_id"])
    ids = np.column_stack([table.column(c).to_numpy() for c in ("a_id", "b_id")])
    return sort_pairs(ids.astype(np.int64).reshape(-1, 2))
