"""Certified decisions of jc(d, delta): a float fast path with a proven error bound, and exact
rationals for the pairs it cannot settle (PTJoin Section 2.2, Lemma 1 / Eq. 1; DESIGN's
exactness contract).

A pair (a, b) joins iff ``P(|Xa - Xb| <= d) >= delta``.  :class:`BandDecider` evaluates the
probability in floating point in *local coordinates*: every template moved so that its max is
0, the events placed relative to ``t_b`` (one rounded difference ``t_a - t_b``), so absolute
times never enter a difference.  The evaluation is Eq. 1 in closed form
(:func:`workbench.kernels.band.ge_walk`, the one float implementation, compiled, one pair at a
time; the PTJoin kernels call it too), integrating over A's template, and again over B's for
the pairs it cannot settle where B's template has the smaller sum of bucket densities ``S =
sum_k p_k / len(I_k)`` (``ge(X, Y) = 1 - ge(Y, X)`` for continuous X, Y): the bound below
shrinks with S.  Where the computed edge ranges of the two templates do not overlap, a ge is
returned as its exact value on the computed coordinates (1 or 0), so only step (i) of the
proof below applies to it.

**Error bound.**  With ``u = 2**-53``, ``K`` the larger bucket count, ``M = len(phi_a) +
len(phi_b) + |t_a - t_b| + d`` the largest coordinate and ``S`` the integrated template's
density sum, the float band probability is within

    B = 4 * ((40 K + 232) * u * M * S + (4 K + 11) * u)

of the exact one, provided each of that template's buckets is wider than ``16 u M``
(otherwise ``B = inf``).  Proof sketch: (i) every computed coordinate is within
``delta_c = 4 u M`` of the exact one; moving every edge by at most delta_c moves each
occurrence time by at most delta_c (map each bucket linearly onto its moved copy), so a ge
changes by at most ``P(|X - Y| <= 2 delta_c) <= 4 delta_c min(sup f_X, sup f_Y) <= 16 u M S``;
(ii) on the rounded inputs, each value ``G(x) = integral of F_Y`` is a sum of at most
``K + 4`` non-negative terms bounded by ``2M``, so its rounding error is at most
``(5K + 25) u M``, and dividing a difference of two G values by a bucket width ``w >= w_true
/ 2`` costs ``2 (5K + 25) u M * 2 / w_true`` per unit of that bucket's probability; (iii) the
final sums add ``(2K + 4) u`` per ge and ``3 u`` for the band.  Summing two ge's gives the
bracket; the factor 4 is slack for the crude constants.  ``tests/test_exactness.py`` checks
the bound against the rational value on adversarial templates.

Pairs with ``|P - delta| <= B`` are decided by :func:`workbench.exact.band_exact` (Lemma 1's
quantities in rationals by Theorem 1), so every decision equals the mathematics; ties join.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from workbench.exact import ExactHistogram, band_exact
from workbench.kernels.band import band_many, ge_bound_many, ge_many, tables_many
from workbench.templates import TemplateSet

__all__ = [
    "UNIT_ROUNDOFF",
    "BandDecider",
    "LocalTemplates",
    "ge_bound",
    "ge_shift",
    "scratch",
]

UNIT_ROUNDOFF = 2.0**-53
"""u: the relative rounding error of one IEEE double operation."""


@dataclass(frozen=True, eq=False)
class LocalTemplates:
    """A stream's templates in local coordinates (each max moved to 0) with the quantities the
    error bound needs and each template's CDF tables
    (:func:`~workbench.kernels.band.cdf_tables`); the exact rational templates are built on
    first use.

    >>> from workbench.timestamps import HistogramTimestamp
    >>> lt = LocalTemplates.of(TemplateSet("A", (HistogramTimestamp.from_buckets(
    ...     [(0, 2, .5), (2, 10, .5)]),)))
    >>> lt.edges.tolist(), round(float(lt.density_sum[0]), 9)   # 0.5 / 2 + 0.5 / 8
    ([[-10.0, -8.0, 0.0]], 0.3125)
    """

    templates: TemplateSet
    edges: np.ndarray = field(repr=False)
    probs: np.ndarray = field(repr=False)
    buckets: np.ndarray = field(repr=False)
    length: np.ndarray = field(repr=False)
    density_sum: np.ndarray = field(repr=False)
    width_min: np.ndarray = field(repr=False)
    tables: np.ndarray = field(repr=False)

    @classmethod
    def of(cls, templates: TemplateSet) -> LocalTemplates:
        """Pack ``templates`` (padded as :func:`~workbench.timestamps.pack_histograms`)."""
        edges, probs = templates.packed()
        widths = np.diff(edges, axis=1)
        live = probs > 0
        dens = np.divide(probs, widths, out=np.zeros_like(probs), where=live)
        width_min = np.where(live, widths, np.inf).min(axis=1)
        length = np.array([t.length for t in templates])
        local = edges - templates.max_times[:, None]
        buckets = np.array([t.n_buckets for t in templates], dtype=np.int64)
        tables = np.zeros((3, *local.shape))
        tables_many(local, probs, buckets, tables)
        return cls(
            templates,
            local,
            probs,
            buckets,
            # rounded up a little so the bound's quantities are never understated
            length * (1 + 4 * UNIT_ROUNDOFF),
            dens.sum(axis=1) * (1 + 8 * UNIT_ROUNDOFF * probs.shape[1]),
            width_min * (1 - 4 * UNIT_ROUNDOFF),
            tables,
        )

    @property
    def n_buckets(self) -> int:
        """K, the padded bucket count."""
        return int(self.probs.shape[1])

    @property
    def pack(self) -> tuple[np.ndarray, ...]:
        """``(edges, probs, buckets, bound terms, tables)``: what the compiled kernels
        (:mod:`workbench.kernels.band`) read; the bound terms stack length, density_sum and
        width_min."""
        cache = self.__dict__
        if "_pack" not in cache:
            terms = np.stack((self.length, self.density_sum, self.width_min))
            cache["_pack"] = (self.edges, self.probs, self.buckets, terms, self.tables)
        return cache["_pack"]

    def exact(self, k: int) -> ExactHistogram:
        """Template k moved exactly so that its max is 0, as rationals."""
        cache = self.__dict__.setdefault("_exact", {})
        if k not in cache:
            t = self.templates[k]
            cache[k] = ExactHistogram.of(t, -Fraction(t.max))
        return cache[k]


class BandDecider:
    """Certified ``P(|Xa - Xb| <= d) >= delta`` for pairs of events of two template sets.

    >>> from workbench.timestamps import HistogramTimestamp
    >>> u = TemplateSet("S", (HistogramTimestamp.uniform(0, 10),))
    >>> dec = BandDecider(u, u)
    >>> dec.decide(np.array([0, 0]), np.array([1e12, 1e12]), np.array([0, 0]),
    ...            np.array([1e12 + 5, 1e12 + 6]), d=5.0, delta=0.5).tolist()  # P = 1/2, 0.405
    [True, False]
    >>> dec.exact_evaluations   # 1/2 lies on the threshold: decided in rationals
    1
    """

    def __init__(self, templates_a: TemplateSet, templates_b: TemplateSet) -> None:
        self.local = (LocalTemplates.of(templates_a), LocalTemplates.of(templates_b))
        self.exact_evaluations = 0

    def probability(
        self,
        u: np.ndarray,
        t_a: np.ndarray,
        v: np.ndarray,
        t_b: np.ndarray,
        d: float,
        over_a: bool | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Float ``P(|Xa - Xb| <= d)`` for aligned pairs, and a proven bound on its error.

        ``P = ge(A + dt + d, B) - ge(A + dt - d, B)`` with ``dt = t_a - t_b`` (Section 3:
        ``ge(Hb + d, Ha) + ge(Ha + d, Hb) - 1``, each term rewritten by shift invariance and
        ``ge(X, Y) = 1 - ge(Y, X)``), both terms per pair in the compiled
        :func:`~workbench.kernels.band.band_pair`, integrating over A (``over_a=True``), over
        B (False) or the flatter template per pair (None).
        This difference form stands apart from :func:`workbench.probability.band_from_ge`
        (the sum form) because the error bound counts exactly its one subtraction.
        """
        u, v = _indices(u), _indices(v)
        delta_t = np.asarray(t_a, dtype=np.float64) - np.asarray(t_b, dtype=np.float64)
        la, lb = self.local
        p, bound = np.empty(u.size), np.empty(u.size)
        band_many(
            la.pack,
            lb.pack,
            u,
            v,
            _writable(np.broadcast_to(delta_t, u.shape)),
            float(d),
            _sides(self.local, u, v, over_a),
            _k_max(self.local),
            scratch(self.local),
            p,
            bound,
        )
        return p, bound

    def decide(
        self,
        u: np.ndarray,
        t_a: np.ndarray,
        v: np.ndarray,
        t_b: np.ndarray,
        d: float,
        delta: float,
    ) -> np.ndarray:
        """Whether each pair satisfies jc(d, delta), exactly (ties join).

        One float evaluation integrating over A for every pair; the pairs it cannot settle
        are evaluated again over B where B is the flatter template, and the rest in rationals.
        """
        u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
        t_a, t_b = np.asarray(t_a, dtype=np.float64), np.asarray(t_b, dtype=np.float64)
        if u.size == 0:
            return np.zeros(0, dtype=bool)
        p, bound = self.probability(u, t_a, v, t_b, d, over_a=True)
        ok = p >= delta
        unsure = np.flatnonzero(np.abs(p - delta) <= bound)
        if unsure.size:
            la, lb = self.local
            flatter_b = unsure[lb.density_sum[v[unsure]] < la.density_sum[u[unsure]]]
            if flatter_b.size:
                k = flatter_b
                p_b, bound_b = self.probability(u[k], t_a[k], v[k], t_b[k], d, over_a=False)
                ok[k] = p_b >= delta
                settled = np.abs(p_b - delta) > bound_b
                unsure = np.setdiff1d(unsure, k[settled], assume_unique=True)
        if unsure.size:
            ok[unsure] = self.decide_exact(u[unsure], t_a[unsure], v[unsure], t_b[unsure], d, delta)
        return ok

    def decide_exact(
        self,
        u: np.ndarray,
        t_a: np.ndarray,
        v: np.ndarray,
        t_b: np.ndarray,
        d: float,
        delta: float,
    ) -> np.ndarray:
        """jc(d, delta) in rational arithmetic, pair by pair (the slow, exact path)."""
        la, lb = self.local
        level = Fraction(float(delta))
        out = np.empty(len(u), dtype=bool)
        for k in range(len(u)):
            prob = band_exact(la.exact(int(u[k])), t_a[k], lb.exact(int(v[k])), t_b[k], d)
            out[k] = prob >= level
        self.exact_evaluations += len(u)
        return out


