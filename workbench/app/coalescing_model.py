"""The Coalescing tab's state and computation, without a page: the (simulated) deployment's
readings stream, in arrival order, into an eager and a lazy window extent and into an adaptive
eager/lazy selection over a set of queries (coalescing paper, Sections 2-6;
:class:`~workbench.coalesce.AdaptiveCoalescing`), with the cost surfaces and the selection
table (Sections 5-7).  :class:`~workbench.app.coalescing.CoalescingExplorer` shows it and
advances it in small batches from a periodic callback (:meth:`CoalescingModel.step`);
:class:`~workbench.app.coalescing_spark.CoalescingSpark` streams the same readings through Spark.

The extents after the preload are built once for every session alike (:func:`_fed`) and each
session gets its own copy; a configuration change replays the latest readings into fresh ones.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import pandas as pd
import param

from workbench.app.newest import Newest
from workbench.coalesce import (
    AdaptiveCoalescing,
    Coalesced,
    EagerExtent,
    Equivalence,
    LazyExtent,
    Query,
    Readings,
    Weights,
    Window,
)
from workbench.coalesce.cost import Atomic, AtomicCosts, cost_grid
from workbench.coalesce.window import uncoalesced
from workbench.data.streams import default_readings
from workbench.experiments.atomic_costs import ATOMIC, cost_grid_of, measure_cells
from workbench.experiments.coalescing import PAPER_LIKE_COSTS
from workbench.experiments.coalescing_mechanisms import MECHANISMS, mechanism_work
from workbench.experiments.coalescing_selection import selection_table

__all__ = [
    "ATOMIC_INPUTS",
    "COST_INPUTS",
    "EXTENT_INPUTS",
    "GRID",
    "MEASURED_CELLS",
    "PERIOD_MS",
    "CoalescingModel",
]

MEASURES = ("temperature", "humidity", "light", "voltage")
PERIOD_MS = 500
"""Period of the stream's periodic callback (the page's tick)."""
PRELOAD = 1500
"""Readings pushed before the first view, so the window is not empty."""
REPLAY_CAP = 1500
"""At most this many of the latest readings are replayed when the configuration changes."""
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
WINDOW_INPUTS = ("window_kind", "window_minutes", "window_tuples")
ATOMIC_INPUTS = tuple(f"c_{name}" for name in ATOMIC)
"""The custom atomic costs of Table 4, one control each."""
COST_INPUTS = ("w_memory", "w_update", "w_scan", "atomic_source", *ATOMIC_INPUTS, *WINDOW_INPUTS)
"""The controls that change what a cost surface shows."""
MEASURED_CELLS = {"grid": (0.0, 0.5, 1.0), "tuples": 600, "window": 150}
"""The runs behind the "measured" atomic costs: a small (cp, oop) grid, measured once per
process on first use (about a second)."""
EXTENT_INPUTS = (*WINDOW_INPUTS, "equivalence", "quantum", "tolerance", "mechanism")
"""The controls that change what an extent stores (its window and equivalence)."""


@dataclass(frozen=True)
class _Feed:
    """Readings ``begin`` to ``stop`` (of the readings whose digest is ``digest``) into fresh
    extents of ``query`` over ``window``, the adaptive selection weighing by ``weights``: the
    cache key of :func:`_fed`; the readings themselves ride along, outside the key."""

    digest: str
    query: Query
    window: Window
    weights: Weights
    atomic: Atomic
    mechanism: str
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


_FEEDING = threading.Lock()
"""One fill at a time: sessions asking for the same feed at once (a room moving alike) then
build it once and share it, as they did when fills ran on the server's loop."""


def _filled(feed: _Feed) -> Extents:
    """Extents of their own, copied from the ones :func:`_fed` built for ``feed`` (in a
    worker thread: :class:`~workbench.app.newest.Newest`)."""
    with _FEEDING:
        fed = _fed(feed)
    return copy.deepcopy(fed)


@lru_cache(maxsize=16)
def _fed(feed: _Feed) -> Extents:
    """The extents after ``feed``, built once for every session that asks (each session gets
    its own copy): every page opens on the same readings and configuration."""
    extents = (
        EagerExtent(feed.window, feed.query.equivalence, mechanism=feed.mechanism),
        LazyExtent(feed.window, feed.query.equivalence),
        AdaptiveCoalescing(
            queries=(feed.query, *OTHER_QUERIES),
            window=feed.window,
            weights=feed.weights,
            atomic=feed.atomic,
            reevaluate_every=REEVALUATE_EVERY,
        ),
    )
    _push(extents, feed.query, feed.ts, feed.records, range(feed.begin, feed.stop))
    return extents


