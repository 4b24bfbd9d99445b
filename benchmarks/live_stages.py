"""``./dev bench live --profile``: a streaming query's micro-batches split by Spark's own records.

Spark reports a micro-batch's phases (``durationMs``: ``latestOffset``, ``queryPlanning``,
``addBatch``, the offset and commit logs); ``addBatch`` runs the batch's jobs.  This module
splits it further from what the driver's status stores keep of every job, with or without
the Spark UI:

- the jobs of the query's run (its job group is the run id; each job's description names its
  batch) and their stages: wall time, tasks, the tasks' summed run, CPU, deserialization and
  GC times, what each stage reads and writes (files, shuffle, Parquet);
- the SQL execution of the batch (the ``foreachBatch`` step's action, which runs the whole
  incremental plan): its operators' timing metrics summed over tasks (the Python workers'
  start, run and execution, the state store's update, commit and RocksDB's parts of it, the
  shuffle, the write's task commits), so the result stage's task time is split too.

The status stores are read through the JVM (``SparkContext.statusStore``, the SQL shared
state's ``statusStore``); they keep the last 1,000 jobs and executions, so read them right after
the query ends.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "PHASES",
    "BatchSplit",
    "StageSplit",
    "median_split",
    "metric_ms",
    "query_batches",
    "split_lines",
]

PHASES = (
    "latestOffset",
    "queryPlanning",
    "addBatch",
    "walCommit",
    "commitOffsets",
    "stateCommit",
    "triggerExecution",
)
"""Spark's phases of a micro-batch (``durationMs``, ms): planning, running the batch (the
join, the decision and the sink), the offset and commit logs, the state store's commit."""
_SKIPPED_METRICS = ("duration", "time to initialize Python workers")
"""Timing metrics left out: each whole-stage-codegen block has a ``duration``, named alike;
a Python worker's initialization is timed from its boot to its function loaded, which for a
reused worker includes its wait for the next task (it exceeds the stage's wall time)."""
_BATCH = re.compile(r"batch = (\d+)")


@dataclass(frozen=True)
class StageSplit:
    """One stage of a micro-batch's job: wall time (submission to completion), tasks and their
    summed times (ms), and what it reads and writes."""

    wall_ms: float
    tasks: int
    task_ms: float
    cpu_ms: float
    deserialize_ms: float
    gc_ms: float
    does: str


@dataclass(frozen=True)
class BatchSplit:
    """One micro-batch: its phases, its jobs' wall time, their stages in order, and the
    batch's SQL timing metrics summed over tasks (ms, by metric name)."""

    batch: int
    phases: Mapping[str, float]
    jobs_ms: float
    stages: tuple[StageSplit, ...]
    metrics: Mapping[str, float] = field(default_factory=dict)


