"""A room of users on one server (issue 18): three live joins started at once on two Spark
slots (the third waits and says so; each page's pairs are its own, equal to the in-process
PTJoin's for its threshold); closing the pages ends their queries, worker threads and folders."""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest

from harness.live_cases import newcomer_csv
from workbench.app.live import LiveJoinExplorer
from workbench.app.live_settings import LiveJoinSettings
from workbench.app.runs.slots import spark_slots
from workbench.operators import PTJoin, StreamSpec
from workbench.operators.base import replay
from workbench.spark.queries.live import LiveJoin

pytestmark = pytest.mark.spark

DELTAS = (0.5, 0.7, 0.9)
CSV = newcomer_csv(600)  # two sensors, 300 readings each: a short replay


def _in_process_pairs(app: LiveJoinExplorer) -> int:
    """The in-process PTJoin's pairs on the page's data and settings."""
    settings = app.model.settings()
    streams = settings.streams()
    specs = tuple(
        StreamSpec(t, D) for t, D in zip(streams.templates, settings.max_delay, strict=True)
    )
    op = PTJoin(streams=specs, d=app.model.run_d, threshold=app.model.delta, mode="loose")
    matches, _ = replay(op, streams.events)
    return len(matches.a_ids)


def test_three_live_joins_share_two_slots_and_clean_up(spark, tmp_path):
    assert spark_slots().limit == 2 and spark_slots().in_use == 0
    before = {q.name for q in spark.streams.active}
    apps = [
        LiveJoinExplorer(
            LiveJoinSettings(
                source="CSV file",
                csv_file=CSV,
                speed=20_000.0,
                delta=delta,
                live_factory=partial(LiveJoin, spark),
                work_root=str(tmp_path),
            )
        )
        for delta in DELTAS
    ]
    for app in apps:  # at once, as three users pressing Start
        app.spark.start()
    assert any(t.name.startswith("live-join") for t in threading.enumerate())
    waited, deadline = set(), time.monotonic() + 300
    while any(app.spark.state != "finished" for app in apps):
        assert time.monotonic() < deadline, [(a.spark.state, a.spark.message) for a in apps]
        assert not any(a.spark.state == "failed" for a in apps), [a.spark.message for a in apps]
        for k, app in enumerate(apps):
            app.spark.poll()
            if "Waiting for a free Spark slot: 2 of 2" in app.spark.message:
                waited.add(k)
        assert spark_slots().in_use <= 2
        time.sleep(0.2)  # the pages' periodic callback, as the server runs it
    assert waited  # one start waited for a slot, and its page said so
    for app in apps:
        assert app.spark.pairs == _in_process_pairs(app) > 0  # its own pairs, none of another's
    assert len({app.spark.pairs for app in apps}) == len(DELTAS)
    for app in apps:
        app.close(wait=True)
    assert {q.name for q in spark.streams.active} == before
    assert spark_slots().in_use == 0 and list(tmp_path.iterdir()) == []
    ours = [t.name for t in threading.enumerate() if t.name.startswith(("live-join", "replay"))]
    assert ours == []  # the pages' workers and replays ended (py4j's callback threads stay)
