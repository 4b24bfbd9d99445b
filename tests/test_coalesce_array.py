"""The paper's array extent (``mechanism="paper"``) against re-coalescing the window from
scratch, the compiled kernel against its reference, and the mechanisms against each other;
the generator's split fraction (Section 7.1)."""

from __future__ import annotations

import gc
import itertools
import pickle
import tracemalloc
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.window_oracle import EQUIVALENCES, WindowOracle, flat, readings
from workbench.coalesce import (
    ArrayExtent,
    EagerExtent,
    Equivalence,
    ExtentConfig,
    LazyExtent,
    Readings,
    Window,
    recoalesce,
)
from workbench.coalesce.window import object_bytes
from workbench.experiments.coalescing_mechanisms import split_paths
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.kernels.coalesce_room import MIN_ROOM
from workbench.protocol import BadEventError

ATOMIC = ("inserts", "merges", "splits", "detaches", "deletes", "out_of_order", "late")


@st.composite
def hard_streams(draw):
    """Short streams of hard cases: equal timestamps (a coarse clock), values exactly a
    tolerance apart (0, 1, 2 with tolerance 1; 4 and 5 with relative 0.2: |4 - 5| = 0.2 x 5),
    2 on a quantum's boundary, late tuples landing inside runs, one to three groups, ints
    and floats."""
    n = draw(st.integers(0, 50))
    groups = draw(st.integers(1, 3))
    ts = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    drift = np.arange(n) // 2  # time moves on, with late ones among the draws
    values = draw(st.lists(st.sampled_from([0, 1, 2, 4, 5, 1.0, 4.0]), min_size=n, max_size=n))
    group = draw(st.lists(st.integers(0, groups - 1), min_size=n, max_size=n))
    return [(float(t + d), v, g) for t, d, v, g in zip(ts, drift, values, group, strict=True)]


@settings(max_examples=250, deadline=None)
@given(
    rows=hard_streams(),
    kind=st.sampled_from(["tuples", "time"]),
    size=st.sampled_from([1, 2, 3, 7, 20]),
    eq=st.sampled_from(EQUIVALENCES),
    seed=st.integers(0, 2**16),
)
def test_the_array_extent_equals_the_oracle_and_ours_after_every_arrival(
    rows, kind, size, eq, seed
):
    """After every arrival: the same view as re-coalescing the window and as our extent,
    the same atomic operations counted; the kernel, over random batches, equals its
    reference in view and every counter (the work included)."""
    window = Window(kind, float(size))
    paper = EagerExtent(window, eq, engine="python", mechanism="paper")
    ours, oracle = EagerExtent(window, eq), WindowOracle(window)
    for ts, v, g in rows:
        accepted = oracle.push(ts, v, g)
        out = paper.push(ts, v, g)
        assert out.late == (() if accepted else ((ts, v, g),))
        ours.push(ts, v, g)
        expected = flat(recoalesce(oracle.inside(), eq))
        assert flat(paper.view()) == expected
        assert flat(ours.view()) == expected
        assert len(paper) == len(oracle.inside())
    for name in ATOMIC:
        assert getattr(paper.counters, name) == getattr(ours.counters, name), name
    kernel = ArrayExtent(window, eq)
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.choice(np.arange(1, len(rows)), min(3, max(len(rows) - 1, 0)), False))
    for i, j in itertools.pairwise([0, *cuts, len(rows)]):
        kernel.push_batch(readings(rows[i:j]))
    assert flat(kernel.view()) == flat(paper.view())
    assert replace(kernel.counters, reads=0) == replace(paper.counters, reads=0)


