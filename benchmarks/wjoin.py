"""The W-join's in-process benchmark (``./dev bench wjoin``): the experiments at the paper's
settings for both mechanisms and their verdicts (W-join paper, Sections 3-5 and its performance
study), then the window sweeps and the retail stand-in; a command that prints figures, never a
timed test.

It only formats: the workloads, the timing harness and the analyses are
:mod:`workbench.experiments`'s (:mod:`workbench.experiments.wjoin_paper` at the paper's
settings); the python reference and the compiled kernels run in the same run, and their ratio
is printed beside the goal.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, replace

import numpy as np
import pandas as pd

from benchmarks.report import BenchReport, Stages
from workbench.experiments import (
    ENGINES,
    RETAIL_WORKLOAD,
    VARIANTS_WORKLOAD,
    RetailWorkload,
    WJoinWorkload,
    wjoin_retail,
    wjoin_window_sweep,
)
from workbench.experiments.scale import SCALE_ENV, Scale, scale
from workbench.experiments.wjoin_paper import (
    PaperRuns,
    PaperSettings,
    few_over_bew,
    paper_runs,
    paper_settings,
    verdicts,
)

__all__ = ["bench_wjoin"]


def bench_wjoin(seed: int = 0, scale: Scale | None = None, paper_only: bool = False) -> BenchReport:
    """The W-join experiments at the paper's settings for BEW and FEW under both mechanisms,
    with their verdicts (:mod:`workbench.experiments.wjoin_paper`: Figures 4, 6 and 7,
    delayed tuples, Section 5), sized by ``scale`` (ci or paper; default:
    ``WORKBENCH_SCALE``); then, unless ``paper_only``, what those do not cover: GCA vs LCA
    and conservative vs modified BEW across window sizes (Section 5) and the retail
    stand-in's execution time against output tuples (Figure 8's experiment), the latter by
    the python reference and the compiled kernels."""
    if scale is not None:
        os.environ[SCALE_ENV] = scale
    paper = _bench_wjoin_paper(seed)
    if paper_only:
        return paper
    extra = _bench_wjoin_extras(seed)
    figures = {**paper.figures, **extra.figures}
    return BenchReport("wjoin", (*paper.lines, *extra.lines), figures)


def _bench_wjoin_paper(seed: int) -> BenchReport:
    """The experiments at the paper's settings, both mechanisms: tables and verdicts."""
    settings = paper_settings()
    with Stages("bench wjoin: paper's settings", 1) as stages:
        stages.begin(f"{scale()} scale, {settings.engine} engine")
        runs = paper_runs(settings, seed=seed, progress=True)
    table = verdicts(runs)
    lines = [*_paper_setting_lines(settings, seed), *_paper_table_lines(runs)]
    lines.append("  Reproduced? (each mechanism: whether the claim held, and its figures)")
    for row in table.itertuples(index=False):
        result, claim, paper, fast, verdict, reason = row
        lines += [
            f"    {result}: {verdict}",
            f"      the paper: {claim}",
            f"      paper's mechanism: {paper}",
            f"      fast mechanism:    {fast}",
            f"      measured: {reason}",
        ]
    figures = {
        "paper_settings": {"scale": scale(), **asdict(settings)},
        "paper_figure6": runs.figure6,
        "paper_few_over_bew": few_over_bew(runs.figure6),
        "paper_figure4": runs.figure4,
        "paper_delayed": runs.delayed,
        "paper_variants": runs.variants,
        "paper_figure7": runs.figure7,
        "paper_figure7_repeats": runs.figure7_repeats,
        "paper_verdicts": table,
    }
    return BenchReport("wjoin", tuple(lines), figures)


def _paper_setting_lines(s: PaperSettings, seed: int) -> list[str]:
    """What the paper-settings part ran, and how its figures are found."""
    return [
        f"W-join at the paper's settings ({scale()} scale, WORKBENCH_SCALE or --scale; seed "
        f"{seed}), engine {s.engine}, both mechanisms (paper, fast) on the same streams:",
        f"  windows: nested loop {s.nested_window_ms:g} ms, hash {s.hash_window_ms:g} ms; every "
        f"run covers {s.windows:g} windows of stream time (the first fills the buffers, the "
        f"capacity is measured over the rest); keys scaled so that each tuple completes "
        f"{s.results_per_tuple:g} result(s) on average at every rate",
        f"  max sustainable: the rate doubles from {s.start_rate:,.0f}/s while a run stays within "
        f"{s.max_run_tuples:,} tuples, until the steady-state capacity falls below it"
        f"{' (twice)' if s.retry else ''}, then {s.refine} geometric bisection(s); "
        + (
            f"a join that keeps up with the whole grid is run at the capacity it measured "
            f"there, then at that run's capacity ({s.beyond_steps} probes at most, runs of "
            f"{s.beyond_windows:g} windows, at most {s.beyond_max_tuples:,} tuples): max "
            "sustainable is the highest rate run and kept up with, not_kept the next one run"
            if s.beyond_windows is not None
            else "a join that keeps up with the whole grid is not saturated (FEW / BEW then "
            "compares the capacities at the top rate)"
        )
        + f"; counters per tuple at {s.probe_rate:,.0f}/s; Figure 7 runs cover "
        f"{s.response_windows:g} windows, the paper FEW's again at "
        + ", ".join(f"{r:,.0f}" for r in s.repeat_rates)
        + f"/s with {s.repeat_seeds} more seed(s)",
    ]


