"""The Coalescing tab: readings of the (simulated) deployment stream, in arrival order, into an
eager and a lazy window extent and an adaptive eager/lazy selection; the page shows the chosen
scheme's extent, both cost surfaces with the queries on them and the selection table.

The page only lays out and displays: the readings, extents and costs are
:class:`~workbench.app.coalescing_model.CoalescingModel`'s, the run on Spark
:class:`~workbench.app.coalescing_spark.CoalescingSpark`'s.  While the stream runs in process a
periodic callback pushes the next readings every :data:`PERIOD_MS` ms, so the server never
blocks.
"""

from __future__ import annotations

import panel as pn
import param

from workbench.app.coalescing_model import (
    ATOMIC_INPUTS,
    COST_INPUTS,
    GRID,
    PERIOD_MS,
    CoalescingModel,
)
from workbench.app.coalescing_queries import QUERIES, ExampleQueries
from workbench.app.coalescing_spark import CoalescingSpark
from workbench.app.panes import ReadTable, intro, opened_card, plain_help
from workbench.app.redraw import redrawn, redrawn_together
from workbench.app.spark_section import SparkSection
from workbench.viz import coalesce as plots
from workbench.viz.figures import View, share_parts

__all__ = ["PERIOD_MS", "CoalescingExplorer"]

SURFACE_HEIGHT = 320
"""Height of each cost surface (px); their widths stretch."""
INTRO = (
    "Readings of the chosen motes stream in, in arrival order. The **eager** scheme merges a "
    "reading into its mote's last tuple when the values are equivalent, the **lazy** scheme "
    "stores every reading and merges when the window is read; the timeline shows what the "
    "chosen scheme stores, the surfaces what each would cost for any **cp** (share of arrivals "
    "that merge) and **oop** (share that arrive out of time order), with the queries as points. "
    "Press **Run / pause**, switch the scheme, or raise a weight to see the choice change."
)
WEIGHTS_HELP = (
    "The weights say how much each cost counts: **memory**, the tuples stored; **update**, the "
    "work per arrival (inserting, merging, splitting); **scan**, reading the window for a query."
)
ATOMIC_HELP = (
    "The cost of each atomic operation (Table 4), in any unit: **custom** values, or "
    "**measured** on this machine for each cp and oop from real runs of the extents "
    "(measured once, about a second)."
)
TABLE_TITLES = {
    "cp": "cp (last re-evaluation)",
    "oop": "oop (last re-evaluation)",
    "optimal": "optimal scheme",
    "scheme": "served scheme",
}
"""Column titles of the query table: its estimates are those the selection last decided on."""
SPARK_HELP = (
    "**Spark**: the readings, in arrival order, are replayed as files into the Spark "
    "coalescing query; the timeline shows Spark's coalesced view. A change of window size "
    "that the state retains restarts the query from its checkpoint; a new equivalence, scheme "
    "or window kind (or a window beyond the retention) starts a new checkpoint that re-reads "
    "the replay. Spark's tuple window keeps each mote's newest readings."
)
SURFACE_TITLE = "weighted memory + update + scan"
"""What each cost surface shows, after its scheme's name."""
_SURFACE_SHOWS = tuple(f"model.{name}" for name in (*COST_INPUTS, "position"))
"""What a cost surface shows (the surface, the queries on it) changes with these."""