@pytest.mark.parametrize("kind", ["tuples", "time"])
@pytest.mark.parametrize(("cp", "oop"), [(0.5, 0.5), (0.9, 0.1), (0.2, 0.8)])
def test_the_mechanisms_agree_on_the_generator_stream(kind, cp, oop):
    """Section 7.1's stream through both mechanisms compiled, the window steered smaller
    halfway and the clock advanced at the end: the same view and atomic operations; the
    array's work is counted, ours is not."""
    rows = coalescing_rows(np.random.default_rng(11), 6000, cp=cp, oop=oop)
    window = Window(kind, 300)
    paper, ours = EagerExtent(window, mechanism="paper"), EagerExtent(window)
    for i in range(0, 6000, 1700):
        if i == 3400:
            for ext in (paper, ours):
                ext.set_params(window=Window(kind, 120))
        paper.push_batch(readings(rows[i : i + 1700]))
        ours.push_batch(readings(rows[i : i + 1700]))
        assert flat(paper.view()) == flat(ours.view())
    now = max(ts for ts, _, _ in rows) + 60
    paper.advance(now), ours.advance(now)
    assert flat(paper.view()) == flat(ours.view())
    for name in ATOMIC:
        assert getattr(paper.counters, name) == getattr(ours.counters, name), name
    assert paper.counters.splits > 0 and paper.counters.scanned > 0


def test_in_order_arrivals_scan_one_tuple_and_entry_and_shift_nothing():
    """Algorithm 2, Lines 23-29: an in-order arrival of one group reads its latest tuple
    and that tuple's last entry; nothing moves (a new tuple goes at the end, the oldest
    leaves from the front: Lines 5-7)."""
    ext = ArrayExtent(Window("tuples", 6))
    for k in range(40):
        ext.push(float(k), k, "a")
    c = ext.counters
    assert (c.shifted, c.scanned, c.inserts, c.deletes) == (0, 2 * 39, 40, 34)


def test_a_late_arrival_splits_by_shifting_the_tuples_after_it():
    """Function 3: a late value inside a run splits it; the copy and the new tuple are
    placed by shifting the later tuples (another group's) up."""
    ext = ArrayExtent(Window("tuples", 20))
    for ts, v, g in [(1, 5, "a"), (2, 5, "a"), (3, 5, "a"), (2.5, 9, "b"), (4, 9, "b")]:
        ext.push(ts, v, g)
    before = ext.counters.shifted
    ext.push(2.2, 7, "a")  # inside a's run [1, 2, 3]: a split, then a tuple of its own
    assert [(c.ts, c.te, c.group, c.value) for c in ext.view()] == [
        (1.0, 2.2, "a", 5),
        (2.2, 3.0, "a", 7),
        (2.5, 4.0, "b", 9),
        (3.0, 3.0, "a", 5),
    ]
    assert ext.vectors() == [  # the array, in timestamp order: each tuple's vector of keys
        ("a", 5, [(1.0, 0), (2.0, 1)]),
        ("a", 7, [(2.2, 5)]),
        ("b", 9, [(2.5, 3), (4.0, 4)]),
        ("a", 5, [(3.0, 2)]),
    ]
    c = ext.counters
    assert (c.splits, c.inserts) == (1, 3)
    # the copy's one entry, then b's tuple and the copy shift up for the new tuple
    assert c.shifted - before == 1 + 2


def test_mechanism_selects_the_array_extent():
    window = Window("tuples", 4)
    assert type(EagerExtent(window, mechanism="paper")) is ArrayExtent
    paper = ExtentConfig(window=window, mechanism="paper")
    assert type(EagerExtent(paper)) is ArrayExtent and EagerExtent(paper).config is paper
    assert type(EagerExtent(window)) is EagerExtent
    assert EagerExtent(window).config.mechanism == "fast"
    assert EagerExtent(window, mechanism="paper").config.mechanism == "paper"
    assert ArrayExtent(window).clone().config == ArrayExtent(window).config
    with pytest.raises(ValueError, match="mechanism = 'fast'"):
        ArrayExtent(window, mechanism="fast")
    with pytest.raises(ValueError, match="mechanism = 'slow'"):
        ExtentConfig(window=window, mechanism="slow")
    with pytest.raises(ValueError, match="mechanism = 'slow'"):
        EagerExtent(window, mechanism="slow")


