"""``./dev bench spark``: PTJoin on Spark by time ranges (the workbench's compiled operator in
the tasks, :mod:`workbench.spark.queries.ranges`) against the write floor and against today's
stream-stream query, on several masters in one command (PTJoin Section 3, Example 5).

Two workloads over the same streams (Example 5's: 500 templates of 10 buckets up to 1 s, Poisson
arrivals every 10 ms per stream, D = 500 ms): *dense*, Example 5's d = 1500 ms (Theorem 2's fast
path, about 130 pairs per event), and *sparse*, d = 200 ms (below max(pi): the certified band
probability, under two pairs per event, so the join's own work dominates, not the writing).
Per master and workload, best of ``rounds``:

- *write floor*: Spark writing as many ``(a_id, b_id)`` rows as the join finds, from a frame it
  generates (``spark.range``), to Parquet: what any join that writes its pairs must pay;
- *ranges*: :func:`~workbench.spark.queries.batch.run_join` over the events as Parquet (planning,
  the checks, the rejects and the pairs written), its pairs checked against the in-process operator
  (count and an order-free checksum);
- *stream-stream PTJoin* (baseline, one round): the streaming band join with Theorem 2 in the
  JVM (:func:`~benchmarks.stream_ptjoin.ptjoin_query`), ``availableNow`` over the replay's files;
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from benchmarks.report import BenchReport, Stages
from benchmarks.stream_interval import interval_query
from benchmarks.stream_ptjoin import ptjoin_query
from benchmarks.stream_wjoin import chained_wjoin_query
from workbench.data.event_files import write_event_folder
from workbench.data.replay import Replayer
from workbench.events import result_checksum
from workbench.experiments import Example5Workload
from workbench.experiments.harness import timed, wtuples
from workbench.experiments.workloads import INTERVAL_QUERY, IntervalWorkload, WJoinWorkload
from workbench.operators import BEWJoin, EagerCorrelation, PTJoin, WindowConstraints
from workbench.records import Columns, Emitted
from workbench.spark.cluster import standalone_cluster
from workbench.spark.queries.batch import read_result_files, run_join, task_slots
from workbench.spark.queries.ranges import Join
from workbench.spark.session import spark_session

__all__ = [
    "EVENTS_PER_STREAM",
    "MASTERS",
    "STANDALONE",
    "WORKLOADS",
    "Workload",
    "bench_spark",
]

STANDALONE = "standalone"
"""The master name that makes the bench start a standalone cluster on loopback: two workers
of one core (and 1 GB) each."""
MASTERS = ("local[1]", "local[2]", STANDALONE)
"""The masters of ``./dev bench spark`` when none is given."""
EVENTS_PER_STREAM = 100_000
"""Example 5's 100,000 events per stream."""
SPARSE_D = 200.0
"""The sparse workload's window (ms): below max(pi), under two pairs per event."""
WORKLOADS = ("dense", "sparse", "interval", "wjoin")
"""The bench's workloads: PTJoin dense and sparse (the default), interval correlation, W-join."""


def _floor(spark: SparkSession, results: int, out: Path) -> float:
    """Seconds for Spark to write ``results`` generated ``(a_id, b_id)`` rows to Parquet."""
    frame = spark.range(results).select(
        (F.col("id") / 1000).cast("long").alias("a_id"), (F.col("id") % 1000).alias("b_id")
    )
    return timed(lambda: frame.write.mode("overwrite").parquet(str(out)))[1]


Baseline = Callable[[SparkSession, Path], StreamingQuery]
"""Start a baseline query writing to ``OUT/pairs`` with its checkpoint in ``OUT/chk``."""


@dataclass
class Workload:
    """One workload of the bench: the operator the ranges run, its input folder (``root /
    name``: events, or a W-join's tuples), what the in-process operator found (results,
    checksum, seconds) and the baseline queries over the replay (``root / name-replay``), the
    first of which must find as many results."""

    name: str
    op: Join
    events: int
    results: int
    check: int
    in_process_s: float
    baselines: dict[str, Baseline] = field(default_factory=dict)

    @property
    def figures(self) -> dict[str, float]:
        return {
            "seconds": self.in_process_s,
            "events_per_s": self.events / self.in_process_s,
            "results": self.results,
        }


