"""PTJoin as a Spark Structured Streaming query over replayed event files (PTJoin Section 3).

The replay's JSON-lines files (:class:`workbench.data.replay.Replayer`) are read as a stream.
Each side keeps its accepted events (well formed, known template, on time: ``arrival <= t_det +
D``, PTJoin Definition 6, the in-process operators' rule; :mod:`workbench.spark.source`) with a
watermark on the detection time.  The stream-stream
join pairs every A event with the B events whose max time lies in A's loose partitions
(Eq. 4-5: ``[t_a - pi_A - d, t_a + d + pi_B]``), on an equi bucket key of that width so Spark
can partition the band (each A event looks in its bucket and the two beside it).  The exact
decision (:class:`Decider`) is Theorem 2's one comparison against a broadcast stime table when
``d >= max(pi_A, pi_B)`` (a broadcast join in the JVM), the exact band probability (Eq. 1 in
closed form, a vectorised pandas step) otherwise.  The join state depends on neither delta nor
d below the envelope ``d_max``, so both can change per micro-batch (:mod:`workbench.spark.live`).
The output is a Parquet file sink (exactly once with the checkpoint).
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
from workbench.spark.source import (
    accepted_events,
    event_checks,
    parquet_sink,
    read_stream,
    with_reason,
)
from workbench.stime import StimeTable

__all__ = ["PAIR_SCHEMA", "Decider", "ptjoin_candidates", "ptjoin_query", "read_pairs"]

PAIR_SCHEMA = "a_id LONG, b_id LONG"
CANDIDATE_COLUMNS = ["a_id", "a_template", "a_t", "b_id", "b_template", "b_t"]
CANDIDATE_SCHEMA = "a_id LONG, a_template INT, a_t DOUBLE, b_id LONG, b_template INT, b_t DOUBLE"


class Decider:
    """The exact jc(d, delta) decision of candidate pairs (PTJoin Theorem 2 / Eq. 1).

    Fast path (``d >= max(pi_A, pi_B)``): a join with a broadcast table of the template pairs'
    satisfaction times, then Eq. 8 or Eq. 9 as one comparison in the JVM, no Python per row.
    General path: the exact band probability (Eq. 1 in closed form) in a vectorised pandas
    step.  Tables are built once per delta and kept, so steering delta back and forth is free.
    """

    def __init__(self, spark: SparkSession, streams: tuple[StreamSpec, StreamSpec]) -> None:
        self.spark = spark
        self.streams = streams
        self._tables: dict[float, DataFrame] = {}

    def fast(self, d: float) -> bool:
        """Whether Theorem 2's precondition d >= max(pi_A, pi_B) holds."""
        return d >= max(self.streams[0].pi, self.streams[1].pi)

    def table(self, delta: float) -> DataFrame:
        """The broadcast stime table for ``delta``: template pair -> sat, inv, max(phi_u)."""
        if delta not in self._tables:
            a, b = (s.templates for s in self.streams)
            st = StimeTable.build(a, b, delta)
            u, v = np.meshgrid(np.arange(len(a)), np.arange(len(b)), indexing="ij")
            frame = pd.DataFrame(
                {
                    "a_template": u.ravel().astype(np.int32),
                    "b_template": v.ravel().astype(np.int32),
                    "sat": st.sat.ravel(),
                    "inv": st.inv.ravel(),
                    "max_a": np.repeat(a.max_times, len(b)),
                }
            )
            self._tables[delta] = F.broadcast(self.spark.createDataFrame(frame).cache())
        return self._tables[delta]

    def decide(self, candidates: DataFrame, d: float, delta: float) -> DataFrame:
        """The candidate pairs that satisfy jc(d, delta), with their ``CANDIDATE_COLUMNS``."""
        if self.fast(d):
            g0 = F.col("a_t") - F.col("max_a")  # as StimeTable.decide, same operation order
            later = (F.col("sat") + d) + g0 >= F.col("b_t")  # Eq. 8
            earlier = (F.col("inv") - d) + g0 <= F.col("b_t")  # Eq. 9
            ok = F.when(F.col("b_t") >= F.col("a_t"), later).otherwise(earlier)
            joined = candidates.join(self.table(delta), ["a_template", "b_template"])
            return joined.filter(ok).select(*CANDIDATE_COLUMNS)
        return candidates.mapInPandas(_band_decider(self.streams, d, delta), CANDIDATE_SCHEMA)


