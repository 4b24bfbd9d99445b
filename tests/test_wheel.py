"""The project as a user installs it: a wheel, installed non-editable into a fresh virtual
environment and run outside the source checkout.

The fresh environment borrows the installed dependencies (numpy, pyspark, panel, ...) of the
running one through a path file, so the test needs no network; the workbench itself comes from
the wheel only (the running environment's editable install is a path hook that a borrowed
folder does not run).  ``environment.yml`` is checked against ``pyproject.toml`` here too.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_SHIPPED = ("*.egg-info", "build", "dist", "notebooks", "tests", "__pycache__", ".*")
HARNESS = ("pytest", "nbmake", "hypothesis", "playwright", "psutil", "ruff")
"""Test and benchmark tooling: the ``dev`` extra's, never what a user's install pulls."""
SERVED_ENV = {"WORKBENCH_SPARK_AT_START": "no", "NUMBA_DISABLE_JIT": "1"}
"""The served wheel's server starts without Spark in the background: its JVM and warm-up join
(about a minute of CPU, killed unfinished when the test ends) check nothing here.  Its tabs
warm up as before, on the kernels' python code: compiling them all from the fresh install
took about 55 of the test's 77 s, and that a kernel compiles and caches from the installed
package is checked once, by one kernel, in the test of the installed commands."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (an in-tree build/ could hold stale files)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(tmp)],
        check=True,
        capture_output=True,
    )
    (built,) = tmp.glob("uncertain_time_workbench-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed (not editable)."""
    env = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # the dependencies: the running environment's site-packages, after the fresh one's own
    Path(site, "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # and the data files their installs put beside them (kernel specs, nbconvert templates)
    (env / "share").symlink_to(Path(sys.prefix, "share"))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + ["--ignore-installed", str(wheel)],
        check=True,
        capture_output=True,
    )
    return env


def _run(venv: Path, *args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """A command of the fresh environment, run in ``cwd`` (outside the checkout)."""
    command = [str(venv / "bin" / args[0]), *args[1:]]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, **kwargs)


def test_the_wheel_holds_the_package_its_data_and_the_served_app(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in (
        "workbench/data/intel-lab/mote_locs.txt",
        "workbench/data/intel-lab/connectivity.txt",
        "workbench/app/dashboard.py",
        "workbench/app/server_setup.py",
        "workbench/concepts/live-join.md",
    ):
        assert shipped in names
    assert not [
        n
        for n in names
        if n.startswith(("tests/", "notebooks/", "apps/", "data/", "benchmarks/", "docs/"))
    ]
    assert not [n for n in names if n.startswith("workbench/") and "bench" in n.split("/")[-1]]


def test_the_wheel_pulls_no_test_or_benchmark_tooling(wheel):
    """A user's ``pip install`` brings what the workbench calls: pytest, nbmake, the browser
    driver and the load tools come only with the ``dev`` extra."""
    (metadata,) = [
        n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA")
    ]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Name: uncertain-time-workbench" in text and "License-Expression: Apache-2.0" in text
    required = [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    always = [r for r in required if "extra ==" not in r]
    assert always and not [r for r in always if re.split(r"[<>=\[ ;]", r)[0].lower() in HARNESS]


@pytest.mark.slow
def test_installed_from_the_wheel_it_runs_outside_the_checkout(venv, tmp_path):
    where = _run(venv, "python", "-c", "import workbench; print(workbench.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel's copy, not the checkout
    example = _run(venv, "workbench", "example4", cwd=tmp_path)
    assert example.returncode == 0, example.stderr
    assert "0.925" in example.stdout
    usage = _run(venv, "workbench", "--help", cwd=tmp_path)
    commands = re.search(r"\{([a-z0-9,]+)\}", usage.stdout).group(1).split(",")
    assert commands == ["example4", "reports", "spark", "dashboard"]
    for command in commands:  # every command the wheel installs starts (reports, dashboard: below)
        helped = _run(venv, "workbench", command, "--help", cwd=tmp_path)
        assert helped.returncode == 0 and "usage: workbench" in helped.stdout, helped.stderr
    prepared = _run(
        venv, "workbench", "spark", "prepare", "--source", "synthetic", "--output", "ev",
        cwd=tmp_path,
    )  # fmt: skip
    assert prepared.returncode == 0 and (tmp_path / "ev" / "streams.json").exists(), prepared
    code = (
        "from workbench.data import simulate_deployment\n"
        "from workbench.app.panes import concept\n"
        "readings = simulate_deployment(days=0.05)\n"
        "print(len(readings), readings.attrs['source'])\n"
        "print(concept('Live join')[:60])\n"
        "from workbench.config import settings\n"
        "from workbench.app.serve import app_file\n"
        "print(settings().cache_dir)\n"
        "print(app_file())\n"
        "from workbench.operators.band import BandJoin, example_params\n"
        "from workbench.kernels import compile_stats\n"
        "op = BandJoin(**example_params())\n"
        "op.push('A', 1, 0, t_det=100.0, arrival=101.0)\n"
        "print(op.push('B', 7, 0, t_det=150.0, arrival=152.0).ids.tolist())\n"
        "print(compile_stats()['compiled'])\n"
    )
    data = _run(venv, "python", "-c", code, cwd=tmp_path)
    assert data.returncode == 0, data.stderr
    rows, concept, data_dir, served, pairs, compiled = data.stdout.splitlines()[:6]
    assert pairs == "[[1, 7]]" and int(compiled) > 0  # the wheel's kernels compile and run
    assert Path(data_dir).name == "workbench"  # no checkout's data/: the user's cache folder
    assert Path(served).is_relative_to(venv) and served.endswith("workbench/app/dashboard.py")
    from workbench.data import simulate_deployment

    expected = simulate_deployment(days=0.05)
    assert rows == f"{len(expected)} {expected.attrs['source']}"
    assert concept and not concept.startswith("See the docs")  # the wheel's package data


@pytest.mark.slow
def test_installed_from_the_wheel_it_writes_a_report(venv, tmp_path):
    nowhere = _run(venv, "workbench", "reports", "--out", "r", cwd=tmp_path)
    assert nowhere.returncode == 2 and "no notebooks folder" in nowhere.stderr
    # a small notebook of the wheel's math and plots (the project's own are executed by nbmake
    # and by test_reports; here the point is the installed command and kernel)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Partitions from the wheel"),
        nbformat.v4.new_code_cell(
            "from workbench import interval_bounds\n"
            "from workbench.viz import setup_notebook\n"
            "import holoviews as hv\n"
            "setup_notebook()\n"
            "b = interval_bounds(0.0, 20.0, d=30.0, ct=0.8, pi=20.0)\n"
            "hv.VLines([b.lh, b.ll, b.rl, b.rh])"
        ),
        nbformat.v4.new_code_cell("print(f'LH = {b.lh:.3f}')"),
    ]
    nbformat.write(nb, tmp_path / "wheel.ipynb")
    done = _run(venv, "workbench", "reports", "--out", "r", ".", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r" / "wheel.html").read_text(encoding="utf-8")
    assert "Partitions from the wheel" in page and "LH = " in page and "Bokeh" in page
    assert (tmp_path / "r" / "index.html").exists()


@pytest.mark.slow
def test_installed_from_the_wheel_it_serves_the_dashboard(venv, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "server.txt"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(venv / "bin" / "workbench"), "dashboard", "--port", str(port)],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "WORKBENCH_WORK_DIR": str(tmp_path / "work"), **SERVED_ENV},
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                url = f"http://127.0.0.1:{port}/dashboard"
                with urllib.request.urlopen(url, timeout=60) as page:
                    assert page.status == 200
                    assert b"bokeh" in page.read()
                    # every tab was built and rendered from the installed package at start
                    assert "Dashboard tabs are warm" in log.read_text()
                    break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.5)  # polling the server's socket
        with urllib.request.urlopen(url, timeout=60) as page:  # another session: no new start
            assert page.status == 200
        assert log.read_text().count("Dashboard tabs are warm") == 1
        assert "Spark starts at the first Spark run" in log.read_text()  # the setting read
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def _requirement(text: str) -> tuple[str, str]:
    """(name with extras, version range) of a requirement line, spaces removed."""
    found = re.match(r"\s*([A-Za-z0-9_.\-]+(?:\[[^\]]+\])?)\s*(.*)", text.split("#")[0])
    assert found, text
    return found.group(1).lower(), found.group(2).replace(" ", "")


def test_environment_yml_mirrors_pyproject_toml():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = dict(map(_requirement, project["dependencies"]))
    for extra in project["optional-dependencies"].values():
        wanted.update(map(_requirement, extra))
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    listed = {}
    for line in text.split("\ndependencies:\n", 1)[1].splitlines():
        item = re.match(r"\s+- (?!pip:?$)(.+)", line)
        if item and not item.group(1).startswith(("-e", "python", "openjdk")):
            name, version = _requirement(item.group(1))
            listed[name] = version
    assert listed == wanted
