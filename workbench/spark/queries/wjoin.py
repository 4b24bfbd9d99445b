"""The multi-way sliding-window join (W-join) on Spark Structured Streaming: the workbench's own
BEW-join inside Spark's stateful tasks, per time range (W-join paper Sections 3 and 5.2; the
batch design of :mod:`workbench.spark.queries.ranges`, kept across micro-batches as the live PTJoin
keeps it, :mod:`workbench.spark.queries.live_ranges`).

An m-tuple (one tuple per stream S_0 .. S_m-1, 2 <= m <= 6) is a result when the tuples' keys
are equal and their timestamps meet every window constraint ``|t_i - t_j| <= W_ij`` (Section 2,
"W-join forms": uniform and non-uniform cliques, paths, graphs;
:class:`~workbench.operators.windows.WindowConstraints`).

Each stream's accepted tuples (well formed, a known stream, arrival not before t, on time:
``arrival <= t + D_s``, the in-process rule; :func:`wjoin_checks`) are keyed as the batch job
keys them (:class:`~workbench.spark.queries.ranges.RangePlan`): stream 0 owns the range of its time,
a tuple of stream s is copied to every range of ``[t - C_0s, t + C_0s]`` (C the constraint
graph's shortest paths, Section 5.2: every result meets them), the ranges
:data:`~workbench.spark.queries.live_ranges.BANDS_PER_RANGE` bands wide, and each range is split
into :data:`KEY_BUCKETS` by the hash of the key (partners share it: no copies).  Per group,
``applyInPandasWithState`` keeps the tuples a later one can still join in Spark's state store;
for a group with new tuples, :class:`WJoinRangeStep` pushes the kept and the new tuples, in
arrival order, through a :class:`~workbench.operators.wjoin.BEWJoin` (the compiled kernel) and
a flush, and emits the results with a new tuple: BEW finds a result when its last tuple
arrives (Section 3.1), so a result of kept tuples only was emitted by the micro-batch that
brought the last of them.  Each result is found once, in its stream-0 tuple's range.

**Eviction.**  The watermark trails the largest time seen by max D + the band (``2 max C_0s``):
a later on-time tuple arrived after every tuple seen and ``arrival <= t + D``, so its time is
at least that largest time less max D, and every tuple of a result with it lies at or after
the watermark.  A group keeps only those, and its state ends with an event-time timeout once
the watermark passes its range's end.

The output is a Parquet sink of ``(id_0, ..., id_m-1)``, one stream's tuple id per column,
exactly once with the checkpoint; its result set is the in-process BEW-join's and
:func:`~workbench.operators.wjoin.brute_force_wjoin`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState

from workbench.events import sort_pairs
from workbench.operators import BEWJoin
from workbench.operators.windows import WindowConstraints, WTuples
from workbench.spark.queries.live_ranges import BANDS_PER_RANGE, keep_from_watermark, with_new
from workbench.spark.queries.ranges import RangePlan, join_reach
from workbench.spark.queries.source import parquet_sink, read_classified

__all__ = [
    "KEY_BUCKETS",
    "WJOIN_FIELDS",
    "WJoinRangeStep",
    "check_delays",
    "read_results",
    "result_schema",
    "wjoin_checks",
    "wjoin_query",
    "wjoin_results",
]

WJOIN_FIELDS = "stream INT, id LONG, key LONG, t DOUBLE, arrival DOUBLE"
KEY_BUCKETS = 4
"""Groups per range, by the hash of the key: a micro-batch's few ranges spread over the task
slots."""
STATE_SCHEMA = "tuples BINARY"
STATE_DTYPE = np.dtype(
    [("stream", np.int64), ("id", np.int64), ("value", np.int64), ("ts", np.float64),
     ("arrival", np.float64)]
)  # fmt: skip
"""A group's kept tuples: :class:`~workbench.operators.windows.WTuples` rows as one packed
array."""


def result_schema(m: int) -> str:
    """The output schema of an m-way join: one tuple id per stream."""
    return ", ".join(f"id_{s} LONG" for s in range(m))


def check_delays(constraints: WindowConstraints, max_delay: Sequence[float]) -> list[float]:
    """``max_delay`` as one finite delay >= 0 per stream, or a ``ValueError`` naming it."""
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


def _bew(constraints: WindowConstraints, delays: Sequence[float]) -> BEWJoin:
    """The BEW-join the tasks run: the uniform strategy on a uniform clique, else the
    modified one (Section 5.2), hashed on the key."""
    strategy = "uniform" if constraints.form == "uniform clique" else "modified"
    return BEWJoin(
        constraints=constraints, max_delay=list(delays), strategy=strategy, implementation="hash"
    )


class WJoinRangeStep:
    """The ``applyInPandasWithState`` step of the streaming W-join (module docstring):
    picklable; its operator is restarted for every group."""

    def __init__(self, op: BEWJoin, width: float) -> None:
        self.op = op
        self.width = float(width)

    def __call__(
        self, key: tuple[np.int64, np.int32], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        """One group's micro-batch: its new tuples joined with those it keeps."""
        if state.hasTimedOut:
            state.remove()
            return
        new = pd.concat(list(frames), ignore_index=True)
        fresh = np.empty(len(new), STATE_DTYPE)
        for name, column in (("stream", "stream"), ("id", "id"), ("value", "key"), ("ts", "t")):
            fresh[name] = new[column].to_numpy()
        fresh["arrival"] = new["arrival"].to_numpy()
        rows = fresh if not state.exists else np.concatenate(
            [np.frombuffer(state.get[0], STATE_DTYPE), fresh]
        )  # fmt: skip
        rows = rows[np.lexsort((rows["id"], rows["stream"], rows["arrival"]))]
        results = with_new(self._join(rows), fresh)
        keep_from_watermark(state, rows, "ts", (int(key[0]) + 1) * self.width)
        if len(results):
            yield pd.DataFrame({f"id_{s}": results[:, s] for s in range(results.shape[1])})

    def _join(self, rows: np.ndarray) -> np.ndarray:
        """The results the BEW-join emits over ``rows`` (arrival order) and a flush."""
        op = self.op
        op.restart()
        tuples = WTuples(*(rows[name].copy() for name in STATE_DTYPE.names))
        out = [op.push_batch(tuples).ids, op.flush().ids]
        counters = op.counters
        if counters.late or counters.bad:
            raise RuntimeError(
                f"{counters.late} late and {counters.bad} bad tuples reached the join: the "
                "Spark checks must reject them first"
            )
        return np.concatenate(out).reshape(-1, op.arity)


