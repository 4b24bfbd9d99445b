"""The console entry point and the import boundary of the core."""

from __future__ import annotations

import json
import subprocess
import sys

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
