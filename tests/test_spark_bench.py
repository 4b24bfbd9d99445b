"""The pandas-UDF join of ``./dev bench spark`` (the PTJoin a Spark user writes without
Theorem 2) gives exactly the streaming PTJoin's pairs, on both of PTJoin's decision paths.

The bench's several masters (one SparkContext per JVM) are not exercised in this process: the
tests share the session-scoped ``spark`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.spark import pair_mismatches, pandas_udf_query
from tests.support.spark_cases import in_process_pairs, scenario
from workbench.data.replay import Replayer
from workbench.experiments import Example5Workload
from workbench.paper_examples import Example5Setting
from workbench.spark import Decider, ptjoin_query, read_pairs

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _example5(seed: int):  # noqa: ANN202 (streams, events, d, delta)
    """Example 5's setting, small: 12 templates, 300 events per stream, d = 1500 >= pi."""
    w = Example5Workload(Example5Setting(templates=12), events_per_stream=300, seed=seed)
    streams, events = w.build()
    return streams, events, w.setting.d, w.setting.delta


def _scenario(seed: int):  # noqa: ANN202
    """Late events, d = 350 < max(pi): PTJoin decides by the band probability, not Theorem 2."""
    streams, events = scenario(seed, n=300)
    return streams, events, 350.0, 0.6


@pytest.mark.parametrize("case", [_example5, _scenario], ids=["theorem-2", "band"])
def test_pandas_udf_join_equals_ptjoin(spark, tmp_path, case):
    streams, events, d, delta = case(4)
    Replayer(events, tmp_path / "in", batch_ms=2_000).run()
    decider = Decider(spark, streams)
    assert decider.fast(d) == (case is _example5)
    out = {}
    for name in ("ptjoin", "udf", "band"):
        pairs, chk = str(tmp_path / name / "pairs"), str(tmp_path / name / "chk")
        if name == "udf":
            query = pandas_udf_query(spark, str(tmp_path / "in"), streams, d, delta, pairs, chk)
        else:
            decide = name == "ptjoin"
            args = (spark, str(tmp_path / "in"), streams, d, delta, pairs, chk)
            query = ptjoin_query(*args, decide=decide, decider=decider)
        query.awaitTermination()
        out[name] = pairs
    got = read_pairs(spark, out["udf"])
    expected = in_process_pairs(streams, events, d, delta)
    assert len(expected) > 100
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(read_pairs(spark, out["ptjoin"], streams), expected)
    assert pair_mismatches(spark, out["ptjoin"], out["udf"], decider, d, delta)[0] == 0
    # the deterministic band holds every joined pair and more: the check sees the difference
    band = read_pairs(spark, out["band"])
    extra, _ = pair_mismatches(spark, out["ptjoin"], out["band"], decider, d, delta)
    assert extra == len(band) - len(expected) > 0


def test_pandas_udf_query_refuses_a_bad_delta(spark, tmp_path):
    streams, _, d, _ = _example5(0)
    with pytest.raises(ValueError, match="delta = 1.0"):
        pandas_udf_query(spark, str(tmp_path), streams, d, 1.0, str(tmp_path), str(tmp_path))
