"""Value equivalence for coalescing (coalescing paper, Section 3 and Appendix B).

Two consecutive tuples of a group (in timestamp order) coalesce when their values are
equivalent.  Beyond equality the workbench offers bounded absolute or relative difference, an
increasing trend and quantised values.  Equivalence is always judged between *consecutive*
tuples, so the coalesced view depends only on the window's tuples, never on arrival order.

``KINDS`` is the one table of what each kind means.  Its rules are written once over an
:class:`Arithmetic` (``abs``, ``floor``, ``maximum``), so the same rule judges Python numbers
(:data:`PYTHON`), NumPy arrays element by element (:data:`NUMPY`) and Spark columns
(:mod:`workbench.spark.queries.coalesce` passes ``pyspark.sql.functions``), with the same IEEE
double arithmetic everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["KINDS", "NUMPY", "PYTHON", "Arithmetic", "Equivalence", "Kind", "KindRule"]

Kind = Literal["equal", "absolute", "relative", "increasing", "quantized"]


@dataclass(frozen=True)
class Arithmetic:
    """The operations an equivalence needs, for one kind of operand (numbers, arrays, columns).

    >>> NUMPY.maximum(np.array([1.0, 5.0]), np.array([3.0, 2.0]))
    array([3., 5.])
    """

    abs: Callable[[Any], Any]
    floor: Callable[[Any], Any]
    maximum: Callable[[Any, Any], Any]


PYTHON = Arithmetic(abs, math.floor, max)
"""Python numbers (the in-process extents)."""
NUMPY = Arithmetic(np.abs, np.floor, np.maximum)
"""NumPy arrays, element by element (the Spark state function)."""


@dataclass(frozen=True)
class KindRule:
    """One kind: when ``b`` right after ``a`` coalesces, whether a run is described by one
    value, and whether the representative is the quantum."""

    same: Callable[[Equivalence, Any, Any, Arithmetic], Any]
    transitive: bool = False
    quantizes: bool = False


class _Kinds(dict[str, KindRule]):
    """The table of kinds: looking up an unknown kind raises a ValueError naming the known ones."""

    def __missing__(self, kind: str) -> KindRule:
        raise ValueError(f"kind = {kind!r} is not a known equivalence; known: {', '.join(self)}")


KINDS = _Kinds(
    {
        "equal": KindRule(lambda eq, a, b, op: a == b, transitive=True),
        "absolute": KindRule(lambda eq, a, b, op: op.abs(a - b) <= eq.tolerance),
        "relative": KindRule(
            lambda eq, a, b, op: op.abs(a - b) <= eq.tolerance * op.maximum(op.abs(a), op.abs(b))
        ),
        "increasing": KindRule(lambda eq, a, b, op: b >= a),
        "quantized": KindRule(
            lambda eq, a, b, op: op.floor(a / eq.quantum) == op.floor(b / eq.quantum),
            transitive=True,
            quantizes=True,
        ),
    }
)
"""Every equivalence kind and its rule (the one place that says what a kind means)."""


@dataclass(frozen=True)
class Equivalence:
    """When two consecutive values coalesce.

    - ``equal``: a == b
    - ``absolute``: |a - b| <= tolerance
    - ``relative``: |a - b| <= tolerance * max(|a|, |b|)
    - ``increasing``: b >= a (runs are maximal non-decreasing stretches)
    - ``quantized``: floor(a / quantum) == floor(b / quantum)

    >>> Equivalence("quantized", quantum=0.5).same(20.1, 20.4), Equivalence().same(1, 2)
    (True, False)
    >>> Equivalence("increasing").same(np.array([1.0, 2.0]), np.array([3.0, 1.0]), NUMPY)
    array([ True, False])
    """

    kind: Kind = "equal"
    tolerance: float = 0.0
    quantum: float = 1.0

    def __post_init__(self) -> None:
        KINDS[self.kind]  # a ValueError for an unknown kind
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ValueError(f"tolerance = {self.tolerance!r} must be a finite number >= 0")
        if not (math.isfinite(self.quantum) and self.quantum > 0):
            raise ValueError(f"quantum = {self.quantum!r} must be a positive number")

    @property
    def transitive(self) -> bool:
        """Whether a run is fully described by one value (equality and quantisation)."""
        return KINDS[self.kind].transitive

    def representative(self, value: Any, op: Arithmetic = PYTHON) -> Any:
        """The value a coalesced tuple reports: the quantum for ``quantized``, else the value.

        Tuples of values (several coalescing attributes) are handled element by element;
        ``op`` computes on arrays or columns instead of numbers.

        >>> Equivalence("quantized", quantum=0.5).representative((20.3, 41.0))
        (20.0, 41.0)
        """
        if isinstance(value, tuple):
            return tuple(self.representative(v, op) for v in value)
        if KINDS[self.kind].quantizes:
            return op.floor(value / self.quantum) * self.quantum
        return value

    def same(self, a: Any, b: Any, op: Arithmetic = PYTHON) -> Any:
        """Whether a value ``b`` right after ``a`` coalesces with it (all elements, for tuples);
        ``op`` judges arrays or columns element-wise instead of numbers."""
        if isinstance(a, tuple) and isinstance(b, tuple) and self.kind != "equal":
            return len(a) == len(b) and all(self.same(x, y, op) for x, y in zip(a, b, strict=True))
        return KINDS[self.kind].same(self, a, b, op)
