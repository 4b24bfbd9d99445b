"""The Live join (Spark) tab without a browser: a fake LiveJoin stands in for Spark (one test
runs on Spark), work goes through the page's worker thread, plots are rendered server-side."""

from __future__ import annotations

import time

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import pytest
from bokeh.models import CustomJSTickFormatter
from plot_checks import rendered, uncovered

from workbench.app.live import LiveJoinExplorer
from workbench.data.streams import WINDOW_MS, csv_streams, load_streams
from workbench.operators import PTJoin, StreamSpec
from workbench.operators.base import replay
from workbench.spark.metrics import batch_metrics


def newcomer_csv(
    rows: int = 2000,
    jitter_s: float = 10.0,
    bad_times: int = 0,
    epoch_seconds: bool = False,
    seed: int = 0,
) -> bytes:
    """A CSV as a newcomer has one: ``time, sensor, temperature``, two sensors sampling every
    30 s with up to ``jitter_s`` of timing noise, ISO times (or epoch seconds); the first
    ``bad_times`` rows at every tenth line get an unparsable time."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-03-01T08:00:00")
    lines = ["time,sensor,temperature"]
    for k in range(rows):
        t = start + pd.Timedelta(seconds=30 * (k // 2) + rng.uniform(0, jitter_s))
        stamp = f"{t.timestamp():.3f}" if epoch_seconds else t.isoformat()
        if k % 10 == 3 and k // 10 < bad_times:
            stamp = "not a time"
        lines.append(f"{stamp},{'north' if k % 2 else 'south'},{20 + rng.normal():.2f}")
    return ("\n".join(lines) + "\n").encode()


class FakeLive:
    """Stands in for :class:`workbench.spark.live.LiveJoin`: :meth:`step` commits a
    micro-batch of ``per_batch`` pairs; restarts on a new checkpoint start run 2, 3, ...;
    :meth:`caught_up` says what ``idle`` says (the test decides when Spark has caught up)."""

    instances: list[FakeLive] = []
    per_batch = 5

    def __init__(
        self,
        source_dir,
        streams,
        d,
        delta,
        work_dir,
        d_max,
        trigger_seconds,
        name,
        extra_watermark_ms,
    ):
        self.source_dir, self.streams, self.work_dir = source_dir, streams, work_dir
        self.name, self.watermark = name, extra_watermark_ms
        self.d, self.delta, self.d_max, self.trigger = d, delta, d_max, trigger_seconds
        self.run, self.batches, self.rows = 1, [], []
        self.active, self.closed, self.error, self.idle = False, False, None, False
        self.steered: list[str] = []
        self.progress = self
        FakeLive.instances.append(self)

    @property
    def query_name(self) -> str:
        return f"{self.name}-run{self.run}"

    def start(self) -> None:
        self.active = True

    def close(self) -> None:
        self.active, self.closed = False, True

    def caught_up(self) -> bool:
        return self.idle

    def step(self) -> None:
        k = len(self.batches)
        self.batches.append({"batch": k, "pairs": self.per_batch, "d": self.d, "delta": self.delta})
        self.rows.append(
            {
                "query": self.query_name,
                "batch": k,
                "timestamp": pd.Timestamp.now(tz="UTC"),
                "input_rows_per_s": 100.0 + 10 * k,
                "processed_rows_per_s": 90.0 + 5 * k,
                "batch_ms": 300 + 50 * k,
                "state_rows": 40 + k,
                "dropped_by_watermark": 1,
            }
        )

    def frame(self):
        columns = ["query", "batch", "timestamp", "input_rows_per_s", "processed_rows_per_s"]
        return pd.DataFrame(
            self.rows, columns=[*columns, "batch_ms", "state_rows", "dropped_by_watermark"]
        )

    def set_delta(self, delta: float) -> str:
        self.delta = delta
        return f"delta = {delta:g} applies from the next micro-batch; no restart"

    def set_d(self, d: float) -> str:
        self.steered.append(f"d={d:g}")
        if d <= self.d_max:
            self.d = d
            return f"d = {d:g} ms is within the envelope: no restart"
        self.d = self.d_max = d
        self.run, self.batches, self.rows = self.run + 1, [], []
        return f"d = {d:g} ms: restarted on a new checkpoint (run {self.run})"

    def set_watermark(self, extra_ms: float) -> str:
        self.watermark = extra_ms
        self.run, self.batches, self.rows = self.run + 1, [], []
        return f"watermark +{extra_ms:g} ms: restarted on a new checkpoint (run {self.run})"

    def latest(self, n: int):
        k = sum(b["pairs"] for b in self.batches)
        return pd.DataFrame(
            {
                "a_id": range(k),
                "a_template": 0,
                "a_t": 61_500.0,
                "b_id": range(k),
                "b_template": 0,
                "b_t": 62_000.0,
                "d": self.d,
                "delta": self.delta,
                "probability": 0.91234,
            }
        ).tail(n)

    def rejects(self):
        return pd.Series({"late": 3}, name="records")


@pytest.fixture
def live_app(tmp_path):
    """Makes live-join explorers on :class:`FakeLive`; closes them all afterwards."""
    FakeLive.instances.clear()
    FakeLive.per_batch = 5
    apps = []

    def make(**params):
        params = {
            "source": "synthetic events",
            "speed": 20_000.0,
            "live_factory": FakeLive,
            "work_root": str(tmp_path),
            **params,
        }
        apps.append(LiveJoinExplorer(**params))
        return apps[-1]

    yield make
    for app in apps:
        app.close(wait=True)


def _settle(app) -> None:
    """Apply what finished, then a snapshot taken after it."""
    app.settle()
    app.settle()


def _replayed(app, timeout: float = 30.0) -> None:
    """Wait until the replay thread has written every event (it runs on its own)."""
    deadline = time.monotonic() + timeout
    while app._replayer is not None and app._replayer.written < len(app._replayer.records):
        assert time.monotonic() < deadline, "the replay did not end"
        time.sleep(0.05)


# -- moved from tests/test_app.py (with the pairs table as now shown) ---------------------------


def test_live_join_starts_steers_pauses_and_stops_off_the_server_thread(live_app, tmp_path):
    app = live_app()
    assert app.state == "stopped" and pn.panel(app).get_root() is not None
    app.start()
    assert app.state == "starting"  # the work went to the worker thread
    _settle(app)
    (live,) = FakeLive.instances
    assert app.state == "running" and "10,000 events of synthetic events" in app.message
    assert live.active and live.d_max == 2 * app.d and live.streams[0].max_delay == 2000.0
    live.step()
    live.step()
    _settle(app)
    assert app.pairs == 10 and app.run == 1 and len(app.metrics.data) == 2 and app.batches == 2
    assert app.metrics.data["results_per_s"].iloc[-1] > 0
    assert app.table.value["P"].tolist()[0] == "0.912"
    assert app.table.value["A detected"].tolist()[0] == "1:01.5"
    rejects = app.reject_pipe.data.set_index("reason")["records"]
    assert rejects["late"] == 3 and rejects["dropped by watermark"] == 2
    app.delta = 0.6  # applied at once, no worker round trip
    assert live.delta == 0.6 and "no restart" in app.message and not app._jobs
    app.d = 4000.0  # within the envelope: live
    _settle(app)
    assert live.d == 4000.0 and "no restart" in app.message and app.run == 1
    app.d = 10_000.0  # beyond it: a new checkpoint, the charts start over
    _settle(app)
    assert "restarted on a new checkpoint" in app.message and app.run == 2
    assert len(app.metrics.data) == 0
    app.watermark = 3000.0  # a later watermark: another new checkpoint
    _settle(app)
    assert live.watermark == 3000.0 and "new checkpoint" in app.message and app.run == 3
    app.paused = True
    assert app.state == "paused" and "keeps running" in app.message
    assert not app._replayer._running.is_set()
    app.paused = False
    app.speed = 500.0
    assert app.state == "running" and app._replayer.speed == 500.0
    app.stop()
    assert app.state == "stopping"
    _settle(app)
    assert app.state == "stopped" and live.closed and "Stopped after 0 pairs" in app.message
    assert list(tmp_path.iterdir()) == []  # the run's folder is gone


def test_live_join_failures_show_in_the_page_and_it_stays_usable(live_app):
    def no_java(**_):
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited\nstack...")

    app = live_app(live_factory=no_java)
    app.start()
    _settle(app)
    assert app.state == "stopped" and app.failed
    assert "JAVA_GATEWAY_EXITED" in app.message and "stack" not in app.message
    assert app.status().alert_type == "danger"
    app.live_factory = FakeLive
    app.start()
    _settle(app)
    assert app.state == "running" and not app.failed
    (live,) = FakeLive.instances
    live.active, live.error = False, "foreachBatch raised ValueError: boom"
    _settle(app)  # the next snapshot finds the query dead
    assert app.state == "stopped" and app.failed and "boom" in app.message and live.closed


def test_two_pages_run_live_joins_side_by_side(live_app):
    first, second = live_app(), live_app()
    first.start()
    second.start()
    _settle(first)
    _settle(second)
    try:
        assert first.state == second.state == "running"
        a, b = FakeLive.instances
        assert a.query_name != b.query_name  # Spark runs one active query per name
    finally:
        first.stop()
        second.stop()
        _settle(first)
        _settle(second)


def test_live_join_data_sources(tmp_path):
    rng = np.random.default_rng(0)
    lines = ["stamp,node"] + [
        f"{1_700_000_000 + 7 * k + 30 * i + rng.uniform(0, 2):.3f},n{k}"
        for i in range(100)
        for k in range(4)
    ]
    csv = "\n".join(lines).encode()
    streams = load_streams(
        "CSV file", csv_file=csv, csv_time="stamp", csv_sensor="node", csv_time_unit="s"
    )
    assert len(streams.events) == 400 and streams.source.startswith("CSV: 400 readings")
    assert all(1000 < t.pi < 3000 for t in streams.templates)  # the 2 s jitter, learned
    with pytest.raises(ValueError, match="choose a CSV file"):
        load_streams("CSV file")
    with pytest.raises(FileNotFoundError, match="no readings file at"):
        load_streams("Intel Lab readings file", readings_path=str(tmp_path / "data.txt.gz"))
    assert load_streams("simulated deployment").source.startswith("simulated")
    assert len(load_streams("synthetic events").events) == 10_000


def test_live_charts_render():
    from workbench.viz import metric_curve, rate_curves, reject_bars

    live = FakeLive(None, None, 1.0, 0.5, None, 2.0, 1.0, "ptjoin", 0.0)
    for _ in range(3):
        live.step()
    frame = batch_metrics(live.frame(), live.batches, live.query_name, live.rows[0]["timestamp"])
    assert frame["pairs"].tolist() == [5.0] * 3 and frame["elapsed_s"].iloc[0] == 0.0
    renderer = hv.renderer("bokeh")
    renderer.get_plot(rate_curves(frame))
    renderer.get_plot(metric_curve(frame, "state_rows", "join state rows", "black"))
    renderer.get_plot(reject_bars(pd.DataFrame({"reason": ["late"], "records": [3]})))


def test_the_dashboard_loads_without_pyspark():
    import subprocess
    import sys

    code = (
        "import sys, panel as pn; from workbench.app import LiveJoinExplorer; "
        "pn.panel(LiveJoinExplorer()).get_root(); "
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- issue 13: a newcomer's CSV at the defaults, its report, the end of a run -------------------


def test_a_csv_at_the_defaults_runs_with_d_from_its_templates(live_app):
    data = newcomer_csv()  # 30 s sampling, 10 s jitter: templates about 10 s wide
    app = live_app(source="CSV file")
    assert app.fast_from is None and app.d == WINDOW_MS and "learned" in app.window_note().object
    app.csv_file = data  # the upload: read at once, before Start
    streams = csv_streams(data, "time", "sensor", "")
    widest = max(t.pi for t in streams.templates)
    assert 9_000 < widest < 11_000  # the jitter, not the 30 s period
    assert app.fast_from == widest and app.d >= widest and app.d == 11_000.0
    assert app.param.d.bounds[1] >= 20 * app.d
    assert "the fast path applies" in app.window_note().object
    assert "2,000 of 2,000 rows accepted" in app.csv_report and app.csv_alert == "success"
    # at this d the (exact, in-process) PTJoin finds pairs in the CSV: the default is usable
    specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
    pairs, _ = replay(PTJoin(streams=specs, d=app.d, threshold=app.delta), streams.events)
    assert len(pairs.a_ids) > 100
    app.start()
    _settle(app)
    (live,) = FakeLive.instances
    assert app.state == "running" and live.d == app.d and live.d_max == 2 * app.d
    assert "fast path" in app.message and live.steered == []
    assert app.replaying.startswith("CSV: 2,000 readings of 2 sensors")


def test_a_d_set_by_the_user_is_kept_and_the_page_says_which_path(live_app):
    app = live_app(source="CSV file", d=1500.0)
    app.csv_file = newcomer_csv()
    assert app.d == 1500.0 and app.fast_from > 9_000  # the user's d stays
    assert "d < max(pi)" in app.window_note().object
    app.start()
    _settle(app)
    assert FakeLive.instances[0].d == 1500.0 and "exact probabilities" in app.message


def test_start_derives_d_from_the_templates_of_any_source(live_app, monkeypatch):
    import workbench.data.streams as streams_module

    wide = csv_streams(newcomer_csv(), "time", "sensor", "")
    monkeypatch.setattr(streams_module, "synthetic_streams", lambda: wide)
    app = live_app()
    assert app.d == WINDOW_MS and app.fast_from is None  # not read before Start
    app.start()
    _settle(app)
    (live,) = FakeLive.instances
    assert app.d == live.d == 11_000.0 and app.fast_from > 9_000
    assert "follows the data's widest timing template" in app.message
    assert live.steered == [] and app.run == 1  # adopting d did not steer the run
    app.source = "simulated deployment"  # while running: restart, d back to the data's own
    assert app.fast_from is None and app.d == WINDOW_MS
    _settle(app)
    assert FakeLive.instances[-1].d == WINDOW_MS and FakeLive.instances[0].closed


def test_the_csv_report_lists_rejected_rows_and_suggests_the_time_unit(live_app):
    app = live_app(source="CSV file")
    app.csv_file = newcomer_csv(bad_times=200)
    assert app.csv_alert == "warning"
    assert "1,800 of 2,000 rows accepted; 200 rejected because the time does not parse" in (
        app.csv_report
    )
    assert "First rejected rows: 5 (time 'not a time' does not parse), 15 (" in app.csv_report
    assert app.csv_view().object == app.csv_report
    app.csv_file = newcomer_csv(epoch_seconds=True)  # epoch seconds, unit left empty
    assert app.csv_alert == "danger" and "no CSV row has a parsable time" in app.csv_report
    assert 'set the CSV time unit to "s"' in app.csv_report
    app.csv_time_unit = "ms"  # the wrong unit: parses as 1970, still pointed at "s"
    assert app.csv_alert == "warning" and 'the CSV time unit is "ms"' in app.csv_report
    app.csv_time_unit = "s"
    assert app.csv_alert == "success" and "2,000 of 2,000 rows accepted" in app.csv_report
    app.csv_time = "when"
    assert app.csv_alert == "danger" and "columns ['when'] are not in the CSV" in app.csv_report
    app.start()  # an unusable CSV fails the Start with the same words, the page stays up
    _settle(app)
    assert app.state == "stopped" and app.failed and "columns ['when']" in app.message


def test_the_run_finishes_when_the_replay_is_joined(live_app):
    app = live_app()
    app.start()
    _settle(app)
    (live,) = FakeLive.instances
    live.step()
    _replayed(app)
    _settle(app)
    assert app.state == "running" and app.replayed == app.events == 10_000  # not caught up yet
    live.step()
    live.idle = True  # Spark has committed every replayed file
    _settle(app)
    assert app.state == "finished" and app.pairs == 10 and app.status().alert_type == "success"
    assert app.message.startswith("Finished: all 10,000 events replayed and joined, 10 pairs")
    assert (
        "finished" in app.readout().object and "2 micro-batches committed" in app.readout().object
    )
    app.settle()  # the queries stop, the run's folder goes
    assert live.closed and app._live is None and app._snapshot is None
    assert app.table.value["P"].tolist()[0] == "0.912"  # the last pairs stay on the page
    app.d = 5000.0  # steering a finished run does nothing until the next Start
    assert not app._jobs and app.state == "finished"
    app.start()  # Start is available again
    assert app.state == "starting"
    _settle(app)
    assert app.state == "running" and len(FakeLive.instances) == 2 and app.pairs == 0


def test_a_run_without_pairs_finishes_and_says_why(live_app):
    FakeLive.per_batch = 0  # every micro-batch is empty
    app = live_app()
    app.start()
    _settle(app)
    (live,) = FakeLive.instances
    live.step()
    live.step()
    _replayed(app)
    live.idle = True
    _settle(app)
    assert app.state == "finished" and not app.failed and app.pairs == 0
    assert "try a larger window d" in app.message and len(app.table.value) == 0


def test_starting_shows_its_progress(live_app):
    def slow_spark(**kwargs):
        time.sleep(1.5)
        return FakeLive(**kwargs)

    app = live_app(live_factory=slow_spark)
    app.start()
    deadline = time.monotonic() + 10
    while "Starting Spark" not in app.message:
        assert time.monotonic() < deadline, app.message
        time.sleep(0.05)
        app.poll()
    assert app.state == "starting" and "s since Start" in app.message
    _settle(app)
    assert app.state == "running" and "0 micro-batches committed" in app.readout().object


def test_empty_batches_and_results_never_raise(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workbench.spark.live import PAIR_COLUMNS, LiveJoin
    from workbench.viz.live import pair_table, reject_bars

    streams = csv_streams(newcomer_csv(), "time", "sensor", "")
    specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
    live = LiveJoin(None, tmp_path / "in", specs, 3000.0, 0.8, tmp_path / "work")  # no Spark
    pairs = live.run_dir / "pairs"
    pairs.mkdir(parents=True)
    empty = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in PAIR_COLUMNS})
    for k in range(3):  # micro-batches that joined nothing
        pq.write_table(pa.Table.from_pandas(empty), pairs / f"batch-{k:06d}.parquet")
    latest = live.latest(15)
    assert len(latest) == 0 and "probability" in latest.columns
    assert len(pair_table(latest)) == 0
    some = pd.DataFrame(  # a batch with pairs (Spark writes them in no particular order)
        {"a_id": [1, 3, 2], "a_template": 0, "a_t": [60_000.0, 120_000.0, 90_000.0]}
    ).assign(b_id=lambda f: f["a_id"], b_template=0, b_t=lambda f: f["a_t"], d=3000.0, delta=0.8)
    pq.write_table(pa.Table.from_pandas(some[PAIR_COLUMNS]), pairs / "batch-000003.parquet")
    pq.write_table(pa.Table.from_pandas(empty), pairs / "batch-000004.parquet")
    latest = live.latest(2)
    assert latest["a_id"].tolist() == [2, 3] and (latest["probability"] > 0.5).all()
    progress = pd.DataFrame(columns=["query", "batch", "batch_ms", "timestamp", "state_rows"])
    progress = progress.assign(input_rows_per_s=0.0, processed_rows_per_s=0.0)
    assert len(batch_metrics(progress, [], "q", pd.Timestamp.now(tz="UTC"))) == 0
    hv.renderer("bokeh").get_plot(reject_bars(pd.DataFrame({"reason": [], "records": []})))


def test_live_plots_follow_their_data(live_app, monkeypatch):
    # one Buffer feeds four plots; outside a served session HoloViews would let only the first
    # subscriber see the stream as triggering (it defers the others to a session that is not
    # there): dispatch at once, as the server does on its own thread
    monkeypatch.setattr(pn.state, "_unblocked", lambda doc: True)
    app = live_app()
    panes = list(app._charts())
    figures = [rendered(p)[0] for p in panes]
    rejects = figures[-1]
    assert (rejects.y_range.start, rejects.y_range.end) == (0, 1)  # nothing rejected yet
    app.start()
    _settle(app)
    (live,) = FakeLive.instances
    for _ in range(4):
        live.step()
    _settle(app)
    curves, rejects = figures[:-1], figures[-1]
    assert [len(r.data_source.data["elapsed_s"]) for f in curves for r in f.renderers] == [4] * 5
    for figure in curves:  # time since Start reads as a time, not a float
        assert uncovered(figure) == [], figure.title.text
        assert isinstance(figure.xaxis[0].formatter, CustomJSTickFormatter)
    assert figures[1].yaxis[0].axis_label == "duration"
    assert isinstance(figures[1].yaxis[0].formatter, CustomJSTickFormatter)
    # the bars' x axis is categorical (uncovered reads numbers): their counts against y
    assert rejects.y_range.start == 0 and rejects.y_range.end >= 4  # late 3, dropped 4
    live.step()
    live.step()
    _settle(app)
    assert all(uncovered(f) == [] for f in curves)
    counts = rejects.renderers[0].data_source.data["records"]
    assert rejects.y_range.start == 0 and rejects.y_range.end >= max(counts) == 6


def test_the_controls_fit_their_column(live_app):
    app = live_app()
    layout = app.__panel__()
    controls = layout[1][0]
    buttons = controls[0]
    assert controls.width == 300
    assert sum(b.width + 10 for b in buttons) <= controls.width  # 5 px margins each side
    assert [b.name for b in buttons] == ["Start", "Pause", "Stop"]
    assert layout[0].objects[0].object.startswith("Replay a data set")  # the intro
    assert "Concept: Live join" in layout[0].objects[1].title


def test_the_header_names_the_replayed_data(live_app, monkeypatch):
    from workbench.app import dashboard

    made = []

    def tabs():
        made.append(live_app(source="CSV file"))
        return [("Live join (Spark)", made[-1])]

    monkeypatch.setattr(dashboard, "dashboard_tabs", tabs)
    page = dashboard.build_dashboard()
    header = page.header[0]
    assert header.object.startswith("data: **simulated replica") and "Live join" not in (
        header.object
    )
    app = made[0]
    app.csv_file = newcomer_csv()
    app.start()
    _settle(app)
    assert "Live join (running): **CSV: 2,000 readings of 2 sensors**" in header.object


@pytest.mark.spark
def test_live_join_on_spark_changes_delta_live(spark, tmp_path):
    app = LiveJoinExplorer(source="synthetic events", speed=5000.0, work_root=str(tmp_path))
    app.start()
    app.settle()
    assert app.state == "running", app.message
    try:
        deadline = time.monotonic() + 120
        while app.pairs == 0:
            assert time.monotonic() < deadline and app.state == "running", app.message
            time.sleep(0.2)
            app.poll()
        latest = app.table.value
        assert (
            len(latest)
            and (latest["P"].astype(float) >= latest["delta"].astype(float) - 1e-3).all()
        )
        app.delta = 0.5
        assert "no restart" in app.message and app._live.params.delta == 0.5
    finally:
        app.stop()
        app.settle()
    assert app.state == "stopped" and not app.failed and app.pairs > 0


@pytest.mark.spark
def test_a_csv_at_the_defaults_finishes_on_spark(spark, tmp_path):
    app = LiveJoinExplorer(source="CSV file", speed=20_000.0, work_root=str(tmp_path))
    app.csv_file = newcomer_csv()
    app.start()
    try:
        deadline = time.monotonic() + 240
        while app.state != "finished":
            assert time.monotonic() < deadline, app.message
            assert app.state in ("starting", "running") and not app.failed, app.message
            time.sleep(0.2)
            app.poll()
        assert app.replayed == app.events == 2000 and f"{app.pairs:,} pairs" in app.message
        # finished means caught up: every pair the exact in-process PTJoin finds is committed
        streams = csv_streams(app.csv_file, "time", "sensor", "")
        specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
        pairs, _ = replay(PTJoin(streams=specs, d=app.d, threshold=app.delta), streams.events)
        assert app.pairs == len(pairs.a_ids) > 100
    finally:
        app.close(wait=True)
