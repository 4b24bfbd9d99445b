"""The console entry point and the import boundary of the core."""

from __future__ import annotations

import subprocess
import sys

from workbench.cli import main


def test_example4_prints_the_papers_figures(capsys):
    assert main(["example4"]) == 0
    out = capsys.readouterr().out
    assert "prob(H3 - 90 >= H2)  = 0.925" in out
    assert "prob(H3 - 100 >= H2) = 0.769" in out
    assert "stime(H3, H2, 0.8)   = 208.59" in out


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
        "import sys, workbench, workbench.cli, workbench.experiments, "
        "workbench.paper_examples; "
        "bad = [m for m in ('pyspark', 'panel', 'holoviews', 'bokeh') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
