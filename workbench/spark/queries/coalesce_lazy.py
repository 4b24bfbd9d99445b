"""Lazy coalescing on Spark (coalescing paper, Algorithm 1 and the Section 5 scan; the tuples,
windows and equivalences of :mod:`workbench.spark.queries.coalesce`).

Lazy coalescing stores raw tuples only (:func:`raw_tuples_query`, a Parquet file sink) and
coalesces when asked (:func:`lazy_coalesce`): a batch query that cuts the window
(``t >= max(t) - T``, or a per-group ``row_number`` for tuple windows), then gaps-and-islands
with window functions: a break flag where the equivalence fails against the previous tuple
(``lag``), a running sum of the flags numbers the runs, and min/max/count/``min_by`` per run,
``lead`` for the end; no Python per tuple.  The equivalence is evaluated over columns
(:data:`SPARK`).  What a restart keeps: :func:`~workbench.spark.queries.coalesce_base.restart_kind`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from workbench.coalesce import Equivalence, Window
from workbench.coalesce.equivalence import Arithmetic
from workbench.spark.queries.coalesce_base import TUPLE_FIELDS, coalesce_input
from workbench.spark.queries.source import parquet_sink

__all__ = ["SPARK", "lazy_coalesce", "raw_tuples_query"]

SPARK = Arithmetic(F.abs, F.floor, F.greatest)
"""Spark columns: the equivalence rules of :data:`~workbench.coalesce.equivalence.KINDS` as
column expressions (the lazy scan)."""


def raw_tuples_query(
    spark: SparkSession,
    source_dir: str,
    max_delay: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    max_files_per_trigger: int | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Store the accepted raw tuples (the lazy extent's storage) in a Parquet file sink
    (``max_files_per_trigger=1``: one replay file per micro-batch), named ``query_name``."""
    tuples, _ = coalesce_input(spark, source_dir, max_delay, max_files_per_trigger)
    return parquet_sink(
        tuples.select("group", "id", "value", "t", "arrival"),
        output_dir,
        checkpoint_dir,
        available_now,
        query_name,
    )


def _breaks(equivalence: Equivalence, prev: Column, value: Column) -> Column:
    """Where ``value`` does not coalesce with the group's previous value (or has none)."""
    same = equivalence.same(prev, value, SPARK)
    return F.when(prev.isNull() | ~same, 1).otherwise(0)


def lazy_coalesce(
    spark: SparkSession,
    tuples: DataFrame | str,
    window: Window,
    equivalence: Equivalence | None = None,
    arrived_by: float | None = None,
) -> DataFrame:
    """Coalesce the window's raw tuples now (a batch scan): columns ``EXTENT_COLUMNS``.

    ``tuples`` is a frame with group, id, value, t, arrival or the folder of a
    :func:`raw_tuples_query`; ``arrived_by`` keeps the tuples arrived by then (the extent as
    it stood at that time).
    """
    eq = equivalence or Equivalence()
    if isinstance(tuples, str):
        tuples = spark.read.schema(TUPLE_FIELDS).parquet(tuples)
    if arrived_by is not None:
        tuples = tuples.filter(F.col("arrival") <= arrived_by)
    if window.kind == "time":
        t_max = tuples.agg(F.max("t").alias("t_max"))
        inside = tuples.crossJoin(t_max).filter(F.col("t") >= F.col("t_max") - window.size)
    else:
        newest = W.partitionBy("group").orderBy(F.desc("t"), F.desc("id"))
        inside = tuples.withColumn("rank", F.row_number().over(newest)).filter(
            F.col("rank") <= int(window.size)
        )
    in_order = W.partitionBy("group").orderBy("t", "id")
    runs = (
        inside.withColumn("brk", _breaks(eq, F.lag("value").over(in_order), F.col("value")))
        .withColumn("run", F.sum("brk").over(in_order.rowsBetween(W.unboundedPreceding, 0)))
        .groupBy("group", "run")
        .agg(
            F.min("t").alias("start"),
            F.max("t").alias("last"),
            F.count(F.lit(1)).alias("count"),
            F.min_by("value", F.struct("t", "id")).alias("first"),
        )
    )
    value = eq.representative(F.col("first"), SPARK)
    following = W.partitionBy("group").orderBy("run")
    return runs.select(
        "group",
        value.cast("double").alias("value"),
        "start",
        F.coalesce(F.lead("start").over(following), F.col("last")).alias("end"),
        "count",
    )
