"""The time-range Spark path (workbench.spark.queries.ranges, workbench.spark.queries.batch): the
workbench's own operators inside Spark tasks give the rational oracle's pairs, pair for pair,
whatever the ranges and salts; bad records are rejected with their reason; the ``workbench spark``
jobs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.spark_cases import (
    accepted,
    adversarial_scenario,
    replay_files,
    scenario,
    tie_scenario,
)
from tests.support.wjoin_cases import CASES, UNIFORM, check, wjoin_rows
from workbench.data.event_files import read_stream_specs, write_event_folder
from workbench.data.streams import csv_streams
from workbench.events import sort_pairs
from workbench.operators import (
    CORRELATIONS,
    BEWJoin,
    FEWJoin,
    PTJoin,
    brute_force_join,
    replay,
)
from workbench.spark.queries.batch import read_result_files, run_join
from workbench.spark.queries.ranges import (
    RangePlan,
    Reach,
    Span,
    join_ranges,
    join_reach,
    plan_ranges,
    span_columns,
)
from workbench.spark.submit import main as spark_main

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[1]


def _spark_pairs(spark, tmp_path, op, events, fmt="parquet") -> np.ndarray:  # noqa: ANN001
    write_event_folder(tmp_path / "in", op.streams, events, fmt)
    run = run_join(spark, tmp_path / "in", op, tmp_path / "out")
    pairs = read_result_files(tmp_path / "out" / "pairs")
    assert run.results == len(pairs)
    return pairs


@pytest.mark.parametrize(
    ("mode", "path", "delta"),
    [("tight", "fast", 0.5), ("tight", "fast", 0.999), ("tight", "general", 0.001),
     ("loose", "fast", 0.7), ("naive", "general", 0.3)],
)  # fmt: skip
def test_ptjoin_per_range_equals_the_rational_oracle(spark, tmp_path, mode, path, delta):
    streams, events = adversarial_scenario(seed=7)
    pi = max(s.pi for s in streams)
    d = pi if path == "fast" else pi / 2
    expected = brute_force_join(events, streams, d, delta, accepted=accepted(events, streams))
    assert len(expected) > 10
    op = PTJoin(streams=streams, d=d, threshold=delta, mode=mode)
    np.testing.assert_array_equal(_spark_pairs(spark, tmp_path, op, events), expected)


@pytest.mark.parametrize(("length", "d"), [(4.0, 4.0), (8.0, 4.0)])  # fast path, general path
def test_exact_ties_are_decided_in_rationals_inside_the_tasks(spark, tmp_path, length, d):
    """P = 1/2 exactly at delta = 0.5 joins, just above it does not, at offsets up to 1e12."""
    streams, events = tie_scenario(length)
    op = PTJoin(streams=streams, d=d, threshold=0.5)
    got = _spark_pairs(spark, tmp_path, op, events, fmt="json")
    assert got.tolist() == [[0, 10], [1, 11], [2, 12]]


@pytest.mark.parametrize("name", list(CORRELATIONS))
def test_interval_correlation_per_range_equals_the_rational_oracle(spark, tmp_path, name):
    streams, events = adversarial_scenario(seed=11, uniform=True)
    d, ct = max(s.pi for s in streams), 0.5
    expected = brute_force_join(events, streams, d, ct, accepted=accepted(events, streams))
    lazy = {"max_pending": 5, "max_wait": 50.0} if name in ("lazy", "lookup") else {}
    op = CORRELATIONS[name](streams=streams, d=d, threshold=ct, **lazy)
    np.testing.assert_array_equal(_spark_pairs(spark, tmp_path, op, events), expected)


def test_narrow_and_salted_ranges_find_every_pair_once(spark, tmp_path):
    """Ranges exactly one band wide, every range salted three ways (A events copied to each
    salt): the same pairs as the in-process operator over the whole streams, none twice."""
    streams, events = scenario(seed=3, n=600)
    op = PTJoin(streams=streams, d=400.0, threshold=0.6)
    expected = replay(op.clone(), events)[0].ids
    frame = spark.createDataFrame(events.to_frame())
    reach = join_reach(op)
    assert reach == Reach(1, (reach.before[0], 0.0), (reach.after[0], 0.0))
    ranges = frame.selectExpr(f"floor(t_det / {reach.band}) AS r").distinct().collect()
    plan = RangePlan(reach.band, reach, {int(row.r): 3 for row in ranges})
    d_a, d_b = (s.max_delay for s in streams)
    timely = f"arrival <= t_det + IF(stream = 0, {d_a}, {d_b})"
    accepted = frame.filter(timely)
    got = join_ranges(accepted, op, plan).toPandas().to_numpy(dtype=np.int64)
    np.testing.assert_array_equal(sort_pairs(got), sort_pairs(expected))
    assert len(np.unique(got, axis=0)) == len(got)
    auto = plan_ranges(accepted, reach, slots=2)
    assert auto.width >= reach.band


def test_a_burst_is_salted_by_the_span_quantiles_without_counting_per_range(spark):
    """A tenth of the span holds 60 % of the events: its ranges (and only they) are salted,
    planned from the quantiles one aggregate observed (no count per range)."""
    rng = np.random.default_rng(4)
    t = np.concatenate((rng.uniform(0, 100_000, 4_000), rng.uniform(50_000, 60_000, 6_000)))
    frame = spark.createDataFrame([(float(x),) for x in t], "t_det DOUBLE")
    span = Span.of(frame.agg(*span_columns(frame["t_det"])).first().asDict())
    assert span.n == 10_000 and span.lo == t.min() and span.hi == t.max()
    assert abs(span.count_below(np.array([50_000.0]))[0] - np.sum(t < 50_000)) < 100
    reach = Reach(1, (100.0, 0.0), (100.0, 0.0))
    plan = plan_ranges(frame, reach, slots=4, span=span)  # 16 ranges of about 6,250
    burst = {int(r) for r in np.floor(np.array([50_000.0, 59_999.0]) / plan.width)}
    assert set(plan.salts) == set(range(min(burst), max(burst) + 1))
    assert all(n >= 3 for n in plan.salts.values())


def test_bad_records_are_rejected_with_their_reason_and_the_rest_joined(spark, tmp_path):
    streams, events = scenario(seed=5)
    op = PTJoin(streams=streams, d=300.0, threshold=0.7)
    folder = write_event_folder(tmp_path / "in", streams, events, "json")
    with (folder / "events" / "part-0.jsonl").open("a") as f:
        f.write('{"stream": 0, "id": 9001, "template": 99, "t_det": 5.0, "arrival": 6.0}\n')
        f.write("not json at all\n")
        f.write('{"stream": 7, "id": 9002, "template": 0, "t_det": 5.0, "arrival": 6.0}\n')
    run = run_join(spark, folder, op, tmp_path / "out")
    out, status = replay(op.clone(), events)
    late = int(np.count_nonzero(status == "late"))
    assert run.rejects == {
        "malformed": 1,
        "unknown stream": 1,
        "unknown template": 1,
        "late": late,
    }
    got = read_result_files(tmp_path / "out" / "pairs")
    np.testing.assert_array_equal(got, sort_pairs(out.ids))
    rejects = spark.read.parquet(str(tmp_path / "out" / "rejects")).toPandas()
    assert len(rejects) == late + 3 and "not json at all" in set(rejects["record"])


WJOIN_CASES = {"uniform 3-clique, BEW": (*UNIFORM, False, BEWJoin, "uniform")}
WJOIN_CASES |= {f"{name}, FEW": (*case, FEWJoin, "gca") for name, case in CASES.items()}


@pytest.mark.parametrize("case", list(WJOIN_CASES))
def test_wjoin_per_range_equals_bew_and_brute_force(spark, tmp_path, case):
    """The W-join's operators in the tasks, stream 0 owning the ranges, the others copied by
    their shortest-path bound C_0s, grouped by key too: BEW's and brute force's results."""
    constraints, delays, grid, cls, strategy = WJOIN_CASES[case]
    rows = wjoin_rows(len(case), constraints, delays, grid)
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700)
    op = cls(constraints=constraints, max_delay=delays, strategy=strategy)
    run = run_join(spark, tmp_path / "in", op, tmp_path / "out")
    got = read_result_files(tmp_path / "out" / "results")
    check(got, rows, constraints, delays)
    assert run.rejects == {"late": int((rows["arrival"] > rows["t"] + rows["delay"]).sum())}


def test_the_spark_join_command_runs_on_a_prepared_folder(spark, tmp_path, capsys):
    assert spark_main(["prepare", "--source", "synthetic", "--output", str(tmp_path / "ev")]) == 0
    args = ["--input", str(tmp_path / "ev"), "--master", "local[2]", "--json"]
    assert spark_main(["join", *args, "--output", str(tmp_path / "j"), "--d", "3000",
                       "--delta", "0.8"]) == 0  # fmt: skip
    run = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert run["operator"] == "PTJoin" and run["pairs"] == len(
        read_result_files(tmp_path / "j" / "pairs")
    )
    assert spark_main(["join", *args, "--output", str(tmp_path / "k"), "--d", "-1",
                       "--delta", "0.8"]) == 2  # fmt: skip
    assert "d = -1.0" in capsys.readouterr().err


def test_a_users_csv_prepared_and_joined_on_spark_gives_the_in_process_pairs(
    spark, tmp_path, capsys
):
    """Issue 49's path: ``prepare --source csv`` on the sample CSV, ``join`` on Spark, and the
    pairs equal the in-process PTJoin's over the same events."""
    csv = ROOT / "data" / "sample-two-sensors.csv"
    folder = tmp_path / "mine"
    args = ["--time-column", "time", "--sensor-column", "sensor"]
    assert spark_main(["prepare", "--source", "csv", "--path", str(csv), "--output",
                       str(folder), *args]) == 0  # fmt: skip
    assert "313 events of 2 streams" in capsys.readouterr().out
    assert spark_main(["join", "--input", str(folder), "--output", str(tmp_path / "out"),
                       "--master", "local[2]", "--d", "60000", "--delta", "0.8"]) == 0  # fmt: skip
    got = read_result_files(tmp_path / "out" / "pairs")
    rep = csv_streams(csv.read_bytes(), "time", "sensor", uploaded=False)
    op = PTJoin(streams=read_stream_specs(folder), d=60000.0, threshold=0.8)
    assert op.streams == rep.specs()
    out, _ = replay(op, rep.events)
    assert len(got) > 100
    np.testing.assert_array_equal(got, sort_pairs(out.ids))


