"""Every join operator against the brute-force oracle (exact probability, all pairs)."""

from __future__ import annotations

import itertools
import pickle
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.strategies import join_scenario, uniform_set
from workbench.data.synthetic import synthetic_events
from workbench.events import Events, result_checksum, sort_pairs
from workbench.operators import (
    BadEventError,
    BandJoin,
    EagerCorrelation,
    Emitted,
    Envelope,
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
from workbench.paper_examples import example3_templates
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

INTERVAL_OPS = {
    "simple": SimpleCorrelation,
    "ssort": SSortCorrelation,
    "eager": EagerCorrelation,
    "lazy": lambda **kw: LazyCorrelation(max_pending=7, **kw),
    "lazy-time": lambda **kw: LazyCorrelation(max_pending=None, max_wait=25.0, **kw),
    "lookup": lambda **kw: LazyLookupCorrelation(max_pending=9, **kw),
}
PT_OPS = {
    "naive": lambda **kw: PTJoin(mode="naive", **kw),
    "loose": lambda **kw: PTJoin(mode="loose", **kw),
    "tight": lambda **kw: PTJoin(mode="tight", **kw),
}


def _pairs(out) -> np.ndarray:
    return sort_pairs(out.ids)


def _check_against_oracle(op, events, streams, d, threshold, expected=None):
    """``op`` on ``events`` equals the brute-force join (``expected``: that join, if known)."""
    matches, status = replay(op, events)
    got = _pairs(matches)
    assert len({tuple(p) for p in got.tolist()}) == len(got), "a pair came out twice"
    accepted = on_time(events, [s.max_delay for s in streams])
    np.testing.assert_array_equal(status == "late", ~accepted)
    if expected is None:
        expected = brute_force_join(events, streams, d, threshold)
    np.testing.assert_array_equal(got, expected)
    c = op.counters
    assert c.events_in == len(events) and c.results_out == len(expected)
    assert c.late == int((~accepted).sum()) and c.buffered == (0, 0)
    return expected


@pytest.mark.parametrize("name", sorted(INTERVAL_OPS))
@settings(max_examples=60)
@given(data=join_scenario("interval"))
def test_interval_correlation_equals_the_oracle(name, data):
    streams, events, d, ct = data
    op = INTERVAL_OPS[name](streams=streams, d=d, threshold=ct)
    _check_against_oracle(op, events, streams, d, ct)


@pytest.mark.parametrize("name", sorted(PT_OPS))
@settings(max_examples=60)
@given(data=join_scenario("histogram"))
def test_ptjoin_equals_the_oracle(name, data):
    streams, events, d, delta = data
    op = PT_OPS[name](streams=streams, d=d, threshold=delta)
    _check_against_oracle(op, events, streams, d, delta)


@cache
def _larger_stream():  # noqa: ANN202
    """A seeded stream of 600 events and its brute-force join (d 450 ms, delta 0.7), computed
    once for every operator (the oracle takes about 20 s)."""
    rng = np.random.default_rng(7)
    a = random_templates(rng, 12, 8, 300, "A")
    b = random_templates(rng, 10, 10, 400, "B")
    streams = (StreamSpec(a, 150.0), StreamSpec(b, 250.0))
    events = synthetic_events(
        rng, 600, (12, 10), mean_interarrival=15, max_delay=(150, 250), late_fraction=0.02
    )
    return streams, events, brute_force_join(events, streams, 450.0, 0.7)


@pytest.mark.parametrize("name", sorted(PT_OPS))
def test_ptjoin_on_a_seeded_larger_stream(name):
    streams, events, oracle = _larger_stream()
    op = PT_OPS[name](streams=streams, d=450.0, threshold=0.7)
    expected = _check_against_oracle(op, events, streams, 450.0, 0.7, oracle)
    assert len(expected) > 1000
    if name == "tight":
        assert op.counters.stime_lookups > 0
        assert op.counters.prob_evals == 0  # the fast path integrates nothing


JOIN_OPS = {**PT_OPS, "band": BandJoin}


def _engines_agree(make, events, cuts, steer=None):  # noqa: ANN001, ANN201
    """The compiled engine against the python reference on the same batches (rows split at
    ``cuts``, parameters steered before the batch starting at each key of ``steer``): the
    same emissions in the same order, the same counters."""
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    out, counters = {}, {}
    for engine in ("python", "compiled"):
        op, parts = make(engine=engine), []
        for i, j in itertools.pairwise(bounds):
            if steer and i in steer:
                parts.append(op.set_params(**steer[i]))
            parts.append(op.push_batch(events[i:j]))
        parts.append(op.flush())
        out[engine], counters[engine] = Emitted.concat(parts, 2), op.counters
    assert out["compiled"] == out["python"]
    assert counters["compiled"] == counters["python"]


@pytest.mark.parametrize("name", sorted(JOIN_OPS))
@settings(max_examples=40, deadline=None)
@given(data=join_scenario("histogram"), cuts=st.lists(st.integers(0, 200), max_size=6))
def test_compiled_join_equals_the_python_engine(name, data, cuts):
    streams, events, d, delta = data
    make = JOIN_OPS[name]
    _engines_agree(lambda **kw: make(streams=streams, d=d, threshold=delta, **kw), events, cuts)


@pytest.mark.parametrize("name", sorted(JOIN_OPS))
def test_compiled_join_steered_between_batches(name):
    """Steering inside the envelope between batches: tight falls back to the loose path
    below max(pi) and back; eviction stays at the envelope's bound."""
    rng = np.random.default_rng(5)
    a, b = random_templates(rng, 5, 6, 80, "A"), random_templates(rng, 4, 3, 60, "B")
    streams = (StreamSpec(a, 40.0), StreamSpec(b, 70.0))
    events = synthetic_events(
        rng, 300, (5, 4), mean_interarrival=4, max_delay=(40, 70), late_fraction=0.05
    )
    env = Envelope(d_max=200.0, threshold_min=0.3, max_delay=(40.0, 70.0))
    steer = {150: {"d": 20.0, "threshold": 0.5}, 300: {"d": 200.0, "threshold": 0.3}}
    steer[450] = {"d": 90.0, "threshold": 0.9, "max_delay": (20.0, 70.0)}
    _engines_agree(
        lambda **kw: JOIN_OPS[name](streams=streams, d=120.0, threshold=0.8, envelope=env, **kw),
        events,
        [150, 300, 450, 77, 333],
        steer,
    )


@cache
def _larger_interval_stream():  # noqa: ANN202
    """A seeded stream of 800 uniform-interval events and its brute-force join (d 70 ms,
    delta 0.6), computed once for every operator."""
    rng = np.random.default_rng(8)
    sets = [uniform_set(rng, n, 5, 50.0) for n in "AB"]
    streams = (StreamSpec(sets[0], 60.0), StreamSpec(sets[1], 40.0))
    events = synthetic_events(
        rng, 800, (5, 5), mean_interarrival=4, max_delay=(60, 40), late_fraction=0.02
    )
    return streams, events, brute_force_join(events, streams, 70.0, 0.6)


@pytest.mark.parametrize("name", sorted(INTERVAL_OPS))
def test_interval_on_a_seeded_larger_stream(name):
    streams, events, oracle = _larger_interval_stream()
    op = INTERVAL_OPS[name](streams=streams, d=70.0, threshold=0.6)
    expected = _check_against_oracle(op, events, streams, 70.0, 0.6, oracle)
    assert len(expected) > 5000
    if name == "lookup":
        assert op.counters.lookup_reuses > 0


def test_example_3_stream():
    """Example 3: a1 (s1, 60), a2 (s2, 110), a3 (s1, 210); partners from both sensors."""
    templates = example3_templates()
    spec = StreamSpec(templates, max_delay=20.0)
    events = Events(
        stream=np.array([0, 1, 1, 0, 1, 1]),
        id=np.array([1, 2, 4, 3, 5, 6]),
        template=np.array([0, 1, 0, 0, 1, 1]),
        t_det=np.array([60.0, 110.0, 165.0, 210.0, 262.0, 250.0]),
        arrival=np.array([61.0, 112.0, 180.0, 212.0, 263.0, 280.0]),  # b6 is late
    )
    for mode in PT_OPS:
        op = PT_OPS[mode](streams=(spec, spec), d=60.0, threshold=0.8)
        got = _check_against_oracle(op, events, (spec, spec), 60.0, 0.8)
        # prob(|a1 - a2| <= 60) = 0.925; a3 meets b4 (0.906, in LPR) and b5 (in RPR)
        assert got.tolist() == [[1, 2], [3, 4], [3, 5]]


def test_interval_example_1_lookup_reuse():
    """Interval paper, Example 1 / Figure 2: I2 against I11 <= I12 <= I14 (Corollary 2)."""
    lengths = TemplateSet("L", tuple(HistogramTimestamp.uniform(0, x) for x in (10.0, 12.0)))
    spec = StreamSpec(lengths, max_delay=100.0)
    # targets I11, I12, I14 (stream B) with ordered mins and maxes, then base tuples (stream A)
    events = Events(
        stream=np.array([1, 1, 1, 0, 0]),
        id=np.array([11, 12, 14, 1, 2]),
        template=np.array([0, 0, 1, 1, 0]),
        t_det=np.array([100.0, 104.0, 109.0, 140.0, 141.0]),
        arrival=np.array([150.0, 151.0, 152.0, 153.0, 154.0]),
    )
    d, ct = 40.0, 0.5
    op = LazyLookupCorrelation(streams=(spec, spec), d=d, threshold=ct, max_pending=100)
    got = _check_against_oracle(op, events, (spec, spec), d, ct)
    plain = LazyCorrelation(streams=(spec, spec), d=d, threshold=ct, max_pending=100)
    assert _check_against_oracle(plain, events, (spec, spec), d, ct).tolist() == got.tolist()
    assert op.counters.lookup_reuses > 0
    assert op.counters.prob_evals < plain.counters.prob_evals


def test_parameters_steered_inside_the_envelope_stay_exact():
    rng = np.random.default_rng(3)
    a, b = random_templates(rng, 6, 5, 80, "A"), random_templates(rng, 5, 5, 80, "B")
    streams = (StreamSpec(a, 60.0), StreamSpec(b, 60.0))
    events = synthetic_events(rng, 400, (6, 5), mean_interarrival=5, max_delay=(60, 60))
    env = Envelope(d_max=200.0, threshold_min=0.3, max_delay=(60.0, 60.0))
    schedule = {0: (120.0, 0.8), 150: (60.0, 0.5), 300: (200.0, 0.3), 500: (20.0, 0.9)}
    d_at, t_at = np.empty(len(events)), np.empty(len(events))
    for mode in ("loose", "tight"):
        op = PTJoin(streams=streams, d=120.0, threshold=0.8, envelope=env, mode=mode)
        parts = []
        for k, row in enumerate(events.rows()):
            if k in schedule:
                parts.append(op.set_params(d=schedule[k][0], threshold=schedule[k][1]))
            d_at[k], t_at[k] = op.d, op.threshold
            parts.append(op.push(*row))
        parts.append(op.flush())
        got = _pairs(Emitted.concat(parts, 2))
        np.testing.assert_array_equal(got, brute_force_join(events, streams, d_at, t_at))
    with pytest.raises(ValueError, match="d = 250.0 exceeds the envelope's d_max = 200.0"):
        op.set_params(d=250.0)
    with pytest.raises(ValueError, match="threshold = 0.2 is below the envelope's"):
        op.set_params(threshold=0.2)
    with pytest.raises(ValueError, match="max_delay of stream B = 70.0 exceeds"):
        op.set_params(max_delay=(60.0, 70.0))


def test_interval_parameters_steered_inside_the_envelope_stay_exact():
    rng = np.random.default_rng(4)
    sets = [uniform_set(rng, n, 4, 40.0) for n in "AB"]
    streams = (StreamSpec(sets[0], 30.0), StreamSpec(sets[1], 30.0))
    events = synthetic_events(rng, 500, (4, 4), mean_interarrival=3, max_delay=(30, 30))
    env = Envelope(d_max=100.0, threshold_min=0.2, max_delay=(30.0, 30.0))
    schedule = {0: (50.0, 0.7), 200: (100.0, 0.2), 400: (10.0, 0.9), 700: (45.0, 0.5)}
    for name, factory in INTERVAL_OPS.items():
        op = factory(streams=streams, d=50.0, threshold=0.7, envelope=env)
        d_at, t_at, parts = np.empty(len(events)), np.empty(len(events)), []
        for k, row in enumerate(events.rows()):
            if k in schedule:
                parts.append(op.set_params(d=schedule[k][0], threshold=schedule[k][1]))
            d_at[k], t_at[k] = op.d, op.threshold
            parts.append(op.push(*row))
        parts.append(op.flush())
        got = _pairs(Emitted.concat(parts, 2))
        np.testing.assert_array_equal(got, brute_force_join(events, streams, d_at, t_at), name)


@pytest.mark.parametrize("policy", ["raise", "count"])
def test_bad_events(policy):
    spec = StreamSpec(example3_templates(), max_delay=20.0)
    op = PTJoin(streams=(spec, spec), d=60.0, threshold=0.8, on_bad=policy)
    op.push("A", 1, 0, 100.0, 101.0)
    bad = [
        (("C", 2, 0, 100.0, 102.0), "stream = 'C' is not one of"),
        (("A", 2, 5, 100.0, 102.0), "template = 5 is not a template index of stream A"),
        (("A", 2, 0, float("nan"), 102.0), "t_det = nan is not a finite time"),
        (("B", 2, 0, 100.0, 99.0), "arrival = 99.0 precedes t_det = 100.0"),
        (("B", 2, 0, 90.0, 100.0), "arrival = 100.0 is earlier than the clock 101.0"),
    ]
    for args, message in bad:
        if policy == "raise":
            with pytest.raises(BadEventError, match=message):
                op.push(*args)
        else:
            assert op.push(*args).status == "bad"
    assert op.counters.bad == (len(bad) if policy == "count" else 0)
    assert op.push("B", 9, 1, 110.0, 111.0).status == "ok"  # the stream keeps going


def test_late_event_is_reported_and_never_joined():
    spec = StreamSpec(example3_templates(), max_delay=10.0)
    op = PTJoin(streams=(spec, spec), d=60.0, threshold=0.5)
    op.push("A", 1, 0, 100.0, 101.0)
    late = op.push("B", 2, 0, 100.0, 111.0)
    assert late.status == "late" and len(late) == 0 and op.counters.late == 1
    assert op.counters.buffered == (1, 0)


def test_configuration_errors():
    spec = StreamSpec(example3_templates(), max_delay=10.0)
    with pytest.raises(ValueError, match="interval correlation needs uniform intervals"):
        EagerCorrelation(streams=(spec, spec), d=50.0, threshold=0.5)
    with pytest.raises(ValueError, match="mode = 'fast' must be"):
        PTJoin(streams=(spec, spec), d=50.0, threshold=0.5, mode="fast")
    with pytest.raises(ValueError, match="threshold = 1.5 must lie strictly"):
        PTJoin(streams=(spec, spec), d=50.0, threshold=1.5)
    with pytest.raises(ValueError, match="d = -1.0 must be a finite window"):
        PTJoin(streams=(spec, spec), d=-1.0, threshold=0.5)
    with pytest.raises(ValueError, match="max_delay = -1 must be a finite delay"):
        StreamSpec(example3_templates(), max_delay=-1)
    uni = StreamSpec(TemplateSet("U", (HistogramTimestamp.uniform(0, 5),)), 5.0)
    with pytest.raises(ValueError, match="nothing would re-evaluate"):
        LazyCorrelation(streams=(uni, uni), d=10.0, threshold=0.5, max_pending=None)


def test_every_operator_pickles_mid_stream():
    rng = np.random.default_rng(5)
    sets = [uniform_set(rng, n, 3, 20.0) for n in "AB"]
    streams = (StreamSpec(sets[0], 10.0), StreamSpec(sets[1], 10.0))
    events = synthetic_events(rng, 100, (3, 3), mean_interarrival=3, max_delay=(10, 10))
    factories = {**INTERVAL_OPS, **PT_OPS, "band": BandJoin}
    for name, factory in factories.items():
        op = factory(streams=streams, d=30.0, threshold=0.5)
        first = events.head(100)
        for row in first.rows():
            op.push(*row)
        clone = pickle.loads(pickle.dumps(op))
        rest = Events(
            *(
                col[100:]
                for col in (events.stream, events.id, events.template, events.t_det, events.arrival)
            )
        )
        a, _ = replay(op, rest)
        b, _ = replay(clone, rest)
        np.testing.assert_array_equal(_pairs(a), _pairs(b), name)
        assert clone.counters == op.counters


def test_timer_ticks_release_lazy_blocks():
    uni = StreamSpec(TemplateSet("U", (HistogramTimestamp.uniform(0, 5),)), 5.0)
    op = LazyCorrelation(streams=(uni, uni), d=10.0, threshold=0.5, max_pending=None, max_wait=50)
    assert len(op.push("A", 1, 0, 100.0, 101.0)) == 0
    assert len(op.push("B", 2, 0, 102.0, 103.0)) == 0
    assert len(op.advance(140.0)) == 0  # not yet due
    due = op.advance(151.0)
    assert due.a_ids.tolist() == [1] and due.b_ids.tolist() == [2]
    assert op.counters.results_out == 1
    with pytest.raises(BadEventError, match="now = 100.0 is earlier than the clock 151.0"):
        op.advance(100.0)
    eager = EagerCorrelation(streams=(uni, uni), d=10.0, threshold=0.5)
    assert len(eager.advance(10.0)) == 0 and eager.now == 10.0


def test_checksum_ignores_order_and_sees_one_id_changed():
    ids = np.random.default_rng(0).integers(0, 10**6, size=(500, 3))
    assert (
        result_checksum(ids)
        == result_checksum(ids[::-1])
        == result_checksum(ids[np.argsort(ids[:, 1])])
    )
    changed = ids.copy()
    changed[7, 1] += 1
    assert result_checksum(changed) != result_checksum(ids)
    assert result_checksum(ids[:, ::-1]) != result_checksum(ids)
