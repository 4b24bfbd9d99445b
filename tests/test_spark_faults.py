"""Executor faults on a standalone cluster: SIGKILL one worker's executor mid-replay and the
query still commits exactly the in-process result, nothing twice (PTJoin, eager and lazy
coalescing, W-join).

One cluster of two 1-core workers on loopback and one driver application on it
(``fault_driver.py``, a process of its own: the suite's local session holds this process's one
SparkContext) serve the module.  Each test replays a folder of files, has the driver run its
query one file per micro-batch, waits until batches are committed and tasks are running, kills
the first worker's executor, and lets the query finish on the other worker and the executor
the master launches in place of the lost one.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.live_cases import in_process_pairs
from tests.support.gated_join import GatedPTJoin
from tests.support.spark_cases import scenario, sorted_pairs
from workbench.coalesce import Window
from workbench.data.event_files import write_event_folder
from workbench.data.replay import Replayer
from workbench.data.synthetic import coalescing_stream
from workbench.events import sort_pairs
from workbench.experiments import Example5Workload
from workbench.operators import PTJoin, brute_force_wjoin, replay
from workbench.operators.windows import WindowConstraints
from workbench.paper_examples import Example5Setting
from workbench.spark.cluster import (
    StandaloneCluster,
    executor_pids,
    kill_executor,
    standalone_cluster,
)
from workbench.spark.queries.coalesce import (
    EXTENT_COLUMNS,
    CoalesceSettings,
    extents_view,
    in_process_view,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).parent.parent
DRIVER = ROOT / "tests" / "support" / "fault_driver.py"
KILL_AFTER = 2  # committed batches before the kill: join state and shuffle output to lose
TIMEOUT = 300.0  # s for a driver to start or a query to finish (a busy 2-core machine)


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


@dataclass
class Driver:
    """The module's cluster and the driver process running jobs on it."""

    cluster: StandaloneCluster
    process: subprocess.Popen[bytes]
    jobs: Path
    log: Path

    def alive(self) -> None:
        assert self.process.poll() is None, self.log.read_text()

    def submit(self, kind: str, case: tuple, source: Path, work: Path) -> None:
        work.mkdir(parents=True)
        (work / "case.pkl").write_bytes(pickle.dumps(case))
        job = {"kind": kind, "case": str(work / "case.pkl"), "source": str(source)}
        tmp = self.jobs / f".{work.name}.job.tmp"
        tmp.write_text(json.dumps(job | {"work": str(work)}))
        os.replace(tmp, self.jobs / f"{work.name}.job")  # the driver never reads half


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Iterator[Driver]:  # noqa: ANN001
    """A master and two workers (1 core, 1 GB each) and a driver application on them.  The
    workers keep their executors' folders (logs) under ``cluster*/work/<app>/<executor>`` in
    this module's temporary folder, not in the pip installation."""
    base = tmp_path_factory.mktemp("cluster")
    jobs = base / "jobs"
    jobs.mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPARK_WORKER_DIR", str(base / "work"))
        # the driver and the executors' Python workers import tests.support.gated_join
        env.setenv(
            "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        )
        with (
            standalone_cluster(cores=1, memory="1g", log_dir=base, workers=2) as cluster,
            (base / "driver.log").open("wb") as log,
        ):
            process = subprocess.Popen(
                [sys.executable, str(DRIVER), cluster.master_url, str(jobs)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the driver's JVM is in its group: kill them together
            )
            running = Driver(cluster, process, jobs, base / "driver.log")
            try:
                _wait(
                    lambda: (jobs / "ready.json").exists() or process.poll() is not None,
                    TIMEOUT,
                    "the driver's session",
                )
                running.alive()
                yield running
                (jobs / "stop").touch()
                process.wait(timeout=60)
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


def _run_killing_an_executor(
    driver: Driver, kind: str, case: tuple, source: Path, work: Path
) -> object:
    """Have the driver run ``kind`` on ``case``; SIGKILL the first worker's executor once
    ``KILL_AFTER`` batches are committed and tasks run; return what the query committed."""
    worker = driver.cluster.processes[1]
    files = len(list(source.glob("*.json")))
    assert files > KILL_AFTER + 3
    status = work / "status.json"
    log_start = driver.log.stat().st_size
    driver.submit(kind, case, source, work)

    def finished() -> bool:
        now = _read_json(status)
        return driver.process.poll() is not None or "error" in now or "done" in now

    def ready() -> bool:
        now = _read_json(status)
        running = now.get("batch", -1) >= KILL_AFTER - 1 and now["tasks"] > 0
        return running or finished()

    _wait(ready, TIMEOUT, f"{KILL_AFTER} committed batches of the {kind} query")
    driver.alive()
    victim = kill_executor(worker)
    at_kill = _read_json(status)
    _wait(finished, TIMEOUT, f"the {kind} query")
    driver.alive()
    final = _read_json(status)
    assert "error" not in final, final["error"]
    # killed mid-replay: the query was running, with files still to read
    assert at_kill["active"] and "done" not in at_kill and at_kill["batch"] < files - 1
    assert min(final["batches"]) >= files - 1
    # the driver lost the executor; the master launched another on the worker's free core
    with driver.log.open("rb") as log:
        log.seek(log_start)
        assert b"Lost executor" in log.read()
    _wait(lambda: executor_pids(worker) not in ([], [victim]), 60, "a replacement executor")
    return pickle.loads((work / "result.pkl").read_bytes())


def test_the_ptjoin_survives_a_killed_executor(driver, tmp_path):
    streams, events = scenario(21, n=300)
    d, delta = 350.0, 0.7  # d < pi: the pandas band probability runs on the executors
    Replayer(events, tmp_path / "in", batch_ms=1000).run()  # 7 files
    pairs = _run_killing_an_executor(
        driver, "ptjoin", (streams, d, delta), tmp_path / "in", tmp_path / "work"
    )
    got = sorted_pairs(pairs)
    assert len(np.unique(got, axis=0)) == len(got)  # none twice
    expected = in_process_pairs(streams, events, d, delta)
    assert len(expected) > 50
    np.testing.assert_array_equal(got, expected)  # none lost


D = 400.0  # the coalescing replay's max delay (ms)


def test_the_range_join_survives_a_killed_executor(driver, tmp_path):
    """A SIGKILL of one worker's executor once the rejects pass is done and the join's tasks
    run, held at a gate until the kill: Spark reruns the lost tasks and stages and the pairs
    the tasks wrote are exactly the in-process operator's, none twice.  10,000 events a stream
    (2.6 M pairs) plan the same 8 ranges on the 2 slots as 60,000 did (15 M pairs, written,
    read back, pickled and sorted: most of the test's time)."""
    w = Example5Workload(Example5Setting(templates=40), events_per_stream=10_000, seed=2)
    streams, events = w.build()
    op = PTJoin(streams=streams, d=w.setting.d, threshold=w.setting.delta)
    gate = tmp_path / "gate"
    gated = GatedPTJoin(gate, streams=streams, d=w.setting.d, threshold=w.setting.delta)
    write_event_folder(tmp_path / "in", streams, events)
    work, worker = tmp_path / "work", driver.cluster.processes[1]
    log_start = driver.log.stat().st_size
    driver.submit("ranges", (gated,), tmp_path / "in", work)

    def finished() -> bool:
        now = _read_json(work / "status.json")
        return driver.process.poll() is not None or "error" in now or "done" in now

    def joining() -> bool:
        now = _read_json(work / "status.json")
        return now.get("jobs", 0) >= 1 and now.get("tasks", 0) > 0 or finished()

    _wait(joining, TIMEOUT, "the range join's tasks")
    assert not finished(), "the join ended before the kill"
    kill_executor(worker)
    gate.touch()
    _wait(finished, TIMEOUT, "the join by time ranges")
    final = _read_json(work / "status.json")
    assert "error" not in final, final["error"]
    with driver.log.open("rb") as log:
        log.seek(log_start)
        assert b"Lost executor" in log.read()
    got = pickle.loads((work / "result.pkl").read_bytes())
    expected = replay(op.clone(), events)[0].ids
    assert len(expected) > 10_000 and len(np.unique(got, axis=0)) == len(got)
    np.testing.assert_array_equal(got, sort_pairs(expected))


def _coalescing_tuples(seed: int, n: int) -> pd.DataFrame:
    """The paper's cp stream over 3 groups, whole-ms times ~100 ms apart, arriving up to D
    later (out of order), 5 % late; in arrival order."""
    rng = np.random.default_rng(seed)
    s = coalescing_stream(rng, n=n, cp=0.6, oop=0.0, groups=(3, 1, 1))
    t = np.round(s["ts"] * 100.0)
    delay = rng.uniform(0.0, D, n)
    delay[rng.random(n) < 0.05] += D + 1.0
    frame = pd.DataFrame(
        {"group": s["g1"].astype(int), "value": (s["a1"] % 4).astype(float), "t": t}
    )
    frame = frame.assign(arrival=t + delay).sort_values("arrival", kind="stable")
    frame.insert(1, "id", np.arange(n))
    return frame.reset_index(drop=True)[["group", "id", "value", "t", "arrival"]]


def test_eager_and_lazy_coalescing_survive_a_killed_executor(driver, tmp_path):
    """The eager extents after every micro-batch, the lazy scheme's stored tuples and its scan
    equal the in-process extent's view, as if no executor had died."""
    frame = _coalescing_tuples(22, n=160)
    batch_ms = 2500.0
    Replayer(frame, tmp_path / "in", batch_ms=batch_ms).run()  # 7 files
    settings = CoalesceSettings(Window("time", 3000.0), retention=6000.0)
    emitted, stored, lazy = _run_killing_an_executor(
        driver, "coalesce", (settings, D), tmp_path / "in", tmp_path / "work"
    )
    accepted = frame[frame["arrival"] <= frame["t"] + D]
    # none twice: one emitted row per group, batch and coalesced tuple; one stored per tuple
    assert not emitted.duplicated(["batch", "group", "start"]).any()
    assert sorted(stored["id"]) == sorted(accepted["id"])
    ends = frame.groupby(np.floor((frame["arrival"] - frame["arrival"][0]) / batch_ms))["arrival"]
    for batch, arrived_by in enumerate(ends.max()):  # batch k read file k, killed or not
        expected = in_process_view(accepted[accepted["arrival"] <= arrived_by], settings.window)
        pd.testing.assert_frame_equal(extents_view(emitted, settings.window, batch), expected)
    final = in_process_view(accepted, settings.window)
    assert (final["count"] > 1).any()
    pd.testing.assert_frame_equal(extents_view(emitted, settings.window), final)
    lazy = lazy[EXTENT_COLUMNS].sort_values(["group", "start"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(lazy, final, check_dtype=False)


def _wjoin_tuples(seed: int, n: int, delays: list[float]) -> pd.DataFrame:
    """Streams of n tuples each, exponential gaps, 4 keys, delay up to D_s (5 % late); in
    arrival order."""
    rng = np.random.default_rng(seed)
    parts = []
    for s, most in enumerate(delays):
        t = np.cumsum(rng.exponential(12.0, n))
        delay = rng.uniform(0.0, most, n)
        late = rng.random(n) < 0.05
        delay[late] = most + rng.uniform(1.0, 50.0, int(late.sum()))
        frame = {"stream": s, "id": 1000 * s + np.arange(n), "key": rng.integers(0, 4, n)}
        parts.append(pd.DataFrame({**frame, "t": t, "arrival": t + delay}))
    return pd.concat(parts).sort_values("arrival", kind="stable").reset_index(drop=True)


def test_the_wjoin_survives_a_killed_executor(driver, tmp_path):
    """A non-uniform 3-clique (the BEW-join per range in Spark's state) equals the brute force."""
    constraints = WindowConstraints(np.array([[0, 20, 35], [20, 0, 12], [35, 12, 0]]))
    delays = [600.0, 400.0, 800.0]
    rows = _wjoin_tuples(24, 150, delays)
    Replayer(rows, tmp_path / "in", batch_ms=400).run()  # 7 files
    got = _run_killing_an_executor(
        driver, "wjoin", (constraints, delays), tmp_path / "in", tmp_path / "work"
    )
    assert len(np.unique(got, axis=0)) == len(got)  # none twice
    on_time = rows[rows["arrival"] <= rows["t"] + rows["stream"].map(dict(enumerate(delays)))]
    per = [on_time[on_time["stream"] == s] for s in range(constraints.m)]
    expected = brute_force_wjoin(
        [p["key"].tolist() for p in per],
        [p["t"].tolist() for p in per],
        [p["id"].tolist() for p in per],
        constraints,
    )
    expected = sort_pairs(np.array(sorted(expected), dtype=np.int64).reshape(-1, constraints.m))
    assert len(expected) > 30
    np.testing.assert_array_equal(got, expected)