def test_the_lazy_extent_takes_both_words():
    """Algorithm 1 already runs on an array of raw tuples: both words give it."""
    rows = coalescing_rows(np.random.default_rng(2), 500, cp=0.6, oop=0.3)
    views = []
    for mechanism in ("fast", "paper"):
        ext = LazyExtent(Window("tuples", 50), mechanism=mechanism)
        ext.push_batch(readings(rows))
        views.append(flat(ext.view()))
    assert views[0] == views[1]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_values_the_array_cannot_hold_are_bad_records(engine):
    ext = ArrayExtent(Window("tuples", 5), engine=engine, on_bad="count")
    values = np.array([80, "hot", 2**60, float("nan"), 80], dtype=object)
    out = ext.push_batch(Readings(np.arange(1.0, 6.0), values, np.zeros(5, dtype=np.int64)))
    assert ext.counters.bad == 3 and [r[0][1] for r in out.bad] == values[1:4].tolist()
    assert [(c.ts, c.te, c.count) for c in ext.view()] == [(1.0, 5.0, 2)]
    with pytest.raises(BadEventError, match="value = 'hot'"):
        ArrayExtent(Window("tuples", 5)).push(1.0, "hot")
    with pytest.raises(BadEventError, match=r"value = Fraction\(1, 3\)"):  # not a float64
        ArrayExtent(Window("tuples", 5)).push(1.0, Fraction(1, 3))
    with pytest.raises(ValueError, match="equivalence.tolerance"):
        ArrayExtent(Window("tuples", 5), Equivalence("absolute", tolerance=2**60))


def test_values_keep_their_types():
    ext = ArrayExtent(Window("tuples", 9))
    for ts, v in [(1, 3), (2, 2.5), (3, True)]:
        ext.push(ts, v, 0)
    assert [type(c.value) for c in ext.view()] == [int, float, bool]
    batch = ArrayExtent(Window("tuples", 9))
    batch.push_batch(readings([(1, 3, 0), (2, 4, 0)]))
    assert [type(c.value) for c in batch.view()] == [int, int]


def test_allocated_bytes_are_the_arrays_and_the_objects_and_shrink_with_the_window():
    ext = ArrayExtent(Window("time", 2000.0))
    rows = coalescing_rows(np.random.default_rng(5), 20_000, cp=0.3, oop=0.2)
    ext.push_batch(readings(rows))
    arrays = (*ext._tuples, *ext._vectors, ext._pos)
    objects = object_bytes([ext._codes, ext._groups, *ext._groups])
    assert ext.allocated_bytes() == sum(a.nbytes for a in arrays) + objects
    big = ext.allocated_bytes()
    assert len(ext._tuples.t_s) >= ext.stored and len(ext._vectors.ts) >= len(ext)
    assert len(ext._tuples.t_s) <= 4 * (ext.stored + 3) + 8  # halved at a quarter
    ext.push(1e9, 1, 0)  # the window moves on: one tuple left
    ext.push(1e9 + 1, 1, 0)  # and the arrays halve to fit it before the next arrival
    assert len(ext) == 2 and len(ext._tuples.t_s) == MIN_ROOM
    assert ext.allocated_bytes() < big / 20


def test_the_eager_array_allocates_less_than_the_lazy_extent_at_high_cp():
    """Section 3.2: coalescing saves memory; the array extent allocates what it holds."""
    rows = coalescing_rows(np.random.default_rng(6), 20_000, cp=0.95, oop=0.05)
    paper, lazy = ArrayExtent(Window("tuples", 5000)), LazyExtent(Window("tuples", 5000))
    paper.push_batch(readings(rows))
    lazy.push_batch(readings(rows))
    live = lazy._slot[lazy._head : lazy._end]
    lazy_bytes = sum(a.nbytes for a in vars(lazy).values() if isinstance(a, np.ndarray))
    lazy_bytes += object_bytes([*lazy._value[live], *lazy._group[live]])
    assert paper.allocated_bytes() < lazy_bytes / 1.5


def test_pickles_and_interleaves_push_and_push_batch():
    rows = coalescing_rows(np.random.default_rng(8), 900, cp=0.7, oop=0.4)
    one = ArrayExtent(Window("tuples", 40), Equivalence("absolute", 2**28))
    mixed = ArrayExtent(Window("tuples", 40), Equivalence("absolute", 2**28))
    for row in rows:
        one.push(*row)
    mixed.push_batch(readings(rows[:300]))
    for row in rows[300:450]:
        mixed.push(*row)
    mixed = pickle.loads(pickle.dumps(mixed))
    mixed.push_batch(readings(rows[450:]))
    assert flat(mixed.view()) == flat(one.view())
    assert replace(mixed.counters, reads=0) == replace(one.counters, reads=0)


# -- the generator (Section 7.1) ---------------------------------------------------------------