def test_the_spark_wjoin_command_runs_on_tuple_files(spark, tmp_path, capsys):
    """``workbench spark wjoin`` with a window matrix: BEW's results; a bad matrix exits 2."""
    constraints, delays, grid = CASES["non-uniform 3-clique, ties"]
    rows = wjoin_rows(3, constraints, delays, grid)
    replay_files(rows.drop(columns="delay"), tmp_path / "in", 700)
    windows = ";".join(",".join(f"{x:g}" for x in row) for row in constraints.windows)
    args = ["wjoin", "--input", str(tmp_path / "in"), "--master", "local[2]", "--json"]
    delay_arg = ",".join(f"{x:g}" for x in delays)
    assert spark_main([*args, "--output", str(tmp_path / "w"), "--windows", windows,
                       "--max-delay", delay_arg]) == 0  # fmt: skip
    run = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert run["operator"] == "BEWJoin"
    got = read_result_files(tmp_path / "w" / "results")
    assert run["results"] == len(got)
    check(got, rows, constraints, delays)
    assert spark_main([*args, "--output", str(tmp_path / "x"), "--windows", "0,5;x,0",
                       "--max-delay", delay_arg]) == 2  # fmt: skip
    assert "--windows = 'x,0' must be numbers separated by ','" in capsys.readouterr().err
