"""The Live join (Spark) tab without a browser: a fake LiveJoin stands in for Spark (one test
runs on Spark), work goes through the page's worker thread, plots are rendered server-side."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import CustomJSTickFormatter

from harness.live_cases import newcomer_csv
from tests.support.live_fakes import FakeLive
from tests.support.plot_checks import uncovered
from workbench.app.live import LiveJoinExplorer
from workbench.app.live_settings import LiveJoinSettings
from workbench.data.streams import WINDOW_MS, csv_streams, load_streams
from workbench.operators import PTJoin, StreamSpec
from workbench.operators.base import replay
from workbench.spark.metrics import batch_metrics
from workbench.viz.live import METRIC_COLUMNS, live_figures, reject_counts


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
        apps.append(LiveJoinExplorer(LiveJoinSettings(**params)))
        return apps[-1]

    yield make
    for app in apps:
        app.close(wait=True)


def _settle(app) -> None:
    """Apply what finished, then a snapshot taken after it."""
    app.spark.settle()
    app.spark.settle()


def _replayed(app, timeout: float = 30.0) -> None:
    """Wait until the replay thread has written every event (it runs on its own)."""
    deadline = time.monotonic() + timeout
    while (r := app.spark.job.replayer) is not None and r.written < len(r.records):
        assert time.monotonic() < deadline, "the replay did not end"
        time.sleep(0.05)


# -- moved from tests/test_app.py (with the pairs table as now shown) ---------------------------


def test_live_join_starts_steers_pauses_and_stops_off_the_server_thread(live_app, tmp_path):
    app = live_app()
    assert app.spark.state == "idle" and pn.panel(app).get_root() is not None
    app.spark.start()
    assert app.spark.state == "starting"  # the work went to the worker thread
    _settle(app)
    (live,) = FakeLive.instances
    assert app.spark.state == "running" and "10,000 events of synthetic events" in app.spark.message
    assert live.active and live.d_max == 2 * app.model.d and live.streams[0].max_delay == 2000.0
    assert "[Spark UI](http://127.0.0.1:4040)" in app.readout()
    live.step()
    live.step()
    _settle(app)
    assert (
        app.spark.pairs == 10
        and app.spark.run == 1
        and len(app.spark.metrics) == 2
        and app.spark.batches == 2
    )
    assert app.spark.metrics["results_per_s"].iloc[-1] > 0
    assert app.table.value["P"].tolist()[0] == "0.912"
    assert app.table.value["A detected"].tolist()[0] == "1:01.5"
    rejects = app.spark.rejects.set_index("reason")["records"]
    assert rejects["late"] == 3 and rejects["dropped by watermark"] == 2
    app.model.delta = 0.6  # applied at once, no worker round trip
    assert live.delta == 0.6 and "no restart" in app.spark.message and not app.spark.job.pending
    app.model.d = 4000.0  # within the envelope: live
    _settle(app)
    assert live.d == 4000.0 and "no restart" in app.spark.message and app.spark.run == 1
    app.model.d = 10_000.0  # beyond it: a new checkpoint, the charts start over
    _settle(app)
    assert "restarted on a new checkpoint" in app.spark.message and app.spark.run == 2
    assert len(app.spark.metrics) == 0
    app.model.watermark = 3000.0  # a later watermark: another new checkpoint
    _settle(app)
    assert live.watermark == 3000.0 and "new checkpoint" in app.spark.message and app.spark.run == 3
    app.model.paused = True
    assert app.spark.phase() == "paused" and "keeps running" in app.spark.message
    assert app.spark.job.paused
    app.model.paused = False
    app.model.speed = 500.0
    assert app.spark.state == "running" and app.spark.job.replayer.speed == 500.0
    app.spark.stop()
    assert app.spark.state == "stopping"
    _settle(app)
    assert (
        app.spark.state == "idle" and live.closed and "Stopped after 0 pairs" in app.spark.message
    )
    assert list(tmp_path.iterdir()) == []  # the run's folder is gone


def test_live_join_failures_show_in_the_page_and_it_stays_usable(live_app):
    def no_java(**_):
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited\nstack...")

    app = live_app(live_factory=no_java)
    app.spark.start()
    _settle(app)
    assert app.spark.state == "failed"
    assert "JAVA_GATEWAY_EXITED" in app.spark.message and "stack" not in app.spark.message
    assert app.status().alert_type == "danger"
    app.model.live_factory = FakeLive
    app.spark.start()
    _settle(app)
    assert app.spark.state == "running"
    (live,) = FakeLive.instances
    live.active, live.error = False, "foreachBatch raised ValueError: boom"
    _settle(app)  # the next snapshot finds the query dead
    assert app.spark.state == "failed" and "boom" in app.spark.message and live.closed


def test_damaged_state_is_said_and_a_restart_on_a_new_checkpoint_offered(live_app):
    """A sink whose disk filled: the page names the damage and the folder, offers the restart
    on a new checkpoint, and the restart runs the data again in a new run folder."""
    app = live_app()
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    sink = f"{live.work_dir}/run-001/pairs"
    live.active = False
    live.error = (
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] ... org.apache.hadoop.fs.FSError: "
        f"java.io.IOException: No space left on device ... {sink}/batch=3/part-0.parquet"
    )
    _settle(app)  # the next snapshot finds the query stopped by the full disk
    assert app.spark.state == "failed" and app.spark.damaged and live.closed
    assert f"The disk holding the sink folder {sink} is full" in app.spark.message
    assert (
        "Restart on a new checkpoint" in app.spark.message
        and "WORKBENCH_WORK_DIR" in app.spark.message
    )
    page = pn.panel(app)
    recover = [b for b in page.select(pn.widgets.Button) if "new checkpoint" in b.label]
    assert len(recover) == 1 and recover[0].visible
    recover[0].clicks += 1  # as the browser does
    _settle(app)
    assert app.spark.state == "running" and not app.spark.damaged
    assert not recover[0].visible and len(FakeLive.instances) == 2
    assert FakeLive.instances[1].work_dir != live.work_dir  # a new checkpoint and sink


def test_two_pages_run_live_joins_side_by_side(live_app):
    first, second = live_app(), live_app()
    first.spark.start()
    second.spark.start()
    _settle(first)
    _settle(second)
    try:
        assert first.spark.state == second.spark.state == "running"
        a, b = FakeLive.instances
        assert a.query_name != b.query_name  # Spark runs one active query per name
    finally:
        first.spark.stop()
        second.spark.stop()
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
    live = FakeLive(None, None, 1.0, 0.5, None, 2.0, 1.0, "ptjoin", 0.0)
    for _ in range(3):
        live.step()
    frame = batch_metrics(live.frame(), live.batches, live.query_name, live.rows[0]["timestamp"])
    assert frame["pairs"].tolist() == [5.0] * 3 and frame["elapsed_s"].iloc[0] == 0.0
    figs = live_figures(frame[list(METRIC_COLUMNS)], reject_counts(pd.Series({"late": 3}), 0))
    doc = Document()
    for fig in figs:
        doc.add_root(fig)
    doc.to_json()  # serializable as a page receives it


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
    assert (
        app.model.fast_from is None
        and app.model.d == WINDOW_MS
        and "learned" in app.model.window_note()
    )
    app.model.csv_file = data  # the upload: read at once, before Start
    streams = csv_streams(data, "time", "sensor", "")
    widest = max(t.pi for t in streams.templates)
    assert 9_000 < widest < 11_000  # the jitter, not the 30 s period
    assert app.model.fast_from == widest and app.model.d >= widest and app.model.d == 11_000.0
    assert app.model.param.d.bounds[1] >= 20 * app.model.d
    assert "the fast path applies" in app.model.window_note()
    assert (
        "2,000 of 2,000 rows accepted" in app.model.csv_report and app.model.csv_alert == "success"
    )
    # at this d the (exact, in-process) PTJoin finds pairs in the CSV: the default is usable
    specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
    pairs, _ = replay(
        PTJoin(streams=specs, d=app.model.d, threshold=app.model.delta), streams.events
    )
    assert len(pairs.a_ids) > 100
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    assert app.spark.state == "running" and live.d == app.model.d and live.d_max == 2 * app.model.d
    assert "fast path" in app.spark.message and live.steered == []
    assert app.spark.replaying.startswith("CSV: 2,000 readings of 2 sensors")


def test_a_d_set_by_the_user_is_kept_and_the_page_says_which_path(live_app):
    app = live_app(source="CSV file", d=1500.0)
    app.model.csv_file = newcomer_csv()
    assert app.model.d == 1500.0 and app.model.fast_from > 9_000  # the user's d stays
    assert "d < max(pi)" in app.model.window_note()
    app.spark.start()
    _settle(app)
    assert FakeLive.instances[0].d == 1500.0 and "exact probabilities" in app.spark.message


def test_start_derives_d_from_the_templates_of_any_source(live_app, monkeypatch):
    import workbench.data.streams as streams_module

    wide = csv_streams(newcomer_csv(), "time", "sensor", "")
    monkeypatch.setattr(streams_module, "synthetic_streams", lambda: wide)
    app = live_app()
    assert app.model.d == WINDOW_MS and app.model.fast_from is None  # not read before Start
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    assert app.model.d == live.d == 11_000.0 and app.model.fast_from > 9_000
    assert "follows the data's widest timing template" in app.spark.message
    assert live.steered == [] and app.spark.run == 1  # adopting d did not steer the run
    app.model.source = "simulated deployment"  # while running: restart, d back to the data's own
    assert app.model.fast_from is None and app.model.d == WINDOW_MS
    _settle(app)
    assert FakeLive.instances[-1].d == WINDOW_MS and FakeLive.instances[0].closed


def test_the_csv_report_lists_rejected_rows_and_suggests_the_time_unit(live_app):
    app = live_app(source="CSV file")
    app.model.csv_file = newcomer_csv(bad_times=200)
    assert app.model.csv_alert == "warning"
    assert "1,800 of 2,000 rows accepted; 200 rejected because the time does not parse" in (
        app.model.csv_report
    )
    assert "First rejected rows: 5 (time 'not a time' does not parse), 15 (" in app.model.csv_report
    assert app.model.csv_view().object == app.model.csv_report
    app.model.csv_file = newcomer_csv(epoch_seconds=True)  # epoch seconds, unit left empty
    assert (
        app.model.csv_alert == "danger" and "no CSV row has a parsable time" in app.model.csv_report
    )
    assert 'set the CSV time unit to "s"' in app.model.csv_report
    app.model.csv_time_unit = "ms"  # the wrong unit: parses as 1970, still pointed at "s"
    assert app.model.csv_alert == "warning" and 'the CSV time unit is "ms"' in app.model.csv_report
    app.model.csv_time_unit = "s"
    assert (
        app.model.csv_alert == "success" and "2,000 of 2,000 rows accepted" in app.model.csv_report
    )
    app.model.csv_time = "when"
    assert (
        app.model.csv_alert == "danger"
        and "columns ['when'] are not in the CSV" in app.model.csv_report
    )
    app.spark.start()  # an unusable CSV fails the Start with the same words, the page stays up
    _settle(app)
    assert app.spark.state == "failed" and "columns ['when']" in app.spark.message


def test_the_run_finishes_when_the_replay_is_joined(live_app):
    app = live_app()
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    live.step()
    _replayed(app)
    _settle(app)
    assert (
        app.spark.state == "running" and app.spark.replayed == app.spark.events == 10_000
    )  # not caught up yet
    live.step()
    live.idle = True  # Spark has committed every replayed file
    _settle(app)
    assert (
        app.spark.state == "finished"
        and app.spark.pairs == 10
        and app.status().alert_type == "success"
    )
    assert app.spark.message.startswith("Finished: all 10,000 events replayed and joined, 10 pairs")
    assert "finished" in app.readout() and "2 micro-batches committed" in app.readout()
    app.spark.settle()  # the queries stop, the run's folder goes
    assert live.closed and app.spark.job.live is None and not app.spark.job.sampling
    assert app.table.value["P"].tolist()[0] == "0.912"  # the last pairs stay on the page
    app.model.d = 5000.0  # steering a finished run does nothing until the next Start
    assert not app.spark.job.pending and app.spark.state == "finished"
    app.spark.start()  # Start is available again
    assert app.spark.state == "starting"
    _settle(app)
    assert app.spark.state == "running" and len(FakeLive.instances) == 2 and app.spark.pairs == 0


def test_a_run_without_pairs_finishes_and_says_why(live_app):
    FakeLive.per_batch = 0  # every micro-batch is empty
    app = live_app()
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    live.step()
    live.step()
    _replayed(app)
    live.idle = True
    _settle(app)
    assert app.spark.state == "finished" and app.spark.pairs == 0
    assert "try a larger window d" in app.spark.message and len(app.table.value) == 0


def test_starting_shows_its_progress(live_app):
    def slow_spark(**kwargs):
        time.sleep(1.5)
        return FakeLive(**kwargs)

    app = live_app(live_factory=slow_spark)
    app.spark.start()
    deadline = time.monotonic() + 10
    while "Waiting for Spark" not in app.spark.message:
        assert time.monotonic() < deadline, app.spark.message
        time.sleep(0.05)
        app.spark.poll()
    assert app.spark.state == "starting" and "s since Start" in app.spark.message
    _settle(app)
    assert app.spark.state == "running" and "0 micro-batches committed" in app.readout()


def test_start_says_its_first_stage_at_once(live_app):
    # on a warm Spark a start can end between two polls: the page still says what it does
    app = live_app()
    app.spark.start()
    assert app.spark.state == "starting"
    assert (
        app.spark.message
        == "Reading the data and learning its timing templates... (0 s since Start)"
    )
    _settle(app)
    assert app.spark.state == "running"


def test_live_plots_follow_their_data(live_app):
    # each micro-batch streams onto the metrics' one source, the rejects' bars are replaced;
    # the count axes run from 0 to a little above the data
    app = live_app()
    panes = list(app.charts())
    figures = [p.object for p in panes]
    curves, rejects = figures[:-1], figures[-1]
    metrics = curves[0].renderers[0].data_source
    assert all(r.data_source is metrics for f in curves for r in f.renderers)
    assert [len(f.renderers) for f in curves] == [3, 1, 1]  # read, processed, pairs; ...
    for figure in figures:  # counts and durations: 0..1 before any
        assert (figure.y_range.start, figure.y_range.end) == (0, 1)
    for figure in curves:  # time since Start reads as a time, not a float
        assert isinstance(figure.xaxis[0].formatter, CustomJSTickFormatter)
    assert curves[1].yaxis[0].axis_label == "duration"
    assert isinstance(curves[1].yaxis[0].formatter, CustomJSTickFormatter)
    app.spark.start()
    _settle(app)
    (live,) = FakeLive.instances
    doc, changes = Document(), []  # what a page would be sent
    for figure in figures:
        doc.add_root(figure)
    doc.on_change(lambda e: changes.append((type(e).__name__, getattr(e, "model", None))))
    for _ in range(4):
        live.step()
    _settle(app)
    assert len(metrics.data["elapsed_s"]) == 4
    assert metrics.data["results_per_s"].tolist() == app.spark.metrics["results_per_s"].tolist()
    counts = rejects.renderers[0].data_source.data
    assert dict(zip(counts["reason"], counts["records"], strict=True))["late"] == 3
    live.step()
    live.step()
    _settle(app)
    assert len(metrics.data["elapsed_s"]) == 6  # the new rows streamed, nothing replaced
    streamed = {(kind, model.name) for kind, model in changes if model.name}  # sources
    assert streamed == {("ColumnsStreamedEvent", "metrics"), ("ColumnDataChangedEvent", "rejects")}
    assert all(uncovered(f) == [] for f in figures)  # the axes follow the data
    shown = rejects.renderers[0].data_source.data["records"]
    assert rejects.y_range.start == 0 and rejects.y_range.end >= max(shown) > max(counts["records"])
    app.model.d = 10_000.0  # beyond the envelope: a new checkpoint, the charts start over
    _settle(app)
    assert len(metrics.data["elapsed_s"]) == len(app.spark.metrics) < 6


def test_the_controls_fit_their_column(live_app):
    app = live_app()
    layout = app.__panel__()
    controls = layout[1][0]
    buttons = controls[0]
    assert controls.width == 300
    assert sum(b.width + 10 for b in buttons) <= controls.width  # 5 px margins each side
    assert [b.name for b in buttons] == ["Start", "Pause", "Stop"]
    assert layout[0].object.startswith("Replay a data set")  # the intro, and its concept
    assert "<summary>Concept: Live join" in layout[0].object


def test_the_header_names_the_replayed_data(live_app, monkeypatch):
    from workbench.app import dashboard

    live = dashboard.LIVE_TAB
    monkeypatch.setitem(dashboard.TAB_BUILDERS, live, lambda _: live_app(source="CSV file"))
    tabs = dashboard.DashboardTabs()
    page = dashboard.build_dashboard(tabs)
    header = page.header
    assert header.object.startswith("data: **simulated replica") and "Live join" not in (
        header.object
    )
    assert tabs.built() == []  # nothing built before a tab is shown
    app = tabs[live]
    app.model.csv_file = newcomer_csv()
    app.spark.start()
    _settle(app)
    assert "Live join (running): **CSV: 2,000 readings of 2 sensors**" in header.object


@pytest.mark.spark
def test_live_join_on_spark_changes_delta_live(spark, tmp_path):
    app = LiveJoinExplorer(
        LiveJoinSettings(source="synthetic events", speed=5000.0, work_root=str(tmp_path))
    )
    app.spark.start()
    app.spark.settle()
    assert app.spark.state == "running", app.spark.message
    try:
        deadline = time.monotonic() + 120
        while app.spark.pairs == 0:
            assert time.monotonic() < deadline and app.spark.state == "running", app.spark.message
            time.sleep(0.2)
            app.spark.poll()
        latest = app.table.value
        assert (
            len(latest)
            and (latest["P"].astype(float) >= latest["delta"].astype(float) - 1e-3).all()
        )
        app.model.delta = 0.5
        assert "no restart" in app.spark.message and app.spark.job.live.params.delta == 0.5
    finally:
        app.spark.stop()
        app.spark.settle()
        app.close(wait=True)  # its worker thread ends (the room test counts them)
    assert app.spark.state == "idle" and app.spark.pairs > 0


@pytest.mark.spark
def test_a_csv_at_the_defaults_finishes_on_spark(spark, tmp_path):
    app = LiveJoinExplorer(
        LiveJoinSettings(source="CSV file", speed=20_000.0, work_root=str(tmp_path))
    )
    app.model.csv_file = newcomer_csv()
    app.spark.start()
    try:
        deadline = time.monotonic() + 240
        while app.spark.state != "finished":
            assert time.monotonic() < deadline, app.spark.message
            assert app.spark.state in ("starting", "running"), app.spark.message
            time.sleep(0.2)
            app.spark.poll()
        assert (
            app.spark.replayed == app.spark.events == 2000
            and f"{app.spark.pairs:,} pairs" in app.spark.message
        )
        # finished means caught up: every pair the exact in-process PTJoin finds is committed
        streams = csv_streams(app.model.csv_file, "time", "sensor", "")
        specs = tuple(StreamSpec(t, 2000.0) for t in streams.templates)
        pairs, _ = replay(
            PTJoin(streams=specs, d=app.model.d, threshold=app.model.delta), streams.events
        )
        assert app.spark.pairs == len(pairs.a_ids) > 100
    finally:
        app.close(wait=True)


def _message_says(app, text: str, timeout: float = 30.0) -> None:
    """Poll the page (as its periodic callback does) until its message says ``text``."""
    deadline = time.monotonic() + timeout
    while text not in app.spark.message:
        assert time.monotonic() < deadline, app.spark.message
        app.spark.poll()
        time.sleep(0.05)


def test_a_start_beyond_the_spark_slots_waits_and_says_so(live_app, monkeypatch):
    from workbench.app.runs import replay
    from workbench.app.runs.slots import Slots

    slots = Slots(1)
    monkeypatch.setattr(replay, "spark_slots", lambda: slots)
    first, second, third = live_app(), live_app(), live_app()
    first.spark.start()
    _settle(first)
    assert first.spark.state == "running" and slots.in_use == 1
    second.spark.start()
    _message_says(second, "Waiting for a free Spark slot: 1 of 1 runs on this server")
    assert second.spark.state == "starting"
    third.spark.start()
    _message_says(third, "Waiting for a free Spark slot")
    third.close(wait=True)  # its session ended while it waited: it gives up at once
    first.spark.stop()
    _settle(first)
    _settle(second)
    assert first.spark.state == "idle" and second.spark.state == "running" and slots.in_use == 1
    second.spark.stop()
    _settle(second)
    assert slots.in_use == 0
