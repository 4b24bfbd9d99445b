"""Eager (stateful operator) and lazy (window-function scan) coalescing on Spark give exactly
the in-process extents' coalesced view of the same replay, out of order, late and malformed
input included."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from pyspark.sql.streaming.state import GroupState

from tests.support.group_state import stand_in_state
from workbench.coalesce import Equivalence, Window
from workbench.data.replay import Replayer
from workbench.data.replica import simulate_deployment
from workbench.data.synthetic import coalescing_stream
from workbench.spark.queries.coalesce import (
    EXTENT_COLUMNS,
    OUTPUT_SCHEMA,
    CoalesceSettings,
    coalesce_input,
    eager_coalesce_query,
    eager_update,
    extents_view,
    in_process_view,
    lazy_coalesce,
    raw_tuples_query,
    read_emitted,
    read_extents,
    restart_kind,
)
from workbench.spark.queries.coalesce_base import tidy_extents
from workbench.spark.queries.coalesce_batch import run_coalesce
from workbench.spark.queries.source import EPOCH_OFFSET_MS, read_rejects, rejects_query
from workbench.spark.submit import main as spark_main

pytestmark = pytest.mark.spark

D = 400.0  # max delay (ms)
BATCH_MS = 10_000.0


def _synthetic(seed: int, n: int = 300) -> pd.DataFrame:
    """The paper's cp stream over 3 groups, whole-ms timestamps ~100 ms apart, arrival up to D
    later (out of order), 5% late."""
    rng = np.random.default_rng(seed)
    s = coalescing_stream(rng, n=n, cp=0.6, oop=0.0, groups=(3, 1, 1))
    t = np.round(s["ts"] * 100.0)
    delay = rng.uniform(0.0, D, n)
    delay[rng.random(n) < 0.05] += D + 1.0
    frame = pd.DataFrame(
        {"group": s["g1"].astype(int), "value": (s["a1"] % 4).astype(float), "t": t}
    )
    return _arrange(frame.assign(arrival=t + delay))


def _deployment(motes: tuple[int, ...] = (7, 21, 33)) -> pd.DataFrame:
    """Simulated Intel Lab temperatures of a few motes; t and arrival in (fractional) ms."""
    table = simulate_deployment(days=0.05, seed=2)
    table = table[table["mote"].isin(motes)]
    t0 = table["time"].min()
    ms = lambda col: (table[col] - t0).dt.total_seconds().to_numpy() * 1000.0  # noqa: E731
    frame = pd.DataFrame(
        {"group": table["mote"].to_numpy(), "value": table["temperature"].to_numpy()}
    )
    return _arrange(frame.assign(t=ms("time"), arrival=ms("arrival")))


def _arrange(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.sort_values("arrival", kind="stable").reset_index(drop=True)
    frame.insert(1, "id", np.arange(len(frame)))
    return frame[["group", "id", "value", "t", "arrival"]]


def _replay(frame: pd.DataFrame, folder, bad_lines: tuple[str, ...] = ()) -> list[float]:
    """Write the replay files, one micro-batch each (distinct mtimes fix the file order), with
    ``bad_lines`` appended to the second; return each file's last arrival."""
    Replayer(frame, folder, batch_ms=BATCH_MS).run()
    files = sorted(folder.glob("batch-*.json"))
    with open(files[1], "a", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in bad_lines)
    for k, path in enumerate(files):
        os.utime(path, (1_000_000 + k, 1_000_000 + k))
    batch = np.floor((frame["arrival"] - frame["arrival"].iloc[0]) / BATCH_MS)
    return frame.groupby(batch)["arrival"].max().tolist()


def _accepted(frame: pd.DataFrame, max_delay: float = D) -> pd.DataFrame:
    return frame[frame["arrival"] <= frame["t"] + max_delay]


