"""The W-join on Spark (chained stream-stream joins) gives exactly the in-process result set."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.spark_cases import replay_files
from tests.support.wjoin_cases import CASES, UNIFORM, check, wjoin_rows
from workbench.spark.source import read_rejects, rejects_query
from workbench.spark.wjoin import read_results, wjoin_query, wjoin_results

pytestmark = pytest.mark.spark


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
