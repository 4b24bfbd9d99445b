"""The coalescing explorer: the (simulated) deployment's readings stream, in arrival order,
into an eager and a lazy window extent and into an adaptive eager/lazy selection over a set of
queries (coalescing paper, Sections 2-6; :class:`~workbench.coalesce.AdaptiveCoalescing`).

The stream advances in small batches from a periodic callback, so the server never blocks.
**Run on Spark** streams the same readings, replayed in arrival order, through the Spark
coalescing queries (:class:`workbench.spark.coalesce_job.CoalesceJob`: eager on a per-group
stateful operator, lazy as a raw-tuple sink scanned on read); a scheme, window or equivalence
change then restarts the query from its checkpoint or on a new one, as
:func:`~workbench.spark.coalesce_base.restart_kind` says, and the page says which and why.
The page side of the run (polling, teardown, the Spark section) is
:class:`~workbench.app.spark_runs.SparkRuns`; pyspark loads only when Spark is chosen.
(Past 400 lines because the tab declares 15 documented controls; everything it computes comes
from :mod:`workbench.coalesce` and :mod:`workbench.experiments.coalescing`.)
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import panel as pn
import param

from workbench.app.panes import ReadTable, following_pane, intro
from workbench.app.spark_runs import STARTING, SparkRuns, failure_text
from workbench.coalesce import (
    AdaptiveCoalescing,
    Coalesced,
    EagerExtent,
    Equivalence,
    LazyExtent,
    Query,
    Weights,
    Window,
)
from workbench.coalesce.cost import AtomicCosts, cost_grid
from workbench.coalesce.window import uncoalesced
from workbench.data.streams import default_readings
from workbench.experiments.coalescing import selection_table
from workbench.viz import coalesce as plots
from workbench.viz.figures import View

if TYPE_CHECKING:
    from workbench.spark.coalesce import CoalesceSettings
    from workbench.spark.coalesce_job import CoalesceJob, CoalesceSnapshot, Reconfigured

__all__ = ["CoalescingExplorer"]

MEASURES = ("temperature", "humidity", "light", "voltage")
PERIOD_MS = 500
"""Period of the stream's periodic callback."""
PRELOAD = 1500
"""Readings pushed before the first view, so the window is not empty."""
REPLAY_CAP = 1500
"""At most this many of the latest readings are replayed when the configuration changes."""
SURFACE_HEIGHT = 320
"""Height of each cost surface (px); their widths stretch."""
GRID = np.linspace(0.0, 1.0, 21)
"""cp and oop values of the cost surfaces."""
OTHER_QUERIES = (
    Query("humidity (1 %RH bands)", ("humidity",), ("mote",), Equivalence("quantized", quantum=1)),
    Query("light (equal)", ("light",), ("mote",), Equivalence()),
    Query(
        "voltage (0.01 V bands)", ("voltage",), ("mote",), Equivalence("quantized", quantum=0.01)
    ),
)
"""Queries served next to the configured one by the adaptive selection."""
REEVALUATE_EVERY = 500
"""Arrivals between two re-evaluations of the adaptive selection."""
_WINDOW_INPUTS = ("window_kind", "window_minutes", "window_tuples")
_COST_INPUTS = ("w_memory", "w_update", "w_scan", *_WINDOW_INPUTS)
_EXTENT_INPUTS = (*_WINDOW_INPUTS, "equivalence", "quantum", "tolerance")
"""The controls that change what an extent stores (its window and equivalence)."""
_EXTENT_SHOWS = ("position", "scheme", "run_on", "spark_shown")
"""What the extent timeline shows changes with these."""
_SURFACE_SHOWS = (*_COST_INPUTS, "position")
"""What a cost surface shows (the surface, the queries on it) changes with these."""
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


@dataclass(frozen=True)
class _Feed:
    """Readings ``begin`` to ``stop`` (of the readings whose digest is ``digest``) into fresh
    extents of ``query`` over ``window``, the adaptive selection weighing by ``weights``: the
    cache key of :func:`_fed`; the readings themselves ride along, outside the key."""

    digest: str
    query: Query
    window: Window
    weights: Weights
    begin: int
    stop: int
    ts: np.ndarray = field(compare=False, repr=False)
    records: list[dict] = field(compare=False, repr=False)


