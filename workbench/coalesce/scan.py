"""Coalescing a window's raw tuples by one scan in key order (coalescing Section 2.3, Alg. 1).

A raw tuple (timestamp ts, group, value) becomes a temporal tuple valid over [ts, te): te is
the timestamp of the group's next tuple, or ts itself while the tuple is the group's latest.
Coalescing merges a group's maximal runs of value-equivalent tuples (:class:`Coalesced`).
:func:`coalesce_sorted` is the lazy extent's scan; :func:`recoalesce` coalesces from scratch,
the oracle both extents are tested against.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable

from workbench.coalesce.equivalence import Equivalence
from workbench.records import Coalesced

__all__ = ["Key", "coalesce_sorted", "recoalesce", "uncoalesced"]

Key = tuple[float, int]
"""A raw tuple's place in the window: (ts, arrival number)."""


def coalesce_sorted(
    rows: Iterable[tuple[Key, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """Coalesce raw tuples ``((ts, seq), group, value)`` given in key order (the scan of a lazily
    coalesced extent, Algorithm 1).

    A coalesced tuple reports ``equivalence.representative`` of its first raw value.

    >>> rows = [((1.0, 0), "r1", 81), ((2.0, 1), "r1", 81), ((3.0, 2), "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in coalesce_sorted(rows, Equivalence())]
    [(1.0, 3.0, 81, 2), (3.0, 3.0, 80, 1)]
    """
    # per group: [first key, last ts, first value, count, last value]
    open_runs: dict[Hashable, list] = {}
    out: list[Coalesced] = []
    rep = equivalence.representative
    for key, group, value in rows:
        run = open_runs.get(group)
        if run is not None and equivalence.same(run[4], value):
            run[1], run[3], run[4] = key[0], run[3] + 1, value
            continue
        if run is not None:
            out.append(Coalesced(run[0][0], run[0][1], key[0], group, rep(run[2]), run[3]))
        open_runs[group] = [key, key[0], value, 1, value]
    for group, run in open_runs.items():
        out.append(Coalesced(run[0][0], run[0][1], run[1], group, rep(run[2]), run[3]))
    out.sort()
    return out


def uncoalesced(raw: list[tuple[float, int, object, object]]) -> list[Coalesced]:
    """Raw window tuples ``(ts, seq, group, value)`` as temporal tuples, one per reading.

    A tuple is valid until its group's next tuple (Section 2.3), coalescing nothing (what a
    lazy extent stores).

    >>> [(c.ts, c.te) for c in uncoalesced([(1.0, 0, "r1", 81), (2.0, 1, "r1", 81)])]
    [(1.0, 2.0), (2.0, 2.0)]
    """
    by_group: dict[object, list[tuple[float, int, object]]] = defaultdict(list)
    for ts, seq, group, value in raw:
        by_group[group].append((ts, seq, value))
    out = []
    for group, rows in by_group.items():
        for k, (ts, seq, value) in enumerate(rows):
            te = rows[k + 1][0] if k + 1 < len(rows) else ts
            out.append(Coalesced(ts, seq, te, group, value, 1))
    out.sort()
    return out


def recoalesce(
    rows: Iterable[tuple[float, int, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """The oracle: coalesce raw tuples ``(ts, seq, group, value)`` from scratch.

    >>> rows = [(1, 0, "r1", 81), (2, 1, "r1", 81), (3, 2, "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in recoalesce(rows, Equivalence())]
    [(1, 3, 81, 2), (3, 3, 80, 1)]
    """
    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    return coalesce_sorted((((ts, seq), g, v) for ts, seq, g, v in ordered), equivalence)
