"""The coalescing paper's two example queries (Section 1) as the Coalescing tab runs them, no
Panel: Example 1 (motes with approximately equal humidity over overlapping periods) and
Example 2 (each mote's longest warm period), over the simulated deployment's day, evaluated on
eager or lazy coalesced window extents (:mod:`workbench.coalesce.queries`) in a worker thread.
"""

from __future__ import annotations

import asyncio
import time

import pandas as pd
import param

from workbench.coalesce.queries import longest_warm_period, similar_humidity
from workbench.data.streams import default_readings

__all__ = ["QUERIES", "ExampleQueries"]

QUERIES = ("Example 1: similar humidity", "Example 2: longest warm period")
"""The queries offered, as the page names them."""
SHOWN = 12
"""Rows of the answer the page shows (the last evaluation's, largest first)."""


class ExampleQueries(param.Parameterized):
    """One of the paper's example queries, its parameters, and its last answer."""

    query = param.Selector(objects=list(QUERIES), default=QUERIES[0], doc="Which query runs.")
    scheme = param.Selector(
        objects=["eager", "lazy"], default="eager", doc="The window extent's coalescing."
    )
    window_min = param.Number(
        60.0, bounds=(1.0, 1440.0), step=1.0, label="window (min)", doc="The time window."
    )
    slide_min = param.Number(
        10.0, bounds=(1.0, 240.0), step=1.0, label="slide (min)", doc="Evaluated this often."
    )
    quantum = param.Number(
        1.0,
        bounds=(0.1, 10.0),
        step=0.1,
        label="humidity band (%)",
        doc="Example 1: humidities in one band count as approximately equal.",
    )
    min_overlap_min = param.Number(
        4.0,
        bounds=(0.0, 60.0),
        step=1.0,
        label="overlap at least (min)",
        doc="Example 1: how long the two periods must INTERSECT.",
    )
    threshold = param.Number(
        24.0,
        bounds=(15.0, 35.0),
        step=0.5,
        label="warm above (C)",
        doc="Example 2: the temperature a warm period stays above.",
    )
    running = param.Boolean(False, doc="Whether the query runs.")
    answer = param.DataFrame(
        default=pd.DataFrame(), doc="The last evaluation's rows (at most SHOWN), largest first."
    )
    message = param.String("", doc="What the last run found, or why it could not run.")

    @param.depends("query", watch=True, on_init=True)
    def _paper_window(self) -> None:
        """Each query's window and slide as the paper states them: an hour sliding by the
        minute for Example 1 (here every 10 minutes), a day sliding by the hour for Example 2."""
        if self.query == QUERIES[0]:
            self.param.update(window_min=60.0, slide_min=10.0)
        else:
            self.param.update(window_min=1440.0, slide_min=60.0)

    def compute(self) -> tuple[pd.DataFrame, str]:
        """The chosen query over the day's readings: its last evaluation's answer and a
        sentence; sets no parameter (it runs in a worker thread)."""
        readings = default_readings()
        start = time.perf_counter()
        window, slide = 60.0 * self.window_min, 60.0 * self.slide_min
        if self.query == QUERIES[0]:
            rows = similar_humidity(
                readings, window, slide, self.quantum, 60.0 * self.min_overlap_min, self.scheme
            )
            rows = rows.assign(minutes=(rows["end"] - rows["start"]) / 60.0)
            what = "mote pairs of equal humidity"
            keep = ["mote_a", "mote_b", "humidity", "minutes"]
        else:
            rows = longest_warm_period(readings, self.threshold, window, slide, self.scheme)
            rows = rows.assign(minutes=rows["seconds"] / 60.0)
            what = f"motes warm above {self.threshold:g} C"
            keep = ["mote", "minutes"]
        took = time.perf_counter() - start
        slides = rows["at"].nunique()
        last = rows[rows["at"] == rows["at"].max()] if len(rows) else rows
        last = last[last["minutes"] > 0]
        answer = last.sort_values("minutes", ascending=False)[keep].head(SHOWN)
        message = (
            f"{slides:,} evaluations over the day, {self.scheme} coalescing, {took:.1f} s; the "
            f"last found {len(last):,} {what} (the longest below)."
        )
        return answer.reset_index(drop=True), message

    async def run_async(self) -> None:
        """Run in a worker thread; the answer is set back on the server's loop."""
        if self.running:
            return
        self.running = True
        try:
            answer, message = await asyncio.to_thread(self.compute)
            self.param.update(answer=answer, message=message)
        finally:
            self.running = False
