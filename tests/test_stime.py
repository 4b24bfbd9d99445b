"""Satisfaction time (PTJoin Definition 8), its tables, and Theorem 2's decision rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.strategies import histograms, random_histogram, template_sets
from workbench.paper_examples import example3_templates
from workbench.probability import band_prob, prob_ge
from workbench.stime import StimeTable, stime, stime_table
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

H = HistogramTimestamp
deltas = st.floats(0.01, 0.99)


def test_example_4_satisfaction_time():
    phi1, phi2 = example3_templates()
    h3, h2 = phi1.detected_at(210), phi2.detected_at(110)
    assert stime(h3, h2, 0.8) == pytest.approx(208.59, abs=0.005)
    # the paper's quadratic: -0.0007625 y^2 + 0.236 y - 17.315 = 0.8 at y = T - 40
    y = stime(h3, h2, 0.8) - 40
    assert -0.0007625 * y**2 + 0.236 * y - 17.315 == pytest.approx(0.8, abs=1e-9)


@given(histograms(max_buckets=12), histograms(max_buckets=12), deltas)
def test_definition_8_holds(hi, hj, delta):
    t = stime(hi, hj, delta)
    assert prob_ge(hi, hj, hj.max - t) == pytest.approx(delta, abs=1e-9)


@given(histograms(max_buckets=12), histograms(max_buckets=12), deltas, st.floats(0.01, 50))
def test_lemma_3_monotonicity(hi, hj, delta, theta):
    # d chosen so that prob(Hi + d >= Hj) = delta exactly
    d = hj.max - stime(hi, hj, delta)
    assert prob_ge(hi, hj, d + theta) > delta - 1e-12
    assert prob_ge(hi, hj, d - theta) < delta + 1e-12
    p_up, p_down = prob_ge(hi, hj, d + theta), prob_ge(hi, hj, d - theta)
    assert p_up >= p_down  # and strictly apart unless the step leaves the overlap entirely
    assume(0 < p_down and p_up < 1)
    assert p_up > delta > p_down


@given(histograms(max_buckets=12), histograms(max_buckets=12), deltas, st.floats(-1e4, 1e4))
def test_equation_7_shift_invariance(hi, hj, delta, x):
    assert stime(hi + x, hj, delta) == pytest.approx(stime(hi, hj, delta) + x, abs=1e-6)
    assert stime(hi, hj + x, delta) == pytest.approx(stime(hi, hj, delta), abs=1e-6)


def test_bad_delta_and_side():
    a = H.uniform(0, 1)
    for bad in (0.0, 1.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="delta = .* strictly between 0 and 1"):
            stime(a, a, bad)
    with pytest.raises(ValueError, match="side = 'middle'"):
        stime(a, a, 0.5, side="middle")


def test_flat_crossing_sides():
    # Xi - Xj has no mass in (0, 5), so prob(Hi - x >= Hj) is flat at 0.5 for x in [0, 5]
    hi = H.from_buckets([(0, 10, 0.5), (10, 20, 0.0), (20, 30, 0.5)])
    hj = H.uniform(10, 15)
    right, left = stime(hi, hj, 0.5, side="right"), stime(hi, hj, 0.5, side="left")
    assert right - hj.max == pytest.approx(5.0, abs=1e-9)
    assert left - hj.max == pytest.approx(0.0, abs=1e-9)
    ts_a, ts_b = TemplateSet("A", (hi,)), TemplateSet("B", (hj,))
    assert stime_table(ts_a, ts_b, 0.5, "right")[0, 0] == pytest.approx(right, abs=1e-9)
    assert stime_table(ts_a, ts_b, 0.5, "left")[0, 0] == pytest.approx(left, abs=1e-9)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("delta", [0.01, 0.2, 0.5, 0.8, 0.999])
def test_table_equals_scalar(side, delta):
    rng = np.random.default_rng(int(delta * 1000))
    ha = random_templates(rng, 12, n_buckets=int(rng.integers(1, 12)), max_length=800)
    hb = TemplateSet("B", tuple(random_histogram(rng, int(rng.integers(1, 15))) for _ in range(10)))
    table = stime_table(ha, hb, delta, side)
    scalar = np.array([[stime(a, b, delta, side) for b in hb] for a in ha])
    np.testing.assert_allclose(table, scalar, atol=1e-7)


def test_table_with_zero_probability_buckets_equals_scalar():
    rng = np.random.default_rng(21)
    ha = TemplateSet("A", tuple(random_histogram(rng, 6, zero_probs=True) for _ in range(10)))
    hb = TemplateSet("B", tuple(random_histogram(rng, 5, zero_probs=True) for _ in range(10)))
    for delta in (0.3, 0.7):
        for side in ("right", "left"):
            scalar = np.array([[stime(a, b, delta, side) for b in hb] for a in ha])
            np.testing.assert_allclose(stime_table(ha, hb, delta, side), scalar, atol=1e-7)


def _exact_jc(ha, hb, u, v, t_i, t_j, d, delta):
    return band_prob(ha.event(u, t_i), hb.event(v, t_j), d)


@given(
    template_sets("A", max_buckets=8),
    template_sets("B", max_buckets=8),
    deltas,
    st.data(),
)
def test_theorem_2_decides_like_the_exact_probability(ha, hb, delta, data):
    table = StimeTable.build(ha, hb, delta)
    d = max(ha.pi, hb.pi) + data.draw(st.floats(0, 100))
    u = data.draw(st.integers(0, len(ha) - 1))
    v = data.draw(st.integers(0, len(hb) - 1))
    t_i = data.draw(st.floats(0, 1000))
    t_j = t_i + data.draw(st.floats(-d - 300, d + 300))
    exact = _exact_jc(ha, hb, u, v, t_i, t_j, d, delta)
    fast = bool(table.decide(u, v, t_i, t_j, d))
    # the single-pair satisfaction times decide the same way (Eq. 8 and Eq. 9)
    g0 = t_i - ha[u].max
    if t_j >= t_i:
        scalar = stime(ha[u], hb[v], delta) + d + g0 >= t_j
    else:
        scalar = stime(ha[u], hb[v], 1 - delta, side="left") - d + g0 <= t_j
    if abs(exact - delta) > 1e-9:  # away from the boundary the decisions must be identical
        assert fast == (exact >= delta) == scalar, (exact, delta)


def test_theorem_2_on_a_seeded_sweep():
    rng = np.random.default_rng(4)
    ha = random_templates(rng, 25, n_buckets=6, max_length=200, name="A")
    hb = random_templates(rng, 25, n_buckets=9, max_length=300, name="B")
    for delta in (0.1, 0.6, 0.95):
        table = StimeTable.build(ha, hb, delta)
        d = 300.0 + rng.uniform(0, 50)
        u = rng.integers(0, 25, 2000)
        v = rng.integers(0, 25, 2000)
        t_i = rng.uniform(0, 1e4, 2000)
        t_j = t_i + rng.uniform(-d - 400, d + 400, 2000)
        fast = table.decide(u, v, t_i, t_j, d)
        exact = np.array(
            [_exact_jc(ha, hb, *args, d, delta) for args in zip(u, v, t_i, t_j, strict=True)]
        )
        clear = np.abs(exact - delta) > 1e-9
        assert clear.mean() > 0.99
        np.testing.assert_array_equal(fast[clear], exact[clear] >= delta)
        assert 0.05 < fast.mean() < 0.95  # both outcomes are exercised


def test_fast_path_refuses_small_windows():
    ts = TemplateSet("A", (H.uniform(0, 50),))
    table = StimeTable.build(ts, ts, 0.5)
    assert table.min_d == 50.0
    with pytest.raises(ValueError, match=r"d = 10 is below max\(pi_A, pi_B\) = 50\.0"):
        table.decide(0, 0, 100.0, 120.0, 10)


def test_t_min_is_the_smallest_shifted_inverse_time():
    rng = np.random.default_rng(2)
    ha, hb = random_templates(rng, 6, name="A"), random_templates(rng, 5, name="B")
    table = StimeTable.build(ha, hb, 0.7)
    expected = min(stime(a, b, 0.3, side="left") - a.max for a in ha for b in hb)
    assert table.t_min == pytest.approx(expected, abs=1e-7)


@given(template_sets("A", max_count=3), template_sets("B", max_count=3), deltas)
def test_table_equals_scalar_property(ha, hb, delta):
    for side in ("right", "left"):
        table = stime_table(ha, hb, delta, side)
        for u, a in enumerate(ha):
            for v, b in enumerate(hb):
                assert table[u, v] == pytest.approx(stime(a, b, delta, side), abs=1e-6)


def _quantile(h: HistogramTimestamp, q: float) -> float:
    cdf = np.concatenate([[0.0], np.cumsum(h.probs)])
    return float(np.interp(q, cdf, h.edges))


@given(histograms(max_buckets=12), histograms(max_buckets=12), deltas)
def test_the_quantile_range_of_section_3_1_holds_the_satisfaction_time(hi, hj, delta):
    """The range the stime search is pruned to (PTJoin Section 3.1, after Definition 8):
    max(min(Hi) - t_j, t_i - max(Hj)) <= x* <= min(max(Hi) - t_j, t_i - min(Hj)), x* the
    shift with prob(Hi - x* >= Hj) = delta, t_i and t_j Hi's (1 - delta)- and Hj's
    delta-quantiles; each end within a rounding of the times."""
    x = stime(hi, hj, delta) - hj.max
    t_i, t_j = _quantile(hi, 1 - delta), _quantile(hj, delta)
    lo = max(hi.min - t_j, t_i - hj.max)
    up = min(hi.max - t_j, t_i - hj.min)
    slack = 1e-9 * (abs(hi.min) + abs(hi.max) + abs(hj.min) + abs(hj.max) + 1)
    assert lo - slack <= x <= up + slack
