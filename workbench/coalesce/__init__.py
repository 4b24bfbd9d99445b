"""Temporal coalescing of window extents (coalescing paper): eager and lazy extents, value
equivalence, temporal functions and predicates."""

from __future__ import annotations

from workbench.coalesce.adaptive import AdaptiveCoalescing, Query
from workbench.coalesce.cost import AtomicCosts, Dcq, Weights, select
from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.extent import (
    Coalesced,
    EagerExtent,
    ExtentCounters,
    LazyExtent,
    Window,
    recoalesce,
)
from workbench.coalesce.temporal import (
    AFTER,
    BEFORE,
    CONTAINS,
    INTERSECT,
    MEETS,
    OVERLAPS,
    VALID,
    duration,
)

__all__ = [
    "AFTER",
    "BEFORE",
    "CONTAINS",
    "INTERSECT",
    "MEETS",
    "OVERLAPS",
    "VALID",
    "AdaptiveCoalescing",
    "AtomicCosts",
    "Coalesced",
    "Dcq",
    "EagerExtent",
    "Equivalence",
    "ExtentCounters",
    "LazyExtent",
    "Query",
    "Weights",
    "Window",
    "duration",
    "recoalesce",
    "select",
]
