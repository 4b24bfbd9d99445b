"""The baseline of ``bench spark --workload wjoin``: the multi-way sliding-window join (W-join
paper) as chained Spark stream-stream joins, the design the workbench ran before its BEW-join
ran inside Spark's stateful tasks by time range (:mod:`workbench.spark.queries.wjoin`).

Each stream's accepted tuples (:func:`workbench.spark.queries.wjoin.wjoin_checks`) get a watermark
on their time, trailing the largest time seen by max D.  The join is a left-deep chain in Append
mode: stream s joins the result of S_0 .. S_s-1 on the key with

- a time-range condition ``|ts_s - ts_0| <= C_0s`` (plus 1 ms of timestamp rounding), C the
  shortest-path bounds of the constraint graph (Section 5.2): every result meets them, so they
  drop nothing, and they give Spark a bound for evicting both sides' state even where S_0 and
  S_s share no window (paths, graphs).  Only ``ts_0`` stays an event-time column after each
  join: Spark refuses a stateful operator whose input has two (MULTIPLE_EVENT_TIME_COLUMNS);
- the exact window ``abs(t_s - t_r) <= W_rs`` on the doubles for every earlier stream r with a
  finite W_rs (the arithmetic of :func:`~workbench.operators.wjoin.brute_force_wjoin`).

Spark finds every result when its last tuple arrives, as BEW-join does (Section 3.1), and
evicts by watermark what BEW expires by ``now - D_j - C_ij``.  The result set equals the
in-process :class:`~workbench.operators.wjoin.BEWJoin`; the output is a Parquet sink of
``(id_0, ..., id_m-1)`` (:func:`workbench.spark.queries.wjoin.read_results`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from workbench.operators.windows import WindowConstraints
from workbench.spark.queries.source import parquet_sink, read_classified
from workbench.spark.queries.wjoin import WJOIN_FIELDS, check_delays, wjoin_checks

__all__ = ["chained_wjoin_query"]


def _ms(x: float) -> str:
    """x milliseconds rounded up, plus 1 ms for the timestamps' rounding (a SQL duration)."""
    return f"{int(math.ceil(x)) + 1} milliseconds"


def _chained(
    spark: SparkSession,
    source_dir: str,
    constraints: WindowConstraints,
    max_delay: Sequence[float],
) -> DataFrame:
    """The m-way join as a streaming DataFrame of one tuple id per stream."""
    delays = check_delays(constraints, max_delay)
    tuples, _ = read_classified(spark, source_dir, WJOIN_FIELDS, wjoin_checks(delays), "t")
    # an on-time tuple's t is at least (any earlier-arrived tuple's t) - D
    slack = _ms(max(delays))
    sides = [
        tuples.filter(F.col("stream") == s)
        .withWatermark("ts", slack)
        .select(*(F.col(c).alias(f"{c}_{s}") for c in ("id", "key", "t", "ts")))
        for s in range(constraints.m)
    ]
    bound, windows = constraints.closure(), constraints.windows
    joined = sides[0]
    for s in range(1, constraints.m):
        ts_0, ts_s = F.col("ts_0"), F.col(f"ts_{s}")
        reach = F.expr(f"interval {_ms(float(bound[0, s]))}")
        cond = (
            (F.col("key_0") == F.col(f"key_{s}")) & (ts_s >= ts_0 - reach) & (ts_s <= ts_0 + reach)
        )
        for r in range(s):
            if np.isfinite(windows[r, s]):
                cond = cond & (F.abs(F.col(f"t_{s}") - F.col(f"t_{r}")) <= float(windows[r, s]))
        joined = joined.join(sides[s], cond).drop(f"ts_{s}")  # one event-time column: ts_0
    return joined.select(*(f"id_{s}" for s in range(constraints.m)))


def chained_wjoin_query(
    spark: SparkSession,
    source_dir: str,
    constraints: WindowConstraints,
    max_delay: Sequence[float],
    output_dir: str,
    checkpoint_dir: str,
) -> StreamingQuery:
    """Start the chained stream-stream W-join over the replay under ``source_dir`` into a
    Parquet sink (``availableNow``); times are milliseconds, as in the replay."""
    results = _chained(spark, source_dir, constraints, max_delay)
    return parquet_sink(results, output_dir, checkpoint_dir)
