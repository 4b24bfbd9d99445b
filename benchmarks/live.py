"""``./dev bench live``: how live the streaming timing join is (PTJoin Section 3 on Spark; the
interval correlations with ``--algorithm``).

The simulated deployment (the dashboard's default data; for an interval correlation its
templates widened to intervals) is replayed at ``speed`` times real time into a running
:class:`~workbench.spark.queries.live.LiveJoin`, as the dashboard does (two files per second).  Per
record, the latency is the time from its file becoming visible in the replay folder to the
commit of the micro-batch that read it (its pairs written); which batch read
which file comes from the file source's own log in the checkpoint.  Batch durations and
Spark's phases of each batch (``durationMs``, the state store's commit and update times) say
where the time goes.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from benchmarks.live_profile import SPLIT, profile_batches
from benchmarks.live_stages import PHASES, median_split, query_batches, split_lines
from benchmarks.report import BenchReport, Stages
from workbench.app.runs.replay import FILES_PER_SECOND
from workbench.data.replay import Replayer
from workbench.data.streams import default_streams, interval_streams, window_range
from workbench.events import Events
from workbench.operators import StreamSpec
from workbench.spark.queries.live import LiveJoin
from workbench.spark.queries.source import (
    EVENT_FIELDS,
    event_checks,
    read_classified,
    rejects_query,
)
from workbench.spark.session import LIVE_SHUFFLE_PARTITIONS, spark_session
from workbench.spark.warm import warm_up

__all__ = [
    "BEFORE",
    "LIVE_LEVERS",
    "Levers",
    "bench_live",
    "file_batches",
    "live_run",
    "record_latency",
]


def file_batches(checkpoint: Path) -> dict[str, int]:
    """File name -> id of the micro-batch that read it, from the file source's metadata log
    (``<checkpoint>/sources/0``: one JSON line per file, compacted every few batches).  That
    log numbers only the batches that found new files; the query's offsets log
    (``<checkpoint>/offsets/<id>``, its source offset ``logOffset``) maps them to the query's
    batch ids, which no-data batches also take."""
    query_batch = _query_batches(checkpoint)
    out: dict[str, int] = {}
    for log in sorted((checkpoint / "sources" / "0").glob("*")):
        if log.name.startswith("."):
            continue
        for line in log.read_text().splitlines()[1:]:  # the first line is the log's version
            entry = json.loads(line)
            source = int(entry["batchId"])
            out[entry["path"].rsplit("/", 1)[-1]] = query_batch.get(source, source)
    return out


def _query_batches(checkpoint: Path) -> dict[int, int]:
    """The file source's log batch id -> the query batch that first reached it (the offsets
    log: a version line, the batch's metadata, then one offset per source)."""
    first: dict[int, int] = {}
    folder = checkpoint / "offsets"
    logs = [p for p in folder.glob("*") if p.name.isdigit()] if folder.exists() else []
    for log in sorted(logs, key=lambda p: int(p.name)):
        lines = log.read_text().splitlines()
        if len(lines) > 2 and lines[2].startswith("{"):
            first.setdefault(int(json.loads(lines[2])["logOffset"]), int(log.name))
    return first


def record_latency(
    visible: list[tuple[str, float, int]],
    batch_of: dict[str, int],
    committed: dict[int, float],
) -> np.ndarray:
    """Per record, seconds from its file becoming visible to its batch's commit.

    >>> record_latency([("a", 10.0, 2), ("b", 10.5, 1)], {"a": 0, "b": 1}, {0: 10.4, 1: 11.5})
    array([0.4, 0.4, 1. ])
    """
    parts = [
        np.full(rows, committed[batch_of[name]] - seen)
        for name, seen, rows in visible
        if rows and name in batch_of and batch_of[name] in committed
    ]
    return np.round(np.concatenate(parts), 9) if parts else np.zeros(0)


