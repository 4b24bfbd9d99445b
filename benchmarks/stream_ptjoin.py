"""The baseline of ``bench spark``: PTJoin as a Spark Structured Streaming stream-stream join
over replayed event files (PTJoin Section 3), the design the workbench ran before its
operators ran inside the tasks by time range (:mod:`workbench.spark.queries.ranges`,
:mod:`workbench.spark.queries.live_ranges`).

The replay's JSON-lines files (:class:`workbench.data.replay.Replayer`) are read as a stream.
Each side keeps its accepted events (well formed, known template, on time: ``arrival <= t_det +
D``, PTJoin Definition 6, the in-process operators' rule; :mod:`workbench.spark.queries.source`)
with a watermark on the detection time.  The stream-stream
join pairs every A event with the B events whose max time lies in A's loose partitions
(Eq. 4-5: ``[t_a - pi_A - d, t_a + d + pi_B]``), on an equi bucket key of that width so Spark
can partition the band (each A event looks in its bucket and the two beside it).  The exact
decision (:class:`Decider`) is Theorem 2's one comparison against the certified brackets of a
broadcast stime table when ``d >= max(pi_A, pi_B)`` (a broadcast join in the JVM), the
certified band probability (:class:`workbench.decision.BandDecider`, a vectorised pandas step)
otherwise.  A fast-path pair whose comparison falls inside a bracket (rare: within a few ulps
of the exact stime) is kept as *pending*, with what its exact decision needs; the sink stores
it beside the decided pairs and :func:`read_pairs` decides it in
rationals, so the pairs read back are exactly the mathematics' (no Python touches the rest).
The output is a Parquet file sink (exactly once with the checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import BooleanType, StructField, StructType

from workbench.decision import UNIT_ROUNDOFF, BandDecider
from workbench.events import sort_pairs
from workbench.operators.base import StreamSpec
from workbench.spark.queries.source import parquet_sink, read_events
from workbench.stime import StimeTable

__all__ = [
    "PAIR_INPUTS",
    "PAIR_SCHEMA",
    "SINK_SCHEMA",
    "Decider",
    "band_step",
    "decide_pending",
    "pair_inputs",
    "ptjoin_candidates",
    "ptjoin_query",
    "read_pairs",
]

PAIR_SCHEMA = "a_id LONG, b_id LONG"
PAIR_INPUTS = ["a_template", "a_t", "b_template", "b_t"]
"""What a pair's decision reads besides (d, delta): the templates and times of its A and B
event."""
PENDING_FIELDS = [*PAIR_INPUTS, "d", "delta"]
SINK_SCHEMA = f"{PAIR_SCHEMA}, pending ARRAY<DOUBLE>"
"""The PTJoin sink: decided pairs have a null ``pending``; a pending pair carries its inputs
(``PENDING_FIELDS``, as doubles)."""
CANDIDATE_COLUMNS = ["a_id", "a_template", "a_t", "b_id", "b_template", "b_t"]


def pair_inputs(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``PAIR_INPUTS`` columns of ``pairs`` as the first four arguments of
    :meth:`BandDecider.decide <workbench.decision.BandDecider.decide>` and ``decide_exact``
    (templates as integers, times as doubles)."""
    u, t_a, v, t_b = (
        pairs[c].to_numpy(dtype)
        for c, dtype in zip(PAIR_INPUTS, (np.int64, np.float64, np.int64, np.float64), strict=True)
    )
    return u, t_a, v, t_b


def decide_pending(band: BandDecider, pairs: pd.DataFrame) -> np.ndarray:
    """Whether each pending pair joins, decided in exact arithmetic per ``(d, delta)``
    (``pairs`` has the ``PENDING_FIELDS`` columns; PTJoin Eq. 1)."""
    ok = np.zeros(len(pairs), dtype=bool)
    for (d, delta), rows in pairs.groupby(["d", "delta"]).indices.items():
        ok[rows] = band.decide_exact(*pair_inputs(pairs.iloc[rows]), d, delta)
    return ok


