"""The coalescing cost model and the optimal eager/lazy selection (Theorem 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.coalesce.cost import (
    AtomicCosts,
    CostGrid,
    Costs,
    Dcq,
    Maxima,
    Weights,
    cost_grid,
    costs,
    maxima,
    objective,
    select,
    select_costs,
    total_cost,
)

positive = st.floats(1e-3, 10.0)


def _subset_costs(dcqs, k, w, atomic, weights):
    """The total cost of every subset of eager queries, the rest sharing one lazy extent
    (Eq. 9-10 stated directly, the shared extent priced at the largest of the queries'
    figures): the oracle of Theorem 1's selection."""
    table = {q.name: costs(q, k, w, atomic) for q in dcqs}
    shared = max(
        (weights.memory * z.memory + weights.update * z.update for _, z in table.values()),
        default=0.0,
    )
    out = {}
    for size in range(len(table) + 1):
        for eager in itertools.combinations(table, size):
            lazy = [name for name in table if name not in eager]
            total = sum(weights.total(table[name][0]) for name in eager)
            if lazy:
                total += shared + sum(weights.scan * table[name][1].scan for name in lazy)
            out[frozenset(eager)] = total
    return out


def _brute_force_cost(dcqs, k, w, atomic, weights):
    return min(_subset_costs(dcqs, k, w, atomic, weights).values())


@given(
    queries=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=0, max_size=7),
    atomic=st.builds(AtomicCosts, *(positive,) * 8),
    weights=st.builds(Weights, st.floats(0, 5), st.floats(0, 100), st.floats(0, 5)),
    k=st.integers(1, 5000),
    w=st.integers(1, 1000),
)
def test_selection_equals_brute_force(queries, atomic, weights, k, w):
    dcqs = [Dcq(f"Q{i}", cp, oop) for i, (cp, oop) in enumerate(queries)]
    fast = select(dcqs, k, w, atomic, weights)
    slow = _brute_force_cost(dcqs, k, w, atomic, weights)
    assert fast.cost == pytest.approx(slow, rel=1e-12, abs=1e-12)


def test_cost_trends_of_section_7():
    c = AtomicCosts(read=1, insert=1, delete=1, attach=1, detach=1, merge=1.5, split=4, coalesce=1)
    lo_cp, _ = costs(Dcq("a", cp=0.1, oop=0.0), 10_000, 1000, c)
    hi_cp, _ = costs(Dcq("b", cp=0.9, oop=0.0), 10_000, 1000, c)
    assert hi_cp.memory < lo_cp.memory and hi_cp.scan < lo_cp.scan  # eager shrinks with cp
    in_order, _ = costs(Dcq("c", cp=0.3, oop=0.0), 10_000, 1000, c)
    late, _ = costs(Dcq("d", cp=0.3, oop=0.8), 10_000, 1000, c)
    assert late.update > in_order.update  # out of order costs eager updates


@pytest.mark.parametrize(
    ("cps", "paper"),
    [
        ([0.1] * 6, set()),  # Case 1: lazy on all
        ([0.8] * 6, {"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"}),  # Case 2: eager on all
        ([0.8] * 3 + [0.1] * 3, {"Q1", "Q2", "Q3"}),  # Case 4
    ],
)
def test_table_5_decisions_with_paper_like_costs(cps, paper):
    """Coalescing during the scan costs as much as reading (the paper's array setting)."""
    c = AtomicCosts(
        read=1, insert=1, delete=0.2, attach=1.2, detach=1, merge=1.2, split=5, coalesce=1
    )
    qs = [Dcq(f"Q{i}", cp, 0.0) for i, cp in enumerate(cps, 1)]
    assert select(qs, 100_000, 10_000, c, Weights(1, 1, 2)).eager == paper


def test_table_5_case_3_differs_from_the_paper():
    """Case 3 (cp 0.5 x3, 0.1 x3): the model keeps all six lazy where the paper made Q1-Q3
    eager; with cp = 0.5 the eager extent's update cost outweighs its scan saving here."""
    c = AtomicCosts(
        read=1, insert=1, delete=0.2, attach=1.2, detach=1, merge=1.2, split=5, coalesce=1
    )
    qs = [Dcq(f"Q{i}", cp, 0.0) for i, cp in enumerate([0.5] * 3 + [0.1] * 3, 1)]
    assert select(qs, 100_000, 10_000, c, Weights(1, 1, 2)).eager == set()


def test_section_6_2_normalisation_by_hand():
    """M_max: the window uncoalesced (Eq. 2); U_max: Eq. 3 with every tuple coalesced (each
    arrival a merge, each expiry a detach); S_max: Eq. 6 with every tuple coalesced during
    the scan.  k = 100 arrivals, w = 10, cp = oop = 0.5, computed by hand."""
    c = AtomicCosts(read=1, insert=2, delete=3, attach=0, detach=4, merge=5, split=6, coalesce=7)
    assert maxima(0.5, 100, 10, c) == Maxima(memory=10 * 32.0, update=860.0, scan=80.0)
    eager, lazy = costs(Dcq("q", cp=0.5, oop=0.5), 100, 10, c)
    # Eq. 3: per arrival 1/4 (2 + 5 + (2 + 6) + 5) = 5, per expiry (4 + 3) / 2 = 3.5
    assert eager.update == pytest.approx((100 * 5 + 90 * 3.5) / 860)
    assert lazy.update == pytest.approx((100 * 2 + 90 * 3) / 860)  # Eq. 4, summed
    assert eager.memory == pytest.approx(10 * (0.5 * 8 + 0.5 * 20) / 320)  # Eq. 1
    assert lazy.memory == 1.0
    assert eager.scan == pytest.approx(1 * 140 / 20 / 80)  # Eq. 5: C_read M / r_eager
    assert lazy.scan == pytest.approx(10 * (0.5 * (7 + 1) + 0.5 * 1) / 80)  # Eq. 6


