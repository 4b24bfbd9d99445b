"""A server of two processes (``workbench dashboard --procs 2``, issue 39), driven by clients
speaking Bokeh's websocket protocol: each process warms its tabs, and a session on either gets
its page and its own plot data after a slider move; a user on each process starts a live join
at once, both hold the server's two Spark slots together, both finish with exactly the
in-process PTJoin's pairs for their data and delta, and once the pages close every slot is
free and every run folder removed."""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.room_protocol import ProtocolUser, websocket_url
from harness.live_cases import in_process_pairs, newcomer_csv
from harness.server import dashboard_server, serving_process
from workbench.app.dashboard import LIVE_TAB, TABS_WARM
from workbench.app.live_settings import LiveJoinSettings
from workbench.app.runs.slots import Cancelled, Slots
from workbench.operators import StreamSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DELTAS = (0.5, 0.9)
"""Each user's confidence delta: their pairs differ."""
CSV = newcomer_csv(600)  # two sensors, 300 readings each: a short replay
SPEED = 20_000.0
MOVED = "Satisfaction probability"
SESSIONS_AT_MOST = 8
"""Sessions opened, at most, until each process serves one."""
STAGGER_S = 0.2
"""Between asking for the two sessions of a pair (:func:`_one_per_process`)."""
FINISHED = re.compile(r"Finished: all ([\d,]+) events replayed and joined, ([\d,]+) pairs")
SPARK_TIMEOUT_S = 240.0


def _expected_pairs(delta: float) -> int:
    """The in-process PTJoin's pairs on the CSV at the page's defaults and ``delta`` (d from
    the data's templates, as the page's Start chooses it)."""
    model = LiveJoinSettings(source="CSV file", csv_file=CSV, delta=delta)
    streams = model.settings().streams()
    delays = (model.max_delay_a, model.max_delay_b)
    specs = tuple(StreamSpec(t, D) for t, D in zip(streams.templates, delays, strict=True))
    return len(in_process_pairs(specs, streams.events, model.d, delta))


def _says(*texts: str) -> Callable[[Any], bool]:
    """A test of a message: whether it holds any of ``texts``; a failed run fails the test."""

    def test(message: Any) -> bool:
        content = message.content_json
        assert "The live join failed" not in content, content[:2000]
        assert "Waiting for a free Spark slot" not in content  # two runs, two slots
        return any(text in content for text in texts)

    return test


def _slots_free(lock: Path) -> int:
    """How many of the server's two Spark slots another process can take now."""
    probe, given_up = Slots(2, lock), threading.Event()
    given_up.set()  # take what is free, wait for nothing
    taken = 0
    try:
        for owner in range(2):
            probe.acquire(owner, cancelled=given_up)
            taken += 1
    except Cancelled:
        pass
    finally:
        probe.close()
    return taken


async def _one_per_process(url: str, server: subprocess.Popen) -> dict[int, ProtocolUser]:
    """Sessions opened two at a time until each of the server's processes serves one: one
    user per process, the others closed.  A process accepts every connection waiting when it
    wakes, so the second session of two is asked for once the first one's page is being
    built, which keeps its process busy: the other one takes it (almost always)."""
    users: dict[int, ProtocolUser] = {}
    for _ in range(SESSIONS_AT_MOST // 2):
        pair = [ProtocolUser(websocket_url(url)) for _ in range(2)]
        first = asyncio.create_task(pair[0].open("Templates"))
        await asyncio.sleep(STAGGER_S)
        await asyncio.gather(first, pair[1].open("Templates"))
        for user in pair:
            pid = serving_process(server, user.address)
            if pid in users:
                await user.close()
            else:
                users[pid] = user
        if len(users) == 2:
            return users
    raise AssertionError(f"{SESSIONS_AT_MOST} sessions all landed on process {list(users)}")


async def _live_join(user: ProtocolUser, delta: float, slot_taken: asyncio.Event) -> int:
    """On ``user``'s page: move a slider (its own plot data arrives), then replay the CSV at
    ``delta`` into the live join; the pairs its finished run says it joined."""
    await user.switch(MOVED)
    await user.move()
    await user.switch(LIVE_TAB)
    await user.set(user.find("panel.models.widgets.CustomSelect", title="data"), value="CSV file")
    await user.set(
        await user.arrives("FileInput", accept=".csv"),
        value=base64.b64encode(CSV).decode(),
        mime_type="text/csv",
        filename="two-sensors.csv",
    )
    await user.until(_says("600 of 600 rows accepted"))  # read: d follows its templates
    await user.set(user.find("Spinner", title="speed (x real time)"), value=SPEED)
    await user.set(
        user.find("Slider", title="confidence delta"), value=delta, value_throttled=delta
    )
    await user.click(user.find("panel.models.widgets.Button", label="Start"))
    held = await user.until(
        _says("first Spark run: about half", "Starting the join queries", "Running:"),
        SPARK_TIMEOUT_S,
    )
    slot_taken.set()  # its run holds a slot from here on
    if "Running:" not in held.content_json:
        held = await user.until(_says("Running:"), SPARK_TIMEOUT_S)
    assert f"at {SPEED:g}x" in held.content_json and f"delta = {delta:g}" in held.content_json
    finished = await user.until(_says("Finished: all"), SPARK_TIMEOUT_S)
    events, pairs = FINISHED.search(finished.content_json).groups()
    assert events == "600"
    return int(pairs.replace(",", ""))


async def _slots_free_once_held(taken: list[asyncio.Event], lock: Path) -> int:
    """The slots free (``lock``: the server's) once every run said it holds one."""
    await asyncio.gather(*(t.wait() for t in taken))
    return _slots_free(lock)


async def _room(url: str, server: subprocess.Popen, lock: Path) -> tuple[list[int], int, list[str]]:
    """A user per process, each running a live join at once: their pairs, the slots free
    while both runs held theirs, the sessions' errors."""
    users = list((await _one_per_process(url, server)).values())
    taken = [asyncio.Event() for _ in users]
    try:
        *pairs, free = await asyncio.gather(
            *(_live_join(u, delta, t) for u, delta, t in zip(users, DELTAS, taken, strict=True)),
            _slots_free_once_held(taken, lock),
        )
    finally:
        for user in users:
            await user.close()
    return pairs, free, [e for user in users for e in user.times.errors]


def test_two_processes_each_run_a_live_join(tmp_path):
    log, work = tmp_path / "server.txt", tmp_path / "work"
    args = ["--spark-at-start", "no", "--spark-slots", "2", "--work-dir", str(work)]
    with dashboard_server(log, args, procs=2) as (url, server):
        deadline = time.monotonic() + 120  # the page answers once one process is warm
        while log.read_text().count(TABS_WARM) < 2:  # each process warms its tabs
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)  # polling the server's log
        lock = work / f"workbench-spark-slots-{server.pid}.lock"  # made at the first Start
        pairs, free_while_running, errors = asyncio.run(_room(url, server, lock))
        assert errors == []
        assert free_while_running == 0  # both runs held a slot at once
        assert pairs == [_expected_pairs(delta) for delta in DELTAS]
        assert pairs[0] > pairs[1] > 0  # each its own
        deadline = time.monotonic() + 30
        while list(work.iterdir()) != [lock] or _slots_free(lock) != 2:
            assert time.monotonic() < deadline, list(work.iterdir())
            time.sleep(0.2)  # the runs' teardown, in their workers