class Decider:
    """The exact jc(d, delta) decision of candidate pairs (PTJoin Theorem 2 / Eq. 1).

    Fast path (``d >= max(pi_A, pi_B)``): a join with a broadcast table of the template pairs'
    certified stime brackets (:class:`~workbench.stime.StimeTable`), then Eq. 8 or Eq. 9 as
    comparisons in the JVM, no Python per row; a comparison inside a bracket leaves
    the pair ``pending``.  General path: the certified band probability in a vectorised pandas step
    (exact, never pending).  Tables are built once per delta and kept, so steering delta back
    and forth is free.
    """

    def __init__(self, spark: SparkSession, streams: tuple[StreamSpec, StreamSpec]) -> None:
        self.spark = spark
        self.streams = streams
        self.band = BandDecider(*(s.templates for s in streams))
        self._stimes: dict[float, StimeTable] = {}
        self._tables: dict[float, DataFrame] = {}

    def fast(self, d: float) -> bool:
        """Whether Theorem 2's precondition d >= max(pi_A, pi_B) holds."""
        return d >= max(self.streams[0].pi, self.streams[1].pi)

    def stime(self, delta: float) -> StimeTable:
        """The certified stime brackets of every template pair for ``delta`` (built once)."""
        if delta not in self._stimes:
            a, b = (s.templates for s in self.streams)
            self._stimes[delta] = StimeTable.build(a, b, delta, self.band)
        return self._stimes[delta]

    def table(self, delta: float) -> DataFrame:
        """The broadcast stime table for ``delta``: template pair -> certified brackets of sat
        and inv (local: stime - max(phi_u))."""
        if delta not in self._tables:
            a, b = (s.templates for s in self.streams)
            st = self.stime(delta)
            u, v = np.meshgrid(np.arange(len(a)), np.arange(len(b)), indexing="ij")
            frame = pd.DataFrame(
                {
                    "a_template": u.ravel().astype(np.int32),
                    "b_template": v.ravel().astype(np.int32),
                    "sat_lo": st.sat_lo.ravel(),
                    "sat_hi": st.sat_hi.ravel(),
                    "inv_lo": st.inv_lo.ravel(),
                    "inv_hi": st.inv_hi.ravel(),
                }
            )
            self._tables[delta] = F.broadcast(self.spark.createDataFrame(frame).cache())
        return self._tables[delta]

    def decide(
        self, candidates: DataFrame, d: float, delta: float, passthrough: str | None = None
    ) -> DataFrame:
        """The candidate pairs that satisfy jc(d, delta) or are pending, with ``candidates``'
        columns and a boolean ``pending``.  Rows whose boolean column ``passthrough`` is true
        are kept undecided (not pending): other rows carried in the same frame, e.g. rejects,
        so one pass over a micro-batch writes both."""
        columns = candidates.columns
        through = F.col(passthrough) if passthrough else F.lit(False)
        if self.fast(d):
            # StimeTable.verdicts as SQL: Eq. 8 when b is later, Eq. 9 otherwise
            dt = F.col("b_t") - F.col("a_t")
            slack = F.lit(4 * UNIT_ROUNDOFF) * (F.abs(dt) + F.lit(d))
            later = dt >= 0
            y = F.when(later, dt - F.lit(d)).otherwise(dt + F.lit(d))
            yes = F.when(later, y + slack <= F.col("sat_lo")).otherwise(
                y - slack >= F.col("inv_hi")
            )
            no = F.when(later, y - slack > F.col("sat_hi")).otherwise(y + slack < F.col("inv_lo"))
            how = "left" if passthrough else "inner"
            joined = candidates.join(self.table(delta), ["a_template", "b_template"], how)
            return joined.filter(through | ~no).select(*columns, (~through & ~yes).alias("pending"))
        schema = StructType([*candidates.schema.fields, StructField("pending", BooleanType())])
        return candidates.withColumn("pending", F.lit(False)).mapInPandas(
            band_step(self.band, d, delta, [*columns, "pending"], decided=passthrough), schema
        )


