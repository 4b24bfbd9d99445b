"""The baseline of ``bench spark --workload interval``: interval timing correlation as a Spark
Structured Streaming stream-stream join (interval timing paper, Section 4), the design the
workbench ran before its operators ran inside the tasks by time range
(:mod:`workbench.spark.queries.ranges`).

Events carry uniform interval timestamps: every template of both streams is a one-bucket
histogram, and an event of template k detected at t covers ``[t - len_k, t]``.  A pair joins
when ``P(|Xa - Xb| <= d) >= ct``.

The join state is PTJoin's (:func:`benchmarks.stream_ptjoin.ptjoin_candidates`): accepted events
(well formed, known stream and template, on time) with watermarks on both sides, and B events
whose max time lies in A's loose partitions, on an equi bucket key.  The rest follows the
eager timing correlation (Algorithms 2-3) with the A event as the base tuple:

- LH, LL, RL, RH of the base (Section 4.1, Figure 1(b); the closed forms of
  :func:`workbench.interval_bounds.bounds_tuple`, the same floating-point operations) are SQL
  expressions, so the tight range ``max(I_b) in [LH, RH]`` and the satisfaction range
  ``[LL, RL]`` (joins without any probability) are decided in the JVM;
- only the pairs in the probe regions ``[LH, LL)`` and ``(RL, RH]`` are probed (Algorithm 3)
  by the certified exact band decision (:class:`workbench.decision.BandDecider`) in a
  vectorised pandas step.  Like the in-process operators, the four bounds are moved outwards
  by a bound on their rounding, so SR and VR are exact.

The pandas step still receives the satisfaction-range pairs (flagged, passed through without a
probability): one streaming DataFrame cannot be split into two branches without Spark running
the stream-stream join, and keeping its state, twice.  Below ``d = max(pi, len)`` the bounds
are PTJoin's loose partitions (Eq. 4-6), still sound.  The in-process operators take the
later-arriving event as the base; the ranges differ from side to side but are sound on both,
so a pair is decided the same and the pair set
equals theirs (:mod:`workbench.operators.interval`), pair for pair.  The output
is a Parquet sink of ``(a_id, b_id)`` (:func:`benchmarks.stream_ptjoin.read_pairs`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from benchmarks.stream_ptjoin import PAIR_SCHEMA, band_step, ptjoin_candidates
from workbench.decision import UNIT_ROUNDOFF, BandDecider
from workbench.operators.base import StreamSpec
from workbench.spark.queries.source import parquet_sink

__all__ = ["interval_bounds_columns", "interval_candidates", "interval_query"]


def _lengths(spec: StreamSpec, side: str) -> list[float]:
    """The interval length of every template of a stream (one-bucket templates only)."""
    lengths = []
    for k, t in enumerate(spec.templates):
        if t.n_buckets != 1:
            raise ValueError(
                f"templates[{k}] of stream {side} has {t.n_buckets} buckets; "
                "interval correlation needs uniform intervals (one bucket)"
            )
        lengths.append(float(t.length))
    return lengths


def _length_of(template: Column, lengths: list[float]) -> Column:
    """The length of each row's template, looked up in a literal array."""
    return F.element_at(F.array(*[F.lit(x) for x in lengths]), template + 1)


def interval_bounds_columns(
    lo: Column, hi: Column, d: float, ct: float, pi: float
) -> tuple[Column, Column, Column, Column]:
    """LH, LL, RL, RH of base intervals ``[lo, hi]`` as SQL expressions.

    The operations of :func:`workbench.interval_bounds.bounds_tuple` in the same order (IEEE
    doubles in both), so the JVM draws the partitions exactly where the in-process operators
    do: the exact bounds where ``d >= max(pi, hi - lo)``, the loose partitions elsewhere.
    """
    length = hi - lo
    small, large = F.least(length, F.lit(pi)), F.greatest(length, F.lit(pi))
    corner = small / (2 * large)
    quantile = (
        F.when(F.lit(ct) <= corner, F.sqrt(2 * length * pi * ct))
        .when(F.lit(ct) <= 1 - corner, ct * large + small / 2)
        .otherwise(length + pi - F.sqrt(2 * length * pi * (1 - ct)))
    )
    exact = F.lit(d) >= F.greatest(length, F.lit(pi))
    return (
        lo + ct * length - d,
        F.when(exact, lo - d + quantile).otherwise(hi - d + pi),
        F.when(exact, hi + d - ct * length).otherwise(lo + d),
        F.when(exact, hi + d + pi - quantile).otherwise(hi + d + pi),
    )


def interval_candidates(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    d: float,
    ct: float,
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """Pairs with B's max time in ``[LH, RH]`` of their A event, flagged ``sr`` when it lies in
    ``[LL, RL]``, and the classified raw stream (for
    :func:`~workbench.spark.queries.source.rejects_query`).

    Returns ``(candidates, classified)``; candidates have a_id, a_template, a_lo, a_t, b_id,
    b_template, b_lo, b_t, sr.
    """
    if not 0 < ct < 1:
        raise ValueError(f"ct = {ct!r} must lie strictly between 0 and 1")
    len_a, len_b = _lengths(streams[0], "A"), _lengths(streams[1], "B")
    loose, classified = ptjoin_candidates(
        spark, source_dir, streams, d, max_files_per_trigger=max_files_per_trigger
    )
    framed = loose.select(
        "a_id",
        "a_template",
        (F.col("a_t") - _length_of(F.col("a_template"), len_a)).alias("a_lo"),
        "a_t",
        "b_id",
        "b_template",
        (F.col("b_t") - _length_of(F.col("b_template"), len_b)).alias("b_lo"),
        "b_t",
    )
    a_lo, a_t, b_t = F.col("a_lo"), F.col("a_t"), F.col("b_t")
    pi = streams[1].pi
    lh, ll, rl, rh = interval_bounds_columns(a_lo, a_t, d, ct, pi)
    # EagerCorrelation's margin: the bounds' rounding, so SR and VR hold no doubtful pair
    margin = F.lit(16 * UNIT_ROUNDOFF) * (F.abs(a_t) + F.lit(d + pi) + (a_t - a_lo))
    candidates = framed.filter((b_t >= lh - margin) & (b_t <= rh + margin)).withColumn(
        "sr", (b_t >= ll + margin) & (b_t <= rl - margin)
    )
    return candidates, classified


def interval_query(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    d: float,
    ct: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    max_files_per_trigger: int | None = None,
) -> StreamingQuery:
    """Start the streaming interval timing correlation into a Parquet sink of (a_id, b_id).

    Times are milliseconds, as in the replay.  ``max_files_per_trigger=1`` makes every replay
    file a micro-batch of its own (the watermark then advances between them).  Rejected input
    is left out (see :func:`~workbench.spark.queries.source.rejects_query` on
    :func:`interval_candidates`' second frame).
    """
    candidates, _ = interval_candidates(spark, source_dir, streams, d, ct, max_files_per_trigger)
    band = BandDecider(*(s.templates for s in streams))
    # Algorithm 3 for the probe-region pairs (exact); satisfaction-range pairs pass unprobed
    pairs = candidates.mapInPandas(band_step(band, d, ct, ["a_id", "b_id"], "sr"), PAIR_SCHEMA)
    return parquet_sink(pairs, output_dir, checkpoint_dir, available_now)