def test_maxima_read_costs_that_vary_at_cp_1_and_the_query_oop():
    def at(cp, oop):
        return AtomicCosts(1, 1, 1, 1, detach=10 * oop, merge=cp + oop, split=1, coalesce=cp)

    top = maxima(0.25, 10, 4, at)
    assert top.update == pytest.approx(10 * 1.25 + 6 * 2.5)
    assert top.scan == pytest.approx(4 * (1 + 1))
    assert maxima(0.0, 1, 1, AtomicCosts(*[0.0] * 8)) == Maxima(32.0, 1.0, 1.0)  # nothing: 1


@given(
    table=st.lists(
        st.tuples(*(st.floats(0, 5),) * 6).map(lambda v: (Costs(*v[:3]), Costs(*v[3:]))),
        min_size=0,
        max_size=6,
    ),
    weights=st.builds(Weights, st.floats(0, 5), st.floats(0, 100), st.floats(0, 5)),
)
def test_selection_from_measured_costs_equals_brute_force(table, weights):
    """select_costs (Theorem 1 on any normalised costs, e.g. measured ones) is the cheapest
    of all 2^n assignments of objective."""
    named = {f"Q{i}": pair for i, pair in enumerate(table)}
    chosen = select_costs(named, weights)
    every = [
        objective(named, set(eager), weights)
        for size in range(len(named) + 1)
        for eager in itertools.combinations(named, size)
    ]
    assert chosen.cost == pytest.approx(min(every), rel=1e-12, abs=1e-12)
    assert objective(named, chosen.eager, weights) == chosen.cost


def test_bad_probabilities_and_names():
    with pytest.raises(ValueError, match="cp = 1.5 of 'q' must lie in"):
        Dcq("q", 1.5, 0.0)
    c = AtomicCosts(*(1.0,) * 8)
    with pytest.raises(ValueError, match="must be distinct"):
        select([Dcq("q", 0.1, 0.0), Dcq("q", 0.2, 0.0)], 10, 5, c)


def _grid(values):
    """A 3 x 3 CostGrid over cp, oop in {0, 0.5, 1} from 72 atomic costs."""
    cells = [AtomicCosts(*values[8 * i : 8 * i + 8]) for i in range(9)]
    return CostGrid(
        (0.0, 0.5, 1.0), (0.0, 0.5, 1.0), tuple(tuple(cells[3 * r : 3 * r + 3]) for r in range(3))
    )


@given(
    queries=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=0, max_size=5),
    values=st.lists(positive, min_size=72, max_size=72),
    weights=st.builds(Weights, st.floats(0, 5), st.floats(0, 100), st.floats(0, 5)),
    k=st.integers(1, 5000),
    w=st.integers(1, 1000),
)
@settings(max_examples=50)
def test_selection_with_cost_functions_equals_brute_force(queries, values, weights, k, w):
    """Atomic costs that vary with (cp, oop) (Section 7.2) change nothing in Theorem 1: the
    selection is still the cheapest of all 2^n assignments, and costs what total_cost says."""
    dcqs = [Dcq(f"Q{i}", cp, oop) for i, (cp, oop) in enumerate(queries)]
    grid = _grid(values)
    chosen = select(dcqs, k, w, grid, weights)
    every = _subset_costs(dcqs, k, w, grid, weights)
    assert chosen.cost == pytest.approx(min(every.values()), rel=1e-12, abs=1e-12)
    assert total_cost(dcqs, chosen.eager, k, w, grid, weights) == chosen.cost
    for eager, total in every.items():
        assert total_cost(dcqs, eager, k, w, grid, weights) == pytest.approx(total, rel=1e-12)


@given(
    atomic=st.builds(AtomicCosts, *(positive,) * 8), k=st.integers(1, 5000), w=st.integers(1, 1000)
)
@settings(max_examples=30)
def test_constant_cost_functions_are_the_constant_model_exactly(atomic, k, w):
    """The model reads a function of (cp, oop) where it read constants: a function that
    returns the constants (or a grid of them) gives the very same floats."""
    grid = [0.0, 0.3, 1.0]
    weights = Weights(1, 50, 2)
    constant = cost_grid(grid, k, w, atomic, weights)
    for function in (lambda cp, oop: atomic, _grid(list(vars(atomic).values()) * 9)):
        same = cost_grid(grid, k, w, function, weights)
        assert all(np.array_equal(a, b) for a, b in zip(constant, same, strict=True))


def test_cost_grid_interpolates_between_cells_and_clamps_outside():
    values = [float(v) for v in range(72)]
    grid = _grid(values)
    assert grid(0.5, 0.5) == AtomicCosts(*values[32:40])  # a grid point: its own costs
    between = grid(0.25, 0.0).merge  # half way from (0, 0) to (0.5, 0)
    assert between == pytest.approx((values[5] + values[13]) / 2)
    assert grid(-1.0, 2.0) == grid(0.0, 1.0)
    with pytest.raises(ValueError, match="must increase"):
        CostGrid((0.5, 0.0), (0.0,), ((grid(0, 0), grid(0, 0)),))
    with pytest.raises(ValueError, match="finite and non-negative"):
        CostGrid((0.0,), (0.0,), ((AtomicCosts(*[-1.0] * 8),),))
