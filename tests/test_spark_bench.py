"""One workload of ``./dev bench spark`` on the shared session: the floor, the ranges and both
stream-stream baselines run, and the ranges' pairs are the in-process operator's (count and
checksum; the bench refuses to report otherwise).

The bench's several masters (one SparkContext per JVM) are not exercised in this process: the
tests share the session-scoped ``spark`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.report import Stages
from benchmarks.spark import _in_process, _race, checksum
from workbench.data.event_files import write_event_folder
from workbench.data.replay import Replayer
from workbench.experiments import Example5Workload
from workbench.paper_examples import Example5Setting

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_checksum_ignores_order_and_sees_one_pair_changed():
    ids = np.random.default_rng(0).integers(0, 10**6, size=(500, 2))
    assert checksum(ids) == checksum(ids[::-1]) == checksum(ids[np.argsort(ids[:, 1])])
    changed = ids.copy()
    changed[7, 1] += 1
    assert checksum(changed) != checksum(ids)
    assert checksum(ids[:, ::-1]) != checksum(ids)


def test_one_race_runs_every_query_and_checks_the_pairs(spark, tmp_path):
    w = Example5Workload(Example5Setting(templates=12), events_per_stream=300, seed=4)
    specs, events = w.build()
    op, ids, _ = _in_process(specs, events, w.setting.d, w.setting.delta)
    write_event_folder(tmp_path / "dense", specs, events)
    Replayer(events, tmp_path / "dense-replay", batch_ms=2_000).run()
    stages = Stages("test", 4, enabled=False)
    race = _race(
        spark, tmp_path, tmp_path / "out", "dense", op, (len(ids), checksum(ids)), 1, True, stages
    )
    assert len(ids) > 100
    assert race["pairs"]["ranges"] == race["pairs"]["stream-stream PTJoin"] == len(ids)
    assert race["pairs"]["band join"] > len(ids)
    assert set(race["seconds"]) == {"write floor", "ranges", "stream-stream PTJoin", "band join"}
