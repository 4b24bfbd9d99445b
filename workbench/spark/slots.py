"""Spark run slots: the dashboard's browser sessions share one Spark session, and at most
``limit`` of their runs (live joins, the tabs' Spark runs) go at once; a run beyond the limit
waits for a free slot, and its page says so (``WORKBENCH_SPARK_SLOTS``).

>>> slots = Slots(1)
>>> slots.acquire("a")
>>> waiting = []
>>> stop = threading.Event()
>>> stop.set()  # b gives up at once: its session closed while it waited
>>> slots.acquire("b", cancelled=stop, waiting=lambda used, limit: waiting.append(used))
Traceback (most recent call last):
workbench.spark.slots.Cancelled: stopped while waiting for a free Spark slot
>>> waiting, slots.in_use
([1], 1)
>>> slots.release("a"); slots.in_use
0
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from functools import cache

__all__ = ["Cancelled", "Slots", "spark_slots"]


class Cancelled(RuntimeError):
    """A run's wait for a slot ended by its session closing."""


class Slots:
    """At most ``limit`` holders at once; an owner holding a slot may ask again (a restart)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit = {limit!r} must be at least 1")
        self.limit = limit
        self._held: set[Hashable] = set()
        self._changed = threading.Condition()

    @property
    def in_use(self) -> int:
        """Slots held now."""
        with self._changed:
            return len(self._held)

    def acquire(
        self,
        owner: Hashable,
        cancelled: threading.Event | None = None,
        waiting: Callable[[int, int], object] | None = None,
    ) -> None:
        """Take a slot for ``owner``, waiting while others hold them all: ``waiting(used,
        limit)`` is told when a wait begins; a set ``cancelled`` ends the wait
        (:class:`Cancelled`)."""
        with self._changed:
            told = False
            while owner not in self._held and len(self._held) >= self.limit:
                if not told and waiting is not None:
                    waiting(len(self._held), self.limit)
                    told = True
                if cancelled is not None and cancelled.is_set():
                    raise Cancelled("stopped while waiting for a free Spark slot")
                self._changed.wait(timeout=0.25)  # also wakes to check ``cancelled``
            self._held.add(owner)

    def release(self, owner: Hashable) -> None:
        """Free ``owner``'s slot (nothing when it holds none)."""
        with self._changed:
            self._held.discard(owner)
            self._changed.notify_all()


@cache
def spark_slots() -> Slots:
    """This process's slots, as many as the settings say (``WORKBENCH_SPARK_SLOTS``)."""
    from workbench.config import settings

    return Slots(settings().spark_slots)
