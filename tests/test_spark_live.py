"""The live Spark PTJoin: steering, bad input, a hard driver kill, Spark Connect (on a
standalone cluster: ``test_spark_faults``, the live join and the job by time ranges)."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.connect_client import STALL_S
from tests.support.spark_cases import in_process_pairs, scenario, sorted_pairs
from workbench.data.event_files import write_event_folder
from workbench.data.replay import Replayer
from workbench.operators.oracle import on_time
from workbench.spark.batch import read_result_files
from workbench.spark.cluster import connect_server
from workbench.spark.live import LiveJoin, read_live_pairs

pytestmark = pytest.mark.spark

DRIVER = Path(__file__).parent / "support" / "live_driver.py"
CONNECT_CLIENT = Path(__file__).parent / "support" / "connect_client.py"
CONNECT_LISTENERS = Path(__file__).parent / "support" / "connect_listeners.py"


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def test_delta_changes_live_without_losing_state(spark, tmp_path):
    streams, events = scenario(11)
    d, strict, loose = 700.0, 0.9, 0.5  # d >= pi: the broadcast stime-table path
    half = len(events) // 2
    frame = events.to_frame()
    Replayer(frame.iloc[:half], tmp_path / "in", batch_ms=2000, prefix="first").run()
    live = LiveJoin(
        spark, tmp_path / "in", streams, d, strict, tmp_path / "work", trigger_seconds=0.3
    )
    live.start()
    try:
        query_id = live.query_id
        live.wait_until_idle()
        seen = max(b["batch"] for b in live.batches)
        assert "no restart" in live.set_delta(loose)
        Replayer(frame.iloc[half:], tmp_path / "in", batch_ms=2000, prefix="second").run()
        live.wait_until_idle()
        assert live.query_id == query_id and live.run == 1  # never restarted
    finally:
        live.close()
    out = live.pairs()
    got = sorted_pairs(out)
    assert len(np.unique(got, axis=0)) == len(got)  # none twice
    strict_set = {tuple(p) for p in in_process_pairs(streams, events, d, strict)}
    loose_set = {tuple(p) for p in in_process_pairs(streams, events, d, loose)}
    # each batch judged its pairs exactly by its own delta ...
    for value, oracle in ((strict, strict_set), (loose, loose_set)):
        part = {tuple(p) for p in sorted_pairs(out[out["delta"] == value])}
        assert part and part <= oracle
    # ... and with the state kept across the change nothing that qualifies under both is lost
    assert strict_set <= {tuple(p) for p in got} <= loose_set
    later = [b for b in live.batches if b["batch"] > seen + 1]
    assert later and all(b["delta"] == loose for b in later)  # in force within one batch


def test_d_within_the_envelope_is_live_beyond_it_restarts_on_a_new_checkpoint(spark, tmp_path):
    streams, events = scenario(12, n=250)
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    live = LiveJoin(
        spark,
        tmp_path / "in",
        streams,
        600.0,
        0.7,
        tmp_path / "work",
        d_max=800.0,
        available_now=True,
    )
    message = live.set_d(550.0)  # before start: the first batch already uses it
    assert "within" in message and "no restart" in message
    live.start()
    live.await_termination()
    np.testing.assert_array_equal(
        sorted_pairs(live.pairs()), in_process_pairs(streams, events, 550.0, 0.7)
    )
    message = live.set_trigger(2.0)
    assert "from its checkpoint (run 1)" in message and live.run == 1
    message = live.set_d(1000.0)
    assert "new checkpoint (run 2)" in message and live.run == 2
    assert live.pairs().empty  # the new run starts from nothing and re-reads the replay
    live.start()
    live.await_termination()
    np.testing.assert_array_equal(
        sorted_pairs(live.pairs()), in_process_pairs(streams, events, 1000.0, 0.7)
    )
    assert (tmp_path / "work" / "run-001" / "chk").is_dir()
    assert (tmp_path / "work" / "run-002" / "chk").is_dir()
    least = _final_watermark(live)
    message = live.set_watermark(5000.0)
    assert "new checkpoint (run 3)" in message
    live.start()
    live.await_termination()
    np.testing.assert_array_equal(  # a later watermark keeps state longer, changes no pair
        sorted_pairs(live.pairs()), in_process_pairs(streams, events, 1000.0, 0.7)
    )
    assert (least - _final_watermark(live)).total_seconds() == pytest.approx(5.0, abs=0.002)
    live.close()


def _final_watermark(live: LiveJoin) -> pd.Timestamp:
    """The join query's last event-time watermark."""
    return pd.Timestamp(live.query.lastProgress["eventTime"]["watermark"])


