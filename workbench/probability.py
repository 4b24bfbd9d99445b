"""Exact probabilities between histogram timestamps (PTJoin paper, Section 2.2).

``ge(Hi, Hj) = P(Xi >= Xj)`` (Definition 2) is computed two independent ways: through the
adjusted histograms of Definition 3 and Theorem 1 (Eq. 3), and through the bucket-pair formulas
of Lemma 1 summed as in Eq. 2.  The latter is vectorised over many pairs at once.  The join
condition ``jc(d, delta)`` needs the band probability ``P(|Xi - Xj| <= d)``, which for any
``d >= 0`` is ``ge(Hj + d, Hi) + ge(Hi + d, Hj) - 1`` (the two one-sided events cover all
outcomes): :func:`band_from_ge` is that identity's one float home (its rational twin is
``workbench.exact``'s ``band_exact`` / ``band_prob_exact``).  All timestamps are assumed
independent, as in the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp, pack_histograms

__all__ = [
    "adjusted_histograms",
    "band_batch",
    "band_from_ge",
    "band_prob",
    "band_prob_many",
    "ge",
    "ge_batch",
    "ge_lemma1",
    "ge_theorem1",
    "prob_ge",
    "prob_ge_many",
    "satisfaction_grid",
]


def adjusted_histograms(
    hi: HistogramTimestamp, hj: HistogramTimestamp
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The adjusted histograms of Hi and Hj (Definition 3) on their merged time points.

    Returns ``(points, p_i, p_j)``: the merged time points t_1 < ... < t_{l+1} and the
    probability that each variable falls into each interval ``[t_k, t_{k+1}]``.

    >>> a = HistogramTimestamp.from_buckets([(0, 10, .5), (10, 20, .5)])
    >>> pts, pa, pb = adjusted_histograms(a, HistogramTimestamp.uniform(5, 15))
    >>> pts.tolist(), pa.tolist(), pb.tolist()
    ([0.0, 5.0, 10.0, 15.0, 20.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.5, 0.0])
    """
    points = np.union1d(hi.edges, hj.edges)
    return points, np.diff(hi.cdf(points)), np.diff(hj.cdf(points))


def ge_theorem1(hi: HistogramTimestamp, hj: HistogramTimestamp) -> float:
    """ge(Hi, Hj) = P(Xi >= Xj) by the adjusted histograms and Theorem 1 (Eq. 3).

    Example 4's first figure, ``prob(H3 - 90 >= H2)``:

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, .1), (20, 30, .3), (30, 40, .6)])
    >>> phi2 = HistogramTimestamp.from_buckets([(0, 10, .15), (10, 20, .3), (20, 30, .4),
    ...                                         (30, 40, .15)])
    >>> round(ge_theorem1(phi1.detected_at(210) - 90, phi2.detected_at(110)), 3)
    0.925
    """
    # shift invariance of ge: move both to a common origin so large clock values lose no digits
    ref = hj.max
    _, p_i, p_j = adjusted_histograms(hi - ref, hj - ref)
    below = np.cumsum(p_j) - p_j  # sum over v < u of p~_jv
    return float(np.clip(np.dot(p_i, below) + 0.5 * np.dot(p_i, p_j), 0.0, 1.0))


def ge_batch(
    edges_i: np.ndarray, probs_i: np.ndarray, edges_j: np.ndarray, probs_j: np.ndarray
) -> np.ndarray:
    """ge for many pairs at once, by the bucket-pair formulas of Lemma 1 summed as in Eq. 2.

    ``edges_i (N, n+1)``, ``probs_i (N, n)``, ``edges_j (N, m+1)``, ``probs_j (N, m)`` are
    padded arrays as made by :func:`~workbench.timestamps.pack_histograms` (leading dimensions
    broadcast).  Returns ``P(Xi >= Xj)`` for every pair, shape ``(N,)``.

    >>> ge_batch(np.array([[0., 10.], [0., 10.]]), np.array([[1.], [1.]]),
    ...          np.array([[0., 10.], [10., 20.]]), np.array([[1.], [1.]])).tolist()
    [0.5, 0.0]
    """
    edges_j = np.asarray(edges_j, dtype=np.float64)
    # common origin per pair: Lemma 1's differences then never cancel large clock values
    ref = edges_j[..., -1:]
    ei = np.asarray(edges_i, dtype=np.float64) - ref
    ej = np.asarray(edges_j, dtype=np.float64) - ref
    i1, i2 = ei[..., :-1, None], ei[..., 1:, None]
    j1, j2 = ej[..., None, :-1], ej[..., None, 1:]
    weight = np.asarray(probs_i)[..., :, None] * np.asarray(probs_j)[..., None, :]
    len_i = i2 - i1
    len_j = j2 - j1
    # padding buckets have zero length and zero weight: any finite value will do for them
    safe_li = np.where(len_i > 0, len_i, 1.0)
    safe_lj = np.where(len_j > 0, len_j, 1.0)
    cases = [
        i2 <= j1,  # (1) Ii entirely before Ij
        i1 >= j2,  # (2) Ii entirely after Ij
        (i2 > j1) & (i2 <= j2) & (i1 < j1),  # (3) Ii overlaps the start of Ij
        (i2 >= j2) & (i1 < j1),  # (4) Ii covers Ij
        (i2 > j2) & (i1 >= j1) & (i1 < j2),  # (5) Ii overlaps the end of Ij
    ]
    values = [
        np.zeros_like(weight),
        np.ones_like(weight),
        (i2 - j1) ** 2 / (2 * safe_li * safe_lj),
        (2 * i2 - j1 - j2) / (2 * safe_li),
        1 - (j2 - i1) ** 2 / (2 * safe_li * safe_lj),
    ]
    otherwise = (i2 - 2 * j1 + i1) / (2 * safe_lj)  # (6) Ij covers Ii
    conditional = np.select(cases, values, default=otherwise)
    return np.clip((weight * conditional).sum(axis=(-2, -1)), 0.0, 1.0)


