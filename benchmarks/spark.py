"""``./dev bench spark``: PTJoin on Spark by time ranges (the workbench's compiled operator in
the tasks, :mod:`workbench.spark.ranges`) against the write floor and against today's
stream-stream query, on several masters in one command (PTJoin Section 3, Example 5).

Two workloads over the same streams (Example 5's: 500 templates of 10 buckets up to 1 s, Poisson
arrivals every 10 ms per stream, D = 500 ms): *dense*, Example 5's d = 1500 ms (Theorem 2's fast
path, about 130 pairs per event), and *sparse*, d = 200 ms (below max(pi): the certified band
probability, under two pairs per event, so the join's own work dominates, not the writing).
Per master and workload, best of ``rounds``:

- *write floor*: Spark writing as many ``(a_id, b_id)`` rows as the join finds, from a frame it
  generates (``spark.range``), to Parquet: what any join that writes its pairs must pay;
- *ranges*: :func:`~workbench.spark.batch.run_join` over the events as Parquet (planning, the
  checks, the rejects and the pairs written), its pairs checked against the in-process operator
  (count and an order-free checksum);
- *stream-stream PTJoin* (baseline, one round): the streaming band join with Theorem 2 in the
  JVM (:func:`~workbench.spark.ptjoin.ptjoin_query`), ``availableNow`` over the replay's files;
- *band join* (baseline, dense only, one round): Spark's own deterministic interval join of the
  same band, every candidate pair written.

Each master (``local[N]``, ``spark://h:p``, ``sc://h:p``, or ``standalone``: a 2-worker,
1-core-each cluster on loopback started by the bench) gets its own session; the previous one is
stopped first.  A small warm-up join starts the Python workers and loads the kernels first.
Progress goes to stderr (:class:`~benchmarks.report.Stages`), the report to stdout.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from benchmarks.report import BenchReport, Stages
from workbench.data.event_files import write_event_folder
from workbench.data.replay import Replayer
from workbench.events import Events
from workbench.experiments import Example5Workload
from workbench.experiments.harness import timed
from workbench.operators import PTJoin, StreamSpec
from workbench.records import Emitted
from workbench.spark.batch import run_join, task_slots
from workbench.spark.cluster import standalone_cluster
from workbench.spark.ptjoin import ptjoin_query
from workbench.spark.session import spark_session

__all__ = ["EVENTS_PER_STREAM", "MASTERS", "STANDALONE", "WORKLOADS", "bench_spark", "checksum"]

STANDALONE = "standalone"
"""The master name that makes the bench start a standalone cluster on loopback: two workers
of one core (and 1 GB) each."""
MASTERS = ("local[1]", "local[2]", STANDALONE)
"""The masters of ``./dev bench spark`` when none is given."""
EVENTS_PER_STREAM = 100_000
"""Example 5's 100,000 events per stream."""
SPARSE_D = 200.0
"""The sparse workload's window (ms): below max(pi), under two pairs per event."""
WORKLOADS = ("dense", "sparse")
WARM_UP_EVENTS = 2_000


def checksum(ids: np.ndarray) -> int:
    """An order-free checksum of ``(a_id, b_id)`` pairs (a sum of mixed 64-bit hashes)."""
    a, b = (ids[:, k].astype(np.uint64) for k in (0, 1))
    with np.errstate(over="ignore"):
        h = (a * np.uint64(0x9E3779B97F4A7C15)) ^ (b + np.uint64(0x632BE59BD9B4E019))
        h ^= h >> np.uint64(31)
        return int(np.sum(h * np.uint64(0xBF58476D1CE4E5B9), dtype=np.uint64))


def _folder_checksum(folder: Path) -> int:
    import pyarrow.dataset as ds

    table = ds.dataset(str(folder), format="parquet").to_table(columns=["a_id", "b_id"])
    return checksum(np.column_stack([table.column(c).to_numpy() for c in ("a_id", "b_id")]))


def _floor(spark: SparkSession, pairs: int, out: Path) -> float:
    """Seconds for Spark to write ``pairs`` generated ``(a_id, b_id)`` rows to Parquet."""
    frame = spark.range(pairs).select(
        (F.col("id") / 1000).cast("long").alias("a_id"), (F.col("id") % 1000).alias("b_id")
    )
    return timed(lambda: frame.write.mode("overwrite").parquet(str(out)))[1]


def _stream_query(
    spark: SparkSession, replay: Path, op: PTJoin, out: Path, decide: bool
) -> tuple[float, int]:
    """Seconds and pairs of the stream-stream query (``decide``: PTJoin, else the band join)."""
    args = (spark, str(replay), op.streams, op.d, op.threshold, str(out / "pairs"))
    begin = time.perf_counter()
    ptjoin_query(*args, str(out / "chk"), decide=decide).awaitTermination()
    seconds = time.perf_counter() - begin
    return seconds, spark.read.parquet(str(out / "pairs")).count()


