"""Certified exact decisions (issue 12): reproducers, the float error bound against rationals,
stime brackets, ties, representability, and every operator against the rational oracle on
adversarial streams."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_operators import _engines_agree

from tests.support.strategies import adversarial_sets, adversarial_template, random_histogram
from workbench.decision import BandDecider, LocalTemplates, ge_shift
from workbench.events import Events, sort_pairs
from workbench.exact import ExactHistogram, band_exact, band_prob_exact, ge_exact, stime_bracket
from workbench.interval_bounds import uniform_band_certified
from workbench.operators import (
    BadEventError,
    BandJoin,
    EagerCorrelation,
    LazyCorrelation,
    LazyLookupCorrelation,
    PTJoin,
    SimpleCorrelation,
    SSortCorrelation,
    StreamSpec,
    brute_force_join,
    on_time,
    replay,
)
from workbench.stime import StimeTable, stime, stime_table
from workbench.stime_brackets import stime_brackets
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

PT_MODES = ("naive", "loose", "tight")
INTERVAL_OPS = {
    "simple": SimpleCorrelation,
    "ssort": SSortCorrelation,
    "eager": EagerCorrelation,
    "lazy": lambda **kw: LazyCorrelation(max_pending=3, **kw),
    "lookup": lambda **kw: LazyLookupCorrelation(max_pending=4, **kw),
}


def _pairs(matches) -> np.ndarray:  # noqa: ANN001
    return sort_pairs(np.stack((matches.a_ids, matches.b_ids), axis=1))


def _events(rows: list[tuple[int, int, int, float, float]]) -> Events:
    cols = list(zip(*rows, strict=True))
    return Events(*(np.array(c) for c in cols))


# -- the reproducers of issue 12 -------------------------------------------------------------
def test_reproducer_1_stime_table_agrees_with_definition_8():
    hi = HistogramTimestamp(np.array([0, 1e-4, 10.0]), np.array([0.5, 0.5]))
    hj = HistogramTimestamp(np.array([0, 1e-4, 10000.0]), np.array([0.5, 0.5]))
    table = stime_table(TemplateSet("A", (hi,)), TemplateSet("B", (hj,)), 0.5)
    scalar = stime(hi, hj, 0.5)
    assert scalar == pytest.approx(9999.99990316, abs=1e-8)
    assert float(table[0, 0]) == pytest.approx(scalar, abs=1e-6)
    # Definition 8 at the scalar: prob(Hi + max(Hj) - T >= Hj) is delta within one rounding
    shift = Fraction(hj.max) - Fraction(scalar)
    level = ge_exact(hi + float(shift), hj)
    assert abs(level - Fraction(1, 2)) < Fraction(1, 10**6)
    # and the bracket encloses the exact value
    _, lo, up = stime_brackets(TemplateSet("A", (hi,)), TemplateSet("B", (hj,)), 0.5)
    exact_lo, exact_hi = stime_bracket(
        ExactHistogram.of(hi, -Fraction(hi.max)),
        ExactHistogram.of(hj, -Fraction(hj.max)),
        Fraction(1, 2),
    )
    assert lo[0, 0] <= exact_lo and exact_hi <= up[0, 0]


def test_reproducer_1_tight_joins_no_pair_below_delta():
    phi_a = HistogramTimestamp(
        np.array([0, 6.103515625e-05, 12.567520141601562]), np.array([0.647, 0.353])
    )
    phi_b = HistogramTimestamp(
        np.array([0, 0.000152587890625, 16316.339080810547]), np.array([0.418, 0.582])
    )
    streams = (
        StreamSpec(TemplateSet("A", (phi_a,)), 40000.0),
        StreamSpec(TemplateSet("B", (phi_b,)), 40000.0),
    )
    d = 16316.339080810547
    events = _events([(1, 2, 0, 131500.0, 131500.0), (0, 1, 0, 100000.0, 131501.0)])
    exact = band_prob_exact(phi_a.detected_at(100000.0), phi_b.detected_at(131500.0), d)
    assert float(exact) == pytest.approx(0.458, abs=1e-3)
    assert brute_force_join(events, streams, d, 0.5).size == 0
    for mode in PT_MODES:
        got, _ = replay(PTJoin(streams=streams, d=d, threshold=0.5, mode=mode), events)
        assert len(got) == 0, mode


def test_reproducer_2_band_probability_within_its_bound():
    phi_a = HistogramTimestamp(
        np.array([0, 2.193450927734375e-05, 6.4849853515625e-05]),
        np.array([0.5816676695206129, 0.4183323304793872]),
    )
    phi_b = HistogramTimestamp(
        np.array([0, 54187.125146865845, 705297.3835296631, 793375.8278141022, 835386.0794048309]),
        np.array(
            [0.6216172802671978, 0.013476678624365811, 0.31643125976988995, 0.048474781338546366]
        ),
    )
    streams = (
        StreamSpec(TemplateSet("A", (phi_a,)), 10.0),
        StreamSpec(TemplateSet("B", (phi_b,)), 10.0),
    )
    d, t_a, t_b = 398061.8067588806, 1e7, 1e7 + 482249.2869987488
    exact = band_prob_exact(phi_a.detected_at(t_a), phi_b.detected_at(t_b), d)
    assert float(exact) == pytest.approx(0.7999990000022, abs=1e-12)
    decider = BandDecider(*(s.templates for s in streams))
    p, bound = decider.probability(
        np.array([0]), np.array([t_a]), np.array([0]), np.array([t_b]), d
    )
    assert abs(Fraction(float(p[0])) - exact) <= Fraction(float(bound[0]))
    events = _events([(0, 1, 0, t_a, t_a), (1, 2, 0, t_b, t_b)])
    assert brute_force_join(events, streams, d, 0.8).size == 0
    for mode in PT_MODES:
        got, _ = replay(PTJoin(streams=streams, d=d, threshold=0.8, mode=mode), events)
        assert len(got) == 0, mode


# -- the float bound is a bound ----------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(
    a=adversarial_template(),
    b=adversarial_template(),
    t_a=st.sampled_from([0.0, 1e9]) | st.floats(-1e6, 1e6),
    gap=st.floats(-2e7, 2e7),
    d=st.sampled_from([0.0, 1.0]) | st.floats(0, 1e7),
)
def test_band_bound_holds_against_rationals(a, b, t_a, gap, d):
    local = (LocalTemplates.of(TemplateSet("A", (a,))), LocalTemplates.of(TemplateSet("B", (b,))))
    decider = BandDecider(local[0].templates, local[1].templates)
    t_b = t_a + gap
    p, bound = decider.probability(
        np.array([0]), np.array([t_a]), np.array([0]), np.array([t_b]), d
    )
    exact = band_exact(local[0].exact(0), t_a, local[1].exact(0), t_b, d)
    if np.isfinite(bound[0]):
        assert abs(Fraction(float(p[0])) - exact) <= Fraction(float(bound[0]))
    # one ge on its own
    q, qb = ge_shift(local, np.array([0]), np.array([0]), np.array([gap]))
    ge_value = ge_exact(local[0].exact(0).shifted(Fraction(gap)), local[1].exact(0))
    if np.isfinite(qb[0]):
        assert abs(Fraction(float(q[0])) - ge_value) <= Fraction(float(qb[0]))


@settings(max_examples=200, deadline=None)
@given(
    len_a=st.sampled_from([1e-6, 1e-3, 1.0, 1e4, 1e7]) | st.floats(1e-6, 1e7),
    len_b=st.sampled_from([1e-6, 1e-3, 1.0, 1e4, 1e7]) | st.floats(1e-6, 1e7),
    t_a=st.sampled_from([0.0, 1e9, 1e12]) | st.floats(-1e6, 1e6),
    gap=st.sampled_from([0.0]) | st.floats(-2e7, 2e7),
    d=st.sampled_from([0.0, 1.0]) | st.floats(0, 1e7),
)
def test_uniform_band_bound_holds_against_rationals(len_a, len_b, t_a, gap, d):
    """The interval operators' trapezoid fast path: its bound is a bound (rationals judge)."""
    t_b = t_a + gap
    p, bound = uniform_band_certified(
        np.array([len_a]), np.array([t_a]), np.array([len_b]), np.array([t_b]), d
    )
    phi_a = ExactHistogram.of(HistogramTimestamp.uniform(-len_a, 0.0))
    phi_b = ExactHistogram.of(HistogramTimestamp.uniform(-len_b, 0.0))
    exact = band_exact(phi_a, t_a, phi_b, t_b, d)
    if np.isfinite(bound[0]):
        assert abs(Fraction(float(p[0])) - exact) <= Fraction(float(bound[0]))


