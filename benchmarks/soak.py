"""``./dev bench soak``: the live PTJoin left running (PTJoin Section 3, Theorem 4).

The whole simulated month (:func:`~workbench.data.streams.month_streams`) is replayed at
``speed`` times real time into a :class:`~workbench.spark.queries.live.LiveJoin` with the
dashboard's levers (:data:`~benchmarks.live.LIVE_LEVERS`) for ``minutes`` of wall time (at 300x,
20 minutes cover 100 hours of data).  Every ``sample_seconds`` a sample records:

- the join's **state rows** and state memory, from the query's last progress
  (``stateOperators[*].numRowsTotal`` and ``memoryUsedBytes``, summed);
- the **driver's RSS** (``/proc/self/status`` VmRSS) and the **JVM's RSS** (VmRSS of the JVM's
  own pid, ``ProcessHandle.current().pid()`` through the gateway), and the JVM heap in use
  (``Runtime.totalMemory() - freeMemory()``, no GC forced: it saws with the collector, so it is
  shown but not judged);
- the **per-record latency** (p50, p95) of the records whose micro-batch committed within the
  sample's window: from a replay file becoming visible to the commit of the batch that read it
  (:func:`~benchmarks.live.record_latency`, the batch of each file from the file
  source's log, :func:`~benchmarks.live.file_batches`);
- records replayed and pairs committed so far.

The verdicts compare the run's first third (after a warm-up) with its last third and fit a
line through the last two thirds (:data:`LIMITS`): the state stays bounded (the watermark
evicts it, Theorem 4), memory is flat, the latency does not drift.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pyspark.sql import SparkSession
from tqdm.auto import tqdm

from benchmarks.live import (
    LIVE_LEVERS,
    Levers,
    file_batches,
    levers_set,
    record_latency,
)
from benchmarks.report import BenchReport, Stages
from workbench.app.runs.replay import FILES_PER_SECOND
from workbench.data.replay import Replayer
from workbench.data.streams import ReplayedStreams, month_streams, window_range
from workbench.operators import StreamSpec
from workbench.spark.queries.live import LiveJoin
from workbench.spark.session import spark_session
from workbench.spark.warm import warm_up

__all__ = [
    "LIMITS",
    "SAMPLE_COLUMNS",
    "Limits",
    "bench_soak",
    "fitted_growth",
    "rss_mb",
    "soak_run",
    "soak_verdicts",
]

SAMPLE_COLUMNS = (
    "t_s",
    "state_rows",
    "state_mb",
    "driver_rss_mb",
    "jvm_rss_mb",
    "jvm_heap_mb",
    "p50_s",
    "p95_s",
    "records_timed",
    "records",
    "pairs",
    "batches",
)
"""One sample: seconds since the replay started; the join's state rows and memory (MB); the
driver's and the JVM's RSS and the JVM heap in use (MB); the latency p50 and p95 (s) of the
``records_timed`` records committed since the previous sample (NaN if none); records replayed,
pairs and micro-batches committed so far."""


@dataclass(frozen=True)
class Limits:
    """What the soak's verdicts allow."""

    state_ratio: float = 1.5
    """State rows: the last third's max at most this times the first third's max."""
    state_growth: float = 0.25
    """State rows: the line fitted through the last two thirds grows by at most this share of
    their mean over its span."""
    memory_growth: float = 0.10
    """Driver and JVM RSS: the same fitted growth over the last two thirds."""
    latency_ratio: float = 1.5
    latency_slack_s: float = 0.5
    """Latency: the last third's p50 at most ``latency_ratio`` times the first third's, or
    ``latency_slack_s`` more, whichever allows more."""


