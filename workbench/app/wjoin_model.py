"""The Multi-way join tab's state and computation, without a page: motes of the (simulated)
deployment as streams, a constraint graph over them, BEW-join and FEW-join run side by side on
the same tuples, by our fast mechanism or the paper's, and measured (W-join paper, Sections
3-5): throughput, response times, tuples the search visited outside the period and the peak
of tuples buffered.
:class:`~workbench.app.wjoin.WJoinExplorer` shows it; a run happens in a worker thread
(:meth:`WJoinModel.run_async`) so the server keeps serving.
"""

from __future__ import annotations

import asyncio
import copy
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import param

from workbench.app.newest import on_page
from workbench.data.streams import default_readings
from workbench.experiments import Clock, profile_wjoin
from workbench.operators import BEWJoin, FEWJoin, WindowConstraints
from workbench.viz.wjoin import significant

__all__ = [
    "BEW_STRATEGIES",
    "FEW_STRATEGIES",
    "GRAPHS",
    "MEASURES",
    "MECHANISMS",
    "RunResult",
    "WJoinModel",
    "max_delays",
    "run_join",
]

GRAPHS = ("uniform clique", "non-uniform clique", "path", "star")
"""Constraint graphs offered: every pair under one window; every pair, streams i < j under
``window * (1 + (j - i) / m)`` (W-join Section 5.1); a chain in the chosen order; all to the
first."""
BEW_STRATEGIES = ("modified", "gca", "lca")
"""How BEW-join windows a graph that is not a uniform clique (W-join Section 5.1): modified
BEW, or the conservative global (GCA) or local (LCA) constraint windows."""
FEW_STRATEGIES = ("gca", "lca")
"""The same for FEW-join (no modified form)."""
MECHANISMS = ("fast", "paper")
"""How the algorithms search and expire (:data:`~workbench.operators.windows.Mechanism`): ours,
or the paper's Sections 3.1-3.2 as written."""
MEASURES = {
    "algorithm": str,
    "results": int,
    "tuples/s": float,
    "mean response (ms)": float,
    "p95 response (ms)": float,
    "late": int,
    "visited outside": int,
    "peak buffered": int,
}
"""Columns of the measures table and their types (also before a run, when it is empty)."""


@dataclass(frozen=True)
class RunResult:
    """What one join run did: tuples, results, throughput, response times, result times,
    buffered tuples the search visited outside the period, the most tuples buffered at once."""

    algorithm: str
    tuples: int
    results: int
    late: int
    seconds: float
    response_ms: np.ndarray
    emitted_at: np.ndarray
    visited_outside: int = 0
    peak_buffered: int = 0

    @property
    def throughput(self) -> float:
        """Tuples processed per second of processing time."""
        return self.tuples / self.seconds if self.seconds > 0 else float("inf")


def max_delays(rows: pd.DataFrame) -> list[float]:
    """Each stream's largest delay (``arrival - ts``) in ``rows``, a hair above (no tuple is
    late), streams in order.

    >>> rows = pd.DataFrame({"stream": [1, 0, 1], "ts": [0.0, 1.0, 2.0],
    ...                      "arrival": [3.0, 1.5, 2.5]})
    >>> [round(d, 3) for d in max_delays(rows)]
    [0.5, 3.0]
    """
    return [
        float((g["arrival"] - g["ts"]).max()) + 1e-6 for _, g in rows.groupby("stream", sort=True)
    ]


def run_join(
    op: BEWJoin | FEWJoin, rows: pd.DataFrame, algorithm: str, clock: Clock = time.perf_counter
) -> RunResult:
    """Push ``rows`` (stream, id, value, ts, arrival; arrival order; times in seconds) through
    ``op``, timed by the experiments' harness (:func:`~workbench.experiments.profile_wjoin`).

    Response times follow its one first-come-first-served model (ms): a result's emitting
    call finishes after every earlier call, and its response time runs from the arrival of
    its last tuple to that finish.
    """
    p = profile_wjoin(op, rows, unit_ms=1000.0, clock=clock)
    return RunResult(
        algorithm,
        len(rows),
        p.results,
        p.counters.late,
        p.seconds,
        p.response_ms(),
        p.emitted_at_ms() / 1000.0,
        p.counters.visited_outside,
        p.counters.peak_buffered,
    )


