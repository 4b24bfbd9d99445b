"""What a room of users measures and how it is told, whoever the users are (the browser room's
headless Chromium sessions, :mod:`benchmarks.room_browser`, or the protocol room's websocket
clients, :mod:`benchmarks.room_protocol`): the walk, each session's waits and their medians
(:func:`summary`), where the CPU went (:func:`cpu_split`), the server's memory and threads, the
waits the CPU allows by Little's law (:func:`cpu_wait`, :func:`server_wait`), and the verdicts
against issue 18's goals.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field

from harness.server import READY

__all__ = [
    "CpuSplit",
    "GOALS",
    "SESSION_CLEANUP_S",
    "SLIDER_TABS",
    "ServerState",
    "SessionTimes",
    "WALK",
    "cpu_per_interaction",
    "cpu_split",
    "cpu_wait",
    "described",
    "measure_rooms",
    "pauses",
    "server_per_interaction",
    "server_state",
    "server_wait",
    "summary",
    "verdicts",
]

SLIDER_TABS = (
    "Satisfaction probability",
    "Partition regions",
    "Coalescing",
    "Deployment (simulated)",
)
"""The analytical tabs whose first slider changes a plot's data at once."""
WALK = tuple(t for t in READY if t != "Live join (Spark)")
"""The tabs a room's user opens, in the page's order (the live join's runs need Spark: a room
measures the page, not Spark)."""


@dataclass
class SessionTimes:
    """What one session's user waited: the page (s), each tab switch and slider move (ms),
    and each return to a tab opened before (ms; the browser room's users return to every
    tab once after their walk)."""

    page_s: float = float("nan")
    switch_ms: dict[str, float] = field(default_factory=dict)
    return_ms: dict[str, float] = field(default_factory=dict)
    moves_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def pauses(think: float, seed: int) -> Callable[[], float]:
    """One user's pauses before an action: ``think`` s on average, each between half and one
    and a half of it (users out of step with each other), the same for a seed in every run."""
    draw = random.Random(seed)
    return lambda: think * draw.uniform(0.5, 1.5)


def _median(values: Sequence[float]) -> float:
    """The median of ``values``' numbers (a session that failed has no page time: NaN)."""
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


def _p95(values: Sequence[float]) -> float:
    """The 95th percentile of ``values``' numbers (between the closest ranks; one value is
    its own)."""
    values = [v for v in values if not math.isnan(v)]
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def summary(room: Sequence[SessionTimes]) -> dict[str, object]:
    """Medians over a room's sessions: page (s), tab switch (ms), slider move per tab (ms),
    return to an opened tab (ms); the 95th percentiles of page, switch, move and return over
    every session's waits. Returns are not interactions: they ask the server for nothing."""
    tabs = dict.fromkeys(t for s in room for t in s.switch_ms)
    moved = dict.fromkeys(t for s in room for t in s.moves_ms)
    pages = [s.page_s for s in room]
    switches = [v for s in room for v in s.switch_ms.values()]
    moves = [v for s in room for vs in s.moves_ms.values() for v in vs]
    returns = [v for s in room for v in s.return_ms.values()]
    return {
        "sessions": len(room),
        "interactions": len(pages) + len(switches) + len(moves),
        "mean_wait_s": statistics.fmean(pages + [v / 1000 for v in switches + moves]),
        "page_s": _median(pages),
        "page_max_s": max(pages),
        "page_p95_s": _p95(pages),
        "switch_ms": _median(switches),
        "switch_p95_ms": _p95(switches),
        "switch_ms_by_tab": {
            t: _median([s.switch_ms[t] for s in room if t in s.switch_ms]) for t in tabs
        },
        "move_ms": _median(moves),
        "move_p95_ms": _p95(moves),
        "move_ms_by_tab": {
            t: _median([v for s in room for v in s.moves_ms.get(t, [])]) for t in moved
        },
        "return_ms": _median(returns),
        "return_p95_ms": _p95(returns),
        "errors": [e for s in room for e in s.errors],
    }


@dataclass(frozen=True)
class CpuSplit:
    """Where a room's CPU went: wall time, the server's CPU time (its processes and children:
    Spark's JVM), its Python processes' own (each serves its sessions on one thread) and the
    rest of the machine's (the browsers, mostly), all in seconds, and the machine's cores;
    ``bench_s``, part of the rest: the bench's own process (the protocol room's clients, the
    browser room's Playwright driver)."""

    wall_s: float
    server_s: float
    own_s: float
    others_s: float
    cores: int
    bench_s: float


