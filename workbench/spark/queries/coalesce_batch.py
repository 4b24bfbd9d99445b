"""Temporal coalescing of a bounded input as a Spark job: the workbench's own window extent per
group inside the tasks (coalescing paper, Algorithm 2 eager and Algorithm 1 lazy; the Spark
semantics of :mod:`workbench.spark.queries.coalesce`).

The tuple files (``group, id, value, t, arrival``,
:data:`~workbench.spark.queries.coalesce_base.TUPLE_FIELDS`; Parquet, JSON lines or CSV) are checked
as a live replay's are (malformed, or late when ``arrival > t + D``) and the rejects written
with their reason to ``OUTPUT/rejects``; the same pass observes the accepted tuples' largest
timestamp ``t_max``.  ``groupBy(group).applyInArrow`` then hands each group's tuples, in
arrival order, to an :class:`~workbench.coalesce.EagerExtent` (or a
:class:`~workbench.coalesce.LazyExtent`: the same view) of the window, a time window's extent
advanced to the global ``t_max`` (the window holds ``t >= t_max - T`` over every group, as one
in-process extent fed them all), and the group's coalesced view is written by the executors to
``OUTPUT/extents`` (:data:`~workbench.spark.queries.coalesce_base.EXTENT_COLUMNS`).  A time window's
view is then the in-process extent's (:func:`~workbench.spark.queries.coalesce.in_process_view`), a
tuple window's the per-group extents' (a partitioned window).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import Observation, SparkSession
from pyspark.sql import functions as F

from workbench.coalesce import EagerExtent, LazyExtent, Readings
from workbench.data.event_files import EventFormat
from workbench.spark.queries.batch import RecordSchema, event_format, read_records
from workbench.spark.queries.coalesce_base import EXTENT_COLUMNS, TUPLE_FIELDS, CoalesceSettings
from workbench.spark.queries.source import reject_rows

__all__ = ["CoalesceRun", "extents_step", "run_coalesce"]

EXTENT_SCHEMA = "group LONG, value DOUBLE, start DOUBLE, end DOUBLE, count LONG"
EXTENTS = {"eager": EagerExtent, "lazy": LazyExtent}


@dataclass(frozen=True)
class CoalesceRun:
    """One coalescing job: the coalesced tuples written, the raw tuples they cover, the
    rejected records by reason, and its seconds."""

    output: str
    extents: int
    tuples: int
    rejects: dict[str, int]
    seconds: float


def extents_step(
    settings: CoalesceSettings, t_max: float
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The per-group step of ``applyInArrow`` (picklable): the group's tuples through the
    scheme's extent, in arrival order, and its view as :data:`EXTENT_SCHEMA` batches."""
    window, eq = settings.window, settings.equivalence
    extent_type = EXTENTS[settings.scheme]

    def step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches))
        if not table.num_rows:
            return
        table = table.sort_by([("arrival", "ascending"), ("id", "ascending")])
        t, value, group = (table.column(c).to_numpy() for c in ("t", "value", "group"))
        extent = extent_type(window, eq)
        extent.push_batch(Readings(t.copy(), value.copy(), group.copy()))
        if window.kind == "time":
            extent.advance(t_max)
        view = extent.view()
        yield pa.RecordBatch.from_pydict(
            {
                "group": pa.array([c.group for c in view], pa.int64()),
                "value": pa.array([c.value for c in view], pa.float64()),
                "start": pa.array([c.ts for c in view], pa.float64()),
                "end": pa.array([c.te for c in view], pa.float64()),
                "count": pa.array([c.count for c in view], pa.int64()),
            }
        )

    return step


def run_coalesce(
    spark: SparkSession,
    folder: str | os.PathLike[str],
    settings: CoalesceSettings,
    max_delay: float,
    output: str | os.PathLike[str],
    fmt: EventFormat | None = None,
) -> CoalesceRun:
    """Coalesce the tuple files under ``folder`` (module docstring); the view to
    ``output/extents``, rejected records to ``output/rejects`` (Parquet, replaced)."""
    begin = time.perf_counter()
    if not (np.isfinite(max_delay) and max_delay >= 0):
        raise ValueError(f"max_delay = {max_delay!r} must be a finite number >= 0")
    on_time = F.col("arrival") <= F.col("t") + float(max_delay)
    schema = RecordSchema(TUPLE_FIELDS, [("late", on_time)], "t", {})
    classified = read_records(spark, str(folder), fmt or event_format(folder), schema)
    out = Path(output)
    counts = Observation("rejects")
    ok = F.col("reason").isNull()
    observed = classified.observe(
        counts,
        *(F.sum((F.col("reason") == r).cast("long")).alias(r) for r in ("malformed", "late")),
        F.max(F.when(ok, F.col("t"))).alias("t_max"),
    )
    reject_rows(observed).write.mode("overwrite").parquet(str(out / "rejects"))
    got = counts.get
    t_max = got["t_max"] if got["t_max"] is not None else -np.inf
    accepted = classified.filter(ok).select("group", "id", "value", "t", "arrival")
    extents = accepted.groupBy("group").applyInArrow(
        extents_step(settings, float(t_max)), EXTENT_SCHEMA
    )
    written = Observation("extents")
    extents.select(*EXTENT_COLUMNS).observe(
        written, F.count(F.lit(1)).alias("extents"), F.sum("count").alias("tuples")
    ).write.mode("overwrite").parquet(str(out / "extents"))
    rejects = {r: int(got[r]) for r in ("malformed", "late") if got[r]}
    done = written.get
    return CoalesceRun(
        str(out),
        int(done["extents"]),
        int(done["tuples"] or 0),
        rejects,
        time.perf_counter() - begin,
    )
