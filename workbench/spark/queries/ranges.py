"""Time ranges: the workbench's own operators inside Spark tasks (PTJoin Section 3, Eq. 4-5;
W-join Sections 3 and 5.2).

A pair (a, b) of a two-stream timing join can join only if b's max time lies in a's loose
partitions, ``[t_a - pi_A - d, t_a + d + pi_B]`` (PTJoin Eq. 4-5, at the envelope's
``d_max``; interval correlation has the same band, its templates being one-bucket histograms).
So events are keyed by **time range** of width ``W`` at least that band: a B event goes to
the range of its max time, an A event to every range its band overlaps, and each candidate pair
meets in exactly one group, its B event's range.  A W-join result has one tuple of stream 0
and every other tuple within the shortest-path bound ``C_0s`` of it (Section 5.2), so stream 0
owns the ranges and the others are copied the same way (:class:`Reach`).  A range with many
events (a burst, or a span of few ranges) is split into *salts*: its owner's events by a hash
of their id, the others copied to every salt; an equality W-join's range is split by the hash
of the key instead, with no copies.

Each group's events go, in arrival order, through the workbench operator itself
(:meth:`~workbench.protocol.StreamOperator.push_batch` in chunks: the compiled kernels, the
certified decisions and their rational fallback) and a flush; the JVM only shuffles events.
:func:`write_ranges` has the tasks write the results to Parquet themselves (the jobs of
:mod:`workbench.spark.queries.batch`), :func:`join_ranges` hands them back as a DataFrame.  The
operator is installed once per Python worker (unpickled with its stime tables) and
:meth:`~workbench.protocol_shapes.JoinOperator.restart`-ed per group.  Lateness
(Definition 6) is a test of each event alone and eviction (Theorem 4) drops only partners no
later event can join, so a group emits exactly the pairs of its B events that the in-process
operator emits over the whole streams (and a W-join group the results of its stream-0
tuples).
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.group import GroupedData

from workbench.operators.base import StreamSpec, TwoStreamJoin
from workbench.operators.wjoin import MultiWayJoin

__all__ = [
    "CHUNK",
    "GROUP_EVENTS",
    "RangePlan",
    "Reach",
    "Span",
    "band_reach",
    "join_ranges",
    "join_reach",
    "plan_ranges",
    "range_step",
    "range_writer",
    "result_names",
    "span_columns",
    "write_ranges",
]

CHUNK = 4096
"""Events per ``push_batch`` inside a task: bounds the pairs held before they are yielded."""
GROUPS_PER_SLOT = 4
"""Groups (ranges x salts) per task slot the plan aims at, for balance."""
QUANTILES = 256
"""Quantiles of the records' times a plan estimates the events per range from (balance needs
no exact count: a burst of more than twice a range's share stands out at this resolution)."""
GROUP_EVENTS = 1_000_000
"""Events per group the plan keeps below, on average: a task holds its group's events (about
40 bytes each) while it joins them."""


@dataclass(frozen=True)
class Reach:
    """Where a join's partners lie in time: events of stream ``owner`` own their range; an
    event of stream s at time t is copied to the ranges of ``[t - before[s], t + after[s]]``,
    where the owner's events it can join lie (0 for the owner).  ``time``: the time column;
    ``key``: a column partners share (an equality join's), which splits a range into buckets
    by its hash with no copies."""

    owner: int
    before: tuple[float, ...]
    after: tuple[float, ...]
    time: str = "t_det"
    key: str | None = None

    @property
    def band(self) -> float:
        """The widest ``before + after`` of a stream."""
        return max(b + a for b, a in zip(self.before, self.after, strict=True))


def _widen(x: float) -> float:
    """A reach widened by its rounding margin (one unit of time and a relative 1e-9: a wider
    reach only copies more events)."""
    return x * (1 + 1e-9) + 1.0


