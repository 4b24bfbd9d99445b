"""Time ranges: the workbench's own operators inside Spark tasks (PTJoin Section 3, Eq. 4-5).

A pair (a, b) of a two-stream timing join can join only if b's max time lies in a's loose
partitions, ``[t_a - pi_A - d, t_a + d + pi_B]`` (PTJoin Eq. 4-5, at the envelope's
``d_max``; interval correlation has the same band, its templates being one-bucket histograms).
So events are keyed by **time range** of width ``W`` at least that band: a B event goes to
the range of its max time, an A event to every range its band overlaps, and each candidate pair
meets in exactly one group, its B event's range.  A range with many events (a burst) is split
into *salts*: its B events by a hash of their id, its A events copied to every salt.

Each group's events go, in arrival order, through the workbench operator itself
(:meth:`~workbench.protocol.StreamOperator.push_batch` in chunks: the compiled kernels, the
certified decisions and their rational fallback) and a flush; the JVM only shuffles events
and writes the pairs.  The operator is installed once per Python worker (unpickled with its
stime tables) and :meth:`~workbench.protocol.JoinOperator.restart`-ed per group.  Lateness
(Definition 6) is a test of each event alone and eviction (Theorem 4) drops only partners no
later event can join, so a group emits exactly the pairs of its B events that the in-process
operator emits over the whole streams.
"""

from __future__ import annotations

import hashlib
import math
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from workbench.events import COLUMNS, Events
from workbench.operators.base import TwoStreamJoin

__all__ = [
    "CHUNK",
    "PAIR_SCHEMA",
    "RANGE_BANDS",
    "RangePlan",
    "join_band",
    "join_ranges",
    "plan_ranges",
    "range_step",
]

PAIR_SCHEMA = "a_id LONG, b_id LONG"
CHUNK = 4096
"""Events per ``push_batch`` inside a task: bounds the pairs held before they are yielded."""
RANGE_BANDS = 4
"""A range is at most this many bands wide when the data spans enough ranges: each A event
is then copied to at most two ranges, about one in ``RANGE_BANDS`` of them."""
GROUPS_PER_SLOT = 4
"""Groups (ranges x salts) per task slot the plan aims at, for balance."""


def join_band(op: TwoStreamJoin) -> tuple[float, float]:
    """``(before, after)``: a B partner of an A event detected at ``t`` has its max time in
    ``[t - before, t + after]`` (Eq. 4-5 at the envelope's ``d_max``), widened by a rounding
    margin (one unit of time and a relative 1e-9: a wider band only copies more A events)."""
    d_max = op.envelope.d_max
    pi_a, pi_b = (s.pi for s in op.streams)
    before, after = pi_a + d_max, d_max + pi_b
    return before * (1 + 1e-9) + 1.0, after * (1 + 1e-9) + 1.0


@dataclass(frozen=True)
class RangePlan:
    """Ranges of ``width`` (time units of the events) and the salts of the ranges split for
    balance (range -> salts; absent: one)."""

    width: float
    before: float
    after: float
    salts: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.width) and self.width >= self.before + self.after):
            raise ValueError(
                f"width = {self.width!r} must be finite and at least the band "
                f"{self.before + self.after!r}"
            )

    def keyed(self, events: DataFrame) -> DataFrame:
        """``events`` (``stream``, ``id``, ``t_det``, ...) with their ``range`` and ``salt``:
        a B event once, an A event once per (range, salt) its band overlaps."""
        w, t = float(self.width), F.col("t_det")
        own = F.floor(t / w)
        first, last = F.floor((t - self.before) / w), F.floor((t + self.after) / w)
        is_a = F.col("stream") == 0
        keyed = events.withColumn(
            "range", F.explode(F.when(is_a, F.sequence(first, last)).otherwise(F.array(own)))
        )
        salts = self._salts(F.col("range"))
        salt = F.when(is_a, F.sequence(F.lit(0), salts - 1)).otherwise(
            F.array(F.pmod(F.xxhash64("id"), salts).cast("int"))
        )
        return keyed.withColumn("salt", F.explode(salt))

    def _salts(self, rng: Column) -> Column:
        """Each row's range's salts, as a Column."""
        salts = F.lit(1)
        for r, n in sorted(self.salts.items()):
            salts = F.when(rng == r, F.lit(n)).otherwise(salts)
        return salts