def test_bad_records_are_counted_and_never_change_the_pairs(spark, tmp_path):
    streams, events = scenario(13, n=300)
    d, delta = 350.0, 0.6  # d < pi: the exact band probability path
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    good = {"stream": 0, "id": 9_000, "template": 1, "t_det": 500.0, "arrival": 510.0}
    bad_lines = [
        "this is not json",
        '{"stream": 0, "id": 9001, "template": 1, "t_det": 500.0',  # cut short
        json.dumps({**good, "id": "nine"}),  # a field of the wrong type
        json.dumps({k: v for k, v in good.items() if k != "t_det"}),  # a field missing
        json.dumps(good).replace("500.0", "NaN"),  # not a finite time
    ]
    unknown = [
        json.dumps({**good, "id": 9_100, "template": 99}),
        json.dumps({**good, "id": 9_101, "template": -1}),
        json.dumps({**good, "id": 9_102, "stream": 2}),
    ]
    (tmp_path / "in" / "zz-bad.json").write_text("\n".join(bad_lines + unknown) + "\n")
    live = LiveJoin(
        spark, tmp_path / "in", streams, d, delta, tmp_path / "work", available_now=True
    )
    live.start()
    live.await_termination()
    counts = live.rejects().to_dict()
    live.close()
    late = int((~on_time(events, [s.max_delay for s in streams])).sum())
    assert late > 0
    assert counts == {"malformed": 5, "unknown template": 2, "unknown stream": 1, "late": late}
    np.testing.assert_array_equal(
        sorted_pairs(live.pairs()), in_process_pairs(streams, events, d, delta)
    )


def _pickle_case(tmp_path: Path, streams, d: float, delta: float) -> Path:  # noqa: ANN001
    case = tmp_path / "case.pkl"
    with open(case, "wb") as f:
        pickle.dump((streams, d, delta), f)
    return case


@pytest.mark.slow
def test_a_killed_driver_restarts_from_its_checkpoint_losing_and_repeating_nothing(spark, tmp_path):
    streams, events = scenario(14, n=600)
    d, delta = 700.0, 0.8
    files = Replayer(events, tmp_path / "in", batch_ms=1000)
    files.run()
    case = _pickle_case(tmp_path, streams, d, delta)
    work = tmp_path / "work"
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), str(case), "local[2]", str(tmp_path / "in"), str(work)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the driver's JVM is in its group: kill them together
    )
    records = work / "run-001" / "batches"
    try:
        _wait(
            lambda: len(list(records.glob("*.json"))) >= 4 or driver.poll() is not None,
            180,
            "the driver's first batches",
        )
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # hard: no shutdown hook runs
        driver.wait()
        log.close()
    done = len(list(records.glob("*.json")))
    assert done < files.files  # killed in the middle of the replay
    live = LiveJoin(spark, tmp_path / "in", streams, d, delta, work, available_now=True)
    assert live.run == 1  # resumes the killed run's checkpoint
    live.start()
    live.await_termination()
    live.close()
    got = sorted_pairs(live.pairs())
    assert len(np.unique(got, axis=0)) == len(got)  # nothing twice
    np.testing.assert_array_equal(got, in_process_pairs(streams, events, d, delta))  # nor lost


