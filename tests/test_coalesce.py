"""Eager and lazy window extents against re-coalescing the window from scratch."""

from __future__ import annotations

import gc
import itertools
import math
import pickle
import tracemalloc
import typing

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.support.window_oracle import EQUIVALENCES, WindowOracle, flat, readings
from workbench.coalesce import (
    EagerExtent,
    Equivalence,
    LazyExtent,
    Readings,
    Window,
    recoalesce,
)
from workbench.coalesce.equivalence import KINDS, NUMPY, Kind
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.kernels.coalesce import KIND_CODES, same
from workbench.records import Emitted


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
        expected = flat(recoalesce(oracle.inside(), eq))
        assert flat(lazy.view()) == expected
        assert flat(eager.view()) == expected
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
    # splitTuple (Function 3) cut the vector: the run's timestamps up to 2.5 stay, the rest
    # moved to a copy; the late tuple has a vector of its own (the values stored once each)
    assert [(v, [ts for ts, _ in keys]) for _, v, keys in ext.vectors()] == [
        (5.0, [1.0, 2.0]),
        (9.0, [2.5]),
        (5.0, [3.0, 4.0]),
    ]
    for _ in range(2):  # expiry detaches the first timestamp, then deletes the tuple
        ext.remove_oldest()
    assert [[ts for ts, _ in keys] for *_, keys in ext.vectors()] == [[2.5], [3.0, 4.0]]
    assert (ext.counters.detaches, ext.counters.deletes) == (1, 1)


def _runs(inside, eq):
    """The oracle's coalesced tuples as (group, keys of their raw tuples), in key order."""
    open_runs, out = {}, []
    for ts, seq, g, v in inside:
        run = open_runs.get(g)
        if run is not None and eq.same(run[1], v):
            run[0].append((ts, seq))
            run[1] = v
            continue
        open_runs[g] = [[(ts, seq)], v]
        out.append((g, open_runs[g][0]))
    return sorted(out, key=lambda r: r[1][0])


@settings(max_examples=150, deadline=None)
@given(
    rows=streams(),
    kind=st.sampled_from(["tuples", "time"]),
    size=st.integers(1, 25),
    eq=st.sampled_from(EQUIVALENCES),
    engine=st.sampled_from(["python", "compiled"]),
)
def test_the_timestamp_vectors_hold_exactly_each_runs_raw_timestamps(rows, kind, size, eq, engine):
    """After every arrival each coalesced tuple's vector holds the keys of its run's raw
    tuples, in order (merge, split, detach as Appendix A), by either engine."""
    window = Window(kind, float(size))
    eager, oracle = EagerExtent(window, eq, engine=engine), WindowOracle(window)
    for row in rows:
        oracle.push(*row)
        eager.push_batch(readings([row]))
        vectors = sorted(((g, keys) for g, _, keys in eager.vectors()), key=lambda r: r[1][0])
        assert vectors == _runs(oracle.inside(), eq)


def _stream(n: int, cp: float) -> Readings:
    """Section 7.1's synthetic stream (oop 0.1) as one batch."""
    rows = coalescing_rows(np.random.default_rng(0), n, cp=cp, oop=0.1)
    return Readings(*(np.array(column) for column in zip(*rows, strict=True)))


def test_the_eager_extent_allocates_a_run_once_with_its_timestamps():
    """One run of equal readings: the eager extent allocates its key order and timestamp
    vector (two int64/float64 pairs per raw tuple, each array at most twice what it holds) and
    the run's value once; the lazy extent keeps every raw tuple whole, its value an object."""
    window, n = Window("tuples", 1000), 1000
    same = readings([(float(t), 20.5, 1) for t in range(n)])
    eager, lazy = EagerExtent(window), LazyExtent(window)
    eager.push_batch(same), lazy.push_batch(same)
    assert eager.stored == 1 and eager.allocated_bytes() < 2 * 32 * n + 4096
    assert lazy.allocated_bytes() > 40 * n + 24 * n  # each raw tuple and its own float
    assert eager.allocated_bytes() < lazy.allocated_bytes()


