"""The deterministic band join (PTJoin paper, Section 3, with no probability test): pairs with
``|max(H_a) - max(H_b)| <= d`` over the max-time sorted buffers and clock
:class:`~workbench.operators.ptjoin.PTJoin` uses, the output-bound floor for benchmarks; and
what both joins' resumable kernels (:mod:`workbench.kernels.ptjoin`) run with: the batch's
columns, the driver that makes room for their output whenever they stop, and Example 3's
configuration for the doctests and the conformance suite.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.events import Events
from workbench.kernels.ptjoin import band_join_batch
from workbench.operators.base import JoinConfig, StreamSpec, TwoStreamJoin
from workbench.operators.buffers import kernel_state, set_windows
from workbench.paper_examples import example3_templates
from workbench.records import Emitted

__all__ = ["BandJoin", "example_params", "kernel_columns", "run_kernel"]

_FIRST_ROWS = 1 << 20
"""Pair rows a join kernel gets before it has run (16 MiB); if the batch needs more, the pairs
per event seen on them size the rest."""


class BandJoin(TwoStreamJoin[JoinConfig]):
    """The deterministic band join ``|max(H_a) - max(H_b)| <= d``: no probability at all.

    A baseline of the same buffers and clock as :class:`~workbench.operators.ptjoin.PTJoin`
    (``threshold`` is unused).

    >>> op = BandJoin(**example_params())
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> op.push("B", 7, 0, t_det=150.0, arrival=152.0).ids.tolist()
    [[1, 7]]
    """

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite."""
        return example_params()

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        target = self.buffers[1 - stream]
        lo = int(np.searchsorted(target.tmax, t_det - self.d, side="left"))
        hi = int(np.searchsorted(target.tmax, t_det + self.d, side="right"))
        hits = target.ids[lo:hi]
        self._evict(1 - stream)
        self.buffers[stream].insert(event_id, template, t_det, tmin)
        return Emitted.pairs(stream, event_id, hits)

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """The batch through the compiled kernel (:func:`~workbench.kernels.ptjoin.
        band_join_batch`)."""
        env = self.envelope
        *columns, bounds = kernel_state(self.buffers)
        args = (kernel_columns(events), tmin, late, tuple(columns), bounds)
        config = (self.d, np.array(env.max_delay), float(env.d_max))
        progress, removed = np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64)
        (pairs,) = run_kernel(
            lambda out: band_join_batch(*args, out, progress, removed, *config),
            progress,
            bounds,
            len(events),
        )
        set_windows(self.buffers, bounds)
        self._counters.obsolete_removed += int(removed[0])
        return pairs

    def _eviction_bound(self, target: int) -> float:
        base = 1 - target
        return self.now - self.envelope.max_delay[base] - self.envelope.d_max


def run_kernel(
    run: Callable[..., None],
    progress: np.ndarray,
    bounds: np.ndarray,
    n_events: int,
    flagged: bool = False,
) -> tuple[np.ndarray, ...]:
    """Call a resumable join kernel until it has taken all ``n_events``, making room for its
    output whenever it stops (``progress`` = next event, pairs, flags so far): the pairs, and
    with ``flagged`` the flagged pairs (pair, event, partner template) and partner max times.

    The kernel stops before an event whose partners might not fit; the pairs per event seen
    so far, with half again to spare, then size the rest (pages never written cost nothing).
    """
    buffered = int(bounds[1] - bounds[0] + bounds[3] - bounds[2])
    out = [np.empty((min(n_events * max(64, buffered), _FIRST_ROWS), 2), dtype=np.int64)]
    if flagged:
        out += [np.empty((1024 + buffered, 3), dtype=np.int64), np.empty(1024 + buffered)]
    while True:
        run(*out)
        done, n = int(progress[0]), int(progress[1])
        if done == n_events:
            return (out[0][:n], *(a[: progress[2]] for a in out[1:]))
        room = int(bounds[1] - bounds[0] + bounds[3] - bounds[2])
        rest = (n_events - done) * (n // max(done, 1) + 1) * 3 // 2
        out[0] = _enlarged(out[0], n, max(2 * len(out[0]), n + rest, n + room))
        if flagged:
            size = max(2 * len(out[1]), int(progress[2]) + room)
            out[1:] = [_enlarged(a, int(progress[2]), size) for a in out[1:]]


def _enlarged(array: np.ndarray, used: int, size: int) -> np.ndarray:
    """``array``'s first ``used`` rows in a new array of ``size`` rows."""
    if size <= len(array):
        return array
    bigger = np.empty((size, *array.shape[1:]), dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


def kernel_columns(events: Events) -> tuple[np.ndarray, ...]:
    """The batch's columns, contiguous (each kernel compiles for one layout)."""
    return tuple(np.ascontiguousarray(col) for col in events.columns())


def example_params(**extra: object) -> dict[str, object]:
    """Example 3's templates on both streams, D = 30, d = 60, delta = 0.8 (doctests and the
    conformance suite)."""
    spec = StreamSpec(example3_templates(), max_delay=30)
    return {"streams": (spec, spec), "d": 60.0, "threshold": 0.8, **extra}
