"""The experiments package: the one first-come-first-served response-time model on hand-computed
cases, the dashboard's multi-way join run giving the benchmarks' response times, and the
interval correlation run at each arrival rate."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from workbench.data.replay import learn_templates, readings_to_events
from workbench.data.replica import simulate_deployment
from workbench.data.streams import replayed_streams
from workbench.events import Events
from workbench.experiments import (
    COMPILED_BATCH,
    ENGINES,
    INTERVAL_QUERY,
    RateGrid,
    WJoinWorkload,
    deployment_replay,
    fcfs_finish,
    interval_rate_runs,
    join_table,
    max_sustainable_rates,
    profile_join,
    profile_wjoin,
    rate_verdicts,
    replay_verdicts,
    wjoin_measures,
)
from workbench.experiments.interval_rates import ALGORITHMS, event_response_ms
from workbench.experiments.workloads import WEST_EAST
from workbench.operators import BEWJoin, FEWJoin, PTJoin, StreamSpec, WindowConstraints
from workbench.paper_examples import example3_templates


def stopwatch(services_s: list[float]) -> object:
    """A fake clock: the k-th timed call (two readings, start and end) lasts services_s[k]."""
    readings, now = [], 0.0
    for service in services_s:
        readings += [now, now + service]
        now += service
    return iter(readings).__next__


def test_fcfs_server_waits_for_arrivals_and_queues_behind_earlier_calls():
    # call 0 busy 0..2; call 1 arrives at 1, waits until 2, done 3; the server idles until
    # call 2 arrives at 5, done 5.5; call 3 arrives at 5.5 exactly as the server frees up
    finish = fcfs_finish(np.array([0.0, 1.0, 5.0, 5.5]), np.array([2.0, 1.0, 0.5, 1.0]))
    assert finish.tolist() == [2.0, 3.0, 5.5, 6.5]
    assert fcfs_finish(np.zeros(0), np.zeros(0)).tolist() == []


def wjoin_rows(values: list[int], streams: list[int], times: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "stream": streams,
            "id": range(len(values)),
            "value": values,
            "ts": times,
            "arrival": times,
        }
    )


def test_response_time_of_a_multiway_join_by_hand():
    """Tuples arrive at 0, 1 and 2 ms; every call (the flush too) takes 2 ms, so the server
    falls behind: calls finish at 2, 4, 6 and 8 ms.  (0, 1) is emitted by call 1 (finish 4)
    and its last tuple arrived at 1: 3 ms; (0, 2) by call 2 (finish 6), last arrival 2: 4 ms."""
    rows = wjoin_rows([5, 5, 5], [0, 1, 1], [0.0, 1.0, 2.0])
    op = BEWJoin(constraints=WindowConstraints.uniform(2, 10.0), max_delay=[0.0, 0.0])
    p = profile_wjoin(op, rows, clock=stopwatch([0.002] * 4))
    assert p.ids.tolist() == [[0, 1], [0, 2]] and p.emitted.tolist() == [0, 1, 1, 0]
    assert p.finish_ms() == pytest.approx([2.0, 4.0, 6.0, 8.0])
    assert p.response_ms() == pytest.approx([3.0, 4.0])
    assert p.mean_response_ms() == pytest.approx(3.5) and p.seconds == pytest.approx(0.008)
    assert p.emitted_at_ms().tolist() == [1.0, 2.0]
    # ten times the arrival rate: arrivals at 0, 0.1, 0.2 ms, the same 2 ms calls
    assert p.response_ms(speed=10.0) == pytest.approx([4.0 - 0.1, 6.0 - 0.2])
    # capacity: pushes per busy second, after the warm-up (flush excluded)
    assert p.capacity() == pytest.approx(3 / 0.006) and p.capacity(warm_ms=1.5) == 500.0


def test_response_time_of_a_two_stream_join_by_hand():
    """a0 at 0 ms and b0 at 10 ms surely occur within d = 1000 ms; b0's push (1 ms, after the
    idle server) emits the pair at 11 ms: 1 ms after its last event arrived."""
    spec = StreamSpec(example3_templates(), 50.0)
    events = Events(np.array([0, 1]), np.array([0, 0]), np.array([0, 1]), [0.0, 10.0], [0.0, 10.0])
    op = PTJoin(streams=(spec, spec), d=1000.0, threshold=0.8)
    p = profile_join(op, events, clock=stopwatch([0.004, 0.001, 0.0]))
    assert p.pairs().tolist() == [[0, 0]] and p.last_ms.tolist() == [10.0]
    assert p.response_ms() == pytest.approx([1.0])


def test_flush_results_wait_for_the_flush():
    """FEW holds its period: (2, 1) comes out of the flush, which runs after the three pushes
    (1 ms each) and takes 3 ms: it finishes at 6 ms, 4 ms after tuple 2 arrived."""
    rows = wjoin_rows([1, 1, 1], [0, 1, 0], [0.0, 1.0, 2.0])
    op = FEWJoin(constraints=WindowConstraints.uniform(2, 10.0), max_delay=[0.0, 0.0])
    p = profile_wjoin(op, rows, clock=stopwatch([0.001, 0.001, 0.001, 0.003]))
    assert p.emitted.tolist() == [0, 1, 0, 1] and p.ids.tolist() == [[0, 1], [2, 1]]
    assert p.response_ms() == pytest.approx([2.0 - 1.0, 6.0 - 2.0])
    assert p.emitted_at_ms().tolist() == [1.0, 2.0]  # the flush: at the last arrival


@pytest.mark.parametrize("cls", [BEWJoin, FEWJoin])
def test_the_dashboard_run_gives_the_benchmarks_response_times(cls):
    """The same join, timed by the same clock, read by the dashboard (times in seconds) and
    by the benchmarks and notebooks (times in ms): equal response times, result by result."""
    from workbench.app.wjoin_model import run_join

    workload = WJoinWorkload(window_ms=100.5, keys=20, windows=20.0)
    rows_ms = workload.streams(np.random.default_rng(3), 3, 2000.0)
    rows_ms = rows_ms.assign(ts=rows_ms["ts"].round(), arrival=rows_ms["ts"].round())
    rows_s = rows_ms.assign(ts=rows_ms["ts"] / 1000.0, arrival=rows_ms["arrival"] / 1000.0)
    services = [0.0007] * (len(rows_ms) + 1)  # slower than the arrivals: a queue builds up

    def join(window: float) -> BEWJoin | FEWJoin:  # 100.5 ms: no pair sits on the border
        wc = WindowConstraints.uniform(3, window)
        return cls(constraints=wc, max_delay=[0.0] * 3, implementation="hash")

    dashboard = run_join(join(0.1005), rows_s, cls.__name__, clock=stopwatch(services))
    bench = profile_wjoin(join(100.5), rows_ms, clock=stopwatch(services))
    assert dashboard.results == bench.results > 10
    assert dashboard.response_ms == pytest.approx(bench.response_ms(), rel=1e-9, abs=1e-9)
    assert dashboard.response_ms.mean() > 1.0  # the queue counts
    measures = wjoin_measures(join(100.5), rows_ms, clock=stopwatch(services))
    assert measures["response_ms"] == pytest.approx(dashboard.response_ms.mean(), rel=1e-9)
    # the mean splits exactly into held, queued and served; BEW never holds a result
    parts = measures["wait_ms"] + measures["queue_ms"] + measures["service_ms"]
    assert parts == pytest.approx(measures["response_ms"], rel=1e-9)
    assert measures["service_ms"] == pytest.approx(0.7) and measures["queue_ms"] > 0.0
    assert (measures["wait_ms"] == 0.0) == (cls is BEWJoin) == (measures["held_share"] == 0.0)


def test_readings_split_into_two_streams_in_one_place():
    """The dashboard's alternate motes (and notebook 06's) and the deployment's west/east
    halves both come from ``replayed_streams``, equal to splitting by hand."""
    readings = simulate_deployment(days=0.05, seed=0)
    templates = learn_templates(readings)
    motes = sorted(templates)
    by_hand, _, _ = readings_to_events(
        readings, (motes[0::2], motes[1::2]), templates, [2000.0, 2000.0], seed=0
    )
    replayed = replayed_streams(readings, days=None)
    assert replayed.events.to_frame().equals(by_hand.to_frame())
    assert [s.max_delay for s in replayed.specs()] == [2000.0, 2000.0]

    rep = deployment_replay(hours=1.2, folds=1, seed=0)  # the same 0.05 days
    hour = readings[readings["time"] < readings["time"].min() + pd.Timedelta(hours=1.2)]
    halves = [[m for m in group if m in templates] for group in WEST_EAST]
    west_east, _, _ = readings_to_events(hour, halves, templates, [400.0, 600.0], seed=0)
    assert rep.events.to_frame().equals(west_east.to_frame())
    assert [t.n_buckets for t in rep.intervals[0].templates] == [1] * len(halves[0])


def test_the_interval_workload_is_generated_at_each_rate():
    """Each rate's events come at that rate (both streams together, half each), with the same
    interval lengths and delays within D: the time parameters stay in ms, only arrivals
    thicken."""
    grid = RateGrid(rates=(1_000.0, 50_000.0), events_per_stream=3_000)
    lengths = []
    for rate in grid.rates:
        streams, events = grid.streams(rate)
        assert len(events) == 6_000
        for s in (0, 1):
            t = np.sort(events.t_det[events.stream == s])
            assert (len(t) - 1) / ((t[-1] - t[0]) / 1000.0) == pytest.approx(rate / 2, rel=0.05)
        span_s = (events.arrival[-1] - events.arrival[0]) / 1000.0
        assert len(events) / span_s == pytest.approx(rate, rel=0.05)
        assert events.delays().min() >= 0 and events.delays().max() <= streams[0].max_delay
        lengths.append([t.length for t in streams[0].templates])
    assert lengths[0] == lengths[1]
    # a results budget shortens the high rates' runs, never below the floor
    assert grid.events_at(50_000.0, 0.0) == 3_000
    assert grid.events_at(50_000.0, 50.0) == 3_000  # 16 million pairs: no need
    assert replace(grid, max_results=20_000).events_at(50_000.0, 50.0) == 1_000


@pytest.mark.parametrize(
    ("field", "value"),
    [("rates", ()), ("rates", (1000.0, 0.0)), ("events_per_stream", 0), ("max_results", 0),
     ("compiled_batch", 0)],
)  # fmt: skip
def test_a_bad_rate_grid_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        replace(RateGrid(rates=(1000.0,), events_per_stream=10), **{field: value})


def per_call(step_s: float) -> object:
    """A fake CPU clock: every timed call (two readings) lasts ``step_s``."""
    return itertools.count(0.0, step_s).__next__


def test_rate_runs_stop_where_an_algorithm_falls_behind():
    """With every push costing 0.1 ms of CPU an algorithm processes 10,000 events per CPU s:
    it keeps up at 1,000 and 5,000 events/s, falls behind at 20,000 and is not run at 50,000;
    the same pairs at every rate, and an event's response is its push's FCFS finish."""
    grid = RateGrid(rates=(1_000.0, 5_000.0, 20_000.0, 50_000.0), events_per_stream=300)
    table = interval_rate_runs(grid, engines=("python",), clock=per_call(1e-4), progress=False)
    assert table.groupby("algorithm").size().to_dict() == dict.fromkeys(ALGORITHMS, 3)
    assert table["throughput"].to_numpy() == pytest.approx(10_000.0)
    assert table["keeps_up"].tolist() == [True] * 10 + [False] * 5
    assert table["load"].to_numpy() == pytest.approx(table["rate"] / 10_000.0)
    assert table["same_results"].all() and (table["results"] > 0).all()
    best = max_sustainable_rates(table)
    assert best["python"].to_dict() == dict.fromkeys(ALGORITHMS, 5_000.0)
    # Eager emits an event's pairs in its own push: response = FCFS finish - arrival
    streams, events = grid.streams(1_000.0)
    op = ALGORITHMS["Eager"](streams=streams, **INTERVAL_QUERY.eager(), engine="python")
    p = profile_join(op, events, clock=per_call(1e-4))
    finish = fcfs_finish(events.arrival, np.full(len(events), 0.1))
    done = np.zeros(len(events), dtype=bool)
    done[np.flatnonzero(p.emitted[:-1])] = True
    assert event_response_ms(p, events) == pytest.approx(finish[done] - events.arrival[done])


def test_rate_runs_measure_both_engines_at_a_tiny_size():
    """Every algorithm in both engines at three rates: the same pairs at every rate (count and
    checksum across algorithms and engines), positive throughput, non-negative response
    times; the verdicts are built from the table."""
    grid = RateGrid(rates=(1_000.0, 20_000.0, 200_000.0), events_per_stream=500)
    table = interval_rate_runs(grid, progress=False)
    assert set(table["engine"]) == set(ENGINES)
    for _, runs in table.groupby("rate"):
        assert runs["results"].nunique() == 1 and runs["checksum"].nunique() == 1
    assert table["same_results"].all()
    assert (table["throughput"] > 0).all() and (table["busy_s"] > 0).all()
    assert (table["response_ms"] >= 0).all() and (table["response_p95_ms"] >= 0).all()
    compiled = table[table["engine"] == "compiled"]
    assert (compiled["batch"] == COMPILED_BATCH).all()
    lazy = table[(table["algorithm"] == "Lazy") & (table["engine"] == "python")]
    assert lazy["events_per_emit"].iloc[0] == INTERVAL_QUERY.max_pending  # two blocks of 500
    verdicts = rate_verdicts(table)
    assert list(verdicts.columns) == [
        "paper's claim",
        "ours: reference (python)",
        "ours: compiled kernels",
        "verdict",
        "measured reason",
    ]
    assert verdicts["verdict"].iloc[0] == "yes" and verdicts["measured reason"].str.len().min()


def test_replay_verdicts_come_from_both_engines_tables():
    """Notebook 03's replay rows: every interval algorithm and PTJoin mode on one replay,
    in both engines; the same pairs and the same counted work give "yes" where the paper's
    claim is about results and work."""
    grid = RateGrid(rates=(20_000.0,), events_per_stream=300)
    streams, events = grid.streams(20_000.0)
    tables = {}
    for engine in ENGINES:
        kw = {"streams": streams, **INTERVAL_QUERY.eager(), "engine": engine}
        lazy = INTERVAL_QUERY.lazy()
        interval = {
            name: profile_join(cls(**kw, **(lazy if "Lazy" in name else {})), events)
            for name, cls in ALGORITHMS.items()
        }
        modes = ("naive", "tight")
        ptjoin = {f"PTJoin {m}": profile_join(PTJoin(**kw, mode=m), events) for m in modes}
        tables[engine] = {"interval": join_table(interval), "PTJoin": join_table(ptjoin)}
    verdicts = replay_verdicts(tables, {"PTJoin naive": 1.0, "PTJoin tight": 2.0})
    by_claim = dict(zip(verdicts["paper's claim"], verdicts["verdict"], strict=True))
    assert len(by_claim) == 5
    assert by_claim[next(c for c in by_claim if "same correlation result" in c)] == "yes"
    assert by_claim[next(c for c in by_claim if "bounds avoid" in c)] == "yes"
    assert by_claim[next(c for c in by_claim if "no probability" in c)] == "yes"
    assert "same counts in both engines" in verdicts["measured reason"].iloc[0]