def _ge_in_fractions(x: ExactHistogram, y: ExactHistogram) -> Fraction:
    """Theorem 1 (Eq. 3) step by step in Fractions: what workbench.exact computes in integers
    over common denominators."""
    if x.min >= y.max:
        return Fraction(1)
    if x.max <= y.min:
        return Fraction(0)
    points = sorted(set(x.edges) | set(y.edges))
    total = below_y = Fraction(0)
    for lo, hi in zip(points[:-1], points[1:], strict=True):
        mass = []
        for h in (x, y):
            k = next((k for k in range(len(h.probs)) if h.edges[k] <= lo < h.edges[k + 1]), None)
            w = h.edges[k + 1] - h.edges[k] if k is not None else 1
            mass.append(h.probs[k] * (hi - lo) / w if k is not None else Fraction(0))
        total += mass[0] * (below_y + mass[1] / 2)
        below_y += mass[1]
    return total


def test_integer_rationals_equal_fraction_arithmetic():
    """ge, the band and their shifts in workbench.exact's integers equal the same rationals
    computed in Fractions: zero-probability buckets, widths from 1e-6 to 1e7, offsets of 1e12."""
    rng = np.random.default_rng(12)
    for k in range(40):
        if k % 2:
            widths = 10.0 ** rng.uniform(-6, 7, int(rng.integers(1, 6)))
            edges = np.concatenate(([0.0], np.cumsum(widths)))
            probs = rng.dirichlet(np.ones(widths.size)) * (rng.random(widths.size) < 0.7)
            if probs.sum() == 0 or np.any(np.diff(edges) <= 0):
                edges, probs = np.array([0.0, 1.0]), np.array([1.0])
            a = HistogramTimestamp(edges, probs / probs.sum())
        else:
            a = random_histogram(rng, int(rng.integers(1, 9)), zero_probs=True)
        b = random_histogram(rng, int(rng.integers(1, 9)), zero_probs=True)
        x = ExactHistogram.of(a, -Fraction(a.max))
        y = ExactHistogram.of(b, -Fraction(b.max))
        t_b = float(rng.choice([0.0, 1e12]))
        t_a = t_b + float(rng.normal(0, 60) * rng.choice([1e-4, 1.0]))
        d = float(rng.uniform(0, 80))
        shift = Fraction(t_a) - Fraction(t_b)
        assert ge_exact(x.shifted(shift), y) == _ge_in_fractions(x.shifted(shift), y)
        band = _ge_in_fractions(y.shifted(Fraction(d)), x.shifted(shift)) + _ge_in_fractions(
            x.shifted(shift + Fraction(d)), y
        )
        assert band_exact(x, t_a, y, t_b, d) == band - 1


