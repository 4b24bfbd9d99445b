"""LH/LL/RL/RH of the interval timing paper (Section 4.1): sound, tight, and einv's bound."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.exact import band_prob_exact
from workbench.interval_bounds import (
    IntervalBounds,
    interval_bounds,
    interval_bounds_many,
    invalidation_bound,
)
from workbench.partitions import Region
from workbench.probability import band_prob, band_prob_many
from workbench.stime import stime
from workbench.timestamps import HistogramTimestamp

U = HistogramTimestamp.uniform


@st.composite
def settings_(draw, small_d: bool = False):
    lo = draw(st.floats(-1000, 1000))
    length = draw(st.floats(0.5, 200))
    pi = draw(st.floats(0.5, 200))
    hi = lo + length
    if small_d:
        d = draw(st.floats(0, 400))
    else:
        d = max(pi, hi - lo) + draw(st.floats(0, 200))
    ct = draw(st.floats(0.02, 0.98))
    return lo, hi, d, ct, pi


@given(settings_(small_d=True), st.data())
def test_bounds_are_sound(setting, data):
    lo, hi, d, ct, pi = setting
    b = interval_bounds(lo, hi, d, ct, pi)
    x = data.draw(st.floats(b.lh - 2 * d, b.rh + 2 * d))
    length = data.draw(st.floats(1e-3, pi))
    prob = band_prob(U(lo, hi), U(x - length, x), d)
    region = Region(int(b.classify(x)))
    if region is Region.SR:
        assert prob >= ct - 1e-9
    elif region is Region.VR:
        assert prob < ct + 1e-9


@given(settings_())
def test_bounds_are_tight(setting):
    lo, hi, d, ct, pi = setting
    b = interval_bounds(lo, hi, d, ct, pi)
    base = U(lo, hi)
    # the lower bound crosses ct at LL and RL: a length-pi target at LL, a point-like one at RL
    assert band_prob(base, U(b.ll - pi, b.ll), d) == pytest.approx(ct, abs=1e-7)
    eps = 1e-7 * max(1.0, hi - lo)
    assert band_prob(base, U(b.rl - eps, b.rl), d) == pytest.approx(ct, abs=1e-5)
    # the upper bound crosses ct at LH (point-like target) and RH (length-pi target)
    assert band_prob(base, U(b.lh - eps, b.lh), d) == pytest.approx(ct, abs=1e-5)
    assert band_prob(base, U(b.rh - pi, b.rh), d) == pytest.approx(ct, abs=1e-7)


@given(settings_())
def test_closed_forms_equal_the_satisfaction_times(setting):
    """LL and RH are Theorem 3's bounds for one length-pi template (Eq. 9 and Eq. 8)."""
    lo, hi, d, ct, pi = setting
    b = interval_bounds(lo, hi, d, ct, pi)
    base, longest = U(lo, hi), U(0, pi)
    assert b.ll == pytest.approx(stime(base, longest, 1 - ct, side="left") - d, abs=1e-6)
    assert b.rh == pytest.approx(stime(base, longest, ct) + d, abs=1e-6)


def test_sweep_against_brute_force_envelopes():
    """The bounds equal the crossings of the exact min/max over target lengths on a grid."""
    lo, hi, d, ct, pi = 0.0, 40.0, 60.0, 0.7, 50.0
    b = interval_bounds(lo, hi, d, ct, pi)
    xs = np.linspace(b.lh - 20, b.rh + 20, 1201)
    lengths = np.linspace(1e-6, pi, 60)
    grid_x, grid_len = np.meshgrid(xs, lengths, indexing="ij")
    targets = [U(x - ln, x) for x, ln in zip(grid_x.ravel(), grid_len.ravel(), strict=True)]
    probs = band_prob_many([U(lo, hi)] * len(targets), targets, d).reshape(grid_x.shape)
    upper, lower = probs.max(axis=1) >= ct, probs.min(axis=1) >= ct
    step = xs[1] - xs[0]
    assert xs[upper][0] == pytest.approx(b.lh, abs=step)
    assert xs[upper][-1] == pytest.approx(b.rh, abs=step)
    assert xs[lower][0] == pytest.approx(b.ll, abs=step)
    assert xs[lower][-1] == pytest.approx(b.rl, abs=step)


