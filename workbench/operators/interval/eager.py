"""Eager: join SR unprobed, probe only the PRs (interval timing Section 4.2, Alg. 2-3)."""

from __future__ import annotations

import numpy as np

from workbench.interval_bounds import bounds_tuple
from workbench.operators.buffers import partition_slice, rounding_margin, widen
from workbench.operators.interval.common import IntervalConfig, IntervalCorrelation
from workbench.records import Emitted

__all__ = ["EagerCorrelation"]


class EagerCorrelation(IntervalCorrelation[IntervalConfig]):
    """Algorithms 2-3: SR = [LL, RL] joins without probing; only the PRs are probed.

    >>> from workbench.operators.interval.common import example_params
    >>> op = EagerCorrelation(**example_params())
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> op.push("B", 7, 1, t_det=104.0, arrival=105.0).ids.tolist(), op.counters.prob_evals
    ([[1, 7]], 0)
    """

    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        """One on-time arrival (Algorithms 2-3): the reference the compiled path mirrors
        (mirrors kernels.interval.eager_batch's loop body, kind EAGER)."""
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