def ge_shift(
    local: tuple[LocalTemplates, LocalTemplates],
    u: np.ndarray,
    v: np.ndarray,
    shift: np.ndarray,
    over_a: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``P(Xa + shift >= Xb)`` for local templates ``u`` of A and ``v`` of B, with its proven
    error bound (see the module docstring; one ge, half of the band's constants).

    Eq. 1 integrates over A (``over_a=True``), over B (False), or per pair over whichever
    template has the smaller density sum (None, the tightest bound).

    >>> from workbench.timestamps import HistogramTimestamp
    >>> lt = LocalTemplates.of(TemplateSet("S", (HistogramTimestamp.uniform(0, 10),)))
    >>> p, bound = ge_shift((lt, lt), np.array([0]), np.array([0]), np.array([5.0]))
    >>> float(p[0]), bool(bound[0] < 1e-12)
    (0.875, True)
    """
    la, lb = local
    u, v = _indices(u), _indices(v)
    shift = _writable(np.broadcast_to(np.asarray(shift, dtype=np.float64), u.shape))
    p, bound = np.empty(u.size), np.empty(u.size)
    k_max, room = _k_max(local), scratch(local)
    ge_many(la.pack, lb.pack, u, v, shift, _sides(local, u, v, over_a), k_max, room, p, bound)
    return p, bound


def ge_bound(
    local: tuple[LocalTemplates, LocalTemplates],
    u: np.ndarray,
    v: np.ndarray,
    shift: np.ndarray,
    over_a: np.ndarray | bool | None = None,
) -> np.ndarray:
    """The proven error bound of :func:`ge_shift` (module docstring), without evaluating it;
    ``over_a`` says which template Eq. 1 integrates over (None: the flatter one)."""
    la, lb = local
    u, v = _indices(u), _indices(v)
    shift = _writable(np.broadcast_to(np.asarray(shift, dtype=np.float64), u.shape))
    bound = np.empty(u.size)
    ge_bound_many(la.pack, lb.pack, u, v, shift, _sides(local, u, v, over_a), _k_max(local), bound)
    return bound


def scratch(local: tuple[LocalTemplates, LocalTemplates]) -> np.ndarray:
    """Room for one template's CDF tables, for the compiled band probability of ``local``'s
    templates integrating over B (:func:`workbench.kernels.band.ge_over_b`)."""
    return np.empty((3, 1, _k_max(local) + 1))


def _k_max(local: tuple[LocalTemplates, LocalTemplates]) -> int:
    return max(local[0].n_buckets, local[1].n_buckets)


def _writable(column: np.ndarray) -> np.ndarray:
    """A C-contiguous, writable column (a copy only when needed): the compiled functions
    take one array layout, so each compiles to one signature."""
    return np.require(column, requirements=("C", "W"))


def _indices(k: np.ndarray) -> np.ndarray:
    return _writable(np.asarray(k, dtype=np.int64).ravel())


def _sides(
    local: tuple[LocalTemplates, LocalTemplates],
    u: np.ndarray,
    v: np.ndarray,
    over_a: np.ndarray | bool | None,
) -> np.ndarray:
    """Per pair, whether Eq. 1 integrates over A (None: over the flatter template)."""
    if over_a is None:
        return local[0].density_sum[u] <= local[1].density_sum[v]
    return _writable(np.broadcast_to(np.asarray(over_a, dtype=bool), u.shape))
