"""Exact P(Xi >= Xj) and band probabilities (PTJoin Section 2.2) against two oracles:
each other (Theorem 1 vs Lemma 1) and Monte Carlo sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import histograms, random_histogram
from workbench.paper_examples import example3_templates
from workbench.probability import (
    adjusted_histograms,
    band_prob,
    band_prob_many,
    ge,
    ge_batch,
    ge_lemma1,
    ge_theorem1,
    prob_ge,
    prob_ge_many,
)
from workbench.timestamps import HistogramTimestamp, pack_histograms

H = HistogramTimestamp


def test_example_4_probabilities():
    phi1, phi2 = example3_templates()
    h3, h2 = phi1.detected_at(210), phi2.detected_at(110)
    for method in ("theorem1", "lemma1"):
        assert ge(h3 - 90, h2, method=method) == pytest.approx(0.925, abs=1e-12)
        assert ge(h3 - 100, h2, method=method) == pytest.approx(0.76875, abs=1e-12)


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="method = 'mc' must be"):
        ge(H.uniform(0, 1), H.uniform(0, 1), method="mc")


def test_adjusted_histograms_keep_each_density():
    a = H.from_buckets([(0, 4, 0.2), (4, 10, 0.8)])
    b = H.from_buckets([(2, 6, 0.5), (6, 8, 0.5)])
    pts, pa, pb = adjusted_histograms(a, b)
    assert pts.tolist() == [0, 2, 4, 6, 8, 10]
    np.testing.assert_allclose(pa, [0.1, 0.1, 0.8 / 3, 0.8 / 3, 0.8 / 3])
    np.testing.assert_allclose(pb, [0, 0.25, 0.25, 0.5, 0])


@given(histograms(positive=False), histograms(positive=False))
def test_theorem1_equals_lemma1(hi, hj):
    assert ge_theorem1(hi, hj) == pytest.approx(ge_lemma1(hi, hj), abs=1e-12)


def test_theorem1_equals_lemma1_on_overlapping_random_histograms():
    rng = np.random.default_rng(11)
    for _ in range(400):
        hi = random_histogram(rng, int(rng.integers(1, 31)), zero_probs=True)
        hj = random_histogram(rng, int(rng.integers(1, 31)), zero_probs=True)
        hj = hj + (hi.min - hj.min + rng.uniform(-hj.length, hi.length))  # force overlap
        assert abs(ge_theorem1(hi, hj) - ge_lemma1(hi, hj)) <= 1e-12


@given(histograms(), histograms())
def test_complement(hi, hj):
    assert ge_theorem1(hi, hj) + ge_theorem1(hj, hi) == pytest.approx(1.0, abs=1e-12)


@given(histograms(), histograms(), st.floats(-1e4, 1e4))
def test_shift_invariance(hi, hj, x):
    assert ge_theorem1(hi + x, hj + x) == pytest.approx(ge_theorem1(hi, hj), abs=1e-9)


def test_large_clock_values_lose_no_precision():
    # integer edges stay exact at epoch-millisecond magnitudes
    hi = H([0, 7, 10, 30], [0.2, 0.5, 0.3])
    hj = H([5, 6, 20], [0.4, 0.6])
    t0 = 1.7e12
    for f in (ge_theorem1, ge_lemma1):
        assert f(hi + t0, hj + t0) == pytest.approx(f(hi, hj), abs=1e-13)
    assert band_prob(hi + t0, hj + t0, 4) == pytest.approx(band_prob(hi, hj, 4), abs=1e-13)


def _monte_carlo_cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        hi = random_histogram(rng, int(rng.integers(1, 31)))
        hj = random_histogram(rng, int(rng.integers(1, 31)))
        hj = hj + (hi.min - hj.min + rng.uniform(-0.5 * hj.length, hi.length))
        yield rng, hi, hj


SAMPLES = 1_000_000


def _tolerance(p: float) -> float:
    return 5 * np.sqrt(max(p * (1 - p), 1e-4) / SAMPLES)  # 5 standard errors


def test_ge_matches_monte_carlo():
    for rng, hi, hj in _monte_carlo_cases(seed=5, count=12):
        xi, xj = hi.sample(rng, SAMPLES), hj.sample(rng, SAMPLES)
        estimate = float(np.mean(xi >= xj))
        exact = ge_theorem1(hi, hj)
        assert abs(estimate - exact) <= _tolerance(exact), (hi, hj, estimate, exact)


def test_band_and_shifted_probabilities_match_monte_carlo():
    for rng, hi, hj in _monte_carlo_cases(seed=6, count=12):
        d = float(rng.uniform(0, max(hi.length, hj.length)))
        xi, xj = hi.sample(rng, SAMPLES), hj.sample(rng, SAMPLES)
        band = band_prob(hi, hj, d)
        assert abs(np.mean(np.abs(xi - xj) <= d) - band) <= _tolerance(band)
        one_sided = prob_ge(hi, hj, d)
        assert abs(np.mean(xi + d >= xj) - one_sided) <= _tolerance(one_sided)


@given(histograms(), histograms(), st.floats(0, 300))
def test_band_probability_identity(hi, hj, d):
    band = band_prob(hi, hj, d)
    assert 0.0 <= band <= 1.0
    assert band == pytest.approx(band_prob(hj, hi, d), abs=1e-12)  # symmetric
    # the band lies inside each one-sided event
    assert band <= prob_ge(hi, hj, d) + 1e-12 and band <= prob_ge(hj, hi, d) + 1e-12


def test_lemma_2_reduction_when_d_covers_both_lengths():
    rng = np.random.default_rng(8)
    for _ in range(200):
        hi = random_histogram(rng, int(rng.integers(1, 11)))
        hj = random_histogram(rng, int(rng.integers(1, 11)))
        hj = hj + (hi.max - hj.max + rng.uniform(0, 300))  # max(Hj) >= max(Hi)
        d = max(hi.length, hj.length) + rng.uniform(0, 50)
        assert band_prob(hi, hj, d) == pytest.approx(prob_ge(hi, hj, d), abs=1e-12)


def test_band_rejects_negative_window():
    with pytest.raises(ValueError, match=r"d = -1 must be a non-negative"):
        band_prob(H.uniform(0, 1), H.uniform(0, 1), -1)
    with pytest.raises(ValueError, match="non-negative for every pair"):
        band_prob_many([H.uniform(0, 1)], [H.uniform(0, 1)], np.array([-1.0]))
    with pytest.raises(ValueError, match="his has 1 histograms but hjs has 2"):
        prob_ge_many([H.uniform(0, 1)], [H.uniform(0, 1)] * 2)


def test_vectorised_many_equals_scalar():
    rng = np.random.default_rng(9)
    his = [random_histogram(rng, int(rng.integers(1, 31))) for _ in range(300)]
    hjs = [random_histogram(rng, int(rng.integers(1, 31))) for _ in range(300)]
    d = rng.uniform(0, 100, size=300)
    np.testing.assert_allclose(
        prob_ge_many(his, hjs, d),
        [prob_ge(a, b, x) for a, b, x in zip(his, hjs, d, strict=True)],
        atol=1e-12,
    )
    np.testing.assert_allclose(
        band_prob_many(his, hjs, d),
        [band_prob(a, b, x) for a, b, x in zip(his, hjs, d, strict=True)],
        atol=1e-12,
    )


def test_ge_batch_broadcasts_one_histogram_against_many():
    rng = np.random.default_rng(10)
    hi = random_histogram(rng, 5)
    hjs = [random_histogram(rng, 7) for _ in range(50)]
    ej, pj = pack_histograms(hjs)
    got = ge_batch(hi.edges[None], hi.probs[None], ej, pj)
    np.testing.assert_allclose(got, [ge_theorem1(hi, hj) for hj in hjs], atol=1e-12)
