"""The live PTJoin on Spark (its operator inside the range tasks, both decision paths) equals
the rational oracle, pair for pair, on adversarial streams and on exact ties; the batch jobs'
oracle tests are in ``test_spark_ranges``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.spark_cases import (
    accepted,
    adversarial_scenario,
    replay_files,
    sorted_pairs,
    tie_scenario,
)
from workbench.events import Events
from workbench.operators import StreamSpec, brute_force_join
from workbench.spark.queries.live import LiveJoin
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

pytestmark = pytest.mark.spark


def _ptjoin(spark, tmp_path, streams, events, d, delta) -> np.ndarray:  # noqa: ANN001
    replay_files(events, tmp_path / "in", batch_ms=5_000)
    live = LiveJoin(
        spark, tmp_path / "in", streams, d, delta, tmp_path / "work", available_now=True
    )
    live.start()
    live.await_termination()
    live.close()
    return sorted_pairs(live.pairs())


@pytest.mark.parametrize(("path", "delta"), [("fast", 0.5), ("fast", 0.999), ("general", 0.001)])
def test_the_live_ptjoin_equals_the_rational_oracle(spark, tmp_path, path, delta):
    streams, events = adversarial_scenario(seed=7)
    pi = max(s.pi for s in streams)
    d = pi if path == "fast" else pi / 2
    expected = brute_force_join(events, streams, d, delta, accepted=accepted(events, streams))
    assert len(expected) > 10
    np.testing.assert_array_equal(_ptjoin(spark, tmp_path, streams, events, d, delta), expected)


@pytest.mark.parametrize(("length", "d"), [(4.0, 4.0), (8.0, 4.0)])  # fast path, general path
def test_the_live_ptjoin_joins_exact_ties(spark, tmp_path, length, d):
    """P = 1/2 exactly at delta = 0.5 joins (a fast-path comparison on the stime itself is
    decided in rationals inside the task); just above it does not."""
    streams, events = tie_scenario(length)
    expected = brute_force_join(events, streams, d, 0.5)
    assert expected.tolist() == [[0, 10], [1, 11], [2, 12]]
    np.testing.assert_array_equal(_ptjoin(spark, tmp_path, streams, events, d, 0.5), expected)


def test_the_live_join_decides_exact_ties_and_counts_them_exactly(spark, tmp_path):
    """A tie decided in rationals inside the task is written and counted once."""
    spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, 4.0),)), 10.0)
    streams = (spec, spec)
    rows = [(0, 0, 0, 1e12, 1e12), (1, 10, 0, 1e12 + 4, 1e12 + 4)]
    rows += [(1, 20, 0, 1e12 + 4 + 2**-10, 1e12 + 5)]
    events = Events(*(np.array(c) for c in zip(*rows, strict=True)))
    replay_files(events, tmp_path / "in", batch_ms=5_000)
    live = LiveJoin(
        spark, tmp_path / "in", streams, 4.0, 0.5, tmp_path / "work", available_now=True
    )
    live.start()
    live.await_termination()
    live.close()
    assert live.pairs()[["a_id", "b_id"]].to_numpy().tolist() == [[0, 10]]
    assert sum(b["pairs"] for b in live.batches) == 1
