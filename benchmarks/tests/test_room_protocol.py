"""The protocol room's users (``./dev bench room --clients protocol``): a client speaking
Bokeh's websocket protocol opens a session on the floor page, switches a tab and moves its
slider, and sees each change arrive; its figures come from the bench, not from here."""

from __future__ import annotations

import math

from benchmarks.room_floor import floor_server
from benchmarks.room_kinds import (
    IDLE_ACTIONS,
    OWNERS,
    kind_lines,
    opening_profile,
    profile_lines,
    walk_kinds,
)
from benchmarks.room_measure import WALK
from benchmarks.room_protocol import protocol_verdicts, run_protocol_room


def test_a_protocol_user_opens_switches_and_moves(tmp_path):
    with floor_server(tmp_path) as (url, _):
        (times,) = run_protocol_room(url, 1, tabs=WALK[:2], moves=2)
    assert times.errors == []
    assert math.isfinite(times.page_s)
    assert list(times.switch_ms) == [WALK[1]]  # the tab's content (its ready label) arrived
    assert len(times.moves_ms[WALK[1]]) == 2  # each move changed the plot's data
    assert all(v > 0 for v in [*times.switch_ms.values(), *times.moves_ms[WALK[1]]])


def test_protocol_verdicts_are_issue_39s_goals_with_issue_51s_cpu_goal():
    cpu = {"own_s": 2.5}
    room = {"interactions": 20, "cpu": cpu, "errors": [], "page_s": 1.2, "switch_ms": 250.0}
    room |= {"move_ms": 350.0, "switch_p95_ms": 900.0, "move_p95_ms": 1200.0}
    floor = {"interactions": 20, "cpu": {"own_s": 1.0}}
    lines = protocol_verdicts({8: room, 32: {**room, "errors": ["x"]}}, 1, {8: floor})
    assert "PASS 8 session(s), 1 process(es): page median 1.20 s (goal 1.5 s)" in lines
    assert "FAIL 8 session(s), 1 process(es): move median 350 ms (goal 300 ms)" in lines
    assert "FAIL 8 session(s), 1 process(es): move p95 1200 ms (goal 1000 ms)" in lines
    assert lines[-2] == (
        "FAIL 8 session(s), 1 process(es): server CPU an interaction 2.50x the floor's (goal 2x)"
    )
    assert lines[-1] == "FAIL 32 session(s), 1 process(es): 1 errors"  # no goals for procs 1


def test_the_by_kind_walk_measures_each_kind_and_the_models_it_brought(tmp_path):
    with floor_server(tmp_path) as (url, server):
        actions = walk_kinds(url, server.pid, walks=1, moves=2, tabs=WALK[:2])
    assert [(a.kind, a.tab) for a in actions] == [
        ("page", WALK[0]),
        ("open", WALK[1]),
        ("move", WALK[1]),
        ("move", WALK[1]),
        ("return", WALK[0]),
        ("return", WALK[1]),
        *[("idle", WALK[1])] * IDLE_ACTIONS,
    ]
    assert all(a.cpu_ms >= 0 for a in actions)  # /proc counts 10 ms ticks: a move may read 0
    assert actions[0].cpu_ms > 0 and actions[1].cpu_ms > 0
    # a floor tab: one figure, four sliders, a sentence; the page holds the first tab too
    page, opened = actions[0].models, actions[1].models
    assert 20 <= opened < page and all(a.models == 0 for a in actions[2:])
    lines = kind_lines(actions, actions)
    assert any(
        line.startswith("  open (n 1 / 1): ") and line.endswith("1.00x, 1.00x") for line in lines
    )


def test_the_opening_profile_splits_both_pages_cpu_by_owner():
    profile = opening_profile(tabs=WALK[1:2], rounds=1)
    for page in ("dashboard", "floor"):
        owners = profile[page]["owners_s"]
        assert list(owners) == [name for name, _ in OWNERS] + ["other"]
        assert owners["bokeh"] > 0 and profile[page]["models"] > 20
    assert profile["floor"]["owners_s"]["ours"] == 0  # the floor computes nothing of ours
    lines = profile_lines(profile)
    assert lines[1].startswith("    bokeh: ") and "ms a model" in lines[-1]