def wjoin_results(
    spark: SparkSession,
    source_dir: str,
    constraints: WindowConstraints,
    max_delay: Sequence[float],
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The m-way join as a streaming DataFrame of ``result_schema(m)``, and the classified raw
    stream (for :func:`~workbench.spark.queries.source.rejects_query`).

    Returns ``(results, classified)``.
    """
    delays = check_delays(constraints, max_delay)
    tuples, classified = read_classified(
        spark, source_dir, WJOIN_FIELDS, wjoin_checks(delays), "t", max_files_per_trigger
    )
    op = _bew(constraints, delays)
    reach = dataclasses.replace(join_reach(op), time="t", key="key")
    plan = RangePlan(BANDS_PER_RANGE * reach.band, reach, {})
    slack = f"{math.ceil(max(delays) + reach.band)} milliseconds"
    keyed = (
        plan.keyed(tuples.withWatermark("ts", slack))
        .withColumn("salt", F.pmod(F.xxhash64("key"), F.lit(KEY_BUCKETS)).cast("int"))
        .select("range", "salt", "stream", "id", "key", "t", "arrival", "ts")
    )
    results = keyed.groupBy("range", "salt").applyInPandasWithState(
        WJoinRangeStep(op, plan.width),
        result_schema(constraints.m),
        STATE_SCHEMA,
        "append",
        "EventTimeTimeout",
    )
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
    input is left out (see :func:`~workbench.spark.queries.source.rejects_query` on
    :func:`wjoin_results`' second frame).
    """
    results, _ = wjoin_results(spark, source_dir, constraints, max_delay, max_files_per_trigger)
    return parquet_sink(results, output_dir, checkpoint_dir, available_now, query_name)


def read_results(spark: SparkSession, output_dir: str, m: int) -> np.ndarray:
    """The committed results of a query's output, as a lexicographically sorted ``(n, m)``
    array of tuple ids."""
    rows = spark.read.schema(result_schema(m)).parquet(output_dir).toPandas()
    return sort_pairs(rows[[f"id_{s}" for s in range(m)]].to_numpy(dtype=np.int64))
