"""The coalescing cost model and the optimal eager/lazy selection (Theorem 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.coalesce.cost import (
    AtomicCosts,
    Dcq,
    Weights,
    costs,
    measure_atomic_costs,
    select,
)

positive = st.floats(1e-3, 10.0)


def _brute_force_cost(dcqs, k, w, atomic, weights):
    """The least total cost over every subset of eager queries, the rest sharing one lazy
    extent (Eq. 9-10 stated directly): the oracle of Theorem 1's selection."""
    table = {q.name: costs(q, k, w, atomic) for q in dcqs}
    best = np.inf
    for size in range(len(table) + 1):
        for eager in itertools.combinations(table, size):
            lazy = [name for name in table if name not in eager]
            total = sum(weights.total(table[name][0]) for name in eager)
            if lazy:
                shared = table[lazy[0]][1]
                total += weights.memory * shared.memory + weights.update * shared.update
                total += sum(weights.scan * table[name][1].scan for name in lazy)
            best = min(best, total)
    return best


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


def test_measured_costs_are_positive_and_splits_cost_more_than_inserts():
    c = measure_atomic_costs(n=3000)
    assert all(np.isfinite(v) and v >= 0 for v in vars(c).values())
    assert c.insert > 0 and c.read > 0 and c.split > c.insert


def test_bad_probabilities_and_names():
    with pytest.raises(ValueError, match="cp = 1.5 of 'q' must lie in"):
        Dcq("q", 1.5, 0.0)
    c = AtomicCosts(*(1.0,) * 8)
    with pytest.raises(ValueError, match="must be distinct"):
        select([Dcq("q", 0.1, 0.0), Dcq("q", 0.2, 0.0)], 10, 5, c)
