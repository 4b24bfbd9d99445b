"""The W-join's in-process benchmark (``./dev bench wjoin``): BEW vs FEW against the number of
streams, the window sweeps, the retail stand-in, the fast mechanisms against the paper's, then
the experiments at the paper's settings and their verdicts (W-join paper, Sections 3-5 and its
performance study); a command that prints figures, never a timed test.

It only formats: the workloads, the timing harness and the analyses are
:mod:`workbench.experiments`'s (:mod:`workbench.experiments.wjoin_paper` at the paper's
settings); the python reference and the compiled kernels run in the same run, and their ratio
is printed beside the goal.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict

import numpy as np
import pandas as pd

from benchmarks.report import BenchReport, Stages
from workbench.experiments import (
    CAPACITY_WORKLOAD,
    COMPILED_BATCH,
    ENGINES,
    MECHANISMS_WORKLOAD,
    RESPONSE_WORKLOAD,
    RETAIL_WORKLOAD,
    VARIANTS_WORKLOAD,
    RetailWorkload,
    WJoinWorkload,
    max_sustainable,
    wjoin_mechanisms,
    wjoin_response,
    wjoin_retail,
    wjoin_streams_sweep,
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


def _sweep_line(name: str, sweep: pd.DataFrame, max_rate: float) -> str:
    """One join's capacity sweep: its maximum sustainable rate and every rate:capacity."""
    cells = [
        f"{r / 1000:g}k:{c / 1000:.1f}k"
        for r, c in zip(sweep["rate"], sweep["capacity"], strict=True)
    ]
    best = max_sustainable(sweep)
    top = f"{best:,.0f}/s" if best else "none"
    if best * 2 > max_rate:
        top = f">= {top}"
    return f"    {name:22s} max sustainable {top:>14s}   (rate:capacity) {'  '.join(cells)}"


def bench_wjoin(
    max_rate: float = 64_000.0,
    compiled_max_rate: float = 8_192_000.0,
    seed: int = 0,
    scale: Scale | None = None,
    paper_only: bool = False,
) -> BenchReport:
    """BEW vs FEW (nested and hash) against the number of streams, GCA vs LCA and
    conservative vs modified BEW across window sizes, the retail stand-in's execution time
    against output tuples, and the fast mechanisms against the paper's (W-join paper,
    Sections 3-5 and its performance study), by the python reference and the compiled
    kernels; then the experiments at the paper's settings for both mechanisms and their
    verdicts (:mod:`workbench.experiments.wjoin_paper`), sized by ``scale`` (ci or paper;
    default: ``WORKBENCH_SCALE``).  ``paper_only`` runs only those.

    For each join the aggregate arrival rate doubles from 250 tuples/s until the measured
    capacity (tuples/s of processing, after one window of warm-up) no longer covers it, or
    past ``max_rate`` (python) / ``compiled_max_rate`` (compiled).
    """
    if scale is not None:
        os.environ[SCALE_ENV] = scale
    sweeps = None if paper_only else _bench_wjoin_sweeps(max_rate, compiled_max_rate, seed)
    paper = _bench_wjoin_paper(seed)
    if sweeps is None:
        return paper
    figures = {**sweeps.figures, **paper.figures}
    return BenchReport("wjoin", (*sweeps.lines, *paper.lines), figures)


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
        "paper_verdicts": table,
    }
    return BenchReport("wjoin", tuple(lines), figures)


def _paper_setting_lines(s: PaperSettings, seed: int) -> list[str]:
    """What the paper-settings part ran, and how its figures are found."""
    return [
        f"W-join at the paper's settings ({scale()} scale, WORKBENCH_SCALE or --scale; seed "
        f"{seed}), engine {s.engine}, both mechanisms (paper, fast) on the same streams:",
        f"  windows: nested loop {s.nested_window_ms:g} ms, hash {s.hash_window_ms:g} ms; runs of "
        f"{s.windows:g} windows, at most {s.max_tuples:,} tuples; keys scaled so that each tuple "
        f"completes {s.results_per_tuple:g} result(s) on average at every rate",
        f"  max sustainable: the rate doubles from {s.start_rate:,.0f}/s (up to "
        f"{s.max_rate:,.0f}/s) until the capacity (tuples over the run's total busy time, "
        f"flush included) falls below it, then {s.refine} geometric bisection(s); counters per "
        f"tuple at {s.probe_rate:,.0f}/s",
    ]


