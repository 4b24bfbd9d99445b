"""Temporal coalescing of window extents on Spark Structured Streaming (coalescing paper,
Sections 2-5; the in-process extents of :mod:`workbench.coalesce` are the oracle).

**Tuples.**  A replay record ``(group, id, value, t, arrival)`` is a raw stream tuple of
Section 2.3: timestamp ``t`` (ms), a time-invariant grouping attribute ``group`` and one
time-varying coalescing attribute ``value``; ``id`` numbers the tuples in arrival order and
breaks ties in ``t`` (the in-process extents order ties by arrival).  As in
:mod:`workbench.coalesce.extent`, a tuple is valid over ``[t, t_next)`` (``t_next`` the
group's next timestamp, or ``t`` for the latest), so consecutive tuples of a group always meet
and a run breaks only where the value-equivalence changes.  :func:`coalesce_input` classifies
every line (:mod:`workbench.spark.source`): malformed, or ``"late"`` when ``arrival > t + D``,
else accepted; only accepted tuples are coalesced.

**Windows.**  A time-based window of size T holds the accepted tuples with
``t >= t_max - T`` (``t_max`` the largest timestamp of *all* groups, as one in-process extent
fed every group).  A tuple-based window of size w holds each group's w tuples with the largest
``(t, id)`` (a partitioned window: one in-process extent per group), because a per-group
operator sees its own group's tuples only, and the watermark carries a time bound across
groups, never a rank.  Both views depend only on the set of tuples arrived so far, not on
their order (a tuple too late on arrival would lie outside every later window), which is what
makes a micro-batch engine able to reproduce them exactly.

**Eager coalescing** (Algorithm 2 and its time-based variant, Appendix A) is a per-group
``applyInPandasWithState`` operator on the default state store.  A group's state is its
extent: the retained timestamps in ``(t, id)`` order, the index where each coalesced tuple
starts (so each tuple's slice is its timestamp vector), and one value per coalesced tuple
(per timestamp when the equivalence is not transitive, as the in-process extent keeps them).
Inserting a micro-batch's tuples, out of order or not, judges value-equivalence only between
each new tuple and its neighbours: a judgement between two old neighbours is kept, so a new
tuple merges into a run, splits it, or bridges two runs (``mergeTuples``/``splitTuple``)
without re-coalescing the group.  Expiry detaches the oldest timestamps from the first vector.
For time windows the watermark (delay ``ceil(R) + 1`` ms for a retention R) bounds ``t_max``
from below for every group; each group's event-time timeout sits at its oldest retained
timestamp, so the group is called again when the watermark passes it and detaches what left
the window.  Spark's watermark lags one micro-batch, so a group with no tuples and no due
timeout in a batch can still show timestamps that another group's newer tuples expired:
every emitted coalesced tuple carries its timestamp vector, and :func:`extents_view` applies
the exact global bound ``t_max - T`` (nothing is left to cut after the final no-data batch
of ``availableNow`` for whole-millisecond timestamps).  Each call emits the group's whole
current extent (a group whose extent empties emits nothing: its last extent lies wholly
before the bound); a ``foreachBatch`` step writes each micro-batch to ``batch=<id>`` in
Parquet, replacing an earlier attempt of the same id, so with the checkpoint a restart loses
and duplicates nothing.

**Lazy coalescing** (Algorithm 1 and the Section 5 scan) stores raw tuples only
(:func:`raw_tuples_query`, a Parquet file sink) and coalesces when asked
(:func:`lazy_coalesce`): a batch query that cuts the window (``t >= max(t) - T``, or a per-group
``row_number`` for tuple windows), then gaps-and-islands with window functions: a break flag
where the equivalence fails against the previous tuple (``lag``), a running sum of the flags
numbers the runs, and min/max/count/``min_by`` per run, ``lead`` for the end; no Python per
tuple.

**Equivalences supported on Spark**: all five of :class:`~workbench.coalesce.Equivalence`
(equal, absolute and relative bounded difference, increasing, quantised) on one DOUBLE
coalescing attribute, with exactly the in-process arithmetic: the one table of rules
(:data:`~workbench.coalesce.equivalence.KINDS`) evaluated over NumPy arrays (:data:`NUMPY`,
the eager state) and over columns (:data:`SPARK`, the lazy scan), IEEE doubles throughout
(``floor`` of the quotient for quantised values, the representative ``floor(v / q) * q``); an
unknown kind is a ``ValueError``.  Several coalescing
attributes (tuple values) are not supported: the replay schema has one value column.

**Restarts** (:func:`restart_kind`): the eager state keeps the tuples of a *retention*
``R >= `` window size, so a new window size up to R restarts from the same checkpoint (the
operator applies the size when it emits); a larger size, another window kind, another
retention or another equivalence needs a new checkpoint (the state holds runs coalesced under
the old equivalence and nothing older than R), and the operator refuses a checkpoint written
with other state settings.  Lazy coalescing keeps raw tuples, so its sink query is unaffected
by any window or equivalence change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from workbench.coalesce import EagerExtent, Equivalence, Window
from workbench.coalesce.equivalence import NUMPY, Arithmetic
from workbench.spark.source import (
    CORRUPT,
    EPOCH_OFFSET_MS,
    event_time,
    parquet_sink,
    read_stream,
    with_reason,
)

__all__ = [
    "EXTENT_COLUMNS",
    "TUPLE_FIELDS",
    "CoalesceSettings",
    "coalesce_input",
    "eager_coalesce_query",
    "eager_update",
    "extents_view",
    "in_process_view",
    "lazy_coalesce",
    "raw_tuples_query",
    "read_emitted",
    "read_extents",
    "restart_kind",
]

TUPLE_FIELDS = "group INT, id LONG, value DOUBLE, t DOUBLE, arrival DOUBLE"
EXTENT_COLUMNS = ["group", "value", "start", "end", "count"]
# one emitted coalesced tuple: its timestamp vector and each timestamp's representative value
# (the value the tuple reports if the window cuts it there)
OUTPUT_SCHEMA = (
    "group INT, start DOUBLE, end DOUBLE, value DOUBLE, count LONG, "
    "stamps ARRAY<DOUBLE>, reps ARRAY<DOUBLE>"
)
# the group's extent: its state_key, then timestamps, ids, where each coalesced tuple starts and
# the values as NumPy buffers (PySpark 4.3 cannot read an ARRAY field of a state schema)
STATE_SCHEMA = "settings STRING, stamps BINARY, ids BINARY, starts BINARY, vals BINARY"
SPARK = Arithmetic(F.abs, F.floor, F.greatest)
"""Spark columns: the equivalence rules of :data:`~workbench.coalesce.equivalence.KINDS` as
column expressions (the lazy scan)."""


@dataclass(frozen=True)
class CoalesceSettings:
    """A coalescing query's window, equivalence, scheme and (eager) retention.

    ``retention`` (default: the window size) is how much the eager state keeps: time units for
    time windows, tuples per group for tuple windows; it must be at least the window size.

    >>> CoalesceSettings(Window("time", 5000.0)).retained
    5000.0
    """

    window: Window
    equivalence: Equivalence = Equivalence()
    scheme: Literal["eager", "lazy"] = "eager"
    retention: float | None = None

    def __post_init__(self) -> None:
        if self.scheme not in ("eager", "lazy"):
            raise ValueError(f"scheme = {self.scheme!r} must be 'eager' or 'lazy'")
        if self.retention is not None:
            Window(self.window.kind, self.retention)  # same validation as a window size
            if self.retention < self.window.size:
                raise ValueError(
                    f"retention = {self.retention!r} must be at least the window size "
                    f"{self.window.size!r}"
                )

    @property
    def retained(self) -> float:
        """The retention in effect."""
        return self.window.size if self.retention is None else float(self.retention)

    @property
    def state_key(self) -> str:
        """What the eager state depends on (not the window size): kind, retention, equivalence."""
        eq = self.equivalence
        return f"{self.window.kind}/{self.retained!r}/{eq.kind}/{eq.tolerance!r}/{eq.quantum!r}"


def restart_kind(old: CoalesceSettings, new: CoalesceSettings) -> tuple[str, str]:
    """How a query with settings ``old`` restarts under ``new``: ``("same", why)`` from its
    checkpoint, or ``("new", why)`` on a new checkpoint (re-reading the replay from its start).

    >>> old = CoalesceSettings(Window("time", 60_000.0), retention=120_000.0)
    >>> restart_kind(old, CoalesceSettings(Window("time", 90_000.0), retention=120_000.0))[0]
    'same'
    >>> restart_kind(old, CoalesceSettings(Window("time", 180_000.0)))[0]
    'new'
    """
    if old == new:
        return "same", "settings unchanged"
    if old.scheme != new.scheme:
        return "new", (
            f"the scheme changes from {old.scheme} to {new.scheme}: eager keeps coalesced state, "
            "lazy a sink of raw tuples; they are different queries"
        )
    if new.scheme == "lazy":
        return "same", (
            "lazy coalescing stores raw tuples: the raw-tuple query is unchanged and the next "
            "scan applies the new window and equivalence"
        )
    if old.window.kind != new.window.kind:
        return "new", (
            f"the window kind changes from {old.window.kind} to {new.window.kind}: the state, "
            "the watermark and the timeouts differ"
        )
    if old.equivalence != new.equivalence:
        return "new", (
            "the equivalence changes: the state holds runs coalesced under the old one "
            "(one value per run for equality and quantisation)"
        )
    if new.window.size > old.retained:
        return "new", (
            f"the window size {new.window.size:g} exceeds what the state retains "
            f"({old.retained:g}): older tuples are gone, so the replay is re-read"
        )
    if old.retained != new.retained:
        return "new", (
            f"the retention changes from {old.retained:g} to {new.retained:g}: the watermark "
            "delay and what the state keeps differ"
        )
    return "same", (
        f"the window size {old.window.size:g} -> {new.window.size:g} fits in the retained "
        f"{old.retained:g}: the state has every tuple the new window needs"
    )


def coalesce_input(
    spark: SparkSession,
    source_dir: str,
    max_delay: float,
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The accepted tuples of the replay under ``source_dir`` (with ``ts``, ``t`` as a
    timestamp) and the classified stream (for :func:`~workbench.spark.source.rejects_query`).

    A tuple is late (rejected) when ``arrival > t + max_delay``.
    """
    if not (math.isfinite(max_delay) and max_delay >= 0):
        raise ValueError(f"max_delay = {max_delay!r} must be a finite number >= 0")
    raw = read_stream(spark, source_dir, TUPLE_FIELDS, max_files_per_trigger)
    classified = with_reason(raw, [("late", F.col("arrival") <= F.col("t") + max_delay)])
    accepted = (
        classified.filter(F.col("reason").isNull())
        .drop("reason", CORRUPT)
        .withColumn("ts", event_time("t"))
    )
    return accepted, classified