def _in_process(op: Join, batch: Columns) -> tuple[np.ndarray, float]:
    """``op``'s results over ``batch`` and the seconds they took (installation apart); ``op``
    is restarted (installed: the Spark runs ship it)."""
    out, seconds = timed(lambda: Emitted.concat([op.push_batch(batch), op.flush()], op.arity))
    op.restart()
    return out.ids, seconds


def _ptjoin_workloads(
    root: Path, baselines: bool, **streams: float
) -> tuple[list[Workload], Example5Workload]:
    """Example 5's streams, dense (its d) and sparse (:data:`SPARSE_D`)."""
    w = Example5Workload(**{"events_per_stream": EVENTS_PER_STREAM, **streams})
    x = w.setting
    specs, events = w.build()
    write_event_folder(root / "events", specs, events)
    if baselines:
        Replayer(events, root / "events-replay", batch_ms=20_000).run()
    replay = str(root / "events-replay")

    def stream(op: PTJoin, decide: bool) -> Baseline:
        return lambda spark, o: ptjoin_query(
            spark, replay, op.streams, op.d, op.threshold, str(o / "pairs"), str(o / "chk"),
            decide=decide,
        )  # fmt: skip

    out = []
    for name, d in (("dense", x.d), ("sparse", SPARSE_D)):
        op = PTJoin(streams=specs, d=d, threshold=x.delta)
        ids, seconds = _in_process(op, events)
        queries: dict[str, Baseline] = {}
        if baselines:
            queries["stream-stream PTJoin"] = stream(op, True)
            if name == "dense":
                queries["band join"] = stream(op, False)
        out.append(
            Workload(name, op, len(events), len(ids), result_checksum(ids), seconds, queries)
        )
    return out, w


def _interval_workload(root: Path, baselines: bool, events_per_stream: int) -> Workload:
    """The interval benchmark's streams (one interval every 1 ms per stream) and query (Eager,
    d = 2.5 ms, ct = 0.8), against the streaming interval query."""
    w = IntervalWorkload(events_per_stream=events_per_stream)
    specs, events = w.streams(np.random.default_rng(w.seed), w.rates[0])
    op = EagerCorrelation(streams=specs, **INTERVAL_QUERY.eager())
    folder = root / "interval"
    write_event_folder(folder, specs, events)
    ids, seconds = _in_process(op, events)
    queries: dict[str, Baseline] = {}
    if baselines:
        Replayer(events, root / "interval-replay", batch_ms=2_000).run()
        replay = str(root / "interval-replay")
        queries["stream-stream interval query"] = lambda spark, o: interval_query(
            spark, replay, specs, op.d, op.threshold, str(o / "pairs"), str(o / "chk")
        )
    return Workload("interval", op, len(events), len(ids), result_checksum(ids), seconds, queries)


def _wjoin_workload(root: Path, baselines: bool, tuples: int, keys: int = 10_000) -> Workload:
    """Three synchronous streams of the W-join study (``keys`` keys, a 500 ms uniform window),
    ``tuples`` in all, through the hash BEW-join, against the chained stream-stream query."""
    m, w = 3, WJoinWorkload(keys=keys)
    rate = 1000.0 * tuples / (w.windows * w.window_ms)  # tuples/s: about `tuples` of them
    rows = w.streams(np.random.default_rng(0), m, rate)
    constraints, delays = WindowConstraints.uniform(m, w.window_ms), [0.0] * m
    op = BEWJoin(
        constraints=constraints, max_delay=delays, strategy="uniform", implementation="hash"
    )
    ids, seconds = _in_process(op, wtuples(rows))
    tuples = rows.rename(columns={"value": "key", "ts": "t"})
    (root / "wjoin").mkdir()
    tuples.to_parquet(root / "wjoin" / "tuples.parquet", index=False)  # as the other workloads
    queries: dict[str, Baseline] = {}
    if baselines:
        Replayer(tuples, root / "wjoin-replay", batch_ms=500).run()
        folder = str(root / "wjoin-replay")
        queries["chained stream-stream W-join"] = lambda spark, o: chained_wjoin_query(
            spark, folder, constraints, delays, str(o / "pairs"), str(o / "chk")
        )
    return Workload("wjoin", op, len(rows), len(ids), result_checksum(ids), seconds, queries)


