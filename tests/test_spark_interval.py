"""Interval timing correlation on Spark gives exactly the in-process operators' pair set."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.spark_cases import replay_files
from workbench.data.synthetic import synthetic_events
from workbench.events import sort_pairs
from workbench.operators import EagerCorrelation, SimpleCorrelation, StreamSpec, replay
from workbench.operators.oracle import on_time
from workbench.spark.interval import interval_candidates, interval_query
from workbench.spark.ptjoin import read_pairs
from workbench.spark.source import read_rejects, rejects_query
from workbench.timestamps import HistogramTimestamp, TemplateSet

pytestmark = pytest.mark.spark


def _uniform(name: str, lengths: list[float]) -> TemplateSet:
    return TemplateSet(name, tuple(HistogramTimestamp.uniform(0, x) for x in lengths))


STREAMS = (
    StreamSpec(_uniform("A", [30.0, 80.0, 140.0]), 2500.0),
    StreamSpec(_uniform("B", [20.0, 60.0, 110.0, 160.0]), 1500.0),
)


def _in_process(op_cls, events, d, ct) -> np.ndarray:
    matches, _ = replay(op_cls(streams=STREAMS, d=d, threshold=ct), events)
    return sort_pairs(np.stack((matches.a_ids, matches.b_ids), axis=1))


def _events(seed: int):
    rng = np.random.default_rng(seed)
    return synthetic_events(
        rng, 180, (3, 4), mean_interarrival=25, max_delay=(2500, 1500), late_fraction=0.05
    )


def _run(spark, tmp_path, d, ct) -> np.ndarray:
    query = interval_query(
        spark,
        str(tmp_path / "in"),
        STREAMS,
        d,
        ct,
        str(tmp_path / "out"),
        str(tmp_path / "chk"),
        max_files_per_trigger=1,
    )
    query.awaitTermination()
    return read_pairs(spark, str(tmp_path / "out"))


# d above every interval length (exact bounds), between them, and below them (loose ranges)
@pytest.mark.parametrize(("d", "ct"), [(200.0, 0.9), (200.0, 0.3), (90.0, 0.6), (15.0, 0.15)])
def test_spark_interval_equals_the_operators(spark, tmp_path, d, ct):
    events = _events(int(d) + int(100 * ct))
    assert (~on_time(events, [s.max_delay for s in STREAMS])).sum() > 5  # late events rejected
    replay_files(events, tmp_path / "in", 2000)
    got = _run(spark, tmp_path, d, ct)
    expected = _in_process(EagerCorrelation, events, d, ct)
    assert len(expected) > 30
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, _in_process(SimpleCorrelation, events, d, ct))


def test_malformed_lines_are_counted_and_change_nothing(spark, tmp_path):
    d, ct = 120.0, 0.7
    events = _events(7)
    garbage = [
        "not json at all",
        '{"stream": 0, "id": 9001, "template": 0, "t_det": "soon", "arrival": 1.0}',
        '{"stream": 1, "id": 9002, "template": 0, "arrival": 5.0}',
        '{"stream": 7, "id": 9003, "template": 0, "t_det": 5.0, "arrival": 6.0}',
        '{"stream": 1, "id": 9004, "template": 9, "t_det": 5.0, "arrival": 6.0}',
        '{"stream": 0, "id": 9005, "template": 0, "t_det": 1e20, "arrival": 1e20}',
    ]
    replay_files(events, tmp_path / "in", 2000, "\n".join(garbage) + "\n")
    got = _run(spark, tmp_path, d, ct)
    np.testing.assert_array_equal(got, _in_process(EagerCorrelation, events, d, ct))

    _, classified = interval_candidates(spark, str(tmp_path / "in"), STREAMS, d, ct)
    rejects_query(classified, str(tmp_path / "rej"), str(tmp_path / "rej-chk")).awaitTermination()
    rejects = read_rejects(spark, str(tmp_path / "rej"))
    counts = rejects["reason"].value_counts().to_dict()
    n_late = int((~on_time(events, [s.max_delay for s in STREAMS])).sum())
    assert counts == {
        "malformed": 3,
        "unknown stream": 1,
        "unknown template": 1,
        "unrepresentable": 1,  # floats 1e20 ms apart cannot hold its buckets
        "late": n_late,
    }
    assert set(rejects.loc[rejects["reason"] != "malformed", "id"]) >= {9003, 9004, 9005}
