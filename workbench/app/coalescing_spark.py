"""The Coalescing tab's run on Spark: the chosen motes' readings, replayed in arrival order,
stream through the Spark coalescing queries (:class:`workbench.app.runs.coalesce.CoalesceJob`:
eager on a per-group stateful operator, lazy as a raw-tuple sink scanned on read; coalescing
paper, Sections 3-4).  A scheme, window or equivalence change then restarts the query from its
checkpoint or on a new one, as :func:`~workbench.spark.queries.coalesce_base.restart_kind` says, and
the run says which and why.  pyspark loads only when Spark is chosen.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import pandas as pd
import param

from workbench.app.coalescing_model import EXTENT_INPUTS, PERIOD_MS, CoalescingModel
from workbench.app.spark_control import STARTING, ReplayControl, failure_text
from workbench.coalesce import Coalesced, Window

if TYPE_CHECKING:
    from workbench.app.runs.coalesce import CoalesceJob, Reconfigured
    from workbench.spark.queries.coalesce import CoalesceSettings

__all__ = ["CoalescingSpark"]

RETRY = " Choose in-process, then Spark again to retry."
"""What a failure adds: how to try again."""


class CoalescingSpark(ReplayControl):
    """The model's readings coalesced on Spark while ``run_on`` is Spark (module docstring):
    started when Spark is chosen, paced by the model's ``running`` and ``speed``, changed as its
    scheme, window and equivalence change, restarted on new readings, torn down when back in
    process."""

    model = param.ClassSelector(class_=CoalescingModel, doc="The readings and their extents.")
    run_on = param.Selector(
        doc="Where the readings are coalesced: in this process, or streamed through the Spark "
        "coalescing query of the chosen scheme."
    )

    unit = "readings"

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._settings: CoalesceSettings | None = None  # what the job has, or will have

    def rate(self) -> float:
        """Readings per second the in-process stream pushes at this speed: the replay's pace."""
        return self.model.speed * 1000.0 / PERIOD_MS

    def records(self) -> pd.DataFrame:
        """The chosen motes' readings as Spark replay records (group, id, value, t, arrival;
        ms; :func:`~workbench.spark.queries.coalesce.readings_records`)."""
        from workbench.spark.queries.coalesce import readings_records

        m = self.model
        return readings_records(m.readings, m.motes, m.measure)

    def settings(self) -> CoalesceSettings:
        """The run's settings for the model's controls (window in ms), keeping the run's
        retention where it can (:func:`~workbench.app.runs.coalesce.next_settings`)."""
        from workbench.app.runs.coalesce import next_settings

        m = self.model
        if m.window_kind == "time":
            window = Window("time", m.window_minutes * 60_000.0)
        else:
            window = Window("tuples", m.window_tuples)
        return next_settings(self._settings, window, m.query().equivalence, m.scheme)

    @param.depends("run_on", watch=True)
    def _switch(self) -> None:
        """Start the run on Spark, or tear it down when back in process."""
        if self.run_on == "Spark":
            self._start(STARTING)
            self.model.running = True
            return
        self.stop_polling()
        self.end()
        self.model.running = False
        self._settings = None

    def _start(self, message: str) -> None:
        """(Re)start the run on the chosen readings and settings (in the worker)."""
        job = self.begin(message)
        self._settings = None
        self._settings = settings = self.settings()
        start = partial(job.start, self.records(), settings, self.rate(), False)
        job.submit(start, self.started)

    @param.depends("model.scheme", *(f"model.{name}" for name in EXTENT_INPUTS), watch=True)
    def _reconfigure(self) -> None:
        """On Spark: apply the change as restart_kind says (in the worker); announce it."""
        if self.run_on != "Spark" or self.state not in ("starting", "running"):
            return  # (a failed run is torn down: it takes the change at the next start)
        settings = self.settings()
        if settings == self._settings:
            return
        self._settings = settings
        self.message = "Applying the change on Spark..."
        self.job.submit(partial(self.job.reconfigure, settings), self._reconfigured)

    def _reconfigured(self, done: Reconfigured) -> None:
        self.started(done.message)

    @param.depends("model.measure", "model.motes", "model.readings", watch=True)
    def _new_data(self) -> None:
        if self.run_on == "Spark" and self.job is not None:
            self._start("The readings changed: the Spark run restarts on them...")

    @param.depends("model.running", "model.speed", watch=True)
    def _pace(self) -> None:
        """On Spark: hold or resume the replay, at the chosen speed."""
        if self.run_on == "Spark" and self.job is not None:
            self.job.pace(self.rate(), paused=not self.model.running)

    def _job_class(self) -> type[CoalesceJob]:
        from workbench.app.runs.coalesce import CoalesceJob  # pyspark loads here

        return CoalesceJob

    def failure(self, exc: Exception) -> str:
        return failure_text(exc) + RETRY

    def fail(self, exc: Exception) -> None:
        """A failure of the run: it is torn down; say why (first line); the stream holds."""
        super().fail(exc)
        self.model.running = False

    def extent(self) -> tuple[list[Coalesced], str]:
        """Spark's coalesced view as temporal tuples (s) and the timeline's title."""
        snap = self.snapshot
        if snap is None:
            return [], "Spark: waiting for the first micro-batch"
        tuples = [
            Coalesced(r.start / 1000.0, k, r.end / 1000.0, (int(r.group),), r.value, int(r.count))
            for k, r in enumerate(snap.view.itertuples(index=False))
        ]
        scheme = snap.settings.scheme
        how = "per-group stateful operator" if scheme == "eager" else "scan of the raw tuples"
        return tuples, f"Spark {scheme} ({how}): {len(tuples):,} coalesced tuples"

    def readout(self) -> str:
        """The run in words: read, replayed, checkpoint, agreement (Markdown; empty when the
        tab runs in process)."""
        if self.run_on != "Spark":
            return ""
        snap = self.snapshot
        if snap is None:
            return "**Spark**: waiting for the first micro-batch..."
        state = "caught up" if snap.caught_up else "catching up"
        agrees = "yes" if snap.agrees else "no"
        return (
            f"**Spark** ({snap.settings.scheme}, checkpoint {snap.checkpoint}, {state}): "
            f"{snap.read:,} of {snap.total:,} readings read by the query, {snap.replayed:,} "
            f"replayed, {len(snap.metrics):,} micro-batches\n\n"
            f"**agrees with the in-process extent: {agrees}** ({len(snap.view):,} Spark vs "
            f"{len(snap.expected):,} in-process coalesced tuples over the same readings)\n\n"
        )