def _paper_table_lines(runs: PaperRuns) -> list[str]:
    """Figure 6's maximum sustainable rates and FEW / BEW, then every case's figures."""
    lines = ["  Figure 6: max sustainable (tuples/s) and FEW / BEW, by mechanism"]
    f6 = runs.figure6
    top = f6.pivot_table(
        index="ways", columns=["implementation", "mechanism", "algorithm"], values="max_sustainable"
    )
    lines += _indented(top.round(0).to_string(), 4)
    for value in ("max_sustainable", "top_capacity"):
        ratio = few_over_bew(f6, ("ways", "implementation", "mechanism"), value).pivot_table(
            index="ways", columns=["implementation", "mechanism"], values="few_over_bew"
        )
        lines.append(f"    FEW / BEW of {value}")
        lines += _indented(ratio.round(2).to_string(), 4)
    cols = [
        "algorithm", "mechanism", "strategy", "max_sustainable", "saturated", "not_kept",
        "beyond_runs", "top_capacity", "comparisons", "visited_inside", "visited_outside",
        "peak_buffered", "response_ms", "results",
    ]  # fmt: skip
    for name, frame in (
        ("Figure 6, per tuple at the probe rate", f6),
        ("Figure 4: unequal rates beside equal", runs.figure4),
        ("delayed tuples", runs.delayed),
        ("Section 5: GCA vs LCA, graph join", runs.variants),
    ):
        lines.append(f"  {name}")
        lines += _indented(frame.set_index(["case"])[cols].round(2).to_string(), 4)
    lines.append("  Figure 7: mean response time (ms), hash, one call per tuple")
    response = runs.figure7.pivot_table(
        index="rate", columns=["algorithm", "mechanism"], values="response_ms"
    )
    lines += _indented(response.round(3).to_string(), 4)
    parts = ["response_ms", "wait_ms", "queue_ms", "service_ms", "held_share", "max_call_ms"]
    lines.append(
        "  Figure 7's response split: held by the join (wait), queued behind earlier calls, "
        "served; the paper FEW by seed at the repeated rates"
    )
    split = runs.figure7.set_index(["algorithm", "mechanism", "rate"])[parts]
    lines += _indented(split.round(3).to_string(), 4)
    repeats = runs.figure7_repeats.set_index(["rate", "seed"])[parts]
    lines += _indented(repeats.round(3).to_string(), 4)
    return lines


def _indented(text: str, spaces: int) -> list[str]:
    """A block of text as lines indented by ``spaces``."""
    return [" " * spaces + line for line in text.splitlines()]


def _bench_wjoin_extras(seed: int) -> BenchReport:
    """Section 5 across window sizes and the retail stand-in, beside the paper's settings."""
    rng = np.random.default_rng(seed)
    v, rate, windows = VARIANTS_WORKLOAD, 1000.0, (25.0, 50.0, 100.0)
    retail_workload = replace(RETAIL_WORKLOAD, sales_per_hour=600.0, hours=2.0)
    cpu = time.thread_time
    with Stages("bench wjoin: beside the paper's settings", 2) as stages:
        stages.begin("4-way variants across window sizes")
        window_sweep = wjoin_window_sweep(rng, windows, rate=rate, workload=v, clock=cpu)
        stages.begin("retail stand-in")
        retail = pd.concat(
            wjoin_retail(rng, retail_workload, engine, clock=cpu).assign(engine=engine)
            for engine in ENGINES
        )
    lines = [
        "W-join beside the paper's settings (python engine unless said; busy time is the "
        f"joining thread's CPU time; seed {seed}):",
        *_window_sweep_lines(window_sweep, v, rate),
        *_retail_lines(retail, retail_workload),
    ]
    figures = {"window_sweep": window_sweep, "retail": retail}
    return BenchReport("wjoin", tuple(lines), figures)


def _window_sweep_lines(sweep: pd.DataFrame, v: WJoinWorkload, rate: float) -> list[str]:
    """GCA vs LCA and conservative vs modified BEW, one line per case and window size."""
    lines = [
        f"  4-way non-uniform clique (windows W/5, W between S3 and S1, S2) and 4-way path "
        f"(W/5 per edge), nested loop, {rate:,.0f} tuples/s, keys 0..{v.keys - 1}, the same "
        "stream time at every W:"
    ]
    for row in sweep.itertuples():
        lines.append(
            f"    W {row.window_ms:6g} ms {row.form:12s} {row.algorithm:8s} {row.strategy:18s} "
            f"capacity {row.capacity:9,.0f}/s  comparisons/tuple {row.comparisons:8.1f}  "
            f"results {row.results:,}"
        )
    return lines


def _retail_lines(retail: pd.DataFrame, r: RetailWorkload) -> list[str]:
    """The retail stand-in's busy seconds at its last output count, per algorithm and engine."""
    lines = [
        f"  retail stand-in (synthetic, the Wal-Mart logs' shape): {r.stores}-way hash join on "
        f"the item, window {r.window_ms / 3.6e6:g} h, {r.sales_per_hour:g} sales/h per store, "
        f"{r.hours:g} h from {r.start_hour:g}:00, items Zipf({r.skew:g}) over {r.items:,}:"
    ]
    for (engine, algorithm), part in retail.groupby(["engine", "algorithm"], sort=False):
        last = part.iloc[-1]
        lines.append(
            f"    {algorithm:8s} {engine:8s} {last['output tuples']:9,} output tuples from "
            f"{last['input tuples']:,} sales in {last['seconds']:7.3f} s"
        )
    return lines
