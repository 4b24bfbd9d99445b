"""What the tabs' "run on Spark" shares on the page side (:mod:`workbench.app.coalescing`,
:mod:`workbench.app.wjoin`): the job (a :class:`~workbench.spark.replay_job.ReplayJob`, made
when Spark is first chosen, so pyspark loads only then), a periodic callback that polls it and
brings its snapshots into the page, teardown when the browser session ends, the failure text,
and the Spark section: the status pane over the micro-batch charts.

The Bokeh server thread never waits on Spark: every Spark call runs in the job's worker thread
and :meth:`SparkRuns.poll` hands its results back on the server's thread.

>>> failure_text(RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited\\nstack..."))
'The Spark run failed (RuntimeError: [JAVA_GATEWAY_EXITED] Java gateway process exited).'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import holoviews as hv
import pandas as pd
import panel as pn
import param

from workbench.app.panes import plot
from workbench.viz.live import batch_spikes

if TYPE_CHECKING:
    from workbench.spark.replay_job import ReplayJob, Snapshot

__all__ = ["POLL_MS", "STARTING", "SparkRuns", "failure_text"]

POLL_MS = 1000
"""Period of the callback bringing the Spark run's snapshots into the page."""
STARTING = "Starting Spark (the first run launches Java: about half a minute)..."
"""What the page says while the first Spark run starts."""


def failure_text(exc: Exception) -> str:
    """What the page says of a failed Spark run: the error's kind and its first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"The Spark run failed ({type(exc).__name__}: {text[:400]})."


class SparkRuns(param.Parameterized):
    """A tab's run on Spark, page side (module docstring).  The tab names its job class
    (:meth:`_job_class`), its ``spark_pane`` (the status), whether it wants snapshots now
    (:meth:`_collecting`) and how it shows one (:meth:`_show_spark`)."""

    run_on = param.Selector(
        objects=["in-process", "Spark"],
        default="in-process",
        label="run on",
        doc="Where the tab's stream runs: in this process, or (also) on Spark.",
    )
    spark_message = param.String("", doc="What the Spark run did last, or why it failed.")
    spark_shown = param.Integer(0, doc="Snapshots of the Spark run shown so far.")
    spark_session = param.Callable(
        None,
        allow_None=True,
        doc="Makes the SparkSession of a run on Spark (None: the dashboard's shared session); "
        "tests pass their own.",
    )
    work_root = param.String(
        None, allow_None=True, doc="Where a Spark run's temporary folder goes (system default)."
    )

    spark_unit = "records"
    """What the tab replays, as its micro-batch chart names them."""
    spark_pane: pn.viewable.Viewable

    def __init__(self, **params: object) -> None:
        self._job: ReplayJob | None = None
        self._spark_callback: pn.io.callbacks.PeriodicCallback | None = None
        self.snapshot: Snapshot | None = None
        """The Spark run's latest snapshot (None before one)."""
        super().__init__(**params)
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _context: self.close())

    def _job_class(self) -> type[ReplayJob]:
        """The tab's job class (imported here: pyspark loads when Spark is first chosen)."""
        raise NotImplementedError

    def _collecting(self) -> bool:
        """Whether the page wants the run's snapshots now."""
        raise NotImplementedError

    def _show_spark(self, snap: Snapshot) -> None:
        """Show a snapshot of the run."""
        raise NotImplementedError

    def _spark_fail(self, exc: Exception) -> None:
        """A failure of the Spark run (it is torn down): the tab says why."""
        raise NotImplementedError

    def _spark_begin(self, message: str, **params: object) -> ReplayJob:
        """Ready a (re)start: the job (made at the first use), no snapshot, ``message`` (and
        ``params``) set, the page polling the run."""
        if self._job is None:
            self._job = self._job_class()(self._spark_fail, self.spark_session, self.work_root)
        self.snapshot = None
        self.param.update(spark_message=message, **params)
        if self._spark_callback is None:
            self._spark_callback = pn.state.add_periodic_callback(self.poll, period=POLL_MS)
        return self._job

    def _spark_end(self, **params: object) -> None:
        """Back in process: tear the run down (in the worker, removing its folder), forget its
        snapshot, clear the message and set ``params``."""
        if self._job is not None:
            self._job.submit(self._job.teardown)
        self.snapshot = None
        self.param.update(spark_message="", **params)

    def _stop_polling(self) -> None:
        if self._spark_callback is not None:
            self._spark_callback.stop()
            self._spark_callback = None

    def poll(self) -> None:
        """Bring what the Spark run finished into the page; ask for the next snapshot."""
        if self._job is None:
            return
        self._job.poll()
        if self._job.stage and self.spark_message != self._job.stage:
            self.spark_message = self._job.stage  # the run waits for a free Spark slot
        if self._collecting():
            self._job.collect(self._show_spark)

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the queued Spark work, then :meth:`poll` (scripts and tests; never on the
        server thread)."""
        if self._job is not None:
            self._job.settle(timeout)
        self.poll()

    def close(self, wait: bool = False) -> None:
        """Stop polling and the Spark run (``wait`` for it): the browser session ended."""
        self._stop_polling()
        if self._job is not None:
            self._job.close(wait)
            self._job = None

    def _spark_metrics(self) -> pd.DataFrame:
        if self.snapshot is not None:
            return self.snapshot.metrics
        return pd.DataFrame({"elapsed_s": [], "input_rows": [], "batch_ms": []}, dtype=float)

    @param.depends("spark_shown")
    def spark_rows_view(self) -> hv.Spikes:
        """Records the Spark query read per micro-batch, over time since Spark was chosen."""
        title = f"{self.spark_unit} read per micro-batch"
        return batch_spikes(self._spark_metrics(), "input_rows", title, "#1f77b4")

    @param.depends("spark_shown")
    def spark_duration_view(self) -> hv.Spikes:
        """How long each micro-batch took."""
        return batch_spikes(
            self._spark_metrics(), "batch_ms", "micro-batch duration", "#ff7f0e", duration=True
        )

    def spark_section(self) -> pn.Column:
        """The ``spark_pane`` and the micro-batch charts, shown while ``run_on`` is Spark and
        made when Spark is first chosen: an in-process page holds no Spark plot."""
        section = pn.Column(visible=False, sizing_mode="stretch_width")

        def show(*_: object) -> None:
            on = self.run_on == "Spark"
            if on and not section.objects:
                views = (self.spark_rows_view, self.spark_duration_view)
                charts = [
                    plot(hv.DynamicMap(v), sizing_mode="stretch_width", height=220) for v in views
                ]
                section.objects = [self.spark_pane, pn.Row(*charts, sizing_mode="stretch_width")]
            section.visible = on

        self.param.watch(show, "run_on")
        show()
        return section
