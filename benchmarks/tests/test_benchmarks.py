"""The benchmark commands (``./dev bench NAME``, :mod:`benchmarks`): their options are their
functions' keyword arguments, short runs print their figures, and the room's arithmetic."""

from __future__ import annotations

import json

import panel as pn
import pytest

from benchmarks.cli import main
from workbench.experiments import ENGINES


def test_bench_stime_prints_figures(capsys):
    assert main(["stime", "--templates", "20", "--sample", "10", "--buckets", "4"]) == 0
    out = capsys.readouterr().out
    assert "20 x 20 random templates" in out and "pairs/s" in out and "speed-up" in out
    err = float(out.rsplit("on the sample:", 1)[1].split()[0])
    assert err < 1e-6


def test_bench_ptjoin_and_interval_print_their_tables(capsys):
    assert main(["ptjoin", "--events", "200", "--naive-prefix", "50", "--templates", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PTJoin: 200 events per stream, 5 templates x 10 buckets")
    lines = out.splitlines()
    names = [f"{m} · {e}" for m in ("naive", "loose", "tight", "band floor") for e in ENGINES]
    assert [line[2:24].strip() for line in lines[5:13]] == names
    assert "compiled / python events/s: naive" in out and "same pairs: yes" in out
    interval = ["interval", "--events", "100", "--seed", "1", "--rate", "1000", "--rate", "20000"]
    assert main(interval) == 0
    out = capsys.readouterr().out
    assert "up to 100 events per stream" in out and "(seed 1)" in out
    assert "at 1,000 events/s in" in out and "at 20,000 events/s in" in out
    assert out.count("LazyWithLookup · compiled") == 2 and "response ms" in out
    assert "maximum sustainable rate" in out and "same pairs at every rate: yes" in out
    assert main([*interval, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["figures"]
    assert figures["grid"]["rates"] == [1000.0, 20000.0] and figures["same_pairs"]
    assert set(figures["max_sustainable"]) == set(ENGINES)


def test_bench_json_holds_the_printed_figures(capsys):
    args = ["stime", "--templates", "8", "--sample", "4", "--buckets", "3"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["benchmark"] == "stime" and doc["figures"]["pairs"] == 64
    assert doc["figures"]["setting"]["templates"] == 8 and doc["machine"]["numba"]


def test_bench_wjoin_paper_only_prints_the_verdicts_and_json(monkeypatch, capsys):
    """``./dev bench wjoin --paper-only [--scale S] [--json]``: the tables, the verdicts and
    the frames as JSON (tiny settings in place of the scale's: 2- and 3-way, a few hundred
    tuples a run, probes past the grid, the paper FEW's Figure 7 on a second seed)."""
    from benchmarks import wjoin
    from workbench.experiments.wjoin_paper import PaperSettings

    tiny = PaperSettings(
        nested_window_ms=10.0, hash_window_ms=10.0, windows=3.0, max_run_tuples=130,
        start_rate=2000.0, refine=1, probe_rate=2000.0, response_rates=(1000.0, 4000.0),
        response_windows=3.0, engine="python", ways=(2, 3), beyond_windows=1.5,
        beyond_max_tuples=3000, repeat_rates=(4000.0,), repeat_seeds=1,
    )  # fmt: skip
    monkeypatch.setenv("WORKBENCH_SCALE", "ci")  # restored after the test
    monkeypatch.setattr(wjoin, "paper_settings", lambda: tiny)
    assert main(["wjoin", "--paper-only", "--scale", "paper"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("W-join at the paper's settings (paper scale")
    assert "Figure 6: max sustainable" in out and "Reproduced?" in out
    assert out.count("      the paper: ") == 9
    assert "Figure 7's response split" in out and "not_kept" in out
    assert main(["wjoin", "--paper-only", "--scale", "ci", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["figures"]
    assert doc["paper_settings"]["scale"] == "ci" and doc["paper_settings"]["ways"] == [2, 3]
    assert len(doc["paper_verdicts"]) == 9 and len(doc["paper_figure6"]) == 2 * 2 * 2 * 2
    assert "window_sweep" not in doc  # --paper-only: the paper's settings alone
    assert main(["wjoin", "--scale", "ci"]) == 0  # then what they do not cover
    out = capsys.readouterr().out
    assert "Reproduced?" in out and "retail stand-in" in out and "FEWJoin  compiled" in out


def test_bench_spark_options_are_the_benchmarks_keyword_arguments(monkeypatch):
    """``--master`` repeats (no comma lists: ``spark://h1:p1,h2:p2`` is one HA master); options
    left out stay out, so ``bench_spark``'s defaults apply."""
    from benchmarks import cli
    from benchmarks.report import BenchReport

    calls = []

    def fake(**options):
        calls.append(options)
        return BenchReport("spark", ("ran",), {})

    monkeypatch.setattr(cli, "benchmark", lambda name: fake)
    argv = ["spark", "--master", "local[1]", "--master", "standalone"]
    argv += ["--workload", "sparse", "--workload", "wjoin", "--no-baselines"]
    assert main([*argv, "--events", "500", "--rounds", "1", "--seed", "3"]) == 0
    assert main(["spark", "--master", "spark://h1:7077,h2:7077"]) == 0
    assert main(["spark"]) == 0
    assert calls == [
        {
            "masters": ["local[1]", "standalone"],
            "events_per_stream": 500,
            "rounds": 1,
            "seed": 3,
            "baselines": False,
            "workloads": ["sparse", "wjoin"],
        },
        {"masters": ["spark://h1:7077,h2:7077"]},
        {},
    ]


def test_bench_spark_accepts_every_option_it_parses():
    """Each parsed option is a parameter of ``bench_spark`` or a workload field (without
    running Spark)."""
    import inspect

    from benchmarks.cli import parser
    from benchmarks.spark import EVENTS_PER_STREAM, MASTERS, bench_spark
    from workbench.experiments import Example5Workload

    argv = ["spark", "--master", "local[1]", "--events", "10", "--rounds", "1"]
    parsed = vars(parser().parse_args([*argv, "--seed", "2"]))
    options = {k: v for k, v in parsed.items() if k not in ("command", "benchmark", "as_json")}
    named = set(inspect.signature(bench_spark).parameters) - {"streams"}
    assert {"masters", "rounds", "baselines", "workloads"} <= named
    workload = Example5Workload(**{k: v for k, v in options.items() if k not in named})
    assert (workload.events_per_stream, workload.seed) == (10, 2)
    assert MASTERS == ("local[1]", "local[2]", "standalone") and EVENTS_PER_STREAM == 100_000


@pytest.mark.parametrize(
    ("argv", "module", "function"),
    [
        (
            ["soak", "--minutes", "1", "--speed", "60", "--master", "local[1]"]
            + ["--sample-seconds", "5", "--out", "x"],
            "benchmarks.soak",
            "bench_soak",
        ),
        (["room", "--sessions", "2", "--moves", "1"], "benchmarks.room", "bench_room"),
        (
            ["room", "--clients", "protocol", "--sessions", "8", "--sessions", "32", "--floor"],
            "benchmarks.room",
            "bench_room",
        ),
    ],
)
def test_bench_soak_and_room_options_are_their_keyword_arguments(argv, module, function):
    """Every option of ``bench soak`` and ``bench room`` names a parameter of its function."""
    import importlib
    import inspect

    from benchmarks.cli import benchmark, parser

    parsed = vars(parser().parse_args(argv))
    options = {k for k in parsed if k not in ("command", "benchmark", "as_json")}
    bench = getattr(importlib.import_module(module), function)
    assert benchmark(argv[0]) is bench
    assert options and options <= set(inspect.signature(bench).parameters)


def test_the_floor_page_has_the_dashboards_tabs_and_ready_labels():
    """``bench room --floor`` walks the floor page like the dashboard: same tab names, each
    tab's ready label on its first slider, which redraws the tab's one figure."""
    from benchmarks.room_floor import FLOOR_APP
    from harness.server import READY
    from workbench.app.dashboard import TAB_BUILDERS

    script: dict[str, object] = {}
    exec(compile(FLOOR_APP.read_text(), str(FLOOR_APP), "exec"), script)  # noqa: S102 (our own page script)
    assert [name for name, _ in script["tabs"]] == list(TAB_BUILDERS)
    for name in ("Templates", "Coalescing"):
        row = script["tab"](name)
        first, *_ = row[0]
        assert first.label == READY[name]
        (figure,) = row.select(pn.pane.Bokeh)
        pn.panel(row).get_root()
        source = figure.object.renderers[0].data_source
        before = list(source.data["y"])
        first.value = 1.0
        assert list(source.data["y"]) != before


def test_a_rooms_cpu_wait_is_littles_law_and_pauses_are_out_of_step():
    """``bench room``: what a room's interactions cost in CPU, the machine's and the server
    thread's, sets what its users wait at least."""
    from benchmarks.room_measure import (
        SessionTimes,
        cpu_per_interaction,
        cpu_wait,
        pauses,
        server_per_interaction,
        server_wait,
        summary,
        verdicts,
    )

    times = SessionTimes(page_s=2.0, switch_ms={"a": 1000.0}, moves_ms={"a": [500.0, 500.0]})
    cpu = {"server_s": 8.0, "own_s": 6.4, "others_s": 16.0, "cores": 2}
    room = {**summary([times] * 8), "cpu": cpu, "procs": 1}
    assert room["interactions"] == 32 and room["mean_wait_s"] == pytest.approx(1.0)
    assert cpu_per_interaction(room) == pytest.approx(0.75)  # 24 CPU-s over 32 interactions
    assert cpu_wait(room) == pytest.approx(3.0)  # 8 users x 0.75 CPU-s / 2 cores
    assert cpu_wait(room, think=1.0) == pytest.approx(2.0)
    assert cpu_wait(room, think=5.0) == 0.0
    assert server_per_interaction(room) == pytest.approx(0.2)  # 6.4 CPU-s of its own / 32
    assert server_wait(room) == pytest.approx(1.6)  # 8 users x 0.2 s on one thread
    assert server_wait(room, think=1.0) == pytest.approx(0.6)
    assert server_wait(room, think=2.0) == 0.0
    first, second = ([draw() for _ in range(50)] for draw in (pauses(2.0, 0), pauses(2.0, 1)))
    assert all(1.0 <= v <= 3.0 for v in first + second) and first != second
    assert pauses(2.0, 0)() == first[0]  # the same user in every run
    lines = verdicts({1: room, 8: {**room, "page_s": 6.0}}, None, think=2.0)
    assert "PASS 1 session(s) pausing 2 s: page 2.00 s median (goal 2 s)" in lines
    assert "FAIL 8 session(s) pausing 2 s: page 6.00 s median (goal 5 s)" in lines
