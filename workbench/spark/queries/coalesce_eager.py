"""Eager coalescing on Spark Structured Streaming: the workbench's own
:class:`~workbench.coalesce.EagerExtent` per group inside Spark's stateful tasks (coalescing
paper, Algorithm 2 and its time-based variant, Appendix A; the tuples, windows and equivalences
of :mod:`workbench.spark.queries.coalesce`).

A per-group ``applyInPandasWithState`` operator on the default state store.  A group's state
is its retained tuples (timestamps, ids and values in ``(t, id)`` order, three binary columns)
under the settings' :attr:`~workbench.spark.queries.coalesce_base.CoalesceSettings.state_key`.  For
a group with new tuples (or a due timeout) the step merges them into the retained ones, cuts the
retention, and pushes the window's tuples, in ``(t, id)`` order, through an ``EagerExtent`` of
the window: the operator decides where each coalesced tuple starts (merge, split, detach), and
the step emits its view with each coalesced tuple's timestamp vector and per-timestamp
representative (the value it reports if the window cuts it there).  The view depends only on
the set of tuples arrived, not on their order (:mod:`workbench.spark.queries.coalesce`), so a
micro-batch's tuples, out of order or not, give the in-process extent's view.

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
and duplicates nothing.  Which setting changes keep the checkpoint:
:func:`~workbench.spark.queries.coalesce_base.restart_kind`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from workbench.coalesce import EagerExtent, Readings, Window
from workbench.coalesce.equivalence import NUMPY
from workbench.spark.queries.coalesce_base import (
    EXTENT_COLUMNS,
    CoalesceSettings,
    coalesce_input,
    tidy_extents,
)
from workbench.spark.queries.source import EPOCH_OFFSET_MS, read_batches, start_writer

__all__ = [
    "OUTPUT_SCHEMA",
    "STATE_SCHEMA",
    "eager_coalesce_query",
    "eager_update",
    "extents_view",
    "read_emitted",
    "read_extents",
]

# one emitted coalesced tuple: its timestamp vector and each timestamp's representative value
# (the value the tuple reports if the window cuts it there)
OUTPUT_SCHEMA = (
    "group INT, start DOUBLE, end DOUBLE, value DOUBLE, count LONG, "
    "stamps ARRAY<DOUBLE>, reps ARRAY<DOUBLE>"
)
# the group's retained tuples: its state_key, then timestamps, ids and values as NumPy buffers
# (PySpark 4.3 cannot read an ARRAY field of a state schema)
STATE_SCHEMA = "settings STRING, stamps BINARY, ids BINARY, vals BINARY"


_STATE_DTYPES = (np.float64, np.int64, np.float64)


def _view(
    group: int, t: np.ndarray, values: np.ndarray, settings: CoalesceSettings, t_max: float
) -> pd.DataFrame:
    """The window's tuples (``(t, id)`` order) through the workbench's eager extent: its
    coalesced tuples, each with its timestamp vector and per-timestamp representative."""
    eq = settings.equivalence
    extent = EagerExtent(settings.window, eq)
    extent.push_batch(Readings(t, values, np.full(len(t), group)))
    if settings.window.kind == "time":
        extent.advance(t_max)
    view = extent.view()
    counts = np.array([c.count for c in view], dtype=np.int64)
    if counts.sum() != len(t):
        raise RuntimeError(f"the extent holds {counts.sum()} of the window's {len(t)} tuples")
    stops = np.cumsum(counts)
    starts = stops - counts
    reps = eq.representative(values, NUMPY)
    return pd.DataFrame(
        {
            "group": np.full(len(view), group, dtype=np.int32),
            "start": [c.ts for c in view],
            "end": [c.te for c in view],
            "value": [float(c.value) for c in view],
            "count": counts,
            "stamps": [t[a:b].tolist() for a, b in zip(starts, stops, strict=True)],
            "reps": [reps[a:b].tolist() for a, b in zip(starts, stops, strict=True)],
        }
    )


def eager_update(
    settings: CoalesceSettings, delay_ms: int
) -> Callable[[tuple, Iterator[pd.DataFrame], GroupState], Iterator[pd.DataFrame]]:
    """The per-group state function of :func:`eager_coalesce_query` (a picklable closure for
    ``applyInPandasWithState``; tests call it with a stand-in ``GroupState``)."""
    window, retained, key = settings.window, settings.retained, settings.state_key
    timed = window.kind == "time"

    def update(
        group_key: tuple, batches: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        group = int(group_key[0])
        parts = []
        if state.exists:
            if state.get[0] != key:
                raise ValueError(
                    f"checkpoint state was written with settings {state.get[0]!r}, not {key!r}: "
                    "restart on a new checkpoint (see restart_kind)"
                )
            parts.append(
                tuple(
                    np.frombuffer(buffer, dtype=dtype)
                    for buffer, dtype in zip(state.get[1:], _STATE_DTYPES, strict=True)
                )
            )
        for pdf in batches:
            parts.append(
                tuple(
                    pdf[c].to_numpy(d)
                    for c, d in zip(("t", "id", "value"), _STATE_DTYPES, strict=True)
                )
            )
        t, ids, values = (
            np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, d)
            for k, d in enumerate(_STATE_DTYPES)
        )
        order = np.lexsort((ids, t))
        t, ids, values = t[order], ids[order], values[order]
        if timed:
            t_max = t[-1] if len(t) else -math.inf
            spark_watermark = state.getCurrentWatermarkMs()
            if spark_watermark > 0:  # = max event ms - delay (µs rounding: 0.001 slack)
                watermark = spark_watermark - EPOCH_OFFSET_MS  # back to replay time
                t_max = max(t_max, watermark + delay_ms - 0.001)
            kept = int(np.searchsorted(t, t_max - retained))
            shown = int(np.searchsorted(t, t_max - window.size))
        else:
            t_max = math.inf
            kept = max(0, len(t) - int(retained))
            shown = max(0, len(t) - int(window.size))
        if len(t) == kept:  # its last emitted extent lies wholly before the bound
            state.remove()
            return
        t, ids, values = t[kept:], ids[kept:], values[kept:]
        state.update((key, t.tobytes(), ids.tobytes(), values.tobytes()))
        if timed:  # called again once the watermark passes the oldest retained timestamp
            due = math.floor(t[0] + retained + 0.001 - delay_ms)
            state.setTimeoutTimestamp(max(1, due + EPOCH_OFFSET_MS, state.getCurrentWatermarkMs()))
        shown -= kept
        yield _view(group, t[shown:], values[shown:], settings, t_max)

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
    query_name: str | None = None,
) -> StreamingQuery:
    """Start eager coalescing of the replay under ``source_dir`` (times in ms) into
    ``output_dir`` (read it with :func:`read_extents`), named ``query_name`` in its progress.
    Rejected input is left out (run :func:`~workbench.spark.queries.source.rejects_query` on
    :func:`coalesce_input`'s classified stream to keep it)."""
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
    writer = coalesced.writeStream.foreachBatch(_write_batch(output_dir))
    return start_writer(writer, checkpoint_dir, available_now, query_name)


def read_extents(
    spark: SparkSession, output_dir: str, window: Window, batch: int | None = None
) -> pd.DataFrame:
    """The coalesced view after micro-batch ``batch`` (default: the last) of an
    :func:`eager_coalesce_query` (:func:`extents_view` of :func:`read_emitted`)."""
    return extents_view(read_emitted(spark, output_dir, batch), window, batch)


def read_emitted(spark: SparkSession, output_dir: str, batch: int | None = None) -> pd.DataFrame:
    """Every row an :func:`eager_coalesce_query` emitted up to micro-batch ``batch`` (default:
    all; a running query's committed batches are the safe ones to read, :func:`read_batches`),
    with its micro-batch id ``batch`` (no rows before its first batch)."""
    schema = f"{OUTPUT_SCHEMA}, batch INT"
    emitted = read_batches(spark, output_dir, schema, batch)
    if emitted is None:
        return spark.createDataFrame([], schema).toPandas()
    return emitted


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
    return tidy_extents(pd.DataFrame(rows, columns=EXTENT_COLUMNS))
