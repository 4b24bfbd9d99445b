"""Partitions of the partner stream (PTJoin Eq. 4-6, Theorems 3 and 4): sound and tight."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import histograms, template_sets
from workbench.partitions import (
    Partitions,
    Region,
    loose_partitions,
    obsolete_before,
    tight_partitions,
)
from workbench.probability import band_prob, band_prob_many
from workbench.stime import StimeTable
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

H = HistogramTimestamp


def _partners(rng, templates: TemplateSet, lo: float, hi: float, n: int):
    """n partner events with random templates and max times uniform in [lo, hi]."""
    v = rng.integers(0, len(templates), n)
    m = rng.uniform(lo, hi, n)
    return v, m, [templates.event(int(k), float(t)) for k, t in zip(v, m, strict=True)]


@given(histograms(max_buckets=8), template_sets("B", max_buckets=8), st.floats(0, 300), st.data())
def test_loose_partitions_are_sound_for_any_window(hi, hb, d, data):
    p = loose_partitions(hi, d, hb.pi)
    v = data.draw(st.integers(0, len(hb) - 1))
    m = data.draw(st.floats(p.lpr_lo - 500, p.rpr_hi + 500))
    region = Region(int(p.classify(m)))
    prob = band_prob(hi, hb.event(v, m), d)
    if region is Region.SR:
        assert prob == pytest.approx(1.0, abs=1e-12)
    elif region is Region.VR:
        assert prob == pytest.approx(0.0, abs=1e-12)


def test_loose_partition_bounds_are_attained():
    hi = H.from_buckets([(100, 120, 0.5), (120, 140, 0.5)])
    d, longest = 100.0, H.uniform(0, 30)
    p = loose_partitions(hi, d, 30.0)
    at = lambda m: band_prob(hi, longest.detected_at(m), d)  # noqa: E731
    assert at(p.lpr_hi) == pytest.approx(1.0) and at(p.lpr_hi - 1e-6) < 1.0
    assert at(p.lpr_lo) == pytest.approx(0.0) and at(p.lpr_lo + 1e-3) > 0.0
    # RPR's far end is reached by the longest partner, its near end by a point-like one
    assert at(p.rpr_hi) == pytest.approx(0.0) and at(p.rpr_hi - 1e-3) > 0.0
    point = H.uniform(0, 1e-9)
    assert band_prob(hi, point.detected_at(p.rpr_lo + 1e-6), d) < 1.0


def _check_tight(table: StimeTable, d: float, rng: np.random.Generator, samples: int = 300) -> None:
    ha, hb, delta = table.templates_a, table.templates_b, table.delta
    for u in range(len(ha)):
        t_i = float(rng.uniform(0, 1e4))
        hi = ha.event(u, t_i)
        p = tight_partitions(table, u, t_i, d)
        # soundness: sampled partners in SR satisfy, in VR violate (the probability of every
        # pair at once: band_prob_many, vectorised, equals band_prob to rounding)
        _, m, partners = _partners(rng, hb, p.lpr_lo - 2 * d, p.rpr_hi + 2 * d, samples)
        probs = band_prob_many([hi] * samples, partners, d)
        region = p.classify(m)
        assert np.all(probs[region == Region.SR] >= delta - 1e-9)
        assert np.all(probs[region == Region.VR] < delta + 1e-9)
        # tightness: each bound is exactly where one template's probability reaches delta
        g0 = t_i - ha[u].max
        for bound, row in ((p.lpr_lo, table.inv[u]), (p.lpr_hi, table.inv[u])):
            v = int(np.argmin(row) if bound == p.lpr_lo else np.argmax(row))
            assert row[v] + g0 - d == pytest.approx(bound)
            assert band_prob(hi, hb.event(v, bound), d) == pytest.approx(delta, abs=1e-7)
        for bound, row in ((p.rpr_lo, table.sat[u]), (p.rpr_hi, table.sat[u])):
            v = int(np.argmin(row) if bound == p.rpr_lo else np.argmax(row))
            assert band_prob(hi, hb.event(v, bound), d) == pytest.approx(delta, abs=1e-7)
        # and they are at least as tight as Eq. 4-6
        loose = loose_partitions(hi, d, hb.pi)
        assert loose.lpr_lo <= p.lpr_lo + 1e-9 and p.rpr_hi <= loose.rpr_hi + 1e-9
        assert p.lpr_hi <= loose.lpr_hi + 1e-9 and loose.rpr_lo <= p.rpr_lo + 1e-9


@pytest.mark.parametrize("delta", [0.1, 0.5, 0.8, 0.97])
def test_theorem_3_partitions_are_sound_and_tight(delta):
    rng = np.random.default_rng(int(delta * 100))
    ha = random_templates(rng, 8, n_buckets=6, max_length=400, name="A")
    hb = random_templates(rng, 12, n_buckets=10, max_length=600, name="B")
    table = StimeTable.build(ha, hb, delta)
    _check_tight(table, d=600.0 + rng.uniform(0, 200), rng=rng)


@given(template_sets("A", max_buckets=6), template_sets("B", max_buckets=6), st.floats(0.05, 0.95))
def test_theorem_3_property(ha, hb, delta):
    table = StimeTable.build(ha, hb, delta)
    # 100 sampled partners per template and example (300 in the seeded cases above): the
    # bounds' tightness is checked exactly in every example
    _check_tight(table, d=max(ha.pi, hb.pi) + 1.0, rng=np.random.default_rng(0), samples=100)


def test_theorem_4_bound_is_sound():
    rng = np.random.default_rng(12)
    ha = random_templates(rng, 10, n_buckets=5, max_length=300, name="A")
    hb = random_templates(rng, 10, n_buckets=5, max_length=300, name="B")
    delta, d, delay = 0.7, 350.0, 500.0
    table = StimeTable.build(ha, hb, delta)
    t_i = 5_000.0
    bound = obsolete_before(table, t_i, d, delay)
    # any A event that may still arrive has max time >= t_i - D_A; no B event below the bound
    # (and as late as possible: just under it) can join any of them
    for _ in range(300):
        u, v = int(rng.integers(0, 10)), int(rng.integers(0, 10))
        t_future = t_i - delay + rng.uniform(0, 2 * delay)
        m = bound - rng.uniform(1e-6, 50)
        assert band_prob(ha.event(u, t_future), hb.event(v, m), d) < delta
    # and the bound is tight: at the bound, the worst-case pair reaches delta exactly
    u, v = np.unravel_index(np.argmin(table.inv - table.max_a[:, None]), table.inv.shape)
    prob = band_prob(ha.event(int(u), t_i - delay), hb.event(int(v), bound), d)
    assert prob == pytest.approx(delta, abs=1e-7)


def test_index_ranges_agree_with_classify():
    rng = np.random.default_rng(3)
    m = np.sort(rng.uniform(-50, 150, 500))
    for p in (Partitions(0, 20, 60, 100), Partitions(0, 70, 40, 100)):
        ranges = p.index_ranges(m)
        region = p.classify(m)
        lo, hi = ranges["LPR"][0], ranges["RPR"][1]
        assert np.all(region[:lo] == Region.VR) and np.all(region[hi:] == Region.VR)
        assert np.all(region[slice(*ranges["SR"])] == Region.SR)
        assert np.all(region[slice(*ranges["LPR"])] == Region.PR)
        assert np.all(region[slice(*ranges["RPR"])] == Region.PR)
        assert (region == Region.PR).sum() == np.diff(ranges["LPR"]) + np.diff(ranges["RPR"])


def test_partition_validation():
    with pytest.raises(ValueError, match="lpr_lo = 5 exceeds lpr_hi = 1"):
        Partitions(5, 1, 6, 7)
    with pytest.raises(ValueError, match="rpr_hi = nan must be a finite number"):
        Partitions(0, 1, 2, float("nan"))
    with pytest.raises(ValueError, match="pi_b = 0 must be a positive length"):
        loose_partitions(H.uniform(0, 1), 5, 0)
    ts = TemplateSet("A", (H.uniform(0, 10),))
    table = StimeTable.build(ts, ts, 0.5)
    with pytest.raises(ValueError, match="u = 3 is not a template index of stream 'A'"):
        tight_partitions(table, 3, 0.0, 20)
    with pytest.raises(ValueError, match="below max"):
        tight_partitions(table, 0, 0.0, 5)
    with pytest.raises(ValueError, match="max_delay_a = -1"):
        obsolete_before(table, 0.0, 20, -1)
