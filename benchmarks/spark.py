"""``./dev bench spark``: the streaming PTJoin against Spark's deterministic interval join
and against the pandas-UDF join a Spark user would write without Theorem 2 (PTJoin Section 3
on Spark Structured Streaming, Example 5's workload), on several masters in one command.

All three queries share the candidate band join of :func:`~workbench.spark.ptjoin_candidates`
(watermarks, the loose partitions' time range of Eq. 4-5 and the equi bucket key):

- *deterministic join*: every candidate pair is written (Spark's own interval join);
- *PTJoin*: Theorem 2 (Eq. 8 / Eq. 9) against a broadcast stime table, comparisons in the JVM
  (:class:`~workbench.spark.ptjoin.Decider`);
- *pandas-UDF join*: ``P(|Xa - Xb| <= d) >= delta`` (the join condition of Section 3,
  Eq. 1-2 on the adjusted histograms, certified: :class:`~workbench.decision.BandDecider`)
  in a scalar ``pandas_udf`` used as the filter, one Arrow round trip per candidate pair
  (:func:`pandas_udf_query`).  Its pairs must equal PTJoin's; the bench checks it.

Each master (``local[N]``, ``spark://h:p``, ``sc://h:p``, or ``standalone``: a 2-worker,
1-core-each cluster on loopback started by the bench) gets its own session: the previous one
is stopped first (one SparkContext per JVM; pyspark 4 builds a new context after ``stop``).
Progress goes to stderr (stdout carries the report): a bar over the stages of every master
(session, stime tables, warm-up, each query of each round, the pair check) naming the stage
running, and one line per finished stage above it (:class:`~benchmarks.report.Stages`).
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from benchmarks.report import BenchReport, Stages
from workbench.data.replay import Replayer
from workbench.decision import BandDecider
from workbench.events import Events
from workbench.experiments import Example5Workload, join_summary, profile_join
from workbench.operators import PTJoin, StreamSpec
from workbench.spark.cluster import standalone_cluster
from workbench.spark.ptjoin import (
    PAIR_INPUTS,
    SINK_SCHEMA,
    Decider,
    ptjoin_candidates,
    ptjoin_query,
)
from workbench.spark.session import spark_session
from workbench.spark.source import parquet_sink

__all__ = [
    "EVENTS_PER_STREAM",
    "MASTERS",
    "QUERIES",
    "STANDALONE",
    "Race",
    "bench_spark",
    "pair_mismatches",
    "pandas_udf_query",
    "race_queries",
]

STANDALONE = "standalone"
"""The master name that makes the bench start a standalone cluster on loopback: two workers
of one core (and 1 GB) each."""
MASTERS = ("local[1]", "local[2]", STANDALONE)
"""The masters of ``./dev bench spark`` when none is given."""
QUERIES = ("deterministic join", "PTJoin", "pandas-UDF join")
"""The raced queries, in the order each round runs them."""
WARM_UP_EVENTS = 1_000
"""Events of the warm-up replay (JIT, Python workers, numba kernels) before the timed rounds."""

EVENTS_PER_STREAM = 20_000
"""The bench's default events per stream: a fifth of Example 5's 100,000, so that three
masters x three queries x two rounds take minutes, not an hour, on a 2-core machine."""


def pandas_udf_query(
    spark: SparkSession,
    source_dir: str,
    streams: tuple[StreamSpec, StreamSpec],
    d: float,
    delta: float,
    output_dir: str,
    checkpoint_dir: str,
    available_now: bool = True,
    max_files_per_trigger: int | None = None,
) -> StreamingQuery:
    """The PTJoin a Spark user writes without Theorem 2: the same candidate band join, then
    the join condition jc(d, delta) of PTJoin Section 3, ``P(|Xa - Xb| <= d) >= delta``, in a
    scalar pandas UDF per candidate pair, used as the filter; pairs into a Parquet sink.

    The UDF evaluates the band probability exactly as the mathematics says
    (:meth:`BandDecider.decide <workbench.decision.BandDecider.decide>`: floats with a proven
    error bound, rationals within it), so its pairs equal :func:`ptjoin_query`'s; a plain
    float ``P >= delta`` would differ on pairs within a few ulps of delta.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta = {delta!r} must lie strictly between 0 and 1")
    candidates, _ = ptjoin_candidates(spark, source_dir, streams, d, max_files_per_trigger)
    band = BandDecider(*(s.templates for s in streams))

    @F.pandas_udf("boolean")
    def joins(u: pd.Series, t_a: pd.Series, v: pd.Series, t_b: pd.Series) -> pd.Series:
        ok = band.decide(u.to_numpy(), t_a.to_numpy(), v.to_numpy(), t_b.to_numpy(), d, delta)
        return pd.Series(ok, index=u.index)

    pairs = candidates.filter(joins(*PAIR_INPUTS)).select("a_id", "b_id")
    return parquet_sink(pairs, output_dir, checkpoint_dir, available_now)


