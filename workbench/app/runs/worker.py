"""One worker thread for work that must not block its caller (a dashboard's server thread).

Actions run in the order asked; :meth:`Worker.poll`, called on the caller's thread, hands their
results to callbacks there, in the same order.  Besides them, one *sample* at a time (a read of
what the actions run) goes to the worker while no action is queued.  A failure runs
:meth:`Worker.cleanup` in the worker, then goes to ``on_failure`` instead of the callback.

>>> seen = []
>>> worker = Worker(on_failure=seen.append)
>>> worker.submit(lambda: 6 * 7, seen.append)
>>> worker.submit(lambda: 1 / 0)
>>> worker.settle()
>>> seen
[42, ZeroDivisionError('division by zero')]
>>> worker.close(wait=True)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["Worker"]

T = TypeVar("T")


class Worker:
    """One thread running actions in the order asked (module docstring); ``on_failure`` gets
    what made an action or a sample fail."""

    def __init__(self, on_failure: Callable[[Exception], None], name: str = "worker") -> None:
        self.on_failure = on_failure
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._actions: list[tuple[Future, Callable[[object], None] | None]] = []
        self._sample: tuple[Future, Callable[[object], None]] | None = None
        self.closing = threading.Event()
        """Set by :meth:`close`: work waiting on something (a Spark slot) gives up."""

    @property
    def pending(self) -> bool:
        """Whether submitted actions have not been handed back yet (samples not counted)."""
        return bool(self._actions)

    @property
    def sampling(self) -> bool:
        """Whether a sample is on its way."""
        return self._sample is not None

    def cleanup(self) -> None:
        """Runs in the worker after a failure, and last at :meth:`close` (nothing here)."""

    def submit(self, action: Callable[[], T], then: Callable[[T], None] | None = None) -> None:
        """Queue ``action``; :meth:`poll` hands its result to ``then``."""
        self._actions.append((self._executor.submit(self._guarded(action)), then))

    def sample(self, read: Callable[[], T], then: Callable[[T], None]) -> None:
        """Queue ``read`` unless a sample is on its way or actions are queued; :meth:`poll`
        hands its result to ``then``."""
        if self._sample is None and not self._actions:
            self._sample = (self._executor.submit(self._guarded(read)), then)

    def poll(self) -> None:
        """Hand what the worker finished to its callbacks, actions in order, then the sample."""
        while self._actions and self._actions[0][0].done():
            self._hand(*self._actions.pop(0))
        if self._sample is not None and self._sample[0].done():
            (future, then), self._sample = self._sample, None
            self._hand(future, then)

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until the queued work has finished, then :meth:`poll` (scripts and tests)."""
        for future, _ in [*self._actions, *([self._sample] if self._sample else [])]:
            future.exception(timeout)
        self.poll()

    def close(self, wait: bool = False) -> None:
        """:meth:`cleanup` after what is queued, then end the thread (``wait`` for it); a
        second call only waits."""
        if not self.closing.is_set():
            self.closing.set()
            self._executor.submit(self.cleanup)
        self._executor.shutdown(wait=wait)

    def _guarded(self, action: Callable[[], T]) -> Callable[[], T]:
        def guarded() -> T:
            try:
                return action()
            except Exception:
                self.cleanup()
                raise

        return guarded

    def _hand(self, future: Future, then: Callable[[object], None] | None) -> None:
        error = future.exception()
        if error is not None:
            self.on_failure(error)  # type: ignore[arg-type]
        elif then is not None:
            then(future.result())
