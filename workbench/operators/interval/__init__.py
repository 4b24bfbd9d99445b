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

from workbench.operators.interval.common import IntervalConfig
from workbench.operators.interval.eager import EagerCorrelation
from workbench.operators.interval.lazy import LazyConfig, LazyCorrelation, LazyLookupCorrelation
from workbench.operators.interval.simple import SimpleCorrelation, SSortCorrelation

__all__ = [
    "EagerCorrelation",
    "IntervalConfig",
    "LazyConfig",
    "LazyCorrelation",
    "LazyLookupCorrelation",
    "SSortCorrelation",
    "SimpleCorrelation",
]
