"""Eight users at once on one ``workbench dashboard`` server (issue 18): each opens the page,
the analytical tabs with sliders, and moves each slider; every page gets its own new plot data
after every move, and no page reports an error.

This is the room's correctness check.  Its latency figures (medians per tab at 1 and 8
sessions, against the issue's goals) come from ``./dev bench room``: on two cores the eight
browsers themselves take most of the CPU, so the figures belong to a benchmark, not a test."""

from __future__ import annotations

import math

import pytest

from benchmarks.room_browser import run_room
from benchmarks.room_measure import SLIDER_TABS, summary
from harness.server import chromium, dashboard_server
from workbench.app.dashboard import TABS_WARM

pytestmark = [pytest.mark.ui, pytest.mark.slow]

SESSIONS = 8
MOVES = 1
TABS = ("Templates", "Satisfaction probability", "Deployment (simulated)")


def test_eight_sessions_move_sliders_at_once(tmp_path):
    if chromium() is None:
        pytest.skip("chromium not found on PATH (./dev installs Debian's chromium as root)")
    log = tmp_path / "server.txt"
    with dashboard_server(log, ["--spark-at-start", "no"]) as (url, _):  # no Spark tab here
        assert TABS_WARM in log.read_text()  # every tab rendered once before the first page
        assert "objects frozen" in log.read_text()  # out of the collector's full passes
        assert "Spark starts at the first Spark run" in log.read_text()
        room = run_room(url, SESSIONS, tabs=TABS, moves=MOVES)
    assert summary(room)["errors"] == []
    moved = [t for t in TABS if t in SLIDER_TABS]
    for session in room:
        assert math.isfinite(session.page_s)
        assert sorted(session.switch_ms) == sorted(TABS[1:])
        assert {t: len(ms) for t, ms in session.moves_ms.items()} == dict.fromkeys(moved, MOVES)
        assert all(math.isfinite(v) for values in session.moves_ms.values() for v in values)
