"""The one timing harness: push a replay through an operator, time every call, and model
response time with one first-come-first-served server.

Response time is what the papers' experiments measure: from the arrival of a result's last
tuple to the result's output, waiting included (W-join paper, performance study: "the time
elapsed from the arrival of a new tuple to its completion"; interval timing paper, Section
4.2, on the lazy algorithms' longer response).  A single server takes the calls (each push,
then the flush) in arrival order: call k starts at ``max(arrival_k, finish_{k-1})`` and
finishes its measured service time later (:func:`fcfs_finish`).  A result's response time is
the finish of the call that emitted it minus the arrival of its last-arriving tuple.  Every
benchmark, notebook and the dashboard's multi-way join tab read response times from here.

A call is one ``push`` (``batch=1``, as the papers time their operators) or one
``push_batch`` of ``batch`` consecutive rows (how the compiled kernels are driven: Spark
micro-batches, replays); a batch call arrives with its last row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from workbench.events import Events, sort_pairs
from workbench.operators import TwoStreamJoin, WTuples
from workbench.operators.wjoin import MultiWayJoin
from workbench.protocol import StreamOperator
from workbench.records import Columns

__all__ = [
    "COMPILED_BATCH",
    "ENGINES",
    "Clock",
    "JoinProfile",
    "fcfs_finish",
    "profile_join",
    "profile_wjoin",
    "engine_calls",
    "timed",
    "warm_up",
    "wtuples",
]

Clock = Callable[[], float]
"""Seconds from an arbitrary origin (``time.perf_counter``; tests inject a fake)."""


def fcfs_finish(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """When each call finishes on one first-come-first-served server (W-join performance
    study): call k starts at ``max(arrival[k], finish[k - 1])`` and takes ``service[k]``.

    >>> fcfs_finish(np.array([0.0, 1.0, 5.0]), np.array([2.0, 1.0, 0.5])).tolist()
    [2.0, 3.0, 5.5]
    """
    arrival = np.asarray(arrival, dtype=np.float64)
    service = np.asarray(service, dtype=np.float64)
    done = np.cumsum(service)  # finish times if the server never idled
    return done + np.maximum.accumulate(arrival - (done - service))


ENGINES = ("python", "compiled")
"""The engines a benchmark compares: the readable reference, then the compiled kernels."""

COMPILED_BATCH = 4096
"""Rows per ``push_batch`` call when a throughput run drives compiled kernels (a
micro-batch: the response-time model charges each result the wait for its batch)."""


def engine_calls(op: StreamOperator) -> int:
    """Rows per call of a throughput run: the reference is pushed one record at a time (as
    the papers time their operators), compiled kernels a micro-batch at a time.

    >>> from workbench.operators import BandJoin, StreamSpec
    >>> from workbench.paper_examples import example3_templates
    >>> spec = StreamSpec(example3_templates(), 50.0)
    >>> engine_calls(BandJoin(streams=(spec, spec), d=40.0, threshold=0.8, engine="python"))
    1
    """
    return 1 if op.config.engine == "python" else COMPILED_BATCH


def warm_up(op: StreamOperator, batch: Columns, rows: int = 256) -> float:
    """Seconds a fresh copy of ``op`` takes for the first ``rows`` of ``batch``: for the
    compiled engine, its kernels' first call (compiled, or loaded from the on-disk cache),
    paid here so that timed runs exclude it."""
    fresh = op.clone()
    return timed(lambda: fresh.push_batch(batch[:rows]))[1]


def timed(fn: Callable[[], Any], clock: Clock = time.perf_counter) -> tuple[Any, float]:
    """Call ``fn``; its result and the seconds it took (the benchmarks' stopwatch).

    >>> timed(lambda: 6 * 7, clock=iter([1.0, 1.5]).__next__)
    (42, 0.5)
    """
    start = clock()
    result = fn()
    return result, clock() - start


@dataclass(frozen=True)
class JoinProfile:
    """One operator's replay, call by call (every push or batch, then the flush), and its
    results.

    ``arrival_ms[k]`` is when call k's (last) event arrived (the flush: at the last arrival),
    ``service_s[k]`` its measured service time and ``emitted[k]`` how many results it
    emitted; ``ids`` holds the results in emission order (row = event ids by stream) and
    ``last_ms`` the arrival of each result's last-arriving tuple; ``counters`` the operator's
    counters after the flush; ``rows[k]`` the events call k pushed (default: one each, the
    flush none).

    >>> p = JoinProfile(np.array([0.0, 1.0, 2.0, 2.0]), np.array([2e-3, 5e-4, 5e-4, 0.0]),
    ...                 np.array([0, 1, 0, 0]), np.array([[0, 0]]), np.array([1.0]), None)
    >>> p.finish_ms().tolist(), p.response_ms().tolist(), p.events
    ([2.0, 2.5, 3.0, 3.0], [1.5], 3)
    """

    arrival_ms: np.ndarray
    service_s: np.ndarray
    emitted: np.ndarray
    ids: np.ndarray
    last_ms: np.ndarray
    counters: Any
    rows: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.rows is None:
            calls = len(self.arrival_ms)
            object.__setattr__(self, "rows", (np.arange(calls) < calls - 1).astype(np.int64))

    @property
    def events(self) -> int:
        """Events pushed (by every call but the flush)."""
        return int(self.rows.sum())

    @property
    def results(self) -> int:
        """Results emitted by every call together."""
        return len(self.ids)

    @property
    def seconds(self) -> float:
        """Busy time: the service times of every call, the flush included."""
        return float(self.service_s.sum())

    def pairs(self) -> np.ndarray:
        """The results sorted (``sort_pairs``), to compare operators' result sets."""
        return sort_pairs(self.ids)

    def finish_ms(self, speed: float = 1.0) -> np.ndarray:
        """When each call finishes with arrivals ``speed`` times faster (service times kept).

        Compressing arrivals is exact when every time parameter of the join (templates, d,
        D, lazy waits) is compressed alike: the operator then makes the same decisions with
        the same work.
        """
        return fcfs_finish(self.arrival_ms / speed, 1000.0 * self.service_s)

    def response_ms(self, speed: float = 1.0) -> np.ndarray:
        """Each result's response time (ms): its emitting call's finish minus the arrival of
        its last-arriving tuple, with arrivals ``speed`` times faster."""
        return np.repeat(self.finish_ms(speed), self.emitted) - self.last_ms / speed

    def mean_response_ms(self, speed: float = 1.0) -> float:
        """Mean response time of a result (ms; 0 without results)."""
        return float(self.response_ms(speed).mean()) if self.results else 0.0

    def emitted_at_ms(self) -> np.ndarray:
        """For each result, the arrival time of the call that emitted it (ms)."""
        return np.repeat(self.arrival_ms, self.emitted)

    def capacity(self, warm_ms: float = 0.0) -> float:
        """Events processed per busy second, counting only calls that arrive ``warm_ms`` or
        more after the first (buffers in steady state; every call when none does, as with
        one batch call for a whole run; inf when they took no time)."""
        pushes = self.arrival_ms[:-1]
        steady = pushes - (pushes[0] if len(pushes) else 0.0) >= warm_ms
        if not steady.any():
            steady[:] = True
        busy = float(self.service_s[:-1][steady].sum())
        return int(self.rows[:-1][steady].sum()) / busy if busy else float("inf")


def _profile(
    op: TwoStreamJoin | MultiWayJoin,
    batch: Events | WTuples,
    arrival_ms: np.ndarray,
    clock: Clock,
    size: int = 1,
) -> JoinProfile:
    """Time every push (``size`` 1) or ``push_batch`` of ``size`` rows (then the flush); find
    the arrival of each result's last tuple (``arrival_ms``: the rows' arrival times in ms)."""
    if size < 1:
        raise ValueError(f"batch = {size!r} must be at least one row per call")
    n, arity = len(batch), op.arity
    arrival_of = []  # per stream: event id -> arrival (ms)
    for s in range(arity):
        mine = batch.stream == s
        lookup = np.full(int(batch.id[mine].max(initial=-1)) + 1, np.nan)
        lookup[batch.id[mine]] = arrival_ms[mine]
        arrival_of.append(lookup)
    bounds = np.append(np.arange(0, n, size), n)
    calls = len(bounds)  # the pushes, then the flush
    service, emitted = np.zeros(calls), np.zeros(calls, dtype=np.int64)
    id_parts, last_parts = [np.zeros((0, arity), np.int64)], [np.zeros(0)]
    rows = batch.rows()
    for k in range(calls):
        start = clock()
        if k == calls - 1:
            out = op.flush()
        elif size == 1:
            out = op.push(*next(rows))
        else:
            out = op.push_batch(batch[bounds[k] : bounds[k + 1]])
        service[k] = clock() - start
        if len(out):
            emitted[k] = len(out)
            id_parts.append(out.ids)
            last_parts.append(np.max([arrival_of[s][out.ids[:, s]] for s in range(arity)], axis=0))
    last_row = np.maximum(bounds[1:] - 1, 0)
    return JoinProfile(
        np.append(arrival_ms[last_row], arrival_ms[-1]) if n else np.zeros(1),
        service,
        emitted,
        np.concatenate(id_parts),
        np.concatenate(last_parts),
        op.counters,
        np.append(np.diff(bounds), 0),
    )


def profile_join(
    op: TwoStreamJoin, events: Events, clock: Clock = time.perf_counter, batch: int = 1
) -> JoinProfile:
    """Replay two-stream events (times in ms) through a timing join or PTJoin, timed call by
    call, one event or ``batch`` events per call (PTJoin Section 3; interval timing paper,
    Section 4.2).

    >>> from workbench.data.synthetic import synthetic_events
    >>> from workbench.operators import BandJoin, StreamSpec
    >>> from workbench.paper_examples import example3_templates
    >>> spec = StreamSpec(example3_templates(), 50.0)
    >>> events = synthetic_events(np.random.default_rng(0), 30, (2, 2), 20.0, (50.0, 50.0))
    >>> p = profile_join(BandJoin(streams=(spec, spec), d=40.0, threshold=0.8), events)
    >>> p.events, p.ids.shape[1], bool(p.results > 0), bool(p.mean_response_ms() >= 0)
    (60, 2, True, True)
    """
    return _profile(op, events, events.arrival, clock, batch)


def wtuples(rows: pd.DataFrame) -> WTuples:
    """Multi-way join tuples from a frame with the columns of
    :class:`~workbench.operators.WTuples`."""
    return WTuples(*(rows[f.name].to_numpy() for f in fields(WTuples)))


def profile_wjoin(
    op: MultiWayJoin,
    rows: pd.DataFrame,
    unit_ms: float = 1.0,
    clock: Clock = time.perf_counter,
    batch: int = 1,
) -> JoinProfile:
    """Replay multi-way join tuples (the columns of :class:`~workbench.operators.WTuples`,
    arrival order, times in units of ``unit_ms`` milliseconds) through a BEW or FEW join,
    timed call by call, one tuple or ``batch`` tuples per call (W-join Sections 4-5).

    >>> from workbench.operators import BEWJoin, WindowConstraints
    >>> rows = pd.DataFrame({"stream": [0, 1, 1], "id": [0, 1, 2], "value": [5, 5, 6],
    ...                      "ts": [0.0, 1.0, 2.0], "arrival": [0.0, 1.0, 2.0]})
    >>> op = BEWJoin(constraints=WindowConstraints.uniform(2, 10.0), max_delay=[0.0, 0.0])
    >>> p = profile_wjoin(op, rows, unit_ms=1000.0)
    >>> p.ids.tolist(), p.last_ms.tolist(), p.emitted.tolist()
    ([[0, 1]], [1000.0], [0, 1, 0, 0])
    """
    tuples = wtuples(rows)
    return _profile(op, tuples, tuples.arrival * unit_ms, clock, batch)