SETTINGS = (
    "motes",
    "graph",
    "window",
    "quantum",
    "hours",
    "implementation",
    "bew_strategy",
    "few_strategy",
    "algorithms",
    "mechanism",
)
"""The parameters a run joins at: a move of one after a run makes its results stale."""


class WJoinModel(param.Parameterized):
    """Motes as streams under a constraint graph; BEW and FEW run on the same tuples and
    measured (module docstring)."""

    motes = param.ListSelector(
        default=[1, 2, 3], objects=list(range(1, 55)), doc="Motes joined (2 to 6 streams)."
    )
    graph = param.Selector(
        objects=list(GRAPHS), default=GRAPHS[0], doc="Which pairs carry a window."
    )
    window = param.Number(
        60.0, bounds=(1.0, 3600.0), step=1.0, label="window (s)", doc="Window of every edge."
    )
    quantum = param.Number(
        0.5,
        bounds=(0.01, 10.0),
        step=0.01,
        label="temperature band (C)",
        doc="Tuples join when their temperatures fall in the same band (equality predicate).",
    )
    hours = param.Number(
        6.0, bounds=(0.5, 24.0), step=0.5, label="hours of data", doc="Stream time replayed."
    )
    implementation = param.Selector(
        objects=["hash", "nested"], default="hash", doc="Hash buckets or nested-loop buffers."
    )
    bew_strategy = param.Selector(
        objects=list(BEW_STRATEGIES),
        default="modified",
        label="BEW strategy",
        doc="For a graph other than a uniform clique: modified BEW, or GCA / LCA windows.",
    )
    few_strategy = param.Selector(
        objects=list(FEW_STRATEGIES),
        default="gca",
        label="FEW strategy",
        doc="For a graph other than a uniform clique: GCA or LCA windows.",
    )
    algorithms = param.ListSelector(
        default=["BEW", "FEW"], objects=["BEW", "FEW"], doc="Which evaluation strategies run."
    )
    mechanism = param.Selector(
        objects=list(MECHANISMS),
        default="fast",
        doc="Our fast search and expiry, or the paper's (W-join Sections 3.1-3.2): the same "
        "results, other work and memory.",
    )
    running = param.Boolean(False, doc="Whether a run is in progress.")
    results = param.List(default=[], item_type=RunResult, doc="Results of the last run.")
    ran_with = param.Dict(
        default={}, doc="The settings the last run joined at (:meth:`setting`); empty before it."
    )
    message = param.String("", doc="Outcome of the last run, or why it could not run.")
    readings = param.DataFrame(doc="Readings (time, mote, temperature, arrival).")

    def __init__(self, **params: object) -> None:
        if "readings" not in params:
            params["readings"] = default_readings()
        super().__init__(**params)
        self._started = False

    def constraints(self) -> WindowConstraints:
        """The window constraints of the chosen graph over the chosen motes."""
        m = len(self.motes)
        if self.graph == "uniform clique":
            return WindowConstraints.uniform(m, self.window)
        if self.graph == "non-uniform clique":
            pairs = {
                (i, j): self.window * (1 + (j - i) / m) for i in range(m) for j in range(i + 1, m)
            }
            return WindowConstraints.graph(m, pairs)
        if self.graph == "path":
            return WindowConstraints.path([self.window] * (m - 1))
        return WindowConstraints.graph(m, {(0, j): self.window for j in range(1, m)})

    def rows(self) -> pd.DataFrame:
        """The motes' readings as tuples (stream, id, band, ts, arrival) in arrival order."""
        r = self.readings
        start = r["time"].min()
        r = r[(r["time"] < start + pd.Timedelta(hours=self.hours)) & r["mote"].isin(self.motes)]
        r = r.dropna(subset=["temperature"]).sort_values("arrival", kind="stable")
        stream = r["mote"].map({m: k for k, m in enumerate(self.motes)})
        return pd.DataFrame(
            {
                "stream": stream.to_numpy(),
                "id": np.arange(len(r)),
                "value": np.floor(r["temperature"].to_numpy() / self.quantum).astype(int),
                "ts": (r["time"] - start).dt.total_seconds().to_numpy(),
                "arrival": (r["arrival"] - start).dt.total_seconds().to_numpy(),
            }
        )

    def operators(self, rows: pd.DataFrame) -> dict[str, BEWJoin | FEWJoin]:
        """One operator per chosen algorithm; delays bounded by the data's largest."""
        wc = self.constraints()
        delay = max_delays(rows)
        if len(delay) != wc.m:
            raise ValueError(f"every chosen mote needs readings; got {len(delay)} of {wc.m}")
        uniform = self.graph == "uniform clique"
        kw = {
            "constraints": wc,
            "max_delay": delay,
            "implementation": self.implementation,
            "mechanism": self.mechanism,
        }
        made: dict[str, BEWJoin | FEWJoin] = {}
        if "BEW" in self.algorithms:
            made["BEW"] = BEWJoin(strategy="uniform" if uniform else self.bew_strategy, **kw)
        if "FEW" in self.algorithms:
            made["FEW"] = FEWJoin(strategy="uniform" if uniform else self.few_strategy, **kw)
        return made

    def setting(self) -> dict[str, object]:
        """The settings a run joins at (:data:`SETTINGS`), copied."""
        return {name: copy.copy(getattr(self, name)) for name in SETTINGS}

    def frozen(self) -> WJoinModel:
        """A model of its own at the settings now, for a run that later moves do not reach."""
        return WJoinModel(readings=self.readings, **self.setting())

    def changed_since_run(self) -> list[str]:
        """The labels of the settings moved since the last run (none before the first)."""
        if not self.ran_with:
            return []
        now = self.setting()
        return [self.param[n].label for n in SETTINGS if now[n] != self.ran_with[n]]

    def run(self) -> list[RunResult]:
        """Run the chosen algorithms on the same rows (blocking); store and return results."""
        setting = self.setting()
        results, message = self.compute()
        self.param.update(results=results, message=message, ran_with=setting)
        return results

    def compute(self) -> tuple[list[RunResult], str]:
        """The chosen algorithms' runs and the outcome in words; sets no parameter, so it can
        run in a worker thread while the page's state changes only on the server's loop."""
        try:
            if not 2 <= len(self.motes) <= 6:
                raise ValueError(f"choose 2 to 6 motes, got {len(self.motes)}")
            if not self.algorithms:
                raise ValueError("choose BEW, FEW or both")
            rows = self.rows()
            out = [run_join(op, rows, name) for name, op in self.operators(rows).items()]
        except ValueError as exc:
            return [], f"Cannot run: {exc}"
        found = ", ".join(f"{r.results:,} results ({r.algorithm})" for r in out)
        return out, f"{len(rows):,} tuples from {len(self.motes)} motes joined: {found}."

    async def run_async(self) -> None:
        """Run in a worker thread, so the server keeps serving meanwhile, on a copy of the
        settings as they were when Run was pressed (controls moved meanwhile do not reach the
        run); the outcome is set on the page's next tick (:func:`~workbench.app.newest.on_page`)."""
        if self._started:
            return
        self._started = True
        on_page(partial(setattr, self, "running", True))
        frozen = self.frozen()
        setting = frozen.setting()
        try:
            results, message = await asyncio.to_thread(frozen.compute)
        except BaseException:
            on_page(partial(setattr, self, "running", False))
            raise
        finally:
            self._started = False
        on_page(
            partial(
                self.param.update, results=results, message=message, ran_with=setting, running=False
            )
        )

    def measures(self) -> pd.DataFrame:
        """Per algorithm: results, throughput, mean and 95th-percentile response time (three
        significant digits: they span 0.04 ms to seconds), late tuples, buffered tuples the
        search visited outside the period and the most tuples buffered at once."""
        rows = [
            (
                r.algorithm,
                r.results,
                significant(r.throughput),
                significant(float(r.response_ms.mean())) if r.results else 0.0,
                significant(float(np.percentile(r.response_ms, 95))) if r.results else 0.0,
                r.late,
                r.visited_outside,
                r.peak_buffered,
            )
            for r in self.results
        ]
        return pd.DataFrame(rows, columns=list(MEASURES)).astype(MEASURES)
