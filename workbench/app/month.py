"""The whole simulated month at once: every event of the deployment re-joined by the compiled
tight PTJoin on each move of delta or d (PTJoin Section 3; :mod:`workbench.experiments.month`).

The month's two streams are built once per server (about 15 s, in a worker thread) and shared
read-only by every session; a re-join then takes well under a second.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.app.newest import Newest
from workbench.app.panes import ReadTable, confidence_delta, following_view, intro, plot_key
from workbench.data.streams import MONTH_DAYS, ReplayedStreams, month_streams
from workbench.experiments.month import MonthJoin, month_join
from workbench.viz.figures import Layer, View, headroom
from workbench.viz.ptjoin import fill_swatch

__all__ = ["MonthExplorer"]

AREA = "#4c78a8"
"""The colour of the pairs-per-hour area."""

HISTORY = {"delta": "float64", "d (ms)": "float64", "pairs": "int64", "re-join (s)": "float64"}
"""The columns of the re-join history table."""


def _rejoin(setting: tuple[ReplayedStreams, float, float]) -> MonthJoin:
    """A move's re-join, in a worker thread (:class:`~workbench.app.newest.Newest`)."""
    return month_join(*setting)


class MonthExplorer(pn.viewable.Viewer):
    """Join the whole month, then move delta or d: every event is joined again."""

    delta = confidence_delta()
    d = param.Number(
        3000.0,
        bounds=(500.0, 30_000.0),
        step=100.0,
        label="window d (ms)",
        doc="The join window: a pair joins when P(|Xa - Xb| <= d) >= delta.",
    )
    streams = param.ClassSelector(
        class_=ReplayedStreams, allow_None=True, doc="The month's two event streams, once built."
    )
    last = param.ClassSelector(class_=MonthJoin, allow_None=True, doc="The latest re-join.")
    message = param.String("", doc="What the tab is doing, or the latest outcome.")
    running = param.Boolean(False, doc="Whether the month is being built.")

    def __init__(self, **params: object) -> None:
        self.history = ReadTable(
            pd.DataFrame({name: pd.Series(dtype=t) for name, t in HISTORY.items()}),
            formats={
                "delta": "{:.2f}".format,
                "d (ms)": "{:,.0f}".format,
                "pairs": "{:,}".format,
                "re-join (s)": "{:.3f}".format,
            },
            height=220,
        )
        super().__init__(**params)
        self.newest = Newest(self._setting, _rejoin, lambda _setting, run: self._show(run))

    def run(self) -> MonthJoin:
        """Build the month's streams if needed, then re-join it (blocking)."""
        if self.streams is None:
            self.streams = month_streams()
        return self.rejoin()

    async def run_async(self, *_: object) -> None:
        """Build the month in a worker thread (the server keeps serving), then join it."""
        if self.running:
            return
        self.running = True
        try:
            if self.streams is None:
                self.message = (
                    f"Building {MONTH_DAYS:g} simulated days as two event streams (once per "
                    "server, about 15 s)..."
                )
                self.streams = await asyncio.to_thread(month_streams)
        finally:
            self.running = False
        self.newest.request()

    @param.depends("delta", "d", watch=True)
    def _moved(self) -> None:
        if self.streams is not None and not self.running:
            self.newest.request()

    def rejoin(self) -> MonthJoin:
        """Every event of the month through a fresh compiled tight PTJoin at delta and d
        (blocking)."""
        run = _rejoin(self._setting())
        self._show(run)
        return run

    def _setting(self) -> tuple[ReplayedStreams, float, float]:
        return self.streams, self.d, self.delta

    def _show(self, run: MonthJoin) -> None:
        """``run`` in the history, the readout and the chart: each says the run's own delta
        and d, never the controls' (they may have moved since)."""
        row = pd.DataFrame(
            [[run.delta, run.d, len(run.pairs), round(run.seconds, 3)]], columns=list(HISTORY)
        )
        self.history.value = pd.concat([row, self.history.value], ignore_index=True).head(12)
        events = len(self.streams.events)
        self.param.update(
            last=run,
            message=f"**{len(run.pairs):,} pairs joined** over {MONTH_DAYS:g} days at delta = "
            f"{run.delta:g}, d = {run.d:g} ms: {events:,} events, re-joined in "
            f"{run.join_s:.2f} s (stime tables {run.install_s:.2f} s) by the compiled tight "
            f"PTJoin ({events / max(run.join_s, 1e-9):,.0f} events/s).",
        )

    def per_hour_view(self) -> View:
        """Pairs per hour of the month (by the A event's detection), as an area over its days."""
        if self.last is None:
            days, pairs = np.empty(0), np.empty(0)
            title = "Join the whole month to see its pairs per hour"
        else:
            days = self.last.per_hour.index.to_numpy() / 24.0
            pairs = self.last.per_hour.to_numpy()
            title = f"Pairs per hour, delta = {self.last.delta:g}, d = {self.last.d:g} ms"
        end = max(float(MONTH_DAYS), float(days[-1]) if len(days) else 0.0)
        area = Layer("varea", {"x": days, "y": pairs}, {"color": AREA, "fill_alpha": 0.8})
        top = float(pairs.max()) if len(pairs) else 0.0
        return View(title, (0.0, end), headroom(top), {"pairs per hour": area})

    @param.depends("message")
    def status(self) -> str:
        """What the tab is doing, or the latest re-join in numbers (Markdown)."""
        return self.message or (
            "Press **Join the whole month**: the month's streams are built once, then every "
            "move of delta or d joins all of its events again."
        )

    def __panel__(self) -> pn.viewable.Viewable:
        button = pn.widgets.Button(
            label="Join the whole month", color="primary", disabled=self.param.running
        )
        button.on_click(self.run_async)
        controls = pn.Column(
            button,
            pn.widgets.FloatSlider.from_param(self.param.delta),
            pn.widgets.FloatSlider.from_param(self.param.d),
            pn.pane.Markdown(self.status, sizing_mode="stretch_width"),
            width=300,
        )
        key = plot_key([(fill_swatch(AREA, 0.8), "pairs joined in each hour of the month")])
        chart = following_view(
            self, self.per_hour_view, ["last"], "day", "pairs per hour", 380, "linear"
        )
        chart.loading = self.newest.param.pending  # stale while a newer setting re-joins
        return pn.Column(
            intro(
                "The whole simulated month, about 2.6 million readings of 54 motes, as two "
                "event streams (odd motes A, even motes B). Press the button once; then every "
                "move of delta or d joins all of the month's events again, exactly, in well "
                "under a second, and the chart shows where in the month the pairs fall.",
                "Whole month",
            ),
            pn.Row(
                controls,
                pn.Column(
                    chart,
                    key,
                    pn.pane.Markdown("**Recent re-joins** (newest first)"),
                    self.history,
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
