"""The live Spark PTJoin on the session's local Spark: steering, bad input, bench live's
measurement and profile, the warm-up (drivers of their own and Spark Connect:
``test_spark_live_drivers``; a standalone cluster: ``test_spark_faults``)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from harness.live_cases import in_process_pairs
from tests.support.spark_cases import scenario, sorted_pairs
from workbench.data.replay import Replayer
from workbench.events import sort_pairs
from workbench.operators import EagerCorrelation, replay
from workbench.operators.oracle import on_time
from workbench.spark.queries.live import LiveJoin

pytestmark = pytest.mark.spark


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


def test_interval_correlations_run_live_and_the_algorithm_steers_without_restart(spark, tmp_path):
    histograms, events = scenario(14, n=300)
    streams = tuple(replace(s, templates=s.templates.intervals()) for s in histograms)
    d, ct = 600.0, 0.7
    with pytest.raises(ValueError, match="one bucket"):  # refused on the driver, not in a task
        LiveJoin(spark, tmp_path / "in", histograms, d, ct, tmp_path / "x", algorithm="eager")
    with pytest.raises(ValueError, match="not a timing join"):
        LiveJoin(spark, tmp_path / "in", streams, d, ct, tmp_path / "x", algorithm="sort")
    frame = events.to_frame()
    half = len(events) // 2
    Replayer(frame.iloc[:half], tmp_path / "in", batch_ms=2000, prefix="first").run()
    live = LiveJoin(
        spark, tmp_path / "in", streams, d, ct, tmp_path / "work", available_now=True,
        algorithm="lazy",
    )  # fmt: skip
    live.start()
    live.await_termination()
    assert "no restart" in live.set_algorithm("lookup")
    Replayer(frame.iloc[half:], tmp_path / "in", batch_ms=2000, prefix="second").run()
    live.start()
    live.await_termination()
    live.close()
    assert live.run == 1 and {b["algorithm"] for b in live.batches} == {"lazy", "lookup"}
    matches, _ = replay(EagerCorrelation(streams=streams, d=d, threshold=ct), events)
    expected = sort_pairs(np.stack((matches.a_ids, matches.b_ids), axis=1))
    assert len(expected) > 50
    np.testing.assert_array_equal(sorted_pairs(live.pairs()), expected)


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


def test_the_warm_up_runs_a_small_live_join_to_its_end(spark):
    from workbench.spark.warm import warm_up

    assert warm_up(spark) > 0
    assert not [q for q in spark.streams.active if q.name and q.name.startswith("warm-up")]
