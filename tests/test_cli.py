"""The console entry point and the import boundary of the core."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.cli import main
from workbench.experiments import ENGINES


def test_example4_prints_the_papers_figures(capsys):
    assert main(["example4"]) == 0
    out = capsys.readouterr().out
    assert "prob(H3 - 90 >= H2)  = 0.925" in out
    assert "prob(H3 - 100 >= H2) = 0.769" in out
    assert "stime(H3, H2, 0.8)   = 208.59" in out


def test_bench_stime_prints_figures(capsys):
    assert main(["bench", "stime", "--templates", "20", "--sample", "10", "--buckets", "4"]) == 0
    out = capsys.readouterr().out
    assert "20 x 20 random templates" in out and "pairs/s" in out and "speed-up" in out
    err = float(out.rsplit("on the sample:", 1)[1].split()[0])
    assert err < 1e-6


def test_bench_ptjoin_and_interval_print_their_tables(capsys):
    assert (
        main(["bench", "ptjoin", "--events", "200", "--naive-prefix", "50", "--templates", "5"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("PTJoin: 200 events per stream, 5 templates x 10 buckets")
    lines = out.splitlines()
    names = [f"{m} · {e}" for m in ("naive", "loose", "tight", "band floor") for e in ENGINES]
    assert [line[2:24].strip() for line in lines[5:13]] == names
    assert "compiled / python events/s: naive" in out and "same pairs: yes" in out
    assert main(["bench", "interval", "--events", "100", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "100 events per stream" in out and "(seed 1)" in out
    assert out.count("mean response ms") == 2 and out.count("LazyWithLookup · compiled") == 2


def test_bench_json_holds_the_printed_figures(capsys):
    args = ["bench", "stime", "--templates", "8", "--sample", "4", "--buckets", "3"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["benchmark"] == "stime" and doc["figures"]["pairs"] == 64
    assert doc["figures"]["setting"]["templates"] == 8 and doc["machine"]["numba"]


def test_console_script_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "example4"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "208.59" in out


def test_import_workbench_loads_no_framework():
    code = (
        "import sys, workbench, workbench.cli, workbench.bench, workbench.experiments, "
        "workbench.paper_examples; "
        "bad = [m for m in ('pyspark', 'panel', 'holoviews', 'bokeh') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_bench_spark_options_are_the_benchmarks_keyword_arguments(monkeypatch):
    """``--master`` repeats (no comma lists: ``spark://h1:p1,h2:p2`` is one HA master); options
    left out stay out, so ``bench_spark``'s defaults apply."""
    from workbench import cli
    from workbench.bench import BenchReport

    calls = []

    def fake(**options):
        calls.append(options)
        return BenchReport("spark", ("ran",), {})

    monkeypatch.setattr(cli, "_benchmark", lambda name: fake)
    argv = ["bench", "spark", "--master", "local[1]", "--master", "standalone"]
    assert main([*argv, "--events", "500", "--rounds", "1", "--seed", "3"]) == 0
    assert main(["bench", "spark", "--master", "spark://h1:7077,h2:7077"]) == 0
    assert main(["bench", "spark"]) == 0
    assert calls == [
        {"masters": ["local[1]", "standalone"], "events_per_stream": 500, "rounds": 1, "seed": 3},
        {"masters": ["spark://h1:7077,h2:7077"]},
        {},
    ]


def test_bench_spark_accepts_every_option_it_parses():
    """Each parsed option is a parameter of ``bench_spark`` or a workload field (without
    running Spark)."""
    import inspect

    from workbench.cli import _parser
    from workbench.experiments import Example5Workload
    from workbench.spark.bench import EVENTS_PER_STREAM, MASTERS, bench_spark

    argv = ["bench", "spark", "--master", "local[1]", "--events", "10", "--rounds", "1"]
    parsed = vars(_parser().parse_args([*argv, "--seed", "2"]))
    options = {k: v for k, v in parsed.items() if k not in ("command", "benchmark", "as_json")}
    named = set(inspect.signature(bench_spark).parameters) - {"streams"}
    assert {"masters", "rounds"} <= named
    workload = Example5Workload(**{k: v for k, v in options.items() if k not in named})
    assert (workload.events_per_stream, workload.seed) == (10, 2)
    assert MASTERS == ("local[1]", "local[2]", "standalone") and EVENTS_PER_STREAM == 20_000


@pytest.mark.parametrize(
    ("argv", "module", "function"),
    [
        (
            ["bench", "soak", "--minutes", "1", "--speed", "60", "--master", "local[1]"]
            + ["--sample-seconds", "5", "--out", "x"],
            "workbench.spark.soak",
            "bench_soak",
        ),
        (["bench", "room", "--sessions", "2", "--moves", "1"], "workbench.app.room", "bench_room"),
    ],
)
def test_bench_soak_and_room_options_are_their_keyword_arguments(argv, module, function):
    """Every option of ``bench soak`` and ``bench room`` names a parameter of its function."""
    import importlib
    import inspect

    from workbench.cli import _benchmark, _parser

    parsed = vars(_parser().parse_args(argv))
    options = {k for k in parsed if k not in ("command", "benchmark", "as_json")}
    bench = getattr(importlib.import_module(module), function)
    assert _benchmark(argv[1]) is bench
    assert options and options <= set(inspect.signature(bench).parameters)
