"""The W-join on Spark (chained stream-stream joins) gives exactly the in-process result set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.support.spark_cases import replay_files
from workbench.events import sort_pairs
from workbench.operators import BEWJoin, brute_force_wjoin
from workbench.operators.windows import WindowConstraints
from workbench.spark.source import read_rejects, rejects_query
from workbench.spark.wjoin import read_results, wjoin_query, wjoin_results

pytestmark = pytest.mark.spark


def _tuples(seed: int, m: int, n: int, delays: list[float], grid: bool) -> pd.DataFrame:
    """m streams of n tuples in arrival order: exponential gaps, a few keys, delay <= D (5%
    late).  ``grid`` puts times and arrivals on whole milliseconds, so windows meet ties."""
    rng = np.random.default_rng(seed)
    parts = []
    for s in range(m):
        t = np.cumsum(rng.exponential(12.0, n))
        delay = rng.uniform(0.0, delays[s], n)
        late = rng.random(n) < 0.05
        delay[late] = delays[s] + rng.uniform(1.0, 50.0, int(late.sum()))
        if grid:
            t, delay = np.round(t), np.round(delay)
            delay[late] = np.maximum(delay[late], delays[s] + 1)
        frame = {"stream": s, "id": 1000 * s + np.arange(n), "key": rng.integers(0, 4, n)}
        parts.append(pd.DataFrame({**frame, "t": t, "arrival": t + delay}))
    return pd.concat(parts).sort_values("arrival", kind="stable").reset_index(drop=True)


def _bew(rows: pd.DataFrame, constraints: WindowConstraints, delays: list[float]) -> np.ndarray:
    strategy = "uniform" if constraints.form == "uniform clique" else "modified"
    op = BEWJoin(constraints=constraints, max_delay=delays, strategy=strategy)
    out = []
    for r in rows.itertuples(index=False):
        out.extend(op.push(int(r.stream), int(r.id), int(r.key), r.t, r.arrival).ids.tolist())
    out.extend(op.flush().ids.tolist())
    assert op.counters.late == int((rows["arrival"] > rows["t"] + rows["delay"]).sum())
    return sort_pairs(np.array(out, dtype=np.int64).reshape(-1, constraints.m))


def _brute(rows: pd.DataFrame, constraints: WindowConstraints) -> np.ndarray:
    on_time = rows[rows["arrival"] <= rows["t"] + rows["delay"]]
    per = [on_time[on_time["stream"] == s] for s in range(constraints.m)]
    got = brute_force_wjoin(
        [p["key"].tolist() for p in per],
        [p["t"].tolist() for p in per],
        [p["id"].tolist() for p in per],
        constraints,
    )
    return sort_pairs(np.array(sorted(got), dtype=np.int64).reshape(-1, constraints.m))


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


UNIFORM = (WindowConstraints.uniform(3, 25.0), [1500.0, 900.0, 2100.0])
CASES = {
    "non-uniform 3-clique, ties": (
        WindowConstraints(np.array([[0, 20, 35], [20, 0, 12], [35, 12, 0]])),
        [1200.0, 750.0, 1800.0],
        True,
    ),
    "4-path": (WindowConstraints.path([30.0, 20.0, 30.0]), [1200.0, 1800.0, 900.0, 1500.0], False),
}


def _rows(seed: int, constraints: WindowConstraints, delays: list[float], grid: bool):
    rows = _tuples(seed, constraints.m, 120, delays, grid)
    rows["delay"] = rows["stream"].map(dict(enumerate(delays)))
    return rows


def _check(got: np.ndarray, rows: pd.DataFrame, constraints, delays) -> None:
    expected = _bew(rows, constraints, delays)
    assert len(expected) > 30
    np.testing.assert_array_equal(expected, _brute(rows, constraints))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("case", list(CASES))
def test_spark_wjoin_equals_bew_and_brute_force(spark, tmp_path, case):
    constraints, delays, grid = CASES[case]
    rows = _rows(len(case), constraints, delays, grid)
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700)
    _check(_spark(spark, tmp_path, constraints, delays), rows, constraints, delays)


def test_uniform_clique_with_malformed_lines(spark, tmp_path):
    """Garbage lines change no result; they, late tuples and bad tuples are counted."""
    constraints, delays = UNIFORM
    rows = _rows(11, constraints, delays, grid=False)
    garbage = [
        "{broken",
        '{"stream": 0, "id": 9001, "key": 1, "t": "noon", "arrival": 1.0}',
        '{"stream": 1, "id": 9002, "key": 1, "arrival": 5.0}',
        '{"stream": 5, "id": 9003, "key": 1, "t": 5.0, "arrival": 6.0}',
        '{"stream": 2, "id": 9004, "key": 1, "t": 50.0, "arrival": 6.0}',
    ]
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700, "\n".join(garbage) + "\n")
    _check(_spark(spark, tmp_path, constraints, delays), rows, constraints, delays)

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