@pytest.mark.parametrize("cls", [EagerExtent, LazyExtent])
@pytest.mark.parametrize("cp", [0.0, 0.95])
@pytest.mark.parametrize("engine", ["compiled", "python"])
def test_allocated_bytes_are_what_tracemalloc_sees(cls, cp, engine):
    """``allocated_bytes()`` against the bytes tracemalloc traces to an extent built over a
    stream made beforehand (the kernels compiled first): within 10 % + 48 KiB (Python's
    allocator rounds an object up: an int of 28 bytes takes 32; numba's dispatcher keeps a few
    hundred bytes per call of a kernel taking named tuples for a while, about 32 KiB here: not
    the extent's, and released after some thousand calls)."""
    n, window = (
        (8000, Window("tuples", 2000)) if engine == "compiled" else (3000, Window("tuples", 1000))
    )
    batch = _stream(n, cp)
    cls(window, engine=engine).push_batch(batch[:100])  # compiled, types cached
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        ext = cls(window, engine=engine)
        for lo in range(0, n, 1000):
            ext.push_batch(batch[lo : lo + 1000])
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    traced = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert abs(traced - ext.allocated_bytes()) <= 0.1 * traced + 48 * 1024


def test_the_eager_extent_allocates_less_than_the_lazy_one_at_high_cp():
    """Section 3.2 and Eqs. 1-2 in allocated bytes: over 20,000 readings in a 5,000-tuple
    window, eager coalescing allocates less than lazy where about 95 % of arrivals merge, and
    more at cp 0 (each reading a coalesced tuple of its own: its links and vector's place)."""
    window, ratio = Window("tuples", 5000), {}
    for cp in (0.0, 0.95):
        batch = _stream(20_000, cp)
        eager, lazy = EagerExtent(window), LazyExtent(window)
        eager.push_batch(batch), lazy.push_batch(batch)
        ratio[cp] = eager.allocated_bytes() / lazy.allocated_bytes()
    assert ratio[0.95] < 0.85 and ratio[0.0] > 1


@pytest.mark.parametrize("cls", [EagerExtent, LazyExtent])
@pytest.mark.parametrize("engine", ["compiled", "python"])
def test_the_arrays_shrink_with_the_window(cls, engine):
    """A window steered from 2,000 tuples to 20: the arrays shrink with it, to a few times
    what an extent that only ever held 20 allocates."""
    batch = _stream(3000, 0.5)
    ext, small = cls(Window("tuples", 2000), engine=engine), cls(Window("tuples", 20))
    ext.push_batch(batch[:2500])
    full = ext.allocated_bytes()
    ext.set_params(window=Window("tuples", 20))
    ext.push_batch(batch[2500:]), small.push_batch(batch[2500:])
    assert ext.allocated_bytes() < full / 10
    assert ext.allocated_bytes() < 4 * small.allocated_bytes()


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
    assert flat(pickle.loads(pickle.dumps(ext)).view()) == flat(ext.view())


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
        assert flat(eager.view()) == flat(lazy.view()) == flat(recoalesce(oracle, eq))
    first = eager.view()[0]
    assert first.value == (40.0, 20.0) and first.count == 3 and first.te == 3.0


# -- the compiled engine (push_batch's kernel) against the python reference ------------------

HARD_EQUIVALENCES = [
    Equivalence("equal"),
    Equivalence("absolute", tolerance=0.1),
    Equivalence("absolute", tolerance=1),
    Equivalence("relative", tolerance=0.1),
    Equivalence("relative", tolerance=3),
    Equivalence("increasing"),
    Equivalence("quantized", quantum=0.1),
    Equivalence("quantized", quantum=3),
]
VALUE_POOLS = {
    # landing on (or one rounding off) the thresholds 0.1, 1, 3 and their multiples
    "tenths": [0.0, -0.0, 0.1, 0.2, 0.1 + 0.2, 0.3, 0.6, 0.7, 0.9, 1.0, 1.1, 3.0, 3.3],
    "ints": [0, 1, 2, 3, 4, 6, -1, -3, 2**52 - 1, 2**52, -(2**52)],
    "large": [1e12, 1e12 + 0.1, 1e12 + 0.2, 1e12 + 1.0, 1.1e12, -1e12, 2.0**60, 1e300],
    # beyond what the kernel takes: the reference path, in its place
    "wide ints": [1, 2, 2**52 + 1, 2**53, 2**63 + 5],
    "objects": [1.0, 2, (1, 2), "x", None, 2.5],
    "non-finite": [1.0, float("inf"), float("nan"), 1.0],
}
GROUP_POOLS = {
    "ints": [0, 1, 2, 3],
    "strings": ["a", "b", "c"],
    "objects": [None, "a", (1, 2), 0.0, -0.0, True, 1],
    "floats": [0.0, -0.0, 1.5, float("nan")],
}


