"""Histogram timestamps (PTJoin Definition 1): validation, arithmetic, distribution."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import histograms
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp, pack_histograms

H = HistogramTimestamp


@pytest.mark.parametrize(
    ("edges", "probs", "message"),
    [
        ([0, 1, 2], [0.5, -0.1], r"probs\[1\] = -0\.1 is negative"),
        ([0, 1, 2], [0.5, float("nan")], r"probs\[1\] = nan is not a finite number"),
        ([0, 1, 2], [0.5, float("inf")], r"probs\[1\] = inf is not a finite number"),
        ([0, float("inf")], [1.0], r"edges\[1\] = inf is not a finite number"),
        ([0, 1, 2], [0.5, 0.4], r"probs sum to 0\.9"),
        ([0, 2, 1], [0.5, 0.5], r"edges\[1\] = 2\.0 and edges\[2\] = 1\.0: edges not strictly"),
        ([0, 1, 1], [0.5, 0.5], r"edges\[1\] = 1\.0 and edges\[2\] = 1\.0: zero-length bucket"),
        ([0.0], [], r"at least one bucket, got 0"),
        ([0, 1, 2, 3], [0.5, 0.5], r"edges has 4 values but probs has 2 buckets"),
        ([[0, 1]], [1.0], r"edges must be one-dimensional"),
        (["a", "b"], [1.0], r"edges must be a sequence of numbers"),
    ],
)
def test_bad_histograms_name_field_and_value(edges, probs, message):
    with pytest.raises(ValueError, match=message):
        H(edges, probs)


def test_sum_tolerance_is_1e_9_and_probs_are_renormalised():
    h = H([0, 1, 2], [0.5, 0.5 + 5e-10])
    assert h.probs.sum() == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="probs sum to"):
        H([0, 1, 2], [0.5, 0.5 + 2e-9])


def test_from_buckets_checks_contiguity_and_shape():
    with pytest.raises(ValueError, match=r"buckets\[0\] ends at 10 but buckets\[1\] starts at 12"):
        H.from_buckets([(0, 10, 0.5), (12, 20, 0.5)])
    with pytest.raises(ValueError, match=r"buckets\[1\] = \(10, 20\) is not a \(lo, hi, p\)"):
        H.from_buckets([(0, 10, 0.5), (10, 20)])
    with pytest.raises(ValueError, match="at least one"):
        H.from_buckets([])


def test_arrays_are_immutable_copies():
    edges = np.array([0.0, 1.0])
    h = H(edges, [1.0])
    edges[0] = 5.0
    assert h.min == 0.0
    with pytest.raises(ValueError):
        h.edges[0] = 3.0


def test_definition_1_auxiliaries_and_example_3_event():
    phi1 = H.from_buckets([(0, 20, 0.1), (20, 30, 0.3), (30, 40, 0.6)])
    a1 = phi1.detected_at(60)
    assert (a1.min, a1.max, a1.length, a1.n_buckets) == (20.0, 60.0, 40.0, 3)
    assert a1 == phi1 + 20 == 20 + phi1 == phi1 - (-20)
    assert a1.buckets() == [(20.0, 40.0, 0.1), (40.0, 50.0, 0.3), (50.0, 60.0, 0.6)]
    np.testing.assert_allclose(phi1.density, [0.005, 0.03, 0.06])


def test_uniform_is_one_bucket():
    u = H.uniform(3, 7)
    assert u.buckets() == [(3.0, 7.0, 1.0)]
    with pytest.raises(ValueError, match="zero-length bucket"):
        H.uniform(3, 3)


@given(histograms(), st.floats(0, 1))
def test_quantile_inverts_cdf(h, q):
    assert float(h.cdf(h.quantile(q))) == pytest.approx(q, abs=1e-9)


def test_quantile_rejects_out_of_range():
    with pytest.raises(ValueError, match=r"q = 1\.5 must lie in \[0, 1\]"):
        H.uniform(0, 1).quantile(1.5)


def test_samples_follow_the_histogram():
    h = H.from_buckets([(0, 10, 0.2), (10, 11, 0.5), (11, 31, 0.3)])
    x = h.sample(np.random.default_rng(0), 200_000)
    assert x.min() >= 0 and x.max() <= 31
    for t in (5, 10, 10.5, 20):
        assert np.mean(x <= t) == pytest.approx(float(h.cdf(t)), abs=5e-3)


@given(histograms(), st.floats(-1e6, 1e6))
def test_shift_moves_every_edge(h, x):
    s = h + x
    np.testing.assert_allclose(s.edges, h.edges + x)
    np.testing.assert_array_equal(s.probs, h.probs)


def test_equality_hash_and_pickle():
    a = H.from_buckets([(0, 1, 0.25), (1, 2, 0.75)])
    b = H([0, 1, 2], [0.25, 0.75])
    assert a == b and hash(a) == hash(b) and a != H.uniform(0, 2)
    assert pickle.loads(pickle.dumps(a)) == a
    ts = TemplateSet("A", (a, H.uniform(0, 5)))
    assert pickle.loads(pickle.dumps(ts)) == ts


def test_template_set_parameters():
    ts = TemplateSet("A", [H.uniform(0, 30), H.uniform(0, 50)])
    assert isinstance(ts.templates, tuple)
    assert ts.pi == 50.0 and ts.max_times.tolist() == [30.0, 50.0]
    assert ts.event(0, 100).buckets() == [(70.0, 100.0, 1.0)]
    with pytest.raises(ValueError, match="template index 2 out of range"):
        ts.event(2, 100)
    with pytest.raises(ValueError, match="templates of stream 'B' must not be empty"):
        TemplateSet("B", ())
    with pytest.raises(ValueError, match=r"templates\[0\] = 3 is not a HistogramTimestamp"):
        TemplateSet("B", (3,))


def test_pack_pads_with_empty_buckets():
    three = H.from_buckets([(0, 1, 0.5), (1, 2, 0.25), (2, 4, 0.25)])
    e, p = pack_histograms([H.uniform(0, 1), three])
    assert e.shape == (2, 4) and p.shape == (2, 3)
    assert e[0].tolist() == [0.0, 1.0, 1.0, 1.0] and p[0].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="at least one histogram"):
        pack_histograms([])


def test_random_templates_follow_example_5():
    ts = random_templates(np.random.default_rng(3), 50, n_buckets=10, max_length=1000)
    assert len(ts) == 50
    assert all(t.n_buckets == 10 and t.min == 0.0 for t in ts)
    assert 100 <= min(t.length for t in ts) and ts.pi <= 1000 + 1e-9
    with pytest.raises(ValueError, match="count = 0"):
        random_templates(np.random.default_rng(0), 0)


def test_unpickled_histogram_stays_immutable():
    h = pickle.loads(pickle.dumps(H.from_buckets([(0, 1, 0.25), (1, 2, 0.75)])))
    with pytest.raises(ValueError):
        h.probs[0] = 1.0
    with pytest.raises(ValueError, match="shift x = nan"):
        h.shift(float("nan"))
