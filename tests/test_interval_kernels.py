"""The interval correlation kernels (workbench.kernels.interval) against the Python reference:
the same float formulas bit for bit, and the same emissions, counters and state on hard
streams (extreme and dyadic interval lengths, times near 1e12, probabilities landing exactly
on ct, random batch splits interleaved with single pushes, advances and steering)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.events import Events
from workbench.interval_bounds import bounds_tuple, uniform_band_certified
from workbench.kernels.interval import band_certified, probe_bounds
from workbench.operators import (
    EagerCorrelation,
    Emitted,
    Envelope,
    LazyCorrelation,
    LazyLookupCorrelation,
    SimpleCorrelation,
    SSortCorrelation,
    StreamSpec,
)
from workbench.operators.buffers import rounding_margin, widen
from workbench.operators.interval.common import IntervalCorrelation
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

OPS = {
    "simple": SimpleCorrelation,
    "ssort": SSortCorrelation,
    "eager": EagerCorrelation,
    "lazy": lambda **kw: LazyCorrelation(max_pending=5, **kw),
    "lazy-time": lambda **kw: LazyCorrelation(max_pending=None, max_wait=3.0, **kw),
    "lazy-both": lambda **kw: LazyCorrelation(max_pending=9, max_wait=2.0, **kw),
    "lookup": lambda **kw: LazyLookupCorrelation(max_pending=6, **kw),
    "lookup-time": lambda **kw: LazyLookupCorrelation(max_pending=40, max_wait=4.0, **kw),
}

lengths = st.one_of(
    st.integers(-20, 12).map(lambda k: 2.0**k),  # dyadic: probabilities hit ct exactly
    st.floats(-6, 7).map(lambda e: 10.0**e),  # extreme widths
)


@given(
    lengths,
    lengths,
    st.sampled_from([0.0, 1.0, 1e6, 1e12]),
    st.floats(-1e3, 1e3),
    st.one_of(st.just(0.0), lengths, st.floats(0, 1e12)),
)
def test_band_certified_equals_the_numpy_formula(len_a, len_b, origin, shift, d):
    t_b = origin
    t_a = origin + shift * max(len_a, len_b)
    want = uniform_band_certified(
        np.array([len_a]), np.array([t_a]), np.array([len_b]), np.array([t_b]), d
    )
    got = band_certified(len_a, t_a, len_b, t_b, d)
    assert got == (float(want[0][0]), float(want[1][0]))  # bit for bit


@given(
    st.sampled_from([0.0, -5e3, 1e12]),
    lengths,
    st.one_of(st.just(0.0), lengths, st.floats(0, 1e6)),
    st.one_of(st.sampled_from([0.5, 0.25, 0.8]), st.floats(0.001, 0.999)),
    lengths,
)
def test_probe_bounds_equal_the_widened_bounds(lo, length, d, ct, pi):
    hi = lo + length
    if not hi - lo > 0:
        return
    want = widen(*bounds_tuple(lo, hi, d, ct, pi), rounding_margin(hi, d, pi, hi - lo))
    assert probe_bounds(lo, hi, d, ct, pi) == want


@st.composite
def hard_streams(draw):
    """Two streams of uniform intervals with hard lengths, times and thresholds."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    templates = st.lists(lengths, min_size=1, max_size=3)
    sets = [
        TemplateSet(name, tuple(HistogramTimestamp.uniform(0, x) for x in xs))
        for name, xs in zip("AB", draw(st.tuples(templates, templates)), strict=True)
    ]
    every = [t.length for s in sets for t in s]
    scale, grid = max(every), min(every)
    dyadic = draw(st.booleans())  # times on a grid of the shortest length: ties
    origin = draw(st.sampled_from([0.0, 1e3, 1e12]))
    delays = [scale * draw(st.sampled_from([0.0, 0.5, 3.0])) for _ in range(2)]
    columns = []
    for s in (0, 1):
        n = draw(st.integers(0, 25))
        t_det = np.cumsum(rng.exponential(scale * draw(st.sampled_from([0.1, 0.5, 2.0])), n))
        delay = rng.uniform(0, delays[s], n) * (rng.random(n) < 0.9)
        late = rng.random(n) < 0.1
        delay[late] = delays[s] + scale * rng.uniform(0.1, 1.0, int(late.sum()))
        if dyadic:
            t_det, delay = np.round(t_det / grid) * grid, np.round(delay / grid) * grid
        ids = 10 * np.arange(n) + s
        template = rng.integers(len(sets[s]), size=n)
        columns.append((np.full(n, s), ids, template, origin + t_det, origin + t_det + delay))
    stream, ids, template, t_det, arrival = (np.concatenate(c) for c in zip(*columns, strict=True))
    order = np.argsort(arrival, kind="stable")
    events = Events(stream[order], ids[order], template[order], t_det[order], arrival[order])
    pi = max(s.pi for s in sets)
    d = draw(st.sampled_from([0.0, grid / 2, grid, pi, 2 * pi, 3 * scale]))
    ct = draw(st.one_of(st.sampled_from([0.5, 0.25, 0.75, 0.125]), st.floats(0.01, 0.99)))
    streams = tuple(StreamSpec(s, x) for s, x in zip(sets, delays, strict=True))
    return streams, events, d, ct


