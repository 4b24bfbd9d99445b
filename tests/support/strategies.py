"""Hypothesis strategies and NumPy generators: histogram timestamps, join scenarios."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from workbench.data.synthetic import synthetic_events
from workbench.operators import StreamSpec
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp


@st.composite
def histograms(
    draw: st.DrawFn,
    min_buckets: int = 1,
    max_buckets: int = 30,
    max_width: float = 100.0,
    positive: bool = True,
    origin: float | None = None,
) -> HistogramTimestamp:
    """Histograms with 1-30 buckets; ``positive`` keeps every bucket's probability > 0."""
    n = draw(st.integers(min_buckets, max_buckets))
    widths = draw(st.lists(st.floats(0.05, max_width), min_size=n, max_size=n))
    weights = draw(
        st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).filter(lambda w: sum(w) > 1e-3)
    )
    if positive:
        weights = [w + 0.01 for w in weights]
    start = draw(st.floats(-1000, 1000)) if origin is None else origin
    edges = start + np.concatenate(([0.0], np.cumsum(widths)))
    probs = np.asarray(weights) / sum(weights)
    return HistogramTimestamp(edges, probs)


def template_sets(name: str, max_count: int = 4, **kw: object) -> st.SearchStrategy[TemplateSet]:
    """Template sets of 1..max_count histograms starting at 0 (min(phi) = 0)."""
    return st.lists(histograms(origin=0.0, **kw), min_size=1, max_size=max_count).map(
        lambda ts: TemplateSet(name, tuple(ts))
    )


def random_histogram(
    rng: np.random.Generator, n: int, max_width: float = 50.0, zero_probs: bool = False
) -> HistogramTimestamp:
    """A random histogram with n buckets, for seeded (non-hypothesis) sweeps."""
    widths = rng.uniform(0.1, max_width, size=n)
    probs = rng.dirichlet(np.ones(n))
    if zero_probs and n > 1:
        probs[rng.random(n) < 0.3] = 0.0
        if probs.sum() == 0:
            probs[0] = 1.0
        probs /= probs.sum()
    edges = rng.uniform(-200, 200) + np.concatenate(([0.0], np.cumsum(widths)))
    return HistogramTimestamp(edges, probs)


@st.composite
def adversarial_template(draw: st.DrawFn, dyadic: bool = False) -> HistogramTimestamp:
    """A template (min 0) built to break floating point: bucket widths from 1e-6 to 1e7 ms
    (or powers of two, ``dyadic``), zero-probability buckets, one bucket holding most mass."""
    n = draw(st.integers(1, 5))
    if dyadic:
        widths = [2.0 ** draw(st.integers(-20, 12)) for _ in range(n)]
        probs = [draw(st.sampled_from([0.0, 0.125, 0.25, 0.5, 1.0])) for _ in range(n)]
    else:
        widths = [10.0 ** draw(st.floats(-6, 7)) for _ in range(n)]
        probs = [
            draw(st.sampled_from([0.0, 1e-6, 0.3, 0.5, 1.0])) * draw(st.floats(0.5, 1))
            for _ in range(n)
        ]
    if sum(probs) == 0:
        probs[draw(st.integers(0, n - 1))] = 1.0
    edges = np.concatenate(([0.0], np.cumsum(widths)))
    if np.any(np.diff(edges) <= 0):  # a tiny width swallowed by a huge one: drop it
        keep = np.concatenate(([True], np.diff(edges) > 0))
        edges = edges[keep]
        probs = [p for p, k in zip(probs, keep[1:], strict=True) if k] or [1.0]
        if len(edges) < 2:
            edges = np.array([0.0, 1.0])
    total = sum(probs)
    return HistogramTimestamp(edges, np.asarray(probs) / total)


def adversarial_sets(dyadic: bool = False) -> st.SearchStrategy[TemplateSet]:
    """Pairs of template sets (A, B) of 1-3 adversarial templates each."""
    one = st.lists(adversarial_template(dyadic), min_size=1, max_size=3)
    return st.tuples(one, one).map(
        lambda ab: (TemplateSet("A", tuple(ab[0])), TemplateSet("B", tuple(ab[1])))
    )


def uniform_set(rng: np.random.Generator, name: str, count: int, max_len: float) -> TemplateSet:
    """``count`` uniform intervals of random lengths up to ``max_len`` (min 0)."""
    lengths = rng.uniform(1.0, max_len, count)
    return TemplateSet(name, tuple(HistogramTimestamp.uniform(0, x) for x in lengths))


@st.composite
def join_scenario(draw: st.DrawFn, kind: str) -> tuple:
    """Two streams of ``kind`` templates ("interval": one bucket each; "histogram": 1-6
    buckets), their events (out of order, some late), d below or above pi and a threshold."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    counts = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    max_len = draw(st.sampled_from([5.0, 30.0, 80.0]))
    if kind == "interval":
        sets = [uniform_set(rng, n, c, max_len) for n, c in zip("AB", counts, strict=True)]
    else:
        buckets = draw(st.integers(1, 6))
        sets = [
            random_templates(rng, c, buckets, max_len, n) for n, c in zip("AB", counts, strict=True)
        ]
    delays = (draw(st.sampled_from([0.0, 20.0, 90.0])), draw(st.sampled_from([0.0, 20.0, 90.0])))
    streams = (StreamSpec(sets[0], delays[0]), StreamSpec(sets[1], delays[1]))
    pi = max(s.pi for s in sets)
    d = draw(st.sampled_from(["below", "above"]))
    d = float(rng.uniform(0, pi)) if d == "below" else pi + float(rng.uniform(0, 60))
    threshold = draw(st.floats(0.05, 0.95))
    events = synthetic_events(
        rng,
        draw(st.integers(0, 60)),
        counts,
        mean_interarrival=draw(st.sampled_from([2.0, 10.0, 40.0])),
        max_delay=delays,
        late_fraction=draw(st.sampled_from([0.0, 0.1])),
    )
    return streams, events, d, threshold