@dataclass(frozen=True)
class Levers:
    """The settings ``bench live`` weighs (issues: where a micro-batch's time goes; 52: the
    micro-batch close to Spark's floor).  The join's state is RocksDB's whatever the session
    says (:func:`~workbench.spark.queries.live_ranges.rocksdb_state`)."""

    shuffle_partitions: int = 2
    changelog: bool = False
    """RocksDB's changelog checkpointing: a commit writes the batch's changes, not a snapshot."""
    trigger_seconds: float = 0.5
    no_data_batches: bool = True
    """Spark's extra micro-batches that only advance the watermark (and evict state)."""
    rejects_query: bool = False
    """A second query over the same files for the rejects (the design before one query)."""
    adaptive: bool = True
    """Spark's adaptive query execution (``spark.sql.adaptive.enabled``)."""
    compact_interval: int = 10
    """Batches between compactions of the file source's log of files read."""
    snapshot_deltas: int = 10
    """State commits between snapshots (``minDeltasForSnapshot``)."""

    def conf(self) -> dict[str, str]:
        """The session settings these levers stand for."""
        return {
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": str(
                self.changelog
            ).lower(),
            "spark.sql.streaming.noDataMicroBatches.enabled": str(self.no_data_batches).lower(),
            "spark.sql.adaptive.enabled": str(self.adaptive).lower(),
            "spark.sql.streaming.fileSource.log.compactInterval": str(self.compact_interval),
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": str(self.snapshot_deltas),
        }

    def label(self) -> str:
        """The levers in a few words."""
        return (
            f"{self.shuffle_partitions} shuffle partitions, RocksDB"
            f"{' with changelog' if self.changelog else ''}, trigger {self.trigger_seconds:g} s, "
            f"no-data batches {'on' if self.no_data_batches else 'off'}, adaptive "
            f"{'on' if self.adaptive else 'off'}, source log compacted every "
            f"{self.compact_interval}, a snapshot every {self.snapshot_deltas} commits"
            f"{', + rejects query' if self.rejects_query else ''}"
        )


LIVE_LEVERS = Levers(
    shuffle_partitions=LIVE_SHUFFLE_PARTITIONS, changelog=True, trigger_seconds=0.2
)
"""The levers the dashboard's live join runs with (its session:
:data:`~workbench.spark.session.LIVE_CONF`; its default trigger)."""
BEFORE = Levers(rejects_query=True)
"""The live join as it was: a join query and a rejects query, 2 partitions."""


def live_run(
    spark: SparkSession,
    levers: Levers,
    speed: float = 300.0,
    seconds: float | None = None,
    delta: float = 0.8,
    progress: bool = False,
    algorithm: str = "ptjoin",
) -> dict[str, object]:
    """Replay the simulated deployment at ``speed`` into a LiveJoin running ``algorithm``
    under ``levers`` (module docstring); per-record latency (p50, p95, max), batch durations
    and their phases.  ``progress``: the replay's bar of records written (stderr)."""
    streams = default_streams() if algorithm == "ptjoin" else interval_streams(default_streams())
    events = streams.events
    if seconds is not None:
        keep = events.arrival - events.arrival[0] <= seconds * speed * 1000.0
        events = events.head(int(np.count_nonzero(keep)))  # sorted by arrival
    d = window_range(streams.templates).default
    with levers_set(spark, levers):
        specs = streams.specs()
        return _timed_run(spark, levers, events, specs, d, delta, speed, progress, algorithm)


