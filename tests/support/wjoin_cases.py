"""W-join tuples and the oracles they are checked against, for the Spark W-join tests (the
streaming query and the batch job by time ranges)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.events import sort_pairs
from workbench.operators import BEWJoin, brute_force_wjoin
from workbench.operators.windows import WindowConstraints


def tuples(seed: int, m: int, n: int, delays: list[float], grid: bool) -> pd.DataFrame:
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


def bew(rows: pd.DataFrame, constraints: WindowConstraints, delays: list[float]) -> np.ndarray:
    strategy = "uniform" if constraints.form == "uniform clique" else "modified"
    op = BEWJoin(constraints=constraints, max_delay=delays, strategy=strategy)
    out = []
    for r in rows.itertuples(index=False):
        out.extend(op.push(int(r.stream), int(r.id), int(r.key), r.t, r.arrival).ids.tolist())
    out.extend(op.flush().ids.tolist())
    assert op.counters.late == int((rows["arrival"] > rows["t"] + rows["delay"]).sum())
    return sort_pairs(np.array(out, dtype=np.int64).reshape(-1, constraints.m))


def brute(rows: pd.DataFrame, constraints: WindowConstraints) -> np.ndarray:
    on_time = rows[rows["arrival"] <= rows["t"] + rows["delay"]]
    per = [on_time[on_time["stream"] == s] for s in range(constraints.m)]
    got = brute_force_wjoin(
        [p["key"].tolist() for p in per],
        [p["t"].tolist() for p in per],
        [p["id"].tolist() for p in per],
        constraints,
    )
    return sort_pairs(np.array(sorted(got), dtype=np.int64).reshape(-1, constraints.m))


UNIFORM = (WindowConstraints.uniform(3, 25.0), [1500.0, 900.0, 2100.0])
CASES = {
    "non-uniform 3-clique, ties": (
        WindowConstraints(np.array([[0, 20, 35], [20, 0, 12], [35, 12, 0]])),
        [1200.0, 750.0, 1800.0],
        True,
    ),
    "4-path": (WindowConstraints.path([30.0, 20.0, 30.0]), [1200.0, 1800.0, 900.0, 1500.0], False),
}


def wjoin_rows(seed: int, constraints: WindowConstraints, delays: list[float], grid: bool):
    rows = tuples(seed, constraints.m, 120, delays, grid)
    rows["delay"] = rows["stream"].map(dict(enumerate(delays)))
    return rows


def check(got: np.ndarray, rows: pd.DataFrame, constraints, delays) -> None:
    expected = bew(rows, constraints, delays)
    assert len(expected) > 30
    np.testing.assert_array_equal(expected, brute(rows, constraints))
    np.testing.assert_array_equal(got, expected)
