"""The tabs' models without a page, and the one Spark control every Spark tab shares (issue 36):
the models compute with no Panel object made, the control's run state moves idle -> starting
-> running -> finished / failed / idle as its job reports, and the tabs' controls on it."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from workbench.app.coalescing_model import ATOMIC_INPUTS, MEASURED_CELLS, CoalescingModel
from workbench.app.coalescing_queries import QUERIES, ExampleQueries
from workbench.app.coalescing_spark import RETRY, CoalescingSpark
from workbench.app.live_run import LiveRun
from workbench.app.live_settings import LiveJoinSettings
from workbench.app.race_model import TimingRaceModel
from workbench.app.spark_control import RUN_STATES, SparkControl
from workbench.app.wjoin_model import WJoinModel
from workbench.app.wjoin_spark import WJoinSpark
from workbench.coalesce.cost import AtomicCosts, CostGrid

APP = Path(__file__).resolve().parents[1] / "workbench" / "app"


class FakeJob:
    """A job whose queued work runs at :meth:`poll`, as the worker's results come in."""

    def __init__(self, on_failure: Callable[[Exception], None], *_: object) -> None:
        self.on_failure = on_failure
        self.stage = ""
        self.queue: list[tuple[Callable, Callable | None]] = []
        self.snapshots: list[object] = []
        self.torn_down = 0
        self.closed = False
        self.paced: list[tuple[float, bool]] = []

    def submit(self, action: Callable, then: Callable | None = None) -> None:
        self.queue.append((action, then))

    def poll(self) -> None:
        queue, self.queue = self.queue, []
        for action, then in queue:
            try:
                out = action()
            except Exception as exc:  # noqa: BLE001 (as the worker hands failures on)
                self.on_failure(exc)
                return
            if then is not None:
                then(out)

    def collect(self, then: Callable) -> None:
        if self.snapshots:
            then(self.snapshots.pop(0))

    def settle(self, timeout: float = 120.0) -> None:
        self.poll()

    def teardown(self) -> None:
        self.torn_down += 1

    def close(self, wait: bool = False) -> None:
        self.closed = True

    # what the tabs' jobs offer besides
    def start(self, *_: object) -> str:
        return "Running on Spark (fake)."

    def reconfigure(self, settings: object) -> SimpleNamespace:
        return SimpleNamespace(message="Kept the checkpoint (fake).")

    def pace(self, rate: float, paused: bool) -> None:
        self.paced.append((rate, paused))


class FakeControl(SparkControl):
    def _make_job(self) -> FakeJob:
        return FakeJob(self.fail)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize(
    "module", ["coalescing_model.py", "coalescing_queries.py", "wjoin_model.py", "race_model.py"]
)
def test_the_models_import_no_panel(module):
    assert not {"panel", "holoviews"} & _imports(APP / module)


