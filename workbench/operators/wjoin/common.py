"""What BEW-join and FEW-join share: validation, buffers, windows, the kernel call, the search
(W-join paper, Sections 3 and 5)."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Hashable
from typing import ClassVar, TypeVar

import numpy as np

from workbench.kernels.wjoin import Batch, Params, Scratch, State, wjoin_batch
from workbench.kernels.wjoin_search import (
    COMPARISONS,
    DROPPED,
    N_OUT,
    PEAK,
    SEQ,
    START_ID,
    START_KEY,
    START_SEQ,
    START_STREAM,
    VISITED_IN,
    VISITED_OUT,
)
from workbench.kernels.wjoin_store import Store
from workbench.operators.wbuffers import (
    FifoBuffers,
    HashBuffers,
    KeyCodes,
    Tuple,
    Visit,
)
from workbench.operators.windows import (
    WindowConstraints,
    WJoinConfig,
    WJoinCounters,
    WTuple,
    WTuples,
)
from workbench.operators.wjoin.held import HeldTuples
from workbench.protocol import BadEventError, check_time, from_config
from workbench.protocol_shapes import JoinOperator
from workbench.records import Counters, Emitted

__all__ = ["MultiWayJoin"]

_ON_TIME = np.zeros(1, dtype=bool)

_NO_FIFO, _NO_HASH = FifoBuffers(1, capacity=0), HashBuffers(1, capacity=2, keys=0)
"""Empty buffers of the kind not in use, passed to the kernel beside the real ones (a pool of
two slots: its timestamp column is then strided, as every real pool's, so the kernel compiles
once)."""


WC = TypeVar("WC", bound=WJoinConfig)
"""A multi-way join's configuration type."""