def _state(ext):
    """What an extent shows, as text: NaN equals NaN, -0.0 differs from 0.0, types show."""
    view = [(c.ts, c.seq, c.te, c.group, c.value, c.count) for c in ext.view()]
    return repr((view, ext.counters, len(ext), ext.oldest(), ext.t_max))


def _emitted(out):
    return repr((out.ids.shape, out.late, out.bad))


@st.composite
def hard_streams(draw):
    """Timestamps near 0 or +-1e12 at a fine or coarse step, with ties and late arrivals;
    values from one pool, groups from another; a window scaled to the step; batch cuts."""
    n = draw(st.integers(0, 70))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = draw(st.sampled_from([0.0, 1e12, -1e12]))
    step = draw(st.sampled_from([1e-3, 1.0, 1e4]))
    ticks = np.sort(rng.integers(0, 40, n))
    late = rng.random(n) < draw(st.sampled_from([0.0, 0.2, 1.0]))  # 1.0: shuffled
    ticks[late] = np.maximum(ticks[late] - rng.integers(1, 40, int(late.sum())), 0)
    values = VALUE_POOLS[draw(st.sampled_from(sorted(VALUE_POOLS)))]
    groups = GROUP_POOLS[draw(st.sampled_from(sorted(GROUP_POOLS)))]
    rows = [
        (base + step * int(t), values[rng.integers(len(values))], groups[rng.integers(len(groups))])
        for t in ticks
    ]
    if draw(st.booleans()):
        window = Window("tuples", draw(st.integers(1, 30)))
    else:
        window = Window("time", step * draw(st.sampled_from([1e-9, 0.5, 1.0, 7.0, 1e6])))
    cuts = np.sort(rng.integers(0, n + 1, draw(st.integers(0, 6)))).tolist()
    return rows, window, [0, *cuts, n]


def _feed(ext, rows, bounds, singles=frozenset()):
    """Push the rows in the batches between ``bounds``, the k-th one by one if k in singles
    (as the batch's rows: a NaN group is a new one at every row, as a batch makes them)."""
    parts = []
    for k, (i, j) in enumerate(itertools.pairwise(bounds)):
        batch = readings(rows[i:j])
        if k in singles:
            parts += [ext.push(*row) for row in batch.rows()]
        else:
            parts.append(ext.push_batch(batch))
    return _emitted(Emitted.concat(parts, 0))


@settings(max_examples=200, deadline=None)
@given(
    stream=hard_streams(),
    eq=st.sampled_from(HARD_EQUIVALENCES),
    cls=st.sampled_from([EagerExtent, LazyExtent]),
    singles=st.frozensets(st.integers(0, 6)),
)
def test_the_compiled_engine_equals_the_python_engine_on_hard_streams(stream, eq, cls, singles):
    """Any split into batches, batches interleaved with single pushes: the same late records,
    view (values and groups of the same types), counters and window as the reference."""
    rows, window, bounds = stream
    numbers = all(isinstance(v, int | float) for _, v, _ in rows)
    finite = numbers and all(math.isfinite(v) for _, v, _ in rows)
    # else Python's rules raise (a - b of strings, floor of infinity)
    assume(numbers or eq.kind == "equal")
    assume(finite or eq.kind != "quantized")
    reference, compiled = cls(window, eq, engine="python"), cls(window, eq)
    assert _feed(compiled, rows, bounds, singles) == _feed(reference, rows, bounds)
    assert _state(compiled) == _state(reference)
    if window.kind == "time" and rows:  # the clock moves on, the oldest tuples expire
        now = max(r[0] for r in rows) + window.size / 2
        compiled.advance(now), reference.advance(now)
        assert _state(compiled) == _state(reference)
    more = [(ts + window.size, v, g) for ts, v, g in rows[::-1]]  # and go on after it
    assert _feed(compiled, more, [0, len(more)]) == _feed(reference, more, [0, len(more)])
    assert _state(compiled) == _state(reference)