@pytest.mark.parametrize("module", ["ptjoin_model.py", "templates_model.py", "controls.py"])
def test_the_explorer_models_import_no_panel_bokeh_or_plots(module):
    """The Satisfaction probability and Templates tabs' models compute without a page: no
    Panel, HoloViews or Bokeh, nothing of workbench.viz (their views draw)."""
    tree = ast.parse((APP / module).read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    drawing = ("panel", "holoviews", "bokeh", "workbench.viz", "workbench.app.panes")
    assert not [name for name in names if name.startswith(drawing)]


def test_the_coalescing_model_streams_and_reconfigures_without_a_page():
    """Eager and lazy extents store the same window (Sections 3-4); a reconfiguration replays
    the latest readings; the readout and the selection follow (Sections 5-7)."""
    model = CoalescingModel(motes=[1, 2])
    position = model.position
    assert position > 0 and model.step(50) == 50 and model.position == position + 50
    assert sum(c.count for c in model.eager.view()) == len(model.lazy.raw())
    model.scheme = "lazy"
    assert all(c.count == 1 for c in model.extent())  # lazy stores raw tuples
    model.window_kind = "tuples"
    assert model.position == position + 50 and len(model.lazy) <= model.window_tuples
    assert f"{model.position:,} of" in model.readout()
    kib = model.eager.allocated_bytes() / 1024  # what the process allocates (Section 3.2)
    assert f"| bytes allocated (per reading) | {kib:,.0f} KiB (" in model.readout()
    eager, lazy = model.surfaces()
    assert eager.shape == lazy.shape == (21, 21) and not eager.flags.writeable
    assert len(model.selection()) == 4
    model.running = True
    model.step(10**6)
    assert not model.running  # the end of the readings stops the stream


def test_the_coalescing_atomic_costs_are_editable_or_measured():
    """Table 4's atomic costs feed the surfaces and the selection: custom values (the
    paper-like ones at first) change them; "measured" uses costs measured per (cp, oop)."""
    model = CoalescingModel(motes=[1, 2])
    model.step(600)  # past a re-evaluation: the queries have estimates
    paper_like = model.surfaces()
    assert model.atomic() == AtomicCosts(*(getattr(model, n) for n in ATOMIC_INPUTS))
    model.c_split = 50.0  # splits dear: eager costs more where tuples arrive out of order
    eager, lazy = model.surfaces()
    assert (eager[1:, :-1] > paper_like[0][1:, :-1]).all()  # oop > 0, cp < 1: splits
    assert np.array_equal(eager[0], paper_like[0][0])  # in order: no split
    assert np.array_equal(lazy, paper_like[1])
    model.c_read = model.c_coalesce = 0.0
    model.w_update = 100.0  # lazy scans are free and updates count most: nothing eager
    assert (model.selection()["optimal"] == "lazy").all()
    model.atomic_source = "measured"
    measured = model.atomic()
    assert isinstance(measured, CostGrid) and measured.cp == MEASURED_CELLS["grid"]
    costs = vars(measured(0.3, 0.6))
    assert all(np.isfinite(v) and v >= 0 for v in costs.values()) and costs["insert"] > 0
    eager, lazy = model.surfaces()
    assert eager.shape == (21, 21) and np.isfinite(eager).all() and np.isfinite(lazy).all()
    assert set(model.selection()["optimal"]) <= {"eager", "lazy"}


def test_the_papers_example_queries_run_without_a_page():
    """Coalescing paper, Section 1, Example 2 with the paper's window (a day, sliding by the
    hour): the day's warmest motes, longest first; Example 1 takes back its own window."""
    queries = ExampleQueries(query=QUERIES[1], threshold=23.0)
    assert (queries.window_min, queries.slide_min) == (1440.0, 60.0)
    asyncio.run(queries.run_async())
    minutes = queries.answer["minutes"].tolist()
    assert minutes and minutes == sorted(minutes, reverse=True) and not queries.running
    assert queries.message.startswith("25 evaluations over the day, eager coalescing")
    queries.query = QUERIES[0]
    assert (queries.window_min, queries.slide_min) == (60.0, 10.0)


def test_the_wjoin_model_runs_without_a_page():
    """BEW and FEW on the same tuples (W-join Sections 3-5), blocking and in a thread."""
    model = WJoinModel(hours=1.0)
    bew, few = model.run()
    assert bew.results == few.results > 0 and model.message.startswith(f"{bew.tuples:,} tuples")
    assert model.measures()["algorithm"].tolist() == ["BEW", "FEW"]
    model.results = []
    asyncio.run(model.run_async())
    assert len(model.results) == 2 and not model.running
    model.algorithms = []
    assert model.compute() == ([], "Cannot run: choose BEW, FEW or both")


def test_the_wjoin_model_switches_to_the_papers_mechanism():
    """W-join Sections 3.1-3.2: the paper's mechanism finds the same results; the measures
    show the tuples its search visited outside the period and the peak of tuples buffered,
    and a move of the mechanism makes a run stale."""
    model = WJoinModel(hours=1.0, motes=[1, 2, 3, 4])
    fast = model.run()
    assert {"visited outside", "peak buffered"} <= set(model.measures().columns)
    model.mechanism = "paper"
    assert model.changed_since_run() == ["Mechanism"]
    ops = model.operators(model.rows())
    assert {op.mechanism for op in ops.values()} == {"paper"}
    paper = model.run()
    assert [r.results for r in paper] == [r.results for r in fast]
    by = {r.algorithm: r for r in paper}
    assert by["BEW"].visited_outside > 0 and by["BEW"].peak_buffered >= fast[0].peak_buffered
    frame = model.measures()
    assert frame["visited outside"].tolist() == [r.visited_outside for r in paper]
    assert frame["peak buffered"].tolist() == [r.peak_buffered for r in paper]


@pytest.mark.parametrize(("bew", "few"), [("modified", "gca"), ("gca", "lca"), ("lca", "gca")])
def test_the_wjoin_model_runs_a_non_uniform_clique_by_each_strategy(bew, few):
    """W-join Section 5.1: GCA, LCA and modified BEW over a clique of distinct windows find
    the brute force's results."""
    from workbench.operators import brute_force_wjoin

    model = WJoinModel(hours=2.0, graph="non-uniform clique", bew_strategy=bew, few_strategy=few)
    rows = model.rows()
    ops = model.operators(rows)
    assert (ops["BEW"].strategy, ops["FEW"].strategy) == (bew, few)
    w = model.constraints().windows
    assert w[0, 1] == w[1, 2] < w[0, 2]  # the windows grow with the streams apart
    groups = [rows[rows["stream"] == s] for s in range(3)]
    expected = brute_force_wjoin(
        [g["value"].tolist() for g in groups],
        [g["ts"].tolist() for g in groups],
        [g["id"].tolist() for g in groups],
        model.constraints(),
    )
    assert [r.results for r in model.run()] == [len(expected)] * 2 and expected


def test_the_timing_race_runs_and_steers_without_a_page():
    """The eight timing joins on the deployment's interval replay agree pair for pair while
    d, delta and the lazy thresholds move mid-run (interval paper Section 4.2, PTJoin
    Section 3); other racers start a new race."""
    model = TimingRaceModel(speed=20_000.0)
    assert model.race.pushed == 0 and "press **Start**" in model.message
    model.step()
    assert model.race.pushed == 0  # not running: a tick does nothing
    model.running = True
    model.step()
    model.param.update(d=model.d * 1.5, delta=0.6, max_pending=50, max_wait_s=30.0)
    while model.running:
        model.step()
    table = model.table
    assert table["same_pairs"].all() and (table["waiting"] == 0).all()
    assert model.message.endswith("(finished): all algorithms found the same pairs.")
    assert table.loc["Lazy", "response_ms"] > table.loc["Eager", "response_ms"]
    assert list(model.history.columns) == ["clock_s", *table.index]
    model.racers = ["Eager", "PTJoin tight"]
    assert list(model.table.index) == ["Eager", "PTJoin tight"] and model.race.pushed == 0


def test_the_control_moves_through_its_states():
    control = FakeControl()
    assert control.state == "idle" and RUN_STATES[0] == "idle" and not control.busy
    job = control.begin("Starting...")
    assert control.state == "starting" and control.busy and control.message == "Starting..."
    job.stage = "waiting for a free Spark slot"
    control.poll()
    assert control.state == "starting" and control.message == job.stage  # why it waits
    job.submit(lambda: "Running.", control.started)
    job.snapshots.append(SimpleNamespace(name="first"))
    control.poll()
    assert control.state == "running" and control.message == "Running."
    assert control.snapshot.name == "first" and control.shown == 1  # collected while running
    control.finish("Done.")
    assert control.state == "finished" and not control.busy and control.message == "Done."
    control.poll()
    assert job.torn_down == 1  # a finished run is torn down
    control.begin("Again...")
    job.submit(lambda: 1 / 0)
    control.poll()
    assert control.state == "failed" and control.message.startswith(
        "The Spark run failed (ZeroDivisionError: division by zero)"
    )
    control.end()
    assert control.state == "idle" and control.message == "" and control.snapshot is None
    control.close()
    assert job.closed and control.job is None


def test_the_coalescing_control_follows_the_model():
    model = CoalescingModel(motes=[1, 2])
    spark = CoalescingSpark(model=model)
    spark._job_class = lambda: FakeJob
    spark.run_on = "Spark"
    assert spark.state == "starting" and model.running
    assert spark.job.paced == [(spark.rate(), False)]  # running: the replay is not held
    spark.poll()
    assert spark.state == "running" and spark.message == "Running on Spark (fake)."
    model.equivalence = "equal"
    assert spark.message == "Applying the change on Spark..."
    spark.poll()
    assert spark.state == "running" and spark.message == "Kept the checkpoint (fake)."
    model.speed = 300
    assert spark.job.paced[-1] == (600.0, False)
    spark.fail(RuntimeError("no Java"))
    assert spark.state == "failed" and spark.message.endswith(RETRY) and not model.running
    spark.run_on = "in-process"
    assert spark.state == "idle" and spark.message == "" and spark.readout() == ""
    spark.close()


def test_the_wjoin_control_finishes_once_caught_up():
    model = WJoinModel(hours=1.0)
    spark = WJoinSpark(model=model, run_on="Spark")
    spark._job_class = lambda: FakeJob
    spark.run()
    assert spark.state == "starting" and model.running
    spark.poll()  # the in-process run, then the start
    assert spark.state == "running" and len(model.results) == 2 and not model.running
    results = np.array([[1, 2]])
    snap = SimpleNamespace(
        caught_up=True,
        agrees=True,
        results=results,
        expected=results,
        emitted_at=np.array([5.0]),
        read=2,
        replayed=2,
        total=2,
        metrics=pd.DataFrame({"elapsed_s": [], "input_rows": [], "batch_ms": []}),
    )
    spark.job.snapshots.append(snap)
    spark.poll()
    assert spark.state == "finished" and "which equal the in-process BEW-join's 1" in spark.message
    assert "**same results as BEW: yes**" in spark.readout()
    model.motes = [1]
    spark.run()
    assert spark.state == "failed" and "choose 2 to 6 motes" in spark.message
    spark.close()


@pytest.mark.parametrize(
    ("state", "paused", "phase"),
    [
        ("idle", False, "stopped"),
        ("failed", False, "stopped"),
        ("starting", False, "starting"),
        ("running", False, "running"),
        ("running", True, "paused"),
        ("stopping", False, "stopping"),
        ("finished", False, "finished"),
    ],
)
def test_the_live_run_says_its_state_in_the_pages_words(state, paused, phase):
    run = LiveRun(model=LiveJoinSettings(paused=paused), state=state)
    assert run.phase() == phase
