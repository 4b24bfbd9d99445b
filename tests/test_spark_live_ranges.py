"""The live PTJoin on Spark, by time ranges in Spark's state store, gives exactly the in-process
operator's pair set, micro-batch after micro-batch."""

from __future__ import annotations

import numpy as np
import pytest

from harness.live_cases import in_process_pairs
from tests.support.spark_cases import scenario, sorted_pairs
from workbench.data.replay import Replayer
from workbench.data.synthetic import synthetic_events
from workbench.events import Events
from workbench.operators import StreamSpec
from workbench.spark.queries.live import LiveJoin
from workbench.templates import random_templates

pytestmark = pytest.mark.spark


def _live(spark, tmp_path, streams, d, delta, files_per_batch=None) -> LiveJoin:
    """A LiveJoin over the replay in ``tmp_path / "in"``, run to its end."""
    live = LiveJoin(
        spark,
        tmp_path / "in",
        streams,
        d,
        delta,
        tmp_path / "work",
        max_files_per_trigger=files_per_batch,
        available_now=True,
    )
    live.start()
    live.await_termination()
    return live


@pytest.mark.parametrize(
    ("d", "delta", "files_per_batch"), [(700.0, 0.8, 1), (350.0, 0.6, None), (120.0, 0.3, 2)]
)
def test_the_live_ptjoin_equals_the_operator(spark, tmp_path, d, delta, files_per_batch):
    """One file per micro-batch moves the watermark (and ends ranges' state) between batches,
    with events out of order across files; None reads the whole replay in one batch."""
    streams, events = scenario(int(d))
    Replayer(events, tmp_path / "in", batch_ms=800).run()  # about 10 files
    live = _live(spark, tmp_path, streams, d, delta, files_per_batch)
    got = sorted_pairs(live.pairs())
    expected = in_process_pairs(streams, events, d, delta)
    assert len(expected) > 50
    if files_per_batch:  # many batches, and the watermark ended ranges' state between them
        progress = live.query.recentProgress if live.query else []
        assert len(live.batches) > 5
        removed = sum(p["stateOperators"][0]["numRowsRemoved"] for p in progress)
        assert removed > 0, progress[-1]
    live.close()
    np.testing.assert_array_equal(got, expected)


def test_progress_metrics_arrive_as_a_frame(spark, tmp_path):
    import time

    from workbench.spark.metrics import attach_progress

    rng = np.random.default_rng(3)
    a, b = random_templates(rng, 4, 4, 300, "A"), random_templates(rng, 4, 4, 300, "B")
    streams = (StreamSpec(a, 100.0), StreamSpec(b, 100.0))
    events = synthetic_events(rng, 200, (4, 4), mean_interarrival=20, max_delay=(100, 100))
    Replayer(events, tmp_path / "in", batch_ms=1000).run()
    log = attach_progress(spark)
    try:
        _live(spark, tmp_path, streams, 400.0, 0.7).close()
        deadline = time.monotonic() + 30
        while log.frame().empty and time.monotonic() < deadline:  # events are pushed async
            time.sleep(0.1)
        frame = log.frame()
    finally:
        spark.streams.removeListener(log)
    assert not frame.empty and frame["input_rows"].sum() >= len(events)
    assert {"state_rows", "state_memory_bytes", "watermark", "batch_ms"} <= set(frame.columns)
    assert (frame["state_memory_bytes"] >= 0).all()


def test_detection_times_at_and_below_zero_are_joined(spark, tmp_path):
    """Event-time timestamps are offset: the first batch's watermark (0) must not drop t = 0."""
    streams, events = scenario(5, n=150)
    shift = events.t_det[10]  # that event lands on exactly 0, the ten before it below
    events = Events(
        events.stream, events.id, events.template, events.t_det - shift, events.arrival - shift
    )
    assert (events.t_det == 0).sum() == 1 and (events.t_det < 0).sum() >= 5
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    live = _live(spark, tmp_path, streams, 700.0, 0.5)
    got = sorted_pairs(live.pairs())
    live.close()
    expected = in_process_pairs(streams, events, 700.0, 0.5)
    zero = events.id[events.t_det == 0][0], events.stream[events.t_det == 0][0]
    assert (expected[:, zero[1]] == zero[0]).any()  # the event at 0 has partners
    np.testing.assert_array_equal(got, expected)