def _best(rounds: int, run: Callable[[int], float]) -> float:
    return min(run(r) for r in range(rounds))


def _race(
    spark: SparkSession, root: Path, out: Path, work: Workload, rounds: int, stages: Stages
) -> dict[str, object]:
    """One workload on one session (inputs under ``root``, outputs under ``out``, one folder
    per session: a stream query finding another session's checkpoint would skip its work):
    the floor, the ranges, the baselines; seconds and results."""
    name = work.name
    seconds: dict[str, float] = {}
    stages.begin(f"{name}: write floor")
    seconds["write floor"] = _best(
        rounds, lambda r: _floor(spark, work.results, out / f"floor-{r}")
    )
    stages.begin(f"{name}: ranges")
    runs = []
    source = root / ("events" if name in ("dense", "sparse") else name)

    def ranges(r: int) -> float:
        runs.append(run_join(spark, source, work.op, out / f"{name}-ranges-{r}"))
        return runs[-1].seconds

    seconds["ranges"] = _best(rounds, ranges)
    got = runs[-1]
    results = Path(got.output) / ("pairs" if work.op.arity == 2 else "results")
    if got.results != work.results or result_checksum(read_result_files(results)) != work.check:
        raise AssertionError(
            f"{name}: the ranges found {got.results:,} results, in-process {work.results:,}"
        )
    stages.write(
        f"{name}: floor {seconds['write floor']:.1f} s, ranges {seconds['ranges']:.1f} s "
        f"({work.results:,} results, same as in-process; ranges of {got.plan.width:g} ms, "
        f"{len(got.plan.salts)} salted)"
    )
    counted: dict[str, int] = {"ranges": got.results}
    for query, start in work.baselines.items():
        stages.begin(f"{name}: {query}")
        folder = out / f"{name}-{query.replace(' ', '-')}"
        begin = time.perf_counter()
        start(spark, folder).awaitTermination()
        seconds[query] = time.perf_counter() - begin
        counted[query] = spark.read.parquet(str(folder / "pairs")).count()
        stages.write(f"{name}: {query} {seconds[query]:.1f} s, {counted[query]:,} results")
    first = next(iter(work.baselines), None)
    if first is not None and counted[first] != work.results:
        raise AssertionError(f"{name}: the {first} disagrees on the result count")
    return {"seconds": seconds, "results": counted, "range_width": got.plan.width}


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