def _best(rounds: int, run: Callable[[int], float]) -> float:
    return min(run(r) for r in range(rounds))


@contextmanager
def _session(master: str, stages: Stages) -> Iterator[tuple[SparkSession, str]]:
    """A session for ``master`` (``standalone``: a cluster started here), stopped on exit; and
    the URL it runs on; a line to ``stages`` for the cluster and the session."""
    with tempfile.TemporaryDirectory() as logs:
        if master == STANDALONE:
            with standalone_cluster(cores=1, workers=2, log_dir=logs) as cluster:
                stages.write(f"standalone cluster up at {cluster.master_url} (2 workers x 1 core)")
                with _session(cluster.master_url, stages) as (spark, url):
                    yield spark, url
            return
        begin = time.perf_counter()
        spark = spark_session(master, app_name="workbench-bench")
        try:
            if not master.startswith("sc://"):
                spark.sparkContext.setLogLevel("ERROR")
            stages.write(f"session on {master} in {time.perf_counter() - begin:.1f} s")
            yield spark, master
        finally:
            spark.stop()


def _machine() -> dict[str, object]:
    """What the figures depend on besides the versions :meth:`BenchReport.to_json` adds."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "pyspark": pyspark.__version__,
        "pandas": pd.__version__,
        "java_home": os.environ.get("JAVA_HOME", ""),
    }


def _in_process(specs: tuple[StreamSpec, StreamSpec], events: Events, d: float, delta: float):
    """The in-process operator's pairs and join seconds (installation apart), and the operator
    (installed: the Spark runs ship it)."""
    op = PTJoin(streams=specs, d=d, threshold=delta)
    out, seconds = timed(lambda: Emitted.concat([op.push_batch(events), op.flush()], 2))
    op.restart()
    return op, out.ids, seconds


def _race(
    spark: SparkSession,
    root: Path,
    out: Path,
    name: str,
    op: PTJoin,
    want: tuple[int, int],
    rounds: int,
    baselines: bool,
    stages: Stages,
) -> dict[str, object]:
    """One workload on one session (inputs under ``root``, outputs under ``out``, one folder
    per session: a stream query finding another session's checkpoint would skip its work):
    the floor, the ranges, the baselines; seconds and pairs."""
    pairs, check = want
    seconds: dict[str, float] = {}
    stages.begin(f"{name}: write floor")
    seconds["write floor"] = _best(rounds, lambda r: _floor(spark, pairs, out / f"floor-{r}"))
    stages.begin(f"{name}: ranges")
    runs = []

    def ranges(r: int) -> float:
        runs.append(run_join(spark, root / name, op, out / f"{name}-ranges-{r}"))
        return runs[-1].seconds

    seconds["ranges"] = _best(rounds, ranges)
    got = runs[-1]
    same = got.results == pairs and _folder_checksum(Path(got.output) / "pairs") == check
    if not same:
        raise AssertionError(
            f"{name}: the ranges found {got.results:,} pairs, in-process {pairs:,}"
        )
    stages.write(
        f"{name}: floor {seconds['write floor']:.1f} s, ranges {seconds['ranges']:.1f} s "
        f"({pairs:,} pairs, same as in-process; ranges of {got.plan.width:g} ms, "
        f"{len(got.plan.salts)} salted)"
    )
    counted: dict[str, int] = {"ranges": got.results}
    if baselines:
        kinds = {"stream-stream PTJoin": True} | ({"band join": False} if name == "dense" else {})
        for query, decide in kinds.items():
            stages.begin(f"{name}: {query}")
            seconds[query], counted[query] = _stream_query(
                spark,
                root / f"{name}-replay",
                op,
                out / f"{name}-{query.replace(' ', '-')}",
                decide,
            )
            stages.write(f"{name}: {query} {seconds[query]:.1f} s, {counted[query]:,} pairs")
        if counted["stream-stream PTJoin"] != pairs:
            raise AssertionError(f"{name}: the stream-stream PTJoin disagrees on the pair count")
    return {"seconds": seconds, "pairs": counted, "range_width": got.plan.width}


def bench_spark(
    masters: Sequence[str] = MASTERS,
    rounds: int = 2,
    baselines: bool = True,
    progress: bool = True,
    **streams: float,
) -> BenchReport:
    """PTJoin by time ranges vs the write floor and the stream-stream baselines (module
    docstring) on each of ``masters``, dense and sparse, plus the in-process operator; per master
    and workload the seconds, events/s (and per task slot), ``floor_ratio`` (ranges / floor) and
    ``over_stream`` (stream-stream PTJoin / ranges).  ``streams``: fields of
    :class:`~workbench.experiments.Example5Workload` (:data:`EVENTS_PER_STREAM` by default)."""
    if isinstance(masters, str):
        masters = (masters,)
    if not masters or len(set(masters)) < len(masters):
        raise ValueError(f"masters = {tuple(masters)!r} must name one or more distinct masters")
    w = Example5Workload(**{"events_per_stream": EVENTS_PER_STREAM, **streams})
    x = w.setting
    specs, events = w.build()
    n = len(events)
    d_of = {"dense": x.d, "sparse": SPARSE_D}
    per_stage = 2 + (2 if baselines else 0)
    total = 2 + len(masters) * (2 + 2 * per_stage)
    results: dict[str, dict[str, object]] = {}
    inproc: dict[str, dict[str, float]] = {}
    with Stages("bench spark", total, progress) as stages, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ops, want = {}, {}
        for name, d in d_of.items():
            stages.begin(f"in-process PTJoin, {name}")
            op, ids, seconds = _in_process(specs, events, d, x.delta)
            ops[name], want[name] = op, (len(ids), checksum(ids))
            inproc[name] = {"seconds": seconds, "events_per_s": n / seconds, "pairs": len(ids)}
            write_event_folder(root / name, specs, events)
            if baselines:
                Replayer(events, root / f"{name}-replay", batch_ms=20_000).run()
        write_event_folder(root / "warm-up", specs, events.head(WARM_UP_EVENTS))
        for i, master in enumerate(masters):
            stages.name = f"bench spark {master} ({i + 1}/{len(masters)})"
            stages.begin("starting the session")
            load_before = os.getloadavg()
            with _session(master, stages) as (spark, url):
                slots = task_slots(spark)
                stages.begin("warm-up (Python workers, kernels)")
                out = root / f"master-{i}"
                warm = run_join(spark, root / "warm-up", ops["dense"], out / "warm-up").seconds
                stages.write(f"warm-up join {warm:.1f} s")
                races = {
                    name: _race(
                        spark, root, out, name, ops[name], want[name], rounds, baselines, stages
                    )
                    for name in WORKLOADS
                }
            results[master] = {
                "url": url,
                "task_slots": slots,
                "load_avg_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
                "warm_up_s": warm,
                "workloads": races,
            }
    lines = [
        "PTJoin on Spark by time ranges (the compiled operator in the tasks) vs the write floor "
        f"and the stream-stream query: {w.events_per_stream:,} events per stream, "
        f"{x.templates} templates x {x.buckets} buckets (<= {x.max_length:g} ms), delta = "
        f"{x.delta:g}, D = {w.max_delay:g} ms; dense d = {x.d:g} ms, sparse d = {SPARSE_D:g} ms; "
        f"best of {rounds} (baselines: one run)",
    ]
    for master, res in results.items():
        slots = res["task_slots"]
        lines.append(f"  master {master} ({slots} task slots)")
        for name, race in res["workloads"].items():
            sec = race["seconds"]
            race["events_per_s"] = {q: n / s for q, s in sec.items() if q != "write floor"}
            race["events_per_s_per_slot"] = race["events_per_s"]["ranges"] / slots
            race["floor_ratio"] = sec["ranges"] / sec["write floor"]
            if "stream-stream PTJoin" in sec:
                race["over_stream"] = sec["stream-stream PTJoin"] / sec["ranges"]
            cells = ", ".join(f"{q} {s:.1f} s" for q, s in sec.items())
            lines.append(
                f"    {name:6s} {cells}; {race['pairs']['ranges']:,} pairs; ranges "
                f"{race['events_per_s']['ranges']:,.0f} events/s "
                f"({race['events_per_s_per_slot']:,.0f} per slot; in-process "
                f"{inproc[name]['events_per_s']:,.0f} on one core)"
            )
            extra = ""
            if "over_stream" in race:
                extra = f", {race['over_stream']:.1f}x faster than the stream-stream PTJoin"
            lines.append(f"           ranges / floor {race['floor_ratio']:.2f}x{extra}")
    if len(results) > 1:
        first = masters[0]
        for name in WORKLOADS:
            base = results[first]["workloads"][name]["events_per_s"]["ranges"]
            scale = ", ".join(
                f"{m} {results[m]['workloads'][name]['events_per_s']['ranges'] / base:.2f}x"
                for m in masters[1:]
            )
            lines.append(f"  {name} ranges events/s relative to {first}: {scale}")
    figures = {
        "masters": list(masters),
        "events": n,
        "events_per_stream": w.events_per_stream,
        "rounds": rounds,
        "setting": {"templates": x.templates, "buckets": x.buckets, "delta": x.delta, **d_of},
        "per_master": results,
        "in_process": inproc,
        "machine": _machine(),
    }
    return BenchReport("spark", tuple(lines), figures)
