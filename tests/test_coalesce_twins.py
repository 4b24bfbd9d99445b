"""Each coalescing extent's Python reference and its kernel, step by step on the same stream:
after every arrival the state arrays are the same, not only the view (the reference methods
name the kernel helpers they mirror: ``kernels.coalesce``, ``kernels.coalesce_array``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_coalesce import streams

from tests.support.window_oracle import EQUIVALENCES
from workbench.coalesce import ArrayExtent, EagerExtent, LazyExtent, Readings, Window
from workbench.kernels.coalesce_array import END, HEAD, LONGEST, RAW, TOP


def _order(ext) -> list:
    """The window's raw tuples in key order (timestamps and what each refers to)."""
    live = slice(ext._head, ext._end)
    return [ext._ts[live].tolist(), ext._slot[live].tolist()]


def _eager_state(ext: EagerExtent) -> list:
    """Every live coalesced tuple's columns and vector, the free stack, the groups' ends, the
    pool's top and the key order (what free tuples and dead pool entries hold aside)."""
    live = ext._live()
    tuples = [
        getattr(ext, name)[live].tolist()
        for name in ("_c_start", "_c_len", "_c_cap", "_c_prev", "_c_next", "_c_code", "_c_number")
    ]
    vectors = []
    for c in live.tolist():
        keys = slice(int(ext._c_start[c]), int(ext._c_start[c] + ext._c_len[c]))
        numbers = ext._v_number[keys].tolist() if ext._per_entry else []
        vectors.append((ext._v_ts[keys].tolist(), ext._v_seq[keys].tolist(), numbers))
    groups = [ext._g_head.tolist(), ext._g_tail.tolist()]
    free = ext._c_free[: ext._n_free_c].tolist()
    return [live.tolist(), tuples, vectors, groups, free, ext._v_top, _order(ext), ext._t_max]


def _array_state(ext: ArrayExtent) -> list:
    """The live tuples' columns and vectors, and the cursors (but the batch's: the next arrival
    number and row, kept in ``_seq`` between calls)."""
    head, end = int(ext._pos[HEAD]), int(ext._pos[END])
    t, v = ext._tuples, ext._vectors
    vectors = []
    for k in range(head, end):
        keys = slice(int(t.start[k]), int(t.start[k] + t.length[k]))
        vectors.append([column[keys].tolist() for column in v if len(column)])
    columns = [column[head:end].tolist() for column in t]
    cursors = [int(ext._pos[k]) for k in (HEAD, END, TOP, RAW, LONGEST)]
    return [columns, vectors, cursors, ext._seq, ext._t_max]


def _lazy_state(ext: LazyExtent) -> list:
    """The key order, each live slot's arrival number and the free stack."""
    live = ext._slot[ext._head : ext._end]
    return [_order(ext), ext._arrival[live].tolist(), ext._free[: ext._n_free].tolist()]


STATE = {EagerExtent: _eager_state, ArrayExtent: _array_state, LazyExtent: _lazy_state}


@settings(max_examples=150, deadline=None)
@given(
    rows=streams(),
    kind=st.sampled_from(["tuples", "time"]),
    size=st.integers(1, 12),
    eq=st.sampled_from(EQUIVALENCES),
    cls=st.sampled_from(list(STATE)),
)
def test_the_reference_and_the_kernel_hold_the_same_arrays_after_every_arrival(
    rows, kind, size, eq, cls
):
    """``push`` (the reference) and a one-row ``push_batch`` (the kernel) from the same empty
    state: the same arrays after each arrival, and the same counters at the end."""
    window = Window(kind, float(size))
    reference, compiled = cls(window, eq, engine="python"), cls(window, eq)
    state = STATE[cls]
    for ts, v, g in rows:
        row = Readings(np.array([ts]), np.array([v]), np.array([g]))
        assert compiled.push_batch(row) == reference.push(ts, v, g)
        assert state(compiled) == state(reference)
    assert compiled.counters == reference.counters


def test_a_split_and_a_bridge_step_by_step():
    """The paper's hard cases by hand (Algorithm 2, Lines 14-19; Appendix A): an arrival
    inside a run that differs splits it, one that equals both neighbours bridges them, ties
    keep arrival order; each step the same arrays in both engines."""
    rows = [(1.0, 5.0, 0), (2.0, 5.0, 0), (4.0, 5.0, 0), (3.0, 7.0, 0), (3.0, 5.0, 0)]
    rows += [(3.5, 7.0, 0), (5.0, 5.0, 1), (2.0, 5.0, 0)]
    for cls in STATE:
        reference = cls(Window("tuples", 6), engine="python")
        compiled = cls(Window("tuples", 6))
        for ts, v, g in rows:
            compiled.push_batch(Readings(np.array([ts]), np.array([v]), np.array([g])))
            reference.push(ts, v, g)
            assert STATE[cls](compiled) == STATE[cls](reference), (cls, ts)
        assert compiled.counters == reference.counters
        assert compiled.counters.splits >= 1 or cls is LazyExtent  # the lazy one stores raw tuples