def test_eager_time_window_equals_the_extent_at_every_micro_batch(spark, tmp_path):
    """Out of order within D, late tuples and malformed lines: the view after every micro-batch
    is the in-process extent's over the accepted tuples; the rejects are counted by reason."""
    frame = _synthetic(1)
    bad = ('{"group": 1, "id": 9001, "value": 2.0, "t": ', "not json at all", '{"group": 2}')
    ends = _replay(frame, tmp_path / "in", bad)
    settings = CoalesceSettings(Window("time", 3000.0), Equivalence(), retention=6000.0)
    source, out = str(tmp_path / "in"), str(tmp_path / "out")
    query = eager_coalesce_query(
        spark, source, settings, D, out, str(tmp_path / "chk"), max_files_per_trigger=1
    )
    _, classified = coalesce_input(spark, source, D)
    rejects = rejects_query(classified, str(tmp_path / "rej"), str(tmp_path / "chk-rej"))
    query.awaitTermination()
    rejects.awaitTermination()
    accepted = _accepted(frame)
    counted = read_rejects(spark, str(tmp_path / "rej"))["reason"].value_counts().to_dict()
    assert counted == {"malformed": len(bad), "late": len(frame) - len(accepted)}
    assert counted["late"] > 5
    emitted = read_emitted(spark, out)
    assert emitted["batch"].max() == len(ends)  # one batch per file, then the no-data batch
    for batch, arrived_by in enumerate(ends):
        expected = in_process_view(accepted[accepted["arrival"] <= arrived_by], settings.window)
        pd.testing.assert_frame_equal(extents_view(emitted, settings.window, batch), expected)
    final = in_process_view(accepted, settings.window)
    assert len(final) > 10 and (final["count"] > 1).any()
    # the final no-data batch has expired by the watermark what the window lost: nothing to cut
    last = emitted[emitted["batch"] == emitted.groupby("group")["batch"].transform("max")]
    assert last["count"].sum() == final["count"].sum()
    pd.testing.assert_frame_equal(read_extents(spark, out, settings.window), final)


def test_reading_up_to_a_batch_lists_no_later_folder(spark, tmp_path):
    """A running query may be re-running its uncommitted next batch, which replaces that
    batch's folder: the view of the last reported batch reads only the folders up to it (a
    later folder, here unreadable, is not even listed), so the re-run cannot pull a file from
    under the read."""
    out = tmp_path / "out"
    for batch in (0, 1):
        frame = spark.createDataFrame([(1, 0.0, 1.0, 2.0, 1, [0.0], [0.0])], OUTPUT_SCHEMA)
        frame.coalesce(1).write.parquet(str(out / f"batch={batch}"))
    (out / "batch=2").mkdir()
    (out / "batch=2" / "part-00000.parquet").write_bytes(b"half written")
    assert sorted(read_emitted(spark, str(out), batch=1)["batch"]) == [0, 1]
    assert read_emitted(spark, str(out), batch=-1).empty  # before the first batch
    with pytest.raises(Exception, match="batch=2"):  # the whole sink: the bad folder is read
        read_emitted(spark, str(out))


def test_eager_tuple_window_quantised_restarts_from_its_checkpoint(spark, tmp_path):
    """Mote temperatures quantised to 0.5 degrees; the window shrinks from 15 to 10 tuples per
    mote between two runs on the same checkpoint (the state retains 25)."""
    frame = _deployment()
    max_delay = float(np.quantile(frame["arrival"] - frame["t"], 0.95))
    eq = Equivalence("quantized", quantum=0.5)
    first = CoalesceSettings(Window("tuples", 15), eq, retention=25)
    second = CoalesceSettings(Window("tuples", 10), eq, retention=25)
    assert restart_kind(first, second)[0] == "same"
    cut = frame["arrival"].median()
    half = frame["arrival"] <= cut
    args = (str(tmp_path / "out"), str(tmp_path / "chk"))
    Replayer(frame[half], tmp_path / "in", batch_ms=600_000.0).run()
    eager_coalesce_query(spark, str(tmp_path / "in"), first, max_delay, *args).awaitTermination()
    accepted = _accepted(frame, max_delay)
    expected = in_process_view(accepted[accepted["arrival"] <= cut], first.window, eq)
    assert (expected["count"] > 1).any()
    pd.testing.assert_frame_equal(read_extents(spark, args[0], first.window), expected)
    Replayer(frame[~half], tmp_path / "in2", batch_ms=1e9).run()
    (tmp_path / "in2" / "batch-000000.json").rename(tmp_path / "in" / "batch-later.json")
    eager_coalesce_query(spark, str(tmp_path / "in"), second, max_delay, *args).awaitTermination()
    expected = in_process_view(accepted, second.window, eq)
    pd.testing.assert_frame_equal(read_extents(spark, args[0], second.window), expected)
    assert expected["value"].mul(2).mod(1).eq(0).all()  # quantum representatives


EQUIVALENCES = [
    Equivalence(),
    Equivalence("quantized", quantum=0.5),
    Equivalence("absolute", tolerance=0.2),
    Equivalence("relative", tolerance=0.01),
    Equivalence("increasing"),
]


