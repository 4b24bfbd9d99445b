"""Every value type of the core survives pickling (Spark ships them to executors) and keeps
its documented example."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import workbench
from workbench.paper_examples import example3_templates
from workbench.partitions import loose_partitions
from workbench.stime import StimeTable


def _values():
    a, b = example3_templates()
    table = StimeTable.build(example3_templates(), example3_templates(), 0.8)
    return [
        a,
        example3_templates(),
        table,
        loose_partitions(a, 60, 40),
        workbench.interval_bounds(0, 10, 20, 0.5, 10),
    ]


@pytest.mark.parametrize("value", _values(), ids=lambda v: type(v).__name__)
def test_pickle_round_trip(value):
    back = pickle.loads(pickle.dumps(value))
    if isinstance(value, StimeTable):
        np.testing.assert_array_equal(back.sat, value.sat)
        np.testing.assert_array_equal(back.inv, value.inv)
        assert back.templates_a == value.templates_a and back.delta == value.delta
    else:
        assert back == value


@pytest.mark.parametrize("name", workbench.__all__)
def test_public_api_is_documented_with_an_example(name):
    obj = getattr(workbench, name)
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{name} has no docstring"
    assert ">>>" in doc, f"{name} has no runnable example"
