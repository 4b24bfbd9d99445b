"""Multi-way window joins (W-join paper): every algorithm x implementation x form against
the brute-force oracle."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.operators.oracle import brute_force_wjoin
from workbench.operators.windows import WindowConstraints, WTuples
from workbench.operators.wjoin import BEWJoin, FEWJoin
from workbench.protocol import BadEventError
from workbench.records import Emitted

ENGINES = ("python", "compiled")
MECHANISMS = ("fast", "paper")


def _streams(rng, m, n, mean_gap, delays, keys, late_fraction=0.0, slow=()):
    """m streams of n tuples: exponential gaps (10x longer for the streams in ``slow``, the
    paper's Figure 4), integer values, arrival delay <= D."""
    rows = []
    for s in range(m):
        ts = np.cumsum(rng.exponential(mean_gap * (10 if s in slow else 1), n))
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


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 5),
    form=st.sampled_from(FORMS),
    n=st.integers(0, 14),
    delayed=st.booleans(),
    unequal=st.booleans(),
    engine=st.sampled_from(ENGINES),
)
def test_every_variant_equals_the_oracle(seed, m, form, n, delayed, unequal, engine):
    """Every algorithm x implementation x strategy x mechanism, in either engine, on every
    form, with delayed tuples and unequal rates (half the streams 10x slower, Figure 4)."""
    rng = np.random.default_rng(seed)
    if m == 2 and form in ("path", "graph"):
        form = "non-uniform clique"
    constraints = _random_constraints(rng, m, form)
    delays = list(rng.uniform(0, 6, m)) if delayed else [0.0] * m
    slow = range(m // 2) if unequal else ()
    rows = _streams(rng, m, n, mean_gap=3.0, delays=delays, keys=2, late_fraction=0.1, slow=slow)
    expected = _oracle(rows, constraints)
    for cls, strategy, impl in _variants(constraints.form):
        for mech in MECHANISMS:
            op = cls(
                constraints=constraints,
                max_delay=delays,
                strategy=strategy,
                implementation=impl,
                mechanism=mech,
                engine=engine,
            )
            got = _run(op, rows)
            where = (cls.__name__, strategy, impl, mech)
            assert len(got) == len(set(got)), (*where, "duplicates")
            assert set(got) == expected, where
            c = op.counters
            assert c.results_out == len(expected) and c.buffered == (0,) * m
            assert c.late == sum(r[5] for r in rows)
            assert c.peak_buffered <= sum(not r[5] for r in rows)


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
    for cls, mech in itertools.product((BEWJoin, FEWJoin), MECHANISMS):
        op = cls(constraints=constraints, max_delay=[2.0] * 3, predicate=close, mechanism=mech)
        assert sorted(_run(op, rows)) == sorted(expected), (cls.__name__, mech)


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
    assert all(t[0] >= 39.0 for s in (0, 1) for t in op.buffers.stream(s))
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
    for cls, impl, mech in itertools.product((BEWJoin, FEWJoin), ("nested", "hash"), MECHANISMS):
        op = cls(constraints=wc, max_delay=[3.0] * 3, implementation=impl, mechanism=mech)
        for arrival, s, i, v, ts, _ in rows[:60]:
            op.push(s, i, v, ts, arrival)
        clone = pickle.loads(pickle.dumps(op))
        assert sorted(_run(op, rows[60:])) == sorted(_run(clone, rows[60:]))
        assert op.counters == clone.counters


# -- the compiled engine against the python engine ---------------------------------------------

VALUE_KINDS = {
    "ints": lambda rng, n: rng.integers(0, 3, n),
    "strings": lambda rng, n: rng.choice(np.array(["a", "b", "c"]), n),
    # 1 == 1.0 == True share a key; NaN matches nothing, not even itself
    "objects": lambda rng, n: np.array(
        [[1, 1.0, True, "a", None, float("nan"), (1, 2)][k] for k in rng.integers(0, 7, n)],
        dtype=object,
    ),
}


def _hard_batch(rng, m, n, step, base, delays, kind):
    """Tuples on a grid of ``step`` (ties and gaps exactly on the windows) at absolute time
    ``base``, some late, a few bad (unknown stream, infinite time, arrival before its ts or
    the clock)."""
    stream = rng.integers(0, m, n)
    ts = base + step * np.sort(rng.integers(0, 4 * n, n)).astype(np.float64)
    delay = step * rng.integers(0, 3, n) * (np.array(delays)[stream] > 0)
    late = rng.random(n) < 0.1
    delay[late] += np.array(delays)[stream][late] + step
    order = np.argsort(ts + delay, kind="stable")  # arrival order
    stream, ts, arrival = stream[order], ts[order], (ts + delay)[order]
    bad = rng.random(n) < 0.05
    which = rng.integers(0, 4, n)
    stream = np.where(bad & (which == 0), m, stream)
    ts = np.where(bad & (which == 1), np.inf, ts)
    ts = np.where(bad & (which == 2), arrival + step, ts)
    arrival = np.where(bad & (which == 3), arrival - 100 * step, arrival)
    return WTuples(stream, np.arange(n), VALUE_KINDS[kind](rng, n), ts, arrival)


def _state(op):
    """What must agree beside the emissions: buffers (key codes aside: numbered in a
    different order by each engine), clock, arrival numbers, FEW's open period."""
    start = getattr(op, "_start_tuple", None)
    return (
        [[t[:3] for t in op.buffers.stream(s)] for s in range(op.m)],
        op.now,
        op._seq,
        None if start is None else start[:3],
        op._newest.tolist(),
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 4),
    form=st.sampled_from(FORMS),
    step=st.sampled_from([2.0**-20, 0.25, 1.0, 1024.0]),
    base=st.sampled_from([0.0, -5e3, 1e12]),
    kind=st.sampled_from(sorted(VALUE_KINDS)),
    delayed=st.booleans(),
)
def test_compiled_engine_equals_the_python_engine(seed, m, form, step, base, kind, delayed):
    """push_batch through the kernel == the python engine, tuple by tuple, on adversarial
    streams: timestamps and windows on one grid (gaps exactly on a window, ties across
    streams), absolute times near 1e12, windows of 0 and of the whole stream, late and bad
    tuples, random batch splits interleaved with single pushes, steering and advance."""
    rng = np.random.default_rng(seed)
    if m == 2 and form in ("path", "graph"):
        form = "non-uniform clique"
    grid = _random_constraints(rng, m, form).windows
    windows = np.where(np.isfinite(grid), step * np.round(grid / 3), np.inf)
    if rng.random() < 0.2:  # extreme widths: 0, or the whole stream
        windows = np.where(np.isfinite(windows), step * (0 if rng.random() < 0.5 else 1e6), np.inf)
    constraints = WindowConstraints(windows)
    delays = list(step * rng.integers(0, 4, m)) if delayed else [0.0] * m
    batch = _hard_batch(rng, m, 60, step, base, delays, kind)
    variants = [(*v, mech) for v in _variants(constraints.form) for mech in MECHANISMS]
    for cls, strategy, impl, mech in variants:
        config = dict(
            constraints=constraints,
            max_delay=delays,
            strategy=strategy,
            implementation=impl,
            mechanism=mech,
            on_bad="count",
        )
        ops = [cls(**config, engine=e) for e in ("python", "compiled")]
        outs = [[], []]
        bounds = np.unique(np.concatenate(([0, 60], rng.integers(0, 61, 6))))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            action = rng.random()
            for op, out in zip(ops, outs, strict=True):
                if action < 0.2:
                    out.extend(op.push(*row) for row in batch[a:b].rows())
                else:
                    out.append(op.push_batch(batch[a:b]))
                if action > 0.9 and np.isfinite(op.now):
                    out.append(op.set_params(max_delay=[d / 2 for d in op.config.max_delay]))
                    out.append(op.advance(op.now + step))
        got = [Emitted.concat([*out, op.flush()], m) for op, out in zip(ops, outs, strict=True)]
        where = (cls.__name__, strategy, impl, mech)
        assert got[1] == got[0], where
        assert ops[1].counters == ops[0].counters, where
        assert _state(ops[1]) == _state(ops[0]), where