def _ptjoin_pairs(
    spark: SparkSession, output_dir: str, decider: Decider, d: float, delta: float
) -> tuple[DataFrame, int]:
    """A PTJoin sink's pairs as a frame (its few pending pairs decided exactly in the driver,
    :meth:`Decider.resolve`), and how many were pending."""
    frame = spark.read.schema(SINK_SCHEMA).parquet(output_dir)
    decided = frame.filter(F.col("pending").isNull()).select("a_id", "b_id")
    inputs = [F.col("pending")[k].alias(c) for k, c in enumerate(PAIR_INPUTS)]
    pending = frame.filter(F.col("pending").isNotNull()).select("a_id", "b_id", *inputs)
    rows = pending.toPandas()
    if rows.empty:
        return decided, 0
    kept = decider.resolve(rows.assign(pending=True), d, delta)[["a_id", "b_id"]]
    if kept.empty:
        return decided, len(rows)
    return decided.unionByName(spark.createDataFrame(kept, "a_id LONG, b_id LONG")), len(rows)


def pair_mismatches(
    spark: SparkSession, ptjoin_dir: str, other_dir: str, decider: Decider, d: float, delta: float
) -> tuple[int, int]:
    """``(pairs only one of the two sinks holds, pending PTJoin pairs)``: the first is 0 iff
    the PTJoin sink (pending pairs decided exactly) and the ``(a_id, b_id)`` sink ``other_dir``
    hold the same pairs (one full outer join in Spark, no pair reaches the driver)."""
    ours, pending = _ptjoin_pairs(spark, ptjoin_dir, decider, d, delta)
    theirs = spark.read.parquet(other_dir).select("a_id", "b_id")
    both = ours.withColumn("ours", F.lit(True)).join(
        theirs.withColumn("theirs", F.lit(True)), ["a_id", "b_id"], "full_outer"
    )
    return both.filter(F.col("ours").isNull() | F.col("theirs").isNull()).count(), pending


@dataclass
class Race:
    """One master's race (figures of one run): the seconds to install the stime tables; per
    query the best of the rounds (wall time from start to termination, and the part spent in
    its micro-batches, ``triggerExecution``: without the query's start-up) and its pairs out
    (PTJoin's including pending ones); the pairs PTJoin and the pandas-UDF join disagree on
    (must be 0) and PTJoin's pending pairs."""

    install_s: float
    best_s: dict[str, float] = field(default_factory=dict)
    batch_s: dict[str, float] = field(default_factory=dict)
    pairs: dict[str, int] = field(default_factory=dict)
    mismatches: int = -1
    pending: int = 0


