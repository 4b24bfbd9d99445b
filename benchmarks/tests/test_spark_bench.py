"""Every join family of ``./dev bench spark`` (PTJoin dense, interval, W-join), small, on the
shared session: the floor, the ranges and the stream-stream baselines run, and the ranges'
results are the in-process operator's (count and checksum; the bench refuses to report
otherwise).

The bench's several masters (one SparkContext per JVM) are not exercised in this process: the
tests share the session-scoped ``spark`` fixture.
"""

from __future__ import annotations

import pytest

from benchmarks.report import Stages
from benchmarks.spark import (
    _interval_workload,
    _ptjoin_workloads,
    _race,
    _wjoin_workload,
)
from workbench.paper_examples import Example5Setting

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_every_join_family_races_its_queries_and_checks_the_results(spark, tmp_path):
    ptjoins, _ = _ptjoin_workloads(
        tmp_path, True, setting=Example5Setting(templates=12), events_per_stream=300, seed=4
    )
    work = [  # dense only: sparse runs the same queries with another d
        ptjoins[0],
        _interval_workload(tmp_path, True, 400),
        _wjoin_workload(tmp_path, True, 900, keys=20),
    ]
    stages = Stages("test", 1, enabled=False)
    for w in work:
        race = _race(spark, tmp_path, tmp_path / "out", w, 1, stages)
        assert w.results > 0 and race["results"]["ranges"] == w.results
        first, *others = w.baselines
        assert race["results"][first] == w.results
        assert set(race["seconds"]) == {"write floor", "ranges", *w.baselines}
    dense, sparse = ptjoins
    assert dense.name == "dense" and set(dense.baselines) == {"stream-stream PTJoin", "band join"}
    assert sparse.name == "sparse" and 0 < sparse.results < dense.results
