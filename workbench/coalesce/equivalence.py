"""Value equivalence for coalescing (coalescing paper, Section 3 and Appendix B).

Two consecutive tuples of a group (in timestamp order) coalesce when their values are
equivalent.  Beyond equality the workbench offers bounded absolute or relative difference, an
increasing trend and quantised values.  Equivalence is always judged between *consecutive*
tuples, so the coalesced view depends only on the window's tuples, never on arrival order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["Equivalence"]

Kind = Literal["equal", "absolute", "relative", "increasing", "quantized"]


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
    """

    kind: Kind = "equal"
    tolerance: float = 0.0
    quantum: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("equal", "absolute", "relative", "increasing", "quantized"):
            raise ValueError(f"kind = {self.kind!r} is not a known equivalence")
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ValueError(f"tolerance = {self.tolerance!r} must be a finite number >= 0")
        if not (math.isfinite(self.quantum) and self.quantum > 0):
            raise ValueError(f"quantum = {self.quantum!r} must be a positive number")

    @property
    def transitive(self) -> bool:
        """Whether a run is fully described by one value (equality and quantisation)."""
        return self.kind in ("equal", "quantized")

    def representative(self, value: object) -> object:
        """The value a coalesced tuple reports: the quantum for ``quantized``, else the value.

        Tuples of values (several coalescing attributes) are handled element by element.

        >>> Equivalence("quantized", quantum=0.5).representative((20.3, 41.0))
        (20.0, 41.0)
        """
        if isinstance(value, tuple):
            return tuple(self.representative(v) for v in value)
        if self.kind == "quantized":
            return math.floor(value / self.quantum) * self.quantum
        return value

    def same(self, a: object, b: object) -> bool:
        """Whether a value ``b`` right after ``a`` coalesces with it (all elements, for tuples)."""
        if self.kind == "equal":
            return a == b  # tuples compare element by element already
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(self.same(x, y) for x, y in zip(a, b, strict=True))
        if self.kind == "quantized":
            return math.floor(a / self.quantum) == math.floor(b / self.quantum)
        if self.kind == "absolute":
            return abs(a - b) <= self.tolerance
        if self.kind == "relative":
            return abs(a - b) <= self.tolerance * max(abs(a), abs(b))
        return b >= a
