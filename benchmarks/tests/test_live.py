"""``bench live`` on the suite's Spark session: its measurement of a short fast replay and its
profile of a micro-batch's steps (:mod:`benchmarks.live`, :mod:`benchmarks.live_profile`)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


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


def test_bench_live_profiles_each_step_of_a_micro_batch(spark):
    """``bench live --profile``: every variant runs to its end and has a batch time; the floor's
    and the live join's batches are split by stage (a map stage writing the shuffle and a
    result stage reading it for the join; its Python step and state commit timed)."""
    from benchmarks.live_profile import SPLIT, VARIANTS, profile_batches
    from benchmarks.live_stages import split_lines

    profile = profile_batches(spark, events=300, files=1)
    assert list(profile.ms) == list(VARIANTS)
    assert all(ms > 0 for ms in profile.ms.values())
    assert set(profile.splits) == set(SPLIT)
    live = profile.splits["the live join"]
    assert [s["does"] for s in live["stages"]][0].endswith("writes the shuffle")
    assert "reads the shuffle" in live["stages"][-1]["does"]
    assert live["jobs_ms"] <= live["phases_ms"]["addBatch"]
    assert {"time to commit changes", "time to execute Python code"} <= set(live["metrics_ms"])
    assert len(split_lines(profile.splits)) > len(live["stages"]) + 6


def test_file_batches_maps_the_source_log_to_the_query_batches(tmp_path):
    """The file source's log numbers only batches with new files; no-data batches (here query
    batches 1 and 3) take query ids too, so files map through the offsets log."""
    import json

    from benchmarks.live import file_batches

    (tmp_path / "sources" / "0").mkdir(parents=True)
    (tmp_path / "offsets").mkdir()
    for source, names in enumerate((["a"], ["b", "c"], ["d"])):
        lines = ["v1"] + [json.dumps({"path": f"file:/r/{n}", "batchId": source}) for n in names]
        (tmp_path / "sources" / "0" / str(source)).write_text("\n".join(lines))
    for query, offset in enumerate((0, 0, 1, 1, 2)):
        meta = json.dumps({"batchWatermarkMs": 0})
        (tmp_path / "offsets" / str(query)).write_text(f'v1\n{meta}\n{{"logOffset":{offset}}}')
    assert file_batches(tmp_path) == {"a": 0, "b": 2, "c": 2, "d": 4}
