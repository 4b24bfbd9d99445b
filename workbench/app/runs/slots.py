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
workbench.app.runs.slots.Cancelled: stopped while waiting for a free Spark slot
>>> waiting, slots.in_use
([1], 1)
>>> slots.release("a"); slots.in_use
0

A server of several processes (``WORKBENCH_SERVER_PROCS``) shares its slots through one lock
file: slot ``k`` is byte ``k`` of it, locked by the process whose run holds the slot (the
operating system frees it if that process dies).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from functools import cache
from pathlib import Path

__all__ = ["Cancelled", "Slots", "spark_slots"]


class Cancelled(RuntimeError):
    """A run's wait for a slot ended by its session closing."""


class Slots:
    """At most ``limit`` holders at once; an owner holding a slot may ask again (a restart).
    With a ``shared`` lock file, the limit holds across every process that uses the file."""

    def __init__(self, limit: int, shared: Path | None = None) -> None:
        if limit < 1:
            raise ValueError(f"limit = {limit!r} must be at least 1")
        self.limit = limit
        self._held: dict[Hashable, int] = {}  # owner -> its slot's number
        self._changed = threading.Condition()
        # kept open while the process lives: closing any descriptor of the file would drop
        # every lock the process holds on it
        self._file = None if shared is None else open(shared, "ab")  # noqa: SIM115

    @property
    def in_use(self) -> int:
        """Slots held now (by this process's owners)."""
        with self._changed:
            return len(self._held)

    def _take(self) -> int | None:
        """A free slot's number, now held by this process; None when all are taken."""
        mine = set(self._held.values())
        for k in range(self.limit):
            if k in mine:
                continue
            if self._file is None:
                return k
            import fcntl  # POSIX, as a server of several processes is (Tornado forks them)

            try:
                fcntl.lockf(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, k)
            except OSError:  # another process holds slot k
                continue
            return k
        return None

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
            while owner not in self._held:
                slot = self._take()
                if slot is not None:
                    self._held[owner] = slot
                    return
                if not told and waiting is not None:
                    waiting(self.limit, self.limit)
                    told = True
                if cancelled is not None and cancelled.is_set():
                    raise Cancelled("stopped while waiting for a free Spark slot")
                self._changed.wait(timeout=0.25)  # also wakes to check ``cancelled`` (and,
                # shared, a slot another process freed)

    def release(self, owner: Hashable) -> None:
        """Free ``owner``'s slot (nothing when it holds none)."""
        with self._changed:
            slot = self._held.pop(owner, None)
            if slot is not None and self._file is not None:
                import fcntl

                fcntl.lockf(self._file, fcntl.LOCK_UN, 1, slot)
            self._changed.notify_all()

    def close(self) -> None:
        """Free every slot this process holds and let go of the lock file (if shared)."""
        with self._changed:
            self._held.clear()
            if self._file is not None:
                self._file.close()  # drops the process's locks on it
                self._file = None
            self._changed.notify_all()


@cache
def spark_slots() -> Slots:
    """This process's slots, as many as the settings say (``WORKBENCH_SPARK_SLOTS``); in a
    server of several processes (``WORKBENCH_SERVER_PROCS``), shared by them through a lock
    file in the work folder (made when missing) named after the server (the processes'
    parent)."""
    from workbench.config import settings

    config = settings()
    shared = None
    if config.server_procs > 1:
        config.work_folder.mkdir(parents=True, exist_ok=True)  # as a run's folder would be
        shared = config.work_folder / f"workbench-spark-slots-{os.getppid()}.lock"
    return Slots(config.spark_slots, shared)
