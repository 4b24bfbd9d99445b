"""A room of browser users on one dashboard server (``./dev bench room``, :mod:`benchmarks.room`):
browser sessions (headless Chromium through Playwright, one context each) open the page at
once, switch through the tabs and move a slider on each analytical tab; every wait is for the
page's own change, and each figure is what that session's user waited.  What a room measures
and how it is told is :mod:`benchmarks.room_measure`'s, shared with the protocol room
(:mod:`benchmarks.room_protocol`).

Playwright and a Chromium are test tooling (the ``dev`` extra; ``./dev`` installs Debian's
``chromium``); the server and the ready labels are :mod:`harness.server`'s.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from benchmarks.report import BenchReport
from benchmarks.room_measure import (
    GOALS,
    SESSION_CLEANUP_S,
    SLIDER_TABS,
    WALK,
    SessionTimes,
    described,
    measure_rooms,
    pauses,
    server_state,
    verdicts,
)
from harness.server import READY, dashboard_server, headless_shell

__all__ = [
    "WATCH",
    "bench_browser_room",
    "open_close_cycles",
    "run_room",
]

WATCH = (Path(__file__).with_name("room_watch.js")).read_text()
"""Each session's clock, inside its page (a script run before the page's own; ``FIRST``: the
labels awaited from the start, a JSON list).  A label *shows* in the first frame in which a
text node holding it is connected and laid out: every shadow root is observed from its
creation (``attachShadow``), only the text that mutations add is read, and visibility is
tested in the next animation frame, so a page waiting for the server does no work (a walk of
every element and shadow root every 50 ms cost 2-3 ms a look, about a fifth of the machine for
eight waiting pages).  ``room.shown[label]``, ``room.clicked`` (the last pointer press),
``room.pressed`` (the last key press) and ``room.changed`` (the frame after the first change
of a plot's data since that key press, once ``room.follow()`` watches BokehJS's documents) are
``performance.now()`` times: a wait is the difference of two of them, measured where the user
sits."""
POLL_MS = 20
"""How often a session asks its page whether what it waits for has happened (a comparison of
numbers the page keeps: :data:`WATCH`)."""


async def _wait(page, condition: str, arg: object = None) -> None:
    """Return once ``condition`` (a predicate on the page's :data:`WATCH` record) holds."""
    await page.wait_for_function(
        f"(arg) => {{ const room = window.__room; return {condition}; }}",
        arg=arg,
        polling=POLL_MS,
        timeout=120_000,
    )


async def _open_tab(page, tab: str) -> float:
    """Click ``tab``; milliseconds from the press to the frame showing its ready label."""
    await page.evaluate("(label) => window.__room.want(label)", READY[tab])
    await page.locator(".bk-tab").get_by_text(tab, exact=True).click()
    await _wait(page, "room.shown[arg] !== undefined", READY[tab])
    return await page.evaluate(
        "(label) => window.__room.shown[label] - window.__room.clicked", READY[tab]
    )


async def _move_slider(page) -> float:
    """One step right on the tab's first visible slider; milliseconds from the key press to
    the frame after a plot's data changed."""
    handle = page.locator(".noUi-handle >> visible=true").first
    await handle.focus()
    await handle.press("ArrowRight")
    await _wait(page, "room.changed > room.pressed")
    return await page.evaluate("() => window.__room.changed - window.__room.pressed")


async def _session(
    browser, url: str, tabs: Sequence[str], moves: int, pause: Callable[[], float]
) -> SessionTimes:
    """One user: open the page, then each tab in turn, moving its slider ``moves`` times,
    ``pause()`` seconds before each switch and move (a user reading what changed)."""
    times = SessionTimes()
    context = await browser.new_context(viewport={"width": 1500, "height": 1000})
    await context.add_init_script(WATCH.replace("FIRST", json.dumps([READY[tabs[0]]])))
    page = await context.new_page()
    page.on("pageerror", lambda exc: times.errors.append(f"page error: {exc}"))
    try:
        await page.goto(url, timeout=120_000)
        await _wait(page, "room.shown[arg] !== undefined", READY[tabs[0]])
        times.page_s = await page.evaluate(
            "(label) => window.__room.shown[label] / 1000", READY[tabs[0]]
        )
        await page.evaluate("() => window.__room.follow()")
        for tab in tabs:
            if tab != tabs[0]:
                await asyncio.sleep(pause())
                times.switch_ms[tab] = await _open_tab(page, tab)
            if tab in SLIDER_TABS:
                for _ in range(moves):
                    await asyncio.sleep(pause())
                    times.moves_ms.setdefault(tab, []).append(await _move_slider(page))
        for tab in tabs[:-1]:  # back to each tab opened before: kept in the page
            await asyncio.sleep(pause())
            times.return_ms[tab] = await _open_tab(page, tab)
        alerts = page.locator(".bk-notification, .notyf__toast--error")
        if await alerts.count():
            times.errors.append(f"notification: {await alerts.first.inner_text()}")
    except Exception as exc:  # noqa: BLE001 (a session's failure is a figure, not the end)
        times.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await context.close()
    return times


async def _room(
    url: str, sessions: int, tabs: Sequence[str], moves: int, think: float
) -> list[SessionTimes]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=headless_shell(), args=["--no-sandbox"])
        try:
            users = (_session(browser, url, tabs, moves, pauses(think, k)) for k in range(sessions))
            return list(await asyncio.gather(*users))
        finally:
            await browser.close()


