"""The timing joins' in-process benchmarks (``./dev bench stime | ptjoin | interval | month``):
PTJoin Section 3's stime tables and its naive, loose and tight joins, the interval timing
paper's five correlation algorithms against the arrival rate (Section 4.2), and the simulated
month through tight PTJoin; commands that print figures, never timed tests.

Each ``bench_*`` function only formats: the workloads, the timing harness and the analyses
are :mod:`workbench.experiments`'s, shared with the notebooks and the dashboard.  Where an
operator has a compiled kernel, the python reference runs on the same workload in the same
run, and the ratio is printed beside the goal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace

import pandas as pd

from benchmarks.report import BenchReport, Stages, format_table
from workbench.data.replica import SOURCE_LABEL
from workbench.data.streams import month_streams
from workbench.experiments import (
    COMPILED_BATCH,
    EXAMPLE5,
    INTERVAL_QUERY,
    Example5Workload,
    interval_rate_runs,
    join_summary,
    max_sustainable_rates,
    profile_join,
    ptjoin_runs,
    rate_grid,
    stime_timings,
    timed,
)
from workbench.experiments.month import delta_sweep, month_join
from workbench.experiments.scale import scale
from workbench.operators import PTJoin
from workbench.paper_examples import Example5Setting

__all__ = ["bench_interval", "bench_month", "bench_ptjoin", "bench_stime"]


def bench_stime(sample: int = 200, seed: int = 0, **setting: float) -> BenchReport:
    """The vectorised stime table against the scalar binary search (PTJoin Section 3.1) on
    Example 5's random templates (``setting``: fields of
    :class:`~workbench.paper_examples.Example5Setting`); the figures come from one run, so
    the ratios compare like with like."""
    w = Example5Setting(**setting)
    t = stime_timings(w, sample, seed)
    pairs, t_table = t["pairs"], t["table_s"]
    lines = (
        f"stime tables: {w.templates} x {w.templates} random templates, {w.buckets} buckets, "
        f"lengths <= {w.max_length:g} ms, delta = {w.delta:g} (seed {seed})",
        f"  vectorised table, one delta:         {t_table:8.3f} s  "
        f"{pairs / t_table:12,.0f} pairs/s  (best of 2 after a cold run of "
        f"{t['cold_s']:.3f} s)",
        f"  StimeTable.build (delta, 1 - delta): {t['build_s']:8.3f} s  "
        f"{2 * pairs / t['build_s']:12,.0f} pairs/s",
        f"  scalar stime (rationals), {sample} pairs:     {t['scalar_s']:8.3f} s  "
        f"{sample / t['scalar_s']:12,.0f} pairs/s",
        "  speed-up of the table over the scalar loop: "
        f"{(t['scalar_s'] / sample) / (t_table / pairs):,.0f}x",
        f"  max |table - scalar| on the sample: {t['max_error_ms']:.2e} ms",
    )
    return BenchReport("stime", lines, {"setting": asdict(w), "seed": seed, **t})


def _ratio(runs: Mapping[str, Mapping[str, float]], name: str) -> float:
    """Compiled over python events/s of one operator in one scope of runs."""
    return runs[f"{name} · compiled"]["events_per_s"] / runs[f"{name} · python"]["events_per_s"]


def bench_ptjoin(
    naive_prefix: int = 4_000, templates: int = EXAMPLE5.templates, **streams: float
) -> BenchReport:
    """PTJoin naive / loose / tight against the deterministic band join (PTJoin Section 3) on
    Example 5's setting with ``templates`` templates per stream (``streams``: the other fields
    of :class:`~workbench.experiments.Example5Workload`), by the python reference and the
    compiled kernels."""
    w = Example5Workload(replace(EXAMPLE5, templates=templates), **streams)
    x = w.setting
    with Stages("bench ptjoin", 0) as stages:
        setup, runs = ptjoin_runs(w, naive_prefix, stages.begin)
    head, full = runs["prefix"], runs["all"]
    keys = ["events", "seconds", "events_per_s", "results", "prob_evals", "stime_lookups"]
    keys.append("exact_evals")
    ratios = {
        "naive": _ratio(head, "naive"),
        "loose": _ratio(head, "loose"),
        "tight": _ratio(full, "tight"),
        "band floor": _ratio(full, "band floor"),
    }
    tight = full["tight · compiled"]
    same = all(
        len({r["results"] for name, r in scope.items() if not name.startswith("band")}) == 1
        for scope in (head, full)
    )
    floor = full["band floor · compiled"]["events_per_s"] / tight["events_per_s"]
    tests_loose = full["loose · compiled"]["prob_evals"]
    tests_tight = tight["prob_evals"] + tight["stime_lookups"]
    lines = [
        f"PTJoin: {w.events_per_stream:,} events per stream, {x.templates} templates x "
        f"{x.buckets} buckets (len <= {x.max_length:g} ms), mean inter-arrival "
        f"{w.mean_interarrival:g} ms, D = {w.max_delay:g} ms (out of order), d = {x.d:g} ms, "
        f"delta = {x.delta:g} (seed {w.seed})",
        f"  query installation (two stime tables): {setup['install_s']:.2f} s; the kernels' "
        f"first call (compiled, or loaded from the on-disk cache): {setup['first_call_s']:.2f} s",
        f"  python: one push per event; compiled: push_batch of {COMPILED_BATCH:,} events",
        f"  first {head['tight · python']['events']:,} events:",
        format_table(head, keys),
        "  all events (the python reference of naive and loose: too slow):",
        format_table(full, keys),
        "  compiled / python events/s: "
        + ", ".join(f"{name} {r:.1f}x" for name, r in ratios.items())
        + "  (goal >= 20x; naive and loose on the first events)",
        f"  tight, compiled: {tight['events_per_s']:,.0f} events/s (goal >= 500,000), "
        f"{tight['results']:,} pairs, every mode and engine the same pairs: "
        f"{'yes' if same else 'NO'}",
        f"  band floor / tight events/s, compiled: {floor:.2f}x  (goal <= 2x)",
        f"  pair tests per event, loose (probability) / tight (probability + stime): "
        f"{tests_loose:.1f} / {tests_tight:.1f} = {tests_loose / max(tests_tight, 1e-9):.1f}x"
        "  (goal >= 20x)",
    ]
    figures = {
        "workload": {"events_per_stream": w.events_per_stream, **asdict(x), "seed": w.seed},
        **setup,
        "runs": runs,
        "compiled_over_python": ratios,
        "band_floor_over_tight": floor,
        "same_pairs": same,
    }
    return BenchReport("ptjoin", tuple(lines), figures)


def _rate_rows(runs: pd.DataFrame) -> str:
    """One rate's runs as a table: a row per ``algorithm · engine``."""
    shown = {
        "throughput": ("events/CPU s", "{:,.0f}"),
        "load": ("load", "{:.3f}"),
        "keeps_up": ("keeps up", "{}"),
        "response_ms": ("response ms", "{:,.2f}"),
        "response_p95_ms": ("p95 ms", "{:,.2f}"),
        "prob_evals": ("probes/event", "{:.1f}"),
        "events_per_emit": ("events/emit", "{:,.1f}"),
    }
    frame = runs.set_index(runs["algorithm"] + " · " + runs["engine"])[list(shown)]
    frame.index.name = None
    text = frame.rename(columns={k: title for k, (title, _) in shown.items()}).to_string(
        formatters={title: fmt.format for title, fmt in shown.values()}
    )
    return "\n".join(f"    {line}" for line in text.splitlines())


