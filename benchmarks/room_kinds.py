"""Where the server's CPU goes, by kind of interaction, against the floor page's
(``./dev bench room --clients protocol --by-kind``).

One protocol user at a time (:class:`~benchmarks.room_protocol.ProtocolUser`, the room's own
client) walks the room's tabs: the page, each tab's first opening, ``moves`` steps of each
slider tab's first slider, then a return to every tab.  Each action's server CPU is its Python
processes' (``/proc``), read :data:`SETTLE_S` before the action and :data:`SETTLE_S` after its
answer, so the work a change sets off after its first message is counted too (``/proc`` counts
10 ms ticks: a kind's figure is a mean over many actions); a page's and
an opening's Bokeh models are those its messages brought.  The dashboard and the floor page
(:mod:`benchmarks.room_floor`) are walked in the same run, one warm walk each first (not
counted), and each kind's mean is set against the floor's: the CPU, the models and the CPU
per model.  A tab whose opening costs what the floor's costs per model spends the floor's
kind of CPU (Bokeh building, serializing and walking models); what it costs beyond is its
number of models.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

from benchmarks.report import BenchReport
from benchmarks.room_measure import SLIDER_TABS, WALK, cpu_split
from benchmarks.room_protocol import ProtocolUser, websocket_url
from harness.server import READY

__all__ = ["Action", "KINDS", "bench_room_kinds", "kind_lines", "kinds_summary", "walk_kinds"]

SETTLE_S = 0.4
"""Seconds of quiet before each action and after its answer."""
KINDS = ("page", "open", "move", "return")
"""The kinds of interaction: a page load (its first tab included), a tab's first opening in
the session, a slider step, a return to a tab opened before."""
MIX = ("page", "open", "move")
"""The kinds a room's walk is made of (it returns to no tab)."""


@dataclass(frozen=True)
class Action:
    """One measured interaction: its kind, the tab, the server's CPU-ms, the Bokeh models its
    messages brought (0 for a move or a return) and the machine's other CPU-ms meanwhile."""

    kind: str
    tab: str
    cpu_ms: float
    models: int
    others_ms: float


async def _walk(url: str, pid: int, moves: int, tabs: Sequence[str]) -> list[Action]:
    """One user's walk of ``tabs`` on the server ``pid``: each action measured alone."""
    user = ProtocolUser(websocket_url(url))
    actions: list[Action] = []

    async def measured(kind: str, tab: str, act: Callable[[], Awaitable[object]]) -> None:
        await asyncio.sleep(SETTLE_S)
        with cpu_split(pid) as split:
            await act()
            await asyncio.sleep(SETTLE_S)
        models = len(user.models) if kind in ("page", "open") else 0
        s = split[0]
        actions.append(Action(kind, tab, 1000 * s.own_s, models, 1000 * s.others_s))

    try:
        await measured("page", tabs[0], lambda: user.open(tabs[0]))
        for tab in tabs:
            if tab != tabs[0]:
                await measured("open", tab, lambda tab=tab: user.switch(tab))
            for _ in range(moves if tab in SLIDER_TABS else 0):
                await measured("move", tab, user.move)
        for tab in tabs:
            active = list(READY).index(tab)
            await measured("return", tab, lambda a=active: user.set(user.tabs_id, active=a))
    finally:
        await user.close()
    return actions


def walk_kinds(
    url: str, pid: int, walks: int = 3, moves: int = 3, tabs: Sequence[str] = WALK
) -> list[Action]:
    """``walks`` users one after another on the page at ``url`` (server process ``pid``),
    after one warm walk that is not counted: every action of theirs."""
    asyncio.run(_walk(url, pid, 1, tabs))
    return [a for _ in range(walks) for a in asyncio.run(_walk(url, pid, moves, tabs))]


