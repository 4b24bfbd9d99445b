"""Coalescing's in-process benchmark (``./dev bench coalesce``): eager vs lazy throughput over
cp x oop, allocated bytes, Section 7 per mechanism (Table 4 timed and normalised, Figures 3-5,
Tables 5 and 6, the six queries run) and the deployment (coalescing paper, Sections 6-7); a
command that prints figures, never a timed test.

It only formats: the workloads, the timing harness and the analyses are
:mod:`workbench.experiments`'s; the python reference and the compiled kernels run in the same
run, and their ratio is printed beside the goal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchmarks.report import BenchReport, Stages
from workbench.coalesce import Equivalence, Window
from workbench.coalesce.cost import Dcq, costs
from workbench.data.replica import SOURCE_LABEL, simulate_deployment
from workbench.experiments import (
    COMPILED_BATCH,
    ENGINES,
    coalesce_rates,
    coalescing_rows,
    deployment_coalescing,
    rates_grid,
    table5_cps,
    table6_selection,
)
from workbench.experiments.atomic_costs import mechanisms_available, table4_summary
from workbench.experiments.coalescing_memory import allocated_bytes_by_cp
from workbench.experiments.coalescing_selection import what_if_array_costs
from workbench.experiments.coalescing_verdicts import Section7Run, reproduced_rows, run_section7

__all__ = ["bench_coalesce"]


def _table5_lines(selection: pd.DataFrame) -> list[str]:
    return [
        f"    {r.case}: cp reached {r.cp}; eager on {r.eager or 'none'} "
        f"({'matches' if r.matches else 'differs from'} the paper: {r.paper or 'none'})"
        for r in selection.itertuples()
    ]


def _table6_lines(selection: pd.DataFrame) -> list[str]:
    return [
        f"    {r.case}: cp {r.cp}, oop {r.oop}; eager on {r.eager or 'none'} "
        f"({'matches' if r.matches else 'differs from'} the paper: {r.paper or 'none'})"
        for r in selection.itertuples()
    ]


def _figure5_lines(selection: pd.DataFrame) -> list[str]:
    """Figure 5's bars of each case of Table 5 or 6 and their order beside the paper's."""
    return [
        f"    {r['case']}: all lazy {r['all lazy']:.3f}, all eager {r['all eager']:.3f}, "
        f"optimal {r['optimal']:.3f}: {r['result']}"
        + (f" (paper: {r['paper result']})" if "paper result" in r else "")
        for r in selection.to_dict("records")
    ]


def _cell_lines(cells: pd.DataFrame, name: str, grid: Sequence[float]) -> list[str]:
    """One measured atomic cost over cp x oop (ns; '-' where no batch exercised it); a row
    whose streams' out-of-order fraction is not the requested oop says what it was (oop = 1:
    the generator's maximum, ``coalescing_max_oop``)."""
    lines = [f"  C_{name} (ns), rows oop, columns cp " + " ".join(f"{c:>6}" for c in grid)]
    for oop, frame in cells.groupby("oop", sort=False):
        values = " ".join("     -" if np.isnan(v) else f"{1e9 * v:6.0f}" for v in frame[name])
        measured = float(frame["oop_measured"].mean())
        label = f" (measured {measured:.2f})" if abs(measured - oop) > 0.01 else ""
        lines.append(f"    oop {oop:3.1f}{label:<27}" + values)
    return lines


