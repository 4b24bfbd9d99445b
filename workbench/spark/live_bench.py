"""``workbench bench live``: how live the streaming PTJoin is (PTJoin Section 3 on Spark).

The simulated deployment (the dashboard's default data) is replayed at ``speed`` times real
time into a running :class:`~workbench.spark.live.LiveJoin`, as the dashboard does (two files
per second).  Per record, the latency is the time from its file becoming visible in the replay
folder to the commit of the micro-batch that read it (its pairs written); which batch read
which file comes from the file source's own log in the checkpoint.  Batch durations and
Spark's phases of each batch (``durationMs``, the state store's commit and update times) say
where the time goes.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.bench import BenchReport
from workbench.data.replay import Replayer
from workbench.data.streams import default_streams, window_range
from workbench.operators import StreamSpec
from workbench.spark.live import LiveJoin
from workbench.spark.session import spark_session

__all__ = ["STATE_STORES", "bench_live", "file_batches", "record_latency"]

FILES_PER_SECOND = 2.0
"""Replay files per second of wall time (as the dashboard replays)."""
STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
"""The state store providers ``bench live`` can run the join on."""
PHASES = (
    "latestOffset",
    "queryPlanning",
    "addBatch",
    "walCommit",
    "commitOffsets",
    "stateCommit",
    "triggerExecution",
)
"""Spark's phases of a micro-batch reported per batch (ms): planning, running the batch (the
join, the decision and the sink), the offset and commit logs, the state store's commit."""


def file_batches(checkpoint: Path) -> dict[str, int]:
    """File name -> id of the micro-batch that read it, from the file source's metadata log
    (``<checkpoint>/sources/0``: one JSON line per file, compacted every few batches)."""
    out: dict[str, int] = {}
    for log in sorted((checkpoint / "sources" / "0").glob("*")):
        if log.name.startswith("."):
            continue
        for line in log.read_text().splitlines()[1:]:  # the first line is the log's version
            entry = json.loads(line)
            out[entry["path"].rsplit("/", 1)[-1]] = int(entry["batchId"])
    return out


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


def bench_live(
    speed: float = 300.0,
    trigger_seconds: float = 0.5,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    state_store: str = "hdfs",
    seconds: float | None = None,
    delta: float = 0.8,
) -> BenchReport:
    """Replay the simulated deployment at ``speed`` into a LiveJoin (module docstring) and
    report per-record latency (p50, p95, max), batch durations and their phases.

    ``seconds`` replays only that much wall time of the data (None: all of it);
    ``state_store`` is a key of :data:`STATE_STORES` (RocksDB with changelog checkpointing).
    """
    if state_store not in STATE_STORES:
        raise ValueError(f"state_store = {state_store!r}: choose one of {sorted(STATE_STORES)}")
    streams = default_streams()
    events = streams.events
    if seconds is not None:
        keep = events.arrival - events.arrival[0] <= seconds * speed * 1000.0
        events = events.head(int(np.count_nonzero(keep)))  # sorted by arrival
    window = window_range(streams.templates)
    d = window.default
    specs = tuple(
        StreamSpec(t, D) for t, D in zip(streams.templates, streams.max_delays, strict=True)
    )
    spark = spark_session(master, app_name="workbench-bench-live", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", STATE_STORES[state_store])
    spark.conf.set(
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
        str(state_store == "rocksdb").lower(),
    )
    with tempfile.TemporaryDirectory(prefix="workbench-bench-live-") as tmp:
        root = Path(tmp)
        live = LiveJoin(
            spark,
            root / "replay",
            specs,
            d,
            delta,
            root / "join",
            d_max=2 * d,
            trigger_seconds=trigger_seconds,
            name="bench-live",
        )
        (root / "replay").mkdir()
        began = time.time()
        live.start()
        replay = Replayer(
            events,
            root / "replay",
            batch_ms=speed * 1000.0 / FILES_PER_SECOND,
            speed=speed,
        )
        replay.run()
        while not live.caught_up():
            if not live.active:
                raise RuntimeError(f"the live join stopped: {live.error}")
            time.sleep(0.05)
        ended = time.time()
        progress = live.progress.frame() if live.progress is not None else pd.DataFrame()
        batches = list(live.batches)
        batch_of = file_batches(live.run_dir / "chk")
        live.close()
    committed = {int(b["batch"]): float(b["time"]) for b in batches}
    latency = record_latency(replay.visible, batch_of, committed)
    first_pairs = min((float(b["time"]) for b in batches if b["pairs"]), default=np.nan)
    mine = progress[progress["query"] == live.query_name] if len(progress) else progress
    busy = mine[mine["input_rows"] > 0]
    phases = pd.DataFrame(list(busy["durations"])) if len(busy) else pd.DataFrame()
    phase_ms = {k: float(phases[k].median()) if k in phases else 0.0 for k in PHASES}
    batch_ms = busy["batch_ms"].to_numpy(dtype=np.float64) if len(busy) else np.zeros(1)
    p50, p95, top = (float(np.quantile(latency, q)) for q in (0.5, 0.95, 1.0))
    pairs = int(sum(int(b["pairs"]) for b in batches))
    lines = [
        f"Live PTJoin on Spark ({master}, {shuffle_partitions} shuffle partitions, {state_store} "
        f"state store, trigger {trigger_seconds:g} s): {len(events):,} events of the simulated "
        f"deployment replayed at {speed:g}x ({replay.files} files, "
        f"{FILES_PER_SECOND:g} per second), d = {d:g} ms, delta = {delta:g}",
        f"  record latency, file visible -> pairs committed: p50 {p50:.2f} s, p95 {p95:.2f} s, "
        f"max {top:.2f} s  (goal: p50 <= 0.5 s, p95 <= 1.0 s)",
        f"  first pairs {first_pairs - began:.1f} s after start; run {ended - began:.1f} s; "
        f"{pairs:,} pairs in {len(batches)} micro-batches ({len(busy)} with input)",
        f"  batch duration (with input): median {np.median(batch_ms):.0f} ms, "
        f"max {np.max(batch_ms):.0f} ms",
        "  median phase of a batch with input (ms): "
        + ", ".join(f"{k} {v:.0f}" for k, v in phase_ms.items()),
    ]
    figures = {
        "speed": speed,
        "trigger_seconds": trigger_seconds,
        "master": master,
        "shuffle_partitions": shuffle_partitions,
        "state_store": state_store,
        "events": len(events),
        "files": replay.files,
        "latency_s": {"p50": p50, "p95": p95, "max": top},
        "first_pairs_s": first_pairs - began,
        "batches": len(batches),
        "batches_with_input": len(busy),
        "batch_ms": {"median": float(np.median(batch_ms)), "max": float(np.max(batch_ms))},
        "phase_ms_median": phase_ms,
        "pairs": pairs,
    }
    return BenchReport("live", tuple(lines), figures)