def run_room(
    url: str, sessions: int, tabs: Sequence[str] = WALK, moves: int = 3, think: float = 0.0
) -> list[SessionTimes]:
    """``sessions`` browser users at once on the page at ``url``: each session's times.
    ``think``: the seconds a user pauses before each tab switch and slider move, on average
    (0: none, every session acts again as soon as its page has answered)."""
    return asyncio.run(_room(url, sessions, tabs, moves, think))


def open_close_cycles(url: str, server_pid: int, cycles: int) -> dict[str, object]:
    """One session opens the page, waits for its first tab and closes, ``cycles`` times; the
    server's memory and threads after one cycle (the baseline: every cache filled) and after
    all of them, each once closed sessions have ended."""
    run_room(url, 1, tabs=("Templates",), moves=0)
    time.sleep(SESSION_CLEANUP_S)
    baseline = server_state(server_pid)
    for _ in range(cycles):
        run_room(url, 1, tabs=("Templates",), moves=0)
    time.sleep(SESSION_CLEANUP_S)
    after = server_state(server_pid)
    return {"cycles": cycles, "baseline": asdict(baseline), "after": asdict(after)}


def bench_browser_room(
    sessions: Sequence[int] | None = None,
    moves: int = 3,
    cycles: int = 20,
    floor: bool = False,
    think: float = 0.0,
    procs: int = 1,
) -> BenchReport:
    """One session, then each of ``sessions`` at once (8 by default), on one ``workbench
    dashboard`` server: the page, tab switches and slider moves as each user waits them, and
    where the CPU went; then ``cycles`` sessions one after another, the server's memory and
    threads after them; the verdicts (:func:`verdicts`).  ``floor``: the same rooms on the
    floor page (:mod:`benchmarks.room_floor`), and each median's ratio to it.  ``think``: the
    seconds each user pauses before a switch or move, on average (0: none, the issue's room).
    ``procs``: the dashboard server's processes (``WORKBENCH_SERVER_PROCS``; the floor's is
    one)."""
    import tempfile

    from benchmarks.room_floor import floor_server

    sessions = sessions or (8,)
    if headless_shell() is None:
        raise RuntimeError("bench room needs Chromium on PATH (./dev installs Debian's chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        with dashboard_server(Path(tmp) / "server.txt", warm=True, procs=procs) as (url, server):
            rooms = measure_rooms(url, server.pid, sessions, moves, think, procs, run=run_room)
            cycled = open_close_cycles(url, server.pid, cycles) if cycles else None
        floors = {}
        if floor:
            with floor_server(Path(tmp)) as (url, server):
                floors = measure_rooms(url, server.pid, sessions, moves, think, run=run_room)
    pausing = f"pausing {think:g} s (0.5-1.5x) before each switch or move" if think else "no pause"
    server = "one server" + (f" of {procs} processes" if procs > 1 else "")
    rooms_text = ", ".join(map(str, sessions))
    lines = [f"Dashboard for a room: {server}, 1 then {rooms_text} sessions at once, {pausing}"]
    lines += described(rooms, think)
    if floors:
        lines.append("The floor: the same rooms on a page of one figure and four sliders per tab")
        lines += described(floors, think)
        for n, room in rooms.items():
            ratios = (f"{key.split('_')[0]} {room[key] / floors[n][key]:.1f}x" for key in GOALS)
            lines.append(f"  {n} session(s), dashboard / floor: {', '.join(ratios)}")
    lines += verdicts(rooms, cycled, think)
    data = {"think_s": think, "rooms": rooms, "cycles": cycled, "floor": floors or None}
    return BenchReport("room", tuple(lines), data)
