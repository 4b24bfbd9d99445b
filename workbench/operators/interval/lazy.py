"""Lazy and LazyWithLookup: correlate blocks of arrivals (interval timing Section 4.2, Alg. 4-7)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from workbench.events import Events
from workbench.kernels.interval import Buffers, Triggers, lazy_batch
from workbench.operators.buffers import (
    SortedBuffer,
    expand_ranges,
    kernel_state,
    partition_slices,
    set_windows,
)
from workbench.operators.interval.common import (
    IntervalConfig,
    IntervalCorrelation,
    KernelOutput,
    example_params,
    kernel_batch,
)
from workbench.protocol import from_config
from workbench.records import Emitted

__all__ = ["LazyConfig", "LazyCorrelation", "LazyLookupCorrelation"]


_NO_LIMIT = 2**62
"""``max_pending`` of None, for the kernel: a count never reached."""


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


class LazyCorrelation(IntervalCorrelation[LazyConfig]):
    """Algorithms 4-5: arrivals wait; blocks are correlated when "enough" have gathered.

    Re-evaluation when ``max_pending`` unprocessed tuples have arrived and/or when
    ``max_wait`` (arrival-clock time) has passed since the last one; ``flush()`` evaluates
    the rest.  A block is correlated with vectorised bounds, slices and probes.

    >>> op = LazyCorrelation(**example_params(max_pending=2))
    >>> op.push("A", 1, 0, t_det=100.0, arrival=101.0).ids.tolist()   # waits
    []
    >>> op.push("B", 7, 0, t_det=110.0, arrival=112.0).ids.tolist()   # a block of two
    [[1, 7]]
    >>> _ = op.push("A", 2, 0, t_det=113.0, arrival=114.0)
    >>> op.set_params(max_pending=50).ids.tolist()   # the waiting block evaluated first
    [[2, 7]]
    """

    steerable: ClassVar[frozenset[str]] = IntervalCorrelation.steerable | {
        "max_pending",
        "max_wait",
    }
    """d, ct, D and the re-evaluation thresholds: a change evaluates the waiting block first."""
    uses_lookup: ClassVar[bool] = False
    """Whether blocks are correlated with the look-up table (Algorithms 6-7)."""

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite: blocks of 7 or every 15 ms."""
        return example_params(max_pending=7, max_wait=15.0)

    max_pending = from_config("max_pending", "Re-evaluate at this many waiting tuples (or None).")
    max_wait = from_config("max_wait", "Re-evaluate after this much arrival time (or None).")

    @property
    def evaluated_at(self) -> float | None:
        """The clock (arrival time) of the last block's evaluation (Algorithm 5); before the
        first block, of the first arrival the block waits since (None: no arrival yet)."""
        return self._last_eval

    def _start(self) -> None:
        super()._start()
        # the unprocessed blocks, in arrival order (shared with the kernel)
        self._pending = (SortedBuffer(keep_sorted=False), SortedBuffer(keep_sorted=False))
        self._last_eval: float | None = None

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        """One on-time arrival (Algorithm 4's triggers): the reference the compiled path mirrors
        (mirrors kernels.interval.lazy_batch's loop body)."""
        self._pending[stream].insert(event_id, template, t_det, tmin)
        if self._last_eval is None:
            self._last_eval = self.now
        count = len(self._pending[0]) + len(self._pending[1])
        if self.max_pending is not None and count >= self.max_pending:
            return self._block()
        return self._release(self.now)

    def _release(self, until: float) -> Emitted:
        """Evaluate the waiting block when ``max_wait`` has passed since the last evaluation
        by ``until``, and at the end of the streams (``until`` = math.inf) in any case."""
        if until == math.inf:
            return self._block()
        if self.max_wait is None or self._last_eval is None:
            return Emitted.none(2)
        if until - self._last_eval >= self.max_wait:
            return self._block()
        return Emitted.none(2)

    def _clear(self) -> None:
        super()._clear()
        self._last_eval = None  # no block waits: the next stream's first arrival starts one

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
        batch, params = kernel_batch(events, tmin, late), self._kernel_params()
        limits = (  # an int and a float, whatever the caller gave: one compiled signature
            _NO_LIMIT if self.max_pending is None else int(self.max_pending),
            np.nan if self.max_wait is None else float(self.max_wait),  # NaN: never due
        )
        n, first, out = len(events), 0, KernelOutput(len(events))
        while first < n:
            last = min(first + self.chunk, n)
            waiting = len(self._pending[0]) + len(self._pending[1])
            for buf in self._pending:
                buf.reserve(last - first)
            for buf in self.buffers:  # blocks merge every waiting tuple into its buffer
                buf.reserve(waiting + last - first)
            buffers = Buffers(*kernel_state(self.buffers))
            pending = Buffers(*kernel_state(self._pending))
            clock = np.array([np.nan if self._last_eval is None else self._last_eval])
            triggers = Triggers(*limits, last_eval=clock)
            counts = np.zeros(3, dtype=np.int64)
            written, stop, part = lazy_batch(
                batch, first, last, lookup, pending, buffers, params, triggers, counts, out.state()
            )
            out.pairs, out.n_pairs, out.unsure, out.n_unsure = written
            self._kernel_done(buffers.window, counts)
            set_windows(self._pending, pending.window)
            self._last_eval = None if np.isnan(clock[0]) else float(clock[0])
            if stop >= 0:  # finish the look-up block in Python, then go on after its row
                self._now = float(events.arrival[stop])
                out.append(self._finish_block(part).ids)
                last = stop + 1
            out.fit(last, n)
            first = last
        return self._settle(*out.written())

    def _satisfied(
        self, stream: int, ids: np.ndarray, tmin: np.ndarray, tmax: np.ndarray
    ) -> tuple[SortedBuffer, tuple[np.ndarray, ...], Emitted]:
        """The block's partition slices LH, SR start, SR end, RH of the target (Algorithm 5)
        and the pairs its satisfaction ranges join without a probe."""
        target = self.buffers[1 - stream]
        slices = partition_slices(target.tmax, *self._bounds(stream, tmin, tmax))
        own, pos = expand_ranges(slices[1], slices[2])
        return target, slices, Emitted.pairs(stream, ids[own], target.ids[pos])

    def _correlate_block(
        self,
        stream: int,
        ids: np.ndarray,
        templates: np.ndarray,
        tmin: np.ndarray,
        tmax: np.ndarray,
    ) -> Emitted:
        """BlockTimingCorrelation (Algorithm 5) of one stream's sorted block (mirrors
        kernels.interval._plain_block)."""
        target, (i_lh, i_sr, j_sr, j_rh), sr = self._satisfied(stream, ids, tmin, tmax)
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

    >>> op = LazyLookupCorrelation(**example_params(max_pending=3))
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
        """LookupBlockTimingCorrelation (Algorithms 6-7) of one stream's sorted block (mirrors
        kernels.interval._lookup_block)."""
        if not self._exact_bounds():
            return super()._correlate_block(stream, ids, templates, tmin, tmax)
        target, (i_lh, i_sr, j_sr, j_rh), sr = self._satisfied(stream, ids, tmin, tmax)
        parts = [sr]  # SR: lines 4-9
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
