"""A Spark driver process for the executor-fault tests: one application on a cluster that runs
queries on pickled cases, one after another, reporting their progress in files.

``python tests/support/fault_driver.py MASTER JOBS``: once the session is up it writes
``JOBS/ready.json`` (the application id), then runs each ``JOBS/<name>.job`` it finds (written
atomically: ``{"kind", "case", "source", "work"}``, in name order) until ``JOBS/stop`` appears.
A job's KIND and the pickled CASE:

- ``ptjoin``: ``(streams, d, delta)``, a :class:`~workbench.spark.queries.live.LiveJoin`;
- ``coalesce``: ``(settings, max_delay)``, the eager coalescing query and, beside it on the
  same replay, the lazy scheme's raw-tuple sink (coalesced by a scan once it is done);
- ``wjoin``: ``(constraints, max_delay)``, the W-join query;
- ``ranges``: ``(op,)``, the batch join by time ranges
  (:func:`~workbench.spark.queries.batch.run_join`) over the event folder SOURCE; its status counts
  the Spark jobs done (``"jobs"``) instead of batches.

Every query reads one replay file per micro-batch (``availableNow`` with
``maxFilesPerTrigger = 1``), so the replay takes many batches to kill an executor in.  While
they run, ``WORK/status.json`` is replaced every 0.1 s by ``{"app", "batch", "active",
"tasks"}``: the application id, the least last committed batch id of the queries (-1 before
the first), whether one still runs and how many tasks run now.  At the end ``WORK/result.pkl``
holds the committed output and ``status.json`` gets ``"done": true`` and each query's last
batch id.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import threading
import time
import traceback
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from workbench.spark import spark_session
from workbench.spark.queries.batch import read_result_files, run_join
from workbench.spark.queries.coalesce import (
    eager_coalesce_query,
    lazy_coalesce,
    raw_tuples_query,
    read_emitted,
)
from workbench.spark.queries.live import LiveJoin
from workbench.spark.queries.wjoin import read_results, wjoin_query


def _write_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)  # atomic: the test never reads half


def _running_tasks(spark: SparkSession) -> int:
    tracker = spark.sparkContext.statusTracker()
    infos = (tracker.getStageInfo(s) for s in tracker.getActiveStageIds())
    return sum(info.numActiveTasks for info in infos if info is not None)


def _report(spark: SparkSession, queries: list[StreamingQuery], status: Path) -> dict:
    """Report progress until every query has stopped; return the last report."""
    app = spark.sparkContext.applicationId
    while True:
        active = any(q.isActive for q in queries)
        batches = [q.lastProgress["batchId"] if q.lastProgress else -1 for q in queries]
        report = {"app": app, "batch": min(batches, default=-1), "active": active}
        report["tasks"] = _running_tasks(spark) if active else 0
        _write_json(status, report)
        if not active:
            return report | {"batches": batches}
        time.sleep(0.1)


def _ptjoin(spark: SparkSession, case: tuple, source: str, work: Path) -> tuple:
    streams, d, delta = case
    live = LiveJoin(
        spark,
        source,
        streams,
        d,
        delta,
        work / "live",
        max_files_per_trigger=1,
        available_now=True,
    )
    live.start()
    try:
        join = [q for q in spark.streams.active if q.name == live.query_name]
        report = _report(spark, join, work / "status.json")
        live.await_termination()  # raises if a query failed
    finally:
        live.close()  # the next job runs in this session
    return report, live.pairs()


def _coalesce(spark: SparkSession, case: tuple, source: str, work: Path) -> tuple:
    settings, max_delay = case
    eager = eager_coalesce_query(
        spark,
        source,
        settings,
        max_delay,
        str(work / "eager"),
        str(work / "chk-eager"),
        max_files_per_trigger=1,
    )
    # the lazy scheme's streaming half: a sink of the accepted raw tuples
    raw = raw_tuples_query(
        spark, source, max_delay, str(work / "raw"), str(work / "chk-raw"), max_files_per_trigger=1
    )
    try:
        report = _report(spark, [eager, raw], work / "status.json")
        for query in (eager, raw):
            query.awaitTermination()  # raises if it failed
    finally:
        for query in (eager, raw):
            query.stop()  # the next job runs in this session
    stored = spark.read.parquet(str(work / "raw")).toPandas()
    lazy = lazy_coalesce(spark, str(work / "raw"), settings.window).toPandas()
    return report, (read_emitted(spark, str(work / "eager")), stored, lazy)


def _wjoin(spark: SparkSession, case: tuple, source: str, work: Path) -> tuple:
    constraints, max_delay = case
    query = wjoin_query(
        spark,
        source,
        constraints,
        max_delay,
        str(work / "out"),
        str(work / "chk"),
        max_files_per_trigger=1,
    )
    try:
        report = _report(spark, [query], work / "status.json")
        query.awaitTermination()  # raises if it failed
    finally:
        query.stop()  # the next job runs in this session
    return report, read_results(spark, str(work / "out"), constraints.m)


def _ranges(spark: SparkSession, case: tuple, source: str, work: Path) -> tuple:
    (op,) = case
    failed: list[BaseException] = []

    def run() -> None:
        spark.sparkContext.setJobGroup("ranges", "the join by time ranges")
        try:
            run_join(spark, source, op, work / "out")
        except BaseException as exc:  # noqa: BLE001 (re-raised below, in this thread)
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    tracker = spark.sparkContext.statusTracker()
    while thread.is_alive():
        infos = (tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup("ranges"))
        jobs = sum(1 for info in infos if info is not None and info.status == "SUCCEEDED")
        status = {"jobs": jobs, "active": True, "tasks": _running_tasks(spark)}
        _write_json(work / "status.json", status)
        time.sleep(0.1)
    thread.join()
    if failed:
        raise failed[0]
    return {"active": False}, read_result_files(work / "out" / "pairs")


KINDS = {"ptjoin": _ptjoin, "coalesce": _coalesce, "wjoin": _wjoin, "ranges": _ranges}


def _run(spark: SparkSession, job: dict) -> None:
    """Run one job; its folder gets ``result.pkl`` and a final status (``done``, or ``error``
    with the traceback: the driver stays up for the next job)."""
    work = Path(job["work"])
    work.mkdir(parents=True, exist_ok=True)
    with open(job["case"], "rb") as f:
        case = pickle.load(f)
    try:
        report, result = KINDS[job["kind"]](spark, case, job["source"], work)
    except Exception:
        _write_json(work / "status.json", {**_status(work), "error": traceback.format_exc()})
        return
    with open(work / "result.pkl", "wb") as f:
        pickle.dump(result, f)
    _write_json(work / "status.json", report | {"done": True})


def _status(work: Path) -> dict:
    try:
        return json.loads((work / "status.json").read_text())
    except FileNotFoundError:
        return {}


def main(argv: list[str]) -> None:
    master, jobs = argv[0], Path(argv[1])
    # executors of 512 MB: two and a replacement stay light beside the driver on a small
    # machine.  spark.task.maxFailures stays at its cluster default of 4: a SIGKILL fails each
    # task running on that executor once, and a stage that then misses the executor's shuffle
    # output is retried (spark.stage.maxConsecutiveAttempts, also 4), so one kill per query is
    # far from either limit; raising them could only hide a query failing for another reason.
    os.environ["PYSPARK_SUBMIT_ARGS"] = "--conf spark.executor.memory=512m pyspark-shell"
    spark = spark_session(master, app_name="workbench-faults", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("WARN")  # the lost executor and its lost tasks
    _write_json(jobs / "ready.json", {"app": spark.sparkContext.applicationId})
    while not (jobs / "stop").exists():
        for path in sorted(jobs.glob("*.job")):
            job = json.loads(path.read_text())
            path.unlink()
            _run(spark, job)
        time.sleep(0.1)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