def test_lazy_scan_equals_the_extent(spark, tmp_path):
    """The raw-tuple sink scanned with window functions, for every equivalence, both window
    kinds, at a few arrival times."""
    frame = _deployment()
    frame["value"] = frame["value"].round(1)  # readings to 0.1 degree: equal ones repeat
    max_delay = float(np.quantile(frame["arrival"] - frame["t"], 0.95))
    Replayer(frame, tmp_path / "in", batch_ms=BATCH_MS * 4).run()
    raw_tuples_query(
        spark, str(tmp_path / "in"), max_delay, str(tmp_path / "raw"), str(tmp_path / "chk")
    ).awaitTermination()
    accepted = _accepted(frame, max_delay)
    stored = spark.read.parquet(str(tmp_path / "raw")).cache()
    assert stored.count() == len(accepted)
    time, tuples = Window("time", 600_000.0), Window("tuples", 12)
    final, earlier = float(frame["arrival"].max()), float(frame["arrival"].median())
    cases = [(w, eq, final) for w, eq in zip([time, tuples] * 3, EQUIVALENCES, strict=False)]
    cases += [(time, EQUIVALENCES[1], final), (tuples, EQUIVALENCES[0], earlier)]
    for window, eq, arrived_by in cases:
        got = lazy_coalesce(spark, stored, window, eq, arrived_by).toPandas()[EXTENT_COLUMNS]
        got = got.sort_values(["group", "start"]).reset_index(drop=True)
        expected = in_process_view(accepted[accepted["arrival"] <= arrived_by], window, eq)
        assert (expected["count"] > 1).any()
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    stored.unpersist()


def _micro_batches(
    frame: pd.DataFrame, settings: CoalesceSettings, batch_ms: float
) -> pd.DataFrame:
    """Drive the eager state function as Spark does, without Spark: per micro-batch, the groups
    with tuples and those whose event-time timeout the watermark passed (from the previous
    batches' max event time), rows at or below the watermark dropped; a final no-data batch.
    Spark's watermark is in event-time ms, which are replay ms + ``EPOCH_OFFSET_MS``."""
    delay = int(np.ceil(settings.retained)) + 1
    timed = settings.window.kind == "time"
    update = eager_update(settings, delay)
    states: dict[int, tuple] = {}
    timeouts: dict[int, int] = {}
    watermark, newest, emitted = 0, -np.inf, []
    batch_of = np.floor((frame["arrival"] - frame["arrival"].iloc[0]) / batch_ms)
    parts = [part for _, part in frame.groupby(batch_of)] + [frame.iloc[:0]]
    for batch, part in enumerate(parts):
        if timed:
            part = part[np.floor(part["t"]) + EPOCH_OFFSET_MS > watermark]
        due = {g for g, ts in timeouts.items() if watermark > ts} if timed else set()
        for group in sorted(set(part["group"]) | due):
            rows = part[part["group"] == group]
            state = stand_in_state(
                states.get(group),
                watermark,
                timed,
                len(rows) == 0,
                timeouts.get(group, GroupState.NO_TIMESTAMP),
            )
            out = list(update((group,), iter([rows]), state))
            emitted += [o.assign(batch=batch) for o in out]
            timeouts.pop(group, None)
            states.pop(group, None)
            if state.exists:
                states[group] = state.get
                timeouts[group] = state._timeout_timestamp
        newest = max(newest, part["t"].max() if len(part) else -np.inf)
        if timed and np.floor(newest) + EPOCH_OFFSET_MS - delay > watermark:
            watermark = int(np.floor(newest)) + EPOCH_OFFSET_MS - delay
    return pd.concat(emitted, ignore_index=True)


@pytest.mark.parametrize("eq", EQUIVALENCES, ids=lambda e: e.kind)
@pytest.mark.parametrize(
    "window", [Window("time", 2000.0), Window("tuples", 7)], ids=lambda w: w.kind
)
def test_eager_state_function_for_every_equivalence(eq, window):
    """The operator's state function, driven micro-batch by micro-batch as Spark would, equals
    the in-process extent after every batch (splits, bridges, expiry by the watermark)."""
    frame = _accepted(_synthetic(7, n=250))
    settings = CoalesceSettings(window, eq, retention=window.size * 2)
    emitted = _micro_batches(frame, settings, 2000.0)
    batch_of = np.floor((frame["arrival"] - frame["arrival"].iloc[0]) / 2000.0)
    for batch, arrived_by in enumerate(frame.groupby(batch_of)["arrival"].max()):
        expected = in_process_view(frame[frame["arrival"] <= arrived_by], window, eq)
        pd.testing.assert_frame_equal(extents_view(emitted, window, batch), expected)
    assert (expected["count"] > 1).any()
    # after the final no-data batch the operator itself shows exactly the window
    latest = emitted[emitted["batch"] == emitted.groupby("group")["batch"].transform("max")]
    assert latest["count"].sum() == expected["count"].sum()


