"""The W-join measurements at the paper's settings (W-join Section 4): the maximum sustainable
rate of a join (:func:`max_sustainable_rate`, run by :func:`case_runs` for every case,
algorithm and mechanism), FEW / BEW (:func:`few_over_bew`) and Figure 7's response times
(:func:`response_runs`), every join on the same streams.

A run covers the workload's windows of stream time (``PaperSettings.windows``); its
``capacity`` is the paper's steady-state throughput: the tuples arriving after the first
window (the buffers filled) over the busy time of their calls.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.experiments.harness import Clock, engine_calls, warm_up, wtuples
from workbench.experiments.wjoin import wjoin_measures
from workbench.experiments.wjoin_settings import PaperSettings, WJoinCase
from workbench.operators import WindowConstraints
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiWayJoin
from workbench.protocol import Engine

__all__ = [
    "ALGORITHMS",
    "MECHANISMS",
    "RESPONSE_COLUMNS",
    "beyond_grid",
    "case_runs",
    "few_over_bew",
    "max_sustainable_rate",
    "response_runs",
]

MECHANISMS = ("paper", "fast")
"""The mechanisms every case runs: the paper's (Sections 3.1-3.2 as written), then ours."""

ALGORITHMS: tuple[type[MultiWayJoin], ...] = (BEWJoin, FEWJoin)

RESPONSE_COLUMNS = (
    "response_ms", "wait_ms", "queue_ms", "service_ms", "held_share", "max_call_ms",
    "capacity", "results", "windows_covered",
)  # fmt: skip
"""The figures of one Figure 7 run (:func:`response_runs`)."""


def _measure(
    case: WJoinCase,
    cls: type[MultiWayJoin],
    mechanism: str,
    rate: float,
    engine: Engine,
    seed: int,
    clock: Clock,
    batch: int | None = None,
) -> dict[str, float]:
    """One timed run of a case's join at ``rate``: :func:`~workbench.experiments.wjoin.
    wjoin_measures`'s figures, ``capacity`` in steady state (Section 4.2: "measures
    collected in steady state"; the calls arriving after the first window) and
    ``windows_covered`` (the run's stream time in windows)."""
    rows = case.rows(rate, seed)
    op = case.join(cls, mechanism, engine)
    calls = engine_calls(op) if batch is None else batch
    if engine == "compiled":
        warm_up(op, wtuples(rows))
    w = case.workload.window_ms
    measures = wjoin_measures(op, rows, warm_ms=w, clock=clock, batch=calls)
    span = float(rows["ts"].max() - rows["ts"].min()) if len(rows) else 0.0
    measures["windows_covered"] = span / w
    return measures


def max_sustainable_rate(
    capacity_at: Callable[[float], float], start: float, limit: float, refine: int
) -> tuple[float, bool]:
    """The highest aggregate rate a join keeps up with (the harness's notion: its measured
    capacity, tuples per busy second in steady state, still covers the rate), and whether the
    search saturated the join before ``limit``.

    Found by doubling from ``start`` until the capacity at a rate falls below it (or the rate
    passes ``limit``), then ``refine`` geometric bisections between the last rate kept up
    with and the first one not: each step halves the ratio of the bracket (1 step: within
    1.41x, 3 steps: within 1.09x).  0 when even ``start`` is too fast.

    >>> max_sustainable_rate(lambda rate: 3000.0, 1000.0, 64000.0, 2)   # capacity 3,000/s
    (2828.42712474619, True)
    >>> max_sustainable_rate(lambda rate: 1e9, 1000.0, 4000.0, 2)
    (4000.0, False)
    """
    lo, rate = 0.0, start
    while rate <= limit:
        if capacity_at(rate) < rate:
            break
        lo, rate = rate, rate * 2
    else:
        return lo, False
    if lo == 0.0:
        return 0.0, True
    hi = rate
    for _ in range(refine):
        mid = math.sqrt(lo * hi)
        if capacity_at(mid) >= mid:
            lo = mid
        else:
            hi = mid
    return lo, True


