"""Exact in-process streaming join operators: the reference semantics of the workbench.

Every operator is a :class:`~workbench.protocol_shapes.JoinOperator` of the protocol of
:mod:`workbench.protocol`.
"""

from __future__ import annotations

from workbench.operators.band import BandJoin
from workbench.operators.base import (
    Envelope,
    JoinConfig,
    JoinCounters,
    StreamSpec,
    TwoStreamJoin,
    replay,
)
from workbench.operators.interval import (
    EagerCorrelation,
    LazyCorrelation,
    LazyLookupCorrelation,
    SimpleCorrelation,
    SSortCorrelation,
)
from workbench.operators.oracle import brute_force_join, brute_force_wjoin, on_time
from workbench.operators.ptjoin import PTJoin
from workbench.operators.windows import WindowConstraints, WTuples
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiWayJoin
from workbench.protocol import BadEventError
from workbench.protocol_shapes import JoinOperator
from workbench.records import Emitted

__all__ = [
    "CORRELATIONS",
    "TIMING_JOINS",
    "BEWJoin",
    "BadEventError",
    "BandJoin",
    "EagerCorrelation",
    "Emitted",
    "Envelope",
    "FEWJoin",
    "JoinConfig",
    "JoinCounters",
    "JoinOperator",
    "LazyCorrelation",
    "LazyLookupCorrelation",
    "MultiWayJoin",
    "PTJoin",
    "SSortCorrelation",
    "SimpleCorrelation",
    "StreamSpec",
    "TwoStreamJoin",
    "WTuples",
    "WindowConstraints",
    "brute_force_join",
    "brute_force_wjoin",
    "on_time",
    "replay",
]

CORRELATIONS: dict[str, type[TwoStreamJoin]] = {
    "simple": SimpleCorrelation,
    "ssort": SSortCorrelation,
    "eager": EagerCorrelation,
    "lazy": LazyCorrelation,
    "lookup": LazyLookupCorrelation,
}
"""The interval timing correlation algorithms (interval timing paper, Algorithms 1-7), by the
name the command line and the live join take."""
TIMING_JOINS: dict[str, type[TwoStreamJoin]] = {"ptjoin": PTJoin, **CORRELATIONS}
"""Every two-stream timing join, by name: PTJoin (Section 3) and the interval correlations
(which need one-bucket templates); all decide ``P(|Xa - Xb| <= d) >= threshold``."""