class MultiWayJoin(JoinOperator[WC, WTuple]):
    """What BEW and FEW share: validation, lateness, buffers, windows, predicate, counters.

    The constructor takes a :class:`WJoinConfig` (the evaluation's own) or its fields;
    ``max_delay`` may be steered down while running (a buffer kept for a longer delay still
    holds every partner).  One ``push`` runs ``_validate`` (a
    :class:`~workbench.operators.windows.WTuple`), the lateness test of
    :class:`~workbench.protocol_shapes.JoinOperator`, then ``_step``, which calls the
    evaluation's ``_join(stream, item) -> results``.
    """

    counters_type: ClassVar[type[Counters]] = WJoinCounters
    batch_type: ClassVar[type] = WTuples
    steerable: ClassVar[frozenset[str]] = frozenset({"max_delay"})
    forward: ClassVar[bool] = False
    """Forward evaluation (FEW-join, Section 3.2) rather than backward (BEW-join, Section 3.1)."""

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return {"constraints": WindowConstraints.uniform(3, 4.0), "max_delay": (2.0, 1.0, 3.0)}

    def _start(self) -> None:
        self._filter, self._refine = self._filter_windows()
        # writable copies: the kernel then compiles once (numba types read-only arrays apart)
        self._bound = self.constraints.closure().copy()
        self._windows = self.constraints.windows.copy()
        off = ~np.eye(self.m, dtype=bool)
        self._period = float(self._filter[off].max())
        """The paper's FEW period length: the largest filter window (Section 3.2)."""
        self._seq = 0
        self._new_buffers()

    def _new_buffers(self) -> None:
        """Empty buffers, an empty key table, no newest timestamps (the paper's BEW), no tuple
        held (the paper's FEW)."""
        make = HashBuffers if self._config.implementation == "hash" else FifoBuffers
        self.buffers: FifoBuffers | HashBuffers = make(self.m)
        self._held = HeldTuples(self.m)
        self._keys = KeyCodes()
        self._newest = np.full(self.m, -math.inf)

    @property
    def arity(self) -> int:  # type: ignore[override]
        """Tuple ids per result: m."""
        return self.m

    constraints = from_config("constraints", "The window constraints.")
    predicate = from_config("predicate", "The join predicate.")
    strategy = from_config("strategy", "The window strategy.")
    mechanism = from_config("mechanism", "Today's fast mechanism or the paper's.")

    @property
    def _delays(self) -> tuple[float, ...]:
        return self._config.max_delay

    def _filter_windows(self) -> tuple[np.ndarray, bool]:
        """The per-pair windows the period uses, and whether candidates need refining."""
        closure = self.constraints.closure()
        m = self.constraints.m
        if self.strategy in ("uniform", "modified"):
            return closure.copy(), False
        if self.strategy == "gca":
            return np.full((m, m), closure.max()), True
        local = closure.max(axis=1)  # LCA: every stream's largest local window
        return np.minimum(local[:, None], local[None, :]), True

    @property
    def m(self) -> int:
        """Number of joined streams."""
        return self.constraints.m

    def _buffered(self) -> tuple[int, ...]:
        """Tuples held per stream: in the join buffers, or held unjoined (the paper's FEW)."""
        return tuple(self.buffers.size(s) + int(self._held.count[s]) for s in range(self.m))

    def push(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> Emitted:
        """Process one arriving tuple; emit the results it completes (or it, late or bad)."""
        return super().push(stream, event_id, value, ts, arrival)

    def _validate(
        self, stream: int, event_id: int, value: Hashable, ts: float, arrival: float
    ) -> WTuple:
        if not isinstance(stream, int | np.integer) or not 0 <= int(stream) < self.m:
            raise BadEventError(f"stream = {stream!r} is not a stream index 0..{self.m - 1}")
        ts, arrival = check_time("ts", ts), check_time("arrival", arrival)
        self._check_arrival("ts", ts, arrival)
        return WTuple(int(stream), int(event_id), value, ts, arrival)

    def _valid_rows(self, batch: WTuples) -> np.ndarray:
        s = batch.stream
        ok = (s >= 0) & (s < self.m) & np.isfinite(batch.ts) & np.isfinite(batch.arrival)
        return self._arrival_ok(batch.ts, batch.arrival, ok)

    def _step_batch(self, batch: WTuples) -> Emitted:
        """Valid tuples through the compiled kernel (:func:`~workbench.kernels.wjoin.
        wjoin_batch`), on the same buffers as ``push``, for the equality predicate (values
        factorized to key codes), by either mechanism."""
        late = batch.arrival > batch.ts + np.array(self._delays)[batch.stream]
        return self._batch_done(batch, late, self._kernel(batch, late, -math.inf))

    def _kernel(self, batch: WTuples, late: np.ndarray, until: float) -> np.ndarray:
        """Run :func:`~workbench.kernels.wjoin.wjoin_batch` on the buffers: the batch's
        on-time tuples, then FEW's periods due by ``until``; the result ids (work counters,
        arrival numbers, FEW's open period and the newest timestamps updated)."""
        keys = self._keys.codes(batch.value)
        buffers = self.buffers
        hashed = isinstance(buffers, HashBuffers)
        held = self._held  # the paper's FEW may release held tuples into the buffers
        held.reserve(len(batch))
        if hashed:
            buffers.reserve(len(batch) + len(held), len(self._keys))
            fifo, table = _NO_FIFO, buffers
        else:
            buffers.reserve(np.bincount(batch.stream[~late], minlength=self.m) + held.count)
            fifo, table = buffers, _NO_HASH
        store = Store(
            hashed, fifo.ts, fifo.seq, fifo.id, fifo.key, fifo.span,
            table.ts, table.ints, table.lists, table.buckets, table.free, table.nfree,
        )  # fmt: skip
        k, start = self._open_period()
        start_ts, seq, start_id, start_key = start or (0.0, 0, 0, 0)
        ints = np.zeros(PEAK + 1, dtype=np.int64)
        ints[[SEQ, START_STREAM, START_SEQ, START_ID, START_KEY, PEAK]] = (
            self._seq, k, seq, start_id, start_key, self._counters.peak_buffered
        )  # fmt: skip
        state = State(ints, np.array([start_ts]), self._newest, held.ints, held.times, held.count)
        stream, ids, ts, arrival = (
            col  # one compiled signature: contiguous, writable
            if col.flags.c_contiguous and col.flags.writeable
            else np.require(col, requirements=("C", "W"))
            for col in (batch.stream, batch.id, batch.ts, batch.arrival)
        )
        params = Params(
            self.forward, self.mechanism == "paper", self._refine, np.array(self._delays),
            self._filter, self._windows, self._bound, self._period,
        )  # fmt: skip
        out = wjoin_batch(
            Batch(stream, ids, keys, ts, late, arrival), store, params, state,
            Scratch.empty(self.m), until, np.empty((16, self.m), dtype=np.int64),
        )  # fmt: skip
        self._seq = int(ints[SEQ])
        k, seq, start_id, start_key = ints[[START_STREAM, START_SEQ, START_ID, START_KEY]].tolist()
        self._reopen(k, (float(state.start_ts[0]), seq, start_id, start_key))
        c = self._counters
        c.comparisons += int(ints[COMPARISONS])
        c.dropped += int(ints[DROPPED])
        c.visited_inside += int(ints[VISITED_IN])
        c.visited_outside += int(ints[VISITED_OUT])
        c.peak_buffered = int(ints[PEAK])
        return out[: ints[N_OUT]]

    def _compiled(self) -> bool:
        """Whether the kernel runs: the compiled engine and the equality predicate (either
        mechanism); a user predicate, a Python function of the values, runs the reference
        path."""
        return super()._compiled() and self.predicate == "equal"

    def _open_period(self) -> tuple[int, Tuple | None]:
        """FEW's open period: its starting tuple's stream (-1 when none) and the tuple."""
        return -1, None

    def _reopen(self, stream: int, item: Tuple) -> None:  # noqa: B027 - BEW has no period
        """Put the period the kernel left open in force (FEW)."""

    def _step(self, record: WTuple) -> Emitted:
        s, event_id, value, ts, arrival = record
        if self._compiled():
            # the compiled engine runs one admitted tuple through the batch kernel
            column = np.empty(1, dtype=object)
            column[0] = value
            one = WTuples.trusted(
                np.array([s]), np.array([event_id]), column, np.array([ts]), np.array([arrival])
            )
            return Emitted(self._kernel(one, _ON_TIME, -math.inf))
        item = (ts, self._seq, event_id, self._keys.code(value))
        self._seq += 1
        out = self._join(s, item)
        c = self._counters
        c.peak_buffered = max(c.peak_buffered, sum(self._buffered()))
        return Emitted.rows(out, self.m)

    def _release(self, until: float) -> Emitted:
        rows = self._pending() if until == math.inf else self._due()
        return Emitted.rows(rows, self.m)

    def _retune(self, new: WC) -> Emitted:
        """A lower delay bound only lets periods close sooner: what fell due is emitted (a
        higher one than the buffers were kept for is refused)."""
        pairs = enumerate(zip(new.max_delay, self._delays, strict=True))
        raised = [s for s, (new_d, old_d) in pairs if new_d > old_d]
        if raised:
            s = raised[0]
            raise ValueError(
                f"max_delay of stream {s} = {new.max_delay[s]!r} exceeds the "
                f"{self._delays[s]!r} the buffers were kept for"
            )
        self._config = new
        return Emitted.rows(self._due(), self.m)

    def _clear(self) -> None:
        self._counters.dropped += sum(self._buffered())
        self._new_buffers()

    @abstractmethod
    def _join(self, stream: int, item: Tuple) -> list[tuple[int, ...]]:
        """Buffer an on-time tuple; the results it completes."""

    def _due(self) -> list[tuple[int, ...]]:
        """Results that fell due as time passed (FEW's periods)."""
        return []

    def _pending(self) -> list[tuple[int, ...]]:
        """Results still pending at the end of the streams."""
        return []

    # -- the shared search -------------------------------------------------------------------
    def _horizon(self, r: int, paper: bool, now: float | None = None) -> float:
        """The expiry bound of stream r: a tuple older than ``min_j (t_j - D_j - C_rj)`` joins
        no tuple arriving from ``now`` on (default: the clock), t_j ``now`` (fast) or the
        paper's newest timestamp of stream j.  Mirrors ``kernels.wjoin_search._horizon``."""
        t = self._newest if paper else np.full(self.m, self._now if now is None else now)
        return min(
            float(t[j]) - self._delays[j] - float(self._bound[r, j])
            for j in range(self.m)
            if j != r
        )

    def _count(self, visit: Visit) -> None:
        c = self._counters
        c.comparisons += visit.comparisons
        c.visited_inside += visit.inside
        c.visited_outside += visit.outside
        c.dropped += visit.dropped

    def _search(
        self,
        fixed: dict[int, Tuple],
        order: list[int],
        ranges: Callable[[dict[int, Tuple], int], tuple[float, float]],
        out: list[tuple[int, ...]],
        drop: list[float] | None = None,
    ) -> None:
        """Extend ``fixed`` with one tuple per stream of ``order`` inside ``ranges``; emit.
        ``drop``: the paper's BEW (Section 3.1) tests every buffered tuple against the range
        and drops those older than it below ``drop[s]``, rather than search the time-ordered
        buffer for the range.  Mirrors ``kernels.wjoin_search._search``."""
        equal = self.predicate == "equal"
        key = next(iter(fixed.values()))[3]
        if equal and any(t[3] != key for t in fixed.values()):
            return
        m = self.m

        def extend(depth: int) -> None:
            if depth == len(order):
                if not equal:
                    self._counters.comparisons += 1
                    if not self.predicate(tuple(self._keys.value(fixed[s][3]) for s in range(m))):
                        return
                if self._refine:
                    self._counters.comparisons += 1
                    ts = np.array([fixed[s][0] for s in range(m)])
                    if not self.constraints.satisfied(ts):
                        return
                out.append(tuple(fixed[s][2] for s in range(m)))
                return
            s = order[depth]
            lo, hi = ranges(fixed, s)
            if lo > hi:
                return
            k = key if equal else None
            if drop is None:  # every tuple scanned in the period is one comparison
                visit = self.buffers.scan(s, lo, hi, k)
            else:
                visit = self.buffers.test_each(s, lo, hi, k, drop[s])
            self._count(visit)
            for cand in visit.found:
                fixed[s] = cand
                extend(depth + 1)
            fixed.pop(s, None)

        extend(0)
