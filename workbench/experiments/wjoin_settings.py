"""The W-join experiments' settings and cases (W-join Section 4, Section 3.1's Figure 4, Section
5): the sizes of one scale (:func:`paper_settings`, ``WORKBENCH_SCALE``: ci or paper) and the
join settings each experiment runs (:class:`WJoinCase`: Figure 6's uniform cliques, Figure 4's
unequal rates, delayed tuples, Section 5's variants).

Every run covers a whole number of windows of stream time (``PaperSettings.windows``, k = 3):
the first fills the buffers, the rest measure the join in steady state, so even the hash
join's one-minute window is filled k times.  A rate whose k-window run would exceed
``max_run_tuples`` tuples is not tried (memory and CPU); a join that keeps up with every rate
tried is reported as not saturated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from workbench.experiments.scale import sized
from workbench.experiments.workloads import WJoinWorkload
from workbench.operators import WindowConstraints
from workbench.operators.windows import Implementation
from workbench.operators.wjoin import MultiWayJoin
from workbench.protocol import Engine

__all__ = [
    "PaperRuns",
    "PaperSettings",
    "WJoinCase",
    "delayed_cases",
    "figure4_cases",
    "figure6_cases",
    "paper_settings",
    "variant_cases",
]


@dataclass(frozen=True)
class PaperSettings:
    """The sizes of the W-join experiments (:func:`paper_settings` picks ci or paper).

    Windows: ``nested_window_ms`` (the paper's nested loop: "windows of seconds") and
    ``hash_window_ms`` (its hash joins: one minute).  Every run covers ``windows`` windows
    of stream time (k; the first fills the buffers, the capacity is measured over the rest),
    and keys are drawn so that a tuple completes ``results_per_tuple`` results on average.
    The maximum sustainable rate doubles from ``start_rate`` while a run of k windows stays
    within ``max_run_tuples`` tuples, then bisects ``refine`` times; with ``retry`` a rate is
    given up only when a second run fails too.  The counters are read at ``probe_rate``.
    Figure 7 runs ``response_rates``, each covering ``response_windows`` windows (one call
    per tuple); the delayed run delays tuples up to ``delay_windows`` windows.  ``engine``
    runs every join.

    A join that keeps up with the whole grid is, with ``beyond_windows`` set, probed beyond
    it (:func:`~workbench.experiments.wjoin_rates.beyond_grid`): up to ``beyond_steps`` runs,
    the first at the steady-state capacity measured at the grid's top, each next one at the
    capacity the last run measured, each covering ``beyond_windows`` windows (one fills the
    buffers, the rest is measured) and at most ``beyond_max_tuples`` tuples.  Figure 7's
    paper FEW is run again at ``repeat_rates`` with ``repeat_seeds`` more seeds (1, 2, ...):
    whether its curve's shape is the streams' noise."""

    nested_window_ms: float
    hash_window_ms: float
    windows: float
    max_run_tuples: int
    start_rate: float
    refine: int
    probe_rate: float
    response_rates: tuple[float, ...]
    response_windows: float
    engine: Engine
    retry: bool = True
    beyond_windows: float | None = None
    beyond_max_tuples: int = 0
    beyond_steps: int = 2
    repeat_rates: tuple[float, ...] = ()
    repeat_seeds: int = 0
    ways: tuple[int, ...] = (2, 3, 4, 5)
    results_per_tuple: float = 1.0
    delay_windows: float = 0.25

    def __post_init__(self) -> None:
        for name in (
            "nested_window_ms", "hash_window_ms", "windows", "start_rate", "probe_rate",
            "response_windows",
        ):  # fmt: skip
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} = {value!r} must be a positive number")
        if self.beyond_windows is not None and not (
            self.beyond_windows > 1.0 and self.beyond_max_tuples >= 1 and self.beyond_steps >= 1
        ):
            raise ValueError(
                f"beyond_windows = {self.beyond_windows!r}, beyond_max_tuples = "
                f"{self.beyond_max_tuples!r}, beyond_steps = {self.beyond_steps!r}: probes "
                "beyond the grid need more than one window, a tuple and a step"
            )
        if self.refine < 0 or self.max_run_tuples < 1:
            raise ValueError(
                f"refine = {self.refine!r}, max_run_tuples = {self.max_run_tuples!r}: refine "
                "must be >= 0, max_run_tuples >= 1"
            )
        if not self.ways or not all(2 <= m <= 6 for m in self.ways):
            raise ValueError(f"ways = {self.ways!r} must be joins of 2 to 6 streams")
        if not self.response_rates or min(self.response_rates) <= 0:
            raise ValueError(f"response_rates = {self.response_rates!r} must be positive rates")

    def workload(self, window_ms: float, **changes: Any) -> WJoinWorkload:
        """The workload of a case with window ``window_ms`` (``changes``: its other fields):
        runs of ``windows`` windows."""
        base = WJoinWorkload(
            window_ms=window_ms, windows=self.windows, results_per_tuple=self.results_per_tuple
        )
        return replace(base, **changes)

    def max_rate(self, workload: WJoinWorkload) -> float:
        """The highest aggregate rate a run of ``workload`` may take: its windows of stream
        time hold ``max_run_tuples`` tuples at it.

        >>> s = paper_settings()
        >>> round(s.max_rate(s.workload(s.hash_window_ms)))   # 1,000 in 3 windows of 25 ms
        13333
        """
        return 1000.0 * self.max_run_tuples / (workload.windows * workload.window_ms)

    def probe_only(self, workload: WJoinWorkload) -> PaperSettings:
        """These settings with the rate grid of ``workload`` stopped at the probe rate: for
        a case whose verdict reads only the counters there.

        >>> s = paper_settings()
        >>> s.probe_only(s.workload(s.nested_window_ms)).max_rate(s.workload(20.0))
        4000.0
        """
        tuples = self.probe_rate * workload.windows * workload.window_ms / 1000.0
        return replace(self, max_run_tuples=math.ceil(tuples), beyond_windows=None)


def paper_settings() -> PaperSettings:
    """The sizes in force (``WORKBENCH_SCALE``).  ``ci`` runs in seconds with the python
    engine: windows of tens of ms, 2- and 3-way, runs of 3 windows of at most 1,000 tuples,
    one bisection step, no second run for a rate given up, joins that keep up with the grid
    probed past it (runs of 1.5
    windows); Figure 7 at 500-32,000/s over 6 windows (0.15 s), the paper FEW again with a
    second seed at 2,000 and 8,000/s.  ``paper`` runs the paper's windows (1 s nested loop,
    one minute hash) with the compiled engine, 2- to 5-way, runs of 3 windows of at most
    1,500,000 tuples (the hash join's grid then stops at 8,000/s, where the compiled joins
    keep up: FEW / BEW compares their steady-state capacities there), one bisection step, no
    second run for a rate given up (the joining thread's CPU time is steady enough), counters
    at 8,000/s; Figure 7 at 250-24,000/s over 1.25 windows (past both BEWs' maxima), the
    paper FEW again with three more seeds at 4,000 and 8,000/s.  The probes past the grid are
    off at this scale: each costs about a window of CPU (a minute for the hash join);
    ``replace(paper_settings(), beyond_windows=1.1)`` runs them (runs of at most 20,000,000
    tuples).  What the set and the probes cost: docs/wjoin.md.

    >>> s = paper_settings()
    >>> s.ways, s.engine, s.hash_window_ms, s.windows
    ((2, 3), 'python', 25.0, 3.0)
    """
    return PaperSettings(
        nested_window_ms=sized(ci=20.0, paper=1_000.0),
        hash_window_ms=sized(ci=25.0, paper=60_000.0),
        windows=3.0,
        max_run_tuples=sized(ci=1_000, paper=1_500_000),
        start_rate=4_000.0,
        refine=1,
        probe_rate=sized(ci=4_000.0, paper=8_000.0),
        response_rates=sized(
            ci=(500.0, 2_000.0, 8_000.0, 32_000.0),
            paper=(250.0, 1_000.0, 4_000.0, 8_000.0, 16_000.0, 24_000.0),
        ),
        response_windows=sized(ci=6.0, paper=1.25),
        engine=sized(ci="python", paper="compiled"),
        retry=False,
        ways=sized(ci=(2, 3), paper=(2, 3, 4, 5)),
        beyond_windows=sized(ci=1.5, paper=None),  # paper: replace(s, beyond_windows=1.1)
        beyond_max_tuples=sized(ci=3_000, paper=20_000_000),
        beyond_steps=2,
        repeat_rates=sized(ci=(2_000.0, 8_000.0), paper=(4_000.0, 8_000.0)),
        repeat_seeds=sized(ci=1, paper=3),
    )


@dataclass(frozen=True)
class WJoinCase:
    """One join setting: constraints, implementation, strategy, workload; ``form`` and
    ``label`` name it in the tables."""

    form: str
    label: str
    constraints: WindowConstraints
    implementation: Implementation
    workload: WJoinWorkload
    strategy: str = "uniform"

    def join(self, cls: type[MultiWayJoin], mechanism: str, engine: Engine) -> MultiWayJoin:
        """A fresh BEW or FEW join of this case."""
        return cls(
            constraints=self.constraints,
            max_delay=[self.workload.max_delay_ms] * self.constraints.m,
            implementation=self.implementation,
            strategy=self.strategy,
            mechanism=mechanism,
            engine=engine,
        )

    def rows(self, rate: float, seed: int) -> pd.DataFrame:
        """This case's streams at ``rate``: the same for every join and mechanism (seeded by
        the seed, the arity and the rate)."""
        rng = np.random.default_rng([seed, self.constraints.m, round(rate)])
        return self.workload.streams(rng, self.constraints.m, rate)


def figure6_cases(settings: PaperSettings) -> list[WJoinCase]:
    """Figure 6: (a) hash, one-minute window (b) nested loop, window of seconds; 2- to 5-way."""
    cases = []
    for impl, w in (("hash", settings.hash_window_ms), ("nested", settings.nested_window_ms)):
        for m in settings.ways:
            wc = WindowConstraints.uniform(m, w)
            cases.append(
                WJoinCase("uniform clique", f"{m}-way {impl}", wc, impl, settings.workload(w))
            )
    return cases


def figure4_cases(settings: PaperSettings, m: int = 4) -> list[WJoinCase]:
    """Figure 4: m-way nested loop, half the streams at a tenth of the others' rate, and the
    same aggregate rate split equally."""
    w = settings.nested_window_ms
    wc = WindowConstraints.uniform(m, w)
    unequal = settings.workload(w, slow_streams=m // 2, slow_factor=0.1)
    return [
        WJoinCase("unequal rates", f"{m}-way, {m // 2} at 1/10", wc, "nested", unequal),
        WJoinCase("equal rates", f"{m}-way, equal", wc, "nested", settings.workload(w)),
    ]


def delayed_cases(settings: PaperSettings, m: int = 3) -> list[WJoinCase]:
    """Delayed tuples: an m-way nested loop whose tuples arrive up to D after their
    timestamps (D = ``delay_windows`` windows), out of order."""
    w = settings.nested_window_ms
    d = settings.delay_windows * w
    workload = settings.workload(w, max_delay_ms=d)
    return [
        WJoinCase(
            "delayed", f"{m}-way, D = {d:g} ms", WindowConstraints.uniform(m, w), "nested", workload
        )
    ]


def variant_cases(settings: PaperSettings) -> list[WJoinCase]:
    """Section 5: GCA and LCA on a 4-way non-uniform clique (W/5 everywhere but W between S3
    and S1, S2); a 4-way graph join, the cycle S0-S1-S2-S3-S0 with W/2 per edge and no
    constraint on S0-S2 nor S1-S3 (bounded by shortest paths: W), by the modified BEW and the
    conservative approach (GCA over the shortest-path bounds, BEW and FEW).  Nested loop."""
    w = settings.nested_window_ms
    workload = settings.workload(w)
    clique = np.full((4, 4), w / 5)
    clique[3, 1:3] = clique[1:3, 3] = w
    nonuniform = WindowConstraints(clique)
    graph = WindowConstraints.graph(4, {(0, 1): w / 2, (1, 2): w / 2, (2, 3): w / 2, (0, 3): w / 2})
    return [
        WJoinCase("non-uniform clique", "gca", nonuniform, "nested", workload, "gca"),
        WJoinCase("non-uniform clique", "lca", nonuniform, "nested", workload, "lca"),
        WJoinCase("graph", "modified", graph, "nested", workload, "modified"),
        WJoinCase("graph", "gca", graph, "nested", workload, "gca"),
    ]


@dataclass(frozen=True)
class PaperRuns:
    """Every run of :func:`~workbench.experiments.wjoin_paper.paper_runs`: ``figure6`` (hash
    and nested, 2- to 5-way), ``figure4`` (unequal and equal rates), ``delayed``, ``variants``
    (GCA vs LCA, graph join) as :func:`~workbench.experiments.wjoin_rates.case_runs` frames;
    ``figure7`` as :func:`~workbench.experiments.wjoin_rates.response_runs`'s, and
    ``figure7_repeats`` (the paper's FEW at ``settings.repeat_rates``, seed 0 from
    ``figure7`` and ``repeat_seeds`` more); the ``settings`` they ran with."""

    settings: PaperSettings
    figure6: pd.DataFrame
    figure4: pd.DataFrame
    delayed: pd.DataFrame
    variants: pd.DataFrame
    figure7: pd.DataFrame
    figure7_repeats: pd.DataFrame