def join_reach(op: TwoStreamJoin | MultiWayJoin) -> Reach:
    """The reach of ``op``'s join: a two-stream join's A events reach ``pi_A + d_max`` back and
    ``d_max + pi_B`` on (Eq. 4-5), B owns; a W-join's stream s reaches ``C_0s`` both ways
    (the constraint graph's shortest paths), stream 0 owns."""
    if isinstance(op, MultiWayJoin):
        c = op.constraints.closure()[0]
        reach = (0.0, *(_widen(float(x)) for x in c[1:]))
        key = "value" if op.config.predicate == "equal" else None
        return Reach(0, reach, reach, "ts", key)
    return band_reach(op.streams, op.envelope.d_max)


def band_reach(streams: tuple[StreamSpec, StreamSpec], d_max: float) -> Reach:
    """A two-stream timing join's reach for the window ``d_max``: A events reach
    ``pi_A + d_max`` back and ``d_max + pi_B`` on (Eq. 4-5), B owns."""
    pi_a, pi_b = (s.pi for s in streams)
    return Reach(1, (_widen(pi_a + d_max), 0.0), (_widen(d_max + pi_b), 0.0))


@dataclass(frozen=True)
class RangePlan:
    """Ranges of ``width`` (time units of the events) for a join's ``reach``, and the salts of
    the ranges split for balance (range -> salts; absent: one)."""

    width: float
    reach: Reach
    salts: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.width) and self.width >= self.reach.band):
            raise ValueError(
                f"width = {self.width!r} must be finite and at least the band {self.reach.band!r}"
            )

    def keyed(self, events: DataFrame) -> DataFrame:
        """``events`` (``stream``, ``id``, the reach's time, ...) with their ``range`` and
        ``salt``: an owner's event once, any other once per range its reach overlaps and, unless
        the salt is the hash of the reach's key, once per salt of that range."""
        reach, stream = self.reach, F.col("stream")
        keyed = events.withColumn("range", F.explode(self.ranges()))
        salts = self._salts(F.col("range"))
        if reach.key is not None:  # partners share the key: its hash buckets, no copies
            return keyed.withColumn("salt", F.pmod(F.xxhash64(reach.key), salts).cast("int"))
        salt = F.when(
            stream == reach.owner, F.array(F.pmod(F.xxhash64("id"), salts).cast("int"))
        ).otherwise(F.sequence(F.lit(0), salts - 1))
        return keyed.withColumn("salt", F.explode(salt))

    def ranges(self) -> Column:
        """Each event's ranges, as an array Column (of ``stream`` and the reach's time): its own
        range for an owner's event, every range its reach overlaps for another's."""
        reach, w = self.reach, float(self.width)
        t, stream = F.col(reach.time), F.col("stream")
        ranges = F.array(F.floor(t / w))
        for s, (before, after) in enumerate(zip(reach.before, reach.after, strict=True)):
            if s != reach.owner:
                spread = F.sequence(F.floor((t - before) / w), F.floor((t + after) / w))
                ranges = F.when(stream == s, spread).otherwise(ranges)
        return ranges

    def _salts(self, rng: Column) -> Column:
        """Each row's range's salts, as a Column."""
        salts = F.lit(1)
        for r, n in sorted(self.salts.items()):
            salts = F.when(rng == r, F.lit(n)).otherwise(salts)
        return salts


@dataclass(frozen=True)
class Span:
    """The accepted records' times: least, greatest, how many and :data:`QUANTILES` + 1
    quantiles (approximate), what a plan is made from (:func:`span_columns` observes them)."""

    lo: float
    hi: float
    n: int
    quantiles: tuple[float, ...]

    @classmethod
    def of(cls, row: Mapping[str, object]) -> Span:
        """The span of a row of :func:`span_columns`."""
        n = int(row["n"] or 0)  # type: ignore[call-overload]
        if not n:
            return cls(0.0, 0.0, 0, ())
        q = tuple(float(x) for x in row["quantiles"])  # type: ignore[union-attr]
        return cls(float(row["lo"]), float(row["hi"]), n, q)  # type: ignore[arg-type]

    def count_below(self, t: np.ndarray) -> np.ndarray:
        """About how many records lie before each time in ``t`` (the quantiles interpolated)."""
        probs = np.linspace(0.0, 1.0, len(self.quantiles))
        return self.n * np.interp(t, self.quantiles, probs, left=0.0, right=1.0)