def band_step(
    band: BandDecider,
    d: float,
    delta: float,
    columns: Sequence[str],
    decided: str | None = None,
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """A ``mapInPandas`` step (picklable): the ``columns`` of each batch's pairs that satisfy
    jc(d, delta) by the certified band decision (exact; ``PAIR_INPUTS`` columns).  Rows whose
    boolean column ``decided`` is true are kept without a probe."""

    def decide(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            if pdf.empty:
                continue
            keep = pdf[decided].to_numpy(dtype=bool) if decided else np.zeros(len(pdf), bool)
            probe = np.flatnonzero(~keep)
            keep[probe] = band.decide(*pair_inputs(pdf.iloc[probe]), d, delta)
            yield pdf.loc[keep, list(columns)]

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
    events, classified = read_events(
        spark, source_dir, streams, d_max, max_files_per_trigger, extra_watermark_ms
    )
    pi_a, pi_b = streams[0].pi, streams[1].pi
    before, after = pi_a + d_max + 1.0, d_max + pi_b + 1.0  # loose partitions, 1 ms rounding
    width = max(before, after)
    # Theorem 4 with slack: the watermark trails by D + the band, so it never cuts an on-time row
    delay = max(s.max_delay for s in streams) + width + extra_watermark_ms
    slack = f"{int(np.ceil(delay))} milliseconds"
    bucket = F.floor(F.col("t_det") / width)

    def side(stream: int, name: str, buckets: Column) -> DataFrame:
        return (
            events.filter(F.col("stream") == stream)
            .withWatermark("ts", slack)
            .select(
                F.col("id").alias(f"{name}_id"),
                F.col("template").alias(f"{name}_template"),
                F.col("t_det").alias(f"{name}_t"),
                F.col("ts").alias(f"{name}_ts"),
                buckets.alias(f"{name}_bucket"),
            )
        )

    a = side(0, "a", F.explode(F.array(*[bucket + k for k in (-1, 0, 1)])))
    b = side(1, "b", bucket)
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
    of ``./dev bench spark``).  Rejected input is left out (see :func:`rejects_query`).
    A ``decider`` built earlier (query installation: its stime tables) can be passed in.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    candidates, _ = ptjoin_candidates(spark, source_dir, streams, d, max_files_per_trigger)
    if not decide:
        return parquet_sink(
            candidates.select("a_id", "b_id"), output_dir, checkpoint_dir, available_now
        )
    decided = (decider or Decider(spark, streams)).decide(candidates, d, delta)
    inputs = F.array(  # one nullable column: cheap to write for the (almost) all-null case
        F.col("a_template").cast("double"),
        "a_t",
        F.col("b_template").cast("double"),
        "b_t",
        F.lit(float(d)),
        F.lit(float(delta)),
    )
    pairs = decided.select("a_id", "b_id", F.when(F.col("pending"), inputs).alias("pending"))
    return parquet_sink(pairs, output_dir, checkpoint_dir, available_now)


def read_pairs(
    spark: SparkSession,
    output_dir: str,
    streams: tuple[StreamSpec, StreamSpec] | None = None,
) -> np.ndarray:
    """The committed pairs of a query's output, as a sorted ``(n, 2)`` array.

    Pending pairs (a PTJoin fast-path comparison inside a stime bracket) are decided here in
    exact arithmetic, which needs the query's ``streams``.
    """
    frame = spark.read.schema(SINK_SCHEMA).parquet(output_dir).toPandas()
    pending = frame["pending"].notna().to_numpy()
    if pending.any():
        if streams is None:
            raise ValueError(
                f"{int(pending.sum())} pairs in {output_dir} await their exact decision: "
                "pass the query's streams to read_pairs"
            )
        inputs = pd.DataFrame(
            np.stack(frame.loc[pending, "pending"].to_list()), columns=PENDING_FIELDS
        )
        ok = decide_pending(BandDecider(*(s.templates for s in streams)), inputs)
        keep = ~pending
        keep[np.flatnonzero(pending)[ok]] = True
        frame = frame[keep]
    return sort_pairs(frame[["a_id", "b_id"]].to_numpy(dtype=np.int64))
