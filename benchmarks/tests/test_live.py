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
    """``bench live --profile``: every variant runs to its end and has a batch time."""
    from benchmarks.live_profile import VARIANTS, profile_batches

    figures = profile_batches(spark, events=300, files=1)
    assert list(figures) == list(VARIANTS)
    assert all(ms > 0 for ms in figures.values())