def span_columns(t: Column) -> list[Column]:
    """The aggregates of a :class:`Span` of the non-null values of ``t`` (one pass; an
    ``Observation`` of a pass the job makes anyway can carry them)."""
    probs = [k / QUANTILES for k in range(QUANTILES + 1)]
    return [
        F.min(t).alias("lo"),
        F.max(t).alias("hi"),
        F.count(t).alias("n"),
        F.percentile_approx(t, probs, 10 * QUANTILES).alias("quantiles"),
    ]


def plan_ranges(events: DataFrame, reach: Reach, slots: int, span: Span | None = None) -> RangePlan:
    """Ranges for ``events`` from their ``span`` (one small aggregate finds it unless given).

    The ranges are as wide as ``GROUPS_PER_SLOT * slots`` groups over the span make them (more
    when a group would hold over :data:`GROUP_EVENTS` events), never narrower than the band:
    fewer, wider ranges copy fewer events and run fewer groups.  A range holding more than
    twice its share of the events by the span's quantiles (a burst, or a span of few ranges)
    is split into that many salts."""
    if span is None:
        span = Span.of(events.agg(*span_columns(F.col(reach.time))).first().asDict())
    if not span.n:
        return RangePlan(reach.band, reach)
    groups = max(GROUPS_PER_SLOT * max(1, slots), math.ceil(span.n / GROUP_EVENTS))
    width = max(reach.band, (span.hi - span.lo) / groups)
    share = span.n / groups
    first, last = math.floor(span.lo / width), math.floor(span.hi / width)
    ranges = np.arange(first, last + 1)
    below = span.count_below(np.append(ranges, last + 1) * width)
    counts = np.diff(below)
    salts = {
        int(r): math.ceil(c / share) for r, c in zip(ranges, counts, strict=True) if c > 2 * share
    }
    return RangePlan(width, reach, salts)


Join = TwoStreamJoin | MultiWayJoin

_INSTALLED: dict[str, Join] = {}
"""The operators installed in this Python worker, by the digest of their pickle."""


def _installed(digest: str, blob: bytes) -> Join:
    op = _INSTALLED.get(digest)
    if op is None:
        _INSTALLED.clear()  # one query at a time per worker: keep its memory bounded
        op = _INSTALLED[digest] = pickle.loads(blob)
    return op


def result_names(op: Join) -> list[str]:
    """The output columns of ``op``'s results: a_id and b_id for two streams, one id per
    stream (``id_0``, ``id_1``, ...) for a W-join."""
    if isinstance(op, MultiWayJoin):
        return [f"id_{s}" for s in range(op.arity)]
    return ["a_id", "b_id"]


def _batch_columns(op: Join) -> list[str]:
    """The fields of ``op``'s batch type, in ``push`` order (the events' columns)."""
    return [f.name for f in fields(op.batch_type)]


def _group_results(
    op: Join, digest: str, blob: bytes, table: pa.Table, chunk: int
) -> Iterator[np.ndarray]:
    """One group's results, as id arrays: its records (``table``, the operator's batch
    fields) sorted by arrival, through the worker's installed operator in chunks, then a
    flush; the operator is restarted before and after."""
    columns = _batch_columns(op)
    table = table.select(columns).sort_by(
        [("arrival", "ascending"), ("stream", "ascending"), ("id", "ascending")]
    )
    # writable copies: Arrow's read-only arrays would compile the kernels a second time
    records = op.batch_type(
        *(table.column(c).to_numpy(zero_copy_only=False).copy() for c in columns)
    )
    join = _installed(digest, blob)
    join.restart()  # whatever a failed attempt left
    for start in range(0, len(records), chunk):
        out = join.push_batch(records[start : start + chunk])
        if len(out):
            yield out.ids
    out = join.flush()
    counters = join.counters
    if counters.late or counters.bad:
        raise RuntimeError(
            f"{counters.late} late and {counters.bad} bad records reached the join: "
            "the Spark checks must reject them first"
        )
    join.restart()
    if len(out):
        yield out.ids