def test_ties_join_exactly():
    u = TemplateSet("S", (HistogramTimestamp.uniform(0, 8),))
    for t0 in (0.0, 1e9, 1e12):
        decider = BandDecider(u, u)
        ok = decider.decide(
            np.array([0]), np.array([t0]), np.array([0]), np.array([t0 + 4]), 4, 0.5
        )
        # |X - Y| <= 4 with Y - X triangular on [-4, 12]: P = 1/2 exactly
        assert band_exact(
            decider.local[0].exact(0), t0, decider.local[1].exact(0), t0 + 4, 4
        ) == Fraction(1, 2)
        assert ok.tolist() == [True]
        assert decider.decide(
            np.array([0]),
            np.array([t0]),
            np.array([0]),
            np.array([t0 + 4]),
            4,
            np.nextafter(0.5, 1),
        ).tolist() == [False]


def test_stime_on_a_flat_stretch_is_its_exact_end():
    # Hi has a zero-probability middle bucket: f(x) is flat at exactly 1/2 while Hj's bucket
    # crosses it; Eq. 8 (right) wants the far end of the flat, Eq. 9 (left) the near end
    hi = HistogramTimestamp(np.array([0.0, 1.0, 101.0, 102.0]), np.array([0.5, 0.0, 0.5]))
    hj = HistogramTimestamp.uniform(0.0, 1.0)
    a, b = TemplateSet("A", (hi,)), TemplateSet("B", (hj,))
    right, lo_r, hi_r = stime_brackets(a, b, Fraction(1, 2), "right")
    left, lo_l, hi_l = stime_brackets(a, b, Fraction(1, 2), "left")
    # f(x) = P(Hi - x >= Hj) (both maxima at 0) is exactly 1/2 for x in [-100, -1]
    assert lo_r[0, 0] == hi_r[0, 0] == right[0, 0] == -1.0  # x = stime - max(Hi)
    assert lo_l[0, 0] == hi_l[0, 0] == left[0, 0] == -100.0
    assert stime(hi, hj, 0.5, "right") == 101.0 and stime(hi, hj, 0.5, "left") == 2.0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sets=adversarial_sets(), delta=st.sampled_from([0.001, 0.5, 0.999]))