def test_compiled_engine_state_interleaves_with_push_mid_stream():
    """The buffers are one state: half the stream by batch then one by one (and back) gives
    the python engine's emissions and buffers at every step."""
    rng = np.random.default_rng(21)
    wc = WindowConstraints.uniform(3, 6.0)
    rows = _streams(rng, 3, 60, mean_gap=1.0, delays=[2.0] * 3, keys=3, late_fraction=0.1)
    arrival, s, i, v, ts, _ = (np.array(c) for c in zip(*rows, strict=True))
    batch = WTuples(s, i, v, ts, arrival)
    for cls, impl, mech in itertools.product((BEWJoin, FEWJoin), ("nested", "hash"), MECHANISMS):
        config = dict(constraints=wc, max_delay=[2.0] * 3, implementation=impl, mechanism=mech)
        ref, op = cls(**config, engine="python"), cls(**config)
        for a in range(0, len(batch), 30):
            part = batch[a : a + 30]
            want = ref.push_batch(part)
            got = (
                op.push_batch(part)
                if a % 60 == 0
                else Emitted.concat([op.push(*r) for r in part.rows()], 3)
            )
            assert got == want and _state(op) == _state(ref) and op.counters == ref.counters


def test_user_predicate_runs_the_reference_path_in_both_engines():
    rng = np.random.default_rng(22)
    wc = WindowConstraints.uniform(3, 8.0)
    rows = _streams(rng, 3, 30, mean_gap=2.0, delays=[2.0] * 3, keys=5)
    arrival, s, i, v, ts, _ = (np.array(c) for c in zip(*rows, strict=True))
    batch = WTuples(s, i, v, ts, arrival)

    def close(values):
        return max(values) - min(values) <= 1

    for cls in (BEWJoin, FEWJoin):
        ops = [cls(constraints=wc, max_delay=[2.0] * 3, predicate=close, engine=e) for e in ENGINES]
        outs = [Emitted.concat([op.push_batch(batch), op.flush()], 3) for op in ops]
        assert outs[0] == outs[1] and len(outs[0]) and ops[0].counters == ops[1].counters