def _band_decider(
    streams: tuple[StreamSpec, StreamSpec], d: float, delta: float
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The exact band probability per pair (Eq. 1), picklable for ``mapInPandas``."""
    packed = []
    for ts in (s.templates for s in streams):
        edges, probs = ts.packed()
        packed.append((edges - ts.max_times[:, None], probs))

    def decide(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            if pdf.empty:
                continue
            u, v = pdf["a_template"].to_numpy(), pdf["b_template"].to_numpy()
            t_a, t_b = pdf["a_t"].to_numpy(), pdf["b_t"].to_numpy()
            ea, pa = packed[0][0][u] + t_a[:, None], packed[0][1][u]
            eb, pb = packed[1][0][v] + t_b[:, None], packed[1][1][v]
            band = ge_eq1_batch(eb + d, pb, ea, pa) + ge_eq1_batch(ea + d, pa, eb, pb) - 1.0
            yield pdf.loc[band >= delta, CANDIDATE_COLUMNS]

    return decide


def ptjoin_candidates(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    d_max: float,
    max_files_per_trigger: int | None = None,
    extra_watermark_ms: float = 0.0,
) -> tuple[DataFrame, DataFrame]:
    """The delta-independent join state: every pair whose B max-time lies in A's loose
    partitions for ``d_max`` (Eq. 4-5), and the classified raw stream (for a rejects sink).

    Returns ``(candidates, classified)``; candidates have ``CANDIDATE_COLUMNS``.  The
    watermark trails the newest detection by D + the band width, the least that never cuts an
    on-time event, plus ``extra_watermark_ms`` (a later watermark only keeps state longer).
    """
    if not d_max >= 0:
        raise ValueError(f"d = {d_max!r} must be a non-negative window")
    if not (np.isfinite(extra_watermark_ms) and extra_watermark_ms >= 0):
        raise ValueError(f"extra_watermark_ms = {extra_watermark_ms!r} must be finite and >= 0")
    raw = read_stream(spark, source_dir, max_files_per_trigger=max_files_per_trigger)
    classified = with_reason(raw, event_checks(streams))
    events = accepted_events(raw, streams)
    pi_a, pi_b = streams[0].pi, streams[1].pi
    before, after = pi_a + d_max + 1.0, d_max + pi_b + 1.0  # loose partitions, 1 ms rounding
    width = max(before, after)
    # Theorem 4 with slack: the watermark trails by D + the band, so it never cuts an on-time row
    delay = max(s.max_delay for s in streams) + width + extra_watermark_ms
    slack = f"{int(np.ceil(delay))} milliseconds"
    a = (
        events.filter(F.col("stream") == 0)
        .withWatermark("ts", slack)
        .select(
            F.col("id").alias("a_id"),
            F.col("template").alias("a_template"),
            F.col("t_det").alias("a_t"),
            F.col("ts").alias("a_ts"),
            F.explode(F.array(*[F.floor(F.col("t_det") / width) + k for k in (-1, 0, 1)])).alias(
                "a_bucket"
            ),
        )
    )
    b = (
        events.filter(F.col("stream") == 1)
        .withWatermark("ts", slack)
        .select(
            F.col("id").alias("b_id"),
            F.col("template").alias("b_template"),
            F.col("t_det").alias("b_t"),
            F.col("ts").alias("b_ts"),
            F.floor(F.col("t_det") / width).alias("b_bucket"),
        )
    )
    joined = a.join(
        b,
        F.expr(
            f"a_bucket = b_bucket AND "
            f"b_ts >= a_ts - interval {int(np.ceil(before))} milliseconds AND "
            f"b_ts <= a_ts + interval {int(np.ceil(after))} milliseconds"
        ),
    )
    return joined.select(*CANDIDATE_COLUMNS), classified


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
    decider: Decider | None = None,
    max_files_per_trigger: int | None = None,
) -> StreamingQuery:
    """Start the streaming PTJoin into a Parquet sink; times are milliseconds, as in the replay.

    ``decide=False`` writes every candidate pair of the band instead: Spark's own
    deterministic interval join with the same watermarks, range and bucket key (the baseline
    of ``workbench bench spark``).  Rejected input is left out (see :func:`rejects_query`).
    A ``decider`` built earlier (query installation: its stime tables) can be passed in.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    candidates, _ = ptjoin_candidates(spark, source_dir, streams, d, max_files_per_trigger)
    if decide:
        candidates = (decider or Decider(spark, streams)).decide(candidates, d, delta)
    pairs = candidates.select("a_id", "b_id")
    return parquet_sink(pairs, output_dir, checkpoint_dir, available_now)


def read_pairs(spark: SparkSession, output_dir: str) -> np.ndarray:
    """The committed pairs of a query's output, as a sorted ``(n, 2)`` array."""
    frame = spark.read.schema(PAIR_SCHEMA).parquet(output_dir).toPandas()
    pairs = frame[["a_id", "b_id"]].to_numpy(dtype=np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))] if len(pairs) else pairs.reshape(0, 2)