class CoalescingExplorer(pn.viewable.Viewer):
    """Stream readings into eager and lazy extents; see extents, costs and the selection."""

    model = param.ClassSelector(class_=CoalescingModel, doc="The readings and their extents.")
    spark = param.ClassSelector(class_=CoalescingSpark, doc="The run on Spark.")
    queries = param.ClassSelector(class_=ExampleQueries, doc="The paper's example queries.")

    def __init__(
        self, model: CoalescingModel | None = None, spark: CoalescingSpark | None = None
    ) -> None:
        model = CoalescingModel() if model is None else model
        super().__init__(
            model=model,
            spark=CoalescingSpark(model=model) if spark is None else spark,
            queries=ExampleQueries(),
        )
        self.answer_table = ReadTable(
            self.queries.answer,
            formats={"minutes": "{:,.1f}".format, "humidity": "{:g}".format},
        )
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        self.spark_pane = pn.pane.Alert(
            self._spark_status,
            alert_type=self._spark_kind,
            css_classes=["coalescing-spark"],
            sizing_mode="stretch_width",
        )
        self.readout_pane = pn.pane.Markdown(
            self._readout, css_classes=["coalescing-readout"], width=330
        )
        self.query_table = ReadTable(
            self.model.selection(),
            titles=TABLE_TITLES,
            formats={"cp": "{:.3f}".format, "oop": "{:.3f}".format},  # 0.87 reads 0.870
        )
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _context: self.close())

    @param.depends("model.running", "spark.run_on", watch=True)
    def _stream(self) -> None:
        """Advance the stream in process while it runs (on Spark, the replay does)."""
        if not self.model.running or self.spark.run_on == "Spark":
            self._stop_stream()
        elif self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.model.step, period=PERIOD_MS)

    def _stop_stream(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    @param.depends(*_SURFACE_SHOWS, watch=True)
    def _table(self) -> None:
        self.query_table.value = self.model.selection()

    @param.depends(
        "model.position",
        "model.w_memory",
        "model.w_update",
        "model.w_scan",
        "model.mechanism",
        "spark.shown",
        "spark.run_on",
    )
    def _readout(self) -> str:
        return self.spark.readout() + self.model.readout() + self.model.mechanism_readout()

    @param.depends("spark.message")
    def _spark_status(self) -> str:
        return self.spark.message or SPARK_HELP

    @param.depends("spark.state")
    def _spark_kind(self) -> str:
        return "danger" if self.spark.state == "failed" else "info"

    @param.depends("model.position", "model.scheme", "spark.run_on", "spark.shown")
    def extent_view(self) -> View:
        """The chosen scheme's window extent per group (Figure 2: uncoalesced vs coalesced);
        on Spark, the query's coalesced view."""
        scheme = self.model.scheme
        if self.spark.run_on == "Spark":
            tuples, title = self.spark.extent()
        else:
            tuples = self.model.extent()
            what = "coalesced tuples" if scheme == "eager" else "raw tuples (coalesced on scan)"
            title = f"{scheme} extent: {len(tuples):,} {what}"
        color = plots.SCHEME_COLORS[scheme]
        return plots.extent_view(tuples, title, color, groups=[(m,) for m in self.model.motes])

    @param.depends(*_SURFACE_SHOWS)
    def surface_views(self) -> tuple[View, View]:
        """The eager and the lazy cost surface (Eq. 1-6 weighted, Eq. 9-10) with the queries
        where they stand, on one colour scale: the grid and the selection computed once for
        both."""
        both, queries = self.model.surfaces(), self.model.selection()
        clim = (float(min(b.min() for b in both)), float(max(b.max() for b in both)))
        return tuple(  # type: ignore[return-value]
            plots.surface_view(GRID, GRID, cost, f"{scheme} cost: {SURFACE_TITLE}", clim, queries)
            for scheme, cost in zip(("eager", "lazy"), both, strict=True)
        )

    def eager_surface(self) -> View:
        """The eager cost surface (Eq. 1, 3, 5 weighted) with the queries where they stand."""
        return self.surface_views()[0]

    def lazy_surface(self) -> View:
        """The lazy cost surface (Eq. 2, 4, 6 weighted) with the queries where they stand."""
        return self.surface_views()[1]

    def atomic_card(self) -> pn.Card:
        """Table 4's atomic costs the surfaces and the selection use: custom (editable) or
        measured, in a card whose controls are made when it is first opened."""
        m, w = self.model.param, pn.widgets

        def build() -> list[pn.viewable.Viewable]:
            measured = m.atomic_source.rx() == "measured"
            inputs = [
                plain_help(w.FloatInput).from_param(getattr(m, name), width=125, disabled=measured)
                for name in ATOMIC_INPUTS
            ]
            return [
                w.RadioButtonGroup.from_param(m.atomic_source),
                *(pn.Row(*inputs[i : i + 2]) for i in range(0, len(inputs), 2)),
                pn.pane.Markdown(ATOMIC_HELP, css_classes=["coalescing-help"]),
            ]

        return opened_card(build, "atomic costs (Table 4)", width=290)

    def queries_card(self) -> pn.Card:
        """The paper's two example queries (Section 1) over the day's readings, run on a
        button in a worker thread, in a card whose controls are made when it is first opened."""
        q, w = self.queries.param, pn.widgets
        number = plain_help(w.FloatInput)

        def build() -> list[pn.viewable.Viewable]:
            run = w.Button(label="Run the query", color="primary", disabled=q.running)
            run.on_click(self.run_query)
            example_1 = q.query.rx() == QUERIES[0]
            controls = pn.Column(
                plain_help(w.Select).from_param(q.query),
                w.RadioButtonGroup.from_param(q.scheme),
                pn.Row(
                    number.from_param(q.window_min, width=130),
                    number.from_param(q.slide_min, width=130),
                ),
                number.from_param(q.quantum, visible=example_1),
                number.from_param(q.min_overlap_min, visible=example_1),
                number.from_param(q.threshold, visible=q.query.rx() != QUERIES[0]),
                run,
                width=300,
            )
            answer = pn.Column(
                pn.pane.Markdown(q.message, css_classes=["coalescing-queries"]),
                self.answer_table,
                sizing_mode="stretch_width",
            )
            return [pn.Row(controls, answer, sizing_mode="stretch_width")]

        return opened_card(
            build,
            "The paper's example queries (Section 1), on coalesced window extents",
            sizing_mode="stretch_width",
        )

    async def run_query(self, *_: object) -> None:
        """The queries card's button: the chosen query in a worker thread."""
        await self.queries.run_async()

    @param.depends("queries.answer", watch=True)
    def _answer(self) -> None:
        self.answer_table.value = self.queries.answer

    def close(self, wait: bool = False) -> None:
        """Stop the stream and the Spark run (``wait`` for it): the browser session ended."""
        self._stop_stream()
        self.spark.close(wait)

    def __panel__(self) -> pn.viewable.Viewable:
        w, m = pn.widgets, self.model.param
        number, choice = plain_help(w.FloatInput), plain_help(w.Select)
        controls = pn.Column(
            w.RadioButtonGroup.from_param(self.spark.param.run_on),
            pn.Row(
                w.Toggle.from_param(m.running, name="Run / pause", width=130),
                plain_help(w.IntInput).from_param(m.speed, width=130),
            ),
            w.RadioButtonGroup.from_param(m.scheme),
            w.RadioButtonGroup.from_param(m.mechanism),
            choice.from_param(m.measure),
            plain_help(w.MultiChoice).from_param(m.motes),
            w.RadioButtonGroup.from_param(m.window_kind),
            w.FloatSlider.from_param(m.window_minutes),
            plain_help(w.IntInput).from_param(m.window_tuples),
            choice.from_param(m.equivalence),
            pn.Row(
                number.from_param(m.quantum, width=130),
                number.from_param(m.tolerance, width=130),
            ),
            w.FloatSlider.from_param(m.w_memory),
            w.FloatSlider.from_param(m.w_update),
            w.FloatSlider.from_param(m.w_scan),
            pn.pane.Markdown(WEIGHTS_HELP, css_classes=["coalescing-help"]),
            self.atomic_card(),
            width=300,
        )
        extent = plots.extent_figure(self.extent_view(), y_label="mote")
        costs = [plots.surface_figure(view, SURFACE_HEIGHT) for view in self.surface_views()]
        redrawn_together(self, self.surface_views, costs)
        plots.twin_surfaces(*costs)
        share_parts(extent, *costs)
        surfaces = [
            pn.pane.Bokeh(fig, sizing_mode="stretch_width", height=SURFACE_HEIGHT) for fig in costs
        ]
        return pn.Column(
            intro(INTRO, "Coalescing"),
            pn.Row(
                controls,
                pn.Column(
                    pn.Row(
                        pn.pane.Bokeh(
                            redrawn(self, self.extent_view, extent),
                            sizing_mode="stretch_width",
                            height=340,
                        ),
                        self.readout_pane,
                        # refilled: both stale; on the row, as a Bokeh pane's loading re-syncs
                        # its figure's properties (16 ms a toggle, two a move)
                        loading=self.model.newest.param.pending,
                        sizing_mode="stretch_width",
                    ),
                    SparkSection(control=self.spark, status=self.spark_pane),
                    pn.Row(*surfaces, sizing_mode="stretch_width"),
                    self.query_table,
                    self.queries_card(),
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
