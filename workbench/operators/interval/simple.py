"""Simple and Simple-Sort: probe every buffered target (interval timing Section 4.2, Alg. 1)."""

from __future__ import annotations

from typing import ClassVar

from workbench.kernels.interval import SIMPLE, SSORT
from workbench.operators.buffers import SortedBuffer
from workbench.operators.interval.common import IntervalConfig, IntervalCorrelation
from workbench.records import Emitted

__all__ = ["SSortCorrelation", "SimpleCorrelation"]


class SimpleCorrelation(IntervalCorrelation[IntervalConfig]):
    """Algorithm 1: probe every target tuple; buffers kept in arrival order.

    >>> from workbench.operators.base import StreamSpec
    >>> from workbench.templates import TemplateSet
    >>> from workbench.timestamps import HistogramTimestamp
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
        """One on-time arrival (Algorithm 1): the reference the compiled path mirrors
        (mirrors kernels.interval.eager_batch's loop body, kind SIMPLE or SSORT)."""
        target = self.buffers[1 - stream]
        hits = target.ids[self._band_ok(stream, template, t_det, target.templates, target.tmax)]
        self._evict(1 - stream)  # marked obsolete tuples leave the target buffer
        self.buffers[stream].insert(event_id, template, t_det, tmin)
        return Emitted.pairs(stream, event_id, hits)


class SSortCorrelation(SimpleCorrelation):
    """Simple-Sort: Algorithm 1 over max-time sorted buffers (obsolete tuples form a block).

    >>> from workbench.operators.interval.common import example_params
    >>> op = SSortCorrelation(**example_params())
    >>> _ = op.push("A", 1, 0, t_det=100.0, arrival=101.0)
    >>> op.push("B", 7, 1, t_det=104.0, arrival=105.0).ids.tolist()
    [[1, 7]]
    """

    kernel_kind: ClassVar[int] = SSORT

    def _new_buffer(self) -> SortedBuffer:
        return SortedBuffer(keep_sorted=True)