def _paper_table_lines(runs: PaperRuns) -> list[str]:
    """Figure 6's maximum sustainable rates and FEW / BEW, then every case's figures."""
    lines = ["  Figure 6: max sustainable (tuples/s) and FEW / BEW, by mechanism"]
    f6 = runs.figure6
    top = f6.pivot_table(
        index="ways", columns=["implementation", "mechanism", "algorithm"], values="max_sustainable"
    )
    ratio = few_over_bew(f6, ("ways", "implementation", "mechanism")).pivot_table(
        index="ways", columns=["implementation", "mechanism"], values="few_over_bew"
    )
    lines += _indented(top.round(0).to_string(), 4)
    lines += _indented(ratio.round(2).to_string(), 4)
    cols = [
        "algorithm", "mechanism", "strategy", "max_sustainable", "comparisons",
        "visited_inside", "visited_outside", "peak_buffered", "response_ms", "results",
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
    return lines


def _indented(text: str, spaces: int) -> list[str]:
    """A block of text as lines indented by ``spaces``."""
    return [" " * spaces + line for line in text.splitlines()]


def _bench_wjoin_sweeps(max_rate: float, compiled_max_rate: float, seed: int) -> BenchReport:
    """The sweeps of :func:`bench_wjoin` before the paper's settings (both engines)."""
    ways, w, m, rates = (
        (2, 3, 4, 5),
        CAPACITY_WORKLOAD,
        3,
        (250.0, 1000.0, 4000.0, 16000.0, 32000.0),
    )
    rng = np.random.default_rng(seed)
    lines = [
        f"W-join: {len(ways)} uniform clique sizes, window {w.window_ms:g} ms, synthetic integer "
        f"streams (keys 0..{w.keys - 1}, equality), exponential gaps, {w.windows:g} windows "
        f"of stream time per run (seed {seed})",
        "  capacity (tuples/s processed in steady state) at doubling aggregate arrival rates;",
        "  max sustainable = the highest rate whose capacity still covers it;",
        f"  python: one push per tuple; compiled: push_batch of {COMPILED_BATCH:,} tuples;",
        "  busy time is the joining thread's CPU time (time.thread_time: other work on the",
        "  machine left out), except in the response times, which model the wall clock",
    ]
    cpu = time.thread_time
    limits = {"python": max_rate, "compiled": compiled_max_rate}
    sustained: dict[str, dict[str, float]] = {}
    streams: list[pd.DataFrame] = []
    impls = ("nested", "hash")
    stages = Stages("bench wjoin", len(impls) * len(limits) + 5)
    with stages:
        for impl in impls:
            lines.append(f"  {impl}:")
            for engine, limit in limits.items():
                stages.begin(f"{impl} {engine}, {ways[0]}- to {ways[-1]}-way")
                table = wjoin_streams_sweep(
                    impl, rng, ways, w, max_rate=limit, engine=engine, clock=cpu
                )
                for row in table.itertuples():
                    name = f"{row.ways}-way {row.algorithm} {engine}"
                    sustained.setdefault(impl, {})[name] = row.max_sustainable
                    lines.append(_sweep_line(name, row.sweep, limit))
                streams.append(
                    table.drop(columns="sweep").assign(implementation=impl, engine=engine)
                )
        stages.begin(f"response times, hash, {m}-way")
        response = wjoin_response(rates, rng, m, RESPONSE_WORKLOAD)
        v, rate = VARIANTS_WORKLOAD, 2000.0
        stages.begin("4-way variants across window sizes")
        window_sweep = wjoin_window_sweep(rng, rate=rate, workload=v, clock=cpu)
        stages.begin("retail stand-in")
        retail = pd.concat(
            wjoin_retail(rng, RETAIL_WORKLOAD, engine, clock=cpu).assign(engine=engine)
            for engine in ENGINES
        )
        stages.begin(f"fast vs paper mechanisms, {m}-way")
        mechanisms = wjoin_mechanisms(rng, m, clock=cpu)
    ratios = {
        impl: {
            cls: sustained[impl][f"3-way {cls} compiled"] / sustained[impl][f"3-way {cls} python"]
            for cls in ("BEWJoin", "FEWJoin")
        }
        for impl in sustained
    }
    lines.append(
        "  3-way max sustainable, compiled / python: "
        + ", ".join(f"{impl} {c} {r:.0f}x" for impl, by in ratios.items() for c, r in by.items())
        + "  (goals: hash >= 20x, nested >= 10x; '>=' rates were not exhausted)"
    )
    r = RESPONSE_WORKLOAD
    lines.append(
        f"  hash, {m}-way, keys 0..{r.keys - 1}, {r.windows:g} windows per "
        "run: mean response time in ms (arrival of a result's last tuple to its output)"
    )
    lines.append("  " + " " * 10 + "".join(f"{rate:>11,.0f}/s" for rate in rates))
    for name, frame in response.groupby("algorithm", sort=False):
        lines.append(f"  {name:10s}" + "".join(f"{c:13,.1f}" for c in frame["response_ms"]))
    lines += _window_sweep_lines(window_sweep, v, rate)
    lines += _retail_lines(retail, RETAIL_WORKLOAD)
    lines += _mechanism_lines(mechanisms, m)
    figures = {
        "workload": asdict(w),
        "max_sustainable": sustained,
        "streams": pd.concat(streams, ignore_index=True),
        "compiled_over_python_3way": ratios,
        "response_ms": response,
        "window_sweep": window_sweep,
        "retail": retail,
        "mechanisms": mechanisms,
    }
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


def _mechanism_lines(mechanisms: pd.DataFrame, m: int) -> list[str]:
    """Fast vs paper mechanisms: capacity, comparisons per tuple and the ratio."""
    w = MECHANISMS_WORKLOAD
    lines = [
        f"  fast vs paper mechanisms (python engine, one push per tuple), {m}-way, window "
        f"{w.window_ms:g} ms, keys 0..{w.keys - 1}:"
    ]
    for (algorithm, impl), part in mechanisms.groupby(["algorithm", "implementation"], sort=False):
        fast, paper = (part[part["mechanism"] == k].iloc[0] for k in ("fast", "paper"))
        ratio = paper["capacity"] / fast["capacity"]
        lines.append(
            f"    {algorithm:8s} {impl:6s} capacity fast {fast['capacity']:9,.0f}/s  paper "
            f"{paper['capacity']:9,.0f}/s  paper / fast {ratio:5.2f}x"
            f"   comparisons/tuple fast {fast['comparisons']:8.1f}  paper "
            f"{paper['comparisons']:8.1f}   results {fast['results']:,} = {paper['results']:,}"
        )
    return lines
