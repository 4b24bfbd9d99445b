"""The brute-force oracles: join two finite streams by exact probability, pair by pair, and
m finite streams by every window constraint, tuple by tuple (W-join).

Independent of every fast path: each pair's ``P(|Xa - Xb| <= d)`` is computed in exact
rational arithmetic (:mod:`workbench.exact`, Theorem 1 in Fractions) and compared with the
threshold exactly, so ties join and no rounding decides anything.  Slow by design."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np

from workbench.events import Events, sort_pairs
from workbench.exact import ExactHistogram, band_exact
from workbench.operators.base import StreamSpec
from workbench.operators.windows import Predicate, WindowConstraints

__all__ = ["brute_force_join", "brute_force_wjoin", "on_time"]


def on_time(events: Events, max_delay: Sequence[float]) -> np.ndarray:
    """Which events arrive within their stream's D (PTJoin Definition 6)."""
    delay = np.asarray(max_delay, dtype=np.float64)[events.stream]
    return events.arrival <= events.t_det + delay


def brute_force_join(
    events: Events,
    streams: tuple[StreamSpec, StreamSpec],
    d: float | np.ndarray,
    threshold: float | np.ndarray,
    accepted: np.ndarray | None = None,
) -> np.ndarray:
    """Every pair (a_id, b_id) of accepted events with ``P(|Xa - Xb| <= d) >= threshold``.

    ``d`` and ``threshold`` may be per-event arrays (aligned with ``events``): a pair is then
    judged by the values in force when its later event arrived.  ``accepted`` defaults to the
    on-time events.  Returns an ``(n, 2)`` array sorted by (a_id, b_id).

    >>> from workbench.templates import TemplateSet
    >>> from workbench.timestamps import HistogramTimestamp
    >>> spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, 10),)), max_delay=5)
    >>> ev = Events(np.array([0, 1, 1]), np.array([1, 7, 8]), np.zeros(3, int),
    ...             np.array([100., 110., 300.]), np.array([101., 112., 301.]))
    >>> brute_force_join(ev, (spec, spec), d=20, threshold=0.9).tolist()
    [[1, 7]]
    """
    if accepted is None:
        accepted = on_time(events, [s.max_delay for s in streams])
    rows = np.arange(len(events))
    ia = rows[(events.stream == 0) & accepted]
    ib = rows[(events.stream == 1) & accepted]
    pa, pb = (np.repeat(ia, ib.size), np.tile(ib, ia.size))
    later = np.maximum(pa, pb)
    d_pair = np.broadcast_to(np.asarray(d, dtype=np.float64), (len(events),))[later]
    t_pair = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (len(events),))[later]
    # pairs whose supports are farther apart than d (by far more than any rounding) have
    # P = 0 exactly; only the rest need rationals
    length = [np.array([t.length for t in s.templates]) for s in streams]
    t_a, t_b = events.t_det[pa], events.t_det[pb]
    len_a, len_b = length[0][events.template[pa]], length[1][events.template[pb]]
    gap = np.maximum((t_b - len_b) - t_a, (t_a - len_a) - t_b)
    margin = 1e-6 * (np.abs(t_a) + d_pair + len_a + len_b) + 1e-9
    near = np.flatnonzero(gap <= d_pair + margin)
    exact = [[ExactHistogram.of(t, -Fraction(t.max)) for t in s.templates] for s in streams]
    keep = np.zeros(pa.size, dtype=bool)
    for k in near:
        a, b = pa[k], pb[k]
        prob = band_exact(
            exact[0][events.template[a]],
            events.t_det[a],
            exact[1][events.template[b]],
            events.t_det[b],
            d_pair[k],
        )
        keep[k] = prob >= Fraction(float(t_pair[k]))
    return sort_pairs(np.stack((events.id[pa[keep]], events.id[pb[keep]]), axis=1))


def brute_force_wjoin(
    values: Sequence[Sequence[Hashable]],
    timestamps: Sequence[Sequence[float]],
    ids: Sequence[Sequence[int]],
    constraints: WindowConstraints,
    predicate: Predicate = "equal",
) -> set[tuple[int, ...]]:
    """Every m-tuple (one tuple per stream) meeting all window constraints and the predicate.

    Checks the original constraints pair by pair (no periods, no shortest paths).

    >>> brute_force_wjoin([[1, 2], [1]], [[0.0, 1.0], [4.0]], [[10, 11], [20]],
    ...                   WindowConstraints.uniform(2, 5.0))
    {(10, 20)}
    """
    m = constraints.m
    w = constraints.windows.tolist()
    equal = predicate == "equal"
    out: set[tuple[int, ...]] = set()
    chosen: list[int] = []

    def extend(s: int) -> None:
        if s == m:
            vals = tuple(values[r][chosen[r]] for r in range(m))
            ok = len(set(vals)) == 1 if equal else predicate(vals)
            if ok:
                out.add(tuple(ids[r][chosen[r]] for r in range(m)))
            return
        prune = equal and s > 0
        first = values[0][chosen[0]] if prune else None
        for k in range(len(values[s])):
            # equality: a value the first one's set would not merge with cannot end equal
            if prune and len({first, values[s][k]}) != 1:
                continue
            t = timestamps[s][k]
            if all(abs(t - timestamps[r][chosen[r]]) <= w[r][s] for r in range(s)):
                chosen.append(k)
                extend(s + 1)
                chosen.pop()

    extend(0)
    return out