def _spark_job(master: str, tmp_path: Path, d: float, delta: float) -> np.ndarray:
    """Run ``workbench spark join`` (the module, in a process of its own) on ``master`` over
    ``tmp_path / "events"``; its pairs."""
    out = tmp_path / f"job-{abs(hash(master))}"
    job = ["join", "--master", master, "--input", str(tmp_path / "events"), "--output", str(out)]
    run = subprocess.run(
        [sys.executable, "-m", "workbench.spark.submit", *job, "--d", str(d), "--delta",
         str(delta), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["operator"] == "PTJoin"
    return read_result_files(out / "pairs")


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    """One Spark Connect server for this module's Connect tests (its logs in a folder)."""
    with connect_server(log_dir=tmp_path_factory.mktemp("connect")) as server:
        yield server


@pytest.mark.slow
def test_the_live_join_runs_over_spark_connect(tmp_path, connect):
    """A steerable LiveJoin over one server, with d at and below max(pi): its range step runs
    in the server's Python workers and its foreachBatch step in the server's Python, both
    reading the parameters from the run folder."""
    streams, events = scenario(16, n=300)
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    settings = [(700.0, 0.8), (350.0, 0.6)]
    case = tmp_path / "case.pkl"
    with open(case, "wb") as f:
        pickle.dump((streams, settings), f)
    run = subprocess.run(
        [
            sys.executable,
            str(CONNECT_CLIENT),
            str(case),
            connect.master_url,
            str(tmp_path / "in"),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=STALL_S + 100,  # a stalled client reports its stacks first
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for k, (d, delta) in enumerate(settings):
        expected = in_process_pairs(streams, events, d, delta)
        got = np.load(tmp_path / "out" / str(k) / "live.npy")  # steered to delta
        np.testing.assert_array_equal(got, expected)


@pytest.mark.slow
def test_the_job_by_time_ranges_runs_over_spark_connect(tmp_path, connect):
    """``workbench spark join`` over Spark Connect: the operator's ranges run in the server's
    Python workers, which write the pairs; the same pairs as in-process."""
    streams, events = scenario(18, n=300)
    d, delta = 350.0, 0.7
    write_event_folder(tmp_path / "events", streams, events)
    got = _spark_job(connect.master_url, tmp_path, d, delta)
    np.testing.assert_array_equal(got, in_process_pairs(streams, events, d, delta))


@pytest.mark.slow
def test_a_busy_listener_detaches_over_spark_connect_without_hanging(connect):
    """Right after its query stops, a listener with progress events queued behind it is
    removed without hanging the Connect client (its last listener's removal waits for the
    event thread under the lock that thread needs: SPARK-59623); straight away, about 4
    rounds in 10 hung on pyspark 4.3.0."""
    run = subprocess.run(
        [sys.executable, str(CONNECT_LISTENERS), connect.master_url, "8"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "hung 0 of 8" in run.stdout, run.stdout + run.stderr


@pytest.mark.slow
def test_batches_larger_than_the_driver_may_collect_are_written_by_the_executors(tmp_path):
    """No whole-batch collect: one micro-batch of ~100k pairs (several MB) under a 1 MB
    ``spark.driver.maxResultSize``; collecting that output in the driver is refused."""
    streams, events = scenario(17, n=600)
    d, delta = 4000.0, 0.05
    Replayer(events, tmp_path / "in", batch_ms=1e9).run()  # one file: one batch
    case = _pickle_case(tmp_path, streams, d, delta)
    run = subprocess.run(
        [
            sys.executable,
            str(DRIVER),
            str(case),
            "local[2]",
            str(tmp_path / "in"),
            str(tmp_path / "work"),
            "--available-now",
            "--conf",
            "spark.driver.maxResultSize=1m",
            "--collect",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    expected = in_process_pairs(streams, events, d, delta)
    assert len(expected) > 50_000
    assert f"pairs {len(expected)}" in run.stdout
    assert "collect refused: True" in run.stdout  # the batch's output exceeds the limit
    got = sorted_pairs(read_live_pairs(tmp_path / "work" / "run-001"))
    np.testing.assert_array_equal(got, expected)


def test_bench_live_maps_every_record_to_the_batch_that_committed_it(spark):
    """``bench live``'s measurement on a short fast replay: every record's file is found in
    the file source's log, latencies are positive, and the session's settings are restored."""
    from benchmarks.live import Levers, live_run

    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    run = live_run(spark, Levers(shuffle_partitions=1, trigger_seconds=0.2), 3000.0, 2.0)
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert run["files"] >= 3 and run["pairs"] > 0 and run["batches_with_input"] >= 1
    assert run["records_timed"] == run["events"]
    latency = run["latency_s"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["max"] < 120


def test_the_warm_up_runs_a_small_live_join_to_its_end(spark):
    from workbench.spark.warm import warm_up

    assert warm_up(spark) > 0
    assert not [q for q in spark.streams.active if q.name and q.name.startswith("warm-up")]


def test_bench_live_profiles_each_step_of_a_micro_batch(spark):
    """``bench live --profile``: every variant runs to its end and has a batch time."""
    from benchmarks.live_profile import VARIANTS, profile_batches

    figures = profile_batches(spark, events=300, files=1)
    assert list(figures) == list(VARIANTS)
    assert all(ms > 0 for ms in figures.values())