Extents = tuple[EagerExtent, LazyExtent, AdaptiveCoalescing]


def _push(extents: Extents, query: Query, feed_ts: np.ndarray, rows: list, span: range) -> int:
    """The readings at ``span`` into the eager and lazy extents and the adaptive selection."""
    eager, lazy, adaptive = extents
    for k in span:
        ts, row = float(feed_ts[k]), rows[k]
        group, value = query.project(row)
        eager.push(ts, value, group)
        lazy.push(ts, value, group)
        adaptive.push(ts, row)
    return len(span)


@lru_cache(maxsize=16)
def _fed(feed: _Feed) -> Extents:
    """The extents after ``feed``, built once for every session that asks (each session gets
    its own copy): every page opens on the same readings and configuration."""
    extents = (
        EagerExtent(feed.window, feed.query.equivalence),
        LazyExtent(feed.window, feed.query.equivalence),
        AdaptiveCoalescing(
            [feed.query, *OTHER_QUERIES],
            feed.window,
            weights=feed.weights,
            reevaluate_every=REEVALUATE_EVERY,
        ),
    )
    _push(extents, feed.query, feed.ts, feed.records, range(feed.begin, feed.stop))
    return extents


@lru_cache(maxsize=64)
def _cost_grid(
    k: int, window: int, atomic: AtomicCosts, weights: Weights
) -> tuple[np.ndarray, ...]:
    """:func:`~workbench.coalesce.cost.cost_grid` over :data:`GRID`, read-only: computed once
    for both surfaces of a page (each redraw asks for both) and for every session alike."""
    grids = cost_grid(GRID, k, window, atomic, weights)
    for grid in grids:
        grid.flags.writeable = False
    return grids