def race_queries(
    spark: SparkSession,
    streams: tuple[StreamSpec, StreamSpec],
    events: Events,
    d: float,
    delta: float,
    rounds: int = 2,
    stages: Stages | None = None,
) -> Race:
    """Time the three :data:`QUERIES` on one replay (``availableNow``): the stime tables'
    installation apart (query installation, as in the paper), then per query the best of
    ``rounds`` alternating runs after a small warm-up replay; then check that the pandas-UDF
    join's pairs equal PTJoin's.  ``stages`` (None: no progress shown) gets a stage for each of
    these steps (``3 + rounds * len(QUERIES)``) and a line on how it went."""
    stages = stages or Stages("race", 0, enabled=False)
    stages.begin("installing the stime tables")
    start = time.perf_counter()
    decider = Decider(spark, streams)
    decider.table(delta).count()  # built, cached and ready to broadcast
    race = Race(time.perf_counter() - start)
    stages.write(f"stime tables installed in {race.install_s:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Replayer(events.head(WARM_UP_EVENTS), root / "warm-up", batch_ms=20_000).run()
        Replayer(events, root / "replay", batch_ms=20_000).run()

        def run(query: str, source: str, out: Path) -> tuple[float, float, int]:
            begin = time.perf_counter()
            args = (spark, str(root / source), streams, d, delta, str(out / "pairs"))
            if query == "pandas-UDF join":
                started = pandas_udf_query(*args, str(out / "chk"))
            else:
                decide = query == "PTJoin"
                started = ptjoin_query(*args, str(out / "chk"), decide=decide, decider=decider)
            started.awaitTermination()
            wall = time.perf_counter() - begin
            ms = sum(p["durationMs"].get("triggerExecution", 0) for p in started.recentProgress)
            return wall, ms / 1e3, spark.read.parquet(str(out / "pairs")).count()

        stages.begin(f"warm-up ({WARM_UP_EVENTS:,} events)")
        begin = time.perf_counter()
        for k, query in enumerate(QUERIES):
            run(query, "warm-up", root / f"warm-{k}")
        stages.write(
            f"warm-up ({WARM_UP_EVENTS:,} events, {len(QUERIES)} queries) "
            f"{time.perf_counter() - begin:.1f} s"
        )
        for r in range(rounds):
            for k, query in enumerate(QUERIES):
                stages.begin(f"round {r + 1}/{rounds} {query}")
                seconds, batches, race.pairs[query] = run(query, "replay", root / f"{r}-{k}")
                if seconds < race.best_s.get(query, np.inf):
                    race.best_s[query], race.batch_s[query] = seconds, batches
                stages.write(
                    f"round {r + 1}/{rounds} {query}: {seconds:.1f} s ({batches:.1f} s in "
                    f"micro-batches), {race.pairs[query]:,} pairs out"
                )
        stages.begin("comparing PTJoin's and the pandas-UDF join's pairs")
        begin = time.perf_counter()
        last = rounds - 1
        race.mismatches, race.pending = pair_mismatches(
            spark,
            str(root / f"{last}-{QUERIES.index('PTJoin')}" / "pairs"),
            str(root / f"{last}-{QUERIES.index('pandas-UDF join')}" / "pairs"),
            decider,
            d,
            delta,
        )
        stages.write(
            f"pairs compared in {time.perf_counter() - begin:.1f} s: "
            f"{race.mismatches} differ ({race.pending} PTJoin pairs were pending)"
        )
    return race


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


def _cores(spark: SparkSession) -> int | None:
    """The session's default parallelism (task slots), unknown over Spark Connect."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 (Spark Connect has no SparkContext)
        return None


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
    progress: bool = True,
    **streams: float,
) -> BenchReport:
    """The three :data:`QUERIES` on one replay of Example 5's workload (``streams``: fields of
    :class:`~workbench.experiments.Example5Workload`; :data:`EVENTS_PER_STREAM` events per
    stream unless ``events_per_stream`` says otherwise), on each of ``masters`` in turn, plus the
    in-process operator; events/s per master and query, PTJoin / deterministic and pandas-UDF
    / PTJoin time ratios.  Query installation (the stime tables, broadcast) is timed apart,
    as in the paper (Section 3.1).  ``progress``: a bar over every master's stages on stderr
    (:class:`~benchmarks.report.Stages`)."""
    if isinstance(masters, str):
        masters = (masters,)
    if not masters or len(set(masters)) < len(masters):
        raise ValueError(f"masters = {tuple(masters)!r} must name one or more distinct masters")
    w = Example5Workload(**{"events_per_stream": EVENTS_PER_STREAM, **streams})
    x = w.setting
    specs, events = w.build()
    n = len(events)

    lines = [
        "Spark streaming PTJoin vs deterministic interval join vs pandas-UDF join: "
        f"{w.events_per_stream:,} events per stream, {x.templates} templates x {x.buckets} "
        f"buckets (<= {x.max_length:g} ms), d = {x.d:g} ms, delta = {x.delta:g}, D = "
        f"{w.max_delay:g} ms (seed {w.seed}); best of {rounds} per query and master",
    ]
    total = len(masters) * (4 + rounds * len(QUERIES)) + 1  # + the in-process PTJoin
    runs: dict[str, tuple[Race, int | None, str, tuple[float, ...], tuple[float, ...]]] = {}
    with Stages("bench spark", total, progress) as stages:
        for i, master in enumerate(masters):
            stages.name = f"bench spark {master} ({i + 1}/{len(masters)})"
            cluster = "a standalone cluster and " if master == STANDALONE else ""
            stages.begin(f"starting {cluster}the session")
            load_before = os.getloadavg()
            with _session(master, stages) as (spark, url):
                cores = _cores(spark)
                race = race_queries(spark, specs, events, x.d, x.delta, rounds, stages)
            runs[master] = (race, cores, url, load_before, os.getloadavg())
            if race.mismatches != 0:
                raise AssertionError(
                    f"on {master}, the pandas-UDF join and PTJoin disagree on "
                    f"{race.mismatches} pairs: the Spark decisions are not exact"
                )
        stages.name = "bench spark"
        stages.begin("in-process PTJoin")
        op = PTJoin(streams=specs, d=x.d, threshold=x.delta)
        in_process = join_summary(profile_join(op, events))
    per_master: dict[str, dict[str, object]] = {}
    ptjoin_rate: dict[str, float] = {}
    for master, (race, cores, url, load_before, load_after) in runs.items():
        rate = {q: n / s for q, s in race.best_s.items()}
        batch_rate = {q: n / s for q, s in race.batch_s.items()}
        ptjoin_rate[master] = rate["PTJoin"]
        ratio = race.best_s["PTJoin"] / race.best_s["deterministic join"]
        faster = race.best_s["pandas-UDF join"] / race.best_s["PTJoin"]
        slots = f"{cores} task slots" if cores else "task slots unknown"
        lines.append(
            f"  master {master} ({slots}; load {load_before[0]:.1f} -> {load_after[0]:.1f}): "
            f"stime tables {race.install_s:.1f} s"
        )
        for q in QUERIES:
            lines.append(
                f"    {q:18s} {race.best_s[q]:8.1f} s  {rate[q]:10,.0f} events/s  "
                f"(in micro-batches {race.batch_s[q]:6.1f} s, {batch_rate[q]:10,.0f} events/s)  "
                f"{race.pairs[q]:,} pairs out"
            )
        lines += [
            f"    PTJoin / deterministic join time: {ratio:.2f}x  (goal <= 1.3x)",
            f"    Theorem 2 path vs pandas-UDF query: {faster:.1f}x faster  (goal >= 3x)",
            f"    same pairs (PTJoin, {race.pending} pending decided exactly, vs pandas UDF): yes",
        ]
        per_master[master] = {
            "url": url,
            "task_slots": cores,
            "load_avg_1min": {"before": load_before[0], "after": load_after[0]},
            "install_s": race.install_s,
            "best_s": race.best_s,
            "events_per_s": rate,
            "batch_s": race.batch_s,
            "batch_events_per_s": batch_rate,
            "pairs": race.pairs,
            "pending": race.pending,
            "same_pairs": True,
            "ptjoin_over_deterministic": ratio,
            "pandas_udf_over_ptjoin": faster,
        }
    if len(per_master) > 1:
        first = masters[0]
        scale = ", ".join(f"{m} {ptjoin_rate[m] / ptjoin_rate[first]:.2f}x" for m in masters[1:])
        lines.append(f"  PTJoin events/s relative to {first}: {scale}")
    lines.append(
        f"  in-process PTJoin  {in_process['seconds']:8.1f} s  "
        f"{in_process['events_per_s']:10,.0f} events/s  {in_process['results']:,} pairs"
    )
    figures = {
        "masters": list(masters),
        "events": n,
        "events_per_stream": w.events_per_stream,
        "rounds": rounds,
        "setting": {"templates": x.templates, "buckets": x.buckets, "d": x.d, "delta": x.delta},
        "per_master": per_master,
        "in_process": in_process,
        "machine": _machine(),
    }
    return BenchReport("spark", tuple(lines), figures)