# ---------------------------------------------------------------------------- eager, on Spark


_STATE_DTYPES = (np.float64, np.int64, np.int64, np.float64)


@dataclass
class _GroupExtent:
    """One group's eagerly coalesced extent: timestamps in (t, id) order, ``heads[i]`` whether
    timestamp i starts a coalesced tuple, and each timestamp's value (for a transitive
    equivalence, the value of its coalesced tuple)."""

    stamps: np.ndarray
    ids: np.ndarray
    heads: np.ndarray
    values: np.ndarray

    @classmethod
    def load(cls, state: tuple, transitive: bool) -> _GroupExtent:
        stamps, ids, starts, vals = (
            np.frombuffer(buffer, dtype=dtype)
            for buffer, dtype in zip(state[1:], _STATE_DTYPES, strict=True)
        )
        heads = np.zeros(len(stamps), dtype=bool)
        heads[starts] = True
        if transitive:
            vals = np.repeat(vals, np.diff(np.append(starts, len(stamps))))
        return cls(stamps, ids, heads, vals)

    def save(self, settings: str, transitive: bool) -> tuple:
        starts = np.flatnonzero(self.heads)
        vals = self.values[starts] if transitive else self.values
        arrays = (self.stamps, self.ids, starts, vals)
        return (
            settings,
            *(a.astype(d).tobytes() for a, d in zip(arrays, _STATE_DTYPES, strict=True)),
        )

    def insert(self, t: np.ndarray, ids: np.ndarray, values: np.ndarray, eq: Equivalence) -> None:
        """Add tuples in any order: only pairs with a new tuple are judged (merge, split or
        bridge); the judgement between two old neighbours is kept."""
        stamps = np.concatenate((self.stamps, t))
        all_ids = np.concatenate((self.ids, ids))
        order = np.lexsort((all_ids, stamps))
        new = order >= len(self.stamps)
        old_heads = np.concatenate((self.heads, np.zeros(len(t), dtype=bool)))[order]
        vals = np.concatenate((self.values, values))[order]
        pair_new = new[1:] | new[:-1]
        heads = np.empty(len(order), dtype=bool)
        heads[0] = True
        heads[1:] = np.where(pair_new, ~eq.same(vals[:-1], vals[1:], NUMPY), old_heads[1:])
        self.stamps, self.ids, self.heads, self.values = stamps[order], all_ids[order], heads, vals

    def cut(self, first: int) -> _GroupExtent:
        """The extent from timestamp ``first`` on (the first vector detached up to there)."""
        heads = self.heads[first:].copy()
        if len(heads):
            heads[0] = True
        return _GroupExtent(self.stamps[first:], self.ids[first:], heads, self.values[first:])

    def view(self, group: int, eq: Equivalence) -> pd.DataFrame:
        """The coalesced tuples, each with its timestamp vector and per-stamp representative."""
        starts = np.flatnonzero(self.heads)
        stops = np.append(starts[1:], len(self.stamps))
        reps = eq.representative(self.values, NUMPY)
        return pd.DataFrame(
            {
                "group": np.full(len(starts), group, dtype=np.int32),
                "start": self.stamps[starts],
                "end": self.stamps[np.append(starts[1:], stops[-1:] - 1)],
                "value": reps[starts],
                "count": (stops - starts).astype(np.int64),
                "stamps": [self.stamps[a:b].tolist() for a, b in zip(starts, stops, strict=True)],
                "reps": [reps[a:b].tolist() for a, b in zip(starts, stops, strict=True)],
            }
        )


