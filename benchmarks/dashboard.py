"""Per-interaction latency of the dashboard: from a parameter change to updated Bokeh models.

Each tab is rendered into a Bokeh document (as a served session would be), then parameters
are changed one at a time; every change runs the watchers and re-renders the affected plots
synchronously, so its wall time is the server-side latency of that interaction.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import panel as pn
from bokeh.document import Document

from benchmarks.report import BenchReport
from workbench.app.coalescing import PERIOD_MS
from workbench.app.dashboard import dashboard_tabs

__all__ = ["bench_dashboard", "time_interaction"]


def time_interaction(app: pn.viewable.Viewer, name: str, values: Sequence[object]) -> list[float]:
    """Milliseconds taken by each ``setattr(app, name, value)`` on a rendered app."""
    out = []
    for value in values:
        start = time.perf_counter()
        setattr(app, name, value)
        out.append(1000.0 * (time.perf_counter() - start))
    return out


def bench_dashboard(repeats: int = 8) -> BenchReport:
    """Latency of every slider and selector of the analytical tabs, and of a live tick."""
    tabs = dict(dashboard_tabs())
    for app in tabs.values():
        pn.panel(app).get_root(Document())
    editor, explorer = tabs["Templates"], tabs["Satisfaction probability"]
    regions, coalescing = tabs["Partition regions"], tabs["Coalescing"].model
    month = tabs["Whole month"]
    month.run()  # the month's streams, built once (not timed), and the kernels compiled
    n = repeats
    cases = [
        ("Satisfaction probability", explorer, "delta", [0.6 + 0.03 * k for k in range(n)]),
        ("Satisfaction probability", explorer, "d", [2500.0 + 100 * k for k in range(n)]),
        ("Satisfaction probability", explorer, "pi", [1500.0 + 100 * k for k in range(n)]),
        ("Satisfaction probability", explorer, "t_det", [5000.0 + 50 * k for k in range(n)]),
        ("Satisfaction probability", explorer, "template", [k % 5 + 1 for k in range(n)]),
        ("Satisfaction probability", explorer, "model", ["intervals", "histograms"] * (n // 2)),
        ("Templates", editor, "picked", [k + 1 for k in range(n)]),
        ("Templates", editor, "pair_u", [k + 1 for k in range(n)]),
        ("Templates", editor, "offset", [100.0 * k for k in range(1, n + 1)]),
        ("Partition regions", regions, "base", [regions.base + 7 * k for k in range(1, n + 1)]),
        ("Partition regions", regions, "delta", [0.6 + 0.03 * k for k in range(n)]),
        ("Partition regions", regions, "d", [6000.0 + 250 * k for k in range(n)]),
        ("Coalescing", coalescing, "scheme", ["lazy", "eager"] * (n // 2)),
        ("Coalescing", coalescing, "quantum", [0.2 + 0.1 * k for k in range(n)]),
        ("Coalescing", coalescing, "w_update", [5.0 * k for k in range(1, n + 1)]),
        ("Whole month", month, "delta", [0.79 - 0.01 * k for k in range(n)]),
        ("Whole month", month, "d", [3100.0 + 100 * k for k in range(n)]),
    ]
    lines = [
        "Dashboard interaction latency (ms): parameter change to updated Bokeh models, "
        f"server side, {n} changes each",
        f"  {'tab':26s}{'parameter':12s}{'median':>9s}{'max':>9s}",
    ]
    figures: dict[str, list[float]] = {}
    for tab, app, name, values in cases:
        ms = time_interaction(app, name, values)
        figures[f"{tab} · {name}"] = ms
        lines.append(f"  {tab:26s}{name:12s}{statistics.median(ms):9.1f}{max(ms):9.1f}")
    ticks = []
    for _ in range(n):
        start = time.perf_counter()
        coalescing.step()
        ticks.append(1000.0 * (time.perf_counter() - start))
    figures["Coalescing · live tick"] = ticks
    lines.append(
        f"  {'Coalescing':26s}{'live tick':12s}{statistics.median(ticks):9.1f}{max(ticks):9.1f}"
        f"   ({coalescing.speed} readings per tick, every "
        f"{PERIOD_MS} ms)"
    )
    wjoin = tabs["Multi-way join"].model
    start = time.perf_counter()
    results = wjoin.run()
    lines.append(
        f"  {'Multi-way join':26s}{'run':12s}{1000 * (time.perf_counter() - start):9.1f}"
        f"{'':9s}   (BEW + FEW on {results[0].tuples:,} tuples, in a worker thread when served)"
    )
    return BenchReport("dashboard", tuple(lines), {"ms": figures, "repeats": n})