def beyond_grid(
    capacity_at: Callable[[float], float],
    kept: float,
    capacity: float,
    steps: int,
    limit: float,
) -> tuple[float, float]:
    """Fixed-point probes past a rate grid that a join kept up with (its top rate ``kept``):
    the first run at ``capacity`` (the steady-state capacity measured at ``kept``), each next
    one at the capacity the last run measured, at most ``steps`` runs, none outside the
    bracket found so far; a rate above ``limit`` (the largest run allowed) is run at
    ``limit``.  Returns the highest rate run and kept up with (``kept`` if none) and the
    lowest rate run and not kept up with (inf if none): rates the join was run at, never
    extrapolated.

    >>> cap = lambda rate: 150_000.0 if rate < 180_000.0 else 120_000.0   # slower when fuller
    >>> beyond_grid(cap, 8000.0, 200_000.0, 2, 1e9)
    (120000.0, 200000.0)
    >>> beyond_grid(cap, 8000.0, 140_000.0, 1, 1e9)
    (140000.0, inf)
    >>> beyond_grid(cap, 8000.0, 160_000.0, 2, 100_000.0)  # kept up at the largest run
    (100000.0, inf)
    """
    failed, rate = math.inf, capacity
    for _ in range(steps):
        rate = min(rate, limit)
        if not (kept < rate < failed):
            break
        measured = capacity_at(rate)
        if measured >= rate:
            kept = rate
        else:
            failed = rate
        rate = measured
    return kept, failed


def case_runs(
    cases: Iterable[WJoinCase],
    settings: PaperSettings,
    seed: int = 0,
    clock: Clock = time.thread_time,
    progress: bool = True,
    mechanisms: tuple[str, ...] = MECHANISMS,
) -> pd.DataFrame:
    """Every case by every algorithm and mechanism: the maximum sustainable rate
    (:func:`max_sustainable_rate` over the rates whose runs fit ``max_run_tuples``, then,
    for a join that kept up with all of them and ``settings.beyond_windows`` set,
    :func:`beyond_grid`'s probes; with ``settings.retry`` a grid rate given up only when a
    second run fails too): ``max_sustainable`` (the highest rate run and kept up with),
    ``saturated`` (False when the join kept up with every rate run), ``not_kept`` (the
    lowest rate run and not kept up with; NaN if none) and ``beyond_runs`` (the probes past
    the grid), ``top_capacity`` (the steady-state capacity of the run at
    ``max_sustainable``), ``windows_at_max`` (the windows of stream time that run covered)
    and the figures per tuple at ``settings.probe_rate``, on the same streams for all
    (``capacity``, ``response_ms``, ``results``, ``results_per_tuple``, ``comparisons``,
    ``visited_inside``, ``visited_outside``, ``peak_buffered``, ``windows_covered``).  FEW
    has no modified strategy: that pair is left out.  ``progress``: a tqdm bar over the
    searches; ``mechanisms``: a subset of :data:`MECHANISMS` to run."""
    jobs = [
        (case, cls, mechanism)
        for case in cases
        for cls in ALGORITHMS
        for mechanism in mechanisms
        if not (cls is FEWJoin and case.strategy == "modified")
    ]
    rows = []
    for case, cls, mechanism in tqdm(jobs, desc="W-join cases", disable=not progress):
        runs, found = _search(case, cls, mechanism, settings, seed, clock)
        probe = runs.get(settings.probe_rate) or _measure(
            case, cls, mechanism, settings.probe_rate, settings.engine, seed, clock
        )
        best = found["max_sustainable"]
        top = runs[best] if best in runs else {"capacity": 0.0, "windows_covered": 0.0}
        rows.append(
            {
                "form": case.form,
                "case": case.label,
                "ways": case.constraints.m,
                "implementation": case.implementation,
                "strategy": case.strategy,
                "algorithm": cls.__name__,
                "mechanism": mechanism,
                **found,
                "top_capacity": top["capacity"],
                "windows_at_max": top["windows_covered"],
                **probe,
            }
        )
    return pd.DataFrame(rows)