def test_invalidation_bound_is_sound_and_tight():
    rng = np.random.default_rng(1)
    now, delay, pi_base, pi_target, d, ct = 10_000.0, 300.0, 40.0, 60.0, 80.0, 0.6
    bound = invalidation_bound(now, delay, pi_base, d, ct)
    for _ in range(500):
        # any base tuple still to come ends at or after now - delay and is at most pi_base long
        b_max = now - delay + rng.uniform(0, 1000)
        b_len = rng.uniform(1e-3, pi_base)
        t_max = bound - rng.uniform(1e-6, 200)
        t_len = rng.uniform(1e-3, pi_target)
        prob = band_prob(U(b_max - b_len, b_max), U(t_max - t_len, t_max), d)
        assert prob < ct
    worst = U(now - delay - pi_base, now - delay)
    assert band_prob(worst, U(bound - 1e-9, bound), d) == pytest.approx(ct, abs=1e-6)


def test_validation_messages():
    with pytest.raises(ValueError, match="ct = 1.0 must lie strictly"):
        interval_bounds(0, 1, 5, 1.0, 1)
    with pytest.raises(ValueError, match="d = -1 must be a non-negative number"):
        interval_bounds(0, 1, -1, 0.5, 10)
    with pytest.raises(ValueError, match="hi = 0.0 must exceed lo = 1.0"):
        interval_bounds(1, 0, 5, 0.5, 1)
    with pytest.raises(ValueError, match="pi = 0 must be a positive length"):
        interval_bounds(0, 1, 5, 0.5, 0)
    with pytest.raises(ValueError, match="max_delay = -2"):
        invalidation_bound(0, -2, 1, 5, 0.5)
    with pytest.raises(ValueError, match="must satisfy LH <= LL, RL <= RH"):
        IntervalBounds(3, 2, 4, 5)
    assert IntervalBounds(0, 2, 1, 3).classify(1.5) == Region.PR  # empty SR


@given(settings_(small_d=True))
def test_scalar_and_vectorised_bounds_agree(setting):
    lo, hi, d, ct, pi = setting
    b = interval_bounds(lo, hi, d, ct, pi)
    many = interval_bounds_many(np.array([lo, lo]), np.array([hi, hi]), d, ct, pi)
    for got, want in zip((b.lh, b.ll, b.rl, b.rh), many, strict=True):
        assert got == pytest.approx(float(want[1]), abs=1e-9)


@st.composite
def covering_pairs(draw):
    """Intervals I1 covering I2 (ends equal allowed), widths from 1e-6 to 1e6 ms (each at
    least a few thousand float spacings where it lies), at times up to 1e9 ms, and d from pi =
    len(I1) (exactly) upward (Corollary 3's setting)."""
    offset = draw(st.sampled_from([0.0, -5e3, 1e6, 1e9]))
    lo1 = offset + draw(st.floats(0, 1000))
    width = draw(st.sampled_from([1e-6, 1e-3, 1.0, 30.0, 1e6]))
    width = max(width, 4096 * np.spacing(abs(lo1) + 2e6))
    left = draw(st.sampled_from([0.0, 0.25, 0.5]))
    right = draw(st.sampled_from([0.0, 0.25]))
    hi1 = lo1 + width
    lo2, hi2 = lo1 + left * width, hi1 - right * width
    pi = hi1 - lo1  # rounded up where the float difference falls short of the exact length
    if Fraction(hi1) - Fraction(lo1) > Fraction(pi):
        pi = math.nextafter(pi, math.inf)
    d = pi * draw(st.sampled_from([1.0, 1.0 + 1e-9, 2.0, 100.0]))
    return U(lo1, hi1), U(lo2, hi2), d


@given(covering_pairs())
def test_corollary_3_an_interval_covering_another_joins_it_surely(pair):
    """Interval timing paper, Corollary 3: min(I1) <= min(I2), max(I1) >= max(I2) and d >= pi
    give prob(|I1 - I2| <= d) = 1, in exact rationals and in floats alike (the look-up
    technique of Algorithm 6 relies on it)."""
    i1, i2, d = pair
    assert i1.min <= i2.min and i1.max >= i2.max
    assert Fraction(d) >= Fraction(i1.max) - Fraction(i1.min)
    assert band_prob_exact(i1, i2, d) == 1 == band_prob_exact(i2, i1, d)
    assert band_prob(i1, i2, d) == 1.0
