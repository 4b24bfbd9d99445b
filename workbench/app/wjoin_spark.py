"""The Multi-way join tab's run on Spark: the same tuples the in-process algorithms join,
replayed in arrival order into the streaming W-join on Spark
(:class:`workbench.app.runs.wjoin.WJoinJob`; W-join paper, Sections 3-4).  Its results come
from the query's sink, its micro-batches from the query's progress; once caught up, Spark's
results equal the in-process BEW-join's on the same tuples, as the run says.  pyspark loads
only when Spark is chosen.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import pandas as pd
import param

from workbench.app.spark_control import STARTING, ReplayControl
from workbench.app.wjoin_model import RunResult, WJoinModel, max_delays
from workbench.operators import WindowConstraints

if TYPE_CHECKING:
    from workbench.app.runs.wjoin import WJoinJob, WJoinSnapshot

__all__ = ["WJoinSpark"]


class WJoinSpark(ReplayControl):
    """The model's join also run on Spark, when ``run_on`` is Spark and :meth:`run` is
    asked (module docstring): the in-process algorithms and the Spark run both go to the job's
    worker thread; the run finishes once Spark has read the whole replay."""

    model = param.ClassSelector(class_=WJoinModel, doc="The streams, graph and runs.")
    run_on = param.Selector(
        doc="Join in this process only, or also stream the tuples through the W-join on Spark."
    )
    replay_seconds = param.Number(
        20.0,
        bounds=(1.0, 600.0),
        step=1.0,
        label="Spark replay (s)",
        doc="Wall time the replay into Spark takes (the tuples arrive in their order, paced).",
    )

    unit = "tuples"

    def tuples(self) -> tuple[pd.DataFrame, WindowConstraints, list[float]]:
        """The run's tuples for Spark (stream, id, key, t, arrival; ms), its constraints and
        max delays in ms (those the in-process operators use, scaled)."""
        rows = self.model.rows()
        tuples = pd.DataFrame(
            {
                "stream": rows["stream"],
                "id": rows["id"],
                "key": rows["value"],
                "t": rows["ts"] * 1000.0,
                "arrival": rows["arrival"] * 1000.0,
            }
        )
        delays = [d * 1000.0 for d in max_delays(rows)]
        return tuples, WindowConstraints(self.model.constraints().windows * 1000.0), delays

    def run(self) -> None:
        """Run the in-process algorithms and the streaming W-join on Spark on the same tuples
        (both in the job's worker thread); polling brings the Spark run in."""
        if self.busy or self.model.running:
            return
        try:
            if not 2 <= len(self.model.motes) <= 6:
                raise ValueError(f"choose 2 to 6 motes, got {len(self.model.motes)}")
            tuples, constraints, delays = self.tuples()
            if len(delays) != constraints.m:
                raise ValueError(f"every chosen mote needs readings; got {len(delays)}")
        except ValueError as exc:
            self.param.update(state="failed", message=f"Cannot run on Spark: {exc}")
            return
        job = self.begin(STARTING)
        self.model.running = True
        frozen = self.model.frozen()
        job.submit(frozen.compute, partial(self._computed, frozen.setting()))
        rate = len(tuples) / self.replay_seconds
        job.submit(partial(job.start, tuples, constraints, delays, rate), self.started)

    def _computed(self, setting: dict, outcome: tuple[list[RunResult], str]) -> None:
        results, message = outcome
        self.model.param.update(results=results, message=message, ran_with=setting, running=False)

    def fail(self, exc: Exception) -> None:
        """A failure of the run: it is torn down; say why (first line); the page stays."""
        self.model.running = False
        super().fail(exc)

    def _job_class(self) -> type[WJoinJob]:
        from workbench.app.runs.wjoin import WJoinJob  # pyspark loads here

        return WJoinJob

    @param.depends("run_on", watch=True)
    def _switch(self) -> None:
        """Back in process: stop the Spark run and remove its folder."""
        if self.run_on == "in-process":
            self.end()
            self.model.running = False

    def _show(self, snap: WJoinSnapshot) -> None:
        """A snapshot; once caught up, the run finishes and says whether Spark agrees."""
        if snap.caught_up:
            agree = "equal" if snap.agrees else "differ from"
            self.finish(
                f"Caught up: Spark committed {len(snap.results):,} results, which "
                f"{agree} the in-process BEW-join's {len(snap.expected):,} on the same tuples."
            )
        super()._show(snap)

    def readout(self) -> str:
        """The run in words: results, tuples read, agreement with BEW (Markdown; empty when
        the tab runs in process)."""
        if self.run_on != "Spark":
            return ""
        snap = self.snapshot
        text = f"**Spark**: {self.message}" if self.message else "**Spark**"
        if snap is None:
            return text
        same = "yes" if snap.agrees else ("no" if snap.caught_up else "not yet (catching up)")
        return (
            f"{text}\n\n**{len(snap.results):,} results** committed · {snap.read:,} of "
            f"{snap.total:,} tuples read by the query ({snap.replayed:,} replayed) · "
            f"{len(snap.metrics):,} micro-batches · in-process BEW on the same tuples: "
            f"{len(snap.expected):,} results · **same results as BEW: {same}**"
        )