def metric_ms(text: str | None) -> float | None:
    """A SQL timing metric as the status store formats it, in ms (the total of a per-task
    metric); None when it has no value.

    >>> metric_ms("8 ms")
    8.0
    >>> metric_ms("total (min, med, max (stageId: taskId))\\n1.5 s (391 ms, 1.1 s, 1.1 s)")
    1500.0
    >>> metric_ms("2.0 m (1.0 m, 1.0 m, 1.0 m)")
    120000.0
    """
    if not text:
        return None
    value, unit = text.strip().splitlines()[-1].split(" (")[0].split()
    scale = {"ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}[unit]
    return float(value) * scale


def _opt(option: object) -> object:
    return option.get() if option.isDefined() else None  # type: ignore[attr-defined]


def _ms(date_option: object) -> float | None:
    date = _opt(date_option)
    return None if date is None else float(date.getTime())  # type: ignore[attr-defined]


def _does(stage: object) -> str:
    """What a stage reads and writes, from its I/O metrics."""
    parts = []
    if stage.inputRecords():  # type: ignore[attr-defined]
        parts.append("reads files")
    if stage.shuffleReadRecords():  # type: ignore[attr-defined]
        parts.append("reads the shuffle")
    if stage.shuffleWriteRecords():  # type: ignore[attr-defined]
        parts.append("writes the shuffle")
    if stage.outputRecords():  # type: ignore[attr-defined]
        parts.append("writes Parquet")
    return ", ".join(parts) or "no I/O"


def _stages(store: object, stage_ids: Sequence[int]) -> list[StageSplit]:
    out = []
    for sid in sorted(stage_ids):
        s = store.lastStageAttempt(sid)  # type: ignore[attr-defined]
        begin, end = _ms(s.submissionTime()), _ms(s.completionTime())
        if begin is None or end is None:  # skipped
            continue
        out.append(
            StageSplit(
                wall_ms=end - begin,
                tasks=int(s.numCompleteTasks()),
                task_ms=float(s.executorRunTime()),
                cpu_ms=s.executorCpuTime() / 1e6,
                deserialize_ms=float(s.executorDeserializeTime()),
                gc_ms=float(s.jvmGcTime()),
                does=_does(s),
            )
        )
    return out


def _batch_metrics(spark: SparkSession, run_id: str) -> dict[int, dict[str, float]]:
    """Per batch of the run, its SQL executions' timing metrics summed by name (ms); a metric
    that two executions of a batch share (the incremental plan's) counted once."""
    sql = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    executions = sql.executionsList()
    out: dict[int, dict[str, float]] = {}
    seen: dict[int, set[int]] = {}
    for i in range(executions.size()):
        e = executions.apply(i)
        description = e.description() or ""
        found = _BATCH.search(description)
        if run_id not in description or found is None:
            continue
        values = sql.executionMetrics(e.executionId())
        batch = int(found.group(1))
        metrics, counted = out.setdefault(batch, {}), seen.setdefault(batch, set())
        plan = e.metrics()
        for k in range(plan.size()):
            m = plan.apply(k)
            timed = m.metricType() in ("timing", "nsTiming") or m.name().startswith(
                "Number of milliseconds"
            )
            if not timed or m.name() in _SKIPPED_METRICS or m.accumulatorId() in counted:
                continue
            text = _opt(values.get(m.accumulatorId()))
            if m.metricType() != "sum":
                ms = metric_ms(text)
            else:
                ms = float(text) if text else None
            if ms is not None:
                counted.add(m.accumulatorId())
                metrics[m.name()] = metrics.get(m.name(), 0.0) + ms
    return out


def query_batches(spark: SparkSession, query: StreamingQuery) -> list[BatchSplit]:
    """The micro-batches with input of an ended ``query`` (its recent progress), each split
    by its jobs' stages and its SQL metrics (module docstring); in batch order."""
    run_id = str(query.runId)
    store = spark.sparkContext._jsc.sc().statusStore()  # type: ignore[union-attr]
    jobs = store.jobsList(None)
    spans: dict[int, list[float]] = {}
    stage_ids: dict[int, list[int]] = {}
    for i in range(jobs.size()):
        job = jobs.apply(i)
        description = _opt(job.description()) or ""
        found = _BATCH.search(str(description))
        if _opt(job.jobGroup()) != run_id or found is None:
            continue
        batch = int(found.group(1))
        begin, end = _ms(job.submissionTime()), _ms(job.completionTime())
        if begin is not None and end is not None:
            spans.setdefault(batch, []).extend((begin, end))
        ids = job.stageIds()
        stage_ids.setdefault(batch, []).extend(int(ids.apply(k)) for k in range(ids.size()))
    metrics = _batch_metrics(spark, run_id)
    out = []
    for p in query.recentProgress:
        batch = int(p["batchId"])
        if not p["numInputRows"] or batch not in spans:
            continue
        times = spans[batch]
        out.append(
            BatchSplit(
                batch=batch,
                phases={k: float(p["durationMs"].get(k, 0)) for k in PHASES},
                jobs_ms=max(times) - min(times),
                stages=tuple(_stages(store, stage_ids[batch])),
                metrics=metrics.get(batch, {}),
            )
        )
    return sorted(out, key=lambda b: b.batch)


def median_split(batches: Sequence[BatchSplit], skip: int = 2) -> dict[str, object]:
    """The median over ``batches`` (the first ``skip`` left out, as the profile's trigger
    times are) of each phase, of ``addBatch`` outside its jobs, of each stage's figures (by
    position) and of each SQL metric; a JSON-able dict."""
    kept = list(batches[skip:] or batches)
    if not kept:
        return {}

    def med(values: Sequence[float]) -> float:
        return float(statistics.median(values)) if values else 0.0

    depth = min(len(b.stages) for b in kept)
    stages = []
    for k in range(depth):
        column = [b.stages[k] for b in kept]
        stages.append(
            {
                "does": column[-1].does,
                "tasks": column[-1].tasks,
                **{
                    name: med([getattr(s, name) for s in column])
                    for name in ("wall_ms", "task_ms", "cpu_ms", "deserialize_ms", "gc_ms")
                },
            }
        )
    names = sorted({n for b in kept for n in b.metrics})
    return {
        "batches": len(kept),
        "phases_ms": {k: med([b.phases[k] for b in kept]) for k in PHASES},
        "jobs_ms": med([b.jobs_ms for b in kept]),
        "add_batch_outside_jobs_ms": med([b.phases["addBatch"] - b.jobs_ms for b in kept]),
        "stages": stages,
        "metrics_ms": {n: med([b.metrics.get(n, 0.0) for b in kept]) for n in names},
    }


def split_lines(splits: Mapping[str, Mapping[str, object]], least_ms: float = 5.0) -> list[str]:
    """The splits of several queries (name -> :func:`median_split`) as a table, one column per
    query: the phases, ``addBatch``'s jobs and the rest, each stage (wall; tasks' time, CPU),
    and the SQL metrics of at least ``least_ms`` in some query (summed over tasks)."""
    names = list(splits)
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, get: object) -> None:
        rows.append((label, [get(splits[n]) for n in names]))  # type: ignore[operator]

    for phase in PHASES:
        row(phase, lambda s, k=phase: f"{s['phases_ms'][k]:,.0f}")
    row("  addBatch: its jobs, first submitted to last done", lambda s: f"{s['jobs_ms']:,.0f}")
    row(
        "  addBatch: the driver outside its jobs",
        lambda s: f"{s['add_batch_outside_jobs_ms']:,.0f}",
    )
    depth = max(len(s["stages"]) for s in splits.values())  # type: ignore[arg-type]
    for k in range(depth):

        def stage(s: Mapping[str, object], k: int = k) -> str:
            st = s["stages"]
            if k >= len(st):  # type: ignore[arg-type]
                return "-"
            x = st[k]  # type: ignore[index]
            return (
                f"{x['wall_ms']:,.0f} ({x['tasks']} tasks: {x['task_ms']:,.0f} run, "
                f"{x['cpu_ms']:,.0f} JVM CPU; {x['does']})"
            )

        row(f"  stage {k + 1}: wall (tasks' summed times)", stage)
    metric_names = sorted(
        {m for s in splits.values() for m, v in s["metrics_ms"].items() if v >= least_ms}  # type: ignore[attr-defined]
    )
    for m in metric_names:
        row(f"    in tasks: {m}", lambda s, m=m: f"{s['metrics_ms'].get(m, 0.0):,.0f}")
    width = max(len(label) for label, _ in rows)
    lines = [f"  {'ms, median per batch':<{width}} | " + " | ".join(names)]
    lines += [f"  {label:<{width}} | " + " | ".join(cells) for label, cells in rows]
    return lines
