"""``./dev bench live --profile``: where one live micro-batch's time goes.

The simulated deployment's replay files are written first; each variant of the live query then
reads them ``files`` per micro-batch (about what a batch reads at 300x) to the end, and the
median trigger time of its batches (the first two left out: planning and warm-up) is taken.
The variants add one step of the live join at a time (:mod:`workbench.spark.queries.live_ranges`):
reading, the checks, a stateless Python step, the range step (one band wide, and as the join
runs it), and the sink written by :class:`~workbench.spark.queries.live_sink.BatchWriter`.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from benchmarks.live_stages import median_split, query_batches
from workbench.app.runs.replay import FILES_PER_SECOND
from workbench.data.replay import Replayer
from workbench.data.streams import default_streams, window_range
from workbench.spark.queries.live import LiveJoin
from workbench.spark.queries.live_params import LiveParams, write_params
from workbench.spark.queries.live_ranges import BANDS_PER_RANGE, live_pairs, rocksdb_state
from workbench.spark.queries.ranges import band_reach
from workbench.spark.queries.source import EVENT_FIELDS, event_checks, read_classified

__all__ = ["SPLIT", "VARIANTS", "Profile", "profile_batches"]

VARIANTS = (
    "read and count",
    "+ the checks",
    "+ a stateless Python step (mapInArrow)",
    "+ the range step, ranges one band wide",
    "+ the range step, as the live join runs it",
    "+ the rejects and the sink written (the live join)",
)
"""The query variants, each adding one step (the last is the live join itself)."""
SPLIT = {"the floor": VARIANTS[2], "the live join": VARIANTS[5]}
"""The variants whose batches are split by stage (:mod:`benchmarks.live_stages`)."""


@dataclass(frozen=True)
class Profile:
    """Each variant's median trigger time (ms), and the :data:`SPLIT` variants' batches split
    by stage (:func:`~benchmarks.live_stages.median_split`)."""

    ms: dict[str, float]
    splits: dict[str, dict[str, object]]


def _median_trigger_ms(progress: list[dict]) -> float:
    busy = [p["durationMs"]["triggerExecution"] for p in progress if p["numInputRows"] > 0]
    return float(statistics.median(busy[2:] or busy))


def _identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def profile_batches(
    spark: SparkSession, speed: float = 300.0, events: int = 6000, files: int = 3
) -> Profile:
    """Median trigger time (ms) of each of :data:`VARIANTS` over the first ``events`` of the
    simulated deployment, replayed for ``speed`` and read ``files`` per micro-batch, and the
    :data:`SPLIT` variants' batches split by stage."""
    streams = default_streams()
    specs = streams.specs()
    d = window_range(streams.templates).default
    params = LiveParams(d=d, delta=0.8, d_max=2 * d, max_delay=streams.max_delays)
    with tempfile.TemporaryDirectory(prefix="workbench-bench-profile-") as tmp:
        root = Path(tmp)
        replay = root / "replay"
        Replayer(streams.events.head(events), replay, speed * 1000.0 / FILES_PER_SECOND).run()
        write_params(root / "run", params)

        def accepted() -> DataFrame:
            checks = event_checks(specs)
            return read_classified(spark, str(replay), EVENT_FIELDS, checks, "t_det", files)[0]

        def ranges(bands: int) -> DataFrame:
            delay = max(streams.max_delays) + band_reach(specs, params.d_max).band
            events = accepted().withWatermark("ts", f"{math.ceil(delay)} milliseconds")
            return live_pairs(events, root / "run", specs, params.d_max, bands)

        queries: dict[str, Callable[[], DataFrame]] = {
            VARIANTS[0]: lambda: (
                spark.readStream.schema(EVENT_FIELDS)
                .option("maxFilesPerTrigger", files)
                .json(str(replay))
            ),
            VARIANTS[1]: accepted,
            VARIANTS[2]: lambda: accepted().mapInArrow(_identity, accepted().schema),
            VARIANTS[3]: lambda: ranges(1),
            VARIANTS[4]: lambda: ranges(BANDS_PER_RANGE),
        }
        figures = {}
        splits = {}
        wanted = {variant: label for label, variant in SPLIT.items()}
        for k, (name, build) in enumerate(queries.items()):
            writer = (
                build()
                .writeStream.foreachBatch(lambda batch, _id: batch.count())
                .option("checkpointLocation", str(root / f"chk-{k}"))
                .trigger(availableNow=True)
            )
            with rocksdb_state(spark):  # the range step's state API needs it
                query = writer.start()
            query.awaitTermination()
            figures[name] = _median_trigger_ms(query.recentProgress)
            if name in wanted:
                splits[wanted[name]] = median_split(query_batches(spark, query))
        live = LiveJoin(
            spark, replay, specs, d, 0.8, root / "join", d_max=2 * d,
            max_files_per_trigger=files, available_now=True,
        )  # fmt: skip
        live.start()
        live.await_termination()
        query = live.query
        figures[VARIANTS[5]] = _median_trigger_ms(query.recentProgress if query else [])
        if query is not None:
            splits[wanted[VARIANTS[5]]] = median_split(query_batches(spark, query))
        live.close()
    return Profile(figures, splits)