# -- the paper's mechanisms (Sections 3.1 and 3.2) beside the fast ones -----------------------


def _grid_rows(rng, m, n, delays, empty):
    """Hard cases on an integer grid: ties within and across streams, gaps exactly on the
    windows (integer too), delayed and late tuples, stream ``empty`` (-1: none) empty."""
    rows = []
    for k in range(n):
        s = int(rng.integers(0, m))
        if s == empty:
            continue
        ts = float(rng.integers(0, n + 1))
        late = bool(rng.random() < 0.1)
        delay = float(rng.integers(0, int(delays[s]) + 1)) + (delays[s] + 1 if late else 0)
        rows.append((ts + delay, s, k, int(rng.integers(0, 2)), ts, late))
    rows.sort()
    return rows


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 4),
    form=st.sampled_from(FORMS),
    n=st.integers(0, 24),
    delayed=st.booleans(),
    one_empty=st.booleans(),
)
def test_paper_mechanisms_equal_the_fast_ones_and_the_oracle(seed, m, form, n, delayed, one_empty):
    """The paper's BEW (newest-timestamp expiry met by the search, per-tuple period tests) and
    the paper's FEW (one shared period, trimmed at each restart, blind joins, tuples held
    until a tuple of every stream is) find the oracle's results once each, as the fast
    mechanisms do, on ties and exact window gaps: BEW's at the same pushes, every result
    no earlier than its last tuple's arrival."""
    rng = np.random.default_rng(seed)
    if m == 2 and form in ("path", "graph"):
        form = "non-uniform clique"
    windows = _random_constraints(rng, m, form).windows
    constraints = WindowConstraints(np.where(np.isfinite(windows), np.round(windows / 2), np.inf))
    delays = [float(d) for d in rng.integers(0, 4, m)] if delayed else [0.0] * m
    rows = _grid_rows(rng, m, n, delays, int(rng.integers(0, m)) if one_empty else -1)
    expected = _oracle(rows, constraints)
    for cls, strategy, impl in _variants(constraints.form):
        config = dict(constraints=constraints, max_delay=delays, strategy=strategy)
        fast, paper = (
            cls(**config, implementation=impl, mechanism=mech, engine="python")
            for mech in MECHANISMS
        )
        emitted_at = {}
        for k, (arrival, s, i, v, ts, _) in enumerate(rows):
            want, got = fast.push(s, i, v, ts, arrival), paper.push(s, i, v, ts, arrival)
            for op, out in ((fast, want), (paper, got)):
                for ids in map(tuple, out.ids.tolist()):
                    emitted_at.setdefault(op, {})[ids] = k
            if cls is BEWJoin:
                assert got == want
        ends = [op.flush() for op in (fast, paper)]
        for op, end in zip((fast, paper), ends, strict=True):
            for ids in map(tuple, end.ids.tolist()):
                emitted_at.setdefault(op, {})[ids] = len(rows)
        when = [emitted_at.get(op, {}) for op in (fast, paper)]
        assert set(when[1]) == set(when[0]) == expected, (cls.__name__, strategy, impl)
        assert paper.counters.results_out == len(expected)
        last = {r: max(k for k, row in enumerate(rows) if row[2] in r) for r in expected}
        assert all(w[r] >= last[r] for w in when for r in expected), (cls.__name__, impl)
        assert paper.counters.buffered == (0,) * m


