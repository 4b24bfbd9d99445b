"""PTJoin as a Spark Structured Streaming query over replayed event files (PTJoin Section 3).

The replay's JSON-lines files (:class:`workbench.data.replay.Replayer`) are read as a stream.
Each side keeps its on-time events (``arrival <= t_det + D``, PTJoin Definition 6, the same
rule as the in-process operators) with a watermark on the detection time.  The stream-stream
join pairs every A event with the B events whose max time lies in A's loose partitions
(Eq. 4-5: ``[t_a - pi_A - d, t_a + d + pi_B]``), on an equi bucket key of that width so Spark
can partition the band (each A event looks in its bucket and the two beside it).  The exact
decision runs per pair in a vectorised pandas step: Theorem 2's one comparison against a
broadcast stime table when ``d >= max(pi_A, pi_B)``, the exact band probability (Eq. 1 in
closed form) otherwise.  The output is a Parquet file sink (exactly once with the checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from workbench.operators.base import StreamSpec
from workbench.probability import ge_eq1_batch
from workbench.stime import StimeTable

__all__ = ["EVENT_SCHEMA", "PAIR_SCHEMA", "ptjoin_query", "read_pairs"]

EVENT_SCHEMA = "stream INT, id LONG, template INT, t_det DOUBLE, arrival DOUBLE"
PAIR_SCHEMA = "a_id LONG, b_id LONG"


def _decider(
    streams: tuple[StreamSpec, StreamSpec], d: float, delta: float
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The per-pair exact decision, as a picklable function for ``mapInPandas``."""
    a, b = (s.templates for s in streams)
    fast = d >= max(streams[0].pi, streams[1].pi)
    table = StimeTable.build(a, b, delta) if fast else None
    packed = []
    for ts in (a, b):
        edges, probs = ts.packed()
        packed.append((edges - ts.max_times[:, None], probs))

    def decide(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            if pdf.empty:
                continue
            u, v = pdf["a_template"].to_numpy(), pdf["b_template"].to_numpy()
            t_a, t_b = pdf["a_t"].to_numpy(), pdf["b_t"].to_numpy()
            if table is not None:
                ok = table.decide(u, v, t_a, t_b, d)
            else:
                ea, pa = packed[0][0][u] + t_a[:, None], packed[0][1][u]
                eb, pb = packed[1][0][v] + t_b[:, None], packed[1][1][v]
                band = ge_eq1_batch(eb + d, pb, ea, pa) + ge_eq1_batch(ea + d, pa, eb, pb) - 1.0
                ok = band >= delta
            yield pdf.loc[ok, ["a_id", "b_id"]]

    return decide


def _side(raw: DataFrame, s: int, spec: StreamSpec, delay_ms: float) -> DataFrame:
    """One stream's on-time events with a watermark on their detection time."""
    n_templates = len(spec.templates)
    return (
        raw.filter(
            (F.col("stream") == s)
            & F.col("template").between(0, n_templates - 1)
            & (F.col("arrival") <= F.col("t_det") + spec.max_delay)
        )
        .withColumn("ts", F.timestamp_micros(F.round(F.col("t_det") * 1000).cast("long")))
        .withWatermark("ts", f"{int(np.ceil(delay_ms))} milliseconds")
    )


def ptjoin_query(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    d: float,
    delta: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    decide: bool = True,
) -> StreamingQuery:
    """Start the streaming PTJoin; times are milliseconds, as in the replay files.

    ``decide=False`` writes every candidate pair of the band instead: Spark's own
    deterministic interval join with the same watermarks, range and bucket key (the baseline
    of ``workbench bench spark``).
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative window")
    pi_a, pi_b = streams[0].pi, streams[1].pi
    before, after = pi_a + d + 1.0, d + pi_b + 1.0  # loose partitions, 1 ms for rounding
    width = max(before, after)
    raw = spark.readStream.schema(EVENT_SCHEMA).json(source_dir)
    slack = max(s.max_delay for s in streams) + width  # watermarks never cut an on-time row
    a = _side(raw, 0, streams[0], slack).select(
        F.col("id").alias("a_id"),
        F.col("template").alias("a_template"),
        F.col("t_det").alias("a_t"),
        F.col("ts").alias("a_ts"),
        F.explode(F.array(*[F.floor(F.col("t_det") / width) + k for k in (-1, 0, 1)])).alias(
            "a_bucket"
        ),
    )
    b = _side(raw, 1, streams[1], slack).select(
        F.col("id").alias("b_id"),
        F.col("template").alias("b_template"),
        F.col("t_det").alias("b_t"),
        F.col("ts").alias("b_ts"),
        F.floor(F.col("t_det") / width).alias("b_bucket"),
    )
    joined = a.join(
        b,
        F.expr(
            f"a_bucket = b_bucket AND "
            f"b_ts >= a_ts - interval {int(np.ceil(before))} milliseconds AND "
            f"b_ts <= a_ts + interval {int(np.ceil(after))} milliseconds"
        ),
    )
    if decide:
        pairs = joined.mapInPandas(_decider(streams, d, delta), PAIR_SCHEMA)
    else:
        pairs = joined.select("a_id", "b_id")
    writer = (
        pairs.writeStream.format("parquet")
        .option("path", output_dir)
        .option("checkpointLocation", checkpoint_dir)
        .outputMode("append")
    )
    writer = writer.trigger(availableNow=True) if available_now else writer
    return writer.start()


def read_pairs(spark: SparkSession, output_dir: str) -> np.ndarray:
    """The committed pairs of a query's output, as a sorted ``(n, 2)`` array."""
    frame = spark.read.schema(PAIR_SCHEMA).parquet(output_dir).toPandas()
    pairs = frame[["a_id", "b_id"]].to_numpy(dtype=np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))] if len(pairs) else pairs.reshape(0, 2)