@contextmanager
def levers_set(spark: SparkSession, levers: Levers) -> Iterator[None]:
    """The session under ``levers``' settings for the block, its own settings back after."""
    before = {key: spark.conf.get(key, None) for key in levers.conf()}
    for key, value in levers.conf().items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _timed_run(
    spark: SparkSession,
    levers: Levers,
    events: Events,
    specs: tuple[StreamSpec, ...],
    d: float,
    delta: float,
    speed: float,
    progress: bool,
    algorithm: str,
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="workbench-bench-live-") as tmp:
        root = Path(tmp)
        (root / "replay").mkdir()
        live = LiveJoin(
            spark,
            root / "replay",
            specs,
            d,
            delta,
            root / "join",
            d_max=2 * d,
            trigger_seconds=levers.trigger_seconds,
            name=f"bench-live-{uuid.uuid4().hex[:6]}",
            algorithm=algorithm,
        )
        began = time.time()
        live.start()
        rejects = None
        if levers.rejects_query:
            _, classified = read_classified(
                spark, str(root / "replay"), EVENT_FIELDS, event_checks(specs), "t_det"
            )
            rejects = rejects_query(
                classified, str(root / "rej"), str(root / "rej-chk"), available_now=False
            )
        batch_ms = speed * 1000.0 / FILES_PER_SECOND
        replay = Replayer(events, root / "replay", batch_ms, speed, progress)
        replay.run()
        while not live.caught_up():
            if not live.active:
                raise RuntimeError(f"the live join stopped: {live.error}")
            time.sleep(0.05)
        ended = time.time()
        progress = live.progress.frame() if live.progress is not None else pd.DataFrame()
        batches = list(live.batches)
        batch_of = file_batches(live.run_dir / "chk")
        query = live.query
        if rejects is not None:
            rejects.stop()
        live.close()
        split = median_split(query_batches(spark, query)) if query is not None else {}
    committed = {int(b["batch"]): float(b["time"]) for b in batches}
    latency = record_latency(replay.visible, batch_of, committed)
    first_pairs = min((float(b["time"]) for b in batches if b["pairs"]), default=np.nan)
    mine = progress[progress["query"] == live.query_name] if len(progress) else progress
    busy = mine[mine["input_rows"] > 0]
    phases = pd.DataFrame(list(busy["durations"])) if len(busy) else pd.DataFrame()
    batch_ms = busy["batch_ms"].to_numpy(dtype=np.float64) if len(busy) else np.zeros(1)
    return {
        "levers": asdict(levers),
        "algorithm": algorithm,
        "events": len(events),
        "records_timed": len(latency),
        "files": replay.files,
        "d": d,
        "delta": delta,
        "latency_s": {
            "p50": float(np.quantile(latency, 0.5)),
            "p95": float(np.quantile(latency, 0.95)),
            "max": float(np.max(latency)),
        },
        "first_pairs_s": first_pairs - began,
        "run_s": ended - began,
        "batches": len(batches),
        "batches_with_input": len(busy),
        "no_data_batches": len(mine) - len(busy),
        "batch_ms": {"median": float(np.median(batch_ms)), "max": float(np.max(batch_ms))},
        "phase_ms_median": {k: float(phases[k].median()) if k in phases else 0.0 for k in PHASES},
        "pairs": int(sum(int(b["pairs"]) for b in batches)),
        "split": split,
    }


def _lines(run: dict[str, object]) -> list[str]:
    lat, batch = run["latency_s"], run["batch_ms"]
    return [
        f"  record latency p50 {lat['p50']:.2f} s, p95 {lat['p95']:.2f} s, max "  # type: ignore[index]
        f"{lat['max']:.2f} s; first pairs {run['first_pairs_s']:.1f} s after start; "  # type: ignore[index]
        f"{run['pairs']:,} pairs in {run['batches']} batches "
        f"(+{run['no_data_batches']} without input); batch median {batch['median']:.0f} ms, "  # type: ignore[index]
        f"max {batch['max']:.0f} ms",  # type: ignore[index]
        "    median phases (ms): "
        + ", ".join(f"{k} {v:.0f}" for k, v in run["phase_ms_median"].items()),  # type: ignore[union-attr]
    ]


