"""The W-join on Spark (BEW-join per time range in Spark's state) gives exactly the in-process
result set: over Spark, and its state step driven micro-batch by micro-batch as Spark would."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.streaming.state import GroupState

from tests.support.group_state import stand_in_state
from tests.support.spark_cases import replay_files
from tests.support.wjoin_cases import CASES, UNIFORM, brute, check, tuples, wjoin_rows
from workbench.events import sort_pairs
from workbench.operators.windows import WindowConstraints
from workbench.spark.queries.ranges import join_reach
from workbench.spark.queries.source import EPOCH_OFFSET_MS, read_rejects, rejects_query
from workbench.spark.queries.wjoin import (
    KEY_BUCKETS,
    WJoinRangeStep,
    _bew,
    read_results,
    wjoin_query,
    wjoin_results,
)

pytestmark = pytest.mark.spark

NONE = GroupState.NO_TIMESTAMP


def _spark(spark, tmp_path, constraints, delays) -> np.ndarray:
    query = wjoin_query(
        spark,
        str(tmp_path / "in"),
        constraints,
        delays,
        str(tmp_path / "out"),
        str(tmp_path / "chk"),
        max_files_per_trigger=1,
    )
    query.awaitTermination()
    return read_results(spark, str(tmp_path / "out"), constraints.m)


@pytest.mark.parametrize("case", list(CASES))
def test_spark_wjoin_equals_bew_and_brute_force(spark, tmp_path, case):
    constraints, delays, grid = CASES[case]
    rows = wjoin_rows(len(case), constraints, delays, grid)
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700)
    check(_spark(spark, tmp_path, constraints, delays), rows, constraints, delays)


def test_uniform_clique_with_malformed_lines(spark, tmp_path):
    """Garbage lines change no result; they, late tuples and bad tuples are counted."""
    constraints, delays = UNIFORM
    rows = wjoin_rows(11, constraints, delays, grid=False)
    garbage = [
        "{broken",
        '{"stream": 0, "id": 9001, "key": 1, "t": "noon", "arrival": 1.0}',
        '{"stream": 1, "id": 9002, "key": 1, "arrival": 5.0}',
        '{"stream": 5, "id": 9003, "key": 1, "t": 5.0, "arrival": 6.0}',
        '{"stream": 2, "id": 9004, "key": 1, "t": 50.0, "arrival": 6.0}',
    ]
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700, "\n".join(garbage) + "\n")
    check(_spark(spark, tmp_path, constraints, delays), rows, constraints, delays)

    _, classified = wjoin_results(spark, str(tmp_path / "in"), constraints, delays)
    rejects_query(classified, str(tmp_path / "rej"), str(tmp_path / "rej-chk")).awaitTermination()
    rejects = read_rejects(spark, str(tmp_path / "rej"))
    n_late = int((rows["arrival"] > rows["t"] + rows["delay"]).sum())
    assert n_late > 0
    assert rejects["reason"].value_counts().to_dict() == {
        "malformed": 3,
        "unknown stream": 1,
        "arrival before t": 1,
        "late": n_late,
    }


def _micro_batches(
    rows: pd.DataFrame, constraints: WindowConstraints, delays: list[float], batch_ms: float
) -> np.ndarray:
    """Drive :class:`WJoinRangeStep` as Spark does, without Spark: the accepted tuples keyed
    by range (ranges one band wide: the most boundaries) and key bucket, per micro-batch the
    groups with tuples and those whose event-time timeout the watermark passed, the watermark
    trailing the largest time by max D + the band; a final no-data batch.  Every result the
    step emitted, sorted."""
    op = _bew(constraints, delays)
    reach = dataclasses.replace(join_reach(op), time="t", key="key")
    step = WJoinRangeStep(op, reach.band)
    slack = max(delays) + reach.band
    width = step.width
    states: dict[tuple, tuple] = {}
    timeouts: dict[tuple, int] = {}
    watermark, newest, out = 0, -np.inf, []
    rows = rows[rows["arrival"] <= rows["t"] + rows["delay"]]
    batch_of = np.floor((rows["arrival"] - rows["arrival"].iloc[0]) / batch_ms)
    for part in [part for _, part in rows.groupby(batch_of)] + [rows.iloc[:0]]:
        assert (part["t"] + EPOCH_OFFSET_MS > watermark).all()  # Spark would drop none
        keyed = []
        for r in part.itertuples(index=False):
            lo, hi = (
                (r.t, r.t)
                if r.stream == 0
                else (r.t - reach.before[r.stream], r.t + reach.after[r.stream])
            )
            for rng in range(int(np.floor(lo / width)), int(np.floor(hi / width)) + 1):
                keyed.append({**r._asdict(), "group": (rng, r.key % KEY_BUCKETS)})
        keyed = pd.DataFrame(keyed, columns=[*part.columns, "group"])
        due = {g for g, ts in timeouts.items() if watermark > ts}
        for group in sorted(set(keyed["group"]) | due):
            mine = keyed[keyed["group"] == group].drop(columns=["group", "delay"])
            state = stand_in_state(
                states.get(group), watermark, True, len(mine) == 0, timeouts.get(group, NONE)
            )
            out += [f.to_numpy() for f in step(group, iter([mine]), state)]
            states.pop(group, None)
            timeouts.pop(group, None)
            if state.exists:
                states[group] = state.get
                timeouts[group] = state._timeout_timestamp
        newest = max(newest, part["t"].max() if len(part) else -np.inf)
        if np.isfinite(newest):
            watermark = max(watermark, int(np.floor(newest - slack)) + EPOCH_OFFSET_MS)
    ids = np.concatenate(out) if out else np.zeros((0, constraints.m), dtype=np.int64)
    return ids


@settings(max_examples=15)  # each example runs dozens of micro-batches
@given(
    seed=st.integers(0, 2**16),
    m=st.integers(2, 4),
    window=st.sampled_from([1.0, 12.0, 40.0]),
    grid=st.booleans(),
    batch_ms=st.sampled_from([50.0, 400.0, 5000.0]),
)
def test_the_state_step_equals_the_brute_force_batch_by_batch(seed, m, window, grid, batch_ms):
    """Ranges one band wide (tuples copied over several), whole-ms ties on the windows' edges,
    micro-batches from a few tuples to all: each result emitted once, none lost."""
    rng = np.random.default_rng(seed)
    if rng.random() < 0.5:
        constraints = WindowConstraints.uniform(m, window)
    else:
        constraints = WindowConstraints.path([window * (1 + k % 2) for k in range(m - 1)])
    delays = [float(x) for x in rng.choice([0.0, 30.0, 300.0], m)]
    rows = tuples(seed, m, 40, delays, grid)
    rows["delay"] = rows["stream"].map(dict(enumerate(delays)))
    ids = _micro_batches(rows, constraints, delays, batch_ms)
    assert len(np.unique(ids, axis=0)) == len(ids)  # none twice
    np.testing.assert_array_equal(sort_pairs(ids), brute(rows, constraints))
