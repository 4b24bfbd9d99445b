"""The timing joins' race (workbench.experiments.race): every racer emits the rational
oracle's pairs, also when d, the threshold and the lazy thresholds are steered mid-run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.strategies import join_scenario
from workbench.events import result_checksum
from workbench.experiments.race import LAZY, RACERS, TimingRace
from workbench.operators import brute_force_join


def _run(race: TimingRace, step_ms: float, steer_at: int | None = None, **changes) -> int:
    """Advance to the end, steering once ``steer_at`` events are pushed; the events pushed
    when it steered."""
    steered = len(race.events)
    while not race.done:
        race.advance(step_ms)
        if steer_at is not None and race.pushed >= steer_at:
            race.steer(**changes)
            steered, steer_at = race.pushed, None
    race.finish()
    return steered


@settings(max_examples=30, deadline=None)
@given(
    data=join_scenario("interval"),
    step=st.sampled_from([0.0, 5.0, 50.0, 1e9]),
    max_pending=st.sampled_from([1, 4, 500]),
)
def test_every_racer_emits_the_oracles_pairs(data, step, max_pending):
    streams, events, d, ct = data
    race = TimingRace(streams, events, d, ct, max_pending=max_pending, max_wait=30.0)
    _run(race, step)
    expected = brute_force_join(events, streams, d, ct)
    table = race.table()
    assert table["same_pairs"].all() and (table["waiting"] == 0).all()
    assert (table["results"] == len(expected)).all()
    assert race.lanes["Eager"].checksum == result_checksum(expected)
    assert (table["buffered"] >= 0).all()


@settings(max_examples=30, deadline=None)
@given(
    data=join_scenario("interval"),
    cut=st.floats(0.0, 1.0),
    scale=st.sampled_from([0.5, 1.0, 2.0]),
    ct=st.floats(0.05, 0.95),
    max_pending=st.sampled_from([2, 9]),
)
def test_steering_judges_each_pair_by_the_values_when_its_later_event_came(
    data, cut, scale, ct, max_pending
):
    streams, events, d, ct0 = data
    race = TimingRace(streams, events, d, ct0, max_pending=5, d_max=2 * d, threshold_min=0.05)
    at = int(cut * len(events))
    steered = _run(race, 10.0, steer_at=at, d=d * scale, threshold=ct, max_pending=max_pending)
    before = np.arange(len(events)) < steered
    expected = brute_force_join(
        events, streams, np.where(before, d, d * scale), np.where(before, ct0, ct)
    )
    table = race.table()
    assert table["same_pairs"].all() and (table["results"] == len(expected)).all()
    assert race.lanes["Lazy"].checksum == result_checksum(expected)


def test_lazy_racers_wait_for_their_blocks_and_answer_later():
    from tests.support.spark_cases import scenario

    histograms, events = scenario(5, n=300)
    streams = tuple(s.__class__(s.templates.intervals(), s.max_delay) for s in histograms)
    race = TimingRace(streams, events, 600.0, 0.7, max_pending=200, speed=10.0)
    race.advance(float(events.arrival[len(events) // 2] - events.arrival[0]))
    table = race.table()
    assert table.loc[sorted(LAZY), "waiting"].gt(0).all()  # a block of 200 still waits
    assert table.drop(index=sorted(LAZY))["same_pairs"].all()
    _run(race, 1e9)
    table = race.table()
    assert table["same_pairs"].all()
    eager, lazy = table.loc["Eager", "response_ms"], table.loc["Lazy", "response_ms"]
    assert lazy > eager  # a pair waits for its block
    assert set(table.index) == set(RACERS)


def test_unknown_racers_and_steering_beyond_the_envelope_are_refused():
    from tests.support.spark_cases import scenario

    histograms, events = scenario(6, n=20)
    streams = tuple(s.__class__(s.templates.intervals(), s.max_delay) for s in histograms)
    with pytest.raises(ValueError, match="unknown racers"):
        TimingRace(streams, events, 600.0, 0.7, names=("Eager", "Quick"))
    race = TimingRace(streams, events, 600.0, 0.7, names=("Eager", "Lazy"))
    with pytest.raises(ValueError, match="d_max"):
        race.steer(d=700.0)
