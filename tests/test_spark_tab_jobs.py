"""The dashboard tabs' Spark runs (issue 16) on the real Spark session: the replay paced into
the existing coalescing and W-join queries, the Spark view equal to the in-process one after
every reported micro-batch and once caught up, and changes restarting from the checkpoint or
on a new one as ``restart_kind`` says."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.app.runs.coalesce import CoalesceJob, next_settings
from workbench.app.runs.replay import read_prefix, replay_pace
from workbench.app.runs.wjoin import WJoinJob, bew_results
from workbench.coalesce import Equivalence, Window
from workbench.data.streams import default_readings
from workbench.operators.windows import WindowConstraints
from workbench.spark.queries.coalesce import coalesce_records

pytestmark = pytest.mark.spark

MINUTE_MS = 60_000.0


def _readings(motes: tuple[int, ...], hours: float) -> pd.DataFrame:
    r = default_readings()
    start = r["time"].min()
    return r[r["mote"].isin(motes) & (r["time"] < start + pd.Timedelta(hours=hours))], start


def _ms(frame: pd.DataFrame, column: str, start: pd.Timestamp) -> np.ndarray:
    return (frame[column] - start).dt.total_seconds().to_numpy() * 1000.0


def _records(motes: tuple[int, ...] = (1, 2), hours: float = 10.0) -> pd.DataFrame:
    """Mote temperatures as coalescing records (ms, arrival order)."""
    r, start = _readings(motes, hours)
    return coalesce_records(
        _ms(r, "time", start),
        r["mote"].to_numpy(),
        r["temperature"].to_numpy(),
        _ms(r, "arrival", start),
    )


def _until_caught_up(job, timeout: float = 90.0, check=None):  # noqa: ANN001, ANN202
    """Snapshots until the run has caught up; ``check`` each one on the way."""
    deadline = time.monotonic() + timeout
    while True:
        snap = job.snapshot()
        if check is not None:
            check(snap)
        if snap.caught_up:
            return snap
        assert time.monotonic() < deadline, f"not caught up: {snap.read} of {snap.total} read"
        time.sleep(0.2)  # polling the query's progress


def _agrees(snap) -> None:  # noqa: ANN001
    pd.testing.assert_frame_equal(snap.view, snap.expected)


def test_replay_pace_and_read_prefix():
    arrival = np.arange(0.0, 10_000.0, 10.0)
    speed, batch_ms = replay_pace(arrival, 500.0)  # 500 records a second: 5 s of arrival
    assert speed == pytest.approx(5.0) and batch_ms == pytest.approx(2500.0)
    with pytest.raises(ValueError, match="rate = 0"):
        replay_pace(arrival, 0)
    progress = pd.DataFrame({"query": ["q", "q", "q"], "batch": [0, 1, 1], "input_rows": [5, 3, 3]})
    assert read_prefix(progress, "q") == (8, 1)  # a batch reported twice counts once


def test_next_settings_keep_the_retention_while_the_window_fits():
    eq = Equivalence("quantized", quantum=0.5)
    first = next_settings(None, Window("tuples", 50), eq, "eager")
    assert first.retained == 100.0
    assert next_settings(first, Window("tuples", 80), eq, "eager").retained == 100.0
    assert next_settings(first, Window("tuples", 120), eq, "eager").retained == 240.0
    assert next_settings(first, Window("time", 80.0), eq, "eager").retained == 160.0


def test_eager_run_equals_the_extent_and_restarts_as_restart_kind_says(spark, tmp_path):
    """Time window: the view equals the in-process one after every reported micro-batch; a
    wider window within the retention restarts from the same checkpoint (exact at once); a new
    equivalence starts checkpoint 2, which re-reads the replay and is announced."""
    records, errors = _records(), []
    job = CoalesceJob(errors.append, session=lambda: spark, work_root=str(tmp_path))
    eq = Equivalence("quantized", quantum=0.5)
    settings = next_settings(None, Window("time", 30 * MINUTE_MS), eq, "eager")
    try:
        assert "eager coalescing query" in job.start(records, settings, rate=len(records) / 3)
        snap = _until_caught_up(job, check=_agrees)
        assert snap.read == len(records) and len(snap.metrics) >= 1 and snap.checkpoint == 1
        assert len(snap.view) > 5 and (snap.view["count"] > 1).any()
        chk = job.folder("chk")
        wider = next_settings(settings, Window("time", 50 * MINUTE_MS), eq, "eager")
        done = job.reconfigure(wider)
        assert (done.kind, done.checkpoint) == ("same", 1) and "Kept the checkpoint" in done.message
        assert job.folder("chk") == chk and "fits in the retained" in done.why
        snap = job.snapshot()  # nothing to re-read: caught up, exact for the new window at once
        assert snap.caught_up and snap.settings.window == wider.window
        _agrees(snap)
        assert snap.view["count"].sum() > 0
        other = next_settings(wider, wider.window, Equivalence("increasing"), "eager")
        done = job.reconfigure(other)
        assert (done.kind, done.checkpoint) == ("new", 2)
        assert "equivalence changes" in done.message and "re-reads the replay" in done.message
        assert job.folder("chk") != chk and Path(chk).exists()
        snap = _until_caught_up(job, check=_agrees)
        assert snap.checkpoint == 2 and snap.read == len(records)
        assert set(snap.metrics["checkpoint"]) == {1.0, 2.0}
    finally:
        job.close(wait=True)
    assert errors == [] and list(tmp_path.iterdir()) == []  # torn down: the folder is gone


def test_lazy_run_equals_the_extent_then_turns_eager(spark, tmp_path):
    """Tuple window (each mote's newest readings): the lazy scan equals the in-process view;
    window and equivalence changes keep the raw-tuple query's checkpoint; the switch to eager
    starts a new one, whose per-group operator equals it too."""
    records, errors = _records((3, 4, 5), hours=6.0), []
    job = CoalesceJob(errors.append, session=lambda: spark, work_root=str(tmp_path))
    settings = next_settings(None, Window("tuples", 40), Equivalence("absolute", 0.3), "lazy")
    try:
        job.start(records, settings, rate=None)
        snap = _until_caught_up(job, check=_agrees)
        assert len(snap.view) > 5 and (snap.view["count"] > 1).any()
        changed = next_settings(settings, Window("tuples", 90), Equivalence("equal"), "lazy")
        done = job.reconfigure(changed)
        assert (done.kind, done.checkpoint) == ("same", 1) and "raw tuples" in done.why
        snap = job.snapshot()
        assert snap.caught_up and snap.settings == changed
        _agrees(snap)
        eager = next_settings(changed, changed.window, changed.equivalence, "eager")
        done = job.reconfigure(eager)
        assert (done.kind, done.checkpoint) == ("new", 2) and "scheme changes" in done.why
        snap = _until_caught_up(job, check=_agrees)
        assert snap.settings.scheme == "eager" and len(snap.view) > 5
    finally:
        job.close(wait=True)
    assert errors == []


def _wjoin_tuples(motes: tuple[int, ...], hours: float, band: float) -> pd.DataFrame:
    r, start = _readings(motes, hours)
    r = r.dropna(subset=["temperature"]).sort_values("arrival", kind="stable")
    return pd.DataFrame(
        {
            "stream": r["mote"].map({m: k for k, m in enumerate(motes)}).to_numpy(),
            "id": np.arange(len(r)),
            "key": np.floor(r["temperature"].to_numpy() / band).astype(int),
            "t": _ms(r, "time", start),
            "arrival": _ms(r, "arrival", start),
        }
    )


def test_wjoin_run_equals_bew(spark, tmp_path):
    """A 3-path of motes: Spark's committed results equal the in-process BEW-join's once caught
    up; every result's stream time is the arrival of its last tuple."""
    tuples, errors = _wjoin_tuples((1, 2, 3), hours=3.0, band=0.5), []
    constraints = WindowConstraints.path([90_000.0, 60_000.0])
    delays = [
        float((g["arrival"] - g["t"]).max()) + 1e-3 for _, g in tuples.groupby("stream", sort=True)
    ]
    job = WJoinJob(errors.append, session=lambda: spark, work_root=str(tmp_path))
    try:
        assert "3 streams" in job.start(tuples, constraints, delays, rate=len(tuples) / 3)
        snap = _until_caught_up(job)
        assert len(snap.expected) > 20 and snap.agrees
        np.testing.assert_array_equal(snap.results, bew_results(tuples, constraints, delays))
        arrival = tuples.set_index("id")["arrival"]
        last = arrival.reindex(snap.results.ravel()).to_numpy().reshape(-1, 3).max(axis=1)
        np.testing.assert_array_equal(snap.emitted_at, np.sort(last))
        assert snap.metrics["input_rows"].sum() == len(tuples)
    finally:
        job.close(wait=True)
    assert errors == [] and list(tmp_path.iterdir()) == []
