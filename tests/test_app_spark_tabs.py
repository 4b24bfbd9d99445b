"""The Coalescing and Multi-way join tabs run on Spark (issue 16), without a browser: the
page objects are driven directly, the Spark work goes through their job's worker thread and
the real test session, snapshots come in through ``poll`` as the periodic callback brings
them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import holoviews as hv
import panel as pn
import pytest

from workbench.app.coalescing import CoalescingExplorer
from workbench.app.coalescing_model import CoalescingModel
from workbench.app.coalescing_spark import CoalescingSpark
from workbench.app.spark_section import SparkSection
from workbench.app.wjoin import WJoinExplorer
from workbench.app.wjoin_model import WJoinModel
from workbench.app.wjoin_spark import WJoinSpark


def _poll_until(app, done, timeout: float = 90.0) -> None:  # noqa: ANN001
    """Poll the page (as its periodic callback does) until ``done()``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, app.spark.message
        time.sleep(0.2)  # polling the run, as the page's callback does every second
        app.spark.poll()


def _caught_up(app, checkpoint: int):  # noqa: ANN001, ANN202
    return lambda: (
        app.spark.snapshot is not None
        and app.spark.snapshot.caught_up
        and app.spark.snapshot.checkpoint == checkpoint
        and app.spark.snapshot.generation == app.spark.job.generation
        and not app.spark.job.pending
    )