def bench_interval(
    events_per_stream: int | None = None,
    rates: Sequence[float] | None = None,
    max_results: int | None = None,
    seed: int | None = None,
) -> BenchReport:
    """The five interval timing correlation algorithms run at each arrival rate of the grid
    in force (interval timing paper, Section 4.2; :func:`~workbench.experiments.rate_grid`,
    ``WORKBENCH_SCALE=paper`` for the papers' sizes; the arguments replace the grid's), by
    the python reference and the compiled kernels: the per-rate table and each algorithm's
    maximum sustainable rate per engine."""
    given = {"events_per_stream": events_per_stream, "max_results": max_results, "seed": seed}
    grid = replace(rate_grid(), **{k: v for k, v in given.items() if v is not None})
    if rates:
        grid = replace(grid, rates=tuple(rates))
    q, w = INTERVAL_QUERY, grid.workload()
    table = interval_rate_runs(grid, q)
    best = max_sustainable_rates(table)
    out = [
        f"Interval timing correlation against the arrival rate ({scale()} grid): "
        f"{', '.join(f'{r:,.0f}' for r in sorted(grid.rates))} events/s in; up to "
        f"{grid.events_per_stream:,} events per stream (fewer at high rates: about "
        f"{grid.max_results:,} pairs per run at most), {w.templates} interval lengths <= "
        f"{w.max_length:g} ms, d = {q.d:g} ms, ct = {q.ct:g}, D = {w.max_delay:g} ms; lazy "
        f"re-evaluates at {q.max_pending} unprocessed tuples or every {q.max_wait:g} ms "
        f"(seed {grid.seed})",
        f"  python: one push per event; compiled: push_batch of {grid.compiled_batch:,} events. "
        "Busy time is the joining thread's CPU time; load = rate / (events per CPU s after "
        "one buffer window); response per event by one FCFS server over each rate's own run",
    ]
    for rate, runs in table.groupby("rate"):
        first = runs.iloc[0]
        out.append(
            f"  at {rate:,.0f} events/s in ({first['events']:,} events, "
            f"{first['stream_s']:,.3f} s of stream):"
        )
        out.append(_rate_rows(runs))
    out.append("  maximum sustainable rate (events/s in; kept up there and at every lower rate):")
    shown = best.to_string(float_format=lambda r: f"{r:,.0f}")
    out.append("\n".join(f"    {line}" for line in shown.splitlines()))
    same = bool(table["same_results"].all())
    out.append(
        f"  every algorithm and engine the same pairs at every rate: {'yes' if same else 'NO'}"
    )
    figures = {
        "grid": asdict(grid),
        "query": asdict(q),
        "runs": table.to_dict(orient="records"),
        "max_sustainable": best.to_dict(),
        "same_pairs": same,
    }
    return BenchReport("interval", tuple(out), figures)


