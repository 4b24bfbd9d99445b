"""Multi-way sliding-window join (W-join) as chained Spark stream-stream joins (W-join paper).

An m-tuple (one tuple per stream S_0 .. S_m-1, 2 <= m <= 6) is a result when the tuples' keys
are equal and their timestamps meet every window constraint ``|t_i - t_j| <= W_ij`` (Section 2,
"W-join forms": uniform and non-uniform cliques, paths, graphs;
:class:`~workbench.operators.windows.WindowConstraints`).

Each stream's accepted tuples (well formed, a known stream, arrival not before t, on time:
``arrival <= t + D_s``, the in-process operators' rule) get a watermark on their time, trailing
the largest time seen by max D (an on-time tuple is never older than that, as long as the
replay files are read in arrival order).  The join is a left-deep chain in Append mode: stream
s joins the result of S_0 .. S_s-1 on the key with

- a time-range condition ``|ts_s - ts_0| <= C_0s`` (plus 1 ms of timestamp rounding), C the
  shortest-path bounds of the constraint graph (Section 5.2): every result meets them, so they
  drop nothing, and they give Spark a bound for evicting both sides' state even where S_0 and
  S_s share no window (paths, graphs).  Only ``ts_0`` stays an event-time column after each
  join: Spark refuses a stateful operator whose input has two (MULTIPLE_EVENT_TIME_COLUMNS);
- the exact window ``abs(t_s - t_r) <= W_rs`` on the doubles for every earlier stream r with a
  finite W_rs (the arithmetic of :func:`~workbench.operators.wjoin.brute_force_wjoin`).

Spark finds every result when its last tuple arrives, as BEW-join does (Section 3.1), and
evicts by watermark what BEW expires by ``now - D_j - C_ij``; chained joins cannot open FEW's
forward periods, which wait for time to pass.  The result set equals the in-process
:class:`~workbench.operators.wjoin.BEWJoin` and :func:`brute_force_wjoin`.  The output is a
Parquet sink of ``(id_0, ..., id_m-1)``, one stream's tuple id per column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from workbench.events import sort_pairs
from workbench.operators.windows import WindowConstraints
from workbench.spark.source import parquet_sink, read_classified

__all__ = [
    "WJOIN_FIELDS",
    "read_results",
    "result_schema",
    "wjoin_checks",
    "wjoin_query",
    "wjoin_results",
]

WJOIN_FIELDS = "stream INT, id LONG, key LONG, t DOUBLE, arrival DOUBLE"


def result_schema(m: int) -> str:
    """The output schema of an m-way join: one tuple id per stream."""
    return ", ".join(f"id_{s} LONG" for s in range(m))


def _delays(constraints: WindowConstraints, max_delay: Sequence[float]) -> list[float]:
    delays = [float(x) for x in max_delay]
    if len(delays) != constraints.m or not all(math.isfinite(x) and x >= 0 for x in delays):
        raise ValueError(f"max_delay = {max_delay!r} needs {constraints.m} finite delays >= 0")
    return delays


def wjoin_checks(max_delay: Sequence[float]) -> list[tuple[str, Column]]:
    """Checks of the W-join tuple schema: a known stream, arrival not before t, on time."""
    stream, t, arrival = F.col("stream"), F.col("t"), F.col("arrival")
    on_time = F.lit(False)
    for s, delay in enumerate(max_delay):
        on_time = on_time | ((stream == s) & (arrival <= t + float(delay)))
    return [
        ("unknown stream", stream.between(0, len(max_delay) - 1)),
        ("arrival before t", arrival >= t),
        ("late", on_time),
    ]


def _ms(x: float) -> str:
    """x milliseconds rounded up, plus 1 ms for the timestamps' rounding (a SQL duration)."""
    return f"{int(math.ceil(x)) + 1} milliseconds"


def wjoin_results(
    spark: SparkSession,
    source_dir: str,
    constraints: WindowConstraints,
    max_delay: Sequence[float],
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The m-way join as a streaming DataFrame of ``result_schema(m)``, and the classified raw
    stream (for :func:`~workbench.spark.source.rejects_query`).

    Returns ``(results, classified)``.
    """
    delays = _delays(constraints, max_delay)
    tuples, classified = read_classified(
        spark, source_dir, WJOIN_FIELDS, wjoin_checks(delays), "t", max_files_per_trigger
    )
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
    results = joined.select(*(f"id_{s}" for s in range(constraints.m)))
    return results, classified


def wjoin_query(
    spark: SparkSession,
    source_dir: str,
    constraints: WindowConstraints,
    max_delay: Sequence[float],
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    max_files_per_trigger: int | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start the streaming W-join into a Parquet sink; times are milliseconds, as in the replay.

    ``max_files_per_trigger=1`` makes every replay file a micro-batch of its own (the watermark
    then advances between them); ``query_name`` names the query in its progress.  Rejected
    input is left out (see :func:`~workbench.spark.source.rejects_query` on
    :func:`wjoin_results`' second frame).
    """
    results, _ = wjoin_results(spark, source_dir, constraints, max_delay, max_files_per_trigger)
    return parquet_sink(results, output_dir, checkpoint_dir, available_now, query_name)


def read_results(spark: SparkSession, output_dir: str, m: int) -> np.ndarray:
    """The committed results of a query's output, as a lexicographically sorted ``(n, m)``
    array of tuple ids."""
    rows = spark.read.schema(result_schema(m)).parquet(output_dir).toPandas()
    return sort_pairs(rows[[f"id_{s}" for s in range(m)]].to_numpy(dtype=np.int64))