def eager_update(
    settings: CoalesceSettings, delay_ms: int
) -> Callable[[tuple, Iterator[pd.DataFrame], GroupState], Iterator[pd.DataFrame]]:
    """The per-group state function of :func:`eager_coalesce_query` (a picklable closure for
    ``applyInPandasWithState``; tests call it with a stand-in ``GroupState``)."""
    eq, window, retained = settings.equivalence, settings.window, settings.retained
    transitive, key = eq.transitive, settings.state_key
    timed = window.kind == "time"

    def update(
        group_key: tuple, batches: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        group = int(group_key[0])
        if state.exists:
            if state.get[0] != key:
                raise ValueError(
                    f"checkpoint state was written with settings {state.get[0]!r}, not {key!r}: "
                    "restart on a new checkpoint (see restart_kind)"
                )
            extent = _GroupExtent.load(state.get, transitive)
        else:
            extent = _GroupExtent.load((key, b"", b"", b"", b""), transitive)
        for pdf in batches:
            if len(pdf):
                extent.insert(
                    pdf["t"].to_numpy(np.float64),
                    pdf["id"].to_numpy(np.int64),
                    pdf["value"].to_numpy(np.float64),
                    eq,
                )
        if timed:
            t_max = extent.stamps[-1] if len(extent.stamps) else -math.inf
            spark_watermark = state.getCurrentWatermarkMs()
            if spark_watermark > 0:  # = max event ms - delay (µs rounding: 0.001 slack)
                watermark = spark_watermark - EPOCH_OFFSET_MS  # back to replay time
                t_max = max(t_max, watermark + delay_ms - 0.001)
            extent = extent.cut(int(np.searchsorted(extent.stamps, t_max - retained)))
            shown = extent.cut(int(np.searchsorted(extent.stamps, t_max - window.size)))
        else:
            extent = extent.cut(max(0, len(extent.stamps) - int(retained)))
            shown = extent.cut(max(0, len(extent.stamps) - int(window.size)))
        if not len(extent.stamps):  # its last emitted extent lies wholly before the bound
            state.remove()
            return
        state.update(extent.save(key, transitive))
        if timed:  # called again once the watermark passes the oldest retained timestamp
            due = math.floor(extent.stamps[0] + retained + 0.001 - delay_ms)
            state.setTimeoutTimestamp(max(1, due + EPOCH_OFFSET_MS, state.getCurrentWatermarkMs()))
        yield shown.view(group, eq)

    return update


def _write_batch(output_dir: str) -> Callable[[DataFrame, int], None]:
    def write(batch: DataFrame, batch_id: int) -> None:
        # one action per batch; a re-run of the same id replaces its folder (idempotent)
        batch.write.mode("overwrite").parquet(f"{output_dir}/batch={batch_id}")

    return write


def eager_coalesce_query(
    spark: SparkSession,
    source_dir: str,
    settings: CoalesceSettings,
    max_delay: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    max_files_per_trigger: int | None = None,
) -> StreamingQuery:
    """Start eager coalescing of the replay under ``source_dir`` (times in ms) into
    ``output_dir`` (read it with :func:`read_extents`).  Rejected input is left out (run
    :func:`~workbench.spark.source.rejects_query` on :func:`coalesce_input`'s classified
    stream to keep it)."""
    if settings.scheme != "eager":
        raise ValueError(f"scheme = {settings.scheme!r}: eager_coalesce_query is eager")
    tuples, _ = coalesce_input(spark, source_dir, max_delay, max_files_per_trigger)
    delay_ms = math.ceil(settings.retained) + 1
    timed = settings.window.kind == "time"
    if timed:  # rows the watermark drops are older than the retention: too late anyway
        tuples = tuples.withWatermark("ts", f"{delay_ms} milliseconds")
    coalesced = (
        tuples.select("group", "id", "value", "t", "ts")
        .groupBy("group")
        .applyInPandasWithState(
            eager_update(settings, delay_ms),
            OUTPUT_SCHEMA,
            STATE_SCHEMA,
            "append",
            GroupStateTimeout.EventTimeTimeout if timed else GroupStateTimeout.NoTimeout,
        )
    )
    writer = coalesced.writeStream.foreachBatch(_write_batch(output_dir)).option(
        "checkpointLocation", checkpoint_dir
    )
    writer = writer.trigger(availableNow=True) if available_now else writer
    return writer.start()


def read_extents(
    spark: SparkSession, output_dir: str, window: Window, batch: int | None = None
) -> pd.DataFrame:
    """The coalesced view after micro-batch ``batch`` (default: the last) of an
    :func:`eager_coalesce_query` (:func:`extents_view` of :func:`read_emitted`)."""
    return extents_view(read_emitted(spark, output_dir), window, batch)


def read_emitted(spark: SparkSession, output_dir: str) -> pd.DataFrame:
    """Every row an :func:`eager_coalesce_query` emitted, with its micro-batch id ``batch``
    (no rows before its first batch)."""
    schema = f"{OUTPUT_SCHEMA}, batch INT"
    try:
        return spark.read.schema(schema).parquet(output_dir).toPandas()
    except Exception as exc:  # no batch written yet: the folder does not exist
        if "PATH_NOT_FOUND" not in str(exc):
            raise
        return spark.createDataFrame([], schema).toPandas()


def extents_view(emitted: pd.DataFrame, window: Window, batch: int | None = None) -> pd.DataFrame:
    """The coalesced view after micro-batch ``batch`` (default: the last): each group's latest
    extent, cut to ``window`` with the timestamp vectors: at the global bound ``t_max - T``
    (time), or to each group's w newest tuples (tuples; this also applies a smaller size to
    groups idle since a restart).  Columns ``EXTENT_COLUMNS``, sorted by group and start."""
    frame = emitted if batch is None else emitted[emitted["batch"] <= batch]
    latest = frame.groupby("group")["batch"].transform("max")
    frame = frame[frame["batch"] == latest]
    frame = frame.sort_values(["group", "start"], kind="stable")
    if window.kind == "time":
        bound = frame["end"].max() - window.size  # the newest tuple is never expired
        cut = [int(np.searchsorted(stamps, bound)) for stamps in frame["stamps"]]
    else:  # keep the group's w newest timestamps: drop what the later runs already fill
        count = frame["count"].to_numpy(np.int64)
        later = frame.groupby("group")["count"].transform(lambda c: c[::-1].cumsum()[::-1])
        keep = np.clip(int(window.size) - (later.to_numpy(np.int64) - count), 0, count)
        cut = (count - keep).tolist()
    rows = [
        (group, reps[k], stamps[k], end, len(stamps) - k)
        for (group, end, stamps, reps), k in zip(
            frame[["group", "end", "stamps", "reps"]].itertuples(index=False), cut, strict=True
        )
        if k < len(stamps)
    ]
    return _tidy(pd.DataFrame(rows, columns=EXTENT_COLUMNS))


def _tidy(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.astype(
        {
            "group": np.int64,
            "value": np.float64,
            "start": np.float64,
            "end": np.float64,
            "count": np.int64,
        }
    )
    return frame.sort_values(["group", "start"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- lazy, on Spark


def raw_tuples_query(
    spark: SparkSession,
    source_dir: str,
    max_delay: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
) -> StreamingQuery:
    """Store the accepted raw tuples (the lazy extent's storage) in a Parquet file sink."""
    tuples, _ = coalesce_input(spark, source_dir, max_delay)
    return parquet_sink(
        tuples.select("group", "id", "value", "t", "arrival"),
        output_dir,
        checkpoint_dir,
        available_now,
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


# ------------------------------------------------------------------------------- the oracle


def in_process_view(
    tuples: pd.DataFrame, window: Window, equivalence: Equivalence | None = None
) -> pd.DataFrame:
    """The in-process eager extent's view of accepted ``tuples`` pushed in arrival order: one
    extent over all groups for a time window, one per group for a tuple window (the Spark
    semantics above).  Columns ``EXTENT_COLUMNS``."""
    ordered = tuples.sort_values(["arrival", "id"], kind="stable")
    rows = zip(*(ordered[c].tolist() for c in ("group", "value", "t")), strict=True)
    extents: dict[object, EagerExtent] = {}
    for group, value, t in rows:
        slot = None if window.kind == "time" else group
        if slot not in extents:
            extents[slot] = EagerExtent(window, equivalence)
        extents[slot].push(t, value, group)
    view = [(c.group, c.value, c.ts, c.te, c.count) for e in extents.values() for c in e.view()]
    return _tidy(pd.DataFrame(view, columns=EXTENT_COLUMNS))
