"""The protocol's two shapes (:mod:`workbench.protocol`): every operator is a
:class:`~workbench.protocol.StreamOperator` of exactly one.  A :class:`JoinOperator` is a timing
join whose emissions carry its results, tuples of event ids (PTJoin Section 3, interval timing
Section 4.2, W-join Sections 3-5), clocked by the arrival times pushed and judging lateness by
each stream's ``max_delay`` (PTJoin Definition 6, W-join Section 3); an :class:`ExtentOperator`
is a window extent whose ``push`` updates the coalesced view it exposes with ``view()`` and
which emits only late and bad records (coalescing Sections 2-5).

A shape fills in the protocol's clock, lateness and end of the streams, so that an operator of
it writes at most three methods: ``_validate`` and ``_step`` for a join, and ``view()`` besides
for an extent.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar, Protocol, TypeVar

import numpy as np

from workbench.protocol import BadEventError, C, R, StreamOperator
from workbench.records import Coalesced, Columns, Emitted

__all__ = ["Arrival", "ExtentOperator", "JoinOperator"]


class Arrival(Protocol):
    """What a join reads of a validated record to judge its lateness: its stream's index,
    its own time and its arrival time."""

    @property
    def stream(self) -> int: ...

    @property
    def time(self) -> float: ...

    @property
    def arrival(self) -> float: ...


A = TypeVar("A", bound=Arrival)
"""A join's validated record."""


class JoinOperator(StreamOperator[C, A]):
    """A timing join: its emissions carry results, row k the event ids of result k by stream
    (``arity`` of them: pairs of the two-stream joins, m-tuples of the W-join).

    The clock is the arrival time of the records pushed (non-decreasing); a record arriving
    after its own time plus ``max_delay`` of its stream is late (PTJoin Definition 6; W-join
    Section 3): counted and emitted, never joined.  The join writes ``_validate(*fields) -> A``
    (A has ``stream``, ``time``, ``arrival``) and ``_step(record) -> Emitted`` (join it and
    buffer it); it may add ``_release(until)``, the deferred work due by ``until`` (math.inf:
    the end of the streams), and ``_clear()``, what the end of the streams empties.  The shape
    derives the rest: lateness, ``advance`` (the clock, then ``_release``), ``flush``
    (``_release(math.inf)``, then ``_clear``) and steering (the deferred work finished under the
    old values first).
    """

    _now: float = -math.inf
    """The clock; it starts at the beginning of time."""

    @property
    def now(self) -> float:
        """The clock: the latest arrival time seen."""
        return self._now

    def _arrival_ok(self, time: np.ndarray, arrival: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """``_check_arrival`` over a batch whose rows ``ok`` pass every other check: an arrival
        before its own time or before the clock (the latest good arrival) is refused."""
        ok = ok & (arrival >= time)
        clock = np.maximum.accumulate(np.where(ok, arrival, -math.inf))
        before = np.concatenate(([self._now], np.maximum(clock[:-1], self._now)))
        return ok & (arrival >= before)

    def _batch_done(self, batch: Columns, late: np.ndarray, results: np.ndarray) -> Emitted:
        """Account a batch of valid records a kernel processed: the clock moves to its last
        arrival, the counters count it, and its late rows are emitted as they were pushed."""
        self._now = float(batch.arrival[-1])
        counters = self._counters
        counters.events_in += len(batch)
        n_late = int(np.count_nonzero(late))
        counters.late += n_late
        counters.results_out += results.shape[0]
        if not n_late:
            return Emitted(results)
        rows = zip(*(col[late].tolist() for col in batch.columns()), strict=True)
        return Emitted(results, late=tuple(rows))

    def _check_arrival(self, time_field: str, time: float, arrival: float) -> None:
        """Refuse an arrival before its own time or before the clock."""
        if arrival < time:
            raise BadEventError(f"arrival = {arrival!r} precedes {time_field} = {time!r}")
        if arrival < self._now:
            raise BadEventError(
                f"arrival = {arrival!r} is earlier than the clock {self._now!r}: "
                "records must be pushed in arrival order"
            )

    def _admit(self, record: A) -> bool:
        self._now = record.arrival
        return record.arrival <= record.time + self._config.max_delay[record.stream]

    def _advance(self, now: float) -> Emitted:
        if now < self._now:
            raise BadEventError(f"now = {now!r} is earlier than the clock {self._now!r}")
        self._now = now
        return self._release(now)

    def _release(self, until: float) -> Emitted:
        """The deferred work due by time ``until`` (math.inf: all of it, at the end of the
        streams); none for eager joins."""
        return Emitted.none(self.arity)

    def _finish(self) -> Emitted:
        out = self._release(math.inf)
        self._clear()
        return out

    def _clear(self) -> None:
        """Empty the buffers at the end of the streams (by default: the state built anew)."""
        self._start()

    def _retune(self, new: C) -> Emitted:
        out = self._release(math.inf)
        self._config = new
        return out

    def restart(self) -> Emitted:
        """End the streams (what ``flush`` emits) and start again at the beginning of time:
        clock and counters reset, the configuration and what its installation built (PTJoin's
        stime tables) kept, so a fresh run costs nothing to install, unlike ``clone()``.  A
        Spark task runs one operator per time range this way
        (:mod:`workbench.spark.queries.ranges`)."""
        out = self.flush()
        self._now = -math.inf
        self._counters = self.counters_type()
        return out


class ExtentOperator(StreamOperator[C, R]):
    """A window extent: ``push`` updates the coalesced view it exposes with ``view()``
    (coalescing paper, Sections 2-5); it emits no results (arity 0), only late records (too
    late for the window) and bad ones, and the end of the streams keeps the view.

    The extent writes ``_validate(*fields) -> R``, ``_step(record)`` (put an admitted record
    in the window; it emits nothing) and ``view()``; its window rule is ``_admit(record)`` and
    its clock ``_advance(now)``.
    """

    arity: ClassVar[int] = 0

    @abstractmethod
    def view(self) -> list[Coalesced]:
        """The coalesced view of the current window, sorted by (ts, arrival)."""
