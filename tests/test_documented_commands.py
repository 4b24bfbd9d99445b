"""Every shell command the README and the docs show runs as written (issue 49).

:data:`PLANS` says, for each documented command (:func:`~tests.support.doc_commands.
documented_commands`), how the suite runs it: :class:`Run` runs it as written (in a scratch
folder that has the checkout's ``data/``, or in the checkout), a benchmark with its smallest
sizes appended; :class:`Serve` starts a long-running command and checks that its page answers;
:class:`Listed` is a line the suite cannot run, with the reason and where its work is tested.
A command documented without a plan, or a plan for a command no longer documented, fails
:func:`test_every_documented_command_has_a_plan`; a command that fails, fails its test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from harness.server import serving
from tests.support.doc_commands import ROOT, documented_commands, split_env

SCRATCH = "scratch"
"""A folder of the test's own, holding a link to the checkout's ``data/``: where the
``workbench`` lines run (their ``runs/`` folders land there, one line's output the next one's
input, in the documents' order)."""


@dataclass(frozen=True)
class Run:
    """Run as written (``cwd``: :data:`SCRATCH` or the checkout); ``extra`` flags appended
    before any redirection (a benchmark's smallest sizes); ``swap``: substitutions, each with
    its reason in ``why``; ``out``: text the output must hold."""

    cwd: str = SCRATCH
    extra: str = ""
    swap: tuple[tuple[str, str], ...] = ()
    why: str = ""
    out: str = ""


@dataclass(frozen=True)
class Serve:
    """A long-running command: started as written, it must answer ``url`` (then it is ended)."""

    url: str
    why: str = ""


@dataclass(frozen=True)
class Listed:
    """A line the suite does not run, and why (where its work is tested instead)."""

    why: str


DASHBOARD = "http://127.0.0.1:5006/dashboard"
CHECKOUT = "checkout"

PLANS: dict[str, Run | Serve | Listed] = {
    "./dev dashboard": Serve(DASHBOARD),
    "./dev test": Listed("the command running this suite (CI's .ci/run calls it)"),
    './dev test -m "not spark and not ui"': Listed(
        "a subset of this suite: its tests run here, with the rest"
    ),
    "./dev docs": Listed(
        "tests/test_docs.py builds the same pages with the same sphinx-build -W; the notebooks "
        "it would execute run under nbmake in this suite"
    ),
    "panel serve apps/dashboard.py --address 127.0.0.1 --allow-websocket-origin 127.0.0.1:5006 "
    "--allow-websocket-origin localhost:5006 --setup workbench/app/server_setup.py "
    "--websocket-max-message-size 105906176 --check-unused-sessions 2000": Serve(DASHBOARD),
    "./dev lab": Serve("http://127.0.0.1:8888/lab"),
    "./dev reports": Listed(
        "executes all six notebooks (minutes): each runs under nbmake in this suite, and "
        "'./dev reports --out /tmp/r notebooks/02-partitions.ipynb' runs the reports command"
    ),
    "workbench spark prepare --source month --output runs/month": Run(out="events of 2 streams"),
    'workbench spark join --master "local[2]" --input runs/month --output runs/out --d 3000 '
    "--delta 0.8": Run(out="PTJoin: "),
    "./dev dashboard --master spark://127.0.0.1:7077 --shuffle-partitions 2": Serve(
        DASHBOARD,
        why="no master is started at 7077, so only the page is checked; "
        "tests/test_spark_faults.py runs the joins on a standalone cluster",
    ),
    "WORKBENCH_DATA_DIR=/data/intel ./dev dashboard": Serve(
        DASHBOARD, why="without the real readings file there: the page says so and serves"
    ),
    "./dev bench stime": Run(CHECKOUT, "--templates 20 --sample 10 --buckets 4", out="pairs/s"),
    "./dev bench ptjoin": Run(
        CHECKOUT, "--events 200 --naive-prefix 50 --templates 5", out="same pairs: yes"
    ),
    "./dev bench interval": Run(CHECKOUT, "--events 100", out="LazyWithLookup"),
    "./dev bench wjoin": Run(CHECKOUT, out="FEWJoin"),
    "./dev bench coalesce": Run(
        CHECKOUT,
        "--tuples 400 --grid-tuples 200 --cell-tuples 1500 --readings 2000 --memory-tuples 2000 "
        "--memory-window 500 --cps-days 0.25",
        out="eager",
    ),
    "./dev bench month": Run(CHECKOUT, "--prefix 2000", out="pairs"),
    "./dev bench wjoin --paper-only": Run(CHECKOUT, out="FEW"),
    "./dev bench wjoin --paper-only --scale paper": Listed(
        "the papers' sizes take about 15 min of CPU (an hour on the shared cores); the line "
        "without --scale runs the same experiments at the suite's sizes"
    ),
    "./dev bench wjoin --paper-only --json": Run(CHECKOUT, out='"benchmark": "wjoin"'),
    "./dev reports --paper": Listed(
        "every notebook at the papers' sizes (03 and 04 alone about 25 CPU minutes, "
        "docs/notebooks.md); each notebook runs at the suite's sizes under nbmake, and the "
        "reports command runs in the line above"
    ),
    "./dev bench spark": Listed(
        "minutes of Spark jobs at its sizes: benchmarks/tests/test_spark_bench.py runs its "
        "races on the suite's session, benchmarks/tests/test_benchmarks.py its options"
    ),
    "./dev bench live": Listed(
        "a live replay of minutes: tests/test_spark_live.py runs bench live's record mapping "
        "and profile on the suite's session"
    ),
    "./dev bench dashboard": Listed(
        "minutes of dashboard interactions: tests/test_dashboard_ui.py drives the same tabs"
    ),
    "./dev bench room": Listed(
        "rooms of browsers for minutes: benchmarks/tests/test_room_protocol.py and "
        "benchmarks/tests/test_room_browsers.py run small rooms"
    ),
    "./dev bench soak": Listed(
        "20 minutes by design: benchmarks/tests/test_spark_soak.py runs a short soak"
    ),
    "./dev bench ptjoin --json > ptjoin.json": Run(
        CHECKOUT, "--events 200 --naive-prefix 50 --templates 5"
    ),
    "./dev example4": Run(CHECKOUT, out="208.59"),
    "./dev bench NAME [--json]": Listed(
        "a template: each NAME is one of docs/benchmarks.md's lines, each with its own plan"
    ),
    "./dev setup": Run(CHECKOUT),
    "./dev lab --no-browser --port 8899": Serve("http://127.0.0.1:8899/lab"),
    "./dev reports --out /tmp/r notebooks/02-partitions.ipynb": Run(
        CHECKOUT, out="02-partitions.html"
    ),
    "workbench reports path/to/notebooks": Run(
        swap=(("path/to/notebooks", "data/notebooks"),),
        why="a folder of one small notebook for the docs' placeholder: the command and its "
        "kernel are the point (the checkout's notebooks run under nbmake, test_reports.py "
        "reports 01 and the line above 02)",
        out="your-notebook.html",
    ),
    "workbench spark prepare --source csv --path data/sample-two-sensors.csv --output runs/mine "
    "--time-column time --sensor-column sensor": Run(out="313 events of 2 streams"),
    'workbench spark join --master "local[2]" --input runs/mine --output runs/mine-join '
    "--d 60000 --delta 0.8": Run(out="PTJoin: "),
    "workbench spark prepare --source intervals --output runs/iv": Run(out="events of 2 streams"),
    'workbench spark correlate --master "local[2]" --input runs/iv --output runs/iv-lazy '
    "--d 2.5 --ct 0.8 --algorithm lazy --max-pending 500 --max-wait 1000": Run(out="Lazy"),
    "workbench spark prepare --source tuples --output runs/tuples": Run(out="tuples of 3 streams"),
    'workbench spark wjoin --master "local[2]" --input runs/tuples --output runs/w '
    '--windows "0,20,35;20,0,12;35,12,0" --max-delay 1200,750,1800 --algorithm bew': Run(
        out="BEWJoin: "
    ),
    "workbench spark prepare --source motes --output runs/motes": Run(out="tuples of"),
    'workbench spark coalesce --master "local[2]" --input runs/motes --output runs/motes-60s '
    "--window 60000 --equivalence absolute --tolerance 0.1 --max-delay 60000 --scheme eager": Run(
        out="coalesced tuples"
    ),
    "workbench spark join --master spark://127.0.0.1:7077 ...": Listed(
        "'...' stands for a job's options; tests/test_spark_faults.py runs the joins on a "
        "standalone cluster it starts"
    ),
    "workbench spark join --master sc://127.0.0.1:15002 ...": Listed(
        "'...' stands for a job's options; tests/test_spark_live_drivers.py runs jobs through "
        "Spark Connect"
    ),
    "spark-submit --master yarn \"$(python -c 'import workbench.spark.submit as m; "
    "print(m.__file__)')\" join --input /shared/runs/month --output /shared/runs/month-join "
    "--d 3000 --delta 0.8": Run(
        swap=(("--master yarn", '--master "local[2]"'), ("/shared/runs/month", "runs/mine")),
        why="no YARN here: local[2], over the CSV's folder prepared above",
        out="PTJoin: ",
    ),
}


def test_every_documented_command_has_a_plan():
    """A new documented command needs a plan here; a plan's command must still be shown."""
    shown = {c.text: c for c in documented_commands()}
    missing = [f"{c.file}:{c.line}: {t}" for t, c in shown.items() if t not in PLANS]
    assert not missing, "documented commands without a plan in PLANS:\n" + "\n".join(missing)
    stale = [t for t in PLANS if t not in shown]
    assert not stale, f"plans for commands no longer documented: {stale}"
    for plan in PLANS.values():
        assert not isinstance(plan, Listed) or plan.why


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch folder: ``data/`` holds the checkout's data files and ``data/notebooks``
    one small notebook (a title, the paper's Example 4)."""
    folder = tmp_path_factory.mktemp("documented")
    data = folder / "data"
    data.mkdir()
    for path in (ROOT / "data").iterdir():
        if path.is_file():
            (data / path.name).symlink_to(path)
    (data / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Your notebook"),
        nbformat.v4.new_code_cell(
            "from workbench.paper_examples import example4\nprint(example4().report())"
        ),
    ]
    nbformat.write(nb, data / "notebooks" / "your-notebook.ipynb")
    return folder


def _shell(text: str, plan: Run) -> str:
    """The line to give bash: substitutions made, extra flags before any redirection."""
    for old, new in plan.swap:
        assert old in text, f"{old!r} is not in {text!r}"
        text = text.replace(old, new)
    if plan.extra:
        head, sep, tail = text.partition(" > ")
        text = f"{head} {plan.extra}{sep}{tail}"
    return text


def _environment() -> dict[str, str]:
    """This interpreter's environment with its folder first on PATH (``workbench``, ``panel``,
    ``python``, ``spark-submit``: the ones the checkout's ``.venv`` installed)."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


RUNS = [t for t, p in PLANS.items() if isinstance(p, Run)]
SERVES = [t for t, p in PLANS.items() if isinstance(p, Serve)]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("text", RUNS, ids=[t[:72] for t in RUNS])
def test_a_documented_command_runs_as_written(text: str, scratch: Path):
    plan = PLANS[text]
    assert isinstance(plan, Run)
    env, line = split_env(_shell(text, plan))
    cwd = ROOT if plan.cwd == CHECKOUT else scratch
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env={**_environment(), **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    said = f"{line}\nexit {done.returncode}\nstdout:\n{done.stdout[-3000:]}"
    said += f"\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert plan.out in done.stdout, said
    if " > " in line:  # the redirected figures: JSON, then removed from the checkout
        target = cwd / line.rsplit(" > ", 1)[1].strip()
        try:
            assert json.loads(target.read_text())["figures"], said
        finally:
            target.unlink(missing_ok=True)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("text", SERVES, ids=[t[:72] for t in SERVES])
def test_a_documented_server_starts_and_answers(text: str, tmp_path: Path):
    plan = PLANS[text]
    assert isinstance(plan, Serve)
    env, line = split_env(text)
    port = urlsplit(plan.url).port
    with socket.socket() as probe:  # another server there would answer in the command's place
        assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} is taken: stop its server"
    cmd = ["bash", "-c", f"cd {ROOT} && exec {line}"]
    with serving(tmp_path / "server.log", cmd, plan.url, {**_environment(), **env}) as server:
        assert server.poll() is None
