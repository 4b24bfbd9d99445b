"""``bench soak``: a short soak of the live PTJoin samples state, memory and latency, and
leaves nothing running or on disk."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from benchmarks.soak import SAMPLE_COLUMNS, fitted_growth, soak_verdicts

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_short_soak_samples_bounded_state_and_latency_and_cleans_up(spark):
    """The soak's run on the tests' warm session over the default day (``bench soak`` runs the
    month, after a warm-up, for 20 minutes: a bench command, not a test)."""
    from benchmarks.soak import soak_run
    from workbench.data.streams import default_streams

    run = soak_run(spark, minutes=0.4, speed=300.0, sample_seconds=6.0, streams=default_streams())
    samples = run["samples"]
    assert len(samples) == 4 and all(set(s) == set(SAMPLE_COLUMNS) for s in samples)
    rows = np.array([s["state_rows"] for s in samples])
    assert rows.max() > 0
    assert rows.max() < samples[-1]["records"]  # evicted: the state is not everything read
    assert samples[-1]["records"] > 0 and samples[-1]["pairs"] > 0
    assert all(s["driver_rss_mb"] > 0 and s["jvm_rss_mb"] > 0 for s in samples)
    timed = [s for s in samples if s["records_timed"] > 0]
    assert timed and all(0 < s["p50_s"] <= s["p95_s"] < 120 for s in timed)
    verdicts = soak_verdicts(samples, run["latencies"], 6.0)
    assert set(verdicts) == {"state_bounded", "driver_rss_flat", "jvm_rss_flat",
                             "latency_no_drift"}  # fmt: skip
    assert math.isfinite(verdicts["latency_no_drift"]["last_third_p50_s"])
    # everything stopped and removed
    assert not [q for q in spark.streams.active if (q.name or "").startswith("bench-soak")]
    assert not os.path.exists(run["run_dir"])


def test_the_verdicts_catch_growing_state_memory_and_latency():
    t = np.arange(1.0, 31.0) * 10.0
    flat = [
        {
            "t_s": x,
            "state_rows": 100.0 + (k % 3),
            "records_timed": 5.0,
            "driver_rss_mb": 500.0,
            "jvm_rss_mb": 900.0,
        }  # fmt: skip
        for k, x in enumerate(t)
    ]
    quick = [np.full(5, 0.3) for _ in t]
    ok = soak_verdicts(flat, quick, 20.0)
    assert all(v["ok"] for v in ok.values())
    growing = [
        {**s, "state_rows": 10.0 * k + 1, "jvm_rss_mb": 900.0 + 20 * k} for k, s in enumerate(flat)
    ]
    slower = [np.full(5, 0.3 + 0.1 * k) for k in range(len(t))]
    bad = soak_verdicts(growing, slower, 20.0)
    assert not bad["state_bounded"]["ok"] and not bad["jvm_rss_flat"]["ok"]
    assert bad["driver_rss_flat"]["ok"] and not bad["latency_no_drift"]["ok"]
    assert fitted_growth(t, 2.0 * t) == pytest.approx(2 * (t[-1] - t[0]) / (t[-1] + t[0]))
