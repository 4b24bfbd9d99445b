"""The newest request wins (:mod:`workbench.app.newest`): requests made while a computation
runs cost one more computation at most, at the newest setting, and only its result is shown."""

from __future__ import annotations

import asyncio
import threading

import pytest

from workbench.app.newest import Newest


class Knob:
    """A control's value, the computations started (their settings) and the results shown."""

    def __init__(self) -> None:
        self.value = 0
        self.computed: list[int] = []
        self.shown: list[tuple[int, int]] = []
        self.release = threading.Event()

    def compute(self, setting: int) -> int:
        self.computed.append(setting)
        assert self.release.wait(10), "the test never released the computation"
        return setting * 10

    def newest(self) -> Newest:
        return Newest(lambda: self.value, self.compute, lambda s, r: self.shown.append((s, r)))


async def _idle(newest: Newest) -> None:
    for _ in range(1000):
        if not newest.pending:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the request never finished")


def test_without_an_event_loop_a_request_computes_and_shows_before_it_returns():
    knob = Knob()
    knob.release.set()
    newest = knob.newest()
    knob.value = 3
    newest.request()
    assert knob.shown == [(3, 30)] and not newest.pending


def test_moves_during_a_computation_cost_one_more_at_the_newest_setting_only():
    knob = Knob()
    newest = knob.newest()
    pending_seen = []

    async def main() -> None:
        knob.value = 1
        newest.request()
        await asyncio.sleep(0.05)  # the first computation is running
        pending_seen.append(newest.pending)
        for value in (2, 3, 4, 5):  # four quick moves
            knob.value = value
            newest.request()
        knob.release.set()
        await _idle(newest)

    asyncio.run(main())
    assert pending_seen == [True]
    assert knob.computed == [1, 5]  # the superseded first result is dropped
    assert knob.shown == [(5, 50)]


def test_a_request_after_the_result_is_shown_computes_again():
    knob = Knob()
    knob.release.set()
    newest = knob.newest()

    async def main() -> None:
        for value in (7, 8):
            knob.value = value
            newest.request()
            await _idle(newest)

    asyncio.run(main())
    assert knob.computed == [7, 8] and knob.shown == [(7, 70), (8, 80)]


def test_a_failed_computation_leaves_the_next_request_free_to_run():
    calls = []

    def compute(setting: int) -> int:
        calls.append(setting)
        if setting == 0:
            raise ValueError("no such setting")
        return setting

    value = [0]
    shown: list[int] = []
    newest = Newest(lambda: value[0], compute, lambda _s, r: shown.append(r))
    with pytest.raises(ValueError, match="no such setting"):
        newest.request()
    assert not newest.pending
    value[0] = 2
    newest.request()
    assert calls == [0, 2] and shown == [2]
