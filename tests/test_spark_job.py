"""The live session without a page: a fake LiveJoin stands in for Spark (no JVM starts), the
replay runs for real, queued work goes through the session's worker thread."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from harness.live_cases import newcomer_csv
from tests.support.live_fakes import FakeLive
from workbench.app.runs.live import LiveSession, RunSettings
from workbench.data.streams import csv_streams
from workbench.operators import StreamSpec
from workbench.spark.metrics import batch_metrics
from workbench.viz.live import METRIC_COLUMNS


def _settings(tmp_path, **changes) -> RunSettings:
    choices = {
        "source": "synthetic events",
        "readings_path": "",
        "csv_file": None,
        "csv_time": "time",
        "csv_sensor": "sensor",
        "csv_time_unit": "",
        "d": 3000.0,
        "delta": 0.8,
        "max_delay": (2000.0, 2000.0),
        "trigger_seconds": 1.0,
        "extra_watermark_ms": 0.0,
        "speed": 20_000.0,
        "paused": False,
        "d_max_factor": 2.0,
        "work_root": str(tmp_path),
        "live_factory": FakeLive,
    }
    return RunSettings(**{**choices, **changes})


@pytest.fixture
def session():
    """A session whose failures are kept in ``session.failures``; closed afterwards."""
    FakeLive.instances.clear()
    FakeLive.per_batch = 5
    failures: list[Exception] = []
    made = LiveSession(on_failure=failures.append)
    made.failures = failures
    yield made
    made.close(wait=True)


def test_a_start_runs_the_replay_into_a_live_join_and_a_stop_removes_the_run(session, tmp_path):
    started = session.start(_settings(tmp_path, csv_file=newcomer_csv(), source="CSV file"))
    (live,) = FakeLive.instances
    assert started.d == 3000.0 and started.events == 2000 and started.run == 1
    assert live.active and live.d == 3000.0 and live.d_max == 6000.0
    assert "exact probabilities (d < max(pi))" in started.message
    assert started.source.startswith("CSV: 2,000 readings") and started.window.default == 11_000
    assert session.live is live and session.replayer is not None and session.stage == ""
    live.step()
    assert session.pairs == 5
    assert session.stop() == "Stopped after 5 pairs; Start replays the data from its start"
    assert live.closed and session.live is None and session.replayer is None
    assert list(tmp_path.iterdir()) == []  # the run's folder is gone


def test_auto_d_takes_the_window_the_templates_suggest(session, tmp_path):
    choices = {"csv_file": newcomer_csv(), "source": "CSV file", "auto_d": True}
    started = session.start(_settings(tmp_path, **choices))
    (live,) = FakeLive.instances
    assert started.d == live.d == 11_000.0 and live.d_max == 22_000.0
    assert "follows the data's widest timing template" in started.message
    assert "the fast path" in started.message


def test_a_paused_replay_writes_nothing_until_it_resumes(session, tmp_path):
    session.start(_settings(tmp_path, speed=1.0, paused=True))
    replayer = session.replayer
    time.sleep(0.3)  # unpaused, the first file is written at once
    assert session.paused and replayer.written == 0
    assert session.pace(2.0, paused=False) == "replay running at 2x"
    deadline = time.monotonic() + 10
    while replayer.written == 0:
        assert time.monotonic() < deadline, "the replay did not resume"
        time.sleep(0.05)
    assert not session.paused and replayer.speed == 2.0
    message = session.pace(2.0, paused=True)
    assert session.paused and message.startswith("replay paused (speed 2x)")
    session.teardown()
    assert session.pace(3.0, paused=False) is None  # nothing runs


def test_steering_reaches_the_running_live_join(session, tmp_path):
    assert session.steer(lambda live: live.set_d(1.0)) is None  # nothing runs yet
    session.start(_settings(tmp_path))
    (live,) = FakeLive.instances
    within = session.steer(lambda live: live.set_d(4000.0))
    assert within.run == 1 and "no restart" in within.message and live.d == 4000.0
    beyond = session.steer(lambda live: live.set_d(10_000.0))
    assert beyond.run == 2 and "new checkpoint" in beyond.message


def test_snapshots_carry_the_figures_and_say_when_the_run_is_joined(session, tmp_path):
    session.start(_settings(tmp_path))
    (live,) = FakeLive.instances
    live.step()
    live.step()
    first = session.snapshot(with_rejects=True)
    assert first.live is live and first.run == 1 and first.pairs == 10 and first.batches == 2
    assert len(first.metrics) == 2 and first.metrics["pairs"].tolist() == [5.0, 5.0]
    assert set(METRIC_COLUMNS) <= set(first.metrics.columns)  # what the charts read
    assert first.rejects.to_dict() == {"late": 3} and first.dropped == 2
    assert first.latest.columns.tolist()[-1] == "probability" and not first.finished
    live.rows[0]["dropped_by_watermark"] = 4
    later = session.snapshot(with_rejects=False)
    assert later.rejects is first.rejects and later.dropped == 5  # rejects as last read
    deadline = time.monotonic() + 30
    while session.replayer.written < len(session.replayer.records):
        assert time.monotonic() < deadline, "the replay did not end"
        time.sleep(0.05)
    live.idle = True  # Spark has committed every replayed file
    assert session.snapshot(with_rejects=False).finished
    live.active, live.error = False, "foreachBatch raised ValueError: boom"
    with pytest.raises(RuntimeError, match="the join query stopped: .*boom"):
        session.snapshot(with_rejects=False)


def test_queued_work_is_handed_back_in_order_on_the_polling_thread(session, tmp_path):
    seen: list[object] = []
    session.submit(lambda: session.start(_settings(tmp_path)), seen.append)
    session.submit(lambda: session.steer(lambda live: live.set_watermark(5.0)), seen.append)
    assert session.pending
    session.collect(seen.append)  # actions are queued: no snapshot yet
    assert not session.sampling
    session.settle()
    started, steered = seen
    assert started.run == 1 and steered.run == 2 and not session.pending
    session.collect(seen.append)
    session.submit(lambda: session.restart(_settings(tmp_path)))  # a new LiveJoin
    session.settle()
    assert len(seen) == 2  # the snapshot of the old LiveJoin was dropped
    session.collect(seen.append)
    session.settle()
    assert seen[-1].live is FakeLive.instances[-1] and session.failures == []


def test_a_failure_stops_the_run_and_goes_to_on_failure(session, tmp_path):
    def no_java(**_):
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited")

    seen: list[object] = []
    session.submit(lambda: session.start(_settings(tmp_path, live_factory=no_java)), seen.append)
    session.settle()
    (error,) = session.failures
    assert "JAVA_GATEWAY_EXITED" in str(error) and seen == []
    assert session.live is None and session.stage == "" and list(tmp_path.iterdir()) == []


def _write_batch(run_dir, k: int, pairs: pd.DataFrame) -> None:  # noqa: ANN001
    """One micro-batch as the live join's batch step leaves it: its partition of the sink
    (pair rows and the marker row) and its record."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pd.concat(
        [pairs.assign(kind="pair", pending=False), pd.DataFrame({"kind": ["batch"]})],
        ignore_index=True,
    )
    rows = rows.assign(reason=None, stream=None, id=None, record=None)  # the rejects' columns
    types = {"a_id": pa.int64(), "a_template": pa.int32(), "b_id": pa.int64()}
    types |= {"b_template": pa.int32(), "kind": pa.string(), "pending": pa.bool_()}
    types |= {"reason": pa.string(), "stream": pa.int32(), "id": pa.int64()}
    types |= {"record": pa.string()}
    schema = pa.schema([(c, types.get(c, pa.float64())) for c in rows.columns])
    folder = run_dir / "pairs" / f"batch={k}"
    folder.mkdir(parents=True)
    table = pa.Table.from_pandas(rows, schema=schema, preserve_index=False)
    pq.write_table(table, folder / "part-0.parquet")
    (run_dir / "batches").mkdir(exist_ok=True)
    record = {"batch": k, "time": 0.0, "pairs": len(pairs), "rejects": 0}
    (run_dir / "batches" / f"{k:06d}.json").write_text(json.dumps(record))