def test_stime_brackets_enclose_the_exact_stime(sets, delta):
    a, b = sets
    for side, level in (("right", Fraction(delta)), ("left", 1 - Fraction(delta))):
        x, lo, hi = stime_brackets(a, b, level, side)
        assert np.all(lo <= x) and np.all(x <= hi)
        la, lb = LocalTemplates.of(a), LocalTemplates.of(b)
        for u in range(len(a)):
            for v in range(len(b)):
                e_lo, e_hi = stime_bracket(la.exact(u), lb.exact(v), level, side)
                assert lo[u, v] <= e_lo and e_hi <= hi[u, v]


# -- operators against the rational oracle on adversarial streams -----------------------------
@st.composite
def adversarial_streams(draw: st.DrawFn, uniform: bool = False):
    """Two streams of adversarial templates, offsets 0 or 1e9, d below, at and far above pi,
    thresholds 0.001 / 0.5 / 0.999 or exactly a pair's probability (dyadic templates)."""
    dyadic = draw(st.booleans())
    if uniform:
        widths = st.lists(
            st.sampled_from([2.0**-18, 1e-6, 0.5, 3.0, 1e3, 1e6]), min_size=1, max_size=3
        )
        make = lambda ws, n: TemplateSet(n, tuple(HistogramTimestamp.uniform(0, w) for w in ws))  # noqa: E731
        a, b = make(draw(widths), "A"), make(draw(widths), "B")
    else:
        a, b = draw(adversarial_sets(dyadic))
    pi = max(a.pi, b.pi)
    d = draw(
        st.sampled_from(
            [0.0, pi / 2, np.nextafter(pi, 0), pi, np.nextafter(pi, np.inf), 3 * pi, 1e7]
        )
    )
    offset = draw(st.sampled_from([0.0, 1e9]))
    span = 2 * (d + pi) + 1.0
    grid = 2.0**-6 if dyadic else None
    n = draw(st.integers(2, 7))
    max_delay = (draw(st.sampled_from([0.0, 5.0, span])), draw(st.sampled_from([0.0, 5.0, span])))
    rows = []
    for s, ts in ((0, a), (1, b)):
        for k in range(n):
            t = draw(st.floats(0, span))
            if grid is not None:
                t = round(t / grid) * grid
            delay = draw(st.floats(0, max_delay[s] * 1.2))
            rows.append(
                (s, 10 * k + s, draw(st.integers(0, len(ts) - 1)), offset + t, offset + t + delay)
            )
    rows.sort(key=lambda r: r[4])
    events = _events(rows)
    streams = (StreamSpec(a, max_delay[0]), StreamSpec(b, max_delay[1]))
    delta = draw(st.sampled_from([0.001, 0.5, 0.999, "tie"]))
    if delta == "tie":  # a pair's exact probability as the threshold, when a double holds it
        exact = [[ExactHistogram.of(h, -Fraction(h.max)) for h in ts] for ts in (a, b)]
        ties = []
        for ra in (r for r in rows if r[0] == 0):
            for rb in (r for r in rows if r[0] == 1):
                p = band_exact(exact[0][ra[2]], ra[3], exact[1][rb[2]], rb[3], d)
                if 0 < p < 1 and Fraction(float(p)) == p:
                    ties.append(float(p))
        delta = draw(st.sampled_from(ties)) if ties else 0.5
    return streams, events, float(d), delta


def _accepted(events: Events, streams) -> np.ndarray:  # noqa: ANN001
    ok = on_time(events, [s.max_delay for s in streams])
    for k in range(len(events)):
        ts = streams[int(events.stream[k])].templates
        if ts.faithful_error(int(events.template[k]), float(events.t_det[k])) is not None:
            ok[k] = False
    return ok


def _check(op, events, streams, d, delta):  # noqa: ANN001
    expected = brute_force_join(events, streams, d, delta, accepted=_accepted(events, streams))
    matches, _ = replay(op, events)
    np.testing.assert_array_equal(_pairs(matches), expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=adversarial_streams())
def test_ptjoin_equals_rational_oracle_on_adversarial_streams(case):
    streams, events, d, delta = case
    for mode in PT_MODES:
        _check(
            PTJoin(streams=streams, d=d, threshold=delta, mode=mode, on_bad="count"),
            events,
            streams,
            d,
            delta,
        )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=adversarial_streams(),
    far=st.booleans(),
    cuts=st.lists(st.integers(0, 20), max_size=4),
)
def test_compiled_ptjoin_equals_the_python_engine_on_adversarial_streams(case, far, cuts):
    """The kernels against the python reference on adversarial templates, partners on the
    thresholds and times near 1e12 (unrepresentable events counted bad), for random batch
    splits: the same pairs in the same order, the same counters (exact evaluations too)."""
    streams, events, d, delta = case
    if far:  # the same stream 1e12 ms later
        shift = 1e12 - float(events.t_det.min())
        events = Events(
            events.stream, events.id, events.template, events.t_det + shift, events.arrival + shift
        )
    params = {"streams": streams, "d": d, "threshold": delta, "on_bad": "count"}
    for mode in PT_MODES:
        _engines_agree(lambda m=mode, **kw: PTJoin(mode=m, **params, **kw), events, cuts)
    _engines_agree(lambda **kw: BandJoin(**params, **kw), events, cuts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=adversarial_streams(uniform=True))