@pytest.mark.parametrize("cls", [EagerExtent, LazyExtent])
@pytest.mark.parametrize("kind", ["tuples", "time"])
def test_the_compiled_engine_on_the_benchmark_stream_in_uneven_batches(cls, kind, monkeypatch):
    """A synthetic stream (Section 7.1) through random batch sizes, a steered window halfway:
    the state equals the reference's after every batch, and no row went through ``push``."""
    rng = np.random.default_rng(7)
    rows = coalescing_rows(rng, 3000, cp=0.6, oop=0.3)
    window, eq = Window(kind, 40), Equivalence("absolute", tolerance=2**29)
    reference, compiled = cls(window, eq, engine="python"), cls(window, eq)
    monkeypatch.setattr(compiled, "push", None)  # the kernel takes every row
    bounds = [0, *np.sort(rng.choice(np.arange(1, 3000), 25, replace=False)).tolist(), 3000]
    for k, (i, j) in enumerate(itertools.pairwise(bounds)):
        if k == 12:
            assert compiled.set_params(window=Window(kind, 25)) == reference.set_params(
                window=Window(kind, 25)
            )
        assert compiled.push_batch(readings(rows[i:j])) == reference.push_batch(readings(rows[i:j]))
        assert _state(compiled) == _state(reference)


def test_ever_new_groups_keep_the_eager_state_bounded():
    """Groups that left the window are forgotten (their codes renumbered), in both engines."""
    rows = [(float(i), i % 3, i // 2) for i in range(5000)]
    window = Window("tuples", 10)
    reference, compiled = EagerExtent(window, engine="python"), EagerExtent(window)
    bounds = list(range(0, 5001, 250))
    assert _feed(compiled, rows, bounds, singles={3, 7}) == _feed(reference, rows, bounds)
    assert _state(compiled) == _state(reference)
    assert len(compiled._codes) < 1000 and len(reference._codes) < 1000


@pytest.mark.parametrize("cls", [EagerExtent, LazyExtent])
def test_bad_rows_between_compiled_runs(cls):
    """Non-finite timestamps and unhashable groups are counted one by one in their place."""
    rows = [(1.0, 5, "a"), (float("nan"), 5, "a"), (2.0, 5, ["x"]), (3.0, 6, "a"), (0.5, 5, "b")]
    window = Window("tuples", 3)
    reference = cls(window, on_bad="count", engine="python")
    compiled = cls(window, on_bad="count")
    assert _feed(compiled, rows, [0, len(rows)]) == _feed(reference, rows, [0, len(rows)])
    assert compiled.counters.bad == 2 and _state(compiled) == _state(reference)


def test_a_value_python_cannot_floor_raises_in_both_engines():
    """floor(v / quantum) overflowing: Python's floor raises, so the kernel leaves it."""
    rows = [(1.0, 1e300, 0), (2.0, 1e300, 0)]
    for engine in ("python", "compiled"):
        eq = Equivalence("quantized", quantum=1e-300)
        ext = EagerExtent(Window("tuples", 5), eq, engine=engine)
        with pytest.raises(OverflowError):
            ext.push_batch(readings(rows))


@settings(max_examples=300, deadline=None)
@given(
    a=st.floats(allow_nan=False, allow_infinity=False),
    b=st.floats(allow_nan=False, allow_infinity=False),
    eq=st.sampled_from(HARD_EQUIVALENCES),
    near=st.booleans(),
)
def test_the_kernels_equivalence_judges_as_python(a, b, eq, near):
    """The kernel's rules (float64 copies) against ``Equivalence.same`` (Python floats),
    also for b one tolerance (or quantum) from a, where rounding decides."""
    if near:
        b = a + (eq.tolerance if eq.kind != "quantized" else eq.quantum)
    if eq.kind == "quantized" and not all(np.isfinite([a / eq.quantum, b / eq.quantum])):
        return  # Python's floor raises there: such values never reach the kernel
    code = KIND_CODES[eq.kind]
    assert same(code, float(eq.tolerance), float(eq.quantum), a, b) == eq.same(a, b)


def test_long_vectors_do_not_make_the_pool_compact_at_every_arrival(monkeypatch):
    """A few groups of one long run each (cp = 1): a compaction leaves every vector spare room
    (``coalesce_room.kept_room``), so the vectors do not all move again at once."""
    ext = EagerExtent(Window("tuples", 1000), engine="python")
    repools = []
    monkeypatch.setattr(ext, "_repool", lambda size, own=ext._repool: repools.append(own(size)))
    for t in range(5000):
        ext.push(float(t), 1.0, t % 3)
    assert ext.stored == 3 and len(repools) < 50