def test_eager_state_refuses_a_checkpoint_of_other_settings():
    """Restarting on a checkpoint whose state another equivalence wrote fails loudly."""
    frame = _accepted(_synthetic(3, n=40))
    window = Window("tuples", 5)
    old = CoalesceSettings(window).state_key
    state = stand_in_state((old, b"", b"", b""), 0, False)
    update = eager_update(CoalesceSettings(window, Equivalence("quantized")), 6)
    with pytest.raises(ValueError, match="restart on a new checkpoint"):
        list(update((0,), iter([frame.iloc[:3]]), state))


def test_restart_kind_says_which_checkpoint_and_why():
    time_eq = CoalesceSettings(Window("time", 60_000.0), retention=120_000.0)
    cases = [
        (time_eq, "same", "unchanged"),
        (CoalesceSettings(Window("time", 30_000.0), retention=120_000.0), "same", "fits"),
        (CoalesceSettings(Window("time", 120_000.0), retention=120_000.0), "same", "fits"),
        (CoalesceSettings(Window("time", 150_000.0), retention=150_000.0), "new", "exceeds"),
        (CoalesceSettings(Window("time", 60_000.0)), "new", "retention"),
        (
            CoalesceSettings(
                Window("time", 60_000.0), Equivalence("quantized"), retention=120_000.0
            ),
            "new",
            "equivalence",
        ),
        (CoalesceSettings(Window("tuples", 50), retention=100), "new", "kind"),
        (CoalesceSettings(Window("time", 60_000.0), scheme="lazy"), "new", "scheme"),
    ]
    for new, kind, word in cases:
        got = restart_kind(time_eq, new)
        assert got[0] == kind and word in got[1], (new, got)
    lazy = CoalesceSettings(Window("time", 60_000.0), scheme="lazy")
    other = CoalesceSettings(Window("tuples", 500), Equivalence("increasing"), scheme="lazy")
    assert restart_kind(lazy, other)[0] == "same"
    with pytest.raises(ValueError, match="retention = 10"):
        CoalesceSettings(Window("time", 60.0), retention=10.0)
    with pytest.raises(ValueError, match="scheme = 'eagerly'"):
        CoalesceSettings(Window("time", 60.0), scheme="eagerly")


@pytest.mark.parametrize(
    "window", [Window("time", 3000.0), Window("tuples", 7)], ids=lambda w: w.kind
)
def test_the_coalesce_job_equals_the_extent_for_every_equivalence(spark, tmp_path, window):
    """``run_coalesce`` over replay files with malformed lines and late tuples: for each
    equivalence and both schemes the written view is the in-process extent's."""
    frame = _synthetic(5)
    bad = ('{"group": 1, "id": 9001, "value": 2.0, "t": ', "not json at all")
    _replay(frame, tmp_path / "in", bad)
    accepted = _accepted(frame)
    for k, eq in enumerate(EQUIVALENCES):
        scheme = ("eager", "lazy")[k % 2]
        out = tmp_path / f"out-{k}"
        run = run_coalesce(spark, tmp_path / "in", CoalesceSettings(window, eq, scheme), D, out)
        got = tidy_extents(pd.read_parquet(out / "extents"))
        expected = in_process_view(accepted, window, eq)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        assert (run.extents, run.tuples) == (len(expected), expected["count"].sum())
        assert run.rejects == {"malformed": len(bad), "late": len(frame) - len(accepted)}


def test_the_spark_coalesce_command_runs_on_a_csv_of_tuples(spark, tmp_path, capsys):
    """``workbench spark coalesce`` on the user's CSV: the extent's view; a bad D exits 2."""
    frame = _deployment()
    (tmp_path / "in").mkdir()
    frame.to_csv(tmp_path / "in" / "tuples.csv", index=False)
    args = ["coalesce", "--input", str(tmp_path / "in"), "--master", "local[2]", "--json"]
    window = ["--window", "600000", "--equivalence", "quantized", "--quantum", "0.5"]
    assert spark_main([*args, "--output", str(tmp_path / "c"), *window,
                       "--max-delay", "1e9"]) == 0  # fmt: skip
    run = json.loads(capsys.readouterr().out.splitlines()[-1])
    got = tidy_extents(pd.read_parquet(tmp_path / "c" / "extents"))
    expected = in_process_view(frame, Window("time", 600000.0), Equivalence("quantized", 0, 0.5))
    assert (expected["count"] > 1).any() and run["extents"] == len(expected)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert spark_main([*args, "--output", str(tmp_path / "d"), *window,
                       "--max-delay", "-1"]) == 2  # fmt: skip
    assert "max_delay = -1.0" in capsys.readouterr().err
