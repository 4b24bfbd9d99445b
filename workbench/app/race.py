"""The Timing joins tab: one replay through the five interval timing correlation algorithms and
PTJoin's naive, loose and tight modes side by side (interval timing paper, Section 4.2,
Algorithms 1-7; PTJoin Section 3), steered while they run.

The page only lays out and displays; the race is
:class:`~workbench.app.race_model.TimingRaceModel`'s, advanced by a periodic callback every
:data:`~workbench.app.race_model.PERIOD_MS` ms while it runs, so the server never blocks.
"""

from __future__ import annotations

import panel as pn
import param

from workbench.app.panes import ReadTable, intro, plain_help
from workbench.app.race_model import PERIOD_MS, TimingRaceModel
from workbench.app.redraw import redrawn
from workbench.experiments.race import RACERS
from workbench.viz.figures import View, share_parts, view_figure
from workbench.viz.race import race_bars, race_results_view

__all__ = ["TimingJoinsExplorer"]

PLOT_HEIGHT = 280
"""Height of each plot (px); their widths stretch."""
INTRO = (
    "The same readings go through all eight algorithms at once. They must find the same pairs "
    "(checked below as they come); they differ in events per second, in how soon a pair comes "
    "out and in how many probabilities they evaluate. Press **Start**, then move d, delta or "
    "the lazy thresholds while it runs."
)
TITLES = {
    "events": "events",
    "results": "pairs",
    "events_per_s": "events/s",
    "response_ms": "mean response (ms)",
    "probes_per_event": "probes / event",
    "stime_lookups_per_event": "stime look-ups / event",
    "buffered": "buffered",
    "waiting": "in blocks",
    "same_pairs": "same pairs",
}


def _number(x: object) -> str:
    """A measure as the table shows it: thousands grouped, three significant digits below."""
    v = float(x)  # type: ignore[arg-type]
    if v != v:  # NaN: nothing measured yet
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


class TimingJoinsExplorer(pn.viewable.Viewer):
    """Race the timing joins over one replay; steer them; compare (module docstring)."""

    model = param.ClassSelector(class_=TimingRaceModel, doc="The race.")

    def __init__(self, model: TimingRaceModel | None = None) -> None:
        super().__init__(model=TimingRaceModel() if model is None else model)
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        self.status_pane = pn.pane.Alert(sizing_mode="stretch_width")
        self.table = ReadTable(
            self._shown(),
            titles=TITLES,
            formats={
                **{k: _number for k in TITLES if k not in ("same_pairs",)},
                "same_pairs": lambda ok: "yes" if ok else "not yet",
            },
        )
        self._show()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _context: self.close())

    def _shown(self) -> object:
        return self.model.table.rename_axis("algorithm").reset_index()

    @param.depends("model.table", "model.message", watch=True)
    def _show(self) -> None:
        m = self.model
        ok = bool(m.table["same_pairs"].all()) or not m.race or m.race.pushed == 0
        self.status_pane.param.update(object=m.message, alert_type="info" if ok else "warning")
        self.table.value = self._shown()

    @param.depends("model.running", watch=True)
    def _tick(self) -> None:
        """Advance the race from a periodic callback while it runs."""
        if self.model.running and self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.model.step, period=PERIOD_MS)
        elif not self.model.running:
            self.close()

    def close(self) -> None:
        """Stop the periodic callback (the race stopped, or the session ended)."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    @param.depends("model.table")
    def throughput_view(self) -> View:
        """Events per busy second of each racer."""
        return race_bars(self.model.table, "events_per_s", "events per second", list(RACERS), "/s")

    @param.depends("model.table")
    def response_view(self) -> View:
        """Mean response time of each racer: from a pair's later event arriving to its output,
        at the replay's speed."""
        table = self.model.table
        return race_bars(table, "response_ms", "mean response time (ms)", list(RACERS), "ms")

    @param.depends("model.history")
    def results_view(self) -> View:
        """Each racer's pairs over the replay's clock."""
        return race_results_view(self.model.history, list(RACERS))

    def _plots(self) -> list[pn.pane.Bokeh]:
        """The two bar charts (hover for their values, nothing to zoom) and the results over
        the replay's clock, sharing their stateless parts (:func:`share_parts`)."""
        bars = [
            (self.throughput_view, "events per second"),
            (self.response_view, "mean response time (ms)"),
        ]
        figures = [
            redrawn(self, view, view_figure(view(), "algorithm", label, PLOT_HEIGHT, "linear", ""))
            for view, label in bars
        ]
        for fig in figures:
            fig.xaxis.major_label_orientation = 0.6
        over_time = view_figure(self.results_view(), "replay clock", "pairs", PLOT_HEIGHT, "s")
        over_time.legend.update(
            location="top_left", label_text_font_size="8pt", spacing=0, padding=4, glyph_height=12
        )
        figures.append(redrawn(self, self.results_view, over_time))
        share_parts(*figures)
        return [pn.pane.Bokeh(f, sizing_mode="stretch_width", height=PLOT_HEIGHT) for f in figures]

    def __panel__(self) -> pn.viewable.Viewable:
        w, m = pn.widgets, self.model.param
        start = w.Toggle.from_param(m.running, label="Start / pause", color="primary")
        reset = w.Button(label="Reset", width=120)
        reset.on_click(lambda _event: self.model.reset())
        controls = pn.Column(
            pn.Row(start, reset),
            w.FloatSlider.from_param(m.d),
            w.FloatSlider.from_param(m.delta),
            w.IntSlider.from_param(m.max_pending),
            w.FloatSlider.from_param(m.max_wait_s),
            plain_help(w.FloatInput).from_param(m.speed),
            w.CheckBoxGroup.from_param(m.racers),
            width=300,
        )
        return pn.Column(
            intro(INTRO, "Timing joins"),
            pn.Row(
                controls,
                pn.Column(
                    self.status_pane,
                    self.table,
                    pn.Row(*self._plots(), sizing_mode="stretch_width"),
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