@lru_cache(maxsize=16)
def _mechanisms(feed: _Feed) -> pd.DataFrame:
    """:func:`~workbench.experiments.coalescing_mechanisms.mechanism_work` over ``feed``'s
    readings with a finite value, for its query and window: measured once for every session
    that shows the same readings (each tab's first opening shows it, and every tick of a
    running stream redraws it; docs/benchmarks.md, issue 51).  Read-only for its callers."""
    query, ts, values = feed.query, [], []
    groups = np.empty(feed.stop - feed.begin, dtype=object)
    for k in range(feed.begin, feed.stop):
        group, value = query.project(feed.records[k])
        if np.isfinite(value):
            groups[len(ts)] = group
            ts.append(feed.ts[k])
            values.append(value)
    batch = Readings(np.array(ts, dtype=np.float64), np.array(values), groups[: len(ts)])
    return mechanism_work(batch, feed.window, query.equivalence)


@lru_cache(maxsize=1)
def _measured() -> Atomic:
    """Table 4's costs measured on this machine per (cp, oop) cell (:data:`MEASURED_CELLS`),
    once per process."""
    rng = np.random.default_rng(0)
    cells = MEASURED_CELLS
    return cost_grid_of(measure_cells(rng, cells["grid"], cells["tuples"], cells["window"]))


@lru_cache(maxsize=64)
def _cost_grid(k: int, window: int, atomic: Atomic, weights: Weights) -> tuple[np.ndarray, ...]:
    """:func:`~workbench.coalesce.cost.cost_grid` over :data:`GRID`, read-only: computed once
    for both surfaces of a page (each redraw asks for both) and for every session alike."""
    grids = cost_grid(GRID, k, window, atomic, weights)
    for grid in grids:
        grid.flags.writeable = False
    return grids


def _custom_cost(name: str, what: str) -> param.Number:
    """A custom atomic cost of Table 4, starting at the paper-like value."""
    return param.Number(
        getattr(PAPER_LIKE_COSTS, name),
        bounds=(0.0, None),
        step=0.1,
        label=f"C_{name}",
        doc=f"Custom cost of {what} (Table 4).",
    )


def _allocated(extent: EagerExtent | LazyExtent) -> str:
    """What an extent allocates (``allocated_bytes``: its arrays' room and the Python objects
    they refer to), in all and per raw reading of its window."""
    allocated = extent.allocated_bytes()
    return f"{allocated / 1024:,.0f} KiB ({allocated / max(len(extent), 1):.0f} B)"