class CoalescingExplorer(SparkRuns, pn.viewable.Viewer):
    """Stream readings into eager and lazy extents; see extents, costs and the selection."""

    measure = param.Selector(
        objects=list(MEASURES),
        default="temperature",
        doc="The coalescing attribute of the configured query.",
    )
    motes = param.ListSelector(
        default=[1, 2, 3, 4, 5, 6],
        objects=list(range(1, 55)),
        doc="Motes streamed (the groups of every query).",
    )
    window_kind = param.Selector(
        objects=["time", "tuples"],
        default="time",
        label="window",
        doc="Time-based or tuple-based window (Section 2.1).",
    )
    window_minutes = param.Number(
        60.0,
        bounds=(1.0, 24 * 60.0),
        step=1.0,
        label="time window (min)",
        doc="Size of a time window.",
    )
    window_tuples = param.Integer(
        500, bounds=(1, 20_000), label="tuple window", doc="Size of a tuple window."
    )
    equivalence = param.Selector(
        objects=["equal", "absolute", "relative", "increasing", "quantized"],
        default="quantized",
        doc="When consecutive values coalesce (Section 3, Appendix B).",
    )
    quantum = param.Number(
        0.5, bounds=(1e-3, 100.0), step=0.05, doc="Band width of the quantized equivalence."
    )
    tolerance = param.Number(
        0.2,
        bounds=(0.0, 100.0),
        step=0.05,
        doc="Tolerance of the absolute and relative equivalences.",
    )
    scheme = param.Selector(
        objects=["eager", "lazy"],
        default="eager",
        doc="The scheme whose stored tuples the timeline shows: eager (merged on arrival) or "
        "lazy (every reading, merged when read).",
    )
    w_memory = param.Number(
        1.0,
        bounds=(0.0, 100.0),
        step=0.5,
        label="weight: memory",
        doc="How much memory (stored tuples) counts in the cost (lambda_mu of Eq. 9-10).",
    )
    w_update = param.Number(
        1.0,
        bounds=(0.0, 100.0),
        step=0.5,
        label="weight: update",
        doc="How much the work per arrival (inserts, merges, splits) counts (lambda_nu, Eq. 9-10).",
    )
    w_scan = param.Number(
        2.0,
        bounds=(0.0, 100.0),
        step=0.5,
        label="weight: scan",
        doc="How much reading the window (scans) counts in the cost (lambda_sigma of Eq. 9-10).",
    )
    running = param.Boolean(False, doc="Whether the stream is advancing.")
    speed = param.Integer(
        150,
        bounds=(1, 5000),
        label="readings per tick",
        doc=f"Readings pushed every {PERIOD_MS} ms while running.",
    )
    position = param.Integer(0, bounds=(0, None), doc="Readings pushed so far.")
    readings = param.DataFrame(doc="Readings (time, mote, measures, arrival); simulated default.")
    run_on = param.Selector(
        doc="Where the readings are coalesced: in this process, or streamed through the Spark "
        "coalescing query of the chosen scheme."
    )
    spark_failed = param.Boolean(False, doc="Whether spark_message reports a failure.")
    spark_unit = "readings"

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = default_readings()
        self.spark_pane = pn.pane.Alert(
            alert_type="info", css_classes=["coalescing-spark"], sizing_mode="stretch_width"
        )
        super().__init__(**params)
        self._callback: pn.io.callbacks.PeriodicCallback | None = None
        self._spark_settings: CoalesceSettings | None = None  # what the job has, or will have
        self.query_table = ReadTable(
            pd.DataFrame(),
            titles=TABLE_TITLES,
            formats={"cp": "{:.3f}".format, "oop": "{:.3f}".format},  # 0.87 reads 0.870
        )
        self.readout_pane = pn.pane.Markdown(css_classes=["coalescing-readout"], width=330)
        self._select_rows()
        self._rebuild(upto=min(PRELOAD, len(self._ts)))
        self._update_table()

    @property
    def source(self) -> str:
        """Where the readings come from (the simulated replica says so)."""
        return str(self.readings.attrs.get("source", "readings"))

    def _select_rows(self) -> None:
        """The chosen motes' readings in arrival order (out of order in reading time)."""
        table = self.readings[self.readings["mote"].isin(self.motes)]
        table = table.sort_values("arrival", kind="stable")
        start = self.readings["time"].min()
        self._ts = (table["time"] - start).dt.total_seconds().to_numpy()
        self._rows = table[["mote", *MEASURES]].to_dict("records")
        digest = hashlib.blake2b(self._ts.tobytes())
        digest.update(pd.util.hash_pandas_object(table[["mote", *MEASURES]], index=False).values)
        self._digest = digest.hexdigest()

    @param.depends("motes", "readings", watch=True)
    def _restream(self) -> None:
        self._select_rows()
        self._rebuild(upto=min(self.position, len(self._ts)))

    def window(self) -> Window:
        """The configured window."""
        if self.window_kind == "time":
            return Window("time", self.window_minutes * 60.0)
        return Window("tuples", self.window_tuples)

    def query(self) -> Query:
        """The configured query: the measure per mote under the chosen equivalence."""
        eq = Equivalence(self.equivalence, tolerance=self.tolerance, quantum=self.quantum)
        return Query(f"{self.measure} (configured)", (self.measure,), ("mote",), eq)

    def weights(self) -> Weights:
        """The cost weights (lambda_mu, lambda_nu, lambda_sigma)."""
        return Weights(self.w_memory, self.w_update, self.w_scan)

    @param.depends("measure", *_EXTENT_INPUTS, watch=True)
    def _reconfigure(self) -> None:
        self._rebuild(upto=self.position)

    def _rebuild(self, upto: int) -> None:
        """Fresh extents fed with the latest readings up to ``upto`` (at most REPLAY_CAP),
        copied from the ones :func:`_fed` built for this data and configuration."""
        feed = _Feed(
            self._digest,
            self.query(),
            self.window(),
            self.weights(),
            max(0, upto - REPLAY_CAP),
            upto,
            self._ts,
            self._rows,
        )
        self.eager, self.lazy, self._adaptive = copy.deepcopy(_fed(feed))
        if self.position == upto:  # the views read the new extents: one update, when filled
            self.param.trigger("position")
        else:
            self.position = upto

    def step(self, n: int | None = None) -> int:
        """Push the next ``n`` readings (``speed`` by default); return how many were pushed."""
        n = self.speed if n is None else n
        stop = min(self.position + n, len(self._ts))
        extents = (self.eager, self.lazy, self._adaptive)
        pushed = _push(extents, self.query(), self._ts, self._rows, range(self.position, stop))
        if stop >= len(self._ts):
            self.running = False
        self.position = stop
        return pushed

    @param.depends("running", "speed", watch=True)
    def _run(self) -> None:
        """Start or stop the periodic callback that advances the stream (on Spark: hold or
        resume the replay, at the chosen speed)."""
        if self.run_on == "Spark":
            if self._job is not None:
                self._job.pace(self.spark_rate(), paused=not self.running)
            return
        if self.running and self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.step, period=PERIOD_MS)
        elif not self.running:
            self._stop_stream()

    def cp_oop(self) -> tuple[float, float]:
        """The configured query's cp (merges per accepted tuple) and oop (share of arrivals out
        of time order), over all arrivals since the stream (re)started: "now"."""
        c = self.eager.counters
        return c.cp, c.oop

    def extent(self) -> list[Coalesced]:
        """What the chosen scheme stores: coalesced tuples (eager) or raw tuples (lazy)."""
        if self.scheme == "eager":
            return self.eager.view()
        return uncoalesced(self.lazy.raw())

    def extent_view(self) -> View:
        """The chosen scheme's window extent per group (Figure 2: uncoalesced vs coalesced);
        on Spark, the query's coalesced view."""
        if self.run_on == "Spark":
            tuples, title = self.spark_extent()
        else:
            tuples = self.extent()
            what = (
                "coalesced tuples" if self.scheme == "eager" else "raw tuples (coalesced on scan)"
            )
            title = f"{self.scheme} extent: {len(tuples):,} {what}"
        color = plots.SCHEME_COLORS[self.scheme]
        return plots.extent_view(tuples, title, color, groups=[(m,) for m in self.motes])

    def _window_tuples(self) -> int:
        return self.window_tuples if self.window_kind == "tuples" else max(len(self.lazy), 1)

    def surfaces(self) -> tuple[np.ndarray, np.ndarray]:
        """Weighted eager and lazy costs over the (cp, oop) grid (Eq. 1-10), oop by row.

        k is the number of arrivals when the weights or the window last changed.
        """
        k = max(self.eager.counters.events_in, 1)
        return _cost_grid(k, self._window_tuples(), self._adaptive.config.atomic, self.weights())

    def selection(self) -> pd.DataFrame:
        """Every query's cp and oop (3 decimals), the optimal scheme (Theorem 1), the served one.

        The estimates are those the adaptive selection last decided on (a re-evaluation period),
        as the readout says next to the configured query's current cp and oop.
        """
        k, atomic = max(self.eager.counters.events_in, 1), self._adaptive.config.atomic
        return selection_table(
            self._decided(), self._adaptive.scheme, k, self._window_tuples(), atomic, self.weights()
        )

    def _surface(self, which: int, title: str) -> View:
        both = self.surfaces()
        clim = (float(min(b.min() for b in both)), float(max(b.max() for b in both)))
        return plots.surface_view(GRID, GRID, both[which], title, clim, self.selection())

    def eager_surface(self) -> View:
        """The eager cost surface (Eq. 1, 3, 5 weighted) with the queries where they stand."""
        return self._surface(0, "eager cost: weighted memory + update + scan")

    def lazy_surface(self) -> View:
        """The lazy cost surface (Eq. 2, 4, 6 weighted) with the queries where they stand."""
        return self._surface(1, "lazy cost: weighted memory + update + scan")

    @param.depends("position", "w_memory", "w_update", "w_scan", watch=True)
    def _update_table(self) -> None:
        """The query set's estimates, optimal selection and served schemes; the readout."""
        self.query_table.value = self.selection()
        self.readout_pane.object = self.readout()

    def _decided(self) -> dict[str, tuple[float, float]]:
        """(cp, oop) per query that the adaptive selection last decided on (0, 0 before)."""
        return self._adaptive.decided or dict.fromkeys(self._adaptive.queries, (0.0, 0.0))

    def _configured(self) -> tuple[float, float]:
        """The configured query's cp and oop at the last re-evaluation (3 decimals)."""
        cp, oop = self._decided()[self.query().name]
        return round(cp, 3), round(oop, 3)

    def readout(self) -> str:
        """cp and oop now and at the last re-evaluation, and what each scheme stores (Markdown)."""
        cp, oop = self.cp_oop()
        e, z = self.eager.counters, self.lazy.counters
        if self._adaptive.decided:
            then = [f"at the last re-evaluation **{v:.3f}**" for v in self._configured()]
        else:
            then = [f"not re-evaluated yet (every {REEVALUATE_EVERY:,} arrivals)"] * 2
        spark = self.spark_readout() if self.run_on == "Spark" else ""
        return spark + (
            f"**{self.source}**: {self.position:,} of {len(self._ts):,} readings pushed "
            f"(arrival order)\n\n"
            f"**cp**, share of arrivals that merge into their mote's last tuple: "
            f"now **{cp:.3f}** · {then[0]}\n\n"
            f"**oop**, share of arrivals out of time order: now **{oop:.3f}** · {then[1]}; "
            f"too late for the window: {e.late:,}\n\n"
            f"| | eager | lazy |\n|---|---|---|\n"
            f"| stored tuples | {self.eager.stored:,} | {len(self.lazy):,} |\n"
            f"| inserts | {e.inserts:,} | {z.inserts:,} |\n"
            f"| merges / splits | {e.merges:,} / {e.splits:,} | - |\n"
            f"| detaches / deletes | {e.detaches:,} / {e.deletes:,} | - / {z.deletes:,} |\n"
        )

    # -- run on Spark (server thread; Spark work goes to the job's worker) ---------------------

    def spark_rate(self) -> float:
        """Readings per second the in-process stream pushes at this speed: the replay's pace."""
        return self.speed * 1000.0 / PERIOD_MS

    def spark_records(self) -> pd.DataFrame:
        """The chosen motes' readings as Spark replay records (group, id, value, t, arrival;
        ms; :func:`~workbench.spark.coalesce_job.readings_records`)."""
        from workbench.spark.coalesce_job import readings_records

        return readings_records(self.readings, self.motes, self.measure)

    def spark_settings(self) -> CoalesceSettings:
        """The Spark run's settings for the controls (window in ms), keeping the run's
        retention where it can (:func:`~workbench.spark.coalesce_job.next_settings`)."""
        from workbench.spark.coalesce_job import next_settings

        if self.window_kind == "time":
            window = Window("time", self.window_minutes * 60_000.0)
        else:
            window = Window("tuples", self.window_tuples)
        return next_settings(self._spark_settings, window, self.query().equivalence, self.scheme)

    @param.depends("run_on", watch=True)
    def _switch(self) -> None:
        """Start the run on Spark, or tear it down when back in process."""
        if self.run_on == "Spark":
            self._stop_stream()  # the in-process stream stops
            self._start_spark(STARTING)
            self.running = True
            return
        self._stop_polling()
        self._spark_end(spark_failed=False, running=False)
        self._spark_settings = None
        self.param.trigger("position")

    def _start_spark(self, message: str) -> None:
        """(Re)start the Spark run on the chosen readings and settings (in the worker)."""
        job = self._spark_begin(message, spark_failed=False)
        self._spark_settings = None
        self._spark_settings = settings = self.spark_settings()
        start = partial(job.start, self.spark_records(), settings, self.spark_rate(), False)
        job.submit(start, self._spark_said)

    @param.depends("scheme", *_EXTENT_INPUTS, watch=True)
    def _spark_reconfigure(self) -> None:
        """On Spark: apply the change as restart_kind says (in the worker); announce it."""
        if self.run_on != "Spark" or self._job is None or self._spark_settings is None:
            return
        settings = self.spark_settings()
        if settings == self._spark_settings:
            return
        self._spark_settings = settings
        self.param.update(spark_message="Applying the change on Spark...", spark_failed=False)
        self._job.submit(partial(self._job.reconfigure, settings), self._reconfigured)

    @param.depends("measure", "motes", "readings", watch=True)
    def _spark_new_data(self) -> None:
        if self.run_on == "Spark" and self._job is not None:
            self._start_spark("The readings changed: the Spark run restarts on them...")

    def _job_class(self) -> type[CoalesceJob]:
        from workbench.spark.coalesce_job import CoalesceJob  # pyspark loads here

        return CoalesceJob

    def _collecting(self) -> bool:
        return self.run_on == "Spark" and not self.spark_failed

    def _stop_stream(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def close(self, wait: bool = False) -> None:
        """Stop the stream and the Spark run (``wait`` for it): the browser session ended."""
        self._stop_stream()
        super().close(wait)

    def _spark_said(self, message: str) -> None:
        self.param.update(spark_message=message, spark_failed=False)

    def _reconfigured(self, done: Reconfigured) -> None:
        self.param.update(spark_message=done.message, spark_failed=False)

    def _spark_fail(self, exc: Exception) -> None:
        """A failure of the Spark run: it is torn down; say why (first line); the page stays."""
        retry = " Choose in-process, then Spark again to retry."
        self.param.update(spark_failed=True, running=False, spark_message=failure_text(exc) + retry)

    def _show_spark(self, snap: CoalesceSnapshot) -> None:
        self.snapshot = snap
        self.readout_pane.object = self.readout()
        self.spark_shown += 1

    def spark_extent(self) -> tuple[list[Coalesced], str]:
        """Spark's coalesced view as temporal tuples (s) and the timeline's title."""
        snap = self.snapshot
        if snap is None:
            return [], "Spark: waiting for the first micro-batch"
        view = snap.view
        tuples = [
            Coalesced(r.start / 1000.0, k, r.end / 1000.0, (int(r.group),), r.value, int(r.count))
            for k, r in enumerate(view.itertuples(index=False))
        ]
        scheme = snap.settings.scheme
        how = "per-group stateful operator" if scheme == "eager" else "scan of the raw tuples"
        return tuples, f"Spark {scheme} ({how}): {len(tuples):,} coalesced tuples"

    def spark_readout(self) -> str:
        """The Spark run in words: read, replayed, checkpoint, agreement (Markdown)."""
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

    @param.depends("spark_message", "spark_failed", watch=True, on_init=True)
    def _show_spark_status(self) -> None:
        kind = "danger" if self.spark_failed else "info"
        self.spark_pane.param.update(object=self.spark_message or SPARK_HELP, alert_type=kind)

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        spark = self.spark_section()
        controls = pn.Column(
            w.RadioButtonGroup.from_param(self.param.run_on),
            pn.Row(
                w.Toggle.from_param(self.param.running, name="Run / pause", width=130),
                w.IntInput.from_param(self.param.speed, width=130),
            ),
            w.RadioButtonGroup.from_param(self.param.scheme),
            w.Select.from_param(self.param.measure),
            w.MultiChoice.from_param(self.param.motes),
            w.RadioButtonGroup.from_param(self.param.window_kind),
            w.FloatSlider.from_param(self.param.window_minutes),
            w.IntInput.from_param(self.param.window_tuples),
            w.Select.from_param(self.param.equivalence),
            pn.Row(
                w.FloatInput.from_param(self.param.quantum, width=130),
                w.FloatInput.from_param(self.param.tolerance, width=130),
            ),
            w.FloatSlider.from_param(self.param.w_memory),
            w.FloatSlider.from_param(self.param.w_update),
            w.FloatSlider.from_param(self.param.w_scan),
            pn.pane.Markdown(WEIGHTS_HELP, css_classes=["coalescing-help"]),
            width=300,
        )
        return pn.Column(
            intro(INTRO, "Coalescing"),
            pn.Row(
                controls,
                pn.Column(
                    pn.Row(
                        following_pane(
                            self,
                            _EXTENT_SHOWS,
                            plots.extent_figure(self.extent_view(), y_label="mote"),
                            self.extent_view,
                            height=340,
                        ),
                        self.readout_pane,
                        sizing_mode="stretch_width",
                    ),
                    spark,
                    pn.Row(
                        *(
                            following_pane(
                                self,
                                _SURFACE_SHOWS,
                                plots.surface_figure(view(), SURFACE_HEIGHT),
                                view,
                                SURFACE_HEIGHT,
                            )
                            for view in (self.eager_surface, self.lazy_surface)
                        ),
                        sizing_mode="stretch_width",
                    ),
                    self.query_table,
                    sizing_mode="stretch_width",
                ),
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