LIMITS = Limits()


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident set (VmRSS of ``/proc/<pid>/status``) in MB; NaN if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def fitted_growth(t: np.ndarray, y: np.ndarray) -> float:
    """The least-squares line through ``(t, y)``: its rise over the span of ``t`` as a share
    of the mean of ``y`` (0 for fewer than two points or a zero mean).

    >>> fitted_growth(np.array([0.0, 1.0, 2.0]), np.array([10.0, 11.0, 12.0]))
    0.181818181818
    >>> fitted_growth(np.array([0.0, 1.0, 2.0]), np.array([5.0, 5.0, 5.0]))
    0.0
    """
    t, y = np.asarray(t, np.float64), np.asarray(y, np.float64)
    keep = np.isfinite(y)
    t, y = t[keep], y[keep]
    if len(t) < 2 or np.ptp(t) == 0 or np.mean(y) == 0:
        return 0.0
    slope = np.polyfit(t, y, 1)[0]
    return round(float(slope * np.ptp(t) / np.mean(y)), 12) + 0.0  # no -0.0, no 1e-16


def _jvm(spark: SparkSession) -> tuple[int | None, object | None]:
    """The driver JVM's pid and its ``Runtime`` (None, None over Spark Connect)."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        return int(jvm.java.lang.ProcessHandle.current().pid()), jvm.java.lang.Runtime.getRuntime()
    except Exception:  # noqa: BLE001 (a Connect session has no gateway)
        return None, None


def _last_state(live: LiveJoin) -> tuple[int, int]:
    """State rows and memory bytes of the join query's last progress (0, 0 before any)."""
    query = live.query
    last = query.lastProgress if query is not None else None
    states = (last or {}).get("stateOperators") or []
    return (
        int(sum(s.get("numRowsTotal", 0) for s in states)),
        int(sum(s.get("memoryUsedBytes", 0) for s in states)),
    )


def _file_batches(checkpoint: Path) -> dict[str, int]:
    """:func:`file_batches` of a running query: its log may be compacted (and an old file
    removed) while it is read, so try again."""
    for _ in range(5):
        try:
            return file_batches(checkpoint)
        except (OSError, ValueError):
            time.sleep(0.05)
    return file_batches(checkpoint)


def soak_run(
    spark: SparkSession,
    minutes: float = 20.0,
    speed: float = 300.0,
    sample_seconds: float = 30.0,
    levers: Levers = LIVE_LEVERS,
    streams: ReplayedStreams | None = None,
    progress: bool = False,
    delta: float = 0.8,
) -> dict[str, object]:
    """Replay ``streams`` (default: the simulated month) at ``speed`` into a LiveJoin under
    ``levers`` for ``minutes`` of wall time, sampling every ``sample_seconds`` (module
    docstring); then stop the replay and the query, restore the session's settings and remove
    the run's folder.  Returns the samples (:data:`SAMPLE_COLUMNS`), each sample's latencies
    (``latencies``: arrays of seconds), the run folder, d, delta and the events replayed.
    ``progress``: a bar over the minutes (stderr)."""
    streams = month_streams() if streams is None else streams
    d = window_range(streams.templates).default
    with (
        levers_set(spark, levers),
        tempfile.TemporaryDirectory(prefix="workbench-bench-soak-") as tmp,
    ):
        result = _soak(
            spark,
            Path(tmp),
            streams,
            streams.specs(),
            d,
            delta,
            levers,
            speed,
            minutes,
            sample_seconds,
            progress,
        )
    return {**result, "run_dir": tmp, "d": d, "delta": delta, "levers": asdict(levers)}


