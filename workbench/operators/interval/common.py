"""What the five interval correlations share: configuration, probes, invalidation (Section 4.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np

from workbench.decision import UNIT_ROUNDOFF
from workbench.events import Events
from workbench.interval_bounds import (
    interval_bounds_many,
    invalidation_bound,
    uniform_band_certified,
)
from workbench.kernels.interval import EAGER, Batch, Buffers, Params, Written, eager_batch
from workbench.operators.base import JoinConfig, StreamSpec, TwoStreamJoin
from workbench.operators.buffers import kernel_state, rounding_margin, set_windows
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "IntervalConfig",
    "IntervalCorrelation",
    "KernelOutput",
    "example_params",
    "kernel_batch",
]


class KernelOutput:
    """The pairs of one batch's kernel calls in one array (never copied while the first
    rows' rate predicts its size: its untouched tail costs no memory) and the unsure ones
    among them (rows and arguments, as :mod:`workbench.kernels.interval` writes them)."""

    def __init__(self, n_rows: int) -> None:
        self.pairs = np.empty((16 * n_rows + 64, 2), dtype=np.int64)
        self.unsure = np.empty((16, 6))
        self.n_pairs = self.n_unsure = 0

    def state(self) -> Written:
        """The kernels' output argument."""
        return Written(self.pairs, self.n_pairs, self.unsure, self.n_unsure)

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


def kernel_batch(events: Events, tmin: np.ndarray, late: np.ndarray) -> Batch:
    """A batch's columns as the interval kernels take them (contiguous)."""
    stream, ids, tmpl, t_det, arrival = (np.ascontiguousarray(c) for c in events.columns())
    return Batch(stream, ids, tmpl, t_det, np.ascontiguousarray(tmin), arrival, late)


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


IC = TypeVar("IC", bound=IntervalConfig)
"""An interval correlation's configuration type."""


def example_params(**extra: object) -> dict[str, object]:
    """Two interval lengths per stream, D = 5, d = 20, ct = 0.9 (doctests and the
    conformance suite)."""
    intervals = (HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(0, 4))
    spec = StreamSpec(TemplateSet("S", intervals), max_delay=5)
    return {"streams": (spec, spec), "d": 20.0, "threshold": 0.9, **extra}


class IntervalCorrelation(TwoStreamJoin[IC]):
    """Uniform-interval streams: probes, invalidates by LH(e_inv)."""

    chunk: ClassVar[int] = 4096
    """Rows per kernel call (between calls the output is resized to the batch's rate so far)."""
    kernel_kind: ClassVar[int] = EAGER
    """The eager kernel's algorithm (SIMPLE, SSORT or EAGER)."""

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return example_params()

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """Algorithms 1-3 over the batch in :func:`~workbench.kernels.interval.eager_batch`
        (``_join`` per on-time event, each at its clock); unsure pairs settled in place."""
        batch = kernel_batch(events, tmin, late)
        buffers = Buffers(*kernel_state(self.buffers))
        params, counts, n = self._kernel_params(), np.zeros(3, dtype=np.int64), len(events)
        out = KernelOutput(n)
        for first in range(0, n, self.chunk):
            last = min(first + self.chunk, n)
            written = eager_batch(
                batch, first, last, self.kernel_kind, buffers, params, counts, out.state()
            )
            out.pairs, out.n_pairs, out.unsure, out.n_unsure = written
            out.fit(last, n)
        self._kernel_done(buffers.window, counts)
        return self._settle(*out.written())

    @property
    def ct(self) -> float:
        """The confidence threshold ct."""
        return self.threshold

    def _bounds(
        self, stream: int, lo: np.ndarray, hi: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """LH, LL, RL, RH of base events of ``stream`` against the other stream's pi, widened
        by their rounding (probing ranges grow by a few ulps; mirrors
        kernels.interval.probe_bounds)."""
        pi = self.streams[1 - stream].pi
        lh, ll, rl, rh = interval_bounds_many(lo, hi, self.d, self.threshold, pi)
        margin = 16 * UNIT_ROUNDOFF * (np.abs(hi) + self.d + pi + (hi - lo))
        return lh - margin, ll + margin, rl - margin, rh + margin

    def _eviction_bound(self, target: int) -> float:
        """LH(e_inv) at the clock less its rounding margin (mirrors kernels.interval._evict)."""
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

    def _kernel_params(self) -> Params:
        """Template lengths, pi of both streams, d, ct and the envelope's eviction
        parameters (max delays, d_max, ct_min), as the kernels take them."""
        env = self.envelope
        return Params(
            tlen=self._tlen_table,
            pi=np.array([s.pi for s in self.streams]),
            d=self.d,
            ct=self.threshold,
            delay=np.array(env.max_delay),
            d_max=env.d_max,
            ct_min=env.threshold_min,
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