def _state(op) -> tuple:
    """Everything a kernel and the reference both change: buffers, pending blocks, clocks."""
    held = [op.buffers]
    if isinstance(op, LazyCorrelation):
        held.append(op._pending)
    columns = tuple(
        (b.ids.tolist(), b.templates.tolist(), b.tmax.tolist(), b.tmin.tolist())
        for group in held
        for b in group
    )
    return columns, op.now, getattr(op, "_last_eval", None)


def _drive(op, events, plan) -> list[Emitted]:
    """Apply a plan of (kind, i, j) steps: a batch, single pushes, an advance, steering."""
    out = []
    for kind, i, j in plan:
        if kind == "batch":
            out.append(op.push_batch(events[i:j]))
        elif kind == "rows":
            out += [op.push(*row) for row in events[i:j].rows()]
        elif kind == "advance" and i < len(events):
            out.append(op.advance(max(op.now, float(events.arrival[i]))))
        elif kind == "steer":
            out.append(op.set_params(d=op.config.d / 2, threshold=min(0.99, op.threshold * 1.5)))
    out.append(op.flush())
    return out


@pytest.mark.parametrize("name", sorted(OPS))
@settings(max_examples=25, deadline=None)
@given(data=hard_streams(), split=st.data())
def test_compiled_equals_python_on_hard_streams(name, data, split):
    streams, events, d, ct = data
    n = len(events)
    cuts = sorted(set(split.draw(st.lists(st.integers(0, n), max_size=6)) + [0, n]))
    kinds = st.sampled_from(["batch", "batch", "rows", "advance", "steer"])
    plan = [(split.draw(kinds), i, j) for i, j in itertools.pairwise(cuts)]
    env = Envelope(d_max=d, threshold_min=ct / 2, max_delay=tuple(s.max_delay for s in streams))
    runs = []
    for engine in ("python", "compiled"):
        op = OPS[name](streams=streams, d=d, threshold=ct, envelope=env, engine=engine,
                       on_bad="count")  # fmt: skip
        runs.append((Emitted.concat(_drive(op, events, plan), 2), op.counters, _state(op)))
    assert runs[1] == runs[0]


def _tie_stream(n: int = 60) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
    """Unit and double intervals on an integer grid: P(|Xa - Xb| <= 2) is exactly 1/2 for
    many pairs (ties join, decided by the exact path)."""
    rng = np.random.default_rng(3)
    sets = tuple(
        TemplateSet(s, (HistogramTimestamp.uniform(0, 1), HistogramTimestamp.uniform(0, 2)))
        for s in "AB"
    )
    streams = (StreamSpec(sets[0], 2.0), StreamSpec(sets[1], 2.0))
    stream = rng.integers(0, 2, n)
    t_det = np.cumsum(rng.integers(0, 2, n)).astype(float) + 1e12
    arrival = np.maximum.accumulate(t_det + rng.integers(0, 3, n))
    return streams, Events(stream, np.arange(n), rng.integers(0, 2, n), t_det, arrival)


@pytest.mark.parametrize("name", sorted(OPS))
def test_ties_are_settled_by_the_exact_path_in_place(name):
    streams, events = _tie_stream()
    runs = []
    for engine in ("python", "compiled"):
        op = OPS[name](streams=streams, d=2.0, threshold=0.5, engine=engine)
        parts = [op.push_batch(events[i:j]) for i, j in itertools.pairwise([0, 17, 18, 44, 60])]
        runs.append((Emitted.concat([*parts, op.flush()], 2), op.counters, _state(op)))
    assert runs[1] == runs[0]
    assert runs[0][1].exact_evals > 0 and runs[0][0].ids.shape[0] > 0


@pytest.mark.parametrize("name", sorted(OPS))
def test_kernel_calls_split_a_batch_at_any_row(name, monkeypatch):
    """A batch runs as several kernel calls (and look-up parts finished in Python between
    them): the same result as one call."""
    monkeypatch.setattr(IntervalCorrelation, "chunk", 5)
    streams, events = _tie_stream(150)
    runs = []
    for engine in ("python", "compiled"):
        op = OPS[name](streams=streams, d=2.0, threshold=0.5, engine=engine)
        parts = [op.push_batch(events[:101]), op.push_batch(events[101:]), op.flush()]
        runs.append((Emitted.concat(parts, 2), op.counters, _state(op)))
    assert runs[1] == runs[0]