def bench_month(
    deltas: Sequence[float] = (0.6, 0.7, 0.8, 0.9), d: float = 3000.0, prefix: int = 100_000
) -> BenchReport:
    """The whole simulated month through tight PTJoin (PTJoin Section 3): every event in one
    ``push_batch``, pairs out as NumPy arrays, at each delta; the python reference on the
    first ``prefix`` events for the ratio."""
    with Stages("bench month", 4) as stages:
        stages.begin("building the month's streams")
        streams, build_s = timed(month_streams)
        events = streams.events
        stages.begin("first join (kernels compiled or loaded from the disk cache)")
        first = month_join(streams, d, deltas[0])
        stages.begin(f"re-joins at delta {', '.join(f'{x:g}' for x in deltas)}")
        sweep = delta_sweep(streams, d, deltas)
        stages.begin(f"python reference on the first {prefix:,} events")
        reference = PTJoin(streams=streams.specs(), d=d, threshold=deltas[0], engine="python")
        python = join_summary(profile_join(reference, events.head(prefix)))
    reference_per_s = python["events_per_s"]
    best = float(sweep["join_s"].min())
    median = float(sweep["join_s"].median())
    per_s = len(events) / median
    lines = [
        f"The whole simulated month ({SOURCE_LABEL}): {len(events):,} events as two streams "
        f"(built in {build_s:.1f} s, once per process), tight PTJoin at d = {d:g} ms",
        f"  first join (kernels compiled, or loaded from the on-disk cache): {first.join_s:.2f} s",
        f"  {'delta':>7s}{'pairs':>13s}{'install s':>11s}{'join s':>9s}",
    ]
    for row in sweep.itertuples():
        lines.append(f"  {row.delta:7.2f}{row.pairs:13,d}{row.install_s:11.3f}{row.join_s:9.3f}")
    lines += [
        f"  compiled: median {median:.2f} s per re-join (best {best:.2f} s) = {per_s:,.0f} "
        "events/s  (goal < 1 s)",
        f"  python reference on the first {python['events']:,} events: {reference_per_s:,.0f} "
        f"events/s, so about {len(events) / reference_per_s:,.0f} s for the month; compiled / "
        f"python: {per_s / reference_per_s:,.0f}x",
    ]
    figures = {
        "events": len(events),
        "build_s": build_s,
        "first_join_s": first.join_s,
        "sweep": sweep,
        "median_join_s": median,
        "python_events_per_s": python["events_per_s"],
    }
    return BenchReport("month", tuple(lines), figures)
