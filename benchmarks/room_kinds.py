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

__all__ = [
    "Action",
    "KINDS",
    "OWNERS",
    "bench_room_kinds",
    "kind_lines",
    "kinds_summary",
    "opening_profile",
    "profile_lines",
    "walk_kinds",
]

SETTLE_S = 0.4
"""Seconds of quiet before each action and after its answer."""
KINDS = ("page", "open", "move", "return")
"""The kinds of interaction: a page load (its first tab included), a tab's first opening in
the session, a slider step, a return to a tab opened before."""
IDLE_ACTIONS = 5
"""Windows measured at the end of a walk with nothing sent: what the server spends in any
window of the same length (its periodic callbacks), subtracted from every kind."""
MIX = ("page", "open", "move")
"""The kinds a room's walk is made of (it returns to no tab)."""
OWNERS = (
    ("bokeh", "/bokeh/"),
    ("panel", "/panel/"),
    ("param", "/param/"),
    ("ours", "/workbench/"),
    ("numpy, pandas, numba", ("/numpy/", "/pandas/", "/numba/")),
    ("markdown", ("/markdown", "/bleach", "/markdown_it/")),
)
"""Whose code a profiled function is, by its file's path (first match; the rest: ``other``,
the standard library and the interpreter's built-ins)."""


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
        for _ in range(IDLE_ACTIONS):
            await measured("idle", tabs[-1], lambda: asyncio.sleep(0))
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
    mean server CPU-ms, that less the ``idle`` windows' mean (``net_ms``: what the action
    itself cost), mean models and net CPU-ms per model (over the kinds that bring models).

    >>> a = [Action("open", "A", 32.0, 10, 0.0), Action("move", "A", 7.0, 0, 0.0),
    ...      Action("idle", "A", 2.0, 0, 0.0)]
    >>> s = kinds_summary(a)
    >>> s["open"]["ms_per_model"], s["mix"]["net_ms"], s["idle"]["cpu_ms"]
    (3.0, 17.5, 2.0)
    """
    idle = [a.cpu_ms for a in actions if a.kind == "idle"]
    base = statistics.fmean(idle) if idle else 0.0
    out = {}
    for kind in (*KINDS, "mix", "idle"):
        rows = [a for a in actions if a.kind == kind or (kind == "mix" and a.kind in MIX)]
        if not rows:
            continue
        models = statistics.fmean(a.models for a in rows)
        cpu = statistics.fmean(a.cpu_ms for a in rows)
        net = cpu - base
        out[kind] = {
            "n": len(rows),
            "cpu_ms": cpu,
            "net_ms": net,
            "models": models,
            "ms_per_model": net / models if models and kind != "mix" else float("nan"),
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


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def kind_lines(dashboard: Sequence[Action], floor: Sequence[Action]) -> list[str]:
    """The table of kinds, dashboard against floor, then each tab's first opening."""
    ours, base = kinds_summary(dashboard), kinds_summary(floor)
    idle = f"{ours['idle']['cpu_ms']:.1f} | {base['idle']['cpu_ms']:.1f}"
    lines = [
        f"  an idle window (nothing sent; subtracted below): dashboard | floor CPU-ms: {idle}",
        "  kind: dashboard net CPU-ms (models, ms a model) | floor's | x floor: CPU, ms a model",
    ]
    for kind in (*KINDS, "mix"):
        d, f = ours[kind], base[kind]
        models = bool(d["models"] and f["models"]) and kind != "mix"
        per = f" ({d['models']:.0f} models, {d['ms_per_model']:.2f} ms a model)" if models else ""
        fper = f" ({f['models']:.0f} models, {f['ms_per_model']:.2f})" if models else ""
        ratio = f"{_ratio(d['net_ms'], f['net_ms']):.2f}x"
        if models:
            ratio += f", {_ratio(d['ms_per_model'], f['ms_per_model']):.2f}x"
        lines.append(
            f"  {kind} (n {d['n']} / {f['n']}): {d['net_ms']:.1f}{per} | {f['net_ms']:.1f}{fper}"
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


def _owner(path: str) -> str:
    for name, keys in OWNERS:
        if any(k in path for k in ((keys,) if isinstance(keys, str) else keys)):
            return name
    return "other"


def _open_in_process(view: Callable[[str], object], tab: str) -> tuple[int, object]:
    """Build ``view(tab)``'s Bokeh models into a new document and serialize it, as a server
    does on a tab's first opening: the models made and the document."""
    import panel as pn
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(view(tab)).get_root(doc))
        doc.to_json()
    return len(doc.models), doc