def ge_lemma1(hi: HistogramTimestamp, hj: HistogramTimestamp) -> float:
    """ge(Hi, Hj) = P(Xi >= Xj) by the bucket-pair formulas of Lemma 1 (Eq. 2).

    >>> round(ge_lemma1(HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(5, 15)), 6)
    0.125
    """
    return float(ge_batch(hi.edges[None], hi.probs[None], hj.edges[None], hj.probs[None])[0])


def ge(
    hi: HistogramTimestamp,
    hj: HistogramTimestamp,
    method: Literal["theorem1", "lemma1"] = "theorem1",
) -> float:
    """ge(Hi, Hj) = P(Xi >= Xj) (Definition 2), by Theorem 1 or by Lemma 1.

    >>> a, b = HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(5, 15)
    >>> ge(a, b), ge(a, b, method="lemma1")
    (0.125, 0.125)
    """
    if method == "theorem1":
        return ge_theorem1(hi, hj)
    if method == "lemma1":
        return ge_lemma1(hi, hj)
    raise ValueError(f"method = {method!r} must be 'theorem1' or 'lemma1'")


def prob_ge(hi: HistogramTimestamp, hj: HistogramTimestamp, d: float = 0.0) -> float:
    """prob(Hi + d >= Hj): the satisfaction probability of the PTC ``Xi + d >= Xj`` (Def. 7).

    >>> prob_ge(HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(0, 10), d=10)
    1.0
    """
    return ge_theorem1(hi + d, hj)


def band_from_ge(ge_ji: float | np.ndarray, ge_ij: float | np.ndarray) -> float | np.ndarray:
    """P(|Xi - Xj| <= d) from ``ge(Hj + d, Hi)`` and ``ge(Hi + d, Hj)``: their sum minus 1,
    clipped to [0, 1] (Section 2.2; the rational twin is ``workbench.exact.band_exact``).

    >>> float(band_from_ge(0.875, 0.875)), band_from_ge(np.array([.5, 1.]), np.array([.4, 1.]))
    (0.75, array([0., 1.]))
    """
    return np.clip(ge_ji + ge_ij - 1.0, 0.0, 1.0)


def band_prob(hi: HistogramTimestamp, hj: HistogramTimestamp, d: float) -> float:
    """P(|Xi - Xj| <= d) for any d >= 0: the probability in the join condition jc(d, delta).

    Equals ``ge(Hj + d, Hi) + ge(Hi + d, Hj) - 1`` (Section 3; Lemma 2 is its special case).

    >>> band_prob(HistogramTimestamp.uniform(0, 10), HistogramTimestamp.uniform(0, 10), d=5)
    0.75
    """
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative number")
    return float(band_from_ge(ge_theorem1(hj + d, hi), ge_theorem1(hi + d, hj)))


