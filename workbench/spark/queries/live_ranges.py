"""The live timing join by time ranges: the workbench's operator inside Spark's stateful tasks
(PTJoin Section 3, Eq. 4-5, Definition 6, Theorem 4; the interval correlations of the interval
timing paper, Algorithms 1-7; the batch design of :mod:`workbench.spark.queries.ranges`, kept across
micro-batches).

Each accepted event is keyed by the ranges of :class:`~workbench.spark.queries.ranges.RangePlan` for
the envelope's band (:data:`BANDS_PER_RANGE` bands wide; a B event in its own range, an A
event copied to every range its band overlaps), and ``transformWithStateInPandas``
(:class:`LiveRangeProcessor`) keeps, per range, the range's events a later event can still
join in Spark's state store (one value state, a packed binary array, in RocksDB: that API's
store, which the query's start asks for, :func:`rocksdb_state`), checkpointed with the query,
exactly once.  For a range with new events, :class:`LiveRangeStep` pushes the kept events and
the new ones, in arrival order, through the run's operator (a
:class:`~workbench.operators.ptjoin.PTJoin` or one of the five interval correlations,
:data:`~workbench.operators.TIMING_JOINS`: the compiled kernels, the certified decisions and
their rational fallback) and a flush, and emits the pairs with a new event on either side: a
pair of two kept events was emitted by the micro-batch that brought the later of them.  So
every pair is decided once, under the parameters in force when its later event came, as
in-process.

**Rejects.**  The live query's rejected records
(:func:`~workbench.spark.queries.source.with_reason`) are keyed to one group of their own,
:data:`REJECTS`, which the step passes through as rejects, with no state: the replay's files
are scanned once per micro-batch, for the pairs and the rejects alike.

**Steering.**  The step reads the run's ``params.json``
(:func:`~workbench.spark.queries.live_params.write_params`) from the run folder, which the
executors see as they see the sink; each pair carries the ``(d, delta)`` it was decided under.
The band is the envelope's (``d_max``), so d within it, any delta and the algorithm (all of them
decide ``P(|Xa - Xb| <= d) >= delta``, so the pairs do not change with it, only how they are
found) apply from the next micro-batch with the state kept.

**Eviction.**  The watermark trails the newest detection by D + the band, so a later on-time
event lies beyond ``watermark + band`` (the replay is in arrival order and ``t_det >=
arrival - D``), and a kept event before the watermark can join none: after each micro-batch
a range keeps only its events at or after the watermark, and its state ends with an
event-time timer once the watermark passes the range's end, when no later event can land in
it.

**Why transformWithState** (issue 52): the same step ran as ``applyInPandasWithState``
before, whose state rides with every group's rows through the Arrow stream (and pyspark's
pandas padding of it); here a range's state is read and written once per micro-batch through
the state server, and its micro-batch is shorter (the docs' *Scaling out* page, "The live
join", has the figures).
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from workbench.events import COLUMNS, Events
from workbench.operators import TIMING_JOINS
from workbench.operators.base import Envelope, StreamSpec, TwoStreamJoin
from workbench.spark.queries.live_params import LiveParams, read_params
from workbench.spark.queries.ranges import RangePlan, band_reach
from workbench.spark.queries.source import EPOCH_OFFSET_MS
from workbench.spark.session import STATE_STORES

__all__ = [
    "BANDS_PER_RANGE",
    "LIVE_PAIR_SCHEMA",
    "REJECTS",
    "LiveRangeProcessor",
    "LiveRangeStep",
    "expiry",
    "keep_from_watermark",
    "live_pairs",
    "rocksdb_state",
    "with_new",
]

LIVE_PAIR_SCHEMA = (
    "kind STRING, a_id LONG, a_template INT, a_t DOUBLE, b_id LONG, b_template INT, "
    "b_t DOUBLE, d DOUBLE, delta DOUBLE, reason STRING, stream INT, id LONG, record STRING"
)
"""What the range step emits: the pairs a micro-batch decides (``kind = "pair"``; the sink's
:data:`~workbench.spark.queries.live_sink.PAIR_COLUMNS`), each exactly, and the rejected
records it is given (``kind = "reject"``; :data:`~workbench.spark.queries.source.REJECT_SCHEMA`),
the other kind's columns null."""
LIVE_COLUMNS = [c.split()[0] for c in LIVE_PAIR_SCHEMA.split(", ")]
REJECTS = -(2**63)
"""The range key of the rejected records (no event's range: its time is finite): their group
passes them through, with no state."""
BANDS_PER_RANGE = 8
"""Live ranges are this many bands wide: a micro-batch's events meet in few groups (each
call of the step costs milliseconds), while a range keeps only the events a later one can
join (module docstring), so its state stays about a band's worth whatever the width."""
STATE_SCHEMA = "events BINARY"
STATE_DTYPE = np.dtype(
    [(c, np.int64 if c in ("stream", "id", "template") else np.float64) for c in COLUMNS]
)
"""A range's kept events: :class:`~workbench.events.Events` rows as one packed array."""