def _soak(
    spark: SparkSession,
    root: Path,
    streams: ReplayedStreams,
    specs: tuple[StreamSpec, ...],
    d: float,
    delta: float,
    levers: Levers,
    speed: float,
    minutes: float,
    sample_seconds: float,
    progress: bool,
) -> dict[str, object]:
    (root / "replay").mkdir()
    live = LiveJoin(
        spark,
        root / "replay",
        specs,  # type: ignore[arg-type]
        d,
        delta,
        root / "join",
        d_max=2 * d,
        trigger_seconds=levers.trigger_seconds,
        name=f"bench-soak-{uuid.uuid4().hex[:6]}",
    )
    replay = Replayer(streams.events, root / "replay", speed * 1000.0 / FILES_PER_SECOND, speed)
    jvm_pid, runtime = _jvm(spark)
    samples: list[dict[str, float]] = []
    latencies: list[np.ndarray] = []
    total = minutes * 60.0
    bar = tqdm(total=round(total), desc="soak", unit="s", file=sys.stderr, disable=not progress)
    live.start()
    try:
        began = time.time()
        replay.start()
        timed = 0  # files of replay.visible whose latency is counted
        k = 0
        while True:
            k += 1
            due = began + min(k * sample_seconds, total)
            while time.time() < due:
                if not live.active:
                    raise RuntimeError(f"the live join stopped: {live.error}")
                time.sleep(min(0.5, max(due - time.time(), 0.0)))
                bar.n = min(round(time.time() - began), round(total))
                bar.refresh()
            now = time.time()
            batches = live.batches
            committed = {int(b["batch"]): float(b["time"]) for b in batches}  # type: ignore[call-overload]
            batch_of = _file_batches(live.run_dir / "chk")
            visible = replay.visible[:]
            # the files in order of visibility, read in that order: the leading ones not yet
            # counted whose batch has committed are this window's
            done = timed
            while done < len(visible):
                name = visible[done][0]
                if name not in batch_of or committed.get(batch_of[name], np.inf) > now:
                    break
                done += 1
            lat = record_latency(visible[timed:done], batch_of, committed)
            timed = done
            latencies.append(lat)
            rows, state_bytes = _last_state(live)
            heap = (
                (runtime.totalMemory() - runtime.freeMemory()) / 2**20  # type: ignore[attr-defined]
                if runtime is not None
                else np.nan
            )
            samples.append(
                {
                    "t_s": now - began,
                    "state_rows": float(rows),
                    "state_mb": state_bytes / 2**20,
                    "driver_rss_mb": rss_mb(),
                    "jvm_rss_mb": rss_mb(jvm_pid) if jvm_pid is not None else np.nan,
                    "jvm_heap_mb": float(heap),
                    "p50_s": float(np.quantile(lat, 0.5)) if len(lat) else np.nan,
                    "p95_s": float(np.quantile(lat, 0.95)) if len(lat) else np.nan,
                    "records_timed": float(len(lat)),
                    "records": float(replay.written),
                    "pairs": float(sum(int(b["pairs"]) for b in batches)),  # type: ignore[call-overload]
                    "batches": float(len(batches)),
                }
            )
            if now - began >= total - 1e-6:
                break
    finally:
        bar.close()
        replay.stop()
        replay.join()
        live.close()
    return {
        "samples": samples,
        "latencies": latencies,
        "events": len(streams.events),
        "files": replay.files,
        "jvm_pid": jvm_pid,
    }


