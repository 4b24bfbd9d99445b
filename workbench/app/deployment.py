"""The deployment explorer: the (simulated) Intel Lab motes, one mote's readings and the
coalesced window extent of its temperature, eager and lazy side by side."""

from __future__ import annotations

import holoviews as hv
import pandas as pd
import panel as pn
import param

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Window
from workbench.data.intel_lab import clean, load_mote_locations
from workbench.data.replica import simulate_deployment
from workbench.viz.deployment import coalesced_segments, mote_map, reading_curve

__all__ = ["DeploymentExplorer"]


class DeploymentExplorer(pn.viewable.Viewer):
    """Pick a mote, a quantum and a window; see its readings and coalesced extent."""

    mote = param.Integer(1, bounds=(1, 54), doc="Mote id (1-54).")
    quantum = param.Number(
        0.5,
        bounds=(0.05, 5.0),
        step=0.05,
        label="quantum (C)",
        doc="Temperatures in the same quantum-wide band coalesce.",
    )
    window_hours = param.Number(
        6.0,
        bounds=(0.5, 24.0),
        step=0.5,
        label="window (hours)",
        doc="Time-based window over the readings.",
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

    def extents(self) -> tuple[EagerExtent, LazyExtent, pd.Timestamp]:
        """The selected mote's temperature through eager and lazy extents."""
        rows = self.readings[self.readings["mote"] == self.mote].dropna(subset=["temperature"])
        start = rows["time"].min() if len(rows) else pd.Timestamp(0)
        window = Window("time", self.window_hours * 3600.0)
        eq = Equivalence("quantized", quantum=self.quantum)
        eager, lazy = EagerExtent(window, eq), LazyExtent(window, eq)
        seconds = (rows["time"] - start).dt.total_seconds()
        for ts, temp in zip(seconds.tolist(), rows["temperature"].tolist(), strict=True):
            eager.push(ts, temp, self.mote)
            lazy.push(ts, temp, self.mote)
        return eager, lazy, start

    @param.depends("readings")
    def map_view(self) -> hv.Points:
        """Motes at their real positions, coloured by their mean temperature."""
        mean = self.readings.groupby("mote")["temperature"].mean()
        return mote_map(self._positions, mean, f"Mean temperature ({self.source})")

    @param.depends("mote", "quantum", "window_hours", "readings")
    def extent_view(self) -> hv.Overlay:
        """The mote's readings in the window and their coalesced tuples."""
        eager, _, start = self.extents()
        view = eager.view()
        inside = self.readings[(self.readings["mote"] == self.mote)]
        if view:
            lo = start + pd.to_timedelta(view[0].ts, unit="s")
            inside = inside[inside["time"] >= lo]
        return (
            reading_curve(inside, "temperature", f"mote {self.mote}")
            * coalesced_segments(view, start)
        ).opts(
            hv.opts.Overlay(
                title=f"Mote {self.mote}: last {self.window_hours:g} h",
                responsive=True,
                height=320,
                ylabel="temperature (C)",
            )
        )

    @param.depends("mote", "quantum", "window_hours", "readings")
    def summary(self) -> pn.pane.Markdown:
        """What each scheme stores for the same coalesced view."""
        eager, lazy, _ = self.extents()
        same = [(c.ts, c.te, c.value) for c in eager.view()] == [
            (c.ts, c.te, c.value) for c in lazy.view()
        ]
        return pn.pane.Markdown(
            f"**{self.source}**  \n{len(lazy):,} readings in the window; eager stores "
            f"{eager.stored:,} coalesced tuples, lazy {len(lazy):,} raw ones; same view: "
            f"{'yes' if same else 'NO'}"
        )

    def __panel__(self) -> pn.viewable.Viewable:
        controls = pn.Column(
            pn.widgets.IntSlider.from_param(self.param.mote),
            pn.widgets.FloatSlider.from_param(self.param.quantum),
            pn.widgets.FloatSlider.from_param(self.param.window_hours),
            self.summary,
            width=300,
        )
        return pn.Row(
            controls,
            pn.Column(
                pn.pane.HoloViews(
                    hv.DynamicMap(self.map_view),
                    height=320,
                    sizing_mode="stretch_width",
                    linked_axes=False,
                ),
                pn.pane.HoloViews(
                    hv.DynamicMap(self.extent_view),
                    height=340,
                    sizing_mode="stretch_width",
                    linked_axes=False,
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