def bench_spark(
    masters: Sequence[str] = MASTERS,
    rounds: int = 2,
    baselines: bool = True,
    workloads: Sequence[str] = ("dense", "sparse"),
    progress: bool = True,
    **streams: float,
) -> BenchReport:
    """The time-range join vs the write floor and the stream-stream baselines (module
    docstring) on each of ``masters``, for each of ``workloads`` (:data:`WORKLOADS`), plus the
    in-process operator; per master and workload the seconds, events/s (and per task slot),
    ``floor_ratio`` (ranges / floor) and ``over_stream`` (the first baseline / ranges).
    ``streams``: fields of :class:`~workbench.experiments.Example5Workload`
    (:data:`EVENTS_PER_STREAM` by default; the interval workload takes its events per stream,
    the W-join twice as many tuples in all)."""
    if isinstance(masters, str):
        masters = (masters,)
    if not masters or len(set(masters)) < len(masters):
        raise ValueError(f"masters = {tuple(masters)!r} must name one or more distinct masters")
    unknown = set(workloads) - set(WORKLOADS)
    if not workloads or unknown:
        raise ValueError(f"workloads = {tuple(workloads)!r}: choose among {WORKLOADS}")
    n = int(streams.get("events_per_stream", EVENTS_PER_STREAM))
    results: dict[str, dict[str, object]] = {}
    with Stages("bench spark", 1, progress) as stages, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stages.begin("in-process runs and input files")
        work: list[Workload] = []
        example = Example5Workload(**{"events_per_stream": EVENTS_PER_STREAM, **streams})
        if {"dense", "sparse"} & set(workloads):
            ptjoins, example = _ptjoin_workloads(root, baselines, **streams)
            work += [w for w in ptjoins if w.name in workloads]
        if "interval" in workloads:
            work.append(_interval_workload(root, baselines, n))
        if "wjoin" in workloads:
            work.append(_wjoin_workload(root, baselines, 2 * n))
        per_master = 2 + sum(2 + len(w.baselines) for w in work)
        stages.begin("starting", total=1 + len(masters) * per_master)
        warm_op = work[0].op
        warm_source = root / ("events" if work[0].name in ("dense", "sparse") else work[0].name)
        for i, master in enumerate(masters):
            stages.name = f"bench spark {master} ({i + 1}/{len(masters)})"
            stages.begin("starting the session")
            load_before = os.getloadavg()
            with _session(master, stages) as (spark, url):
                slots = task_slots(spark)
                stages.begin("warm-up (Python workers, kernels)")
                out = root / f"master-{i}"
                warm = run_join(spark, warm_source, warm_op, out / "warm-up").seconds
                stages.write(f"warm-up join {warm:.1f} s (the whole first workload)")
                races = {w.name: _race(spark, root, out, w, rounds, stages) for w in work}
            results[master] = {
                "url": url,
                "task_slots": slots,
                "load_avg_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
                "warm_up_s": warm,
                "workloads": races,
            }
    x = example.setting
    lines = [
        "Joins on Spark by time ranges (the compiled operators in the tasks) vs the write floor "
        f"and today's stream-stream queries; best of {rounds} (baselines: one run). PTJoin: "
        f"Example 5, {example.events_per_stream:,} events per stream, {x.templates} templates x "
        f"{x.buckets} buckets, delta = {x.delta:g}, D = {example.max_delay:g} ms, dense d = "
        f"{x.d:g} ms, sparse d = {SPARSE_D:g} ms; interval: Eager, d = "
        f"{INTERVAL_QUERY.d:g} ms, ct = {INTERVAL_QUERY.ct:g}; W-join: hash BEW, 3 streams, "
        "500 ms",
    ]
    by_name = {w.name: w for w in work}
    for master, res in results.items():
        slots = res["task_slots"]
        lines.append(f"  master {master} ({slots} task slots)")
        for name, race in res["workloads"].items():
            sec, events = race["seconds"], by_name[name].events
            race["events_per_s"] = {q: events / s for q, s in sec.items() if q != "write floor"}
            race["events_per_s_per_slot"] = race["events_per_s"]["ranges"] / slots
            race["floor_ratio"] = sec["ranges"] / sec["write floor"]
            first = next(iter(by_name[name].baselines), None)
            if first is not None:
                race["over_stream"] = sec[first] / sec["ranges"]
            cells = ", ".join(f"{q} {s:.1f} s" for q, s in sec.items())
            lines.append(
                f"    {name:8s} {cells}; {race['results']['ranges']:,} results; ranges "
                f"{race['events_per_s']['ranges']:,.0f} events/s "
                f"({race['events_per_s_per_slot']:,.0f} per slot; in-process "
                f"{by_name[name].figures['events_per_s']:,.0f} on one core)"
            )
            extra = ""
            if "over_stream" in race:
                extra = f", {race['over_stream']:.1f}x faster than the {first}"
            lines.append(f"             ranges / floor {race['floor_ratio']:.2f}x{extra}")
    if len(results) > 1:
        first_master = masters[0]
        for w in work:
            base = results[first_master]["workloads"][w.name]["events_per_s"]["ranges"]
            scale = ", ".join(
                f"{m} {results[m]['workloads'][w.name]['events_per_s']['ranges'] / base:.2f}x"
                for m in masters[1:]
            )
            lines.append(f"  {w.name} ranges events/s relative to {first_master}: {scale}")
    figures = {
        "masters": list(masters),
        "events_per_stream": example.events_per_stream,
        "rounds": rounds,
        "setting": {
            "templates": x.templates,
            "buckets": x.buckets,
            "delta": x.delta,
            "dense_d": x.d,
            "sparse_d": SPARSE_D,
        },
        "per_master": results,
        "in_process": {w.name: w.figures for w in work},
        "machine": _machine(),
    }
    return BenchReport("spark", tuple(lines), figures)
