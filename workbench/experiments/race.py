"""The timing joins raced over one replay, steered while they run: the five interval timing
correlation algorithms (interval timing paper, Section 4.2, Algorithms 1-7) and PTJoin's naive,
loose and tight probing (PTJoin Section 3, Theorems 2-3) over the same events, the engine of
the dashboard's Timing joins tab.

Each :meth:`TimingRace.advance` pushes the events that arrived in the next stretch of the
replay's arrival clock to every racer, timing each, on the harness's first-come-first-served
model (:func:`~workbench.experiments.harness.fcfs_finish`) at the replay's ``speed``: a
result's response time is when it came out minus the arrival of its later event.  Each call
is a ``push_batch`` (the compiled kernels) whose events are charged equal shares of its time.
An eager racer emits a pair as its later event is processed, so it takes the stretch in one
call and each pair is charged its later event's finish.  A lazy racer emits a pair when a
block is evaluated (Algorithms 4-7), after later arrivals, so it takes the stretch in calls
of at most ``max_pending`` events spanning less than ``max_wait``: each call evaluates at most
one block, at the arrival the operator reports
(:attr:`~workbench.operators.interval.lazy.LazyCorrelation.evaluated_at`), whose finish each
of the call's pairs is charged.  Every racer decides
``P(|Xa - Xb| <= d) >= threshold`` on the same events, so they emit the same pairs; the eager
ones as each later event arrives, the lazy ones when a block is re-evaluated.  The pairs are
compared by an order-free checksum as they come (:func:`~workbench.events.result_checksum`).

:meth:`TimingRace.steer` changes d, the threshold or the lazy re-evaluation thresholds of the
running racers (``set_params``: a lazy racer evaluates its waiting block under the old values
first), so every pair is judged by the values in force when its later event arrived, by every
racer alike.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.events import Events, result_checksum
from workbench.experiments.harness import fcfs_finish
from workbench.operators import TIMING_JOINS, Envelope, StreamSpec, TwoStreamJoin
from workbench.records import Emitted

__all__ = ["LAZY", "RACERS", "Lane", "TimingRace"]

RACERS: dict[str, tuple[str, dict[str, str]]] = {
    "Simple": ("simple", {}),
    "SSort": ("ssort", {}),
    "Eager": ("eager", {}),
    "Lazy": ("lazy", {}),
    "LazyWithLookup": ("lookup", {}),
    "PTJoin naive": ("ptjoin", {"mode": "naive"}),
    "PTJoin loose": ("ptjoin", {"mode": "loose"}),
    "PTJoin tight": ("ptjoin", {"mode": "tight"}),
}
"""The racers, by name: the operator (:data:`~workbench.operators.TIMING_JOINS`) and its
options."""
LAZY = frozenset({"Lazy", "LazyWithLookup"})
"""The racers that re-evaluate in blocks (Algorithms 4-7): their pairs wait for a block."""


@dataclass
class Lane:
    """One racer's run so far: its operator, busy seconds, results (count and checksum), the
    sum of their response times and when its last call finished (ms on the replay's clock at
    its speed)."""

    op: TwoStreamJoin
    by_blocks: bool
    """Whether it emits by blocks (a lazy racer): its calls end where a block may."""
    busy_s: float = 0.0
    results: int = 0
    checksum: int = 0
    response_ms: float = 0.0
    free_ms: float = -math.inf

    def take(
        self,
        out: Emitted,
        arrival_ms: np.ndarray,
        emitted_at: np.ndarray,
        last_arrival_ms: np.ndarray,
        service_s: float,
    ) -> None:
        """Record a call over events arriving at ``arrival_ms`` that took ``service_s`` (an
        equal share per event) and emitted ``out``, result k as event ``emitted_at[k]`` of the
        call finished; its later event arrived at ``last_arrival_ms[k]``."""
        self.busy_s += service_s
        arrival = arrival_ms.copy()
        arrival[0] = max(arrival[0], self.free_ms)
        finish = fcfs_finish(arrival, np.full(len(arrival), 1000.0 * service_s / len(arrival)))
        self.free_ms = float(finish[-1])
        if len(out):
            self.results += len(out)
            self.checksum = (self.checksum + result_checksum(out.ids)) % 2**64
            self.response_ms += float(np.sum(finish[emitted_at] - last_arrival_ms))


class TimingRace:
    """The racers of ``names`` (:data:`RACERS`) over ``events`` (module docstring): one-bucket
    templates in ``streams``, so that every racer takes them; ``speed`` is how many times faster
    than their arrival clock the events are replayed (response times are at that speed).
    :meth:`steer` may move d up to ``d_max`` and the threshold down to ``threshold_min`` (the
    racers' envelope; default: the starting values)."""

    def __init__(
        self,
        streams: tuple[StreamSpec, StreamSpec],
        events: Events,
        d: float,
        threshold: float,
        max_pending: int | None = 500,
        max_wait: float | None = None,
        speed: float = 1.0,
        names: tuple[str, ...] = tuple(RACERS),
        d_max: float | None = None,
        threshold_min: float | None = None,
    ) -> None:
        unknown = [n for n in names if n not in RACERS]
        if unknown:
            raise ValueError(f"unknown racers {unknown}; choose from {list(RACERS)}")
        if not speed > 0:
            raise ValueError(f"speed = {speed!r} must be positive")
        self.events = events  # in arrival order (Events' invariant)
        self.speed = float(speed)
        self.pushed = 0
        self.lanes: dict[str, Lane] = {}
        envelope = Envelope(
            d if d_max is None else d_max,
            threshold if threshold_min is None else threshold_min,
            (streams[0].max_delay, streams[1].max_delay),
        )
        for name in names:
            algorithm, options = RACERS[name]
            lazy = {"max_pending": max_pending, "max_wait": max_wait} if name in LAZY else {}
            op = TIMING_JOINS[algorithm](
                streams=streams, d=d, threshold=threshold, envelope=envelope, **options, **lazy
            )
            _warm(op, events)
            self.lanes[name] = Lane(op, by_blocks=name in LAZY)
        self._rows = _row_lookup(self.events)

    @property
    def clock_ms(self) -> float:
        """The arrival of the last event pushed (the first event's, before any)."""
        if not len(self.events):
            return 0.0
        return float(self.events.arrival[max(self.pushed - 1, 0)])

    @property
    def done(self) -> bool:
        """Whether every event has been pushed."""
        return self.pushed >= len(self.events)

    def advance(self, arrival_ms: float) -> int:
        """Push the events arriving within ``arrival_ms`` after the clock to every racer; how
        many were pushed."""
        arrival = self.events.arrival
        end = int(np.searchsorted(arrival, self.clock_ms + arrival_ms, side="right"))
        end = max(end, min(self.pushed + 1, len(self.events)))  # at least one: progress
        first, self.pushed = self.pushed, end
        for lane in self.lanes.values():
            cuts = self._block_calls(lane, first, end) if lane.by_blocks else [first, end]
            for lo, hi in itertools.pairwise(cuts):
                self._call(lane, lambda op, lo=lo, hi=hi: op.push_batch(self.events[lo:hi]), lo, hi)
        return end - first

    def _block_calls(self, lane: Lane, first: int, end: int) -> list[int]:
        """Where a lazy racer's calls over rows ``first`` to ``end`` start (and ``end``): at
        most ``max_pending`` events each, spanning less than ``max_wait``, so that each call
        evaluates at most one block (module docstring)."""
        config = lane.op.config
        size = config.max_pending or end - first
        arrival = self.events.arrival
        cuts, at = [first], first
        while at < end:
            nxt = min(at + size, end)
            if config.max_wait is not None:  # stop before the first arrival max_wait later
                within = np.searchsorted(arrival, arrival[at] + config.max_wait, side="left")
                nxt = max(at + 1, min(nxt, int(within)))
            cuts.append(nxt)
            at = nxt
        return cuts

    def steer(self, **changes: float | int | None) -> None:
        """Change ``d``, ``threshold``, ``max_pending`` or ``max_wait`` of every racer that
        takes it, from the next event on (module docstring)."""
        lazy_only = {k: v for k, v in changes.items() if k in ("max_pending", "max_wait")}
        common = {k: v for k, v in changes.items() if k not in lazy_only}
        for name, lane in self.lanes.items():
            wanted = {**common, **(lazy_only if name in LAZY else {})}
            if wanted:
                self._call(lane, lambda op, w=wanted: op.set_params(**w))

    def finish(self) -> None:
        """Flush every racer (the lazy ones evaluate their waiting blocks)."""
        for lane in self.lanes.values():
            self._call(lane, lambda op: op.flush())

    def _call(
        self,
        lane: Lane,
        call: Callable[[TwoStreamJoin], Emitted],
        first: int | None = None,
        end: int | None = None,
    ) -> None:
        """Time ``call`` on ``lane``'s operator: a call over the events of rows ``first`` to
        ``end`` (excluded), or, without them, one at the clock (a flush, a steer); charge
        each result as the module docstring says."""
        start = time.perf_counter()
        out = call(lane.op)
        service = time.perf_counter() - start
        arrival = self.events.arrival
        if first is None or end is None:
            calls = np.array([self.clock_ms])
        else:
            calls = arrival[first:end]
        later = np.zeros(0, dtype=np.int64)
        if len(out):
            later = np.maximum(self._rows[0](out.ids[:, 0]), self._rows[1](out.ids[:, 1]))
        if first is None:  # a flush or steer: its results come out at its end
            at = np.zeros(len(later), dtype=np.int64)
        elif lane.by_blocks:  # the call's one block, at the arrival it was evaluated
            block = getattr(lane.op, "evaluated_at", None)
            row = len(calls) - 1 if block is None else np.searchsorted(calls, block, "right") - 1
            at = np.full(len(later), min(max(int(row), 0), len(calls) - 1))
        else:  # each pair at its later event
            at = np.clip(later - first, 0, len(calls) - 1)
        lane.take(out, calls / self.speed, at, arrival[later] / self.speed, service)

    def table(self) -> pd.DataFrame:
        """One row per racer: events pushed, results, events per busy second, mean response
        time (ms, at the replay's speed), probability evaluations and stime look-ups per event,
        events buffered, results still waiting for a block (lazy) and whether its pairs so far
        are the eager racers' (lazy: once flushed)."""
        reference = next(
            (lane for name, lane in self.lanes.items() if name not in LAZY),
            next(iter(self.lanes.values())),
        )
        rows = {}
        for name, lane in self.lanes.items():
            c = lane.op.counters
            waiting = reference.results - lane.results if name in LAZY else 0
            same = lane.results == reference.results and lane.checksum == reference.checksum
            rows[name] = {
                "events": self.pushed,
                "results": lane.results,
                "events_per_s": self.pushed / lane.busy_s if lane.busy_s else math.nan,
                "response_ms": lane.response_ms / lane.results if lane.results else math.nan,
                "probes_per_event": c.prob_evals / max(self.pushed, 1),
                "stime_lookups_per_event": c.stime_lookups / max(self.pushed, 1),
                "buffered": int(sum(c.buffered)),
                "waiting": waiting,
                "same_pairs": same,
            }
        return pd.DataFrame.from_dict(rows, orient="index")


WARM_EVENTS = 2048
"""Events a fresh copy of each racer joins before the race: its kernels' first calls
(compiled, or loaded from the on-disk cache) are not charged to its first stretch."""


def _warm(op: TwoStreamJoin, events: Events) -> None:
    fresh = op.clone()
    fresh.push_batch(events[:WARM_EVENTS])
    fresh.flush()


Lookup = Callable[[np.ndarray], np.ndarray]


def _row_lookup(events: Events) -> tuple[Lookup, Lookup]:
    """Per stream, a function from event ids to their rows (arrival order)."""

    def lookup(stream: int) -> Lookup:
        rows = np.flatnonzero(events.stream == stream)
        order = np.argsort(events.id[rows], kind="stable")
        ids, rows = events.id[rows][order], rows[order]
        return lambda wanted: rows[np.searchsorted(ids, wanted)]

    return lookup(0), lookup(1)
