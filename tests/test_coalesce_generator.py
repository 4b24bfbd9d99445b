"""Section 7.1's generator (``coalescing_rows``) in every cell of the 11 x 11 grid, oop = 1
included: its timestamps keep their spread (a time window holds about as many tuples at
oop = 1 as at oop = 0.5), its out-of-order fraction follows the requested oop up to the most
a stream can have (``coalescing_max_oop``), and a late arrival still lands between its
group's two latest timestamps, so Algorithm 2's paths are counted as before (Line 18 on
``oop x (1 - cp)`` of arrivals, cuts <= merges)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.window_oracle import readings
from workbench.coalesce import EagerExtent, Window
from workbench.experiments.atomic_costs import make_extent
from workbench.experiments.coalescing_mechanisms import split_paths
from workbench.experiments.coalescing_stream import (
    COALESCING_GROUPS,
    COALESCING_LATE_RUN,
    coalescing_max_oop,
    coalescing_rows,
)

GRID = [round(0.1 * i, 1) for i in range(11)]
N = 20_000


def _late(ts: np.ndarray) -> np.ndarray:
    """Out of order (Algorithm 1, Line 9): below the largest timestamp before it."""
    return np.r_[False, ts[1:] < np.maximum.accumulate(ts)[:-1]]


def _time_window_fill(rows, size: float) -> tuple[float, int]:
    """The stream through a compiled lazy extent over a time window of ``size``, in batches
    of 100: the raw tuples it holds after each batch (mean, past the first 4 windows) and the
    arrivals it refused as too late."""
    extent = make_extent("lazy", size, kind="time")
    batch = readings(rows)
    held = []
    for start in range(0, len(rows), 100):
        extent.push_batch(batch[start : start + 100])
        if start >= 4 * size:
            held.append(len(extent))
    return float(np.mean(held)), extent.counters.late


def test_timestamps_keep_their_spread_at_oop_1():
    """The old generator put 20,000 tuples at oop = 1 on a few hundred timestamps, and the
    time window held the whole stream; now every cell has N distinct timestamps and the window
    at oop = 1 holds about what it holds at oop = 0.5, refusing none as too late."""
    fills = {}
    for oop in (0.5, 1.0):
        rows = coalescing_rows(np.random.default_rng(7), N, cp=0.5, oop=oop)
        ts = np.array([t for t, _, _ in rows])
        assert len(np.unique(ts)) == N
        fills[oop], too_late = _time_window_fill(rows, 1000.0)
        assert too_late == 0
    assert 0.85 <= fills[1.0] / fills[0.5] <= 1.05
    assert 900 <= fills[0.5] <= 1100  # one tuple per time unit on average


@pytest.mark.parametrize("oop", GRID)
def test_the_measured_oop_follows_the_requested_one(oop):
    """The out-of-order fraction is the requested oop up to the maximum (0.98 at oop = 1:
    only an arrival in order moves a time window's clock), and every timestamp is distinct."""
    rows = coalescing_rows(np.random.default_rng(int(10 * oop)), N, cp=0.5, oop=oop)
    ts = np.array([t for t, _, _ in rows])
    measured = _late(ts).mean()
    assert len(np.unique(ts)) == N
    if oop < 1:
        assert measured == pytest.approx(oop, abs=0.012)
    else:
        assert measured == pytest.approx(coalescing_max_oop(), abs=0.002)
    assert measured <= coalescing_max_oop()


@pytest.mark.parametrize("cp", [0.0, 0.2, 0.5, 1.0])
def test_algorithm_2s_paths_at_oop_1(cp):
    """At oop = 1 (measured 0.98) both extents count the oracle's paths, Line 18 runs on
    ``oop x (1 - cp)`` of arrivals with the measured oop, and cuts do not exceed merges."""
    n = 6000
    rows = coalescing_rows(np.random.default_rng(5), n, cp=cp, oop=1.0)
    paths = split_paths(rows)
    assert paths["late"] / n == pytest.approx(coalescing_max_oop(), abs=0.002)
    assert paths["line18"] / n == pytest.approx(coalescing_max_oop() * (1 - cp), abs=0.02)
    assert paths["cuts"] <= paths["merges"]
    for mechanism in ("fast", "paper"):
        ext = EagerExtent(Window("tuples", n), mechanism=mechanism)
        ext.push_batch(readings(rows))
        assert (ext.counters.splits, ext.counters.merges) == (paths["cuts"], paths["merges"])
        assert ext.counters.out_of_order == paths["late"]


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 400),
    cp=st.sampled_from([0.0, 0.5, 1.0]),
    oop=st.one_of(st.sampled_from([0.0, 0.9, 1.0]), st.floats(0.0, 1.0)),
    late_run=st.integers(0, 6),
    seed=st.integers(0, 2**16),
)
def test_the_generators_order(n, cp, oop, late_run, seed):
    """Oracle, arrival by arrival: the timestamps are the clock readings (distinct, sorted
    gaps in [0.5, 1.5)); a late arrival lies between its group's two latest timestamps (its
    group's previous arrival a neighbour); a group's first arrival and its arrival after
    ``late_run`` late ones are in order; at oop = 0 none is late, at oop = 1 all others are."""
    rows = coalescing_rows(np.random.default_rng(seed), n, cp=cp, oop=oop, late_run=late_run)
    ts = np.array([t for t, _, _ in rows])
    gaps = np.diff(np.sort(ts))
    assert np.all((gaps >= 0.5) & (gaps < 1.5))
    latest = float("-inf")
    mine: dict[int, list[float]] = {}
    run = dict.fromkeys(range(COALESCING_GROUPS), 0)
    for t, _, g in rows:
        late, top = t < latest, sorted(mine.get(g, []))[-2:]
        if late:
            assert top and t < top[-1] and (len(top) < 2 or t > top[0])
            run[g] += 1
            assert run[g] <= late_run
        else:
            assert oop < 1 or not top or run[g] == late_run
            run[g] = 0
        assert oop > 0 or not late
        mine.setdefault(g, []).append(t)
        latest = max(latest, t)


def test_a_bad_late_run_is_refused():
    with pytest.raises(ValueError, match="late_run = -1"):
        coalescing_rows(np.random.default_rng(0), 5, cp=0.5, oop=0.5, late_run=-1)
    assert coalescing_max_oop(COALESCING_LATE_RUN) == 0.98