def opening_profile(tabs: Sequence[str] = WALK[1:], rounds: int = 2) -> dict[str, dict]:
    """Each of ``tabs``' first opening in this process (its models built, the document
    serialized), for the dashboard (one :class:`~workbench.app.dashboard.DashboardTabs`
    session, its page's tab built first) and the floor page, under cProfile after ``rounds``
    - 1 unprofiled rounds (imports, compiles, caches): per page, the CPU seconds by
    :data:`OWNERS` (functions' own time) and the models made."""
    import cProfile
    import pstats

    from benchmarks import floor_app
    from workbench.app.dashboard import DashboardTabs

    out = {}
    for page in ("dashboard", "floor"):
        for k in range(rounds):
            if page == "dashboard":
                session = DashboardTabs()
                session[WALK[0]]  # the page's tab: the others may read it
                view: Callable[[str], object] = session.__getitem__
            else:
                view = floor_app.tab
            profile, models = cProfile.Profile(), 0
            for tab in tabs:
                if k == rounds - 1:
                    profile.enable()
                models += _open_in_process(view, tab)[0]
                profile.disable()
        owners: dict[str, float] = dict.fromkeys([n for n, _ in OWNERS] + ["other"], 0.0)
        for (path, _, _), row in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
            owners[_owner(path)] += row[2]
        out[page] = {"owners_s": owners, "models": models, "tabs": len(tabs)}
    return out


def profile_lines(profile: dict[str, dict]) -> list[str]:
    """:func:`opening_profile` as lines: each owner's share and CPU-ms an opening, and the
    CPU-ms a model, dashboard against floor."""
    d, f = profile["dashboard"], profile["floor"]
    total = {p: sum(v["owners_s"].values()) for p, v in profile.items()}
    lines = [
        f"  in process, {d['tabs']} first openings each (models built, the document "
        "serialized; cProfile), CPU by owner: dashboard | floor",
    ]
    for owner in d["owners_s"]:
        ds, fs = d["owners_s"][owner], f["owners_s"][owner]
        lines.append(
            f"    {owner}: {ds / total['dashboard']:.0%}, {1000 * ds / d['tabs']:.0f} ms an "
            f"opening | {fs / total['floor']:.0%}, {1000 * fs / f['tabs']:.0f} ms"
        )
    per = {p: 1000 * total[p] / v["models"] for p, v in profile.items()}
    lines.append(
        f"    an opening: {1000 * total['dashboard'] / d['tabs']:.0f} ms, "
        f"{d['models'] / d['tabs']:.0f} models, {per['dashboard']:.2f} ms a model | "
        f"{1000 * total['floor'] / f['tabs']:.0f} ms, {f['models'] / f['tabs']:.0f} models, "
        f"{per['floor']:.2f} ms a model (profiled: read the shares and ratios)"
    )
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
    profile = opening_profile()
    lines = [
        f"Server CPU by kind of interaction: one protocol user at a time, {walks} walks after "
        f"a warm one, {moves} moves a slider tab, the dashboard and the floor page in one run",
        *kind_lines(dashboard, floor),
        *profile_lines(profile),
    ]
    data = {
        "walks": walks,
        "moves": moves,
        "dashboard": [asdict(a) for a in dashboard],
        "floor": [asdict(a) for a in floor],
        "summary": {"dashboard": kinds_summary(dashboard), "floor": kinds_summary(floor)},
        "opening_profile": profile,
    }
    return BenchReport("room-kinds", tuple(lines), data)