def _section7_lines(run: Section7Run) -> list[str]:
    """One mechanism's Section 7: Table 4 measured and normalised, Figures 3-4, Tables 5-6
    and Figure 5, the six-query run."""
    c, grid = run.cells, sorted(run.cells["cp"].unique())
    k, w = int(c["tuples"].iloc[0]), int(c["window_tuples"].iloc[0])
    lines = [
        f"  Table 4, {run.mechanism} mechanism, compiled extents: {len(grid)} x {len(grid)} "
        f"cells of {k:,} timed tuples, window {w:,}, least squares over each cell's timed "
        f"push_batch batches (median {int(c['batches'].median()):,} per cell; push_batch's "
        f"call {1e6 * c['call_s'].median():.1f} us fitted apart); Section 7 took "
        f"{run.seconds:.0f} s",
        "    Table 4 over the cells (ns; median se: one cell's spread):",
    ]
    lines += ["    " + line for line in table4_summary(c).round(0).to_string().split("\n")]
    for name in ("insert", "merge", "split", "read"):
        lines += _cell_lines(c, name, grid)
    lines.append(
        f"  Table 4 normalised (Eq. 7-8, Section 6.2's M_max, U_max, S_max), the model with "
        f"these costs, k = {k:,}, w = {w:,}: memory / update / scan, eager | lazy"
    )
    for oop in (grid[0], grid[-1]):
        for cp in grid:
            eager, lazy = costs(Dcq("cell", cp, oop), k, w, run.grid)
            lines.append(
                f"    cp {cp:3.1f} oop {oop:3.1f}  {eager.memory:5.2f} {eager.update:5.2f} "
                f"{eager.scan:5.2f} | {lazy.memory:5.2f} {lazy.update:5.2f} {lazy.scan:5.2f}"
            )
    lines.append("  Figures 3 and 4 (the model with the measured costs; the runs themselves):")
    lines += ["    " + line for line in run.summary.round(3).to_string().split("\n")]
    if run.table5 is not None:
        lines.append("  Table 5 on the deployment (weights <1,1,2>), measured costs:")
        lines += _table5_lines(run.table5) + _figure5_lines(run.table5)
    lines.append("  Table 6 by the model (weights <0,1,1>), measured costs:")
    lines += _table6_lines(run.table6) + _figure5_lines(run.table6)
    lines.append(
        "  Table 6's six queries run and timed (measured best of all 64 selections; the "
        "model's selection with the measured costs):"
    )
    for r in run.six.to_dict("records"):
        lines.append(
            f"    {r['case']}: measured eager on {r['measured'] or 'none'}, model "
            f"{r['modelled'] or 'none'}, paper {r['paper'] or 'none'}; regret of the model's "
            f"{r['regret']:.1%}, margin {r['margin']:.1%}; bars all lazy {r['all lazy']:.2f}, "
            f"all eager {r['all eager']:.2f}, optimal {r['optimal']:.2f}"
        )
    return lines