def soak_verdicts(
    samples: list[dict[str, float]],
    latencies: list[np.ndarray],
    warm_up_s: float,
    limits: Limits = LIMITS,
) -> dict[str, dict[str, object]]:
    """The run's first third (samples after ``warm_up_s``) against its last third, and a line
    through its last two thirds (:class:`Limits`): per check, its figures and ``ok``."""
    t = np.array([s["t_s"] for s in samples])
    span = float(t[-1]) if len(t) else 0.0

    def col(name: str) -> np.ndarray:
        return np.array([s[name] for s in samples], dtype=np.float64)

    # the warm-up: warm_up_s, and at least until a sample finds state and committed records
    started = np.cumsum((col("state_rows") > 0) & (col("records_timed") > 0)) > 0
    ready = started & (t > warm_up_s)
    first = ready & (t <= span / 3)
    if not first.any():  # a short run: the first sample after the warm-up
        first = t == (t[ready].min() if ready.any() else t.min())
    last = t > 2 * span / 3
    late = t > span / 3

    rows = col("state_rows")
    first_max, last_max = float(rows[first].max()), float(rows[last].max())
    state_growth = fitted_growth(t[late], rows[late])
    out: dict[str, dict[str, object]] = {
        "state_bounded": {
            "first_third_max": first_max,
            "last_third_max": last_max,
            "ratio": last_max / first_max if first_max else float("inf"),
            "fitted_growth": state_growth,
            "ok": bool(
                last_max <= limits.state_ratio * first_max and state_growth <= limits.state_growth
            ),
        }
    }
    for name in ("driver_rss_mb", "jvm_rss_mb"):
        y = col(name)
        growth = fitted_growth(t[late], y[late])
        out[f"{name.removesuffix('_mb')}_flat"] = {
            "first_third_mean_mb": float(np.nanmean(y[first])),
            "last_third_mean_mb": float(np.nanmean(y[last])),
            "fitted_growth": growth,
            "ok": bool(growth <= limits.memory_growth),
        }
    pooled = [
        np.concatenate([lat for lat, m in zip(latencies, mask, strict=True) if m] or [np.zeros(0)])
        for mask in (first, last)
    ]
    p50 = [float(np.quantile(x, 0.5)) if len(x) else float("nan") for x in pooled]
    p95 = [float(np.quantile(x, 0.95)) if len(x) else float("nan") for x in pooled]
    allowed = max(limits.latency_ratio * p50[0], p50[0] + limits.latency_slack_s)
    out["latency_no_drift"] = {
        "first_third_p50_s": p50[0],
        "last_third_p50_s": p50[1],
        "first_third_p95_s": p95[0],
        "last_third_p95_s": p95[1],
        "allowed_p50_s": allowed,
        "ok": bool(p50[1] <= allowed),
    }
    return out


def _seconds(x: float) -> str:
    return f"{x:6.2f}" if np.isfinite(x) else f"{'-':>6}"


def _table(samples: list[dict[str, float]]) -> list[str]:
    head = (
        f"{'t s':>6} {'state rows':>10} {'state MB':>8} {'driver MB':>9} {'JVM RSS':>8} "
        f"{'heap MB':>7} {'p50 s':>6} {'p95 s':>6} {'records':>10} {'pairs':>11}"
    )
    lines = [head]
    for s in samples:
        lines.append(
            f"{s['t_s']:6.0f} {s['state_rows']:10,.0f} {s['state_mb']:8.1f} "
            f"{s['driver_rss_mb']:9.0f} {s['jvm_rss_mb']:8.0f} {s['jvm_heap_mb']:7.0f} "
            f"{_seconds(s['p50_s'])} {_seconds(s['p95_s'])} {s['records']:10,.0f} "
            f"{s['pairs']:11,.0f}"
        )
    return lines


def _verdict_lines(verdicts: dict[str, dict[str, object]], limits: Limits) -> list[str]:
    def word(ok: object) -> str:
        return "PASS" if ok else "FAIL"

    s, lat = verdicts["state_bounded"], verdicts["latency_no_drift"]
    lines = [
        f"  state rows bounded: {word(s['ok'])}: last-third max {s['last_third_max']:,.0f} vs "
        f"first-third max {s['first_third_max']:,.0f} (x{s['ratio']:.2f}, limit "
        f"x{limits.state_ratio:g}); fitted growth over the last two thirds "
        f"{s['fitted_growth']:+.1%} (limit {limits.state_growth:+.0%})"
    ]
    for key, label in (("driver_rss_flat", "driver RSS"), ("jvm_rss_flat", "JVM RSS")):
        m = verdicts[key]
        lines.append(
            f"  {label} flat: {word(m['ok'])}: {m['first_third_mean_mb']:,.0f} MB (first third) "
            f"-> {m['last_third_mean_mb']:,.0f} MB (last third); fitted growth over the last two "
            f"thirds {m['fitted_growth']:+.1%} (limit {limits.memory_growth:+.0%})"
        )
    lines.append(
        f"  latency no drift: {word(lat['ok'])}: p50 {lat['first_third_p50_s']:.2f} s -> "
        f"{lat['last_third_p50_s']:.2f} s (allowed {lat['allowed_p50_s']:.2f} s), p95 "
        f"{lat['first_third_p95_s']:.2f} s -> {lat['last_third_p95_s']:.2f} s"
    )
    return lines


