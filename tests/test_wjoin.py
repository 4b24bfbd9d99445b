"""Multi-way window joins (W-join paper): every algorithm x implementation x form against
the brute-force oracle."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.operators.oracle import brute_force_wjoin
from workbench.operators.windows import WindowConstraints
from workbench.operators.wjoin import BEWJoin, FEWJoin
from workbench.protocol import BadEventError


def _streams(rng, m, n, mean_gap, delays, keys, late_fraction=0.0):
    """m streams of n tuples: exponential gaps, integer values, arrival delay <= D."""
    rows = []
    for s in range(m):
        ts = np.cumsum(rng.exponential(mean_gap, n))
        delay = rng.uniform(0, delays[s], n)
        late = rng.random(n) < late_fraction
        delay[late] = delays[s] + rng.uniform(0.5, 5.0, int(late.sum()))
        values = rng.integers(0, keys, n)
        for k in range(n):
            rows.append((ts[k] + delay[k], s, 100 * s + k, int(values[k]), ts[k], bool(late[k])))
    rows.sort()
    return rows


def _oracle(rows, constraints, predicate="equal"):
    m = constraints.m
    values, stamps, ids = ([[] for _ in range(m)] for _ in range(3))
    for _, s, i, v, ts, late in rows:
        if not late:
            values[s].append(v)
            stamps[s].append(ts)
            ids[s].append(i)
    return brute_force_wjoin(values, stamps, ids, constraints, predicate)


def _run(op, rows):
    results = []
    for arrival, s, i, v, ts, _ in rows:
        results.extend(map(tuple, op.push(s, i, v, ts, arrival).ids.tolist()))
    results.extend(map(tuple, op.flush().ids.tolist()))
    return results


def _random_constraints(rng, m, form):
    if form == "uniform clique":
        return WindowConstraints.uniform(m, float(rng.uniform(2, 15)))
    if form == "non-uniform clique":
        w = rng.uniform(2, 15, (m, m))
        return WindowConstraints((w + w.T) / 2)
    if form == "path":
        return WindowConstraints.path(list(rng.uniform(2, 10, m - 1)))
    # a random spanning tree plus random extra edges
    edges = {}
    for j in range(1, m):
        edges[(int(rng.integers(0, j)), j)] = float(rng.uniform(2, 10))
    for i in range(m):
        for j in range(i + 1, m):
            if (i, j) not in edges and rng.random() < 0.3:
                edges[(i, j)] = float(rng.uniform(2, 10))
    return WindowConstraints.graph(m, edges)


def _variants(form):
    strategies = ["uniform", "gca", "lca"] if form == "uniform clique" else ["gca", "lca"]
    out = []
    for impl in ("nested", "hash"):
        for strategy in strategies:
            out.append((BEWJoin, strategy, impl))
            out.append((FEWJoin, strategy, impl))
        if form in ("path", "graph", "non-uniform clique"):
            out.append((BEWJoin, "modified", impl))
    return out


FORMS = ["uniform clique", "non-uniform clique", "path", "graph"]


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 5),
    form=st.sampled_from(FORMS),
    n=st.integers(0, 14),
    delayed=st.booleans(),
)
def test_every_variant_equals_the_oracle(seed, m, form, n, delayed):
    rng = np.random.default_rng(seed)
    if m == 2 and form in ("path", "graph"):
        form = "non-uniform clique"
    constraints = _random_constraints(rng, m, form)
    delays = list(rng.uniform(0, 6, m)) if delayed else [0.0] * m
    rows = _streams(rng, m, n, mean_gap=3.0, delays=delays, keys=2, late_fraction=0.1)
    expected = _oracle(rows, constraints)
    for cls, strategy, impl in _variants(constraints.form):
        op = cls(constraints=constraints, max_delay=delays, strategy=strategy, implementation=impl)
        got = _run(op, rows)
        assert len(got) == len(set(got)), (cls.__name__, strategy, impl, "duplicates")
        assert set(got) == expected, (cls.__name__, strategy, impl)
        c = op.counters
        assert c.results_out == len(expected) and c.buffered == (0,) * m
        assert c.late == sum(r[5] for r in rows)


def test_six_way_uniform_clique_with_delays():
    rng = np.random.default_rng(11)
    constraints = WindowConstraints.uniform(6, 12.0)
    delays = [4.0, 0.0, 2.0, 5.0, 1.0, 3.0]
    rows = _streams(rng, 6, 25, mean_gap=2.0, delays=delays, keys=2)
    expected = _oracle(rows, constraints)
    assert len(expected) > 50
    for cls in (BEWJoin, FEWJoin):
        for impl in ("nested", "hash"):
            op = cls(constraints=constraints, max_delay=delays, implementation=impl)
            got = _run(op, rows)
            assert sorted(got) == sorted(expected)


def test_user_predicate():
    rng = np.random.default_rng(12)
    constraints = WindowConstraints.uniform(3, 8.0)
    rows = _streams(rng, 3, 30, mean_gap=2.0, delays=[2.0, 2.0, 2.0], keys=5)

    def close(values):  # "similar" objects: values within 1 of each other
        return max(values) - min(values) <= 1

    expected = _oracle(rows, constraints, close)
    assert expected
    for cls in (BEWJoin, FEWJoin):
        op = cls(constraints=constraints, max_delay=[2.0] * 3, predicate=close)
        assert sorted(_run(op, rows)) == sorted(expected)


def test_bew_answers_at_once_and_few_waits_for_its_period():
    wc = WindowConstraints.uniform(2, 10.0)
    bew = BEWJoin(constraints=wc, max_delay=[5.0, 5.0])
    few = FEWJoin(constraints=wc, max_delay=[5.0, 5.0])
    for op in (bew, few):
        op.push(0, 1, "x", 100.0, 100.0)
    assert bew.push(1, 2, "x", 103.0, 103.0).ids.tolist() == [[1, 2]]
    assert few.push(1, 2, "x", 103.0, 103.0).ids.tolist() == []  # 100 + D not yet passed
    assert few.advance(105.5).ids.tolist() == [[1, 2]]  # the period of tuple 1 opens


def test_buffers_hold_only_tuples_that_can_still_join():
    wc = WindowConstraints.uniform(2, 10.0)
    op = BEWJoin(constraints=wc, max_delay=[0.0, 0.0])
    for k in range(50):
        op.push(k % 2, k, 0, float(k), float(k))
    # at clock 49 a tuple of the other stream may still come at 49: anything below 39 is gone
    assert all(t[0] >= 39.0 for b in op.buffers for t in b)
    assert op.counters.dropped == 50 - sum(op.counters.buffered)


def test_constraint_forms_and_closure():
    g = WindowConstraints.graph(4, {(0, 1): 5.0, (1, 2): 2.0, (2, 3): 1.0, (0, 3): 20.0})
    assert g.form == "graph"
    assert g.closure()[0, 3] == 8.0 and g.closure()[0, 2] == 7.0
    assert WindowConstraints.path([1.0, 2.0, 3.0]).form == "path"
    with pytest.raises(ValueError, match="streams 0 and 2 are not connected"):
        WindowConstraints.graph(3, {(0, 1): 1.0})
    with pytest.raises(ValueError, match="takes 2 to 6"):
        WindowConstraints.uniform(7, 1.0)
    with pytest.raises(ValueError, match=r"windows\[0\]\[1\] = -1.0 must be a window"):
        WindowConstraints(np.array([[0, -1.0], [-1.0, 0]]))
    with pytest.raises(ValueError, match="needs a uniform clique, the constraints form a path"):
        BEWJoin(constraints=WindowConstraints.path([1.0, 2.0]), max_delay=[0, 0, 0])
    with pytest.raises(ValueError, match="'hash' needs the equality predicate"):
        BEWJoin(
            constraints=WindowConstraints.uniform(2, 1.0),
            max_delay=[0, 0],
            implementation="hash",
            predicate=lambda v: True,
        )
    with pytest.raises(ValueError, match="FEW uses gca or lca"):
        FEWJoin(
            constraints=WindowConstraints.path([1.0, 2.0]), max_delay=[0, 0, 0], strategy="modified"
        )


@pytest.mark.parametrize("policy", ["raise", "count"])
def test_bad_and_late_tuples(policy):
    op = BEWJoin(constraints=WindowConstraints.uniform(2, 5.0), max_delay=[1.0, 1.0], on_bad=policy)
    op.push(0, 1, 0, 10.0, 10.5)
    bad = [
        ((2, 2, 0, 10.0, 11.0), "stream = 2 is not a stream index"),
        ((1, 2, 0, float("inf"), 11.0), "ts = inf is not a finite time"),
        ((1, 2, 0, 12.0, 11.0), "arrival = 11.0 precedes ts = 12.0"),
        ((1, 2, 0, 9.0, 10.0), "arrival = 10.0 is earlier than the clock 10.5"),
    ]
    for args, message in bad:
        if policy == "raise":
            with pytest.raises(BadEventError, match=message):
                op.push(*args)
        else:
            assert op.push(*args).status == "bad"
    assert op.push(1, 3, 0, 5.0, 11.0).status == "late"
    assert op.push(1, 4, 0, 10.2, 11.0).ids.tolist() == [[1, 4]]
    assert op.counters.late == 1 and op.counters.bad == (4 if policy == "count" else 0)


def test_operators_pickle_mid_stream():
    rng = np.random.default_rng(13)
    wc = WindowConstraints.uniform(3, 10.0)
    rows = _streams(rng, 3, 40, mean_gap=1.0, delays=[3.0] * 3, keys=2)
    for cls in (BEWJoin, FEWJoin):
        for impl in ("nested", "hash"):
            op = cls(constraints=wc, max_delay=[3.0] * 3, implementation=impl)
            for arrival, s, i, v, ts, _ in rows[:60]:
                op.push(s, i, v, ts, arrival)
            clone = pickle.loads(pickle.dumps(op))
            assert sorted(_run(op, rows[60:])) == sorted(_run(clone, rows[60:]))