@pytest.mark.parametrize(("cp", "oop"), [(0.5, 0.2), (0.7, 0.1), (0.9, 0.1), (0.3, 0.3)])
def test_splits_track_oop_cp_one_minus_cp(cp, oop):
    """A late arrival lands inside its group's latest run (a run when its two latest values
    are equal: ``cp``) and cuts it unless it repeats the value (``1 - cp``): splits at about
    ``oop x cp x (1 - cp)`` of arrivals (fewer as late tuples cut each other's runs)."""
    n = 40_000
    rows = coalescing_rows(np.random.default_rng(1), n, cp=cp, oop=oop)
    ext = EagerExtent(Window("tuples", 1000))
    ext.push_batch(readings(rows))
    model = oop * cp * (1 - cp)
    assert ext.counters.splits / n == pytest.approx(model, rel=0.25)
    assert ext.counters.out_of_order / n == pytest.approx(oop, rel=0.1)


@pytest.mark.parametrize("cp", [0.0, 0.5, 1.0])
def test_no_splits_in_order(cp):
    rows = coalescing_rows(np.random.default_rng(4), 5000, cp=cp, oop=0.0)
    ext = EagerExtent(Window("tuples", 500))
    ext.push_batch(readings(rows))
    assert ext.counters.splits == ext.counters.out_of_order == 0
    assert ext.counters.merges / 5000 == pytest.approx(cp, abs=0.03)


def test_the_generator_defines_cp_in_arrival_order():
    rows = coalescing_rows(np.random.default_rng(9), 30_000, cp=0.6, oop=0.5)
    last, repeats, seen = {}, 0, 0
    for _, value, group in rows:
        if group in last:
            seen += 1
            repeats += last[group] == value
        last[group] = value
    assert repeats / seen == pytest.approx(0.6, abs=0.02)
    with pytest.raises(ValueError, match="cp = 1.5"):
        coalescing_rows(np.random.default_rng(0), 5, cp=1.5, oop=0.0)
    with pytest.raises(ValueError, match="oop = -0.1"):
        coalescing_rows(np.random.default_rng(0), 5, cp=0.5, oop=-0.1)


def test_allocated_bytes_are_what_tracemalloc_sees_the_extent_keep():
    """The arrays' nbytes and the objects: what the process keeps for the extent (the
    extent's own attributes and counters aside), measured by tracemalloc."""
    batch = readings(coalescing_rows(np.random.default_rng(0), 20_000, cp=0.95, oop=0.1))
    ArrayExtent(Window("tuples", 5000)).push_batch(batch[:100])  # kernels loaded before
    gc.collect()
    tracemalloc.start()
    try:
        ext = ArrayExtent(Window("tuples", 5000))
        ext.push_batch(batch)
        gc.collect()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0.8 * kept <= ext.allocated_bytes() <= kept


@pytest.mark.parametrize(
    ("cp", "oop"), [(0.0, 0.5), (0.2, 0.6), (0.5, 0.5), (0.5, 0.9), (0.8, 0.3), (1.0, 0.4)]
)
def test_the_split_counter_counts_the_cuts_and_eq3_counts_line_18(cp, oop):
    """The extents' split counter is the oracle's count of cut runs (a window holding every
    tuple, so no neighbour has expired); Algorithm 2's Line 18 (late, equal to neither
    neighbour) runs on oop x (1 - cp) of arrivals, as Eq. 3 charges C_split; a cut needs a
    run's inner gap, which only a merge makes, so cuts never exceed merges
    (``coalescing_mechanisms`` says why no generator gives cuts at oop x (1 - cp))."""
    n = 6000
    rows = coalescing_rows(np.random.default_rng(3), n, cp=cp, oop=oop)
    paths = split_paths(rows)
    for mechanism in ("fast", "paper"):
        ext = EagerExtent(Window("tuples", n), mechanism=mechanism)
        ext.push_batch(readings(rows))
        assert ext.counters.splits == paths["cuts"]
        assert ext.counters.merges == paths["merges"]
        assert ext.counters.out_of_order == paths["late"]
    assert paths["line18"] / n == pytest.approx(oop * (1 - cp), abs=0.02)
    assert paths["cuts"] <= paths["merges"]
    assert paths["cuts"] / n <= oop * cp * (1 - cp) + 0.01
