"""Temporal coalescing of window extents (coalescing paper): eager and lazy extents (each an
:class:`~workbench.protocol_shapes.ExtentOperator`; the eager one by two mechanisms, ours and
the paper's array, :data:`Mechanism`), value equivalence, temporal functions and predicates."""

from __future__ import annotations

from workbench.coalesce.adaptive import AdaptiveCoalescing, Query
from workbench.coalesce.array_extent import ArrayExtent
from workbench.coalesce.cost import AtomicCosts, Dcq, Weights, select
from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.extent import EagerExtent
from workbench.coalesce.lazy import LazyExtent
from workbench.coalesce.scan import recoalesce
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
from workbench.coalesce.window import (
    ExtentConfig,
    ExtentCounters,
    Mechanism,
    Readings,
    Window,
)
from workbench.protocol_shapes import ExtentOperator
from workbench.records import Coalesced

__all__ = [
    "AFTER",
    "BEFORE",
    "CONTAINS",
    "INTERSECT",
    "MEETS",
    "OVERLAPS",
    "VALID",
    "AdaptiveCoalescing",
    "ArrayExtent",
    "AtomicCosts",
    "Coalesced",
    "Dcq",
    "EagerExtent",
    "Equivalence",
    "ExtentConfig",
    "ExtentCounters",
    "ExtentOperator",
    "LazyExtent",
    "Mechanism",
    "Query",
    "Readings",
    "Weights",
    "Window",
    "duration",
    "recoalesce",
    "select",
]
