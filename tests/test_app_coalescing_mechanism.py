"""The Coalescing tab's mechanism selector, without a page: the eager extent by our mechanism
or the paper's array (Algorithm 2), the same view, and their work and time side by side."""

from __future__ import annotations

from workbench.app.coalescing_model import EXTENT_INPUTS, CoalescingModel
from workbench.coalesce import ArrayExtent, EagerExtent


def _flat(view):
    """The view, arrival numbers aside (a replay numbers the readings anew)."""
    return [(c.ts, c.te, c.group, c.value, c.count) for c in view]


def test_the_selector_rebuilds_the_eager_extent_by_the_chosen_mechanism():
    model = CoalescingModel(motes=[1, 2])
    assert "mechanism" in EXTENT_INPUTS and model.mechanism == "fast"
    assert type(model.eager) is EagerExtent
    model.step(200)
    ours = _flat(model.eager.view())
    model.mechanism = "paper"  # the latest readings replayed into the array extent
    assert type(model.eager) is ArrayExtent and model.eager.config.mechanism == "paper"
    assert _flat(model.eager.view()) == ours
    model.step(100)  # and it streams on
    assert sum(c.count for c in model.eager.view()) == len(model.lazy.raw())
    model.mechanism = "fast"
    assert type(model.eager) is EagerExtent


def test_the_readout_compares_the_mechanisms_work_and_time():
    model = CoalescingModel(motes=[1, 2], mechanism="paper")
    table = model.mechanisms()
    assert table.mechanism.tolist() == ["fast", "paper"]
    assert (table.pushes_per_s > 0).all() and table.stored.nunique() == 1
    fast, paper = table.itertuples()
    assert fast.scanned_per_push == fast.shifted_per_push == 0  # ours does not count its work
    assert paper.scanned_per_push >= 1  # every arrival reads at least its group's latest tuple
    text = model.mechanism_readout()
    assert "| paper (shown) |" in text and "| fast |" in text and "scanned/push" in text
