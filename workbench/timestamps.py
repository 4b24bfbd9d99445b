"""Histogram timestamps: uncertain occurrence times (PTJoin paper, Section 2.1, Definition 1).

A histogram timestamp is a list of contiguous buckets ``(I_k, p_k)``; the occurrence time is
uniformly distributed inside each bucket.  Event times are template histograms shifted to their
detection time (Example 3, Definition 4): ``H = phi + t_det - max(phi)``; a stream's
templates are a :class:`~workbench.templates.TemplateSet`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "PROB_SUM_TOLERANCE",
    "HistogramTimestamp",
    "check_faithful",
    "pack_histograms",
]

PROB_SUM_TOLERANCE = 1e-9
"""How far the bucket probabilities may sum from 1 before a histogram is rejected."""


def _as_float_vector(field: str, values: object) -> np.ndarray:
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field} must be a sequence of numbers, got {values!r}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{field} must be one-dimensional, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{field}[{k}] = {float(arr[k])!r} is not a finite number")
    return arr


@dataclass(frozen=True, eq=False)
class HistogramTimestamp:
    """An uncertain occurrence time as a histogram (PTJoin Definition 1).

    ``edges`` holds the n+1 bucket boundaries (strictly increasing), ``probs`` the n bucket
    probabilities (non-negative, summing to 1; they are renormalised to sum exactly 1).

    The template of sensor s1 in Example 3, and the event a3 it detects at time 210:

    >>> phi1 = HistogramTimestamp.from_buckets([(0, 20, 0.1), (20, 30, 0.3), (30, 40, 0.6)])
    >>> phi1.min, phi1.max, phi1.length, phi1.n_buckets
    (0.0, 40.0, 40.0, 3)
    >>> phi1.detected_at(210)
    HistogramTimestamp([(170, 190, 0.1), (190, 200, 0.3), (200, 210, 0.6)])
    >>> float(phi1.cdf(25.0))
    0.25
    """

    edges: np.ndarray
    probs: np.ndarray

    def __post_init__(self) -> None:
        edges = _as_float_vector("edges", self.edges)
        probs = _as_float_vector("probs", self.probs)
        if probs.size < 1:
            raise ValueError("probs must hold at least one bucket, got 0 buckets")
        if edges.size != probs.size + 1:
            raise ValueError(
                f"edges has {edges.size} values but probs has {probs.size} buckets; "
                f"a histogram with n buckets needs n+1 edges"
            )
        widths = np.diff(edges)
        bad = np.flatnonzero(widths <= 0)
        if bad.size:
            k = int(bad[0])
            what = "zero-length bucket" if widths[k] == 0 else "edges not strictly increasing"
            raise ValueError(
                f"edges[{k}] = {float(edges[k])!r} and edges[{k + 1}] = "
                f"{float(edges[k + 1])!r}: {what}"
            )
        neg = np.flatnonzero(probs < 0)
        if neg.size:
            k = int(neg[0])
            raise ValueError(f"probs[{k}] = {float(probs[k])!r} is negative")
        total = float(probs.sum())
        if abs(total - 1.0) > PROB_SUM_TOLERANCE:
            raise ValueError(f"probs sum to {total!r}, not 1 (tolerance {PROB_SUM_TOLERANCE:g})")
        probs = probs / total
        edges.flags.writeable = False
        probs.flags.writeable = False
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "probs", probs)

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_buckets(cls, buckets: Iterable[Sequence[float]]) -> HistogramTimestamp:
        """Build from the paper's bucket triples ``(min(I_k), max(I_k), p_k)`` (Definition 1).

        >>> HistogramTimestamp.from_buckets([(0, 10, 0.5), (10, 30, 0.5)]).edges.tolist()
        [0.0, 10.0, 30.0]
        """
        triples = [tuple(b) for b in buckets]
        if not triples:
            raise ValueError("buckets must hold at least one (lo, hi, p) triple, got none")
        for k, b in enumerate(triples):
            if len(b) != 3:
                raise ValueError(f"buckets[{k}] = {b!r} is not a (lo, hi, p) triple")
        for k in range(len(triples) - 1):
            if triples[k][1] != triples[k + 1][0]:
                raise ValueError(
                    f"buckets[{k}] ends at {triples[k][1]!r} but buckets[{k + 1}] starts at "
                    f"{triples[k + 1][0]!r}: buckets must be contiguous (max(I_k) = min(I_k+1))"
                )
        edges = [triples[0][0]] + [b[1] for b in triples]
        return cls(np.asarray(edges, dtype=np.float64), np.asarray([b[2] for b in triples]))

    @classmethod
    def uniform(cls, lo: float, hi: float) -> HistogramTimestamp:
        """A uniform interval timestamp ``[lo, hi]`` as a one-bucket histogram.

        >>> HistogramTimestamp.uniform(60, 100).buckets()
        [(60.0, 100.0, 1.0)]
        """
        return cls(np.array([lo, hi], dtype=np.float64), np.array([1.0]))

    # -- Definition 1 auxiliary functions ---------------------------------------------------
    @property
    def n_buckets(self) -> int:
        """|H|, the number of buckets."""
        return int(self.probs.size)

    @property
    def min(self) -> float:
        """min(H) = min(I_1)."""
        return float(self.edges[0])

    @property
    def max(self) -> float:
        """``max(H) = max(I_|H|)``: the last edge."""
        return float(self.edges[-1])

    @property
    def length(self) -> float:
        """len(H) = max(H) - min(H)."""
        return float(self.edges[-1] - self.edges[0])

    @property
    def widths(self) -> np.ndarray:
        """len(I_k) for every bucket."""
        return np.diff(self.edges)

    @property
    def density(self) -> np.ndarray:
        """The pdf value p_k / len(I_k) inside every bucket."""
        return self.probs / self.widths

    def buckets(self) -> list[tuple[float, float, float]]:
        """The buckets as ``(min(I_k), max(I_k), p_k)`` triples."""
        return [
            (float(lo), float(hi), float(p))
            for lo, hi, p in zip(self.edges[:-1], self.edges[1:], self.probs, strict=True)
        ]

    @classmethod
    def _from_valid(cls, edges: np.ndarray, probs: np.ndarray) -> HistogramTimestamp:
        """Wrap arrays already known valid (derived from a validated histogram)."""
        h = object.__new__(cls)
        edges.flags.writeable = False
        probs.flags.writeable = False
        object.__setattr__(h, "edges", edges)
        object.__setattr__(h, "probs", probs)
        return h

    def shift(self, x: float) -> HistogramTimestamp:
        """H + x: every bucket moved by x.

        Raises ValueError when the moved histogram cannot be represented faithfully: a bucket
        narrower than the float spacing at its new absolute time (see :func:`check_faithful`).

        >>> HistogramTimestamp.from_buckets([(0, 1e-6, .5), (1e-6, 1, .5)]).shift(1e12)
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: bucket 0 is 1e-06 ms wide, narrower than the float spacing 0.00012207 ms ...
        """
        x = float(x)
        if not np.isfinite(x):
            raise ValueError(f"shift x = {x!r} is not a finite number")
        edges = self.edges + x
        # each moved edge is rounded by at most half the float spacing at the farthest edge
        # from 0, so buckets at least twice that spacing wide pass check_faithful: it runs
        # only when the narrowest bucket is narrower
        far = max(abs(float(edges[0])), abs(float(edges[-1])))
        if not self._min_width >= 2.0 * math.ulp(far):
            check_faithful(self.widths, edges)
        return HistogramTimestamp._from_valid(edges, self.probs)

    @cached_property
    def _min_width(self) -> float:
        """The narrowest bucket's width (as :attr:`widths` computes it)."""
        return float(self.widths.min())

    def __add__(self, x: float) -> HistogramTimestamp:
        return self.shift(x)

    __radd__ = __add__

    def __sub__(self, x: float) -> HistogramTimestamp:
        return self.shift(-float(x))

    def detected_at(self, t_det: float) -> HistogramTimestamp:
        """The event timestamp ``phi + t_det - max(phi)`` of an event detected at ``t_det``."""
        return self.shift(float(t_det) - self.max)

    # -- distribution -----------------------------------------------------------------------
    def cdf(self, t: float | np.ndarray) -> np.ndarray:
        """P(X <= t), piecewise linear between the edges."""
        cum = np.concatenate(([0.0], np.cumsum(self.probs)))
        cum[-1] = 1.0
        return np.interp(t, self.edges, cum)

    def quantile(self, q: float | np.ndarray) -> np.ndarray:
        """The smallest t with P(X <= t) = q (inverse of :meth:`cdf`), for q in [0, 1]."""
        qa = np.asarray(q, dtype=np.float64)
        if np.any((qa < 0) | (qa > 1)) or not np.all(np.isfinite(qa)):
            raise ValueError(f"q = {q!r} must lie in [0, 1]")
        cum = np.concatenate(([0.0], np.cumsum(self.probs)))
        cum[-1] = 1.0
        k = np.clip(np.searchsorted(cum, qa, side="left") - 1, 0, self.n_buckets - 1)
        p = self.probs[k]
        frac = np.divide(qa - cum[k], p, out=np.zeros_like(qa), where=p > 0)
        return self.edges[k] + np.clip(frac, 0.0, 1.0) * self.widths[k]

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` independent occurrence times."""
        k = rng.choice(self.n_buckets, size=size, p=self.probs)
        return self.edges[k] + rng.random(size) * self.widths[k]

    # -- value semantics ----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HistogramTimestamp):
            return NotImplemented
        return bool(
            np.array_equal(self.edges, other.edges) and np.array_equal(self.probs, other.probs)
        )

    def __hash__(self) -> int:
        return hash((self.edges.tobytes(), self.probs.tobytes()))

    def __repr__(self) -> str:
        parts = ", ".join(f"({lo:g}, {hi:g}, {p:g})" for lo, hi, p in self.buckets())
        return f"HistogramTimestamp([{parts}])"

    def __reduce__(self) -> tuple[object, tuple[np.ndarray, np.ndarray]]:
        return (HistogramTimestamp._from_valid, (np.array(self.edges), self.probs))


def check_faithful(widths: np.ndarray, edges: np.ndarray) -> None:
    """Raise ValueError unless every bucket (exact ``widths``) is at least the float spacing
    at its absolute ``edges`` and stays a bucket once rounded there.

    Floats near time T are ``ulp(T)`` apart (1.2e-4 ms near 1e12 ms): a narrower bucket
    cannot be placed there without changing its width by 100 % or more.

    >>> check_faithful(np.array([1.0]), np.array([1e12, 1e12 + 1.0]))
    """
    spacing = np.spacing(np.maximum(np.abs(edges[:-1]), np.abs(edges[1:])))
    bad = np.flatnonzero((widths < spacing) | (np.diff(edges) <= 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"bucket {k} is {float(widths[k]):g} ms wide, narrower than the float spacing "
            f"{float(spacing[k]):g} ms at time {float(edges[k + 1]):g} ms: the histogram "
            "cannot be represented faithfully there"
        )


def pack_histograms(hists: Sequence[HistogramTimestamp]) -> tuple[np.ndarray, np.ndarray]:
    """Stack histograms into padded arrays ``edges (N, K+1)`` and ``probs (N, K)``.

    Shorter histograms are padded with zero-probability, zero-length buckets at their end
    (the last edge repeated), which every vectorised routine treats as absent.

    >>> e, p = pack_histograms([HistogramTimestamp.uniform(0, 1),
    ...                         HistogramTimestamp.from_buckets([(0, 1, .5), (1, 3, .5)])])
    >>> e.tolist(), p.tolist()
    ([[0.0, 1.0, 1.0], [0.0, 1.0, 3.0]], [[1.0, 0.0], [0.5, 0.5]])
    """
    if len(hists) == 0:
        raise ValueError("hists must hold at least one histogram, got none")
    k = max(h.n_buckets for h in hists)
    edges = np.empty((len(hists), k + 1))
    probs = np.zeros((len(hists), k))
    for row, h in enumerate(hists):
        n = h.n_buckets
        edges[row, : n + 1] = h.edges
        edges[row, n + 1 :] = h.edges[-1]
        probs[row, :n] = h.probs
    return edges, probs
