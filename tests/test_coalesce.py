"""Eager and lazy window extents against re-coalescing the window from scratch."""

from __future__ import annotations

import pickle
import typing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from window_oracle import WindowOracle

from workbench.coalesce import (
    EagerExtent,
    Equivalence,
    LazyExtent,
    Window,
    recoalesce,
)
from workbench.coalesce.equivalence import KINDS, NUMPY, Kind


def _flat(view):
    return [(c.ts, c.seq, c.te, c.group, c.value, c.count) for c in view]


EQUIVALENCES = [
    Equivalence("equal"),
    Equivalence("quantized", quantum=2.0),
    Equivalence("absolute", tolerance=1.0),
    Equivalence("relative", tolerance=0.2),
    Equivalence("increasing"),
]


@st.composite
def streams(draw):
    n = draw(st.integers(0, 60))
    groups = draw(st.integers(1, 3))
    cp = draw(st.floats(0, 1))
    oop = draw(st.floats(0, 0.5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.uniform(0.5, 2.0, n)).round(1)
    order = np.arange(n)
    for k in range(n):  # swap some tuples back: out-of-order arrival
        if rng.random() < oop:
            j = max(0, k - int(rng.integers(1, 6)))
            order[[j, k]] = order[[k, j]]
    last = {}
    rows = []
    for k in order:
        g = int(rng.integers(0, groups))
        if g in last and rng.random() < cp:
            v = last[g]
        else:
            v = float(rng.integers(0, 6))
        last[g] = v
        rows.append((float(ts[k]), v, g))
    return rows


@settings(max_examples=300)
@given(
    rows=streams(),
    kind=st.sampled_from(["tuples", "time"]),
    size=st.integers(1, 25),
    eq=st.sampled_from(EQUIVALENCES),
)
def test_eager_and_lazy_equal_the_oracle_after_every_arrival(rows, kind, size, eq):
    window = Window(kind, float(size))
    eager, lazy, oracle = EagerExtent(window, eq), LazyExtent(window, eq), WindowOracle(window)
    for ts, v, g in rows:
        accepted = oracle.push(ts, v, g)
        out = eager.push(ts, v, g), lazy.push(ts, v, g)
        assert [o.status == "ok" for o in out] == [accepted, accepted]
        assert all(o.late == (() if accepted else ((ts, v, g),)) for o in out)
        expected = _flat(recoalesce(oracle.inside(), eq))
        assert _flat(lazy.view()) == expected
        assert _flat(eager.view()) == expected
        assert len(eager) == len(lazy) == len(oracle.inside())
    assert eager.counters.late == lazy.counters.late


def test_example_3_andys_salary():
    """Tables 1-3: two adjacent 120k periods coalesce (department is not coalesced on)."""
    ext = EagerExtent(Window("tuples", 10))
    for start, salary in [(2000, 100), (2004, 120), (2008, 120)]:
        ext.push(start, salary, "Andy")
    view = [(c.value, c.ts, c.te) for c in ext.view()]
    assert view == [(100, 2000, 2004), (120, 2004, 2008)]  # the last run lasts until now
    assert len(LazyExtent(Window("tuples", 10)).view()) == 0


def test_example_4_nine_readings_five_tuples():
    """Figure 2: three regions' hourly temperatures, 9 readings coalesce into 5 tuples."""
    readings = {1: [81, 81, 81], 2: [81, 79, 81], 3: [81, 81, 81]}
    for extent in (EagerExtent, LazyExtent):
        ext = extent(Window("tuples", 9))
        for hour in range(3):
            for region, temps in readings.items():
                ext.push(13 + hour, temps[hour], region)
        view = ext.view()
        assert len(view) == 5
        by_region = {r: [(c.value, c.ts, c.te) for c in view if c.group == r] for r in readings}
        assert by_region[1] == [(81, 13, 15)]
        assert by_region[2] == [(81, 13, 14), (79, 14, 15), (81, 15, 15)]
    assert EagerExtent(Window("tuples", 9)).stored == 0


def test_too_late_and_out_of_order_counters():
    ext = EagerExtent(Window("time", 10.0))
    assert ext.push(100, 1.0).status == ext.push(105, 1.0).status == "ok"
    assert ext.push(103, 1.0).status == "ok"  # out of order, merged into the run
    assert ext.push(80, 1.0).late == ((80, 1.0, None),)  # older than 105 - 10: too late
    c = ext.counters
    assert (c.events_in, c.late, c.out_of_order, c.merges) == (4, 1, 1, 2)
    assert ext.stored == 1 and len(ext) == 3


def test_out_of_order_arrival_splits_a_run():
    ext = EagerExtent(Window("tuples", 10))
    for ts in (1, 2, 3, 4):
        ext.push(ts, 5.0)
    ext.push(2.5, 9.0)  # a different value inside the run: splitTuple + addTuple
    assert [(c.ts, c.te, c.value) for c in ext.view()] == [
        (1, 2.5, 5.0),
        (2.5, 3, 9.0),
        (3, 4, 5.0),
    ]
    assert ext.counters.splits == 1


def test_window_validation_and_pickle():
    with pytest.raises(ValueError, match="whole number of tuples"):
        Window("tuples", 2.5)
    with pytest.raises(ValueError, match="kind = 'rows'"):
        Window("rows", 3)
    with pytest.raises(ValueError, match="tolerance = -1"):
        Equivalence("absolute", tolerance=-1)
    ext = EagerExtent(Window("tuples", 5), Equivalence("absolute", tolerance=0.5))
    for ts, v in [(1, 1.0), (2, 1.2), (3, 3.0)]:
        ext.push(ts, v)
    assert _flat(pickle.loads(pickle.dumps(ext)).view()) == _flat(ext.view())


def test_an_unknown_equivalence_kind_is_rejected_naming_the_known_ones():
    known = "known: equal, absolute, relative, increasing, quantized"
    with pytest.raises(ValueError, match=f"kind = 'decreasing' is not a known .*; {known}"):
        Equivalence("decreasing")
    forged = Equivalence("increasing")
    object.__setattr__(forged, "kind", "decreasing")  # past the constructor: never "increasing"
    for judge in (
        lambda: forged.same(1.0, 2.0),
        lambda: forged.same(np.zeros(2), np.ones(2), NUMPY),  # the Spark state's form
        lambda: forged.representative(np.ones(2), NUMPY),
        lambda: forged.transitive,
    ):
        with pytest.raises(ValueError, match=f"'decreasing'.*{known}"):
            judge()
    assert set(typing.get_args(Kind)) == set(KINDS)


@pytest.mark.parametrize("eq", EQUIVALENCES, ids=lambda e: e.kind)
def test_the_numpy_form_judges_as_the_python_form(eq):
    a, b = np.round(np.random.default_rng(0).normal(20.0, 2.0, (2, 500)), 1)
    pairs = zip(a.tolist(), b.tolist(), strict=True)
    assert eq.same(a, b, NUMPY).tolist() == [eq.same(x, y) for x, y in pairs]
    assert eq.representative(a, NUMPY).tolist() == [eq.representative(x) for x in a.tolist()]


def test_several_coalescing_attributes_and_grouping_attributes():
    """A DCQ like ({h, t}, {ep, md}): values and groups are tuples."""
    eq = Equivalence("quantized", quantum=1.0)
    eager, lazy, oracle = (
        EagerExtent(Window("tuples", 8), eq),
        LazyExtent(Window("tuples", 8), eq),
        [],
    )
    rows = [
        (1, (40.2, 20.1), (1, "m1")),
        (2, (40.7, 20.9), (1, "m1")),
        (3, (41.2, 20.5), (1, "m1")),
        (4, (40.1, 20.2), (2, "m1")),
        (2.5, (40.3, 20.4), (1, "m1")),
    ]
    for seq, (ts, v, g) in enumerate(rows):
        eager.push(ts, v, g)
        lazy.push(ts, v, g)
        oracle.append((float(ts), seq, g, v))
        assert _flat(eager.view()) == _flat(lazy.view()) == _flat(recoalesce(oracle, eq))
    first = eager.view()[0]
    assert first.value == (40.0, 20.0) and first.count == 3 and first.te == 3.0
