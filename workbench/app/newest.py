"""The newest request wins: a computation the user has already superseded is not done.

A control moved while a computation runs queues nothing behind it: the running computation
finishes (a compiled kernel cannot be interrupted), its result is dropped, and the newest
setting is computed next, so five quick key presses cost at most two computations. Meanwhile
``pending`` is set: the tabs show it as Panel's loading overlay on the figures it makes stale.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Generic, TypeVar

import panel as pn
import param

__all__ = ["Newest", "on_page"]

S = TypeVar("S")
R = TypeVar("R")


class Newest(param.Parameterized, Generic[S, R]):
    """Compute ``compute(snapshot())`` in a worker thread for the newest request only, and
    ``show(setting, result)`` on the server's loop unless a newer request came meanwhile.

    Served, the computation leaves the document free (other moves, other sessions); with no
    event loop running (a script, a test) a request computes and shows before it returns.
    """

    pending = param.Boolean(
        False, doc="Whether a request is being computed: what is shown is stale until it ends."
    )

    def __init__(
        self,
        snapshot: Callable[[], S],
        compute: Callable[[S], R],
        show: Callable[[S, R], None],
    ) -> None:
        super().__init__()
        self._snapshot, self._compute, self._show = snapshot, compute, show
        self._asked = 0
        self._draining = False

    def request(self, *_: object) -> None:
        """Ask for the result at the current setting (what ``snapshot`` reads when its turn
        comes); supersedes every earlier request not yet shown."""
        self._asked += 1
        if self._draining:
            return
        self._draining = True
        on_page(partial(setattr, self, "pending", True))
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a script or a test: nothing to return to meanwhile
            asyncio.run(self._drain())
        else:  # served or in a notebook: on the loop, the document's own way
            pn.state.execute(self._drain)

    async def _drain(self) -> None:
        """Compute until a result is still the newest when it ends; show that one."""
        try:
            while True:
                asked = self._asked
                setting = self._snapshot()
                result = await asyncio.to_thread(self._compute, setting)
                if asked == self._asked:
                    break
        except BaseException:
            self._draining = False
            on_page(self._settle)
            raise
        self._draining = False
        on_page(partial(self._finish, setting, result))

    def _finish(self, setting: S, result: R) -> None:
        self._show(setting, result)
        self._settle()

    def _settle(self) -> None:
        """Not stale any more, unless a newer request runs (it came after the last one)."""
        if not self._draining:
            self.pending = False


def on_page(change: Callable[[], None]) -> None:
    """``change`` made as a control's callback makes its changes: served, on the document's
    next tick under its lock (a coroutine resumed after a worker thread runs without it, and
    a change made there can reach Bokeh unlocked); else at once."""
    pn.state.execute(change, schedule=True)
