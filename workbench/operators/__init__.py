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