class CoalescingModel(param.Parameterized):
    """Readings streamed into eager and lazy extents and the adaptive selection; their costs
    and the selection (module docstring)."""

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
    mechanism = param.Selector(
        objects=list(MECHANISMS),
        default="fast",
        doc="How the eager extent stores its coalesced tuples: ours (fast: linked tuples, "
        "binary-searched vectors) or the paper's array (Algorithm 2: linear scans, shifts). "
        "Same view and atomic operations; the readout compares their work and time.",
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
    atomic_source = param.Selector(
        objects=["custom", "measured"],
        default="custom",
        label="atomic costs",
        doc="Table 4's atomic costs: the custom values below, or measured on this machine per "
        "(cp, oop) cell from real runs of the extents (Section 7.2).",
    )
    c_read = _custom_cost("read", "reading a tuple in a scan")
    c_insert = _custom_cost("insert", "inserting a tuple at its position")
    c_delete = _custom_cost("delete", "deleting the oldest tuple")
    c_attach = _custom_cost("attach", "attaching a timestamp to a tuple")
    c_detach = _custom_cost("detach", "detaching the oldest timestamp from its vector")
    c_merge = _custom_cost("merge", "finding the target tuple and merging into it (mergeTuples)")
    c_split = _custom_cost("split", "finding the target tuple and splitting it (splitTuple)")
    c_coalesce = _custom_cost("coalesce", "coalescing a tuple during a lazy scan")
    running = param.Boolean(False, doc="Whether the stream is advancing.")
    speed = param.Integer(
        150,
        bounds=(1, 5000),
        label="readings per tick",
        doc=f"Readings pushed every {PERIOD_MS} ms while running.",
    )
    position = param.Integer(0, bounds=(0, None), doc="Readings pushed so far.")
    readings = param.DataFrame(doc="Readings (time, mote, measures, arrival); simulated default.")

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = default_readings()
        super().__init__(**params)
        self.newest = Newest(self._feed, _filled, self._install)
        self._select_rows()
        self._rebuild(upto=min(PRELOAD, len(self._ts)))

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

    def atomic(self) -> Atomic:
        """Table 4's atomic costs in force: the custom constants, or the costs measured per
        (cp, oop) cell (:data:`MEASURED_CELLS`, measured on first use)."""
        if self.atomic_source == "measured":
            return _measured()
        return AtomicCosts(*(getattr(self, name) for name in ATOMIC_INPUTS))

    @param.depends("measure", *EXTENT_INPUTS, watch=True)
    def _reconfigure(self) -> None:
        self.newest.request()

    def _feed(self, upto: int | None = None) -> _Feed:
        """The latest readings up to ``upto`` (the position by default; at most REPLAY_CAP)
        into extents of the configuration now."""
        upto = self.position if upto is None else upto
        return _Feed(
            self._digest,
            self.query(),
            self.window(),
            self.weights(),
            self.atomic(),
            self.mechanism,
            max(0, upto - REPLAY_CAP),
            upto,
            self._ts,
            self._rows,
        )

    def _rebuild(self, upto: int) -> None:
        """Fresh extents fed with the latest readings up to ``upto`` (blocking)."""
        feed = self._feed(upto)
        self._install(feed, _filled(feed))

    def _install(self, feed: _Feed, extents: Extents) -> None:
        """``extents``, filled by ``feed``, in place of the current ones; readings pushed
        since the feed was taken (the stream ran while they were filled) follow them."""
        self.eager, self.lazy, self._adaptive = extents
        if self.position > feed.stop:
            _push(extents, feed.query, self._ts, self._rows, range(feed.stop, self.position))
        if self.position >= feed.stop:  # the views read the new extents: one update
            self.param.trigger("position")
        else:
            self.position = feed.stop

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

    def mechanisms(self) -> pd.DataFrame:
        """Both mechanisms of the eager extent, compiled, over the latest readings pushed (at
        most :data:`REPLAY_CAP`, those with a finite value) for the configured query
        (:func:`_mechanisms`, measured once per process for every session alike)."""
        feed = replace(self._feed(), weights=None, atomic=None, mechanism="")  # not read
        return _mechanisms(feed)

    def mechanism_readout(self) -> str:
        """The mechanisms' work and time over the latest readings (Markdown)."""
        rows = "".join(
            f"| {r.mechanism}{' (shown)' if r.mechanism == self.mechanism else ''} | "
            f"{r.pushes_per_s / 1e6:.2f} M | {r.scanned_per_push:.1f} | "
            f"{r.shifted_per_push:.1f} |\n"
            for r in self.mechanisms().itertuples()
        )
        return (
            "\n**eager mechanisms**, compiled over the latest readings (same view, same "
            "atomic operations; ours does not count its work):\n\n"
            "| mechanism | pushes/s | scanned/push | shifted/push |\n|---|---|---|---|\n" + rows
        )

    def _window_tuples(self) -> int:
        """The window's size in tuples (a time window: the tuples it holds now)."""
        return self.window_tuples if self.window_kind == "tuples" else max(len(self.lazy), 1)

    def surfaces(self) -> tuple[np.ndarray, np.ndarray]:
        """Weighted eager and lazy costs over the (cp, oop) grid (Eq. 1-10), oop by row.

        k is the number of arrivals when the weights, the atomic costs or the window last
        changed.
        """
        k = max(self.eager.counters.events_in, 1)
        return _cost_grid(k, self._window_tuples(), self.atomic(), self.weights())

    def selection(self) -> pd.DataFrame:
        """Every query's cp and oop (3 decimals), the optimal scheme (Theorem 1), the served one.

        The estimates are those the adaptive selection last decided on (a re-evaluation period),
        as the readout says next to the configured query's current cp and oop.
        """
        k, atomic = max(self.eager.counters.events_in, 1), self.atomic()
        return selection_table(
            self._decided(), self._adaptive.scheme, k, self._window_tuples(), atomic, self.weights()
        )

    def _decided(self) -> dict[str, tuple[float, float]]:
        """(cp, oop) per query that the adaptive selection last decided on (0, 0 before)."""
        return self._adaptive.decided or dict.fromkeys(self._adaptive.queries, (0.0, 0.0))

    def _configured(self) -> tuple[float, float]:
        """The configured query's cp and oop at the last re-evaluation (3 decimals)."""
        cp, oop = self._decided()[self.query().name]
        return round(cp, 3), round(oop, 3)

    def readout(self) -> str:
        """cp and oop now and at the last re-evaluation, and what each scheme stores (Markdown;
        Sections 5-6)."""
        cp, oop = self.cp_oop()
        e, z = self.eager.counters, self.lazy.counters
        if self._adaptive.decided:
            then = [f"at the last re-evaluation **{v:.3f}**" for v in self._configured()]
        else:
            then = [f"not re-evaluated yet (every {REEVALUATE_EVERY:,} arrivals)"] * 2
        return (
            f"**{self.source}**: {self.position:,} of {len(self._ts):,} readings pushed "
            f"(arrival order)\n\n"
            f"**cp**, share of arrivals that merge into their mote's last tuple: "
            f"now **{cp:.3f}** · {then[0]}\n\n"
            f"**oop**, share of arrivals out of time order: now **{oop:.3f}** · {then[1]}; "
            f"too late for the window: {e.late:,}\n\n"
            f"| | eager | lazy |\n|---|---|---|\n"
            f"| stored tuples | {self.eager.stored:,} | {len(self.lazy):,} |\n"
            f"| bytes allocated (per reading) | {_allocated(self.eager)} | "
            f"{_allocated(self.lazy)} |\n"
            f"| inserts | {e.inserts:,} | {z.inserts:,} |\n"
            f"| merges / splits | {e.merges:,} / {e.splits:,} | - |\n"
            f"| detaches / deletes | {e.detaches:,} / {e.deletes:,} | - / {z.deletes:,} |\n"
        )
