"""The deployment explorer: the (simulated) Intel Lab motes, one mote's readings and the
coalesced window extent of its temperature, eager and lazy side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.plotting import figure

from workbench.app.panes import following_view, intro
from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Readings, Window
from workbench.data.intel_lab import clean, load_mote_locations
from workbench.data.replica import simulate_deployment
from workbench.viz.deployment import coalesced_layer, mote_map, reading_layer
from workbench.viz.figures import View, share_parts

__all__ = ["DeploymentExplorer"]


class DeploymentExplorer(pn.viewable.Viewer):
    """Pick a mote, a quantum and a window; see its readings and coalesced extent."""

    mote = param.Integer(1, bounds=(1, 54), doc="Mote id (1-54).")
    quantum = param.Number(
        0.5,
        bounds=(0.05, 5.0),
        step=0.05,
        label="quantum (C)",
        doc="Consecutive temperatures in the same quantum-wide band coalesce into one tuple.",
    )
    window_hours = param.Number(
        6.0,
        bounds=(0.5, 24.0),
        step=0.5,
        label="window (hours)",
        doc="Time-based window: the readings of the last so many hours (up to the mote's "
        "latest reading).",
    )
    readings = param.DataFrame(doc="Readings (time, mote, measures); simulated by default.")

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = clean(simulate_deployment(days=1.0, seed=0))
        super().__init__(**params)
        self._positions = load_mote_locations()

    @property
    def source(self) -> str:
        """Where the readings come from (the simulated replica says so)."""
        return str(self.readings.attrs.get("source", "readings"))

    def _rows(self) -> pd.DataFrame:
        """The selected mote's temperature readings."""
        return self.readings[self.readings["mote"] == self.mote].dropna(subset=["temperature"])

    def extents(self) -> tuple[EagerExtent, LazyExtent, pd.Timestamp]:
        """The selected mote's temperature through eager and lazy extents, computed once per
        setting (the plot and the summary both show them)."""
        key = (self.mote, self.quantum, self.window_hours, self.readings)
        cached = getattr(self, "_extents_for", None)
        if cached is None or cached[0][:3] != key[:3] or cached[0][3] is not key[3]:
            self._extents_for = (key, self._fill_extents())
        return self._extents_for[1]

    def _fill_extents(self) -> tuple[EagerExtent, LazyExtent, pd.Timestamp]:
        """Push the selected mote's temperature through fresh eager and lazy extents."""
        rows = self._rows()
        start = rows["time"].min() if len(rows) else pd.Timestamp(0)
        window = Window("time", self.window_hours * 3600.0)
        eq = Equivalence("quantized", quantum=self.quantum)
        eager, lazy = EagerExtent(window, eq), LazyExtent(window, eq)
        seconds = (rows["time"] - start).dt.total_seconds()
        batch = Readings(seconds, rows["temperature"], np.full(len(rows), self.mote))
        eager.push_batch(batch)
        lazy.push_batch(batch)
        return eager, lazy, start

    def map_figure(self) -> figure:
        """Motes at their real positions, coloured by their mean temperature."""
        mean = self.readings.groupby("mote")["temperature"].mean()
        return mote_map(
            self._positions,
            mean,
            "Motes on the lab's floor plan",
            clabel="mean temperature (C)",
        )

    def window(self) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        """The time window shown: window_hours up to the mote's latest reading (None: none)."""
        rows = self._rows()
        if rows.empty:
            return None
        end = rows["time"].max()
        return end - pd.Timedelta(hours=self.window_hours), end

    def extent_view(self) -> View:
        """The mote's readings in the window and their coalesced tuples, across the window;
        the temperature axis spans both (a tuple's value is its band's, Section 2.3)."""
        eager, _, start = self.extents()
        window = self.window()
        rows = self._rows()
        if window is not None:
            rows = rows[rows["time"] >= window[0]]
        else:
            window = (start, start + pd.Timedelta(hours=self.window_hours))
        coalesced = coalesced_layer(eager.view(), start)
        values = np.concatenate(
            [rows["temperature"].to_numpy(dtype=float), coalesced.columns["y0"]]
        )
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        pad = 0.05 * (hi - lo) if hi > lo else 0.5
        return View(
            f"Mote {self.mote}: temperature over the last {self.window_hours:g} h, "
            f"coalesced in {self.quantum:g} C bands",
            window,
            (lo - pad, hi + pad),
            {
                "readings": reading_layer(rows, "temperature", "readings"),
                "coalesced": coalesced,
            },
        )

    @param.depends("mote", "quantum", "window_hours", "readings")
    def summary(self) -> str:
        """What each scheme stores for the same coalesced view (Markdown)."""
        eager, lazy, _ = self.extents()
        same = [(c.ts, c.te, c.value) for c in eager.view()] == [
            (c.ts, c.te, c.value) for c in lazy.view()
        ]
        return (
            f"**{self.source}**  \n{len(lazy):,} readings in the window; eager stores "
            f"{eager.stored:,} coalesced tuples, lazy {len(lazy):,} raw ones; same view: "
            f"{'yes' if same else 'NO'}"
        )

    def _map_pane(self) -> pn.pane.Bokeh:
        """The mote map, drawn anew for new readings."""
        pane = pn.pane.Bokeh(self.map_figure(), height=320, sizing_mode="stretch_width")
        self.param.watch(lambda *_: pane.param.update(object=self.map_figure()), ["readings"])
        return pane

    def _extent_pane(self) -> pn.pane.Bokeh:
        """The extent plot, its legend right of it, redrawn in place as the controls move."""
        pane = following_view(
            self,
            self.extent_view,
            ["mote", "quantum", "window_hours", "readings"],
            "time",
            "temperature (C)",
            height=340,
            x_axis="datetime",
        )
        pane.object.add_layout(pane.object.legend[0], "right")
        return pane

    def __panel__(self) -> pn.viewable.Viewable:
        plots = self._map_pane(), self._extent_pane()
        share_parts(*(pane.object for pane in plots))
        controls = pn.Column(
            pn.widgets.IntSlider.from_param(self.param.mote),
            pn.widgets.FloatSlider.from_param(self.param.quantum),
            pn.widgets.FloatSlider.from_param(self.param.window_hours),
            pn.pane.Markdown(self.summary),
            width=300,
        )
        return pn.Column(
            intro(
                "The lab's motes on its floor plan, coloured by their mean temperature, and one "
                "mote's temperature over a time window with the coalesced tuples that summarise "
                "it: each black bar is one run of consecutive readings in the same quantum-wide "
                "band. Pick a mote, widen the window or coarsen the quantum and compare what the "
                "eager and lazy extents store for the same view.",
                "Deployment",
            ),
            pn.Row(
                controls,
                pn.Column(*plots, sizing_mode="stretch_width"),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
