"""One shape for a tab's run on Spark, page side: the Coalescing, Multi-way join and Live join
tabs each keep their run in a :class:`SparkControl`, so a run's state is said one way
(:data:`RunState`) and its last words (or why it failed) in ``message``.

The control owns the tab's job (a :class:`~workbench.app.runs.replay.ReplayJob`, or the live
join's :class:`~workbench.app.runs.live.LiveSession`: both run every Spark call in a worker
thread), made at the first start so pyspark loads only then; a periodic callback polls it and
hands its results and snapshots back on the server's thread; the run is torn down when the
browser session ends.  The Bokeh server thread never waits on Spark.

>>> failure_text(RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited\\nstack..."))
'The Spark run failed (RuntimeError: [JAVA_GATEWAY_EXITED] Java gateway process exited).'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

import pandas as pd
import panel as pn
import param

if TYPE_CHECKING:
    from workbench.app.runs.replay import ReplayJob

__all__ = [
    "POLL_MS",
    "RUN_STATES",
    "STARTING",
    "Job",
    "ReplayControl",
    "RunState",
    "SparkControl",
    "failure_text",
]

RunState = Literal["idle", "starting", "running", "stopping", "finished", "failed"]
"""Where a run on Spark is: ``idle`` (none, or torn down), ``starting`` (Java, the data, the
query), ``running`` (its replay may be held), ``stopping``, ``finished`` (it did all it had to,
the page may start another) or ``failed`` (torn down; ``message`` says why)."""
RUN_STATES: tuple[RunState, ...] = get_args(RunState)
POLL_MS = 1000
"""Period of the callback bringing the run's results and snapshots into the page."""
STARTING = "Starting Spark (the first run launches Java: about half a minute)..."
"""What the page says while the first Spark run starts."""


def failure_text(exc: Exception) -> str:
    """What the page says of a failed Spark run: the error's kind and its first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"The Spark run failed ({type(exc).__name__}: {text[:400]})."


class Job(Protocol):
    """What a control drives: a :class:`~workbench.app.runs.worker.Worker` running the tab's
    Spark calls in order, which says why a start waits (``stage``) and samples snapshots."""

    stage: str

    def submit(self, action: Callable[[], Any], then: Callable[[Any], None] | None = None) -> None:
        """Queue ``action`` in the worker; ``then`` gets its result on :meth:`poll`."""

    def poll(self) -> None:
        """Hand what finished to its ``then``, on the calling thread."""

    def collect(self, then: Callable[[Any], None]) -> None:
        """Queue a snapshot of the run for ``then`` (unless one is on its way)."""

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the queued work (scripts and tests)."""

    def teardown(self) -> None:
        """Stop the run and remove its folder (queue it: it calls Spark)."""

    def close(self, wait: bool = False) -> None:
        """Stop the run and the worker (``wait`` for them)."""


class SparkControl(param.Parameterized):
    """A tab's run on Spark (module docstring): :meth:`begin` a start, :meth:`poll` it,
    :meth:`fail` or :meth:`end` it.  A tab names its job (:meth:`_make_job`) and what a
    snapshot changes (:meth:`_show`)."""

    state = param.Selector(objects=list(RUN_STATES), default="idle", doc="Where the run is.")
    message = param.String("", doc="What the run did last, or (failed) why it failed.")
    shown = param.Integer(0, doc="Snapshots of the run shown so far.")

    def __init__(self, **params: object) -> None:
        self.job: Job | None = None
        """What runs the Spark calls (made at the first start, None before)."""
        self.snapshot: Any = None
        """The run's latest snapshot (None before one)."""
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        super().__init__(**params)
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _context: self.close())

    @property
    def busy(self) -> bool:
        """Whether a run is under way (a new one cannot start)."""
        return self.state in ("starting", "running", "stopping")

    def _make_job(self) -> Job:
        """The tab's job (imported here: pyspark loads when Spark is first used)."""
        raise NotImplementedError

    def _show(self, snap: Any) -> None:
        """Show a snapshot of the run (the tabs add what it changes)."""
        self.snapshot = snap
        self.shown += 1

    def failure(self, exc: Exception) -> str:
        """What the page says of ``exc``, a failure of the run."""
        return failure_text(exc)

    def fail(self, exc: Exception) -> None:
        """A failure of the run (the job tore it down): say why (its first line)."""
        self.param.update(state="failed", message=self.failure(exc))

    def begin(self, message: str) -> Job:
        """Ready a (re)start: the job (made at the first use), no snapshot, ``starting`` with
        ``message``, the page polling the run."""
        if self.job is None:
            self.job = self._make_job()
        self.snapshot = None
        self.param.update(state="starting", message=message)
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.poll, period=POLL_MS)
        return self.job

    def started(self, message: str) -> None:
        """The run started (or applied a change): ``running``, saying ``message``."""
        self.param.update(state="running", message=message)

    def end(self) -> None:
        """Tear the run down (in the worker, removing its folder), forget its snapshot:
        ``idle``, nothing said."""
        if self.job is not None:
            self.job.submit(self.job.teardown)
        self.snapshot = None
        self.param.update(state="idle", message="")

    def finish(self, message: str) -> None:
        """The run did all it had to: ``finished``, saying ``message``; it is torn down."""
        self.param.update(state="finished", message=message)
        if self.job is not None:
            self.job.submit(self.job.teardown)

    def _staged(self, stage: str) -> None:
        """Say why a start waits (``stage``)."""
        if self.message != stage:
            self.message = stage

    def poll(self) -> None:
        """Bring what the job finished into the page; say why a start waits; ask for the next
        snapshot while running."""
        if self.job is None:
            return
        self.job.poll()
        if self.state == "starting" and self.job.stage:
            self._staged(self.job.stage)
        if self.state == "running":
            self.job.collect(self._show)

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the queued Spark work, then :meth:`poll` (scripts and tests; never on the
        server thread)."""
        if self.job is not None:
            self.job.settle(timeout)
        self.poll()

    def stop_polling(self) -> None:
        """Stop the callback polling the run."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def close(self, wait: bool = False) -> None:
        """Stop polling and the run (``wait`` for it): the browser session ended."""
        self.stop_polling()
        if self.job is not None:
            self.job.close(wait)
            self.job = None


class ReplayControl(SparkControl):
    """A tab's records replayed into its streaming query on Spark
    (:class:`~workbench.app.runs.replay.ReplayJob`), when the tab runs on Spark."""

    run_on = param.Selector(
        objects=["in-process", "Spark"],
        default="in-process",
        label="run on",
        doc="Where the tab's stream runs: in this process, or (also) on Spark.",
    )
    spark_session = param.Callable(
        None,
        allow_None=True,
        doc="Makes the SparkSession of a run on Spark (None: the dashboard's shared session); "
        "tests pass their own.",
    )
    work_root = param.String(
        None, allow_None=True, doc="Where a Spark run's temporary folder goes (system default)."
    )

    unit = "records"
    """What the tab replays, as its micro-batch charts name them."""

    def _job_class(self) -> type[ReplayJob]:
        """The tab's job class (imported here: pyspark loads when Spark is first chosen)."""
        raise NotImplementedError

    def _make_job(self) -> ReplayJob:
        return self._job_class()(self.fail, self.spark_session, self.work_root)

    def metrics(self) -> pd.DataFrame:
        """The run's micro-batches so far (elapsed_s, input_rows, batch_ms, ...)."""
        if self.snapshot is not None:
            return self.snapshot.metrics
        return pd.DataFrame({"elapsed_s": [], "input_rows": [], "batch_ms": []}, dtype=float)
