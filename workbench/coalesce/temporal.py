"""Temporal functions and predicates on half-open intervals [ts, te) (coalescing paper,
Sections 1 and 5; Allen's interval relations)."""

from __future__ import annotations

__all__ = ["AFTER", "BEFORE", "CONTAINS", "INTERSECT", "MEETS", "OVERLAPS", "VALID", "duration"]

Interval = tuple[float, float]


def VALID(tuple_: object) -> Interval:  # noqa: N802  (the paper's name)
    """The valid-time interval [ts, te) of a temporal tuple.

    >>> from collections import namedtuple
    >>> VALID(namedtuple("T", "ts te")(1.0, 4.0))
    (1.0, 4.0)
    """
    return (tuple_.ts, tuple_.te)


def INTERSECT(a: Interval, b: Interval) -> Interval | None:  # noqa: N802
    """The common part of two intervals, or None.

    >>> INTERSECT((0, 10), (5, 20)), INTERSECT((0, 1), (2, 3))
    ((5, 10), None)
    """
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo < hi else None


def OVERLAPS(a: Interval, b: Interval) -> bool:  # noqa: N802
    """a and b share a time point: a.ts < b.te and b.ts < a.te.

    >>> OVERLAPS((0, 10), (9, 12)), OVERLAPS((0, 10), (10, 12))
    (True, False)
    """
    return a[0] < b[1] and b[0] < a[1]


def CONTAINS(a: Interval, b: Interval) -> bool:  # noqa: N802
    """b lies within a.

    >>> CONTAINS((0, 10), (2, 10)), CONTAINS((0, 10), (2, 11))
    (True, False)
    """
    return a[0] <= b[0] and b[1] <= a[1]


def BEFORE(a: Interval, b: Interval) -> bool:  # noqa: N802
    """a ends strictly before b starts (a gap between them).

    >>> BEFORE((0, 1), (2, 3)), BEFORE((0, 2), (2, 3))
    (True, False)
    """
    return a[1] < b[0]


def AFTER(a: Interval, b: Interval) -> bool:  # noqa: N802
    """a starts strictly after b ends.

    >>> AFTER((5, 6), (0, 1))
    True
    """
    return BEFORE(b, a)


def MEETS(a: Interval, b: Interval) -> bool:  # noqa: N802
    """a ends exactly where b starts.

    >>> MEETS((0, 2), (2, 3))
    True
    """
    return a[1] == b[0]


def duration(a: Interval) -> float:
    """te - ts.

    >>> duration((3.0, 7.5))
    4.5
    """
    return a[1] - a[0]