def test_interval_operators_equal_rational_oracle_on_adversarial_streams(case):
    streams, events, d, delta = case
    for name, make in INTERVAL_OPS.items():
        op = make(streams=streams, d=d, threshold=delta, on_bad="count")
        try:
            _check(op, events, streams, d, delta)
        except AssertionError as exc:
            raise AssertionError(name) from exc


# -- representability --------------------------------------------------------------------------
def test_unfaithful_histograms_are_rejected_naming_the_bucket():
    phi = HistogramTimestamp.from_buckets([(0, 1e-6, 0.5), (1e-6, 2.0, 0.5)])
    with pytest.raises(ValueError, match="bucket 0 is 1e-06 ms wide"):
        phi.detected_at(1e12)
    assert phi.detected_at(1e9).n_buckets == 2  # 1e-6 is above the spacing at 1e9
    ts = TemplateSet("A", (phi,))
    spec = StreamSpec(ts, 10.0)
    op = PTJoin(streams=(spec, spec), d=5.0, threshold=0.5, on_bad="count")
    assert op.push("A", 1, 0, t_det=1e12, arrival=1e12).status == "bad"
    assert op.counters.bad == 1
    strict = PTJoin(streams=(spec, spec), d=5.0, threshold=0.5)
    with pytest.raises(BadEventError, match="bucket 0 is 1e-06 ms wide"):
        strict.push("A", 1, 0, t_det=1e12, arrival=1e12)


def test_stime_table_decides_every_pair_like_the_band():
    """Eq. 8 / 9 against the certified brackets, partners on and around the brackets' edges."""
    rng = np.random.default_rng(3)
    u = TemplateSet("A", (HistogramTimestamp(np.array([0.0, 1e-3, 7.0]), np.array([0.9, 0.1])),))
    v = TemplateSet(
        "B", (HistogramTimestamp(np.array([0.0, 5.0, 5.0 + 1e-5]), np.array([0.2, 0.8])),)
    )
    table = StimeTable.build(u, v, 0.7)
    d = table.min_d
    t_i = 1e9
    # partners right at both bracket edges and scattered around them
    x = np.concatenate((table.sat_lo.ravel(), table.sat_hi.ravel()))
    t_j = np.concatenate(
        (t_i + x + d, t_i + table.inv_lo.ravel() - d, t_i + rng.uniform(-2 * d, 2 * d, 200))
    )
    got = table.decide(np.zeros(t_j.size, int), np.zeros(t_j.size, int), t_i, t_j, d)
    la, lb = LocalTemplates.of(u), LocalTemplates.of(v)
    want = [band_exact(la.exact(0), t_i, lb.exact(0), t, d) >= Fraction(0.7) for t in t_j]
    assert got.tolist() == want


@pytest.mark.parametrize("t0", [0.0, 1e9, 1e12])
@pytest.mark.parametrize("length, d", [(4.0, 4.0), (8.0, 4.0)])  # fast path, general path
def test_a_tie_joins_in_every_operator(t0, length, d):
    # uniform [t - length, t] events 4 ms apart: P(|Xa - Xb| <= d) = 1/2 exactly
    spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, length),)), 10.0)
    streams = (spec, spec)
    events = _events([(0, 1, 0, t0, t0), (1, 2, 0, t0 + 4, t0 + 4)])
    half = band_prob_exact(spec.templates.event(0, t0), spec.templates.event(0, t0 + 4), d)
    assert half == Fraction(1, 2)
    makers = {mode: (lambda m=mode, **kw: PTJoin(mode=m, **kw)) for mode in PT_MODES}
    for name, make in {**makers, **INTERVAL_OPS}.items():
        for delta, joined in ((0.5, 1), (float(np.nextafter(0.5, 1)), 0)):
            got, _ = replay(make(streams=streams, d=d, threshold=delta), events)
            assert len(got) == joined, (name, delta)
        assert brute_force_join(events, streams, d, 0.5).tolist() == [[1, 2]]