def bench_coalesce(
    tuples: int = 200_000,
    grid_tuples: int = 200_000,
    deployment_readings: int = 2_300_000,
    cell_tuples: int | None = None,
    memory_tuples: int = 20_000,
    memory_window: int = 5000,
    cps_days: float = 3.0,
    seed: int = 0,
) -> BenchReport:
    """Eager vs lazy coalescing (coalescing paper, Section 7): throughput over cp x oop by
    the python reference and the compiled kernels; per mechanism (ours, and the paper's array
    extent when it exists) Table 4's atomic costs timed on the compiled extents per (cp, oop)
    cell and normalised as Section 6.2 says, Figures 3 and 4 from the model and from the
    runs, Tables 5 and 6 with Figure 5's bars, Table 6's six queries run; the deployment.
    The Section 7 sizes follow ``WORKBENCH_SCALE`` (``cell_tuples`` overrides the tuples per
    cell); Table 5's cps are measured on ``cps_days`` of the simulated deployment."""
    window_tuples = 1000
    rng = np.random.default_rng(seed)
    window, eq = Window("tuples", window_tuples), Equivalence()
    lines = [
        f"Coalescing: synthetic streams (3 time-varying, 3 time-invariant attributes with "
        f"3/5/7 groups), coalescing a1 grouped by g1, tuple-based window of {window_tuples:,}"
    ]
    with Stages("bench coalesce", 4 + len(mechanisms_available()) + 2 * len(ENGINES)) as stages:
        stages.begin(f"cp 0.5, oop 0.1, {tuples:,} tuples")
        stream = coalescing_rows(rng, tuples, cp=0.5, oop=0.1)
        headline = {engine: coalesce_rates(stream, window, eq, engine) for engine in ENGINES}
        lines.append(
            f"  cp = 0.5, oop = 0.1, {tuples:,} tuples (python: one push per tuple; compiled: "
            f"push_batch of {COMPILED_BATCH:,}):"
        )
        for engine, r in headline.items():
            lines.append(
                f"    {engine:9s} eager update {r['eager_update']:12,.0f} tuples/s, lazy update "
                f"{r['lazy_update']:12,.0f}; scan eager {r['eager_scan']:,.0f}, lazy "
                f"{r['lazy_scan']:,.0f} window tuples/s"
            )
        speedup = {
            f"{scheme}_update": headline["compiled"][f"{scheme}_update"]
            / headline["python"][f"{scheme}_update"]
            for scheme in ("eager", "lazy")
        }
        lines.append(
            f"    compiled / python update: eager {speedup['eager_update']:.1f}x, lazy "
            f"{speedup['lazy_update']:.1f}x  (goal: eager >= 5x and >= 2,500,000 tuples/s)"
        )
        grid = [round(0.1 * i, 1) for i in range(11)]
        header = "  oop\\cp " + "".join(f"{cp:>11}" for cp in grid)
        grids = {}
        for engine in ENGINES:
            stages.begin(f"cp x oop grid, {engine}")
            rates = grids[engine] = rates_grid(rng, grid, grid_tuples, window, eq, engine)
            for what in ("update", "scan"):
                lines.append(
                    f"  {what} throughput, {engine}, eager / lazy (k tuples/s), {grid_tuples:,} "
                    "tuples per cell"
                )
                lines.append(header)
                for oop, frame in rates.groupby("oop", sort=False):
                    cells = [
                        f"{e / 1000:5.0f}/{lz / 1000:<5.0f}"
                        for e, lz in zip(frame[f"eager_{what}"], frame[f"lazy_{what}"], strict=True)
                    ]
                    lines.append(f"  {oop:5.1f}  " + "".join(f"{c:>11}" for c in cells))
        stages.begin("allocated bytes")
        memory = allocated_bytes_by_cp(rng, grid, memory_tuples, Window("tuples", memory_window))
        lines.append(
            f"  allocated bytes (allocated_bytes: arrays' nbytes and the Python objects they "
            f"refer to), {memory_tuples:,} tuples into a {memory_window:,}-tuple window, oop 0.1:"
        )
        lines.append("    cp      eager / lazy (KiB)     per raw tuple (B)   eager / lazy")
        for row in memory.itertuples():
            lines.append(
                f"    {row.cp:5.3f}  {row.eager_total / 1024:8.1f} / {row.lazy_total / 1024:7.1f}"
                f"   {row.eager_bytes:6.1f} / {row.lazy_bytes:5.1f}   {row.eager_over_lazy:10.2f}"
                f"  ({row.stored:,} coalesced tuples)"
            )
        stages.begin(f"Table 5's cps on {cps_days:g} days of the deployment")
        cps = table5_cps(simulate_deployment(days=cps_days, seed=seed))
        mechanisms = mechanisms_available()
        section7 = {}
        for mechanism in mechanisms:
            stages.begin(f"Section 7, {mechanism} mechanism")
            sizes = {} if cell_tuples is None else {"tuples": cell_tuples}
            section7[mechanism] = run_section7(mechanism, cps, seed, progress=True, **sizes)
        for run in section7.values():
            lines += _section7_lines(run)
        if "paper" not in mechanisms:
            lines.append("  the paper's mechanism (array extent): not run (array extent missing)")
        lines.append("  Table 6 with what-if costs (assumed, not evidence: hand-picked factors):")
        lines += _table6_lines(table6_selection(what_if_array_costs, window_tuples))
        lines.append("  Section 7 reproduced? (verdicts from the runs above)")
        verdicts = reproduced_rows(section7)
        for claim, verdict in zip(verdicts["paper's claim"], verdicts["verdict"], strict=True):
            lines.append(f"    {verdict:<38s} {claim}")
        deployment = {}
        for engine in ENGINES:
            stages.begin(f"deployment, {deployment_readings:,} readings, {engine}")
            deployment[engine] = deployment_coalescing(deployment_readings, seed, engine)
    run = deployment["python"]
    lines.append(
        f"  deployment ({SOURCE_LABEL}, {run['readings']:,} readings, {run['days']:.1f} days, "
        f"made in {run['simulated_s']:.1f} s): eager temperature coalescing per mote (0.5 C "
        f"quanta, 24 h time window); {run['stored']:,} coalesced tuples hold the last day's "
        f"{run['window']:,} readings"
    )
    for engine, run in deployment.items():
        lines.append(
            f"    {engine:9s} {run['seconds']:6.2f} s = {run['readings_per_s']:12,.0f} readings/s"
            "  (goal < 20 s)"
        )
    figures = {
        "headline": headline,
        "compiled_over_python": speedup,
        "grid": grids,
        "allocated_bytes": memory.to_dict("records"),
        "section7": {
            mechanism: {
                "seconds": run.seconds,
                "table4_cells": run.cells.to_dict("records"),
                "surfaces": run.summary.reset_index().to_dict("records"),
                "table5": None if run.table5 is None else run.table5.to_dict("records"),
                "table6": run.table6.to_dict("records"),
                "six_query_run": run.six.to_dict("records"),
            }
            for mechanism, run in section7.items()
        },
        "verdicts": verdicts.to_dict("records"),
        "deployment": deployment,
    }
    return BenchReport("coalesce", tuple(lines), figures)