_OPERATORS: dict[tuple[str, str, float, float], TwoStreamJoin] = {}
"""The live joins' operators built in this Python worker, by streams' digest, algorithm, d and
delta (a task unpickles its step anew; building a PTJoin's stime tables takes a good part of a
second)."""


class LiveRangeStep:
    """The live join's step for one range (module docstring; :class:`LiveRangeProcessor` runs
    it): picklable; the operator for each ``(d, delta)`` is built once per Python worker."""

    def __init__(
        self, run_dir: str | os.PathLike[str], streams: tuple[StreamSpec, StreamSpec], width: float
    ) -> None:
        self.run_dir = str(run_dir)
        self.streams = streams
        self.width = float(width)
        self.digest = hashlib.sha256(pickle.dumps(streams)).hexdigest()
        self._params: tuple[tuple[int, int], LiveParams] | None = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_params": None}

    def params(self) -> LiveParams:
        """The run's parameters now (re-read when ``params.json`` changed)."""
        path = Path(self.run_dir) / "params.json"
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        if self._params is None or self._params[0] != stamp:
            self._params = (stamp, read_params(Path(self.run_dir)))
        return self._params[1]

    def operator(self, params: LiveParams) -> TwoStreamJoin:
        """The operator ``params`` name, at their d and delta (restarted before each use)."""
        key = (self.digest, params.algorithm, params.d, params.delta)
        op = _OPERATORS.get(key)
        if op is None:
            if len(_OPERATORS) > 8:  # steered back and forth: keep the memory bounded
                _OPERATORS.clear()
            envelope = Envelope(params.d, params.delta, tuple(s.max_delay for s in self.streams))
            op = _OPERATORS[key] = TIMING_JOINS[params.algorithm](
                streams=self.streams, d=params.d, threshold=params.delta, envelope=envelope
            )
        op.restart()
        return op

    def decide(
        self, frames: Iterator[pd.DataFrame], kept: np.ndarray | None
    ) -> tuple[np.ndarray, pd.DataFrame | None]:
        """One range's micro-batch: its new events (``frames``) joined with those it ``kept``;
        returns the range's events in arrival order and the pairs with a new event (None when
        there are none)."""
        new = pd.concat(list(frames), ignore_index=True)
        fresh = np.empty(len(new), STATE_DTYPE)
        for c in COLUMNS:
            fresh[c] = new[c].to_numpy()
        rows = fresh if kept is None else np.concatenate([kept, fresh])
        rows = rows[np.lexsort((rows["id"], rows["stream"], rows["arrival"]))]
        params = self.params()
        pairs = with_new(_join(self.operator(params), rows), fresh)
        return rows, (_pair_frame(rows, pairs, params) if len(pairs) else None)