def _results_batch(ids: np.ndarray, names: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(col, pa.int64()) for col in ids.T], names)


def range_step(
    op: Join, chunk: int = CHUNK
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The per-group step of ``applyInArrow`` (picklable): the group's results
    (:func:`_group_results`) as batches of :func:`result_names`."""
    blob = pickle.dumps(op)
    digest = hashlib.sha256(blob).hexdigest()
    names = result_names(op)

    def step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches))
        if table.num_rows:
            for ids in _group_results(op, digest, blob, table, chunk):
                yield _results_batch(ids, names)

    return step


def range_writer(
    op: Join, folder: str, chunk: int = CHUNK
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The per-group step of ``applyInArrow`` that writes the group's results itself
    (picklable): a Parquet file ``part-r<range>-s<salt>.parquet`` in ``folder`` (written under a
    hidden name, then renamed: a retried task replaces the file whole, so a job's output is
    exact whatever fails), and yields one row ``(range, salt, results)``."""
    blob = pickle.dumps(op)
    digest = hashlib.sha256(blob).hexdigest()
    names = result_names(op)
    schema = pa.schema([(name, pa.int64()) for name in names])

    def step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches))
        if not table.num_rows:
            return
        rng, salt = (table.column(c)[0].as_py() for c in ("range", "salt"))
        name = f"part-r{rng}-s{salt}.parquet"
        tmp = Path(folder) / f".{name}.{uuid.uuid4().hex}"
        count = 0
        with pq.ParquetWriter(tmp, schema) as writer:
            for ids in _group_results(op, digest, blob, table, chunk):
                writer.write_batch(_results_batch(ids, names))
                count += len(ids)
        if count:
            os.replace(tmp, Path(folder) / name)
        else:
            tmp.unlink()
        yield pa.RecordBatch.from_pydict(
            {"range": [rng], "salt": [salt], "results": [count]},
            pa.schema([("range", pa.int64()), ("salt", pa.int32()), ("results", pa.int64())]),
        )

    return step


def _grouped(events: DataFrame, op: Join, plan: RangePlan) -> GroupedData:
    """``events`` keyed by the plan and grouped by (range, salt)."""
    return plan.keyed(events.select(*_batch_columns(op))).groupBy("range", "salt")


def join_ranges(events: DataFrame, op: Join, plan: RangePlan) -> DataFrame:
    """The results of ``op``'s join over accepted ``events`` (columns: the operator's batch
    fields), each found in its owner's range (module docstring); columns
    :func:`result_names`, all ``LONG``."""
    schema = ", ".join(f"{name} LONG" for name in result_names(op))
    return _grouped(events, op, plan).applyInArrow(range_step(op), schema)


def write_ranges(
    events: DataFrame, op: Join, plan: RangePlan, folder: str | os.PathLike[str]
) -> int:
    """:func:`join_ranges` with the results written by the tasks themselves, one Parquet file
    per group in ``folder`` (replaced), on a file system every executor sees (the JVM moves
    no result); returns how many results were written."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    step = range_writer(op, str(folder))
    counts = _grouped(events, op, plan).applyInArrow(step, "range LONG, salt INT, results LONG")
    total = int(counts.agg(F.sum("results")).first()[0] or 0)
    for tmp in folder.glob(".part-*"):  # what killed attempts left
        tmp.unlink()
    if not total:  # one empty file, so that readers find the columns
        columns = {name: pa.array([], pa.int64()) for name in result_names(op)}
        pq.write_table(pa.table(columns), folder / "empty.parquet")
    return total