def plan_ranges(
    events: DataFrame,
    before: float,
    after: float,
    slots: int,
    span: tuple[float | None, float | None, int] | None = None,
) -> RangePlan:
    """Ranges for ``events``: one small Spark job counts the events per range, and one before
    it finds their ``span`` (least and greatest ``t_det``, count) unless given.

    The width is the band times at most :data:`RANGE_BANDS`, less when the data spans too few
    ranges for ``slots`` task slots (never below the band); a range holding more than its share
    of events (``1 / (GROUPS_PER_SLOT * slots)`` of them: a burst) gets that many salts."""
    band = before + after
    if span is None:
        span = events.agg(F.min("t_det"), F.max("t_det"), F.count(F.lit(1))).first()
    lo, hi, n = span
    groups = GROUPS_PER_SLOT * max(1, slots)
    if not n:
        return RangePlan(band, before, after)
    width = max(band, min(RANGE_BANDS * band, (hi - lo) / groups))
    share = n / groups
    counts = events.groupBy(F.floor(F.col("t_det") / width).alias("r")).count().collect()
    salts = {int(r): math.ceil(c / share) for r, c in counts if c > 2 * share}
    return RangePlan(width, before, after, salts)


_INSTALLED: dict[str, TwoStreamJoin] = {}
"""The operators installed in this Python worker, by the digest of their pickle."""


def _installed(digest: str, blob: bytes) -> TwoStreamJoin:
    op = _INSTALLED.get(digest)
    if op is None:
        _INSTALLED.clear()  # one query at a time per worker: keep its memory bounded
        op = _INSTALLED[digest] = pickle.loads(blob)
    return op


def _pairs_batch(ids: np.ndarray) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(ids[:, 0], pa.int64()), pa.array(ids[:, 1], pa.int64())], ["a_id", "b_id"]
    )


def range_step(
    op: TwoStreamJoin, chunk: int = CHUNK
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The per-group step of ``applyInArrow`` (picklable): a group's events (the
    :data:`~workbench.events.COLUMNS`, accepted ones only) sorted by arrival, through ``op`` in
    chunks of ``chunk`` and a flush; yields the pairs as ``(a_id, b_id)`` batches."""
    blob = pickle.dumps(op)
    digest = hashlib.sha256(blob).hexdigest()

    def step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches)).select(COLUMNS)
        if not table.num_rows:
            return
        table = table.sort_by(
            [("arrival", "ascending"), ("stream", "ascending"), ("id", "ascending")]
        )
        # writable copies: Arrow's read-only arrays would compile the kernels a second time
        events = Events(*(table.column(c).to_numpy().copy() for c in COLUMNS))
        join = _installed(digest, blob)
        join.restart()  # whatever a failed attempt left
        for start in range(0, len(events), chunk):
            out = join.push_batch(events[start : start + chunk])
            if len(out):
                yield _pairs_batch(out.ids)
        out = join.flush()
        counters = join.counters
        if counters.late or counters.bad:
            raise RuntimeError(
                f"{counters.late} late and {counters.bad} bad events reached the join: "
                "the Spark checks must reject them first"
            )
        join.restart()
        if len(out):
            yield _pairs_batch(out.ids)

    return step


def join_ranges(events: DataFrame, op: TwoStreamJoin, plan: RangePlan) -> DataFrame:
    """The pairs of ``op``'s join over accepted ``events`` (:data:`PAIR_SCHEMA`), each found in
    its B event's range (module docstring)."""
    keyed = plan.keyed(events.select(*COLUMNS))
    return keyed.groupBy("range", "salt").applyInArrow(range_step(op), PAIR_SCHEMA)