def band_batch(
    edges_i: np.ndarray,
    probs_i: np.ndarray,
    edges_j: np.ndarray,
    probs_j: np.ndarray,
    d: float | np.ndarray,
) -> np.ndarray:
    """P(|Xi - Xj| <= d) for many pairs of padded histograms, by :func:`ge_batch` (Lemma 1).

    Arguments as for :func:`ge_batch` (leading dimensions broadcast); ``d >= 0`` is a scalar
    or one per pair (shaped like the leading dimensions).

    >>> band_batch(np.array([[0., 10.], [0., 10.]]), np.array([[1.], [1.]]),
    ...            np.array([[0., 10.], [20., 30.]]), np.array([[1.], [1.]]), 5.0).tolist()
    [0.75, 0.0]
    """
    shift = np.asarray(d, dtype=np.float64)[..., None]
    if np.any(~(shift >= 0)):
        raise ValueError(f"d = {d!r} must be non-negative for every pair")
    return band_from_ge(
        ge_batch(edges_j + shift, probs_j, edges_i, probs_i),
        ge_batch(edges_i + shift, probs_i, edges_j, probs_j),
    )


def _packed_pair(
    his: Sequence[HistogramTimestamp], hjs: Sequence[HistogramTimestamp]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if len(his) != len(hjs):
        raise ValueError(f"his has {len(his)} histograms but hjs has {len(hjs)}; pairs need both")
    return (*pack_histograms(his), *pack_histograms(hjs))


def prob_ge_many(
    his: Sequence[HistogramTimestamp],
    hjs: Sequence[HistogramTimestamp],
    d: float | np.ndarray = 0.0,
) -> np.ndarray:
    """prob(Hi + d >= Hj) for many pairs (vectorised Lemma 1); ``d`` scalar or one per pair.

    >>> u = HistogramTimestamp.uniform
    >>> prob_ge_many([u(0, 10), u(0, 10)], [u(0, 10), u(20, 30)], d=5).tolist()
    [0.875, 0.0]
    """
    ei, pi, ej, pj = _packed_pair(his, hjs)
    shift = np.broadcast_to(np.asarray(d, dtype=np.float64), (len(his),))
    return ge_batch(ei + shift[:, None], pi, ej, pj)


def band_prob_many(
    his: Sequence[HistogramTimestamp],
    hjs: Sequence[HistogramTimestamp],
    d: float | np.ndarray,
) -> np.ndarray:
    """P(|Xi - Xj| <= d) for many pairs (vectorised); ``d >= 0`` scalar or one per pair.

    >>> u = HistogramTimestamp.uniform
    >>> band_prob_many([u(0, 10), u(0, 10)], [u(0, 10), u(20, 30)], d=5).tolist()
    [0.75, 0.0]
    """
    return band_batch(*_packed_pair(his, hjs), d)


def satisfaction_grid(
    hi: HistogramTimestamp, partners: TemplateSet, d: float, max_times: np.ndarray
) -> np.ndarray:
    """P(|Xi - Xj| <= d) for every partner template (rows) at every max(H_j) (columns).

    One vectorised call of the Lemma 1 formulas (``band_batch``), as ``band_prob_many`` does
    pair by pair: the partner's edges are shifted to each max time by broadcasting.  The grid
    is computed once per distinct input and shared read-only (every dashboard session opens
    on the same templates and parameters).

    >>> u = HistogramTimestamp.uniform
    >>> satisfaction_grid(u(0, 10), TemplateSet("B", (u(0, 10),)), 5.0, np.array([10.0, 30.0]))
    array([[0.75, 0.  ]])
    """
    xs = np.ascontiguousarray(max_times, dtype=np.float64)
    edges_b, probs_b = partners.packed()  # (V, m+1), (V, m)
    return _grid(
        hi.edges.tobytes(),
        hi.probs.tobytes(),
        edges_b.tobytes(),
        probs_b.tobytes(),
        probs_b.shape,
        float(d),
        xs.tobytes(),
    )


@lru_cache(maxsize=32)
def _grid(
    edges_i: bytes,
    probs_i: bytes,
    edges_b: bytes,
    probs_b: bytes,
    shape: tuple[int, int],
    d: float,
    xs: bytes,
) -> np.ndarray:
    """:func:`satisfaction_grid` on its inputs' bytes (hashable: the cache's key)."""
    ei0, pi0 = np.frombuffer(edges_i), np.frombuffer(probs_i)
    eb = np.frombuffer(edges_b).reshape(shape[0], shape[1] + 1)
    pb = np.frombuffer(probs_b).reshape(shape)
    x = np.frombuffer(xs)
    shift = x[None, :] - eb[:, -1][:, None]  # (V, X): the last edge is each template's max
    ej = eb[:, None, :] + shift[:, :, None]  # (V, X, m+1)
    pj = np.broadcast_to(pb[:, None, :], (*shift.shape, pb.shape[1]))
    ei = np.broadcast_to(ei0, (*shift.shape, ei0.size))
    pi = np.broadcast_to(pi0, (*shift.shape, pi0.size))
    out = band_batch(ei, pi, ej, pj, d)
    out.flags.writeable = False
    return out