def test_the_tabs_load_without_pyspark():
    code = (
        "import sys, panel as pn; from workbench.app import CoalescingExplorer, WJoinExplorer; "
        "[pn.panel(t()).get_root() for t in (CoalescingExplorer, WJoinExplorer)]; "
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_spark_failure_shows_in_the_page_and_it_stays_usable(tmp_path, monkeypatch):
    from workbench.app.runs import replay
    from workbench.app.runs.slots import Slots

    # slots of its own: the process's are shared with earlier tests, whose runs may still be
    # letting theirs go on a busy machine (a wait of 40-67 s in CI before this test's failure)
    own = Slots(2)
    monkeypatch.setattr(replay, "spark_slots", lambda: own)

    def no_java():
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited\nstack...")

    model = CoalescingModel(motes=[1, 2])
    spark = CoalescingSpark(model=model, spark_session=no_java, work_root=str(tmp_path))
    app = CoalescingExplorer(model, spark)
    try:
        app.spark.run_on = "Spark"
        app.spark.settle()
        assert app.spark.state == "failed" and "JAVA_GATEWAY_EXITED" in app.spark.message
        assert "stack" not in app.spark.message and app.spark_pane.alert_type == "danger"
        assert not app.model.running and list(tmp_path.iterdir()) == []
        app.spark.run_on = "in-process"
        assert app.spark.state != "failed" and app.model.step(100) == 100  # in-process works
    finally:
        app.close(wait=True)
    model = WJoinModel(hours=1.0)
    wjoin = WJoinExplorer(
        model, WJoinSpark(model=model, spark_session=no_java, work_root=str(tmp_path))
    )
    try:
        wjoin.spark.run_on = "Spark"
        wjoin.spark.run()
        wjoin.spark.settle()
        assert wjoin.spark.state == "failed" and "JAVA_GATEWAY_EXITED" in wjoin.spark.message
        assert "**Spark**: The Spark run failed" in wjoin.spark_pane.object
        assert not wjoin.model.running
        wjoin.model.motes = [1]
        wjoin.spark.run()
        assert "Cannot run on Spark: choose 2 to 6 motes" in wjoin.spark.message
    finally:
        wjoin.close(wait=True)


def _coalescing(spark, tmp_path, **params) -> CoalescingExplorer:  # noqa: ANN001
    model = CoalescingModel(motes=[1, 2], speed=5000, window_minutes=30.0, **params)
    return CoalescingExplorer(
        model, CoalescingSpark(model=model, spark_session=lambda: spark, work_root=str(tmp_path))
    )


AGREES = "agrees with the in-process extent: yes"


@pytest.mark.spark
def test_coalescing_tab_runs_on_spark_and_restarts_as_announced(spark, tmp_path):
    app = _coalescing(spark, tmp_path)
    try:
        app.spark.run_on = "Spark"
        assert app.model.running and "Starting Spark" in app.spark_pane.object
        timeline = pn.panel(app).select(pn.pane.Bokeh)[0].object
        _poll_until(app, _caught_up(app, 1))
        assert AGREES in app.readout_pane.object
        assert (
            len(app.extent_view().layers["tuples"].columns["x0"])
            == len(app.spark.snapshot.view)
            > 5
        )
        assert timeline.title.text.startswith("Spark eager")  # the page's plot follows
        app.model.window_minutes = 45.0  # within the retention: the same checkpoint
        _poll_until(app, _caught_up(app, 1))
        assert app.spark.message.startswith("Kept the checkpoint") and "fits" in app.spark.message
        assert app.spark_pane.object == app.spark.message  # announced in the page
        assert app.spark.snapshot.settings.window.size == 45 * 60_000.0
        assert AGREES in app.readout_pane.object
        app.model.equivalence = "increasing"  # a new checkpoint re-reads the replay
        assert app.spark.message == "Applying the change on Spark..."
        _poll_until(app, _caught_up(app, 2))
        assert app.spark.message.startswith("New checkpoint 2: the equivalence changes")
        assert "**Spark** (eager, checkpoint 2, caught up)" in app.readout_pane.object
        assert AGREES in app.readout_pane.object
        metrics = app.spark.snapshot.metrics
        assert set(metrics["checkpoint"]) == {1.0, 2.0} and metrics["input_rows"].sum() > 0
        section = SparkSection(control=app.spark, status=app.spark_pane)
        hv.renderer("bokeh").get_plot(section.rows_view() + section.duration_view())
        app.spark.run_on = "in-process"  # the run is torn down, its folder removed
        app.spark.settle()
        assert list(tmp_path.iterdir()) == [] and app.spark.message == ""
        assert "Spark" not in app.readout_pane.object
    finally:
        app.close(wait=True)


@pytest.mark.spark
def test_coalescing_tab_runs_lazily_on_spark_until_the_page_closes(spark, tmp_path):
    app = _coalescing(spark, tmp_path, scheme="lazy", window_kind="tuples", window_tuples=60)
    try:
        app.spark.run_on = "Spark"
        _poll_until(app, _caught_up(app, 1))
        assert "**Spark** (lazy, checkpoint 1, caught up)" in app.readout_pane.object
        assert AGREES in app.readout_pane.object
        app.model.window_tuples = 200  # the raw tuples serve any window: the same checkpoint
        _poll_until(app, _caught_up(app, 1))
        assert "lazy coalescing stores raw tuples" in app.spark.message
        assert AGREES in app.readout_pane.object and app.spark.snapshot.settings.window.size == 200
        assert list(tmp_path.iterdir())
    finally:
        app.close(wait=True)  # the browser session ended
    assert list(tmp_path.iterdir()) == []


@pytest.mark.spark
def test_multiway_tab_runs_on_spark_and_agrees_with_bew(spark, tmp_path):
    model = WJoinModel(hours=3.0, graph="path")
    app = WJoinExplorer(
        model,
        WJoinSpark(
            model=model, replay_seconds=3.0, spark_session=lambda: spark, work_root=str(tmp_path)
        ),
    )
    try:
        app.spark.run_on = "Spark"
        asyncio.run(app.run_async())  # the Run button: on Spark, the Spark run
        assert app.spark.state == "starting" and app.model.running
        _poll_until(app, lambda: app.spark.state == "finished")
        bew = next(r for r in app.model.results if r.algorithm == "BEW")
        snap = app.spark.snapshot
        assert len(snap.results) == len(snap.expected) == bew.results > 20
        assert "which equal the in-process BEW-join's" in app.spark.message
        assert "**same results as BEW: yes**" in app.spark_pane.object
        assert not app.model.running and snap.read == snap.total
        curves = app.results_view().layers["curves"].columns
        spark_curve = curves["ys"][curves["curve"].index("Spark")]
        assert max(spark_curve) == bew.results and spark_curve[0] == 1
        hv.renderer("bokeh").get_plot(
            SparkSection(control=app.spark, status=app.spark_pane).rows_view()
        )
        app.spark.settle()  # the caught-up run was torn down
        assert list(tmp_path.iterdir()) == []
        app.spark.run_on = "in-process"
        assert app.spark.state == "idle" and app.spark_pane.object == ""
    finally:
        app.close(wait=True)