def test_empty_batches_and_results_never_raise(tmp_path):
    from workbench.spark.queries.live import LiveJoin
    from workbench.spark.queries.live_sink import PAIR_COLUMNS
    from workbench.viz.live import empty_metrics, live_figures, pair_table

    streams = csv_streams(newcomer_csv(), "time", "sensor", "")
    specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
    live = LiveJoin(None, tmp_path / "in", specs, 3000.0, 0.8, tmp_path / "work")  # no Spark
    empty = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in PAIR_COLUMNS})
    latest = live.latest(15)  # nothing written yet
    assert len(latest) == 0 and "probability" in latest.columns
    for k in range(3):  # micro-batches that joined nothing
        _write_batch(live.run_dir, k, empty)
    latest = live.latest(15)
    assert len(latest) == 0 and "probability" in latest.columns
    assert len(pair_table(latest)) == 0 and live.rejects().empty
    some = pd.DataFrame(  # a batch with pairs (Spark writes them in no particular order)
        {"a_id": [1, 3, 2], "a_template": 0, "a_t": [60_000.0, 120_000.0, 90_000.0]}
    ).assign(b_id=lambda f: f["a_id"], b_template=0, b_t=lambda f: f["a_t"], d=3000.0, delta=0.8)
    _write_batch(live.run_dir, 3, some[PAIR_COLUMNS])
    _write_batch(live.run_dir, 4, empty)
    latest = live.latest(2)
    assert latest["a_id"].tolist() == [2, 3] and (latest["probability"] > 0.5).all()
    progress = pd.DataFrame(columns=["query", "batch", "batch_ms", "timestamp", "state_rows"])
    progress = progress.assign(input_rows_per_s=0.0, processed_rows_per_s=0.0)
    assert len(batch_metrics(progress, [], "q", pd.Timestamp.now(tz="UTC"))) == 0
    live_figures(empty_metrics(), pd.DataFrame({"reason": [], "records": []}))
