"""Interval timing correlation (interval timing paper, Section 4.2, Algorithms 1-7).

Events carry uniform interval timestamps: each stream's templates are one-bucket histograms
(interval lengths), an event detected at t covers ``[t - len, t]``.  A pair joins when
``P(|Xa - Xb| <= d) >= ct``.  Five algorithms, one class each:

- :class:`SimpleCorrelation` (Alg. 1): probe every buffered target, buffers in arrival order.
- :class:`SSortCorrelation`: the same probing over max-time sorted buffers.
- :class:`EagerCorrelation` (Alg. 2-3): LH/LL/RL/RH per arrival, probe only [LH, LL), (RL, RH].
- :class:`LazyCorrelation` (Alg. 4-5): buffer arrivals, correlate blocks (BlockTimingCorrelation).
- :class:`LazyLookupCorrelation` (Alg. 6-7): blocks with a look-up table reusing probe results.

Invalidation uses ``LH(e_inv)`` (Section 4.2) at the envelope's most permissive parameters.
Every probe is a certified exact decision (:mod:`workbench.decision`); LH, LL, RL, RH are
computed in floats and moved outwards by a bound on their rounding, so SR and VR never hold a
pair that a probe would decide otherwise.

``push`` is the readable reference; ``push_batch`` (engine "compiled") runs the same steps in
the kernels of :mod:`workbench.kernels.interval` over the same state (the buffers and the lazy
algorithms' pending blocks are :class:`SortedBuffer` columns), settling the pairs the float
bound cannot decide by the general exact path here, in their place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from workbench.decision import UNIT_ROUNDOFF
from workbench.events import Events
from workbench.interval_bounds import (
    bounds_tuple,
    interval_bounds_many,
    invalidation_bound,
    uniform_band_certified,
)
from workbench.kernels.interval import EAGER, SIMPLE, SSORT, eager_batch, lazy_batch
from workbench.operators.base import JoinConfig, StreamSpec, TwoStreamJoin
from workbench.operators.buffers import (
    SortedBuffer,
    expand_ranges,
    kernel_state,
    partition_slice,
    partition_slices,
    rounding_margin,
    set_windows,
    widen,
)
from workbench.protocol import from_config
from workbench.records import Emitted
from workbench.timestamps import HistogramTimestamp, TemplateSet

__all__ = [
    "EagerCorrelation",
    "IntervalConfig",
    "LazyConfig",
    "LazyCorrelation",
    "LazyLookupCorrelation",
    "SSortCorrelation",
    "SimpleCorrelation",
]


_NO_LIMIT = 2**62
"""``max_pending`` of None, for the kernel: a count never reached."""
_CHUNK = 4096
"""Rows per kernel call (between calls the output is resized to the batch's rate so far)."""


class _Output:
    """The pairs of one batch's kernel calls in one array (never copied while the first
    rows' rate predicts its size: its untouched tail costs no memory) and the unsure ones
    among them (rows and arguments, as :mod:`workbench.kernels.interval` writes them)."""

    def __init__(self, n_rows: int) -> None:
        self.pairs = np.empty((16 * n_rows + 64, 2), dtype=np.int64)
        self.unsure = np.empty((16, 6))
        self.n_pairs = self.n_unsure = 0

    def state(self) -> tuple[np.ndarray, int, np.ndarray, int]:
        """The kernels' output arguments."""
        return self.pairs, self.n_pairs, self.unsure, self.n_unsure

    def room(self, extra: int) -> None:
        """At least ``extra`` free rows after the pairs written."""
        if self.n_pairs + extra > len(self.pairs):
            bigger = np.empty((self.n_pairs + extra, 2), dtype=np.int64)
            bigger[: self.n_pairs] = self.pairs[: self.n_pairs]
            self.pairs = bigger

    def fit(self, done: int, total: int) -> None:
        """Room for the batch's remaining rows at the rate of its first ``done``, plus half."""
        self.room((3 * self.n_pairs * (total - done)) // (2 * max(done, 1)) + 64)

    def append(self, ids: np.ndarray) -> None:
        """Pairs emitted outside the kernel, in their place."""
        self.room(len(ids))
        self.pairs[self.n_pairs : self.n_pairs + len(ids)] = ids
        self.n_pairs += len(ids)

    def written(self) -> tuple[np.ndarray, np.ndarray]:
        """The pairs written (a view, or a copy when it would hold on to much more memory)
        and the unsure rows."""
        pairs = self.pairs[: self.n_pairs]
        if 2 * self.n_pairs + 64 < len(self.pairs):
            pairs = pairs.copy()
        return pairs, self.unsure[: self.n_unsure]


@dataclass(frozen=True, kw_only=True)
class IntervalConfig(JoinConfig):
    """A join's configuration whose templates are uniform intervals (one bucket each,
    Section 2 of the interval timing paper)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for s, spec in enumerate(self.streams):
            for k, t in enumerate(spec.templates):
                if t.n_buckets != 1:
                    raise ValueError(
                        f"templates[{k}] of stream {'AB'[s]} has {t.n_buckets} buckets; "
                        "interval correlation needs uniform intervals (one bucket)"
                    )


@dataclass(frozen=True, kw_only=True)
class LazyConfig(IntervalConfig):
    """The lazy algorithms' configuration (Alg. 4-7): re-evaluate when ``max_pending``
    tuples wait and/or ``max_wait`` arrival time has passed since the last evaluation."""

    max_pending: int | None = 500
    max_wait: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_pending is None and self.max_wait is None:
            raise ValueError("max_pending and max_wait are both None: nothing would re-evaluate")
        if self.max_pending is not None and not self.max_pending >= 1:
            raise ValueError(f"max_pending = {self.max_pending!r} must be at least 1")
        if self.max_wait is not None and not self.max_wait >= 0:
            raise ValueError(f"max_wait = {self.max_wait!r} must be a non-negative time")


def _example_params(**extra: object) -> dict[str, object]:
    """Two interval lengths per stream, D = 5, d = 20, ct = 0.9 (doctests and the
    conformance suite)."""
    intervals = (HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(0, 4))
    spec = StreamSpec(TemplateSet("S", intervals), max_delay=5)
    return {"streams": (spec, spec), "d": 20.0, "threshold": 0.9, **extra}


class _IntervalCorrelation(TwoStreamJoin):
    """Uniform-interval streams: probes, invalidates by LH(e_inv)."""

    config_type: ClassVar[type] = IntervalConfig
    kernel_kind: ClassVar[int] = EAGER
    """The eager kernel's algorithm (SIMPLE, SSORT or EAGER)."""

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return _example_params()

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """Algorithms 1-3 over the batch in :func:`~workbench.kernels.interval.eager_batch`
        (``_join`` per on-time event, each at its clock); unsure pairs settled in place."""
        columns = tuple(np.ascontiguousarray(c) for c in events.columns())
        *buffers, window = kernel_state(self.buffers)
        params, counts, n = self._kernel_params(), np.zeros(3, dtype=np.int64), len(events)
        out = _Output(n)
        for first in range(0, n, _CHUNK):
            last = min(first + _CHUNK, n)
            out.pairs, out.n_pairs, out.unsure, out.n_unsure = eager_batch(
                first, last, self.kernel_kind, *columns[:4], tmin, columns[4], late,
                *buffers, window, *params, counts, *out.state(),
            )  # fmt: skip
            out.fit(last, n)
        self._kernel_done(window, counts)
        return self._settle(*out.written())

    @property
    def ct(self) -> float:
        """The confidence threshold ct."""
        return self.threshold

    def _bounds(
        self, stream: int, lo: np.ndarray, hi: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """LH, LL, RL, RH of base events of ``stream`` against the other stream's pi, widened
        by their rounding (probing ranges grow by a few ulps)."""
        pi = self.streams[1 - stream].pi
        lh, ll, rl, rh = interval_bounds_many(lo, hi, self.d, self.threshold, pi)
        margin = 16 * UNIT_ROUNDOFF * (np.abs(hi) + self.d + pi + (hi - lo))
        return lh - margin, ll + margin, rl - margin, rh + margin

    def _eviction_bound(self, target: int) -> float:
        base = 1 - target
        env = self.envelope
        pi = self.streams[base].pi
        bound = invalidation_bound(self.now, env.max_delay[base], pi, env.d_max, env.threshold_min)
        return bound - rounding_margin(self.now, env.max_delay[base], pi, env.d_max)

    def _band_ok(
        self,
        stream: int,
        template: int | np.ndarray,
        t_det: float | np.ndarray,
        partner_templates: np.ndarray,
        partner_tmax: np.ndarray,
    ) -> np.ndarray:
        """jc(d, ct) exactly: the trapezoid in floats where its proven bound decides
        (:func:`~workbench.interval_bounds.uniform_band_certified`), the general certified path
        (rationals at worst) for the rest."""
        n = int(np.size(partner_tmax))
        if n == 0:
            return np.zeros(0, dtype=bool)
        p, bound = uniform_band_certified(
            self._tlen[stream][template],
            t_det,
            self._tlen[1 - stream][partner_templates],
            partner_tmax,
            self.d,
        )
        ok = p >= self.threshold
        unsure = np.flatnonzero(np.abs(p - self.threshold) <= bound)
        self._counters.prob_evals += n - unsure.size
        if unsure.size:
            template, t_det = (np.broadcast_to(x, (n,))[unsure] for x in (template, t_det))
            ok[unsure] = super()._band_ok(
                stream, template, t_det, partner_templates[unsure], partner_tmax[unsure]
            )
        return ok

    def _kernel_params(self) -> tuple[object, ...]:
        """Template lengths, pi of both streams, d, ct and the envelope's eviction
        parameters (max delays, d_max, ct_min), in the kernels' argument order."""
        env = self.envelope
        return (
            self._tlen_table,
            np.array([s.pi for s in self.streams]),
            self.d,
            self.threshold,
            np.array(env.max_delay),
            env.d_max,
            env.threshold_min,
        )

    def _kernel_done(self, window: np.ndarray, counts: np.ndarray) -> None:
        """Take back the buffer windows and work counters a kernel left."""
        set_windows(self.buffers, window)
        self._counters.prob_evals += int(counts[0])
        self._counters.lookup_reuses += int(counts[1])
        self._counters.obsolete_removed += int(counts[2])

    def _settle(self, pairs: np.ndarray, unsure: np.ndarray) -> np.ndarray:
        """The kernel's pairs less the unsure ones the general exact path rejects (decided in
        place, counted as prob_evals and exact_evals as the reference counts them)."""
        if not len(unsure):
            return pairs
        keep = np.ones(len(pairs), dtype=bool)
        rows, stream = unsure[:, 0].astype(np.int64), unsure[:, 1].astype(np.int64)
        templates, partner_templates = unsure[:, 2].astype(np.int64), unsure[:, 4].astype(np.int64)
        general = super()._band_ok
        for s in (0, 1):
            mine = stream == s
            if mine.any():
                ok = general(
                    s, templates[mine], unsure[mine, 3], partner_templates[mine], unsure[mine, 5]
                )
                keep[rows[mine][~ok]] = False
        return pairs[keep]

    def _exact_bounds(self) -> bool:
        """Whether d >= pi of both streams, so LH..RH are exact (and Corollary 3 holds)."""
        return self.d >= max(self.streams[0].pi, self.streams[1].pi)


class SimpleCorrelation(_IntervalCorrelation):
    """Algorithm 1: probe every target tuple; buffers kept in arrival order.

    >>> from workbench.operators.base import StreamSpec
    >>> from workbench.timestamps import HistogramTimestamp, TemplateSet
    >>> spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, 10),)), max_delay=5)
    >>> op = SimpleCorrelation(streams=(spec, spec), d=20, threshold=0.9)
    >>> op.push("A", 1, 0, t_det=100.0, arrival=101.0).b_ids.tolist()
    []
    >>> m = op.push("B", 7, 0, t_det=110.0, arrival=112.0)
    >>> m.a_ids.tolist(), m.b_ids.tolist(), op.counters.prob_evals
    ([1], [7], 1)
    """

    kernel_kind: ClassVar[int] = SIMPLE

    def _new_buffer(self) -> SortedBuffer:
        return SortedBuffer(keep_sorted=False)

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        target = self.buffers[1 - stream]
        hits = target.ids[self._band_ok(stream, template, t_det, target.templates, target.tmax)]
        self._evict(1 - stream)  # marked obsolete tuples leave the target buffer
        self.buffers[stream].insert(event_id, template, t_det, tmin)
        return Emitted.pairs(stream, event_id, hits)


class SSortCorrelation(SimpleCorrelation):
    """Simple-Sort: Algorithm 1 over max-time sorted buffers (obsolete tuples form a block).

    >>> op = SSortCorrelation(**_example_params())
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> op.push("B", 7, 1, t_det=104.0, arrival=105.0).ids.tolist()
    [[1, 7]]
    """

    kernel_kind: ClassVar[int] = SSORT

    def _new_buffer(self) -> SortedBuffer:
        return SortedBuffer(keep_sorted=True)


class EagerCorrelation(_IntervalCorrelation):
    """Algorithms 2-3: SR = [LL, RL] joins without probing; only the PRs are probed.

    >>> op = EagerCorrelation(**_example_params())
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> op.push("B", 7, 1, t_det=104.0, arrival=105.0).ids.tolist(), op.counters.prob_evals
    ([[1, 7]], 0)
    """

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        target = self.buffers[1 - stream]
        pi = self.streams[1 - stream].pi
        bounds = bounds_tuple(tmin, t_det, self.d, self.threshold, pi)
        margin = rounding_margin(t_det, self.d, pi, t_det - tmin)
        i_lh, i_sr, j_sr, j_rh = partition_slice(target.tmax, *widen(*bounds, margin))
        probe = np.r_[i_lh:i_sr, j_sr:j_rh]
        ok = self._band_ok(stream, template, t_det, target.templates[probe], target.tmax[probe])
        hits = np.concatenate((target.ids[i_sr:j_sr], target.ids[probe][ok]))
        self._evict(1 - stream)
        self.buffers[stream].insert(event_id, template, t_det, tmin)
        return Emitted.pairs(stream, event_id, hits)


class LazyCorrelation(_IntervalCorrelation):
    """Algorithms 4-5: arrivals wait; blocks are correlated when "enough" have gathered.

    Re-evaluation when ``max_pending`` unprocessed tuples have arrived and/or when
    ``max_wait`` (arrival-clock time) has passed since the last one; ``flush()`` evaluates
    the rest.  A block is correlated with vectorised bounds, slices and probes.

    >>> op = LazyCorrelation(**_example_params(max_pending=2))
    >>> op.push("A", 1, 0, t_det=100.0, arrival=101.0).ids.tolist()   # waits
    []
    >>> op.push("B", 7, 0, t_det=110.0, arrival=112.0).ids.tolist()   # a block of two
    [[1, 7]]
    """

    config_type: ClassVar[type] = LazyConfig
    uses_lookup: ClassVar[bool] = False
    """Whether blocks are correlated with the look-up table (Algorithms 6-7)."""

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite: blocks of 7 or every 15 ms."""
        return _example_params(max_pending=7, max_wait=15.0)

    max_pending = from_config("max_pending", "Re-evaluate at this many waiting tuples (or None).")
    max_wait = from_config("max_wait", "Re-evaluate after this much arrival time (or None).")

    def _start(self) -> None:
        super()._start()
        # the unprocessed blocks, in arrival order (shared with the kernel)
        self._pending = (SortedBuffer(keep_sorted=False), SortedBuffer(keep_sorted=False))
        self._last_eval: float | None = None

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        self._pending[stream].insert(event_id, template, t_det, tmin)
        if self._last_eval is None:
            self._last_eval = self.now
        count = len(self._pending[0]) + len(self._pending[1])
        if self.max_pending is not None and count >= self.max_pending:
            return self._block()
        return self._tick()

    def _tick(self) -> Emitted:
        """Re-evaluate when ``max_wait`` has passed since the last evaluation."""
        if self.max_wait is None or self._last_eval is None:
            return Emitted.none(2)
        if self.now - self._last_eval >= self.max_wait:
            return self._block()
        return Emitted.none(2)

    def _drain(self) -> Emitted:
        return self._block()

    def _block(self) -> Emitted:
        """BlockTimingCorrelation over both streams' unprocessed blocks (Algorithm 5)."""
        self._last_eval = self.now
        return self._finish_block(0)

    def _finish_block(self, first: int) -> Emitted:
        """The block's parts from stream ``first`` on, then both buffers invalidated."""
        parts = []
        for stream in range(first, 2):
            rows = self._pending[stream]
            if not len(rows):
                continue
            order = np.argsort(rows.tmax, kind="stable")  # sort the unprocessed block
            ids, templates, tmax, tmin = (
                c[order] for c in (rows.ids, rows.templates, rows.tmax, rows.tmin)
            )
            rows.clear()
            # the block meets the target's processed tuples and, for stream B, A's block too
            parts.append(self._correlate_block(stream, ids, templates, tmin, tmax))
            self.buffers[stream].insert_many(ids, templates, tmax, tmin)
        self._evict(0)
        self._evict(1)
        return Emitted.concat(parts, 2)

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """Algorithms 4-7 over the batch in :func:`~workbench.kernels.interval.lazy_batch`
        (the triggers checked after each on-time event, as ``_join`` does); unsure pairs
        settled in place, a look-up block part that meets one finished here."""
        lookup = self.uses_lookup and self._exact_bounds()
        columns = tuple(np.ascontiguousarray(c) for c in events.columns())
        limits = (
            _NO_LIMIT if self.max_pending is None else self.max_pending,
            np.nan if self.max_wait is None else self.max_wait,  # NaN: never due
        )
        n, first, out = len(events), 0, _Output(len(events))
        while first < n:
            last = min(first + _CHUNK, n)
            waiting = len(self._pending[0]) + len(self._pending[1])
            for buf in self._pending:
                buf.reserve(last - first)
            for buf in self.buffers:  # blocks merge every waiting tuple into its buffer
                buf.reserve(waiting + last - first)
            *buffers, window = kernel_state(self.buffers)
            *blocks, pending = kernel_state(self._pending)
            clock = np.array([np.nan if self._last_eval is None else self._last_eval])
            counts = np.zeros(3, dtype=np.int64)
            out.pairs, out.n_pairs, out.unsure, out.n_unsure, stop, part = lazy_batch(
                first, last, lookup, *columns[:4], tmin, columns[4], late,
                *blocks, pending, *buffers, window, *self._kernel_params(), *limits, clock, counts,
                *out.state(),
            )  # fmt: skip
            self._kernel_done(window, counts)
            set_windows(self._pending, pending)
            self._last_eval = None if np.isnan(clock[0]) else float(clock[0])
            if stop >= 0:  # finish the look-up block in Python, then go on after its row
                self._now = float(events.arrival[stop])
                out.append(self._finish_block(part).ids)
                last = stop + 1
            out.fit(last, n)
            first = last
        return self._settle(*out.written())

    def _correlate_block(
        self,
        stream: int,
        ids: np.ndarray,
        templates: np.ndarray,
        tmin: np.ndarray,
        tmax: np.ndarray,
    ) -> Emitted:
        target = self.buffers[1 - stream]
        i_lh, i_sr, j_sr, j_rh = partition_slices(target.tmax, *self._bounds(stream, tmin, tmax))
        own, pos = expand_ranges(i_sr, j_sr)
        sr = Emitted.pairs(stream, ids[own], target.ids[pos])
        own_l, pos_l = expand_ranges(i_lh, i_sr)
        own_r, pos_r = expand_ranges(j_sr, j_rh)
        own_p, pos_p = np.concatenate((own_l, own_r)), np.concatenate((pos_l, pos_r))
        ok = self._band_ok(
            stream, templates[own_p], tmax[own_p], target.templates[pos_p], target.tmax[pos_p]
        )
        probed = Emitted.pairs(stream, ids[own_p][ok], target.ids[pos_p][ok])
        return Emitted.concat([sr, probed], 2)


class LazyLookupCorrelation(LazyCorrelation):
    """Algorithms 6-7: the lazy block with a look-up table over the target's probe regions.

    The left probe regions are visited from the block's last tuple to its first, the right
    ones from first to last; a stored *satisfied* verdict of an earlier-visited base tuple e_b
    is reused for e_new when ``min(e_new) <= min(e_b)`` (left) or ``>=`` (right) (Theorem 2 of
    the paper, by Corollaries 2-3).  The table stores exact verdicts, not probabilities, so a
    reuse is as exact as a probe.  Needs ``d >= pi`` of both streams; below that every probe
    is computed.

    >>> op = LazyLookupCorrelation(**_example_params(max_pending=3))
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> _ = op.push("A", 2, 0, t_det=101.0, arrival=102.0)
    >>> sorted(op.push("B", 7, 1, t_det=104.0, arrival=105.0).ids.tolist())
    [[1, 7], [2, 7]]
    """

    uses_lookup: ClassVar[bool] = True

    def _correlate_block(
        self,
        stream: int,
        ids: np.ndarray,
        templates: np.ndarray,
        tmin: np.ndarray,
        tmax: np.ndarray,
    ) -> Emitted:
        if not self._exact_bounds():
            return super()._correlate_block(stream, ids, templates, tmin, tmax)
        target = self.buffers[1 - stream]
        i_lh, i_sr, j_sr, j_rh = partition_slices(target.tmax, *self._bounds(stream, tmin, tmax))
        own, pos = expand_ranges(i_sr, j_sr)
        parts = [Emitted.pairs(stream, ids[own], target.ids[pos])]  # SR: lines 4-9
        n_target = len(target)
        for side in ("left", "right"):
            stored = np.zeros(n_target, dtype=np.int8)  # 0 notInit, 1 violated, 2 satisfied
            stored_min = np.zeros(n_target)
            visit = range(len(ids) - 1, -1, -1) if side == "left" else range(len(ids))
            for b in visit:
                lo_idx, hi_idx = (i_lh[b], i_sr[b]) if side == "left" else (j_sr[b], j_rh[b])
                if lo_idx == hi_idx:
                    continue
                window = slice(lo_idx, hi_idx)
                init = stored[window] > 0
                if side == "left":
                    usable = init & (tmin[b] <= stored_min[window])
                else:
                    usable = init & (tmin[b] >= stored_min[window])
                reuse = usable & (stored[window] == 2)
                self._counters.lookup_reuses += int(np.count_nonzero(reuse))
                probe = np.flatnonzero(~reuse) + lo_idx
                ok = self._band_ok(
                    stream, templates[b], tmax[b], target.templates[probe], target.tmax[probe]
                )
                # SetLookup where the table was not usable (notInit or not strictly less)
                store = ~usable[probe - lo_idx]
                stored[probe[store]] = np.where(ok[store], 2, 1)
                stored_min[probe[store]] = tmin[b]
                hits = np.concatenate((target.ids[window][reuse], target.ids[probe][ok]))
                parts.append(Emitted.pairs(stream, ids[b], hits))
        return Emitted.concat(parts, 2)