class LiveRangeProcessor(StatefulProcessor):
    """The ``transformWithStateInPandas`` processor of the live join (module docstring): per
    range, a value state of its kept events (a packed :data:`STATE_DTYPE` array) and one
    event-time timer that ends it (:func:`expiry`)."""

    def __init__(self, step: LiveRangeStep) -> None:
        self.step = step

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Spark's set-up per task: the state's handle."""
        self.handle = handle
        self.kept = handle.getValueState("events", STATE_SCHEMA)

    def handleInputRows(
        self, key: tuple[np.int64], rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        """One range's micro-batch (:meth:`LiveRangeStep.decide`); then it keeps its events at
        or after the watermark, until none is left or its timer fires.  The :data:`REJECTS`
        group's records are emitted as they are."""
        if int(key[0]) == REJECTS:
            for frame in rows:
                yield _reject_frame(frame)
            return
        kept = np.frombuffer(self.kept.get()[0], STATE_DTYPE) if self.kept.exists() else None
        events, found = self.step.decide(rows, kept)
        watermark = timerValues.getCurrentWatermarkInMs()
        events = events[events["t_det"] >= watermark - EPOCH_OFFSET_MS]
        timers = list(self.handle.listTimers())
        at = expiry((int(key[0]) + 1) * self.step.width, watermark)
        if len(events):
            self.kept.update((events.tobytes(),))
        else:
            self.kept.clear()
        for timer in timers:
            if timer != at or not len(events):
                self.handle.deleteTimer(timer)
        if len(events) and at not in timers:
            self.handle.registerTimer(at)
        if found is not None:
            yield found

    def handleExpiredTimer(
        self, key: tuple[np.int64], timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        """The watermark passed the range's end: no later event can land in it."""
        self.kept.clear()
        return iter(())

    def close(self) -> None:
        """Nothing to release (Spark's tear-down per task)."""


def with_new(results: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    """The ``results`` (one id column per stream) with a ``fresh`` record (``stream``, ``id``)
    on some stream: a result of kept records only was emitted by an earlier micro-batch."""
    is_new = np.zeros(len(results), dtype=bool)
    for s in range(results.shape[1]):
        is_new |= np.isin(results[:, s], fresh["id"][fresh["stream"] == s])
    return results[is_new]


def keep_from_watermark(state: GroupState, rows: np.ndarray, time: str, end: float) -> None:
    """Keep a range's ``rows`` (a packed array) whose ``time`` is at or after the watermark (a
    later record joins none before it) in its ``state``, which ends when none is left or, by
    its event-time timeout, once the watermark passes the range's ``end``."""
    watermark = state.getCurrentWatermarkMs()
    rows = rows[rows[time] >= watermark - EPOCH_OFFSET_MS]
    if not len(rows):
        state.remove()
        return
    state.update((rows.tobytes(),))
    state.setTimeoutTimestamp(expiry(end, watermark))


def expiry(end: float, watermark: int) -> int:
    """When a range ending at ``end`` (ms) ends its state, as an event-time timestamp: once the
    watermark passes its end, and never at or before the ``watermark`` now (Spark's
    timestamps; :data:`~workbench.spark.queries.source.EPOCH_OFFSET_MS`).

    >>> expiry(1500.2, 0) - EPOCH_OFFSET_MS
    1501
    >>> expiry(1500.0, EPOCH_OFFSET_MS + 2000) - EPOCH_OFFSET_MS
    2001
    """
    return max(math.ceil(EPOCH_OFFSET_MS + end), watermark + 1)


@contextmanager
def rocksdb_state(spark: SparkSession) -> Iterator[None]:
    """The session's state store set to RocksDB for the block (a query started in it keeps
    that store, and its checkpoint records it): ``transformWithStateInPandas`` needs it,
    whatever the session's default; the session's own setting is back after."""
    key = "spark.sql.streaming.stateStore.providerClass"
    before = spark.conf.get(key, None)
    spark.conf.set(key, STATE_STORES["rocksdb"])
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _join(op: TwoStreamJoin, rows: np.ndarray) -> np.ndarray:
    """The pairs ``op`` emits over ``rows`` (arrival order) and a flush, as ``(n, 2)`` ids."""
    events = Events(*(rows[c].copy() for c in COLUMNS))
    out = [op.push_batch(events).ids, op.flush().ids]
    counters = op.counters
    if counters.late or counters.bad:
        raise RuntimeError(
            f"{counters.late} late and {counters.bad} bad records reached the join: the Spark "
            "checks must reject them first"
        )
    return np.concatenate(out)


def _pair_frame(rows: np.ndarray, pairs: np.ndarray, params: LiveParams) -> pd.DataFrame:
    """``pairs`` (a_id, b_id) with their events' templates and times, as
    :data:`LIVE_PAIR_SCHEMA`."""
    frame: dict[str, object] = {"kind": "pair"}
    for s, name in ((0, "a"), (1, "b")):
        side = rows[rows["stream"] == s]
        side = side[np.argsort(side["id"], kind="stable")]
        at = np.searchsorted(side["id"], pairs[:, s])
        frame[f"{name}_id"] = pairs[:, s]
        frame[f"{name}_template"] = side["template"][at].astype(np.int32)
        frame[f"{name}_t"] = side["t_det"][at]
    return _live_frame({**frame, "d": params.d, "delta": params.delta}, len(pairs))


def _reject_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The rejected records ``rows`` (of the :data:`REJECTS` group) as :data:`LIVE_PAIR_SCHEMA`."""
    columns = {c: rows[c].to_numpy() for c in ("reason", "stream", "id", "record")}
    return _live_frame({"kind": "reject", **columns}, len(rows))


def _live_frame(columns: dict[str, object], n: int) -> pd.DataFrame:
    """``columns`` as :data:`LIVE_PAIR_SCHEMA`'s ``n`` rows, the missing ones null."""
    frame = pd.DataFrame(columns, index=pd.RangeIndex(n))
    for c in LIVE_COLUMNS:
        if c not in frame:
            frame[c] = None
    return frame[LIVE_COLUMNS]


def live_pairs(
    events: DataFrame,
    run_dir: str | os.PathLike[str],
    streams: tuple[StreamSpec, StreamSpec],
    d_max: float,
    bands: int = BANDS_PER_RANGE,
) -> DataFrame:
    """The pairs of the ``events`` stream (:data:`~workbench.events.COLUMNS` and ``ts``, with
    their watermark set), decided per range in Spark's state (module docstring), as
    :data:`LIVE_PAIR_SCHEMA`; ranges ``bands`` bands wide.  With a ``reason`` and a ``record``
    column (:func:`~workbench.spark.queries.source.with_reason`,
    :func:`~workbench.spark.queries.source.reject_record`; ``ts`` null for a rejected record),
    the rejected records go through the same step (:data:`REJECTS`) and come out as rejects:
    the replay is scanned once.  Start its query inside :func:`rocksdb_state`."""
    reach = band_reach(streams, d_max)
    plan = RangePlan(bands * reach.band, reach)
    ranges = plan.ranges()
    extra: list[str] = []
    if "reason" in events.columns:
        extra = ["reason", "record"]
        ranges = F.when(F.col("reason").isNull(), ranges).otherwise(F.array(F.lit(REJECTS)))
    keyed = events.select(*COLUMNS, "ts", *extra).withColumn("range", F.explode(ranges))
    step = LiveRangeStep(run_dir, streams, plan.width)
    return keyed.groupBy("range").transformWithStateInPandas(
        LiveRangeProcessor(step), LIVE_PAIR_SCHEMA, "Append", "EventTime"
    )
