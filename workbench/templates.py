"""Template histograms of a stream (PTJoin paper, Section 2.1, Definitions 4 and 5): the
:class:`TemplateSet` H_A a stream's events are detected with, each event ``a_i |= phi_k``
stamped ``phi_k + t_det - max(phi_k)`` (Example 3), its maximum template length pi_A, the
magnitudes up to which its events stay faithful floats, and Example 5's random templates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from workbench.timestamps import HistogramTimestamp, pack_histograms

__all__ = ["TemplateSet", "random_templates"]


@dataclass(frozen=True)
class TemplateSet:
    """The template histograms H_A of a stream (Definition 4) and its max length pi_A (Def. 5).

    >>> u = HistogramTimestamp.uniform
    >>> ts = TemplateSet("A", (u(0, 30), u(0, 50)))
    >>> len(ts), ts.pi
    (2, 50.0)
    >>> ts.event(1, 200).buckets()
    [(150.0, 200.0, 1.0)]
    """

    name: str
    templates: tuple[HistogramTimestamp, ...]

    def __post_init__(self) -> None:
        templates = tuple(self.templates)
        if not templates:
            raise ValueError(f"templates of stream {self.name!r} must not be empty")
        for k, t in enumerate(templates):
            if not isinstance(t, HistogramTimestamp):
                raise ValueError(f"templates[{k}] = {t!r} is not a HistogramTimestamp")
        object.__setattr__(self, "templates", templates)

    def __len__(self) -> int:
        return len(self.templates)

    def __getitem__(self, k: int) -> HistogramTimestamp:
        return self.templates[k]

    def __iter__(self) -> Iterator[HistogramTimestamp]:
        return iter(self.templates)

    @cached_property
    def pi(self) -> float:
        """pi, the maximum template length in the stream (Definition 5), rounded up to a
        double no smaller than the exact length (so ``d >= pi`` implies Lemma 2 exactly)."""
        longest = max(t.length for t in self.templates)
        exact = max(Fraction(t.max) - Fraction(t.min) for t in self.templates)
        return longest if Fraction(longest) >= exact else math.nextafter(longest, math.inf)

    def intervals(self) -> TemplateSet:
        """The same supports as uniform intervals (one bucket each): the interval timing
        paper's model (Section 4.1) of the same stream; an event's interval is its histogram's
        support.

        >>> ts = TemplateSet("A", (HistogramTimestamp.from_buckets([(0, 1, 0.2), (1, 5, 0.8)]),))
        >>> ts.intervals().event(0, 100.0).buckets()
        [(95.0, 100.0, 1.0)]
        """
        uniform = tuple(HistogramTimestamp.uniform(0.0, t.length) for t in self.templates)
        return TemplateSet(self.name, uniform)

    @cached_property
    def lengths(self) -> np.ndarray:
        """len(phi_k) of every template, in order (read-only)."""
        out = np.array([t.length for t in self.templates])
        out.flags.writeable = False
        return out

    @cached_property
    def horizons(self) -> np.ndarray:
        """Per template, the magnitude from which events lose fidelity: an event of template
        k detected at t is representable iff ``|t| + len(phi_k) < horizons[k]``, i.e. its
        narrowest bucket is at least the float spacing at every time it covers
        (``2 ** (floor(log2(narrowest)) + 53)``; 1.1e10 ms for a 1e-6 ms bucket).

        >>> TemplateSet("A", (HistogramTimestamp.uniform(0, 1),)).horizons.tolist()
        [9007199254740992.0]
        """
        out = np.array([math.ldexp(1.0, math.frexp(t.widths.min())[1] + 52) for t in self])
        out.flags.writeable = False
        return out

    def faithful_error(self, k: int, t_det: float) -> str | None:
        """Why an event of template k at ``t_det`` cannot be represented faithfully, or None."""
        t = self.templates[k]
        if abs(float(t_det)) + self.lengths[k] < self.horizons[k]:
            return None
        j = int(np.argmin(t.widths))
        return (
            f"template {k} of stream {self.name!r} at t_det = {float(t_det)!r}: its bucket {j} "
            f"is {float(t.widths[j]):g} ms wide, narrower than the float spacing there "
            f"({math.ulp(abs(float(t_det)) + t.length):g} ms); such events are representable "
            f"only while |t_det| + {t.length:g} < {float(self.horizons[k]):g} ms"
        )

    @cached_property
    def max_times(self) -> np.ndarray:
        """max(phi) of every template, in order (read-only)."""
        out = np.array([t.max for t in self.templates])
        out.flags.writeable = False
        return out

    def event(self, k: int, t_det: float) -> HistogramTimestamp:
        """Timestamp of an event detected at ``t_det`` with template ``k`` (a_i |= phi_k)."""
        if not 0 <= k < len(self.templates):
            raise ValueError(
                f"template index {k!r} out of range for {len(self.templates)} templates"
            )
        return self.templates[k].detected_at(t_det)

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """All templates as padded ``(edges, probs)`` arrays (see
        :func:`~workbench.timestamps.pack_histograms`)."""
        return pack_histograms(self.templates)


def random_templates(
    rng: np.random.Generator,
    count: int,
    n_buckets: int = 10,
    max_length: float = 1000.0,
    name: str = "random",
) -> TemplateSet:
    """Random templates with ``min(phi) = 0`` as in PTJoin Example 5.

    Each template has a length drawn uniformly from ``(max_length / 10, max_length]``, random
    bucket boundaries and Dirichlet(1) bucket probabilities.

    >>> ts = random_templates(np.random.default_rng(0), 3, n_buckets=4, max_length=100)
    >>> len(ts), ts.pi <= 100, ts[0].n_buckets
    (3, True, 4)
    """
    if count < 1:
        raise ValueError(f"count = {count!r} must be at least 1")
    if n_buckets < 1:
        raise ValueError(f"n_buckets = {n_buckets!r} must be at least 1")
    if not max_length > 0:
        raise ValueError(f"max_length = {max_length!r} must be positive")
    lengths = rng.uniform(max_length / 10, max_length, size=count)
    cuts = np.sort(rng.random((count, n_buckets - 1)), axis=1)
    # keep every bucket at least 1% of the template wide so no bucket degenerates
    fractions = np.concatenate((np.zeros((count, 1)), cuts, np.ones((count, 1))), axis=1)
    widths = np.diff(fractions, axis=1) + 0.01
    edges = np.concatenate((np.zeros((count, 1)), np.cumsum(widths, axis=1)), axis=1)
    edges *= (lengths / edges[:, -1])[:, None]
    probs = rng.dirichlet(np.ones(n_buckets), size=count)
    return TemplateSet(
        name, tuple(HistogramTimestamp(e, p) for e, p in zip(edges, probs, strict=True))
    )