def _batch(rows):
    arrival, s, i, v, ts, _ = (np.array(c) for c in zip(*rows, strict=True))
    return WTuples(s, i, v, ts, arrival)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 4),
    delayed=st.booleans(),
    cuts=st.lists(st.integers(0, 80), max_size=6),
)
def test_push_equals_push_batch_for_any_split(seed, m, delayed, cuts):
    """The python engine's pushes == the compiled engine's batches, cut anywhere: the same
    emissions, counters (visited inside / outside and peak included) and buffers."""
    rng = np.random.default_rng(seed)
    wc = WindowConstraints.uniform(m, 6.0)
    delays = [float(d) for d in rng.integers(0, 3, m)] if delayed else [0.0] * m
    rows = _streams(rng, m, 80 // m, 1.0, delays, keys=2, late_fraction=0.1, slow=range(m // 2))
    batch = _batch(rows)
    bounds = sorted({0, len(batch), *(c for c in cuts if c < len(batch))})
    for cls, impl, mech in itertools.product((BEWJoin, FEWJoin), ("nested", "hash"), MECHANISMS):
        config = dict(constraints=wc, max_delay=delays, implementation=impl, mechanism=mech)
        ref, op = cls(**config, engine="python"), cls(**config, engine="compiled")
        want = Emitted.concat([*(ref.push(*r) for r in batch.rows()), ref.flush()], m)
        parts = [op.push_batch(batch[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        got = Emitted.concat([*parts, op.flush()], m)
        assert got == want and op.counters == ref.counters, (cls.__name__, impl, mech)


def test_paper_bew_tests_every_buffered_tuple_against_its_period():
    """Section 3.1: the paper's nested loop tests each buffered tuple against the period (and
    the key of each one inside; each one older than the period against the expiry bound);
    the fast one binary-searches the period."""
    wc = WindowConstraints.uniform(2, 10.0)
    ops = {
        mech: BEWJoin(constraints=wc, max_delay=[30.0, 30.0], mechanism=mech, engine="python")
        for mech in MECHANISMS
    }
    for op in ops.values():
        for k, ts in enumerate([0.0, 5.0, 30.0]):  # delay 30 keeps 0 and 5 buffered at 31
            op.push(0, k, "a", ts, 30.0)
        assert op.push(1, 9, "a", 31.0, 31.0).ids.tolist() == [[2, 9]]
    # period [21, 41]: fast scans the one tuple inside; paper tests 3 against the period, the
    # one inside against the key, the two older against the expiry bound (kept: D = 30)
    fast, paper = ops["fast"].counters, ops["paper"].counters
    assert (fast.comparisons, fast.visited_inside, fast.visited_outside) == (1, 1, 0)
    assert (paper.comparisons, paper.visited_inside, paper.visited_outside) == (6, 1, 2)


def test_paper_bew_drops_a_tuple_only_when_its_search_meets_it():
    """Section 3.1: the paper's BEW keeps each stream's newest timestamp and drops a tuple the
    search meets older than ``newest_j - D_j - W`` for every other stream j; a stream that
    lags (slow, Figure 4) keeps the others' out-of-window tuples buffered."""
    wc = WindowConstraints.uniform(3, 5.0)
    ops = {
        mech: BEWJoin(constraints=wc, max_delay=[0.0] * 3, mechanism=mech, engine="python")
        for mech in MECHANISMS
    }
    for op in ops.values():
        op.push(2, 100, "a", 0.0, 0.0)  # stream 2 is slow: its newest stays 0
        for k in range(10):
            op.push(k % 2, k, "a", float(k), float(k))
    fast, paper = ops["fast"], ops["paper"]
    assert fast.counters.buffered == (3, 3, 0)  # at 9: nothing below 9 - 5 can join
    # paper: the tuple of stream 2 is met and dropped once both others passed 5; stream 2's
    # newest stays 0, so no tuple of streams 0 and 1 is ever below 0 - 5: all kept, visited
    assert paper.counters.buffered == (5, 5, 0) and paper.counters.dropped == 1
    assert paper.counters.visited_outside == 8 and fast.counters.visited_outside == 0
    # a new tuple of stream 2 at 12: its search meets stream 0's tuples older than its
    # period [7, 17] and drops those below min(9 - 5, 12 - 5) = 4; stream 1 is met only
    # through stream 0's candidate 8 (period [7, 13]), and loses 1 (below min(8, 12) - 5)
    assert paper.push(2, 101, "a", 12.0, 12.0).ids.tolist() == [[8, 7, 101], [8, 9, 101]]
    assert [[t[2] for t in paper.buffers.stream(s)] for s in (0, 1)] == [[4, 6, 8], [3, 5, 7, 9]]
    assert paper.counters.peak_buffered == 10 > fast.counters.peak_buffered == 7


def test_paper_bew_keeps_more_on_unequal_rates_figure_4():
    """The paper's Figure 4 situation: half the streams ten times slower.  The paper's BEW
    visits tuples outside the period and buffers more than the fast BEW, in both engines
    alike (same counters); the results are the same."""
    rng = np.random.default_rng(31)
    wc = WindowConstraints.uniform(4, 5.0)
    rows = _streams(rng, 4, 60, mean_gap=1.0, delays=[0.0] * 4, keys=2, slow=(0, 1))
    batch = _batch(rows)
    for impl in ("nested", "hash"):
        ops = {
            (mech, e): BEWJoin(constraints=wc, max_delay=[0.0] * 4, implementation=impl,
                               mechanism=mech, engine=e)
            for mech in MECHANISMS for e in ENGINES
        }  # fmt: skip
        outs = {k: Emitted.concat([op.push_batch(batch), op.flush()], 4) for k, op in ops.items()}
        assert all(o == outs["fast", "python"] for o in outs.values())
        for mech in MECHANISMS:
            assert ops[mech, "python"].counters == ops[mech, "compiled"].counters
        fast, paper = ops["fast", "compiled"].counters, ops["paper", "compiled"].counters
        assert paper.visited_outside > 0 and paper.peak_buffered > fast.peak_buffered
        assert fast.visited_outside <= fast.visited_inside  # the fast one mostly looks inside


def test_paper_few_shares_one_period_and_trims_at_restart():
    """Section 3.2: tuples inside the period are admitted (one comparison) and joined blindly
    (key tests only, no window test); a tuple outside it is held until a tuple of every
    stream is, then restarts mode 1, which trims what no tuple arriving from its arrival on
    can join, sweeping each stream from its oldest tuple."""
    wc = WindowConstraints.uniform(2, 5.0)
    ops = [
        FEWJoin(constraints=wc, max_delay=[0.0, 0.0], mechanism="paper", engine=e) for e in ENGINES
    ]
    for op in ops:
        out = []
        for s, k, ts in [(0, 1, 0.0), (1, 2, 2.0), (0, 3, 4.0), (1, 4, 5.0)]:
            out += op.push(s, k, "a", ts, ts).ids.tolist()
        assert out == [[1, 2], [3, 2], [1, 4], [3, 4]]  # all inside the period [0, 5]
        c = op.counters
        # 3 admissions; blind joins: 0 + 1 + 1 + 2 key tests; nothing dropped yet
        assert (c.comparisons, c.visited_inside, c.visited_outside, c.dropped) == (7, 4, 0, 0)
        assert op.push(0, 5, "a", 8.0, 8.0).ids.tolist() == []  # outside [0, 5]: held
        assert op.counters.buffered == (3, 2) and op.counters.comparisons == 8
        # stream 1's tuple at 9: every stream held, mode 1 restarts at 8: the sweep drops 0
        # and 2 (below 8 - 5), 5 is joined with 4; then 9, inside [4, 9], with 4 and 8
        assert op.push(1, 6, "a", 9.0, 9.0).ids.tolist() == [[5, 4], [3, 6], [5, 6]]
        assert [t[2] for s in (0, 1) for t in op.buffers.stream(s)] == [3, 5, 4, 6]
        assert op.counters.dropped == 2 and op.counters.comparisons == 8 + 1 + 4 + 1 + 1 + 2
    assert ops[0].counters == ops[1].counters


def test_paper_few_waits_for_a_tuple_of_every_stream():
    """Section 3.2: the paper's mode 1 needs a tuple of every stream to start a period.  With
    stream 2 silent, the paper's FEW emits nothing (it holds the tuples, buffered but not
    joined); at stream 2's first tuple it emits every result BEW emitted at that tuple, the
    same in both engines."""
    rng = np.random.default_rng(3)
    wc = WindowConstraints.uniform(3, 6.0)
    quiet = [r[:5] for r in _streams(rng, 3, 30, 1.0, [0.0] * 3, keys=2) if r[1] != 2]
    end = min(max(r[0] for r in quiet if r[1] == s) for s in (0, 1))
    rows = [r for r in quiet if r[0] <= end]
    rows.append((end, 2, 999, rows[-1][3], end))  # stream 2's first tuple, at the end
    for impl in ("nested", "hash"):
        bew = BEWJoin(constraints=wc, max_delay=[0.0] * 3, implementation=impl)
        papers = [
            FEWJoin(constraints=wc, max_delay=[0.0] * 3, implementation=impl,
                    mechanism="paper", engine=e)
            for e in ENGINES
        ]  # fmt: skip
        for arrival, s, i, v, ts in rows[:-1]:
            assert bew.push(s, i, v, ts, arrival).ids.size == 0
            for op in papers:
                assert op.push(s, i, v, ts, arrival).ids.size == 0
        held = papers[0].counters
        assert held.buffered[2] == 0 and sum(held.buffered) == len(rows) - 1
        assert held.visited_inside == held.comparisons == 0  # nothing joined yet
        assert papers[0].buffers.size(0) == papers[0].buffers.size(1) == 0
        arrival, s, i, v, ts = rows[-1]
        want = {tuple(r) for r in bew.push(s, i, v, ts, arrival).ids.tolist()}
        assert want
        for op in papers:
            assert {tuple(r) for r in op.push(s, i, v, ts, arrival).ids.tolist()} == want
        assert papers[0].counters == papers[1].counters


def test_paper_few_tests_windows_when_a_delay_keeps_more_than_a_period():
    """Where the paper is silent: a delayed partner may still come, so the trim keeps tuples
    more than a period apart, and the new tuple is joined with BEW's period tests."""
    wc = WindowConstraints.uniform(2, 5.0)
    ops = [
        FEWJoin(constraints=wc, max_delay=[10.0, 10.0], mechanism="paper", engine=e)
        for e in ENGINES
    ]
    for op in ops:
        out = []
        for s, k, ts in [(1, 1, 0.0), (1, 2, 9.0), (0, 3, 1.0), (0, 4, 8.0)]:
            out += op.push(s, k, "a", ts, 9.0).ids.tolist()
        assert op.counters.visited_outside == 0 and op.counters.dropped == 0
        out += op.flush().ids.tolist()  # 8 fell outside the period [0, 5]: held until then
        assert out == [[3, 1], [4, 2]]
    assert ops[0].counters == ops[1].counters


def test_paper_mechanisms_run_compiled_in_both_engines():
    rng = np.random.default_rng(23)
    wc = WindowConstraints.uniform(3, 6.0)
    rows = _streams(rng, 3, 40, mean_gap=1.0, delays=[2.0] * 3, keys=3, late_fraction=0.1)
    batch = _batch(rows)
    for cls in (BEWJoin, FEWJoin):
        for impl in ("nested", "hash"):
            ops = [
                cls(
                    constraints=wc,
                    max_delay=[2.0] * 3,
                    implementation=impl,
                    mechanism="paper",
                    engine=e,
                )
                for e in ENGINES
            ]
            assert ops[1]._compiled() and not ops[0]._compiled()
            outs = [Emitted.concat([op.push_batch(batch), op.flush()], 3) for op in ops]
            assert outs[0] == outs[1] and ops[0].counters == ops[1].counters
    with pytest.raises(ValueError, match="mechanism = 'quick' is not fast or paper"):
        BEWJoin(constraints=wc, max_delay=[0.0] * 3, mechanism="quick")
