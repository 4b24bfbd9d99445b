"""The streaming PTJoin on Spark gives exactly the in-process operator's pair set."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.replay import Replayer
from workbench.data.synthetic import synthetic_events
from workbench.operators import PTJoin, StreamSpec, replay
from workbench.spark import ptjoin_query, read_pairs
from workbench.timestamps import random_templates

pytestmark = pytest.mark.spark


def _in_process(streams, events, d, delta):
    matches, _ = replay(PTJoin(streams=streams, d=d, threshold=delta, mode="loose"), events)
    pairs = np.stack((matches.a_ids, matches.b_ids), axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


@pytest.mark.parametrize(("d", "delta"), [(700.0, 0.8), (350.0, 0.6), (120.0, 0.3)])
def test_spark_ptjoin_equals_the_operator(spark, tmp_path, d, delta):
    rng = np.random.default_rng(int(d))
    a = random_templates(rng, 8, 6, 400, "A")
    b = random_templates(rng, 6, 8, 500, "B")
    streams = (StreamSpec(a, 300.0), StreamSpec(b, 200.0))
    events = synthetic_events(
        rng, 400, (8, 6), mean_interarrival=20, max_delay=(300, 200), late_fraction=0.05
    )
    Replayer(events, tmp_path / "in", batch_ms=2000).run()
    query = ptjoin_query(
        spark, str(tmp_path / "in"), streams, d, delta, str(tmp_path / "out"), str(tmp_path / "chk")
    )
    query.awaitTermination()
    got = read_pairs(spark, str(tmp_path / "out"))
    expected = _in_process(streams, events, d, delta)
    assert len(expected) > 50
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
        query = ptjoin_query(
            spark,
            str(tmp_path / "in"),
            streams,
            400.0,
            0.7,
            str(tmp_path / "out"),
            str(tmp_path / "chk"),
        )
        query.awaitTermination()
        deadline = time.monotonic() + 30
        while log.frame().empty and time.monotonic() < deadline:  # events are pushed async
            time.sleep(0.1)
        frame = log.frame()
    finally:
        spark.streams.removeListener(log)
    assert not frame.empty and frame["input_rows"].sum() >= len(events)
    assert {"state_rows", "state_memory_bytes", "watermark", "batch_ms"} <= set(frame.columns)
    assert (frame["state_memory_bytes"] >= 0).all()