@contextmanager
def cpu_split(server_pid: int) -> Iterator[list[CpuSplit]]:
    """Measure the block: yields a list that holds the :class:`CpuSplit` once it ends."""
    import psutil

    def busy() -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)

    def tree() -> dict[int, tuple[float, bool]]:
        found = {}
        for proc in _server_tree(server_pid):
            with suppress(psutil.NoSuchProcess):
                found[proc.pid] = (sum(proc.cpu_times()[:2]), _is_python(proc))
        return found

    out: list[CpuSplit] = []
    start, machine, before = time.perf_counter(), busy(), tree()
    bench = time.process_time()
    yield out
    spent = {pid: (t - before.get(pid, (0.0, py))[0], py) for pid, (t, py) in tree().items()}
    server_s = sum(t for t, _ in spent.values())
    out.append(
        CpuSplit(
            time.perf_counter() - start,
            server_s,
            sum(t for t, py in spent.values() if py),
            busy() - machine - server_s,
            psutil.cpu_count() or 1,
            time.process_time() - bench,
        )
    )


GOALS = {"page_s": (2.0, 5.0), "switch_ms": (500.0, 500.0), "move_ms": (500.0, 500.0)}
"""Issue 18's goals: one session's, then a room's (medians)."""
SESSION_CLEANUP_S = 25.0
"""Time for the server to end closed sessions (Bokeh checks every 2 s, ``serve_command``, and
ends a session 15 s after its last connection closed)."""


@dataclass(frozen=True)
class ServerState:
    """The server process's resident memory (MB) and threads."""

    rss_mb: float
    threads: int


def _server_tree(pid: int) -> list:
    """The server's process ``pid`` and every process it started (psutil processes)."""
    import psutil

    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _is_python(proc: object) -> bool:
    """Whether ``proc`` (a psutil process) is one of the server's Python processes, not a
    Spark JVM it started."""
    import psutil

    try:
        return "python" in proc.name().lower()
    except psutil.NoSuchProcess:
        return False


def server_state(pid: int) -> ServerState:
    """:class:`ServerState` of the server's Python processes (``pid`` and those it forked for
    ``WORKBENCH_SERVER_PROCS``; Spark's JVMs are left out), summed."""
    procs = [p for p in _server_tree(pid) if _is_python(p)]
    rss = sum(p.memory_info().rss for p in procs) / 2**20
    return ServerState(rss, sum(p.num_threads() for p in procs))


def verdicts(
    rooms: dict[int, dict], cycles: dict[str, object] | None, think: float = 0.0
) -> list[str]:
    """PASS/FAIL lines: the room goals (:data:`GOALS`), no errors, memory within 10 % of the
    baseline and threads back to it after the open/close cycles (``think``: the users' mean
    pause, named in each room's lines when there is one)."""
    lines = []
    for k, (count, room) in enumerate(rooms.items()):
        who = f"{count} session(s)" + (f" pausing {think:g} s" if think else "")
        for key, goals in GOALS.items():
            got, goal = room[key], goals[min(k, 1)]
            unit = "s" if key == "page_s" else "ms"
            lines.append(
                f"{'PASS' if got <= goal else 'FAIL'} {who}: {key.split('_')[0]} "
                f"{got:.{2 if unit == 's' else 0}f} {unit} median (goal {goal:g} {unit})"
            )
        errors = len(room["errors"])
        lines.append(f"{'PASS' if not errors else 'FAIL'} {who}: {errors} errors")
    if cycles is not None:
        base, after = cycles["baseline"], cycles["after"]
        grown = after["rss_mb"] / base["rss_mb"] - 1.0
        lines.append(
            f"{'PASS' if grown <= 0.10 else 'FAIL'} memory after {cycles['cycles']} open/close "
            f"cycles: {base['rss_mb']:.0f} -> {after['rss_mb']:.0f} MB ({100 * grown:+.1f} %, "
            "limit +10 %)"
        )
        lines.append(
            f"{'PASS' if after['threads'] <= base['threads'] else 'FAIL'} threads after the "
            f"cycles: {base['threads']} -> {after['threads']}"
        )
    return lines


def cpu_per_interaction(room: dict) -> float:
    """The CPU-seconds (browser and server together) an interaction took in ``room`` (a
    :func:`summary` with its CPU): page loads, tab switches and slider moves alike."""
    cpu = room["cpu"]
    return (cpu["server_s"] + cpu["others_s"]) / room["interactions"]


def _littles_wait(sessions: int, cost: float, workers: int, think: float) -> float:
    """The least mean wait (s) of ``sessions`` users who pause ``think`` s before each action
    when every action costs ``cost`` s of one of ``workers`` busy workers: they complete at most
    ``workers / cost`` actions a second, and by Little's law ``sessions = throughput x (wait +
    think)`` (no less than 0)."""
    return max(0.0, sessions * cost / workers - think)