def kinds_summary(actions: Sequence[Action]) -> dict[str, dict[str, float]]:
    """Per kind, and ``mix`` (a room's walk: page, openings and moves): the actions, their
    mean server CPU-ms, mean models and CPU-ms per model (over the kinds that bring models).

    >>> a = [Action("open", "A", 30.0, 10, 0.0), Action("move", "A", 5.0, 0, 0.0)]
    >>> s = kinds_summary(a)
    >>> s["open"]["ms_per_model"], s["mix"]["cpu_ms"]
    (3.0, 17.5)
    """
    out = {}
    for kind in (*KINDS, "mix"):
        rows = [a for a in actions if a.kind == kind or (kind == "mix" and a.kind in MIX)]
        if not rows:
            continue
        models = sum(a.models for a in rows)
        cpu = sum(a.cpu_ms for a in rows)
        out[kind] = {
            "n": len(rows),
            "cpu_ms": cpu / len(rows),
            "models": models / len(rows),
            "ms_per_model": cpu / models if models and kind != "mix" else float("nan"),
            "others_ms": statistics.fmean(a.others_ms for a in rows),
        }
    return out


def _by_tab(actions: Sequence[Action], kind: str) -> dict[str, tuple[float, float]]:
    """Per tab, the median CPU-ms and models of its ``kind`` actions."""
    tabs: dict[str, list[Action]] = {}
    for a in actions:
        if a.kind == kind:
            tabs.setdefault(a.tab, []).append(a)
    return {
        t: (statistics.median(a.cpu_ms for a in rows), statistics.median(a.models for a in rows))
        for t, rows in tabs.items()
    }


def kind_lines(dashboard: Sequence[Action], floor: Sequence[Action]) -> list[str]:
    """The table of kinds, dashboard against floor, then each tab's first opening."""
    ours, base = kinds_summary(dashboard), kinds_summary(floor)
    lines = [
        "  kind: dashboard CPU-ms (models, ms a model) | floor's | x floor: CPU, ms a model",
    ]
    for kind in (*KINDS, "mix"):
        d, f = ours[kind], base[kind]
        per = (
            f" ({d['models']:.0f} models, {d['ms_per_model']:.2f} ms a model)"
            if d["models"]
            else ""
        )
        fper = f" ({f['models']:.0f} models, {f['ms_per_model']:.2f})" if f["models"] else ""
        ratio = f"{d['cpu_ms'] / f['cpu_ms']:.2f}x"
        if d["models"] and f["models"]:
            ratio += f", {d['ms_per_model'] / f['ms_per_model']:.2f}x"
        lines.append(
            f"  {kind} (n {d['n']} / {f['n']}): {d['cpu_ms']:.1f}{per} | {f['cpu_ms']:.1f}{fper}"
            f" | {ratio}"
        )
    lines.append("  first openings, median CPU-ms (models) per tab: dashboard | floor")
    floor_open = _by_tab(floor, "open")
    for tab, (ms, models) in _by_tab(dashboard, "open").items():
        fms, fmodels = floor_open.get(tab, (float("nan"), 0))
        lines.append(f"    {tab}: {ms:.0f} ({models:.0f}) | {fms:.0f} ({fmodels:.0f})")
    others = statistics.fmean(a.others_ms for a in (*dashboard, *floor))
    lines.append(f"  the rest of the machine: {others:.1f} CPU-ms an action on average")
    return lines


def bench_room_kinds(walks: int = 3, moves: int = 3) -> BenchReport:
    """:func:`walk_kinds` on a ``workbench dashboard`` server (one process, no Spark) and on
    the floor page, in one run: :func:`kind_lines` and, as data, every action."""
    import tempfile
    from pathlib import Path

    from benchmarks.room_floor import floor_server
    from harness.server import dashboard_server

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.txt"
        with dashboard_server(log, ["--spark-at-start", "no"]) as (url, server):
            dashboard = walk_kinds(url, server.pid, walks, moves)
        with floor_server(Path(tmp)) as (url, server):
            floor = walk_kinds(url, server.pid, walks, moves)
    lines = [
        f"Server CPU by kind of interaction: one protocol user at a time, {walks} walks after "
        f"a warm one, {moves} moves a slider tab, the dashboard and the floor page in one run",
        *kind_lines(dashboard, floor),
    ]
    data = {
        "walks": walks,
        "moves": moves,
        "dashboard": [asdict(a) for a in dashboard],
        "floor": [asdict(a) for a in floor],
        "summary": {"dashboard": kinds_summary(dashboard), "floor": kinds_summary(floor)},
    }
    return BenchReport("room-kinds", tuple(lines), data)