def _search(
    case: WJoinCase,
    cls: type[MultiWayJoin],
    mechanism: str,
    settings: PaperSettings,
    seed: int,
    clock: Clock,
) -> tuple[dict[float, dict[str, float]], dict[str, float]]:
    """One join's search: the grid (:func:`max_sustainable_rate`), then past it
    (:func:`beyond_grid`) when it kept up with the whole grid and ``beyond_windows`` is set.
    Returns each rate's first run and :func:`case_runs`'s search columns."""
    runs: dict[float, dict[str, float]] = {}  # each rate's first run (the probe's too)
    job = (case, cls, mechanism)

    def capacity_at(rate: float) -> float:
        if rate not in runs:
            runs[rate] = _measure(*job, rate, settings.engine, seed, clock)
        cap = runs[rate]["capacity"]
        if cap < rate and settings.retry:  # a shared machine's hiccup would otherwise
            # end the search early
            cap = max(cap, _measure(*job, rate, settings.engine, seed, clock)["capacity"])
        return cap

    limit = settings.max_rate(case.workload)
    best, saturated = max_sustainable_rate(capacity_at, settings.start_rate, limit, settings.refine)
    failed, beyond = math.inf, 0
    if not saturated and best in runs and settings.beyond_windows is not None:
        longer = replace(case, workload=replace(case.workload, windows=settings.beyond_windows))

        def beyond_at(rate: float) -> float:
            runs[rate] = _measure(longer, cls, mechanism, rate, settings.engine, seed, clock)
            return runs[rate]["capacity"]

        cap = 1000.0 * settings.beyond_max_tuples
        limit = cap / (settings.beyond_windows * case.workload.window_ms)
        before = len(runs)
        best, failed = beyond_grid(
            beyond_at, best, runs[best]["capacity"], settings.beyond_steps, limit
        )
        saturated, beyond = math.isfinite(failed), len(runs) - before
    return runs, {
        "max_sustainable": best,
        "saturated": saturated,
        "not_kept": failed if math.isfinite(failed) else math.nan,
        "beyond_runs": beyond,
    }


def few_over_bew(
    runs: pd.DataFrame,
    by: tuple[str, ...] = ("case", "mechanism"),
    value: str = "max_sustainable",
) -> pd.DataFrame:
    """FEW's ``value`` (the maximum sustainable rate, or ``top_capacity``) over BEW's, per
    ``by`` (uniform strategies).

    >>> runs = pd.DataFrame({"case": ["a", "a"], "mechanism": ["fast", "fast"],
    ...                      "strategy": "uniform", "algorithm": ["BEWJoin", "FEWJoin"],
    ...                      "max_sustainable": [1000.0, 1500.0]})
    >>> few_over_bew(runs)["few_over_bew"].tolist()
    [1.5]
    """
    top = runs.pivot_table(index=list(by), columns="algorithm", values=value, aggfunc="first")
    ratio = (top["FEWJoin"] / top["BEWJoin"].replace(0.0, np.nan)).rename("few_over_bew")
    return ratio.reset_index()


def response_runs(
    settings: PaperSettings,
    m: int = 3,
    seed: int = 0,
    clock: Clock = time.thread_time,
    progress: bool = True,
    rates: tuple[float, ...] | None = None,
    joins: tuple[tuple[type[MultiWayJoin], str], ...] | None = None,
) -> pd.DataFrame:
    """Figure 7: mean response time (arrival of a result's last tuple to its output, on one
    first-come-first-served server: the harness's model) of hash BEW and FEW, both
    mechanisms (``joins``: a subset of (algorithm, mechanism) pairs), an m-way uniform clique
    with ``settings.hash_window_ms``, at each of ``rates`` (default
    ``settings.response_rates``), runs of ``settings.response_windows`` windows, one tuple
    per call (each result's wait is its own).  The service times are ``clock``'s: by default
    the joining thread's CPU time, as if the join had the machine to itself (on a shared
    machine the wall clock adds others' work).  Columns: ``algorithm``, ``mechanism``,
    ``rate``, ``seed``, ``response_ms`` and its parts (``wait_ms``: held by the join,
    ``queue_ms``: behind earlier calls, ``service_ms``: the emitting call's own; with
    ``held_share`` and ``max_call_ms``, as :func:`~workbench.experiments.wjoin.
    wjoin_measures` gives them), ``capacity`` (the same run's steady-state tuples per busy
    second: where it falls below the rate the queue grows), ``results``,
    ``windows_covered``.
    """
    w = settings.hash_window_ms
    case = WJoinCase(
        "uniform clique", f"{m}-way hash", WindowConstraints.uniform(m, w), "hash",
        settings.workload(w, windows=settings.response_windows),
    )  # fmt: skip
    pairs = joins or tuple((cls, k) for cls in ALGORITHMS for k in MECHANISMS)
    jobs = [(cls, k, rate) for cls, k in pairs for rate in rates or settings.response_rates]
    rows = []
    for cls, mechanism, rate in tqdm(jobs, desc="W-join response", disable=not progress):
        r = _measure(case, cls, mechanism, rate, settings.engine, seed, clock, batch=1)
        rows.append(
            {
                "algorithm": cls.__name__,
                "mechanism": mechanism,
                "rate": rate,
                "seed": seed,
                **{k: r[k] for k in RESPONSE_COLUMNS},
            }
        )
    return pd.DataFrame(rows)