def cpu_wait(room: dict, think: float = 0.0) -> float:
    """The mean wait (s) the machine's CPU allows ``room``'s users, who pause ``think`` s
    before each action, when every interaction costs ``c`` CPU-seconds
    (:func:`cpu_per_interaction`) of the machine's cores: ``sessions * c / cores - think``
    (:func:`_littles_wait`).  Near the room's measured mean wait, the room is bound by CPU
    work."""
    cores = room["cpu"]["cores"]
    return _littles_wait(room["sessions"], cpu_per_interaction(room), cores, think)


def server_per_interaction(room: dict) -> float:
    """The CPU-seconds of the server's Python processes (each serves its sessions on one
    thread) an interaction took in ``room``."""
    return room["cpu"]["own_s"] / room["interactions"]


def server_wait(room: dict, think: float = 0.0) -> float:
    """The least mean wait (s) the server's threads allow ``room``'s users however fast their
    browsers (each on a machine of its own): ``sessions * s / procs - think`` when every
    interaction costs the server ``s`` CPU-seconds (:func:`server_per_interaction`) and it
    runs ``procs`` processes of one thread each, given the cores (:func:`_littles_wait`).
    With one process, eight users without pause wait 0.5 s only if ``s`` is below 0.5 / 8 s."""
    return _littles_wait(room["sessions"], server_per_interaction(room), room["procs"], think)


def measure_rooms(
    url: str,
    server_pid: int,
    sessions: Sequence[int],
    moves: int,
    think: float = 0.0,
    procs: int = 1,
    *,
    run: Callable[..., list[SessionTimes]],
) -> dict[int, dict]:
    """:func:`summary` of one session, then of each of ``sessions`` at once, each with its
    :class:`CpuSplit`, on the warmed page at ``url`` served by ``procs`` processes
    (``think``: the seconds each user pauses before an action, on average; ``run``: the room's
    users, :func:`~benchmarks.room_browser.run_room`'s browsers or another runner taking its
    arguments)."""
    run(url, 1, tabs=WALK[:1], moves=0)  # the server's first page: warm
    rooms = {}
    for n in dict.fromkeys((1, *sessions)):
        with cpu_split(server_pid) as cpu:
            room = run(url, n, moves=moves, think=think)
        rooms[n] = {**summary(room), "cpu": asdict(cpu[0]), "procs": procs}
    return rooms


def described(rooms: dict[int, dict], think: float) -> list[str]:
    """Each room's medians, CPU split and per-tab figures, as lines; for a room of several,
    its mean wait against the one its CPU work allows (:func:`cpu_wait`)."""
    lines = []
    for n, s in rooms.items():
        lines.append(
            f"  {n} session(s): page {s['page_s']:.2f} s median (max {s['page_max_s']:.2f} s), "
            f"tab switch {s['switch_ms']:.0f} ms median, slider move {s['move_ms']:.0f} ms "
            f"median, errors {len(s['errors'])}"
        )
        c = s["cpu"]
        lines.append(
            f"    CPU: server {c['server_s']:.1f} s, the rest of the machine (the browsers) "
            f"{c['others_s']:.1f} s, in {c['wall_s']:.1f} s on {c['cores']} cores"
        )
        if not math.isnan(s["return_ms"]):
            lines.append(
                f"    return to an opened tab: {s['return_ms']:.0f} ms median, "
                f"{s['return_p95_ms']:.0f} ms p95"
            )
        for tab, ms in s["switch_ms_by_tab"].items():
            move = s["move_ms_by_tab"].get(tab)
            extra = f", slider {move:.0f} ms" if move is not None else ""
            lines.append(f"    {tab}: switch {ms:.0f} ms{extra}")
        lines += [f"    error: {e}" for e in s["errors"][:5]]
        if n > 1:
            lines.append(
                f"    mean wait {s['mean_wait_s']:.2f} s; at {1000 * cpu_per_interaction(s):.0f} "
                f"CPU-ms an interaction its CPU allows {cpu_wait(s, think):.2f} s "
                "(Little's law)"
            )
            one = s["procs"] == 1
            threads = "one thread" if one else f"{s['procs']} processes' threads"
            allow = "it alone allows" if one else "they alone allow"
            lines.append(
                f"    the server's {threads}: {1000 * server_per_interaction(s):.0f} CPU-ms an "
                f"interaction; with every browser elsewhere {allow} {server_wait(s, think):.2f} s"
            )
    return lines