def bench_live(
    speed: float = 300.0,
    master: str = "local[2]",
    seconds: float | None = None,
    levers: bool = False,
    profile: bool = False,
    algorithm: str = "ptjoin",
) -> BenchReport:
    """The live join as the dashboard runs it (:data:`LIVE_LEVERS`, after the same warm-up,
    :func:`~workbench.spark.warm.warm_up`), replayed at ``speed`` (``seconds`` of wall time,
    None: all the data); with ``levers``, first the design before (:data:`BEFORE`), each
    lever alone, then all of them; with ``profile``, also the median micro-batch of each
    variant of :func:`benchmarks.live_profile.profile_batches` (under the chosen levers), and
    the floor's, the profile's live join's and the live run's batches split by stage
    (:mod:`benchmarks.live_stages`).  On stderr, a bar over the
    session's warm-up and the cases and, below it, each replay's bar of records written.
    ``algorithm``: the timing join the tasks run (module docstring)."""
    chosen = LIVE_LEVERS
    cases: list[tuple[str, Levers]] = []
    if levers:
        cases += [
            ("before (join + rejects queries)", BEFORE),
            ("one query", replace(BEFORE, rejects_query=False)),
            ("+ RocksDB changelog", replace(BEFORE, rejects_query=False, changelog=True)),
            ("+ 1 shuffle partition", replace(BEFORE, rejects_query=False, shuffle_partitions=1)),
            ("+ no-data batches off", replace(BEFORE, rejects_query=False, no_data_batches=False)),
            ("+ trigger 0.2 s", replace(BEFORE, rejects_query=False, trigger_seconds=0.2)),
            ("chosen, adaptive execution off", replace(chosen, adaptive=False)),
            ("chosen, source log compacted every 1000", replace(chosen, compact_interval=1000)),
            ("chosen, a snapshot every 100 commits", replace(chosen, snapshot_deltas=100)),
            ("chosen, 2 shuffle partitions", replace(chosen, shuffle_partitions=2)),
        ]
    cases.append(("live join (all chosen levers)", chosen))
    runs = {}
    lines = []
    with Stages("bench live", len(cases) + 1 + profile) as stages:
        stages.begin(f"session on {master}, warming up (as the dashboard server does)")
        spark = spark_session(master, app_name="workbench-bench-live", shuffle_partitions=2)
        spark.sparkContext.setLogLevel("ERROR")
        warm_up(spark)
        for name, lever in cases:
            stages.begin(name)
            run = live_run(spark, lever, speed, seconds, progress=True, algorithm=algorithm)
            runs[name] = run
            if not lines:
                lines.append(
                    f"Live {algorithm} on Spark ({master}): {run['events']:,} events of the "
                    f"simulated deployment replayed at {speed:g}x ({run['files']} files, "
                    f"{FILES_PER_SECOND:g} per second), d = {run['d']:g} ms, delta = "
                    f"{run['delta']:g}; latency from a file becoming visible to its pairs "
                    "committed (goals: p50 <= 1.5 s, p95 <= 2.5 s, the median micro-batch <= 1.5x "
                    "the floor below)"
                )
            lines.append(f"{name}: {lever.label()}")
            lines += _lines(run)
        figures: dict[str, object] = {"master": master, "speed": speed, "runs": runs}
        if profile:
            stages.begin("micro-batch profile: each step of the live join added in turn")
            with levers_set(spark, chosen):  # the live run's settings: the same query
                profiled = profile_batches(spark, speed)
            steps = profiled.ms
            figures["profile_ms"] = steps
            figures["profile_splits"] = profiled.splits
            lines.append("One micro-batch (3 replay files), median trigger time, each step added:")
            before = None
            for name, ms in steps.items():
                added = f" (+{ms - before:,.0f} ms)" if before is not None else ""
                lines.append(f"  {name}: {ms:,.0f} ms{added}")
                before = ms
            floor = steps[SPLIT["the floor"]]
            live = runs[cases[-1][0]]
            lines.append(
                f"  the live run's median micro-batch / the floor: "
                f"{live['batch_ms']['median'] / floor:.2f}x; the profile's live join / the "  # type: ignore[index]
                f"floor: {steps[SPLIT['the live join']] / floor:.2f}x"
            )
            lines.append("Each micro-batch split by Spark's records (benchmarks.live_stages):")
            lines += split_lines(
                {
                    **{f"profile: {k}": v for k, v in profiled.splits.items()},
                    "the live run": live["split"],  # type: ignore[dict-item]
                }
            )
    return BenchReport("live", tuple(lines), figures)
