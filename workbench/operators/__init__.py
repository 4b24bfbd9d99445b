"""Exact in-process streaming join operators: the reference semantics of the workbench."""

from __future__ import annotations

from workbench.operators.base import (
    BadEventError,
    Counters,
    Envelope,
    Matches,
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
from workbench.operators.oracle import brute_force_join, on_time
from workbench.operators.ptjoin import BandJoin, PTJoin
from workbench.operators.windows import WindowConstraints
from workbench.operators.wjoin import BEWJoin, FEWJoin, MultiMatches, brute_force_wjoin

__all__ = [
    "BEWJoin",
    "BadEventError",
    "FEWJoin",
    "MultiMatches",
    "WindowConstraints",
    "brute_force_wjoin",
    "BandJoin",
    "PTJoin",
    "brute_force_join",
    "on_time",
    "Counters",
    "EagerCorrelation",
    "Envelope",
    "LazyCorrelation",
    "LazyLookupCorrelation",
    "Matches",
    "SSortCorrelation",
    "SimpleCorrelation",
    "StreamSpec",
    "TwoStreamJoin",
    "replay",
]