def _write_csv(folder: str | os.PathLike[str], samples: list[dict[str, float]]) -> Path:
    path = Path(folder) / "soak.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(SAMPLE_COLUMNS))
        writer.writeheader()
        writer.writerows(samples)
    return path


def bench_soak(
    minutes: float = 20.0,
    speed: float = 300.0,
    master: str = "local[2]",
    sample_seconds: float = 30.0,
    out: str | None = None,
) -> BenchReport:
    """The live join as the dashboard runs it (:data:`LIVE_LEVERS`, after the same warm-up)
    left running for ``minutes`` over the simulated month replayed at ``speed``, sampled every
    ``sample_seconds`` (module docstring): a table of the samples and the verdicts; ``out``: a
    folder to write them to as ``soak.csv``.  On stderr, a bar over the stages and one over
    the minutes."""
    if master.startswith("sc://"):
        raise ValueError("bench soak measures the driver's JVM: use local[N] or spark://h:p")
    with Stages("bench soak", 3) as stages:
        stages.begin("the simulated month as two streams")
        streams = month_streams()
        stages.begin(f"session on {master}, warming up (as the dashboard server does)")
        spark = spark_session(master, app_name="workbench-bench-soak", shuffle_partitions=2)
        spark.sparkContext.setLogLevel("ERROR")
        warm_up(spark)
        stages.begin(f"{minutes:g} minutes at {speed:g}x")
        run = soak_run(spark, minutes, speed, sample_seconds, streams=streams, progress=True)
    samples: list[dict[str, float]] = run["samples"]  # type: ignore[assignment]
    warm = max(sample_seconds, min(60.0, minutes * 6.0))  # a tenth of the run, at most 60 s
    verdicts = soak_verdicts(samples, run["latencies"], warm)  # type: ignore[arg-type]
    hours = minutes * 60.0 * speed / 3600.0
    lines = [
        f"Soak of the live PTJoin on Spark ({master}, {LIVE_LEVERS.label()}): the simulated "
        f"month ({run['events']:,} events) replayed at {speed:g}x for {minutes:g} min "
        f"({hours:,.0f} h of data, {run['files']:,} files), d = {run['d']:g} ms, delta = "
        f"{run['delta']:g}; a sample every {sample_seconds:g} s (latency: the records committed "
        "since the previous sample; JVM RSS: VmRSS of the driver JVM's pid, heap: "
        "Runtime total - free)",
        *_table(samples),
        f"verdicts (first third after a {warm:g} s warm-up vs last third; a line fitted "
        "through the last two thirds):",
        *_verdict_lines(verdicts, LIMITS),
    ]
    figures: dict[str, object] = {
        "master": master,
        "speed": speed,
        "minutes": minutes,
        "sample_seconds": sample_seconds,
        "events": run["events"],
        "files": run["files"],
        "d": run["d"],
        "delta": run["delta"],
        "levers": run["levers"],
        "warm_up_s": warm,
        "limits": asdict(LIMITS),
        "memory_source": "driver: /proc/self/status VmRSS; JVM: /proc/<pid>/status VmRSS of "
        "ProcessHandle.current().pid(); heap: Runtime.totalMemory() - freeMemory(), no GC",
        "samples": [  # strict JSON: a window without committed records has no latency
            {k: v if np.isfinite(v) else None for k, v in s.items()} for s in samples
        ],
        "verdicts": verdicts,
        "run_dir": run["run_dir"],
    }
    if out is not None:
        figures["csv"] = str(_write_csv(out, samples))
        lines.append(f"samples written to {figures['csv']}")
    return BenchReport("soak", tuple(lines), figures)
