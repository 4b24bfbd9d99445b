"""Adaptive eager/lazy selection: estimates drift, queries switch, views stay exact."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.window_oracle import WindowOracle
from workbench.coalesce import Equivalence, Window, recoalesce
from workbench.coalesce.adaptive import AdaptiveCoalescing, Query


def _flat(view):
    return [(c.ts, c.te, c.group, c.value, c.count) for c in view]


@pytest.mark.parametrize("kind,size", [("tuples", 60), ("time", 80.0)])
@pytest.mark.parametrize("initial", ["lazy", "eager"])
def test_switching_never_loses_or_duplicates(kind, size, initial):
    rng = np.random.default_rng(1)
    queries = [
        Query("h", ("h",), ("mote",)),
        Query("ht", ("h", "t"), ("mote",), Equivalence("quantized", quantum=2.0)),
    ]
    window = Window(kind, size)
    ac = AdaptiveCoalescing(queries=queries, window=window, reevaluate_every=40, initial=initial)
    oracle = WindowOracle(window)
    last = {}
    for i in range(900):
        mote = int(rng.integers(0, 3))
        calm = (i // 150) % 2 == 0  # cp drifts: calm stretches repeat values, busy ones do not
        if calm and mote in last:
            h, t = last[mote]
        else:
            h, t = float(rng.integers(0, 50)), float(rng.integers(0, 30))
        last[mote] = (h, t)
        ts = i + (-3.0 if rng.random() < 0.1 else 0.0)  # some arrive out of order
        row = {"h": h, "t": t, "mote": mote}
        assert (ac.push(ts, row).status == "ok") == oracle.push(ts, row, None)
        for q in queries:
            rows = [(r[0], r[1], *q.project(r[3])) for r in oracle.inside()]
            assert _flat(ac.view(q.name)) == _flat(recoalesce(rows, q.equivalence)), (i, q.name)
    assert ac.switches >= 2  # the selection followed the drift both ways


def test_configuration_errors():
    with pytest.raises(ValueError, match="distinct names"):
        AdaptiveCoalescing(
            queries=[Query("a", ("x",)), Query("a", ("y",))], window=Window("tuples", 5)
        )
    with pytest.raises(ValueError, match="initial = 'x'"):
        AdaptiveCoalescing(queries=[Query("a", ("x",))], window=Window("tuples", 5), initial="x")


def test_view_names_its_query_unless_there_is_one():
    """``view()`` is the extents' one view when one query is served, else it needs a name."""
    one = AdaptiveCoalescing(queries=[Query("a", ("x",))], window=Window("tuples", 5))
    one.push(1.0, {"x": 3})
    assert one.view() == one.view("a")
    two = AdaptiveCoalescing(
        queries=[Query("a", ("x",)), Query("b", ("x",))], window=Window("tuples", 5)
    )
    with pytest.raises(ValueError, match="needs a query name"):
        two.view()
